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
worker with one line naming both ways on; `restart` judges the partition again, keeping what the
store knows of earlier pages, with a warning.

Judged again from where: a broker that lost the tail of a partition (acknowledged records it had
not written or replicated) keeps the records before it, and those have had their outputs. Read
again, each would come out a second time (an operator review: 169 of 473 pages twice). So the
worker also keeps a bounded journal of what it read (`ReadJournal`: each batch's offsets and 8-byte
record digests, in a ring of `READ_JOURNAL_SLOTS` meta records written with the batch). On a
partition that started over, `judged_prefix` reads the journaled offsets again: the records still
there, in order from the journal's first, were judged; the first one that is not (another record,
or none) is where judging starts. If the journal's first record is not there either (a topic
created again, or a loss longer than the journal), nothing can be told apart and the partition is
judged from its beginning.
"""

from __future__ import annotations

import struct
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import orjson
from confluent_kafka import Consumer, KafkaError, KafkaException, Message, TopicPartition

from streamdedup.runtime import topics
from streamdedup.runtime.record_identity import record_digest
from streamdedup.runtime.retention import deleted_by_retention
from streamdedup.runtime.settings import ON_TOPIC_RESET

READ_TIMEOUT_S = 5.0  # how long the records are waited for (Tansu answers a read past the end with nothing)
PREFIX_TIMEOUT_S = 30.0  # how long the journaled records are read again, at most (what is not read is judged again)
READ_JOURNAL_SLOTS = 64  # batches a partition's read journal keeps: 64 to 64 x batch_size records
JOURNAL_DIGEST_BYTES = 8
_ENTRY = struct.Struct("<q8s")  # offset, the first 8 bytes of the record's digest
_SEQ = struct.Struct("<q")

TP = tuple[str, int]
__all__ = ["ON_TOPIC_RESET", "READ_JOURNAL_SLOTS", "Finding", "ReadJournal", "RecordIdentity", "check_partitions",
           "identity_key", "judged_prefix", "journal_slot_key", "stage_read_journal"]


def identity_key(topic: str, partition: int) -> str:
    """The store's meta record of the last record it processed of a partition."""
    return f"last:{topic}:{partition}"


def journal_slot_key(topic: str, partition: int, slot: int | str) -> str:
    """The store's meta record of one batch in a partition's read journal (a ring of `READ_JOURNAL_SLOTS`).

    Slot "next" holds the sequence number of the next batch."""
    return f"read:{topic}:{partition}:{slot}"


@dataclass(frozen=True)
class ReadJournal:
    """What a store read last of a partition: offset -> 8-byte record digest, for the last batches.

    Kept as a ring of batch records (`journal_slot_key`), each numbered by the batch's sequence, so a
    slot written after a topic started over overrides what an older slot says of the same offsets."""

    entries: dict[int, bytes]

    @staticmethod
    def slot_value(seq: int, batch: list[tuple[int, bytes]]) -> bytes:
        """One batch's journal record: its sequence number, then (offset, digest) per record."""
        return _SEQ.pack(seq) + b"".join(_ENTRY.pack(offset, digest[:JOURNAL_DIGEST_BYTES]) for offset, digest in batch)

    @staticmethod
    def slot_seq(value: bytes | None) -> int:
        """The sequence number of a journal record, -1 for none."""
        return _SEQ.unpack_from(value)[0] if value and len(value) >= _SEQ.size else -1

    @classmethod
    def read(cls, get_meta: Callable[[str], bytes | None], topic: str, partition: int, last_offset: int) -> ReadJournal:
        """The journal as a store holds it, up to the offset it read last (later entries are an older topic's)."""
        slots = sorted((value for value in (get_meta(journal_slot_key(topic, partition, slot))
                                            for slot in range(READ_JOURNAL_SLOTS)) if value), key=cls.slot_seq)
        entries: dict[int, bytes] = {}
        for value in slots:  # oldest first: a newer batch's digest of an offset wins
            body = value[_SEQ.size:]
            for at in range(0, len(body) - len(body) % _ENTRY.size, _ENTRY.size):
                offset, digest = _ENTRY.unpack_from(body, at)
                if offset <= last_offset:
                    entries[offset] = digest
        return cls(dict(sorted(entries.items())))


def stage_read_journal(get_meta: Callable[[str], bytes | None], stage_meta: Callable[[str, bytes], None],
                       topic: str, partition: int, messages: list[Message]) -> None:
    """Journal a batch's records of one partition, in the next slot of its ring, with the batch's store changes."""
    raw = get_meta(journal_slot_key(topic, partition, "next"))
    seq = int(raw) if raw else 0
    batch = [(int(message.offset() or 0), record_digest(message.key(), message.value(), _stamp(message)))
             for message in messages]
    stage_meta(journal_slot_key(topic, partition, seq % READ_JOURNAL_SLOTS), ReadJournal.slot_value(seq, batch))
    stage_meta(journal_slot_key(topic, partition, "next"), str(seq + 1).encode())


@dataclass(frozen=True)
class RecordIdentity:
    """What tells one Kafka record from another at the same offset of a topic created again."""

    offset: int
    timestamp: int  # ms, -1 if none
    digest: str  # `record_digest` of the key, value and timestamp, in hex (the Faust journal's digest)

    @classmethod
    def of(cls, message: Message) -> RecordIdentity:
        """The identity of a consumed record: its offset, timestamp and a digest of its key, value and stamp."""
        digest = record_digest(message.key(), message.value(), _stamp(message))
        return cls(int(message.offset() or 0), int(message.timestamp()[1]), digest.hex())

    def encode(self) -> bytes:
        """The identity as the JSON a store keeps."""
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
    if deleted_by_retention(expected, expected + 1, low):
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


def judged_prefix(client: Mapping[str, Any], journals: Mapping[TP, ReadJournal],
                  timeout_s: float = PREFIX_TIMEOUT_S) -> dict[TP, int]:
    """Where each started-over partition's records stop being the ones its store read.

    The first offset to judge of each partition that started over, from its read journal: the records
    read again from the journal's first on are the ones judged (their outputs are out) until the first
    that is not (another record, or none). A partition whose journal's first record is not there
    either is judged from its beginning (0 here); one whose records could not all be read in
    `timeout_s` from after the last one matched (judged twice rather than lost). The partition's end is
    asked first: journaled offsets at or past it are gone, and are not waited for (Tansu answers a read
    past the end with nothing, not with the end)."""
    starts: dict[TP, int] = {}
    reading: dict[TP, tuple[list[int], int]] = {}  # the journal's offsets still to match, and the next of them
    for tp_key, journal in journals.items():
        if journal.entries:
            reading[tp_key] = (list(journal.entries), 0)
        else:
            starts[tp_key] = 0
    if not reading:
        return starts
    consumer = Consumer({**client, **topics.consumer_settings(),
                         "group.id": f"streamdedup-check-{uuid.uuid4().hex[:8]}", "enable.auto.commit": False,
                         "isolation.level": "read_uncommitted",
                         "auto.offset.reset": "earliest", "enable.partition.eof": True})
    matched: dict[TP, int] = {}  # the offset after the last record matched
    try:
        for tp_key, (offsets, _) in list(reading.items()):  # offsets past the end are gone: not waited for
            try:
                _, high = consumer.get_watermark_offsets(TopicPartition(*tp_key), timeout=10, cached=False)
            except KafkaException:
                continue
            there = [offset for offset in offsets if offset < high]
            if not there:  # the journal's first record is gone: nothing to tell apart
                starts[tp_key] = 0
                del reading[tp_key]
            else:
                reading[tp_key] = (there, 0)
        if not reading:
            return starts
        consumer.assign([TopicPartition(topic, partition, offsets[0])
                         for (topic, partition), (offsets, _) in reading.items()])
        deadline = time.monotonic() + timeout_s
        while reading and time.monotonic() < deadline:
            message = consumer.poll(0.1)
            if message is None:
                continue
            tp_key = (str(message.topic()), int(message.partition() or 0))
            if tp_key not in reading:
                continue
            offsets, at = reading[tp_key]
            error = message.error()
            if error is not None and error.code() != KafkaError._PARTITION_EOF:
                continue  # a transient error: the client retries
            offset = int(message.offset() or 0)
            if error is None and offset < offsets[at]:  # below the journal's first
                continue
            if error is None and at == 0 and offset > offsets[0]:  # the journal's start deleted by retention
                at = next((i for i, journaled in enumerate(offsets) if journaled >= offset), len(offsets) - 1)
            digest = journals[tp_key].entries[offsets[at]]
            same = (error is None and offset == offsets[at]
                    and record_digest(message.key(), message.value(), _stamp(message))[:JOURNAL_DIGEST_BYTES] == digest)
            if same:
                at += 1
                matched[tp_key] = offset + 1
            if not same or at == len(offsets):
                # the first record not read before (or the journal's end): judging starts there, unless the
                # journal's first record is gone too, which tells nothing (judged from the beginning)
                starts[tp_key] = matched.get(tp_key, 0) if at > 0 else 0
                consumer.pause([TopicPartition(*tp_key)])
                del reading[tp_key]
            else:
                reading[tp_key] = (offsets, at)
        for tp_key in reading:  # not all read in time: what was not matched is judged again
            starts[tp_key] = matched.get(tp_key, 0)
    finally:
        consumer.close()
    return starts


def _stamp(message: Message) -> int | None:
    """The record's timestamp in ms, None if it has none (-1): as `record_digest` frames it."""
    _, stamp = message.timestamp()
    return stamp if stamp >= 0 else None
