"""What tells one Kafka record from another at the same topic, partition and offset.

An offset names a record only while the topic lives: a topic deleted and created again, a broker
that came back without its data or a fleet moved to a new cluster gives new records the offsets
of old ones. A runtime that remembers something per offset (the Faust app's verdict journal)
stores the record's digest beside it and trusts the memory only for the same record.
"""

from __future__ import annotations

import struct

import xxhash

DIGEST_BYTES = 16
_FRAME = struct.Struct("<qqq")  # key size, value size (-1: null), timestamp ms (-1: none)


def record_digest(key: bytes | None, value: bytes | None, timestamp_ms: int | None) -> bytes:
    """A 16-byte digest (xxh3-128) of a record's key, value and timestamp.

    Sizes frame the fields, so no two different records share their input bytes."""
    frame = _FRAME.pack(-1 if key is None else len(key), -1 if value is None else len(value),
                        -1 if timestamp_ms is None else timestamp_ms)
    hasher = xxhash.xxh3_128(frame)
    hasher.update(key or b"")
    hasher.update(value or b"")
    return hasher.digest()


def kafka_position(topic: str, partition: int, offset: int, timestamp_ms: int | None) -> str:
    """A Kafka record's place, from which a page id without a usable fetch time is made.

    A Kafka record's place, as the id of a page without a usable fetch time is made of (the
    worker's and the Faust app's alike): its timestamp as well as its offset, so a topic created
    again (offsets from 0 again) gives its records new ids rather than `duplicate_id`."""
    return f"{topic}:{partition}:{offset}@{'' if timestamp_ms is None else timestamp_ms}"


def kafka_place(partition: int, offset: int, timestamp_ms: int | None) -> tuple[int, int, int]:
    """A Kafka record's place as numbers, in the order records came: message timestamp, partition, offset.

    An undated page's verdict carries it (`arrival`), by which a story lists undated fetches that tie
    (`clusters.Stories`): the same on every replay of the topic, in offset order within a partition."""
    return (0 if timestamp_ms is None else timestamp_ms, partition, offset)


__all__ = ["DIGEST_BYTES", "kafka_place", "kafka_position", "record_digest"]
