"""The worker's stops: the errors it cannot go on after, each naming its cause and its fix."""

from __future__ import annotations

import re

from confluent_kafka import KafkaError

from streamdedup.runtime.errors import WorkerStopped
from streamdedup.runtime.settings import WorkerSettings


class StoreAheadOfKafka(WorkerStopped):
    """The local store has seen offsets the consumer group has not committed."""


class StoreOfAnotherGroup(WorkerStopped):
    """The local store read its partition for another consumer group, so this group would skip what it read."""


class StoreWriteFailed(WorkerStopped):
    """The store could not be written (full disk, I/O error) after Kafka committed the batch."""


class StateLost(WorkerStopped):
    """A store's folder (or the whole state directory) was deleted under the running worker."""


class TopicStartedOver(WorkerStopped):
    """A partition the store has read started over and `on_topic_reset` is `refuse`.

    A partition starts over when its topic was created again, the broker lost its data, or the worker now reads
    another cluster."""


class WorkerFenced(WorkerStopped):
    """Another worker took this one's identity, so this one stops.

    Another worker took this one's identity (group.instance.id or transactional id): this one can never commit again, so
    it stops instead of idling."""


# errors that mean another process now owns this worker's identity
FENCED = frozenset({KafkaError.FENCED_INSTANCE_ID, KafkaError._FENCED, KafkaError.PRODUCER_FENCED,
                    KafkaError.INVALID_PRODUCER_EPOCH})


def fenced(settings: WorkerSettings, error: KafkaError) -> WorkerFenced:
    """The stop of a worker whose identity another worker took: one line naming the fix."""
    # a broker that lost the member's session (noida-db after a 12 s freeze, once in 3) fences it the same
    # way: the line names both causes (a feed review: the ids were distinct, the line said they were not)
    return WorkerFenced(
        f"worker {settings.worker_id!r} of group {settings.group_id!r} was fenced ({error.str()}): another worker "
        "with the same id, or the broker ended this one's session (a broker frozen or restarted); this one stops. "
        "Start it again (a supervisor's restart does); if it recurs, give every worker its own --worker-id "
        "(STREAMDEDUP_WORKER_ID) and state directory")


def lost_writes(error: KafkaError) -> str:
    """The line for a broker that no longer holds records this worker wrote and it acknowledged.

    librdkafka's fatal OUT_OF_ORDER_SEQUENCE_NUMBER: the partition's log ends before the producer's last acknowledged
    record. The batch in hand is consumed again, but what earlier committed transactions wrote there is gone, and no
    restart writes it again: found by an operator review (s81) as a WARNING that said the transaction "went through"
    while a batch of 16 pages never got a verdict (noida-db SIGKILLed within a second of acknowledging it)."""
    place = re.search(r"ProduceRequest for (\S+ \[\d+\])", error.str())
    return (f"the broker no longer holds records this worker wrote to {place.group(1) if place else 'a topic'} and it "
            f"acknowledged ({error.str()[:200]}): the topic was deleted (a write then creates it again with the "
            "broker's defaults), or the broker lost acknowledged records on a restart (noida-db does; Kafka with "
            "replication factor 3 and min.insync.replicas 2 does not). The batch in hand is judged again, but the "
            "outputs of batches committed before may be gone (on pages.index or pages.parts: pages that never get a "
            "verdict). Fix: give a deleted topic back its partitions and settings, run a broker that keeps what it "
            "acknowledges, and find the pages without a verdict: a restart does not judge them again "
            "(docs/runtime.md, \"Records the broker no longer holds\")")
