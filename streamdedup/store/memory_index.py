"""The index in memory: 6-byte index names (`layout.index_key`, `layout.page_id_key`) -> page seqs.

A multimap in a flat array with open addressing (linear probing), probed by compiled loops a
whole batch of names at a time. Each slot is one posting, 12 bytes side by side (`SLOT`): a 64-bit
word holding the 48-bit name and the seq's high 16 bits, and a 32-bit word holding the seq's low
32 bits (seqs below 2^47). A free slot's word is all ones, a removed posting's (a tombstone's) all
ones but the last bit: live postings never have the top bit set. A slot's two words share a cache
line and a memory page (but in 2 slots of 16, which straddle two lines), so filing a posting
touches one place of memory, not two: on a table of many GB, where each touch of a place not
touched lately waits for memory and its page's translation, that is most of what a filing costs
(docs/benchmarks.md, "One place a posting").

The table is cut into `SEGMENTS` tables by a hash of the name (`_group`), each growing on its
own: a growth holds one segment's old and new arrays at once, not the whole table's (one table of
a 10 M-page store peaked at 16.7 GB while it doubled, for 10.7 GB resident). A large segment
grows beside the batches, in a thread (`_Growth`): done in place, its growth stopped the commit
that met it (~0.5 s for a segment of a 10 M-page store). Segments filled at the same pace would
also all meet their limit within a few dozen batches; so each segment grows to its own load
(`grown_load`: 0.45 to 0.55 by segment, 0.5 on average), and their growths come at store sizes
up to 22 % apart, not all at once (docs/benchmarks.md, "The store", 2026-12-02's third session).

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
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, BinaryIO, cast

import numba
import numpy as np
import xxhash
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from streamdedup.store import layout

EMPTY = np.uint64(0xFFFF_FFFF_FFFF_FFFF)
TOMBSTONE = np.uint64(0xFFFF_FFFF_FFFF_FFFE)
NAME_BITS = 48
MAX_SEQ = 1 << 47
_MIN_SLOTS = 1 << 8  # a segment's
SEGMENT_BITS = 6
SEGMENTS = 1 << SEGMENT_BITS
# another multiplier than `_home`'s, so that a name's slot in its segment stays uniform
_SEGMENT_MIX = np.uint64(0xD6E8_FEB8_6659_FD93)
# \x02: segments; \x03: a slot's two words side by side; \x04: used slots only; \x05: a checksum last
_MAGIC = b"sdidx\x00\x05\x00"
_CHECKSUM = struct.Struct("<Q")  # a snapshot's last 8 bytes: the xxh3-64 of every byte before them
_SNAPSHOT_RUN = 1 << 20  # slots a snapshot's bitmap covers before the used slots among them (12 MiB)
_HEADER = struct.Struct("<8sQQ")  # a snapshot's: magic, version, segments
_SEGMENT_HEADER = struct.Struct("<QQQ")  # slots, postings, tombstones
_MAX_LOAD = 0.8  # grow past this share of used slots (postings + tombstones)
_GROWN_LOAD = 0.5  # ... to this share of postings, on average over the segments (`grown_load`)
_GROWN_LOAD_SPREAD = 0.05  # each segment's: within this of it
_EPOCHS = itertools.count(1)  # a table's epoch, unique in the process (`MemoryIndex.epoch`)
# a segment of at least this many slots grows beside the batches (`_Growth`; ~0.03 s in place)
BESIDE_GROWTH_SLOTS = 1 << 20
# at most this many segments grow beside the batches at once (an eighth of them: their new tables
# ~20 % of the table's memory more); one that must grow while they run grows in place. Each
# growth holds its segment's old and new tables and a thread: without a bound, segments that reach
# their limit together (sized alike: a snapshot from before `grown_load`) would each start one,
# a growing table's memory up to ~2.6x its size. Segments at their own loads overlap in fewer
# (at most 4 and 7 in two runs filling a 4 M-page table to 8 M, `bench/index_growth.py --stalls`)
MAX_BESIDE_GROWTHS = 8


# Names ahead of the one probed whose home slots are asked of memory already (`_prefetch`): a
# probe of a table larger than the caches waits ~100 ns on each slot's read; asked for ahead,
# a dozen reads are in flight at once (a 6.4 GB table alone: probe 5.3 -> 2.65 µs a page; the
# whole store path gains less: docs/benchmarks.md, "The table's kernels prefetch")
PREFETCH_AHEAD = 12
_REHASH_RUN = 4096  # old slots a growth reads before it places their postings (`_rehash`)


def _prefetch_typed(typingctx: Any, array: Any, index: Any) -> Any:
    """A hint to the CPU to read `array[index]` into its caches (LLVM's prefetch: read, keep in
    all levels); no effect on what the code computes. Compiled loops over random slots of the
    table issue it a few names ahead, so that the reads of several probes overlap."""
    signature = types.void(array, index)

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        array_type = sig.args[0]
        made = context.make_array(array_type)(context, builder, args[0])
        pointer = cgutils.get_item_pointer(context, builder, array_type, made, [args[1]])
        byte_pointer = ir.IntType(8).as_pointer()
        function_type = ir.FunctionType(ir.VoidType(), [byte_pointer, ir.IntType(32), ir.IntType(32), ir.IntType(32)])
        function = cgutils.get_or_insert_function(builder.module, function_type, "llvm.prefetch.p0i8")
        read, keep, data = (ir.Constant(ir.IntType(32), value) for value in (0, 3, 1))
        builder.call(function, [builder.bitcast(pointer, byte_pointer), read, keep, data])
        return context.get_dummy_value()

    return signature, codegen


_prefetch = cast(Callable[[np.ndarray, Any], None], intrinsic(_prefetch_typed))


@numba.njit(cache=True)
def _home(name: np.uint64, slots: int) -> Any:  # np.int64: an int64 slot number, not uint64, for numba
    mixed = (name * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(16)
    return np.int64(mixed % np.uint64(slots))


@numba.njit(cache=True)
def _homes(names: np.ndarray, slots: int, words: np.ndarray) -> np.ndarray:
    """Each name's home slot (`_home`), the first `PREFETCH_AHEAD` of them asked of memory."""
    homes = np.empty(len(names), dtype=np.int64)
    for i in range(len(names)):
        homes[i] = _home(names[i], slots)
    for i in range(min(PREFETCH_AHEAD, len(names))):
        _prefetch(words, homes[i])
    return homes


@numba.njit(cache=True)
def _collect(words: np.ndarray, low: np.ndarray, names: np.ndarray, starts: np.ndarray, out: np.ndarray) -> None:
    """The seqs of each name, from `starts[i]` on in `out` (sized by the counts), in probe order."""
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
    """Add the postings (name, seq) that are not there yet (one is added once) to one segment's
    table, each probed from its home (`_insert_one`); returns, per posting, 1 if it went into a
    free slot, 2 into a tombstone's, 0 if it was there. (The store files a batch with `_insert_all`:
    the same table.)"""
    placed = np.zeros(len(names), dtype=np.int64)
    homes = _homes(names, len(words), words)
    for i in range(len(names)):
        if i + PREFETCH_AHEAD < len(names):
            _prefetch(words, homes[i + PREFETCH_AHEAD])
        placed[i] = _insert_one(words, low, names[i], seqs[i], homes[i])
    return placed


@numba.njit(cache=True)
def _prefetch_slot(words: np.ndarray, low: np.ndarray, slot: int) -> None:
    """`_prefetch` of both words of a slot that will be written (none for -1: no slot)."""
    if slot >= 0:
        _prefetch(words, slot)
        _prefetch(low, slot)


@numba.njit(cache=True, inline="always")
def _segment_of(name: np.uint64) -> Any:
    """The segment a name's postings live in: the top bits of a multiplicative hash."""
    return np.int64((name * _SEGMENT_MIX) >> np.uint64(64 - SEGMENT_BITS))


@numba.njit(cache=True)
def _count_free_all(words: Any, names: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """How many postings each name has, and where each name's probe meets its first free slot
    (a tombstone, or the empty slot that ends it): where `_insert_one` would put a posting of a
    name that has none. Names of every segment in one call (`words`: each segment's words, a
    tuple), a segment's names at a time: each segment's table is taken from the tuple once
    (taking it is a reference counted each time, too dear for once a name)."""
    counts = np.zeros(len(names), dtype=np.int64)
    free = np.empty(len(names), dtype=np.int64)
    mask = np.uint64((1 << 48) - 1)
    order, bounds = _group(names)
    for segment in range(SEGMENTS):
        if bounds[segment] == bounds[segment + 1]:
            continue
        table = words[segment]
        run = order[bounds[segment]: bounds[segment + 1]]
        slots = len(table)
        homes = _homes(names[run], slots, table)
        for k in range(len(run)):
            if k + PREFETCH_AHEAD < len(run):
                _prefetch(table, homes[k + PREFETCH_AHEAD])
            i = run[k]
            slot = homes[k]
            first = -1
            while table[slot] != np.uint64(0xFFFF_FFFF_FFFF_FFFF):
                word = table[slot]
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
def _collect_all(words: Any, low: Any, names: np.ndarray, starts: np.ndarray, out: np.ndarray) -> None:
    """`_collect` of names of every segment in one call (`words`, `low`: each segment's, tuples)."""
    order, bounds = _group(names)
    for segment in range(SEGMENTS):
        if bounds[segment] < bounds[segment + 1]:
            run = order[bounds[segment]: bounds[segment + 1]]
            _collect(words[segment], low[segment], names[run], starts[run], out)


@numba.njit(cache=True)
def _segment_sizes(names: np.ndarray) -> np.ndarray:
    """How many of the names fall in each segment."""
    sizes = np.zeros(SEGMENTS, dtype=np.int64)
    for name in names:
        sizes[_segment_of(name)] += 1
    return sizes


@numba.njit(cache=True)
def _insert_one(words: np.ndarray, low: np.ndarray, name: np.uint64, seq: np.uint64, slot: int) -> int:
    """`_insert` of one posting whose probe starts at `slot` (its home): 1, 2 or 0 as there."""
    slots = len(words)
    word = name | ((seq >> np.uint64(32)) << np.uint64(48))
    word_low = np.uint32(seq & np.uint64(0xFFFF_FFFF))
    free = -1
    while words[slot] != np.uint64(0xFFFF_FFFF_FFFF_FFFF):
        if words[slot] == word and low[slot] == word_low:
            return 0  # there already
        if free < 0 and words[slot] == np.uint64(0xFFFF_FFFF_FFFF_FFFE):
            free = slot
        slot += 1
        if slot == slots:
            slot = 0
    placed = 1
    if free >= 0:
        slot = free
        placed = 2
    words[slot] = word
    low[slot] = word_low
    return placed


@numba.njit(cache=True)
def _insert_all(words: Any, low: Any, names: np.ndarray, seqs: np.ndarray, free: np.ndarray,
                free_valid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`_insert` of postings of every segment in one call (`words`, `low`: each segment's, tuples),
    a segment's at a time in their order: the table `_insert` a segment at a time makes, slot for
    slot.

    A posting with `free[i]` >= 0, in a segment whose `free_valid` is True, is new (its seq is
    not filed under its name) and its name's probe met its first free slot there
    (`_count_free_all`), the table having only had postings added since: every slot before it
    in the probe was live and still is, so the posting goes into the first free slot from there
    on, where a probe from its home would put it, without probing again. (The name may have
    postings: they are all before that slot.) Returns, by segment, the postings placed and those
    of them that went into a tombstone's slot."""
    placed = np.zeros(SEGMENTS, dtype=np.int64)
    reused = np.zeros(SEGMENTS, dtype=np.int64)
    order, bounds = _group(names)
    for segment in range(SEGMENTS):
        if bounds[segment] == bounds[segment + 1]:
            continue
        table, table_low = words[segment], low[segment]
        slots = len(table)
        run = order[bounds[segment]: bounds[segment + 1]]
        at = np.empty(len(run), dtype=np.int64)  # where each posting's probe starts
        known = np.zeros(len(run), dtype=np.bool_)
        for k in range(len(run)):
            i = run[k]
            if free[i] >= 0 and free_valid[segment]:
                at[k], known[k] = free[i], True
            else:
                at[k] = _home(names[i], slots)
        for k in range(min(PREFETCH_AHEAD, len(run))):
            _prefetch_slot(table, table_low, at[k])
        for k in range(len(run)):
            if k + PREFETCH_AHEAD < len(run):
                _prefetch_slot(table, table_low, at[k + PREFETCH_AHEAD])
            i = run[k]
            if not known[k]:
                result = _insert_one(table, table_low, names[i], seqs[i], at[k])
            else:
                slot = at[k]
                while table[slot] >> np.uint64(63) == 0:  # taken since by a posting added before this one
                    slot += 1
                    if slot == slots:
                        slot = 0
                result = 2 if table[slot] == np.uint64(0xFFFF_FFFF_FFFF_FFFE) else 1
                table[slot] = names[i] | ((seqs[i] >> np.uint64(32)) << np.uint64(48))
                table_low[slot] = np.uint32(seqs[i] & np.uint64(0xFFFF_FFFF))
            if result:
                placed[segment] += 1
                if result == 2:
                    reused[segment] += 1
    return placed, reused


@numba.njit(cache=True, nogil=True)
def _rehash(old_words: np.ndarray, old_low: np.ndarray, words: np.ndarray, low: np.ndarray) -> int:
    """Every live posting of the old table into the new one, in the old table's slot order, each at
    the first empty slot of its probe (into an empty table, where `_insert` would put them: they
    are distinct and it has no tombstones; `_Growth` also moves a side table's postings, none of
    them already there, into a grown one); returns how many. Runs without the GIL, so that the
    batches go on meanwhile (`_Growth`)."""
    slots = len(words)
    mask = np.uint64((1 << 48) - 1)
    moved = 0
    # a run of the old table at a time: its live postings' homes first, then each placed with the
    # home `PREFETCH_AHEAD` postings on asked of memory (the new table's slots are random reads), in
    # the same order as one by one: 2.53 -> 2.05-2.16 s at 30 M postings, a 10 M-page store's
    # segment (`bench/index_growth.py --segment-growth`; the rest is the new table's first touch)
    homes = np.empty(_REHASH_RUN, dtype=np.int64)
    run_words = np.empty(_REHASH_RUN, dtype=np.uint64)
    run_low = np.empty(_REHASH_RUN, dtype=np.uint32)
    for start in range(0, len(old_words), _REHASH_RUN):
        live = 0
        for i in range(start, min(start + _REHASH_RUN, len(old_words))):
            word = old_words[i]
            if word >> np.uint64(63) == 0:  # not empty, not a tombstone
                homes[live] = _home(word & mask, slots)
                run_words[live] = word
                run_low[live] = old_low[i]
                live += 1
        for k in range(min(PREFETCH_AHEAD, live)):
            _prefetch(words, homes[k])
        for k in range(live):
            if k + PREFETCH_AHEAD < live:
                _prefetch(words, homes[k + PREFETCH_AHEAD])
            slot = homes[k]
            while words[slot] != np.uint64(0xFFFF_FFFF_FFFF_FFFF):
                slot += 1
                if slot == slots:
                    slot = 0
            words[slot] = run_words[k]
            low[slot] = run_low[k]
        moved += live
    return moved


@numba.njit(cache=True, nogil=True)
def _clear(words: np.ndarray, low: np.ndarray) -> None:
    """Every slot free (`_Segment.empty`'s fill), without the GIL: a new table's first touch, the
    larger part of a growth at 10 M pages, runs beside the batches too."""
    for i in range(len(words)):
        words[i] = np.uint64(0xFFFF_FFFF_FFFF_FFFF)
        low[i] = np.uint32(0)


@numba.njit(cache=True)
def _remove(words: np.ndarray, low: np.ndarray, names: np.ndarray, seqs: np.ndarray) -> int:
    """Remove the postings (name, seq) that exist; returns how many did."""
    slots = len(words)
    removed = 0
    homes = _homes(names, slots, words)
    for i in range(len(names)):
        if i + PREFETCH_AHEAD < len(names):
            _prefetch(words, homes[i + PREFETCH_AHEAD])
        wanted = names[i] | ((seqs[i] >> np.uint64(32)) << np.uint64(48))
        wanted_low = np.uint32(seqs[i] & np.uint64(0xFFFF_FFFF))
        slot = homes[i]
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


def grown_load(segment: int | None = None) -> float:
    """The share of postings a growth or a reserve leaves segment `segment` at (None: the mean).

    Spread evenly over `_GROWN_LOAD` +- `_GROWN_LOAD_SPREAD` by segment: segments that fill at the
    same pace (names are hashed to them uniformly) then reach `_MAX_LOAD` at different store sizes,
    from 0.8 / 0.55 = 1.45x to 0.8 / 0.45 = 1.78x their size after a growth, so their growths, each
    of which stops one commit, do not come one batch after another. Memory is the same on average:
    a table between 0.45 and 0.8 holds 1.64 slots a posting on average, between 0.55 and 0.8 1.50,
    between 0.5 and 0.8 1.57."""
    if segment is None:
        return _GROWN_LOAD
    return _GROWN_LOAD - _GROWN_LOAD_SPREAD + 2 * _GROWN_LOAD_SPREAD * segment / (SEGMENTS - 1)


def slots_for(postings: int, segment: int | None = None) -> int:
    """The slots of a table holding this many postings at the load a growth leaves (`grown_load`
    of `segment`; None: the mean's)."""
    return max(_MIN_SLOTS, int(postings / grown_load(segment)) + 1)


SLOT = np.dtype([("word", "<u8"), ("low", "<u4")])  # a posting: a 64-bit word and a 32-bit one, packed
SLOT_BYTES = SLOT.itemsize


def available_bytes(proc: Path = Path("/proc"), cgroup: Path = Path("/sys/fs/cgroup")) -> int | None:
    """Memory this process may still take: the kernel's MemAvailable, or less if the process's
    cgroup (a container's limit) has less room left (`cgroup_room`); None if neither can be read."""
    found: list[int] = []
    try:
        for line in (proc / "meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                found.append(int(line.split()[1]) * 1024)
    except (OSError, ValueError):
        pass
    room = cgroup_room(cgroup)
    if room is not None:
        found.append(room)
    return min(found) if found else None


# (limit, usage, statistics, the statistics' page cache lines): cgroup v2, then v1
_CGROUP_FILES = (("memory.max", "memory.current", "memory.stat", ("active_file", "inactive_file")),
                 ("memory/memory.limit_in_bytes", "memory/memory.usage_in_bytes", "memory/memory.stat",
                  ("total_active_file", "total_inactive_file")))


def cgroup_room(root: Path = Path("/sys/fs/cgroup")) -> int | None:
    """Room left under the cgroup's memory limit: the limit less what the cgroup holds, its page
    cache aside (charged to the cgroup, reclaimed by the kernel before it kills anything: a worker
    restarted in its container finds the GBs of store files the last one read still charged);
    cgroup v2, else v1; None without a limit, or where none can be read."""
    for limit_file, usage_file, stat_file, cache_lines in _CGROUP_FILES:
        try:
            limit = (root / limit_file).read_text().strip()
            if limit == "max" or int(limit) >= 1 << 62:  # v1 says "no limit" as ~2^63
                return None
            usage = int((root / usage_file).read_text())
        except (OSError, ValueError):
            continue
        cache = 0
        try:
            for line in (root / stat_file).read_text().splitlines():
                name, _, value = line.partition(" ")
                if name in cache_lines:
                    cache += int(value)
        except (OSError, ValueError):
            pass
        return int(limit) - usage + cache
    return None


@numba.njit(cache=True)
def _group(names: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each name's segment (the top bits of a multiplicative hash), as the positions of `names`
    by segment, each segment's in their order (a counting sort), and where each segment's begin
    and end among them (`SEGMENTS + 1` bounds). A few µs for a few names, as a page's lookups are."""
    segment = np.empty(len(names), dtype=np.int64)
    bounds = np.zeros(SEGMENTS + 1, dtype=np.int64)
    for i in range(len(names)):
        segment[i] = _segment_of(names[i])
        bounds[segment[i] + 1] += 1
    for s in range(SEGMENTS):
        bounds[s + 1] += bounds[s]
    order = np.empty(len(names), dtype=np.int64)
    fill = bounds[:-1].copy()
    for i in range(len(names)):
        order[fill[segment[i]]] = i
        fill[segment[i]] += 1
    return order, bounds


@numba.njit(cache=True)
def _pack_run(words: np.ndarray, low: np.ndarray, bitmap: np.ndarray, kept_words: np.ndarray,
              kept_low: np.ndarray) -> int:
    """A snapshot's run of slots (`MemoryIndex.save`): the bitmap of the slots in use (first slot
    in the high bit, as numpy's packbits), and those slots' words in order; how many."""
    kept = 0
    for byte in range(len(bitmap)):
        bits = 0
        for i in range(byte * 8, min(byte * 8 + 8, len(words))):
            bits <<= 1
            if words[i] != EMPTY:
                bits |= 1
                kept_words[kept], kept_low[kept] = words[i], low[i]
                kept += 1
        if byte * 8 + 8 > len(words):  # the last byte's bits past the run are 0
            bits <<= byte * 8 + 8 - len(words)
        bitmap[byte] = bits
    return kept


@numba.njit(cache=True)
def _bits_set(bitmap: np.ndarray) -> int:
    count = 0
    for byte in bitmap:
        while byte:
            byte &= byte - np.uint8(1)
            count += 1
    return count


@numba.njit(cache=True)
def _unpack_run(words: np.ndarray, low: np.ndarray, bitmap: np.ndarray, kept_words: np.ndarray,
                kept_low: np.ndarray) -> None:
    """`_pack_run` undone: the slots in use from the kept words, the others free."""
    kept = 0
    for i in range(len(words)):
        if (bitmap[i >> 3] >> (7 - (i & 7))) & 1:
            words[i], low[i] = kept_words[kept], kept_low[kept]
            kept += 1
        else:
            words[i], low[i] = EMPTY, 0


class SnapshotDamaged(ValueError):
    """A snapshot file whose bytes are not those `MemoryIndex.save` wrote (the reason is its message)."""


def _bitmap_bytes(slots: int) -> int:
    """The bytes of a snapshot's bitmaps for a segment of `slots` slots (one per run of `_SNAPSHOT_RUN`)."""
    runs, last = divmod(slots, _SNAPSHOT_RUN)
    return runs * ((_SNAPSHOT_RUN + 7) // 8) + (last + 7) // 8


class _Segment:
    """One open-addressing table: its slots (`SLOT` records), and how many hold postings and
    tombstones. The kernels take the slots' `words` and `low` words as two views of the one array."""

    def __init__(self, cells: np.ndarray, postings: int = 0, tombstones: int = 0) -> None:
        self.cells = cells
        self.words, self.low = cells["word"], cells["low"]
        self.postings, self.tombstones = postings, tombstones

    @classmethod
    def empty(cls, slots: int) -> _Segment:
        cells = np.empty(slots, dtype=SLOT)
        cells["word"] = EMPTY
        cells["low"] = 0
        return cls(cells)

    def room(self) -> float:
        """How many postings more the table takes before it must grow (at `_MAX_LOAD`)."""
        return _MAX_LOAD * len(self.words) - self.postings - self.tombstones

    def rehashed(self, slots: int) -> _Segment:
        """A table of `slots` holding this one's live postings (tombstones dropped), moved straight
        from the old arrays to the new: the two are all it holds at once."""
        grown = _Segment.empty(slots)
        grown.postings = _rehash(self.words, self.low, grown.words, grown.low)
        return grown


class _Growth:
    """A segment growing beside the batches: a thread clears the new table and moves the old one's
    live postings into it (`_clear`, `_rehash`: compiled, without the GIL), while the batches go on.
    Meanwhile the old table is only read: the segment's new postings go to a small `side` table,
    which lookups read too, and its removals are kept (`removed`: lookups leave them out) for the
    new table. When the thread is done, the next batch's filing (`MemoryIndex.insert_ints`)
    applies the removals and files the side table's postings in the new table, and puts it in the
    old one's place: a commit waits for that, a few thousand postings, not for the growth (~0.5 s
    at 10 M pages)."""

    def __init__(self, segment: int, old: _Segment, slots: int, side_slots: int) -> None:
        self.segment, self.old, self.slots = segment, old, slots
        self.side = _Segment.empty(side_slots)
        self.removed: list[tuple[np.ndarray, np.ndarray]] = []
        self.removed_pairs: set[tuple[int, int]] = set()  # (name, seq) of `removed`, for lookups
        self.new: _Segment | None = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name="streamdedup-index-growth", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            cells = np.empty(self.slots, dtype=SLOT)
            grown = _Segment(cells)
            _clear(grown.words, grown.low)
            grown.postings = _rehash(self.old.words, self.old.low, grown.words, grown.low)
            self.new = grown
        except BaseException as err:  # noqa: BLE001 - told to the batch that ends the growth
            self.error = err

    def done(self) -> bool:
        return not self.thread.is_alive()

    def finished(self) -> _Segment:
        """The grown segment, with the removals and the side table's postings applied (waits for
        the thread if it is still running)."""
        self.thread.join()
        if self.error is not None:
            raise self.error
        grown = cast(_Segment, self.new)
        for names, seqs in self.removed:
            removed = _remove(grown.words, grown.low, names, seqs)
            grown.postings -= removed
            grown.tombstones += removed
        filed = self.side.postings  # the side table's live postings: none of them is in the new table
        if grown.postings + grown.tombstones + filed > _MAX_LOAD * len(grown.words):
            # more was filed meanwhile than the new table was sized for: one more rehash, in place
            grown = grown.rehashed(slots_for(grown.postings + filed, self.segment))
        if filed:  # moved as a growth moves a table's (each to the first free slot of its probe)
            grown.postings += _rehash(self.side.words, self.side.low, grown.words, grown.low)
        return grown


# the side table of a segment that is not growing: finds nothing (two slots: its words are then a
# strided view, as every table's, which the compiled passes take in one tuple type)
_NO_TABLE = _Segment.empty(2)


class MemoryIndex:
    def __init__(self, postings: int = 0) -> None:
        self._adopt([_Segment.empty(slots_for(postings // SEGMENTS, s)) for s in range(SEGMENTS)])

    def _allocate(self, slots: int) -> None:
        """Empty segments of `slots` slots each (tests and benches that size the table themselves)."""
        self._adopt([_Segment.empty(slots) for _ in range(SEGMENTS)])

    def _adopt(self, segments: list[_Segment]) -> None:
        self._segments = segments
        self._growing: dict[int, _Growth] = {}
        self._tables()

    @property
    def segments(self) -> list[_Segment]:
        """The segments, read-only: whatever replaces one calls `_tables` after (`_grow`), as the
        compiled passes take the tables from tuples made there."""
        return self._segments

    def _tables(self) -> None:
        """After any segment's arrays change: the tuples of every segment's words and low words
        that the compiled passes over a whole batch take (`_count_free_all`, `_insert_all`), and a
        new epoch (it changes whenever a live slot may become free or move: `insert_ints`)."""
        self._words = tuple(segment.words for segment in self.segments)
        self._low = tuple(segment.low for segment in self.segments)
        # where a batch files each segment's postings: its table, or a growing one's side table
        sides = [self._growing[s].side if s in self._growing else segment for s, segment in enumerate(self.segments)]
        self._file_words = tuple(side.words for side in sides)
        self._file_low = tuple(side.low for side in sides)
        # the side tables alone, read by lookups while a segment grows (`_NO_TABLE` elsewhere)
        self._side_words = tuple(self._growing[s].side.words if s in self._growing else _NO_TABLE.words
                                 for s in range(SEGMENTS))
        self._side_low = tuple(self._growing[s].side.low if s in self._growing else _NO_TABLE.low
                               for s in range(SEGMENTS))
        # each segment's `room` (a growing one's: its side table's), kept up to date by
        # `insert_ints` (a removal leaves it: a posting becomes a tombstone), so that a batch asks
        # it of no segment one by one
        self._room = np.array([side.room() for side in sides], dtype=np.float64)
        self.epoch = next(_EPOCHS)

    @property
    def postings(self) -> int:
        """Postings in the table (while a segment grows: its old table's, less none of the
        removals since, and its side table's)."""
        return (sum(segment.postings for segment in self.segments)
                + sum(growth.side.postings for growth in self._growing.values()))

    @property
    def tombstones(self) -> int:
        return sum(segment.tombstones for segment in self.segments)

    @property
    def slots(self) -> int:
        return sum(len(segment.words) for segment in self.segments)

    @property
    def size_bytes(self) -> int:
        return (sum(int(segment.cells.nbytes) for segment in self.segments)
                + sum(growth.slots * SLOT_BYTES + int(growth.side.cells.nbytes) for growth in self._growing.values()))

    def table(self) -> tuple[np.ndarray, np.ndarray]:
        """Every segment's words and low words back to back (a copy: to compare tables; growths
        beside the batches finished first)."""
        self.finish_growths()
        return (np.concatenate([segment.words for segment in self.segments]),
                np.concatenate([segment.low for segment in self.segments]))

    @staticmethod
    def _by_segment(names: np.ndarray) -> list[tuple[int, np.ndarray]]:
        """Each segment's positions among `names`, in their order (`_group`)."""
        order, bounds = _group(names)
        cuts = bounds.tolist()
        return [(s, order[cuts[s]: cuts[s + 1]]) for s in range(SEGMENTS) if cuts[s + 1] > cuts[s]]

    def _found(self, names: Sequence[bytes]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Postings counts of the names, where each name's seqs start in the third, and those seqs."""
        return self.found_ints(name_ints(names))

    def counts_ints(self, names: np.ndarray) -> np.ndarray:
        """How many postings each name (a 48-bit integer, `name_ints`) has, in one compiled pass."""
        return self.counts_free_ints(names)[0]

    def counts_free_ints(self, names: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
        """`counts_ints`, each name's first free slot in its segment (`_count_free_all`), and the
        table's `epoch`, which `insert_ints` checks before it uses the slots. One compiled pass for
        names of every segment, not a call and two gathers a segment (while a segment grows, its
        names are counted as `found_ints` finds them; their free slots are not used then)."""
        counts, free = _count_free_all(self._words, names)
        if self._growing:
            counts = self._found_growing(names, counts)[0]
        return counts, free, self.epoch

    def found_ints(self, keys: np.ndarray,
                   counts: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """`_found` of names as 48-bit integers (`counts`: their `counts_ints`, if known)."""
        if self._growing:
            return self._found_growing(keys)
        if counts is None:
            counts = self.counts_ints(keys)
        starts = np.zeros(len(keys), dtype=np.int64)
        np.cumsum(counts[:-1], out=starts[1:])
        out = np.empty(int(counts.sum()), dtype=np.uint64)
        _collect_all(self._words, self._low, keys, starts, out)
        return counts, starts, out

    def _found_growing(self, keys: np.ndarray,
                       table: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """`found_ints` while segments grow beside the batches (`_Growth`): each name's postings in
        its table (`table`: their counts there, if known), then in its side table, less those
        removed since its segment began to grow."""
        if table is None:
            table = _count_free_all(self._words, keys)[0]
        counts = table + _count_free_all(self._side_words, keys)[0]
        starts = np.zeros(len(keys), dtype=np.int64)
        np.cumsum(counts[:-1], out=starts[1:])
        out = np.empty(int(counts.sum()), dtype=np.uint64)
        _collect_all(self._words, self._low, keys, starts, out)
        _collect_all(self._side_words, self._side_low, keys, starts + table, out)
        removing = {s: growth.removed_pairs for s, growth in self._growing.items() if growth.removed_pairs}
        if not removing or not len(out):
            return counts, starts, out
        owners = np.repeat(np.arange(len(keys)), counts)
        segments = ((keys * _SEGMENT_MIX) >> np.uint64(64 - SEGMENT_BITS)).astype(np.int64)  # `_segment_of`
        keep = np.ones(len(out), dtype=np.bool_)
        for at in np.flatnonzero(np.isin(segments[owners], list(removing))).tolist():
            name = int(keys[owners[at]])
            keep[at] = (name, int(out[at])) not in removing[int(segments[owners[at]])]
        if keep.all():
            return counts, starts, out
        counts = np.bincount(owners[keep], minlength=len(keys)).astype(np.int64)
        starts = np.zeros(len(keys), dtype=np.int64)
        np.cumsum(counts[:-1], out=starts[1:])
        return counts, starts, out[keep]

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
        postings then and none added before it, its first free slot (else -1); used in a segment
        if no slot can have been freed since (the epoch is the same, and the segment does not grow
        now). The table is the same either way, slot for slot."""
        if not len(names):
            return
        if int(seqs.max()) >= MAX_SEQ:
            raise ValueError(f"the in-memory index holds seqs below 2^47, got {int(seqs.max())}")
        self._finish_growths(wait=False)
        # a growth of one segment moves no other segment's slots
        free_valid = np.full(SEGMENTS, free is not None and epoch == self.epoch, dtype=np.bool_)
        sizes = _segment_sizes(names)
        for s in np.flatnonzero(sizes > self._room).tolist():
            if s in self._growing:  # its side table is full: the growth is waited for
                self._finish_growth(s)
            if sizes[s] > self._room[s]:
                self._grow(s, int(sizes[s]))
            free_valid[s] = False
        free_valid[list(self._growing)] = False  # a growing segment's postings go to its side table
        placed, reused = _insert_all(self._file_words, self._file_low, names, seqs,
                                     free if free is not None else np.full(len(names), -1, dtype=np.int64), free_valid)
        self._room -= placed - reused
        for s, (count, tombstones) in enumerate(zip(placed.tolist(), reused.tolist(), strict=True)):
            if count:
                segment = self._growing[s].side if s in self._growing else self.segments[s]
                segment.postings += count
                segment.tombstones -= tombstones

    def remove(self, names: Sequence[bytes], seqs: Sequence[int]) -> None:
        if names:
            self.remove_ints(name_ints(names), np.asarray(seqs, dtype=np.uint64))

    def remove_ints(self, names: np.ndarray, seqs: np.ndarray) -> None:
        """`remove` of names as 48-bit integers and seqs as uint64."""
        if len(names):
            for s, at in self._by_segment(names):
                growth = self._growing.get(s)
                if growth is not None:  # the old table is only read while it grows: kept for the new
                    growth.removed.append((names[at], seqs[at]))
                    growth.removed_pairs.update(zip(names[at].tolist(), seqs[at].tolist(), strict=True))
                segment = self.segments[s] if growth is None else growth.side
                removed = _remove(segment.words, segment.low, names[at], seqs[at])
                segment.postings -= removed
                segment.tombstones += removed
            self.epoch = next(_EPOCHS)

    def growth_bytes(self, names: np.ndarray) -> int:
        """The bytes `insert_ints(names, ...)` would allocate for the segments it grows (each new
        table, the old one freed once moved), 0 if it grows none: asked before a batch is written,
        so that a store outgrowing its memory is told so in one line, not killed by the kernel
        half-way through a growth. A segment with room for every name is not grouped for."""
        if not len(names) or len(names) <= self._room.min():
            return 0
        sizes = _segment_sizes(names)
        return sum(slots_for(self.segments[s].postings + int(sizes[s]), s) * SLOT_BYTES
                   for s in np.flatnonzero(sizes > self._room).tolist())

    def reserved_bytes(self, postings: int) -> int:
        """The bytes of a table `reserve(postings)` sizes (its segments', at least as they are)."""
        return sum(max(slots_for(postings // SEGMENTS, s), len(segment.words)) * SLOT_BYTES
                   for s, segment in enumerate(self.segments))

    def reserve(self, postings: int) -> None:
        """Room for this many postings without growing: each segment sized once for its share (a
        rebuild that knows the store's page count), at its own load (`grown_load`)."""
        self.finish_growths()
        for s, segment in enumerate(self.segments):
            slots = slots_for(postings // SEGMENTS, s)
            if slots > len(segment.words):
                self.segments[s] = segment.rehashed(slots)
                self._tables()

    def _grow(self, segment: int, adding: int) -> None:
        """Rehash one segment's live postings into a table at its `grown_load` (tombstones
        dropped): beside the batches for a large segment (`_Growth`) while fewer than
        `MAX_BESIDE_GROWTHS` others do, else in place."""
        old = self.segments[segment]
        slots = slots_for(old.postings + adding, segment)
        if len(old.words) >= BESIDE_GROWTH_SLOTS and len(self._growing) < MAX_BESIDE_GROWTHS:
            # room for the postings of ~64 such filings, or a 16th of the old table's: a growth at
            # 10 M pages (~0.5 s) spans a few batches
            side = slots_for(max(64 * adding, old.postings // 16), segment)
            self._growing[segment] = _Growth(segment, old, slots, side)
        else:
            self.segments[segment] = old.rehashed(slots)
        self._tables()

    def _finish_growth(self, segment: int) -> None:
        """Put a growing segment's new table in place (waiting for its thread if need be)."""
        self.segments[segment] = self._growing.pop(segment).finished()
        self._tables()

    def _finish_growths(self, wait: bool) -> None:
        """Put in place the new tables of the growths beside the batches that are done (all: `wait`)."""
        for segment in [s for s, growth in self._growing.items() if wait or growth.done()]:
            self._finish_growth(segment)

    def finish_growths(self) -> None:
        """Wait for every growth beside the batches and put its table in place (before a snapshot
        is written, or the table compared)."""
        self._finish_growths(wait=True)

    def save(self, path: Path, version: int) -> None:
        """The table to a file, synced, for `load`: the header, every segment's header, then each
        segment's slots in runs of `_SNAPSHOT_RUN`, each run a bitmap of the slots in use (postings
        and tombstones) and those slots only, then the xxh3-64 of all of it (`_CHECKSUM`). The free
        slots (a third to a half of a table) are not written: they are what `load` fills the rest with."""
        self.finish_growths()
        checksum = xxhash.xxh3_64()

        def write(data: bytes | memoryview) -> None:
            checksum.update(data)
            out.write(data)

        with open(path, "wb") as out:
            write(_HEADER.pack(_MAGIC, version, SEGMENTS))
            for segment in self.segments:
                write(_SEGMENT_HEADER.pack(len(segment.words), segment.postings, segment.tombstones))
            kept = np.empty(_SNAPSHOT_RUN, dtype=SLOT)
            bitmap = np.empty((_SNAPSHOT_RUN + 7) // 8, dtype=np.uint8)
            for segment in self.segments:
                for start in range(0, len(segment.cells), _SNAPSHOT_RUN):
                    stop = min(start + _SNAPSHOT_RUN, len(segment.cells))
                    bits = bitmap[: (stop - start + 7) // 8]
                    count = _pack_run(segment.words[start: stop], segment.low[start: stop], bits, kept["word"],
                                      kept["low"])
                    write(bits.data)
                    write(kept[:count].data)
            out.write(_CHECKSUM.pack(checksum.intdigest()))
            out.flush()
            os.fsync(out.fileno())

    @staticmethod
    def _read_headers(data: BinaryIO, version: int, checksum: Any = None) -> list[tuple[int, int, int]] | None:
        """The segments' (slots, postings, tombstones) from a snapshot's start, if it is one `save`
        wrote in this format, at this `version` of the store (None if not: an earlier format, a
        stale snapshot). Raises SnapshotDamaged if its headers do not fit together or the file is
        not as long as they say (a damaged header is not believed: no table is sized from it).
        `checksum`: an xxh3-64 fed the bytes read."""
        head = data.read(_HEADER.size)
        if len(head) != _HEADER.size:
            raise SnapshotDamaged(f"{len(head)} bytes, shorter than its header")
        magic, saved, count = _HEADER.unpack(head)
        if magic[:6] != _MAGIC[:6]:
            raise SnapshotDamaged("not a snapshot's header")
        if magic != _MAGIC or saved != version or count != SEGMENTS:
            return None
        heads = data.read(count * _SEGMENT_HEADER.size)
        if len(heads) != count * _SEGMENT_HEADER.size:
            raise SnapshotDamaged("cut short in its segments' headers")
        if checksum is not None:
            checksum.update(head)
            checksum.update(heads)
        segments = list(_SEGMENT_HEADER.iter_unpack(heads))
        if any(postings + tombstones > slots for slots, postings, tombstones in segments):
            raise SnapshotDamaged("a segment's header counts more postings than slots")
        length = (_HEADER.size + count * _SEGMENT_HEADER.size + _CHECKSUM.size
                  + sum(_bitmap_bytes(slots) + (postings + tombstones) * SLOT_BYTES
                        for slots, postings, tombstones in segments))
        size = os.fstat(data.fileno()).st_size
        if size != length:
            raise SnapshotDamaged(f"{size:,} bytes where its headers say {length:,}")
        return segments

    @classmethod
    def snapshot_table_bytes(cls, path: Path, version: int) -> int | None:
        """The bytes of the table a snapshot holds once loaded (its free slots included, which
        the file leaves out), from its headers; None if `load` would not read it."""
        try:
            with open(path, "rb") as data:
                heads = cls._read_headers(data, version)
        except SnapshotDamaged:
            return None
        return None if heads is None else sum(slots for slots, _, _ in heads) * SLOT_BYTES

    @classmethod
    def load(cls, path: Path, version: int) -> MemoryIndex | None:
        """The table `save` wrote, if it was saved in this format at this `version` of the store,
        with these segments (None if not); raises SnapshotDamaged if its bytes are not those `save`
        wrote (its checksum, its counts or its length differ). Each run of slots is filled in
        place, so loading holds the table and one run's bytes, not the table twice."""
        segments = []
        checksum = xxhash.xxh3_64()
        with open(path, "rb") as data:
            heads = cls._read_headers(data, version, checksum)
            if heads is None:
                return None
            for slots, postings, tombstones in heads:
                segment = _Segment(np.empty(slots, dtype=SLOT), postings, tombstones)
                used_slots = 0
                for start in range(0, slots, _SNAPSHOT_RUN):
                    stop = min(start + _SNAPSHOT_RUN, slots)
                    bitmap = np.fromfile(data, dtype=np.uint8, count=(stop - start + 7) // 8)
                    count = _bits_set(bitmap)
                    kept = np.fromfile(data, dtype=SLOT, count=count)
                    if len(bitmap) != (stop - start + 7) // 8 or len(kept) != count:
                        raise SnapshotDamaged("its bitmaps count more slots than it holds")
                    checksum.update(bitmap.data)
                    checksum.update(kept.data)
                    _unpack_run(segment.words[start: stop], segment.low[start: stop], bitmap, kept["word"], kept["low"])
                    used_slots += count
                if used_slots != postings + tombstones:
                    raise SnapshotDamaged("a segment's bitmaps and header count different slots")
                segments.append(segment)
            stored = data.read(_CHECKSUM.size)  # the file's length is what the headers say: nothing after
            if len(stored) != _CHECKSUM.size or _CHECKSUM.unpack(stored)[0] != checksum.intdigest():
                raise SnapshotDamaged("its checksum does not match its bytes")
        index = cls.__new__(cls)
        index._adopt(segments)
        return index

    def counts(self) -> dict[str, int]:
        """Index keys (distinct names of methods' keys), their postings, and page-id names (store statistics)."""
        self.finish_growths()
        live = np.concatenate([segment.words[segment.words >> np.uint64(63) == 0] for segment in self.segments])
        live &= np.uint64((1 << NAME_BITS) - 1)
        is_id = live >> np.uint64(NAME_BITS - 8) == layout.ID_TAG
        return {"index_keys": len(np.unique(live[~is_id])), "postings": int(np.count_nonzero(~is_id)),
                "ids": len(np.unique(live[is_id]))}
