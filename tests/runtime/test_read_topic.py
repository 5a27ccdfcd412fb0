"""The tests' reader of output topics (`read_topic`): every record written before it, however slow the broker.

A CI run on Tansu failed test_the_local_topology_misses_copies_on_other_partitions with a KeyError: a
duplicate named a page whose verdict the test had not read. The reader stopped once nothing had come for
`quiet_s` (2 s there), even when it was reading to the end of topics nobody wrote to any more: a broker
or a loaded machine that answered nothing for that long cut the read short, silently, and the test then
failed on what it had not read. Here the broker is frozen (SIGSTOP) as the reader starts.
"""

from __future__ import annotations

import threading
import uuid

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

import runtime.conftest
from runtime.conftest import read_topic

RECORDS = 30


def written_topic(broker, partitions: int = 3) -> str:
    """A fresh topic holding RECORDS records over its partitions, all acknowledged."""
    topic = f"read-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})  # kept: a dropped client cancels its futures
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "enable.idempotence": True})
    for i in range(RECORDS):
        producer.produce(topic, value=str(i).encode(), partition=i % partitions)
    assert producer.flush(30) == 0
    return topic


def frozen_as_the_read_starts(broker, monkeypatch, seconds: float) -> list[threading.Timer]:
    """The broker answers nothing for `seconds` from the moment the reader assigns its partitions.

    Frozen before the assignment is made: frozen after it, a fetch the client's thread sent at once
    could be answered first (on a loaded machine the whole topic was read before the freeze)."""
    timers: list[threading.Timer] = []

    class Frozen(runtime.conftest.Consumer):  # type: ignore[misc,name-defined]
        def assign(self, partitions):
            broker.pause()
            timers.append(threading.Timer(seconds, broker.resume))
            timers[-1].start()
            super().assign(partitions)

    monkeypatch.setattr(runtime.conftest, "Consumer", Frozen)
    return timers


def thawed(broker, timers: list[threading.Timer]) -> None:
    for timer in timers:
        timer.join()
    broker.resume()  # whatever happened, the broker runs on for the next test


def test_a_read_to_the_end_waits_for_a_broker_that_answers_late(broker, settings, monkeypatch):
    topic = written_topic(broker)
    timers = frozen_as_the_read_starts(broker, monkeypatch, seconds=3.5)
    try:
        got = read_topic(settings, topic, timeout_s=30)  # as test_topologies read
    finally:
        thawed(broker, timers)
    assert sorted(int(m.value()) for m in got) == list(range(RECORDS))


def test_a_read_that_cannot_reach_the_end_fails_naming_the_partitions(broker, settings, monkeypatch):
    topic = written_topic(broker)
    timers = frozen_as_the_read_starts(broker, monkeypatch, seconds=4.0)
    try:
        with pytest.raises(AssertionError, match=rf"{topic}: partitions \[0, 1, 2\] not read to their end"):
            read_topic(settings, topic, timeout_s=2)
    finally:
        thawed(broker, timers)
