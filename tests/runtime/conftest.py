"""A real Kafka-protocol broker (noida-db) on a free loopback port, started by the tests."""

from __future__ import annotations

import os
import time
import uuid

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

from streamdedup.runtime.broker import EmbeddedBroker
from streamdedup.runtime.settings import Topics, WorkerSettings


@pytest.fixture(scope="session")
def broker(tmp_path_factory):
    """noida-db by default; STREAMDEDUP_TEST_BROKER=tansu runs the same suite against Tansu."""
    kind = os.environ.get("STREAMDEDUP_TEST_BROKER", "noida")
    with EmbeddedBroker(tmp_path_factory.mktemp("broker"), kind=kind) as running:
        yield running


@pytest.fixture
def settings(broker, tmp_path) -> WorkerSettings:
    """Fresh topic names and group per test, so tests never see each other's messages."""
    run = uuid.uuid4().hex[:8]
    topics = Topics(pages=f"pages-{run}", unique=f"unique-{run}", duplicates=f"dups-{run}",
                    rejected=f"rejected-{run}", clusters=f"clusters-{run}", verdicts=f"verdicts-{run}",
                    cluster_view=f"view-{run}",
                    index=f"index-{run}", parts=f"parts-{run}")
    return WorkerSettings(bootstrap_servers=broker.bootstrap_servers, group_id=f"g-{run}", worker_id="w1",
                          state_dir=tmp_path / "state", batch_size=16, batch_timeout_s=0.2, topics=topics)


def read_topic(settings: WorkerSettings, topic: str, expect_at_least: int = 0, quiet_s: float = 3.0,
               timeout_s: float = 60.0, to_end: bool = False) -> list:
    """Every committed message of a topic (read_committed), waiting until it is quiet.

    to_end: nothing writes to the topic any more (its writers have stopped, so every transaction
    is committed or aborted): done once every partition has been read to its end, instead of
    waiting quiet_s after the last message (which stays the fallback)."""
    consumer = Consumer(settings.client(**{"group.id": f"reader-{uuid.uuid4().hex[:6]}", "auto.offset.reset": "earliest",
                                           "enable.auto.commit": False, "isolation.level": "read_committed",
                                           "receive.message.max.bytes": 104_857_600, "enable.partition.eof": to_end}))
    messages, last, start = [], time.monotonic(), time.monotonic()
    at_end: set[int] = set()
    try:
        partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])  # no group join
        while time.monotonic() - start < timeout_s:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                messages.append(message)
                at_end.discard(message.partition())
                last = time.monotonic()
                continue
            if message is not None and message.error().code() == KafkaError._PARTITION_EOF:
                at_end.add(message.partition())
            if len(messages) >= expect_at_least and (len(at_end) == len(partitions)
                                                     or time.monotonic() - last > quiet_s):
                break
    finally:
        consumer.close()
    return messages


def run_until_decided(worker, decided: int, quiet_s: float = 1.5, timeout_s: float = 300.0,
                      idle_timeout_s: float = 60.0):
    """`worker.run()` until it has given `decided` pages (and rejected records) their outcome and then
    consumed nothing for `quiet_s`: anything beyond the count (a doubled page) would show up in the
    outputs. Instead of `run(idle_timeout_s=...)`, which waits out its idle time after the last
    batch, and whose time also runs out between the hops of a slow broker. Returns its stats, and
    raises what the worker raised."""
    import threading

    failed: list[BaseException] = []

    def run() -> None:
        try:
            worker.run(idle_timeout_s=idle_timeout_s)
        except BaseException as err:  # noqa: BLE001 - raised again in the test's thread
            failed.append(err)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    deadline, seen, quiet_since = time.monotonic() + timeout_s, -1, time.monotonic()
    while thread.is_alive() and time.monotonic() < deadline:
        if worker.stats.consumed != seen:
            seen, quiet_since = worker.stats.consumed, time.monotonic()
        elif worker.stats.decided >= decided and time.monotonic() - quiet_since > quiet_s:
            break
        time.sleep(0.05)
    worker.stop()
    thread.join(timeout=120)
    assert not thread.is_alive(), "the worker did not stop within 120 s of being asked"
    if failed:
        raise failed[0]
    return worker.stats
