"""The index in memory: 6-byte index names (`layout.index_key`, `layout.page_id_key`) -> page seqs.

A multimap in two flat arrays with open addressing (linear probing), probed by compiled loops a
whole batch of names at a time. Each slot is one posting: a 64-bit word holding the 48-bit name
and the seq's high 16 bits, and a 32-bit word holding the seq's low 32 bits (12 bytes a posting;
seqs below 2^47). A free slot is all ones, a removed posting (a tombstone) all ones but the last
bit: live postings never have the top bit set.

RocksDB keeps the page records (and the changelog, its WAL); this table is loaded from the
snapshot a clean close wrote (`save`, `load`) or else rebuilt from the records when the store
opens (`SignatureStore._rebuild_index`), so it holds exactly what the
committed records say: every key of every stored page, except those a record names as not filed
(full keys, see `StoreBatch.add`). It changes only after a WriteBatch is written (commit, expiry,
deletion), so a crash or a discarded batch leaves nothing to undo.
"""

from __future__ import annotations

import itertools
import os
import struct
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numba
import numpy as np

from streamdedup.store import layout

EMPTY = np.uint64(0xFFFF_FFFF_FFFF_FFFF)
TOMBSTONE = np.uint64(0xFFFF_FFFF_FFFF_FFFE)
NAME_BITS = 48
MAX_SEQ = 1 << 47
_MIN_SLOTS = 1 << 12
_MAGIC = b"sdidx\x00\x01\x00"
_HEADER = struct.Struct("<8sQQQQ")
_MAX_LOAD = 0.8  # grow past this share of used slots (postings + tombstones)
_GROWN_LOAD = 0.5  # ... to this share of postings
_EPOCHS = itertools.count(1)  # a table's epoch, unique in the process (`MemoryIndex.epoch`)


@numba.njit(cache=True)
def _home(name: np.uint64, slots: int) -> Any:  # np.int64: an int64 slot number, not uint64, for numba
    mixed = (name * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(16)
    return np.int64(mixed % np.uint64(slots))


@numba.njit(cache=True)
def _count(words: np.ndarray, names: np.ndarray) -> np.ndarray:
    """How many postings each name has (the same probe as `_count_free`)."""
    return _count_free(words, names)[0]


@numba.njit(cache=True)
def _count_free(words: np.ndarray, names: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`_count`, and where each name's probe meets its first free slot (a tombstone, or the empty
    slot that ends it): where `_insert` would put a posting of a name that has none."""
    counts = np.zeros(len(names), dtype=np.int64)
    free = np.empty(len(names), dtype=np.int64)
    mask = np.uint64((1 << 48) - 1)
    slots = len(words)
    for i in range(len(names)):
        slot = _home(names[i], slots)
        first = -1
        while words[slot] != np.uint64(0xFFFF_FFFF_FFFF_FFFF):
            word = words[slot]
            if word >> np.uint64(63) == 0:
                if word & mask == names[i]:
                    counts[i] += 1
            elif first < 0:
                first = slot
            slot += 1
            if slot == slots:
                slot = 0
        free[i] = first if first >= 0 else slot
    return counts, free


@numba.njit(cache=True)
def _collect(words: np.ndarray, low: np.ndarray, names: np.ndarray, starts: np.ndarray, out: np.ndarray) -> None:
    """The seqs of each name, from `starts[i]` on in `out` (sized by `_count`), in probe order."""
    mask = np.uint64((1 << 48) - 1)
    slots = len(words)
    for i in range(len(names)):
        at = starts[i]
        slot = _home(names[i], slots)
        while words[slot] != np.uint64(0xFFFF_FFFF_FFFF_FFFF):
            word = words[slot]
            if word >> np.uint64(63) == 0 and word & mask == names[i]:
                out[at] = ((word >> np.uint64(48)) << np.uint64(32)) | np.uint64(low[slot])
                at += 1
            slot += 1
            if slot == slots:
                slot = 0


@numba.njit(cache=True)
def _insert(words: np.ndarray, low: np.ndarray, names: np.ndarray, seqs: np.ndarray) -> np.ndarray:
    """Add the postings (name, seq) that are not there yet (one is added once); returns, per
    posting, 1 if it went into a free slot, 2 into a tombstone's, 0 if it was there."""
    slots = len(words)
    placed = np.zeros(len(names), dtype=np.int64)
    for i in range(len(names)):
        word = names[i] | ((seqs[i] >> np.uint64(32)) << np.uint64(48))
        word_low = np.uint32(seqs[i] & np.uint64(0xFFFF_FFFF))
        slot = _home(names[i], slots)
        free = -1
        while words[slot] != np.uint64(0xFFFF_FFFF_FFFF_FFFF):
            if words[slot] == word and low[slot] == word_low:
                break
            if free < 0 and words[slot] == np.uint64(0xFFFF_FFFF_FFFF_FFFE):
                free = slot
            slot += 1
            if slot == slots:
                slot = 0
        if words[slot] != np.uint64(0xFFFF_FFFF_FFFF_FFFF):
            continue  # there already
        placed[i] = 1
        if free >= 0:
            slot = free
            placed[i] = 2
        words[slot] = word
        low[slot] = word_low
    return placed


@numba.njit(cache=True)
def _insert_from(words: np.ndarray, low: np.ndarray, names: np.ndarray, seqs: np.ndarray,
                 free: np.ndarray) -> np.ndarray:
    """`_insert`, where a posting with `free[i]` >= 0 is of a name with no postings whose probe met
    its first free slot there (`_count_free`) and the table has only had postings added since:
    every slot before it in the probe was live and still is, so the posting goes into the first
    free slot from there on, where `_insert` would put it, without probing from its home again."""
    slots = len(words)
    placed = np.zeros(len(names), dtype=np.int64)
    for i in range(len(names)):
        if free[i] < 0:
            placed[i:i + 1] = _insert(words, low, names[i:i + 1], seqs[i:i + 1])
            continue
        slot = free[i]
        while words[slot] >> np.uint64(63) == 0:  # taken since by a posting added before this one
            slot += 1
            if slot == slots:
                slot = 0
        placed[i] = 2 if words[slot] == np.uint64(0xFFFF_FFFF_FFFF_FFFE) else 1
        words[slot] = names[i] | ((seqs[i] >> np.uint64(32)) << np.uint64(48))
        low[slot] = np.uint32(seqs[i] & np.uint64(0xFFFF_FFFF))
    return placed


@numba.njit(cache=True)
def _rehash(old_words: np.ndarray, old_low: np.ndarray, words: np.ndarray, low: np.ndarray) -> int:
    """Every live posting of the old table into the empty new one, in the old table's slot order
    (where `_insert` would put them: they are distinct, and the new table has no tombstones);
    returns how many."""
    slots = len(words)
    mask = np.uint64((1 << 48) - 1)
    moved = 0
    for i in range(len(old_words)):
        word = old_words[i]
        if word >> np.uint64(63) != 0:  # empty or tombstone
            continue
        slot = _home(word & mask, slots)
        while words[slot] != np.uint64(0xFFFF_FFFF_FFFF_FFFF):
            slot += 1
            if slot == slots:
                slot = 0
        words[slot] = word
        low[slot] = old_low[i]
        moved += 1
    return moved


@numba.njit(cache=True)
def _remove(words: np.ndarray, low: np.ndarray, names: np.ndarray, seqs: np.ndarray) -> int:
    """Remove the postings (name, seq) that exist; returns how many did."""
    slots = len(words)
    removed = 0
    for i in range(len(names)):
        wanted = names[i] | ((seqs[i] >> np.uint64(32)) << np.uint64(48))
        wanted_low = np.uint32(seqs[i] & np.uint64(0xFFFF_FFFF))
        slot = _home(names[i], slots)
        while words[slot] != np.uint64(0xFFFF_FFFF_FFFF_FFFF):
            if words[slot] == wanted and low[slot] == wanted_low:
                words[slot] = np.uint64(0xFFFF_FFFF_FFFF_FFFE)
                removed += 1
                break
            slot += 1
            if slot == slots:
                slot = 0
    return removed


def name_ints(names: Sequence[bytes]) -> np.ndarray:
    """6-byte names as 48-bit integers, in one pass."""
    data = b"".join(names)
    if len(data) != layout.INDEX_KEY_SIZE * len(names):
        raise ValueError(f"index names are {layout.INDEX_KEY_SIZE} bytes")
    return name_rows_ints(np.frombuffer(data, dtype=np.uint8).reshape(-1, layout.INDEX_KEY_SIZE))


@numba.njit(cache=True)
def name_places(every: np.ndarray, names: np.ndarray) -> np.ndarray:
    """Where each of `names` stands among the sorted distinct values of `every` (48-bit names),
    sorted: how many distinct names of `every` are smaller. A page's few full keys among its
    ~50 names: one sort and a scan, no `np.unique` set-up a page."""
    ordered = np.sort(every)
    out = np.empty(len(names), dtype=np.int64)
    for j in range(len(names)):
        rank = 0
        for i in range(len(ordered)):
            if ordered[i] >= names[j]:
                break
            if i == 0 or ordered[i] != ordered[i - 1]:
                rank += 1
        out[j] = rank
    return np.sort(out)


def ints_names(ints: np.ndarray) -> list[bytes]:
    """48-bit integers back to 6-byte names (`name_ints`'s inverse), in one pass."""
    size = layout.INDEX_KEY_SIZE
    data = np.asarray(ints, dtype=np.uint64).astype(">u8").view(np.uint8).reshape(-1, 8)[:, 8 - size:].tobytes()
    return [data[i: i + size] for i in range(0, len(data), size)]


def name_rows_ints(rows: np.ndarray) -> np.ndarray:
    """Names as uint8 rows of 6 bytes (`layout.names9`) as 48-bit integers."""
    padded = np.zeros((len(rows), 8), dtype=np.uint8)
    padded[:, 8 - layout.INDEX_KEY_SIZE:] = rows
    return padded.view(">u8").ravel().astype(np.uint64)


def slots_for(postings: int) -> int:
    """The slots of a table holding this many postings at the load a growth leaves (`_GROWN_LOAD`)."""
    return max(_MIN_SLOTS, int(postings / _GROWN_LOAD) + 1)


SLOT_BYTES = 12  # a posting: a 64-bit word and a 32-bit one


def available_bytes() -> int | None:
    """Memory this process may still take: the kernel's MemAvailable, or less if the process's
    cgroup (a container's limit) has less room left; None if neither can be read."""
    found: list[int] = []
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                found.append(int(line.split()[1]) * 1024)
    except (OSError, ValueError):
        pass
    try:
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        if limit != "max":
            found.append(int(limit) - int(Path("/sys/fs/cgroup/memory.current").read_text()))
    except (OSError, ValueError):
        pass
    return min(found) if found else None


class MemoryIndex:
    def __init__(self, postings: int = 0) -> None:
        self._allocate(slots_for(postings))

    def _allocate(self, slots: int) -> None:
        self.words = np.full(slots, EMPTY, dtype=np.uint64)
        self.low = np.zeros(slots, dtype=np.uint32)
        self.postings = 0
        self.tombstones = 0
        self.epoch = next(_EPOCHS)  # changes whenever a live slot may become free (`insert_ints`)

    @property
    def size_bytes(self) -> int:
        return int(self.words.nbytes + self.low.nbytes)

    def _found(self, names: Sequence[bytes]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Postings counts of the names, where each name's seqs start in the third, and those seqs."""
        return self.found_ints(name_ints(names))

    def counts_ints(self, names: np.ndarray) -> np.ndarray:
        """How many postings each name (a 48-bit integer, `name_ints`) has, in one compiled pass."""
        return _count(self.words, names) if len(names) else np.zeros(0, dtype=np.int64)

    def counts_free_ints(self, names: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
        """`counts_ints`, each name's first free slot (`_count_free`), and the table's `epoch`,
        which `insert_ints` checks before it uses the slots."""
        if not len(names):
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), self.epoch
        counts, free = _count_free(self.words, names)
        return counts, free, self.epoch

    def found_ints(self, keys: np.ndarray,
                   counts: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """`_found` of names as 48-bit integers (`counts`: their `counts_ints`, if known)."""
        if counts is None:
            counts = _count(self.words, keys)
        starts = np.zeros(len(keys), dtype=np.int64)
        np.cumsum(counts[:-1], out=starts[1:])
        out = np.empty(int(counts.sum()), dtype=np.uint64)
        _collect(self.words, self.low, keys, starts, out)
        return counts, starts, out

    def seqs(self, names: Sequence[bytes]) -> list[list[int]]:
        """Each name's seqs, oldest first."""
        found: list[list[int]] = [[] for _ in names]
        if names:
            counts, starts, out = self._found(names)
            for i in np.flatnonzero(counts).tolist():
                found[i] = sorted(out[starts[i]: starts[i] + counts[i]].tolist())
        return found

    def values(self, names: Sequence[bytes]) -> list[bytes | None]:
        """Each name's postings as the store's value format (`layout.seqs_value`), None if it has none."""
        values: list[bytes | None] = [None] * len(names)
        if names:
            counts, starts, out = self._found(names)
            for i in np.flatnonzero(counts).tolist():
                values[i] = layout.seqs_value(sorted(out[starts[i]: starts[i] + counts[i]].tolist()))
        return values

    def insert(self, names: Sequence[bytes], seqs: Sequence[int]) -> None:
        if names:
            self.insert_ints(name_ints(names), np.asarray(seqs, dtype=np.uint64))

    def insert_ints(self, names: np.ndarray, seqs: np.ndarray, free: np.ndarray | None = None,
                    epoch: int = -1) -> None:
        """`insert` of names as 48-bit integers (`name_ints`) and seqs as uint64, in that order.
        `free`, with the `epoch` it was found at (`counts_free_ints`): for each name with no
        postings then and none added before it, its first free slot (else -1); used if no slot can
        have been freed since (the epoch is the same, and the table does not grow now). The table
        is the same either way, slot for slot."""
        if not len(names):
            return
        if int(seqs.max()) >= MAX_SEQ:
            raise ValueError(f"the in-memory index holds seqs below 2^47, got {int(seqs.max())}")
        if (self.postings + self.tombstones + len(names)) > _MAX_LOAD * len(self.words):
            self._grow(len(names))
        if free is not None and epoch == self.epoch:
            placed = _insert_from(self.words, self.low, names, seqs, free)
        else:
            placed = _insert(self.words, self.low, names, seqs)
        self.tombstones -= int(np.count_nonzero(placed == 2))
        self.postings += int(np.count_nonzero(placed))

    def remove(self, names: Sequence[bytes], seqs: Sequence[int]) -> None:
        if names:
            self.remove_ints(name_ints(names), np.asarray(seqs, dtype=np.uint64))

    def remove_ints(self, names: np.ndarray, seqs: np.ndarray) -> None:
        """`remove` of names as 48-bit integers and seqs as uint64."""
        if len(names):
            removed = _remove(self.words, self.low, names, seqs)
            self.epoch = next(_EPOCHS)
            self.postings -= removed
            self.tombstones += removed

    def reserve(self, postings: int) -> None:
        """Room for this many postings without growing: the table sized once (a rebuild that knows
        the store's page count), so no doubling holds the old table and the new at once."""
        slots = slots_for(postings)
        if slots > len(self.words):
            old_words, old_low = self.words, self.low
            self._allocate(slots)
            self.postings = _rehash(old_words, old_low, self.words, self.low)

    def _grow(self, adding: int) -> None:
        """Rehash the live postings into a table at half load (tombstones dropped), straight from
        the old table to the new: the two tables are all it holds at once (copies of the live
        postings and their seqs took ~5x the table's size at the peak: a 10 M-page store was killed
        by the OOM killer while growing)."""
        old_words, old_low = self.words, self.low
        self._allocate(slots_for(self.postings + adding))
        self.postings = _rehash(old_words, old_low, self.words, self.low)

    def save(self, path: Path, version: int) -> None:
        """The table to a file (header, then the two arrays), synced, for `load`."""
        header = _HEADER.pack(_MAGIC, version, len(self.words), self.postings, self.tombstones)
        with open(path, "wb") as out:
            out.write(header)
            self.words.tofile(out)
            self.low.tofile(out)
            out.flush()
            os.fsync(out.fileno())

    @classmethod
    def load(cls, path: Path, version: int) -> MemoryIndex | None:
        """The table `save` wrote, if it was saved at this `version` of the store and is whole."""
        with open(path, "rb") as data:
            magic, saved, slots, postings, tombstones = _HEADER.unpack(data.read(_HEADER.size))
            if magic != _MAGIC or saved != version:
                return None
            words = np.fromfile(data, dtype=np.uint64, count=slots)
            low = np.fromfile(data, dtype=np.uint32, count=slots)
            if len(words) != slots or len(low) != slots or data.read(1):
                return None
        index = cls.__new__(cls)
        index.words, index.low, index.postings, index.tombstones = words, low, postings, tombstones
        index.epoch = next(_EPOCHS)
        return index

    def counts(self) -> dict[str, int]:
        """Index keys (distinct names of methods' keys), their postings, and page-id names (store statistics)."""
        live = self.words[self.words >> np.uint64(63) == 0] & np.uint64((1 << NAME_BITS) - 1)
        is_id = live >> np.uint64(NAME_BITS - 8) == layout.ID_TAG
        return {"index_keys": len(np.unique(live[~is_id])), "postings": int(np.count_nonzero(~is_id)),
                "ids": len(np.unique(live[is_id]))}
