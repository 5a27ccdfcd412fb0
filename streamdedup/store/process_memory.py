"""Memory shared by every store of the process, so a worker's does not grow with its partitions.

A worker opens one store per input partition it owns (one per index partition, gather partition
and fingerprint partition in the global topology). What a store keeps in memory besides its own
index is taken from one amount for the whole process, as Kafka Streams bounds RocksDB across its
state stores:

- RocksDB's block cache: one LRU cache (`block_cache`, 128 MiB);
- RocksDB's memtables: one write buffer manager (`write_buffer_manager`, 128 MiB, a soft limit:
  past ~90 % of it, RocksDB flushes memtables of the stores being written to, and writers never
  wait), memtables taking memory in 256 KiB blocks (`ARENA_BLOCK_BYTES`);
- page records kept decoded (`DECODED_RECORDS`: 65,536 records, ~80 MiB with the default methods)
  and site templates kept decoded (`TEMPLATE_BYTES`: 256 MiB): split evenly among the stores
  holding a part now (a store that keeps no templates takes none of theirs), each at most what
  one store kept before (32,768 records; 256 MiB) and at least 256 records and 4 MiB (past 256
  stores, and 64 that keep templates, those floors add up to more than the amount).

A store's part shrinks when another store opens; the store trims its cache at its next write to it.
A store closed, or collected without being closed, gives its part back.
"""

from __future__ import annotations

import threading
import weakref

from rocksdict import BlockBasedOptions, Cache, Options, WriteBufferManager

BLOCK_CACHE_BYTES = 128 << 20
MEMTABLE_BYTES = 128 << 20
# a store's memtable (RocksDB's default, 64 MiB, is for one big database, not one of many)
WRITE_BUFFER_BYTES = 16 << 20
# a memtable takes memory in blocks of this size, counted by the write buffer manager from the first
# write: RocksDB's default (an eighth of the write buffer, 2-8 MiB) made ~112 stores written a little
# each (a worker with many partitions) count as full, and flush on every write
ARENA_BLOCK_BYTES = 256 << 10

_lock = threading.Lock()
_block_cache: Cache | None = None
_write_buffer_manager: WriteBufferManager | None = None


def block_cache() -> Cache:
    """The block cache of every store of the process (made on first use)."""
    global _block_cache
    with _lock:
        if _block_cache is None:
            _block_cache = Cache(BLOCK_CACHE_BYTES)
        return _block_cache


def table() -> BlockBasedOptions:
    """A store's table options, reading through the process's one block cache."""
    options = BlockBasedOptions()
    options.set_block_cache(block_cache())
    return options


def memtable_options(options: Options) -> None:
    """A store's memtables: `WRITE_BUFFER_BYTES` each, under the process's budget, in small arena blocks."""
    options.set_write_buffer_size(WRITE_BUFFER_BYTES)
    options.set_write_buffer_manager(write_buffer_manager())
    options.set_arena_block_size(ARENA_BLOCK_BYTES)


def write_buffer_manager() -> WriteBufferManager:
    """The memtable budget of every store of the process (made on first use; writers never stall)."""
    global _write_buffer_manager
    with _lock:
        if _write_buffer_manager is None:
            _write_buffer_manager = WriteBufferManager(MEMTABLE_BYTES, False)
        return _write_buffer_manager


class SharedAmount:
    """A process-wide amount split evenly among its holders, each between `least` and `most`."""

    def __init__(self, total: int, most: int, least: int) -> None:
        self.total, self.most, self.least = total, most, least
        self.holders = 0
        self._lock = threading.Lock()

    def join(self, owner: object) -> Share:
        """A new holder's part: `owner` holds it while open and `leave`s it at close (or when collected)."""
        with self._lock:
            self.holders += 1
        share = Share(self)
        weakref.finalize(owner, share.leave)  # an owner never closed gives its part back once collected
        return share

    def each(self) -> int:
        """What each holder may keep now."""
        return max(self.least, min(self.most, self.total // max(1, self.holders)))

    def _leave(self) -> None:
        with self._lock:
            self.holders -= 1


class Share:
    """One holder's part of a `SharedAmount`."""

    def __init__(self, amount: SharedAmount) -> None:
        self._amount: SharedAmount | None = amount
        self._last = amount.each()

    def limit(self) -> int:
        """What this holder may keep now (what it last could, once it has left)."""
        if self._amount is not None:
            self._last = self._amount.each()
        return self._last

    def leave(self) -> None:
        """Give the part back (at most once: a second call does nothing)."""
        if self._amount is not None:
            self._amount._leave()
            self._amount = None


# page records kept decoded (`SignatureStore.docs`): ~1.3 KB each with the default methods
DECODED_RECORDS = SharedAmount(total=1 << 16, most=1 << 15, least=256)
# site templates kept decoded (`template_store.TemplateCache`)
TEMPLATE_BYTES = SharedAmount(total=256 << 20, most=256 << 20, least=4 << 20)
