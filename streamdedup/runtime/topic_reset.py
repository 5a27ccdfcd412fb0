"""Whether a partition a store has read is still the one Kafka holds, or a topic that started over.

A broker that comes back without its data, a topic deleted and created again, a fleet moved to
another cluster: the partition's offsets begin at 0 again, while the worker's stores hold the
offsets they had read of the old one. Started at its store's offset, the worker would never judge
the new records below it (issue 56: 300 of 600, exit 0). The group's committed offset does not
tell: Tansu drops it with the topic, noida-db keeps it (it then agrees with the store), and Apache
Kafka drops it; a new cluster has none.

So with each batch the worker writes, beside the store's offset and in the same WriteBatch, the
identity of the last record it processed (`RecordIdentity`: offset, timestamp, a hash of key and
value). On assignment it reads the record at that offset again (`check_partitions`, all
partitions at once, on a client of its own that reads uncommitted records too):
- the same record: the partition is the one the store read;
- another record, or none (the partition ends below it: its end offset is at or below it): it
  started over;
- the offset is below the partition's start (retention deleted it) or holds no record (a
  compacted topic): it cannot be verified, and the worker says so and goes on.
Tansu reports a partition's high watermark as its last record batch's base offset + 1 (measured:
5 records in one batch, high watermark 1), so the watermarks only decide what the read could not.
noida-db exposes no topic ids (all zeros) and Tansu new ones for a topic created again; the
record's identity works on both and on Apache Kafka.

What then happens is the operator's choice (`WorkerSettings.on_topic_reset`): `refuse` stops the
worker with one line naming both ways on; `restart` judges the partition from its beginning,
keeping what the store knows of earlier pages, with a warning.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import orjson
from confluent_kafka import Consumer, KafkaError, KafkaException, Message, TopicPartition

from streamdedup.runtime import topics
from streamdedup.runtime.record_identity import record_digest
from streamdedup.runtime.settings import ON_TOPIC_RESET

READ_TIMEOUT_S = 5.0  # how long the records are waited for (Tansu answers a read past the end with nothing)

TP = tuple[str, int]
__all__ = ["ON_TOPIC_RESET", "Finding", "RecordIdentity", "check_partitions", "identity_key"]


def identity_key(topic: str, partition: int) -> str:
    """The store's meta record of the last record it processed of a partition."""
    return f"last:{topic}:{partition}"


@dataclass(frozen=True)
class RecordIdentity:
    """What tells one Kafka record from another at the same offset of a topic created again."""

    offset: int
    timestamp: int  # ms, -1 if none
    digest: str  # `record_digest` of the key, value and timestamp, in hex (the Faust journal's digest)

    @classmethod
    def of(cls, message: Message) -> RecordIdentity:
        _, stamp = message.timestamp()
        digest = record_digest(message.key(), message.value(), stamp if stamp >= 0 else None)
        return cls(int(message.offset() or 0), int(stamp), digest.hex())

    def encode(self) -> bytes:
        return orjson.dumps({"offset": self.offset, "timestamp": self.timestamp, "hash": self.digest})

    @classmethod
    def decode(cls, data: bytes | None) -> RecordIdentity | None:
        """The identity a store kept; None if it kept none (a store written before identities were kept)."""
        if not data:
            return None
        try:
            fields = orjson.loads(data)
            return cls(int(fields["offset"]), int(fields["timestamp"]), str(fields["hash"]))
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
            return None


@dataclass(frozen=True)
class Finding:
    """What was found of one partition: started over or not, and whether it could be verified."""

    started_over: bool
    verified: bool
    detail: str  # what was found, for the log line or the error
    end: int = -1  # the partition's end offset (high watermark) as found, -1 if not asked


SAME = Finding(False, True, "the record the store read last is there")


def _read(found: Message, expected: int, last: RecordIdentity | None) -> Finding | None:
    """The finding a record read at the `expected` offset gives; None if it needs the watermarks."""
    offset = int(found.offset() or 0)
    if offset > expected:  # nothing at the offset itself: compacted away, or a transaction marker
        return Finding(False, False, f"offset {expected} holds no record any more (a compacted topic?)")
    if last is None:
        return Finding(False, False, f"a record is at offset {expected}, but the store (written before "
                                     "record identities were kept) cannot tell whether it is the one it read")
    if RecordIdentity.of(found) == last:
        return SAME
    return Finding(True, True, f"the record at offset {expected} is another one than the store read there "
                               f"(timestamp {RecordIdentity.of(found).timestamp}, not {last.timestamp})")


def _by_watermarks(low: int, high: int, expected: int) -> Finding:
    if high <= expected:
        return Finding(True, True, f"the partition now ends at offset {high}, at or below the offset {expected} "
                                   "of the record the store read last", high)
    if low > expected:
        return Finding(False, False, f"offset {expected} was deleted by retention (the partition starts at {low})",
                       high)
    return Finding(False, False, f"the record at offset {expected} could not be read within {READ_TIMEOUT_S:g} s",
                   high)


def check_partitions(client: Mapping[str, Any], expected: Mapping[TP, tuple[int, RecordIdentity | None]],
                     timeout_s: float = READ_TIMEOUT_S) -> dict[TP, Finding]:
    """Each partition's finding, from the offset and identity of the record its store read last.

    Each partition's finding, given the offset of the record its store read last and that
    record's identity (None for a store written before identities were kept). `client`: the
    librdkafka settings to connect with (`WorkerSettings.client()`)."""
    if not expected:
        return {}
    consumer = Consumer({**client, **topics.consumer_settings(),
                         "group.id": f"streamdedup-check-{uuid.uuid4().hex[:8]}", "enable.auto.commit": False,
                         "isolation.level": "read_uncommitted",
                         "auto.offset.reset": "error", "enable.partition.eof": True})
    findings: dict[TP, Finding] = {}
    unanswered: set[TP] = set()
    try:
        consumer.assign([TopicPartition(topic, partition, offset)
                         for (topic, partition), (offset, _) in expected.items()])
        deadline = time.monotonic() + timeout_s
        while len(findings) + len(unanswered) < len(expected) and time.monotonic() < deadline:
            message = consumer.poll(0.1)
            if message is None:
                continue
            tp_key = (str(message.topic()), int(message.partition() or 0))
            if tp_key not in expected or tp_key in findings or tp_key in unanswered:
                continue
            error = message.error()
            if error is not None and error.code() not in (KafkaError._PARTITION_EOF, KafkaError._AUTO_OFFSET_RESET):
                continue  # a transient error: the client retries
            if error is None:
                finding = _read(message, *expected[tp_key])
                if finding is not None:
                    findings[tp_key] = finding
            else:  # the end of the partition, or the offset out of its range: the watermarks tell
                unanswered.add(tp_key)
            consumer.pause([TopicPartition(*tp_key)])
        for tp_key in expected:  # what the reads did not decide; and where the partitions that started over end
            finding = findings.get(tp_key)
            if finding is not None and not finding.started_over:
                continue
            try:
                low, high = consumer.get_watermark_offsets(TopicPartition(*tp_key), timeout=10, cached=False)
            except KafkaException as err:
                findings[tp_key] = finding or Finding(False, False, f"the broker did not give its offsets ({err})")
                continue
            findings[tp_key] = replace(finding, end=high) if finding else _by_watermarks(low, high, expected[tp_key][0])
    finally:
        consumer.close()
    return findings
