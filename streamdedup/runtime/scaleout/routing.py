"""Where a key or a page lives, and the one order all workers agree on.

Pure functions. Partitions are chosen by our own hash, not the client's partitioner, so every
client library (and Apache Kafka's Java clients) routes a key to the same partition. A topic's
partition count is part of the routing: never add partitions to the index or parts topics of a
running system (the same rule as Kafka Streams' repartition topics).
"""

from __future__ import annotations

import struct

import xxhash

_ORDER = struct.Struct(">QQIQ")
_SHIFT = 1 << 63  # event times may be negative (pre-1970): shift into unsigned order
ORDER_BYTES = _ORDER.size


def key_partition(tag: int, key: bytes, partitions: int) -> int:
    """The index partition of one index key of method `tag`."""
    return xxhash.xxh3_64_intdigest(bytes((tag,)) + key) % partitions


def page_partition(page_id: str, partitions: int) -> int:
    """The parts partition where a page's answers are gathered into its verdict."""
    return xxhash.xxh3_64_intdigest(page_id.encode("utf-8", "surrogatepass")) % partitions


def page_order(event_ms: int | None, timestamp_ms: int, partition: int, offset: int) -> bytes:
    """A page's place in the global order, as bytes that sort correctly.

    Event time (the page's fetch time) first, so "earliest" means earliest crawled whatever the
    input partitioning; then the input message's timestamp, partition and offset, which make the
    order total and the same on every worker and every replay."""
    event = timestamp_ms if event_ms is None else event_ms
    return _ORDER.pack(event + _SHIFT, timestamp_ms + _SHIFT, partition, offset)
