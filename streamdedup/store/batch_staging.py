"""A whole batch's index names sorted at once: the shared ones a page files now, the rest at commit.

`StoreBatch.stage` hands a batch of pages' index names as 48-bit integers (page i's end at
`ends[i]`) to `stage_names`, which reads the table once for all of them. A page's *shared* names,
those a stored page is filed under or that the batch names more than once, are the only ones that
can give or take a candidate: they come back as bytes, with the stored values and answers of
those a stored page is filed under, for the batch's overlay. Every other name (every name of a
unique page) has no page before it and none of the batch after it: it is filed as an integer when
the batch commits (`StagedNames.postings`), without a `bytes` or a dict entry each. A page whose
every candidate is a chance collision of SimHash's short keys (`chance.by_chance_only`) has no
shared name either: its names give no candidate it would judge and take none from the batch.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Container, Sequence

import numpy as np

from streamdedup.store import candidates as caps
from streamdedup.store import layout
from streamdedup.store.batched_store import BatchedStore
from streamdedup.store.candidates import stop_answer
from streamdedup.store.chance import ToldPairs, by_chance_only
from streamdedup.store.index_kernels import ints_names


@dataclasses.dataclass
class StagedNames:
    """A staged batch's names as integers, and what staging told of its pages, kept to its commit."""

    names: np.ndarray  # every page's names, back to back
    ends: list[int]  # where each page's names end
    # the names only one page of the batch names, with no stored page (filed at commit), the page
    # naming each, their first free slots in the table and its epoch
    unshared: tuple[np.ndarray, np.ndarray, np.ndarray, int]
    page_seqs: np.ndarray  # the seq each page was added as (-1: not added)
    chance_only: dict[int, int]  # page -> its candidates, all chance collisions
    chance_told: ToldPairs  # the (page, stored page) pairs the chance check asked, and told

    def page_names(self, page: int) -> np.ndarray:
        """The names of page `page`, as integers."""
        return self.names[self.ends[page - 1] if page else 0: self.ends[page]]

    def postings(self, names: np.ndarray, seqs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
        """The postings the batch files at commit: `names` and `seqs` filed one by one, then the unshared names.

        Each with the first free slot its probe met at staging and that table's epoch
        (`MemoryIndex.insert_ints`; -1: none, as for names filed one by one). An unshared name of
        a page not added is left out."""
        unshared_names, owners, unshared_free, epoch = self.unshared
        unshared_seqs = self.page_seqs[owners]
        added = unshared_seqs >= 0
        free = np.concatenate([np.full(len(names), -1, dtype=np.int64), unshared_free[added]])
        return (np.concatenate([names, unshared_names[added]]),
                np.concatenate([seqs, unshared_seqs[added].astype(np.uint64)]), free, epoch)


@dataclasses.dataclass
class Staged:
    """What `stage_names` tells of a batch: its staged names, each page's shared names, and what it read."""

    names: StagedNames
    shared: list[list[bytes]]  # each page's shared names as bytes, in its order
    values: dict[bytes, bytes | None]  # the shared names the batch did not know: value (None: no page)
    answers: dict[bytes, tuple[list[int], int]]  # the answer of each value read (`answer_of`)
    skipped: set[int]  # stored pages found only by chance collisions: their records need not be read


def stage_names(store: BatchedStore, names: np.ndarray, ends: Sequence[int], words: np.ndarray | None,
                known: Container[bytes]) -> Staged:
    """Sort a batch's names (page i's end at `ends[i]`) into shared and unshared ones, reading the table once.

    `words`: each page's word for the chance check (`SignatureStore.words_of`); `known`: the names
    whose values the batch has read already (left out of `Staged.values`)."""
    names = np.ascontiguousarray(names, dtype=np.uint64)
    counts, free, epoch = store.memory.counts_free_ints(names)
    order = np.argsort(names)  # equal names side by side (in any order among themselves)
    repeated = np.zeros(len(names), dtype=np.bool_)
    if len(names) > 1:
        same = names[order[1:]] == names[order[:-1]]
        repeated[order[1:]] |= same
        repeated[order[:-1]] |= same
    sizes = np.diff(np.asarray([0, *ends], dtype=np.int64)).astype(np.int64)
    owner = np.repeat(np.arange(len(ends), dtype=np.int64), sizes)
    has_postings = counts > 0
    stored = np.flatnonzero(has_postings)
    skipped: set[int] = set()
    chance_only: dict[int, int] = {}
    chance_told = ToldPairs(set(), set())
    shared = repeated | has_postings
    if len(stored):
        found, starts, seqs = store.memory.found_ints(names[stored], counts[stored])
        if words is not None and store.word_tag is not None:
            skipped, chance_only, chance_told = by_chance_only(
                store.chance_collisions, store.word_tag, names[stored], owner[stored], found, seqs,
                words, owner[repeated], len(ends))
            if chance_only:
                told = np.zeros(len(ends), dtype=np.bool_)
                told[list(chance_only)] = True
                shared &= ~told[owner]
    unshared = np.flatnonzero(~shared)
    # an unshared name of a page told to have only chance collisions has postings: its first free
    # slot is still where `_insert` would put it (`MemoryIndex.insert_ints`)
    staged = StagedNames(names, list(ends), (names[unshared], owner[unshared], free[unshared], epoch),
                         np.full(len(ends), -1, dtype=np.int64), chance_only, chance_told)
    at = np.flatnonzero(shared)
    values: dict[bytes, bytes | None] = {}
    answers: dict[bytes, tuple[list[int], int]] = {}
    if not len(at):
        return Staged(staged, [[] for _ in ends], values, answers, skipped)
    as_bytes = ints_names(names[at])
    if len(stored):
        kept = np.flatnonzero(shared[stored])  # the stored names of pages that judge candidates
        # each name once (a stop key is named by most pages of a batch), at its first place
        kept = kept[np.sort(np.unique(names[stored[kept]], return_index=True)[1])]
        kept_counts, kept_starts = found[kept], starts[kept]
        # each kept name's seqs, side by side: seqs[start: start + count] of each
        gather = (np.repeat(kept_starts - (np.cumsum(kept_counts) - kept_counts), kept_counts)
                  + np.arange(int(kept_counts.sum()), dtype=np.int64))
        ordered_seqs, kept_values = layout.grouped_seqs_values(seqs[gather], kept_counts)
        for j, count, ordered, value in zip(np.searchsorted(at, stored[kept]).tolist(), kept_counts.tolist(),
                                            ordered_seqs, kept_values, strict=True):
            name = as_bytes[j]
            if name not in known and name not in values:
                values[name] = value
                # its answer as `answer_of` would decode it from the value (read by `candidates`)
                answers[value] = (stop_answer(ordered) if count >= caps.MAX_POSTINGS_PER_KEY else ordered, count)
    for name in as_bytes:
        if name not in known and name not in values:
            values[name] = None
    cuts = np.searchsorted(at, np.asarray(ends, dtype=np.int64)).tolist()
    shared_names = [as_bytes[start: end] for start, end in zip([0, *cuts[:-1]], cuts, strict=True)]
    return Staged(staged, shared_names, values, answers, skipped)
