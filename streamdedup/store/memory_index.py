"""The index in memory: 6-byte index names (`layout.index_key`, `layout.page_id_key`) -> page seqs.

A multimap in `SEGMENTS` open-addressing tables (`index_segments`), probed by compiled loops a
whole batch of names at a time (`index_kernels`). Each slot is one posting, 12 bytes side by side
(`SLOT`): a 64-bit word holding the 48-bit name and the seq's high 16 bits, and a 32-bit word
holding the seq's low 32 bits (seqs below 2^47). A slot's two words share a cache line and a
memory page, so filing a posting touches one place of memory, not two: on a table of many GB
that is most of what a filing costs (docs/benchmarks.md, "One place a posting"). A large segment
grows beside the batches, in a thread (`_Growth`), so a commit does not wait for it.

RocksDB keeps the page records (and the changelog, its WAL); this table is loaded from the
snapshot a clean close wrote (`save`, `load`; the format: `index_snapshot`) or else rebuilt from
the records when the store opens (`SignatureStore._rebuild_index`), so it holds exactly what the
committed records say: every key of every stored page, except those a record names as not filed
(full keys, see `StoreBatch.add`). It changes only after a WriteBatch is written (commit, expiry,
deletion), so a crash or a discarded batch leaves nothing to undo.
"""
from __future__ import annotations

import itertools
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from streamdedup.store import layout

# the names marked F401 are imported from here too (tests, benches, the store)
from streamdedup.store.index_kernels import (
    _SEGMENT_MIX,
    MAX_SEQ,
    NAME_BITS,
    SEGMENT_BITS,
    SEGMENTS,
    _collect_all,
    _count_free_all,
    _group,
    _insert_all,
    _remove,
    _segment_sizes,
    ints_names,  # noqa: F401
    name_ints,
    name_places,  # noqa: F401
    name_rows_ints,  # noqa: F401
)
from streamdedup.store.index_segments import (
    _NO_TABLE,
    SLOT,  # noqa: F401
    SLOT_BYTES,
    _Growth,
    _Segment,
    grown_load,  # noqa: F401
    slots_for,
)
from streamdedup.store.index_snapshot import (
    SnapshotDamaged,  # noqa: F401
    load_segments,
    save_segments,
    snapshot_table_bytes,
)
from streamdedup.store.memory_limits import available_bytes, cgroup_room  # noqa: F401

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


class MemoryIndex:
    """The store's index in memory: 48-bit index names to page seqs, in segments of open-addressing tables."""

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
        """The segments, read-only.

        Whatever replaces one calls `_tables` after (`_grow`), as the compiled passes take the
        tables from tuples made there."""
        return self._segments

    def _tables(self) -> None:
        """Refresh the segment tuples and the epoch after any segment's arrays change.

        After any segment's arrays change: the tuples of every segment's words and low words
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
        """Postings in the table.

        While a segment grows: its old table's, less none of the removals since, and its side table's."""
        return (sum(segment.postings for segment in self.segments)
                + sum(growth.side.postings for growth in self._growing.values()))

    @property
    def tombstones(self) -> int:
        """Slots of removed postings not yet reused, over all segments."""
        return sum(segment.tombstones for segment in self.segments)

    @property
    def slots(self) -> int:
        """Slots of all segments, used or not."""
        return sum(len(segment.words) for segment in self.segments)

    @property
    def size_bytes(self) -> int:
        """Memory the tables hold, the segments growing beside them included."""
        return (sum(int(segment.cells.nbytes) for segment in self.segments)
                + sum(growth.slots * SLOT_BYTES + int(growth.side.cells.nbytes) for growth in self._growing.values()))

    def table(self) -> tuple[np.ndarray, np.ndarray]:
        """Every segment's words and low words back to back.

        A copy, to compare tables; the growths beside the batches are finished first."""
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
        """The `counts_ints`, each name's first free slot in its segment, and the table's `epoch`.

        `counts_ints`, each name's first free slot in its segment (`_count_free_all`), and the
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
        """`found_ints` while segments grow beside the batches (`_Growth`).

        Each name's postings in its table (`table`: their counts there, if known), then in its side
        table, less those removed since its segment began to grow."""
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
        """File each seq under its index name (as bytes)."""
        if names:
            self.insert_ints(name_ints(names), np.asarray(seqs, dtype=np.uint64))

    def insert_ints(self, names: np.ndarray, seqs: np.ndarray, free: np.ndarray | None = None,
                    epoch: int = -1) -> None:
        """`insert` of names as 48-bit integers (`name_ints`) and seqs as uint64, in that order.

        `free`, with the `epoch` it was found at (`counts_free_ints`): for each name with no
        postings then and none added before it, its first free slot (else -1); used in a segment if
        no slot can have been freed since (the epoch is the same, and the segment does not grow
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
        """Remove each posting (an index name as bytes, a seq)."""
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
        """The bytes `insert_ints(names, ...)` would allocate for the segments it grows.

        Each new table counts, the old one freed once moved; 0 if it grows none. Asked before a batch is
        written, so that a store outgrowing its memory is told so in one line, not killed by the kernel half-
        way through a growth. A segment with room for every name is not grouped for."""
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
        """Room for this many postings without growing.

        Each segment sized once for its share (a rebuild that knows the store's page count), at its
        own load (`grown_load`)."""
        self.finish_growths()
        for s, segment in enumerate(self.segments):
            slots = slots_for(postings // SEGMENTS, s)
            if slots > len(segment.words):
                self.segments[s] = segment.rehashed(slots)
                self._tables()

    def _grow(self, segment: int, adding: int) -> None:
        """Rehash one segment's live postings into a table at its `grown_load` (tombstones dropped).

        Beside the batches for a large segment (`_Growth`) while fewer than `MAX_BESIDE_GROWTHS`
        others do, else in place."""
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
        """Wait for every growth beside the batches and put its table in place.

        Done before a snapshot is written, or the table compared."""
        self._finish_growths(wait=True)

    def save(self, path: Path, version: int) -> None:
        """The table to a file, synced, for `load` (`index_snapshot`: its free slots are not written)."""
        self.finish_growths()
        save_segments(path, version, self.segments)

    @staticmethod
    def snapshot_table_bytes(path: Path, version: int) -> int | None:
        """The bytes of the table a snapshot holds once loaded (`index_snapshot.snapshot_table_bytes`)."""
        return snapshot_table_bytes(path, version)

    @classmethod
    def load(cls, path: Path, version: int) -> MemoryIndex | None:
        """The table `save` wrote, if it was saved in this format at this `version` of the store (None if not).

        Raises SnapshotDamaged if its bytes are not those `save` wrote."""
        segments = load_segments(path, version)
        if segments is None:
            return None
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
