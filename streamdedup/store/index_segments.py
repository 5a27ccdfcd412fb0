"""The segments of the in-memory index: one open-addressing table each, and a segment's growth.

Each segment grows on its own: a growth holds one segment's old and new arrays at once, not the
whole table's (one table of a 10 M-page store peaked at 16.7 GB while it doubled, for 10.7 GB
resident). A large segment grows beside the batches, in a thread (`_Growth`). Segments filled at
the same pace would also all meet their limit within a few dozen batches; so each segment grows
to its own load (`grown_load`: 0.45 to 0.55 by segment, 0.5 on average), and their growths come
at store sizes up to 22 % apart, not all at once (docs/benchmarks.md, "The store").
"""

from __future__ import annotations

import threading
from typing import cast

import numpy as np

from streamdedup.store.index_kernels import EMPTY, SEGMENTS, _clear, _rehash, _remove

_MIN_SLOTS = 1 << 8  # a segment's
_MAX_LOAD = 0.8  # grow past this share of used slots (postings + tombstones)
_GROWN_LOAD = 0.5  # ... to this share of postings, on average over the segments (`grown_load`)
_GROWN_LOAD_SPREAD = 0.05  # each segment's: within this of it


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
    """The slots of a table holding this many postings at the load a growth leaves.

    The load is `grown_load` of `segment` (None: the mean's)."""
    return max(_MIN_SLOTS, int(postings / grown_load(segment)) + 1)


SLOT = np.dtype([("word", "<u8"), ("low", "<u4")])  # a posting: a 64-bit word and a 32-bit one, packed
SLOT_BYTES = SLOT.itemsize


class _Segment:
    """One open-addressing table: its slots (`SLOT` records), and how many hold postings and tombstones.

    The kernels take the slots' `words` and `low` words as two views of the one array."""

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
        """A table of `slots` holding this one's live postings (tombstones dropped).

        The postings move straight from the old arrays to the new: the two are all it holds at once."""
        grown = _Segment.empty(slots)
        grown.postings = _rehash(self.words, self.low, grown.words, grown.low)
        return grown


class _Growth:
    """A segment growing beside the batches.

    A thread clears the new table and moves the old one's live postings into it (`_clear`,
    `_rehash`: compiled, without the GIL), while the batches go on. Meanwhile the old table is only
    read: the segment's new postings go to a small `side` table, which lookups read too, and its
    removals are kept (`removed`: lookups leave them out) for the new table. When the thread is
    done, the next batch's filing (`MemoryIndex.insert_ints`) applies the removals and files the
    side table's postings in the new table, and puts it in the old one's place: a commit waits for
    that, a few thousand postings, not for the growth (~0.5 s at 10 M pages)."""

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
        """The grown segment, with the removals and the side table's postings applied.

        Waits for the thread if it is still running."""
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
