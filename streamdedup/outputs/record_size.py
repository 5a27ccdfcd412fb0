"""Whether a record fits: the producer's limit before compression, the topic's after it.

librdkafka refuses at `produce` a record whose key, value and headers are over its own
`message.max.bytes` (before compression). A broker refuses a record batch over the topic's
`max.message.bytes` after compression, and in a transaction that refusal surfaces only at
`commit_transaction`, when its 60 s timeout is out. So the worker reads each topic's limit at
start (`runtime.topic_limits`) and checks every output against it before producing: one whose
size before compression is within the limit fits; a larger one is compressed here as the
producer will compress it (zstd level 3 came within 200 bytes of librdkafka's batch at a
300,000-byte limit) and fits if that is within the limit, less a margin.

A record over `batch.size` (uncompressed) is sent in a batch of its own; the worker keeps
`batch.size` within the smallest topic limit (`batch_bytes`), so records that share a batch
never make it too large together.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import cramjam

from streamdedup.outputs.kafka_contract import MAX_RECORD_BYTES

Headers = Sequence[tuple[str, bytes | None]]
# librdkafka's per-record framing on top of key, value and headers, with room to spare (a batch's
# own header is 61 bytes, a record's under 30)
RECORD_OVERHEAD = 1024
# librdkafka's default `batch.size`
DEFAULT_BATCH_BYTES = 1_000_000

# the size of data as each `compression.type` makes it at a `compression.level` (-1: librdkafka's
# default for the codec: zstd 3, gzip 6; lz4 and snappy as librdkafka's defaults)
COMPRESSED: dict[str, Callable[[bytes, int], int]] = {
    "none": lambda data, level: len(data),
    "zstd": lambda data, level: len(cramjam.zstd.compress(data, level=3 if level < 0 else level)),
    "gzip": lambda data, level: len(zlib.compress(data, 6 if level < 0 else level)),
    "lz4": lambda data, level: len(cramjam.lz4.compress(data)),
    "snappy": lambda data, level: len(cramjam.snappy.compress(data)),
}


def record_size(key: bytes | None, value: bytes | None, headers: Headers | None) -> int:
    """The record's size before compression, framing included (what librdkafka checks at produce)."""
    return (len(key or b"") + len(value or b"") + RECORD_OVERHEAD
            + sum(len(name) + len(data or b"") for name, data in headers or []))


def room(limit: int) -> int:
    """What a topic's `max.message.bytes` leaves for a record: 1% less, as compressors differ a little."""
    return limit - limit // 100


@dataclass(frozen=True)
class RecordLimits:
    """The largest record the producer builds, and each topic takes, and how the producer compresses."""

    client_bytes: int = MAX_RECORD_BYTES  # the producer's `message.max.bytes`, before compression
    topic_bytes: Mapping[str, int] = field(default_factory=dict)  # `max.message.bytes`, after compression
    compression: str = "none"  # the producer's `compression.type`
    level: int = -1  # and its `compression.level` (-1: the codec's default)
    # a topic whose broker compresses its records again (its `compression.type`) -> that codec
    topic_compression: Mapping[str, str] = field(default_factory=dict)

    def fits(self, topic: str, key: bytes | None, value: bytes | None, headers: Headers | None = None) -> bool:
        """Whether the producer builds this record and the topic's broker takes it."""
        size = record_size(key, value, headers)
        if size > self.client_bytes:
            return False
        limit = self.topic_bytes.get(topic)
        if limit is None or size <= room(limit):
            return True
        codec = self.topic_compression.get(topic, self.compression)
        level = self.level if codec == self.compression else -1  # the broker's: its codec's default
        compressed = COMPRESSED.get(codec, COMPRESSED["none"])  # unknown: its size before compression
        return size - len(value or b"") + compressed(value or b"", level) <= room(limit)

    def batch_bytes(self) -> int:
        """The producer's `batch.size`: within every topic's limit, so a batch of records that fit fits too."""
        return min([DEFAULT_BATCH_BYTES, *(room(limit) for limit in self.topic_bytes.values())])
