"""The compiled passes over the in-memory index's tables, and index names as 48-bit integers.

A table is an open-addressing multimap in a flat array (linear probing), cut into `SEGMENTS`
segments by a hash of the name (`_group`); each slot is one posting, a 64-bit word holding the
48-bit name and the seq's high 16 bits and a 32-bit word holding the seq's low 32 bits (`SLOT`,
`index_segments`). A free slot's word is all ones (`EMPTY`), a removed posting's (a tombstone's)
all ones but the last bit (`TOMBSTONE`): live postings never have the top bit set. These loops
probe a whole batch of names at a time, a few names ahead asked of memory (`_prefetch`); the
table that holds them is `memory_index.MemoryIndex`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, cast

import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from streamdedup.jit import numba
from streamdedup.store import layout

EMPTY = np.uint64(0xFFFF_FFFF_FFFF_FFFF)
TOMBSTONE = np.uint64(0xFFFF_FFFF_FFFF_FFFE)
NAME_BITS = 48
MAX_SEQ = 1 << 47
SEGMENT_BITS = 6
SEGMENTS = 1 << SEGMENT_BITS
# another multiplier than `_home`'s, so that a name's slot in its segment stays uniform
_SEGMENT_MIX = np.uint64(0xD6E8_FEB8_6659_FD93)

# Names ahead of the one probed whose home slots are asked of memory already (`_prefetch`): a
# probe of a table larger than the caches waits ~100 ns on each slot's read; asked for ahead,
# a dozen reads are in flight at once (a 6.4 GB table alone: probe 5.3 -> 2.65 µs a page; the
# whole store path gains less: docs/benchmarks.md, "The table's kernels prefetch")
PREFETCH_AHEAD = 12
_REHASH_RUN = 4096  # old slots a growth reads before it places their postings (`_rehash`)


def _prefetch_typed(typingctx: Any, array: Any, index: Any) -> Any:
    """A hint to the CPU to read `array[index]` into its caches (LLVM's prefetch: read, keep in all levels).

    No effect on what the code computes. Compiled loops over random slots of the table issue it a
    few names ahead, so that the reads of several probes overlap."""
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
    """Add the postings not there yet to one segment's table.

    Add the postings (name, seq) that are not there yet (one is added once) to one segment's
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
    """How many postings each name has, and where each name's probe meets its first free slot.

    The free slot is a tombstone, or the empty slot that ends the probe: where `_insert_one` would put a
    posting of a name that has none. Names of every segment in one call (`words`: each segment's words, a
    tuple), a segment's names at a time: each segment's table is taken from the tuple once (taking it is a
    reference counted each time, too dear for once a name)."""
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


def _segment_sizes(names: np.ndarray) -> np.ndarray:
    """How many of the names fall in each segment (`_segment_of` in numpy).

    Not compiled: a batch's few thousand names take ~20 µs here, where loading a compiled version
    from numba's cache took ~3.5 ms of every process's start-up."""
    segments = ((names * _SEGMENT_MIX) >> np.uint64(64 - SEGMENT_BITS)).astype(np.int64)
    return np.bincount(segments, minlength=SEGMENTS).astype(np.int64, copy=False)


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
    """The `_insert` of postings of every segment in one call.

    `_insert` of postings of every segment in one call (`words`, `low`: each segment's, tuples),
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
    """Move every live posting of the old table into the new one; returns how many.

    Every live posting of the old table into the new one, in the old table's slot order, each at
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
    """Every slot free (`_Segment.empty`'s fill), without the GIL.

    A new table's first touch, the larger part of a growth at 10 M pages, runs beside the batches
    too."""
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
    if len(names) <= _FEW_NAMES:  # (a page's full keys: a few, asked a page) one int each, no array set-up
        return np.array([int.from_bytes(name, "big") for name in names], dtype=np.uint64)
    return name_rows_ints(np.frombuffer(data, dtype=np.uint8).reshape(-1, layout.INDEX_KEY_SIZE))


_FEW_NAMES = 8  # `name_ints` of at most this many names: ints made one by one (a fixed cost of ~3 µs saved)


@numba.njit(cache=True)
def name_places(every: np.ndarray, names: np.ndarray) -> np.ndarray:
    """Where each of `names` stands among the sorted distinct values of `every` (48-bit names), sorted.

    How many distinct names of `every` are smaller. A page's few full keys among its ~50 names: one
    sort and a scan, no `np.unique` set-up a page."""
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



@numba.njit(cache=True)
def _group(names: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each name's segment, as the positions of `names` by segment and each segment's bounds.

    Each name's segment (the top bits of a multiplicative hash), as the positions of `names`
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

