"""Reading a Kafka topic's partitions once, from their beginning to their end.

Two readers need a topic as it stands, not a subscription: the worker's group settings (one
partition of the settings topic) and the news feed's stories (every partition of the cluster
view). Both assign the partitions without joining a group, read committed records only, and stop
when each partition reports its end; a failure or a broker that does not answer in time ends the
read with one line naming the topic, not a silent partial answer.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any


def read_to_end(consumer: Any, topic: str, partitions: Iterable[int], timeout_s: float,
                failed: Callable[[str], Exception]) -> Iterator[Any]:
    """Each record of `partitions` of `topic`, in order per partition, until every one is read.

    `consumer` is a confluent-kafka Consumer made with `enable.partition.eof` (and, for topics
    written in transactions, `isolation.level: read_committed`); the caller closes it. A partition
    is read when it reports its end (compaction may leave no record at the high watermark). Raises
    `failed(problem)` when a partition reports an error or the topic is not read in `timeout_s`."""
    from confluent_kafka import OFFSET_BEGINNING, KafkaError, TopicPartition

    waiting = set(partitions)
    if not waiting:
        return
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in sorted(waiting)])
    deadline = time.monotonic() + timeout_s
    while waiting:
        if time.monotonic() > deadline:
            raise failed(f"{topic!r} was not read to its end in {timeout_s:g} s")
        message = consumer.poll(0.5)
        if message is None:
            continue
        error = message.error()
        if error is None:
            yield message
        elif error.code() == KafkaError._PARTITION_EOF:
            waiting.discard(message.partition())
        else:
            raise failed(f"{topic!r} could not be read ({error.str()})")
