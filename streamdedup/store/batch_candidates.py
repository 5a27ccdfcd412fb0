"""A batch's candidate lookups: the pages a page's names find, ranked and capped, chance collisions dropped.

`BatchCandidates` is the part of `StoreBatch` that reads: `candidates` answers the seqs filed
under a page's index names as the batch sees them (its staged pages included), each name's
answer decoded once a batch; a full key answers only some of its pages (`candidates.stop_answer`)
and past the limit the pages sharing the most names win (`candidates.rank_candidates`). Of that
answer, `found_by` tells what each method whose keys find every match found, and `without_chance`
drops the stored pages only a chance collision of SimHash's short keys found (`chance`), with the
checks of the staged batch (`batch_staging`) where they told them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from itertools import chain
from typing import TYPE_CHECKING, Any

import numpy as np

from streamdedup.store import candidates as caps
from streamdedup.store.batch_staging import StagedNames
from streamdedup.store.batched_store import BatchedStore
from streamdedup.store.candidates import MAX_CANDIDATES, rank_candidates
from streamdedup.store.chance import CHANCE_POSTINGS, ToldPairs, page_pairs
from streamdedup.store.layout import DocRecord

UNREAD: Any = object()  # `candidates`: a name not read into the batch yet (None: read, no page under it)


def unvouched(shared: Counter[int], chance: Sequence[Sequence[int]], kept: Sequence[int]) -> set[int]:
    """Of `kept` (some seqs of `shared`: seq -> how many names found it), those only one name found, one of `chance`.

    Those no name but one of `chance` (its seqs each) found: a seq one name found is in the
    answer of that name alone, so it is one of `chance`'s seqs or of none of them; asked of their
    few seqs, not of every candidate beside the seqs of every other name."""
    lone = {s for seqs in chance for s in seqs if shared[s] == 1}
    return lone if len(kept) == len(shared) else lone.intersection(kept)


class BatchCandidates:
    """The lookups of a batch's pages: their candidates, what found them, the chance collisions dropped."""

    store: BatchedStore
    last_found: int  # candidates of the last `candidates` call before the limit
    # of the last `candidates` answer, the seqs only one name found, a `store.word_tag` name of at
    # most CHANCE_POSTINGS pages
    unvouched: set[int]
    # of the last `candidates` call, the (tag, answer) of each name of a method whose keys find
    # every match of its test that holds pages (`found_by`; an answer as `answer_of` gives it)
    _keyed: list[tuple[int, tuple[list[int], int]]]
    _names_without_pages: Sequence[bytes] | None  # the last call's names, if all read and none has a page
    _values: dict[bytes, bytes | None]
    _live: set[bytes]  # names whose value has seqs (the batch's own)
    _answers: dict[bytes, tuple[list[int], int]]
    _docs: dict[int, DocRecord]
    _staging: StagedNames | None

    if TYPE_CHECKING:  # the batch's own, which it defines
        def _value(self, name: bytes) -> bytes | None:
            ...

        def _answer(self, value: bytes) -> tuple[list[int], int]:
            ...

        def _all_read_none_filed(self, names: AbstractSet[bytes]) -> bool:
            ...

    def chance_only(self, page: int) -> int:
        """How many candidates page `page` has if every one is a chance collision, else 0.

        How many candidates the staged batch's page `page` has if every one is a chance
        collision of SimHash's short keys that `without_chance` drops (`chance.by_chance_only`); 0 if
        it has none or any other. Such a page's `candidates` and `without_chance` need not run:
        their answer is that nothing is left to judge."""
        return 0 if self._staging is None else self._staging.chance_only.get(page, 0)

    def candidates(self, names: Sequence[bytes], limit: int = MAX_CANDIDATES) -> list[int]:
        """Seqs filed under any of these index keys, each once, oldest first; at most `limit`.

        Bounded work whatever the input: a page of homogeneous text (a forum, a listing) can
        share a key with a large part of the store. A full key (a stop key) answers only its
        first `STOP_KEY_ANSWERS` pages. Past `limit`, the candidates sharing the most
        of the page's keys win (LSH: more colliding bands, higher similarity), the earliest on a
        tie (the earliest-page rule). On normal crawls a page has a handful of candidates and the
        limit never binds. `last_found` keeps how many there were before the cut (metrics)."""
        self.last_found = 0
        self.unvouched = set()
        self._keyed = []
        if self._live.isdisjoint(names) and self._all_read_none_filed(set(names)):
            self._names_without_pages = names
            return []
        self._names_without_pages = None
        word_tag, complete = self.store.word_tag, self.store.complete_tags
        found: list[list[int]] = []  # the seqs each name with pages answers
        chance: list[list[int]] = []  # those of names that may be a lone chance collision (the rest vouch)
        keyed: list[tuple[int, tuple[list[int], int]]] = []  # (tag, answer) of the names of complete methods
        value_of, known_answer = self._values.get, self._answers.get  # (the loop runs for every shared name)
        for n in names:
            if (v := value_of(n, UNREAD)) is UNREAD:
                v = self._value(n)
            if v:
                answer = known_answer(v) or self._answer(v)
                seqs = answer[0]
                found.append(seqs)
                tag = n[0]
                if tag == word_tag and answer[1] <= CHANCE_POSTINGS:
                    chance.append(seqs)
                if tag in complete:
                    keyed.append((tag, answer))
        if not found:
            return []
        self._keyed = keyed
        shared = Counter(chain.from_iterable(found))
        self.last_found = len(shared)
        kept = rank_candidates(shared, limit)
        # a chance collision is a page found by one key of the page, a SimHash key of at most
        # CHANCE_POSTINGS pages (N / 2^26 pages of the store are under one by chance); pages
        # sharing more keys, or found under fuller ones, are not asked
        if chance:
            self.unvouched = unvouched(shared, chance, kept)
        return kept

    def found_by(self) -> dict[int, set[int]]:
        """Of the last `candidates` answer, the seqs found by the keys of each complete method.

        Of the last `candidates` answer, by tag of a method whose keys find every match of its
        test (`SignatureStore.complete_tags`), the seqs its keys found; for each such method none of
        whose keys of the page is full (a full key answers only its first pages: it may hide some).
        Asked by the caller that judges with it (the Detector), not made for every lookup."""
        keyed, most = self._keyed, caps.MAX_POSTINGS_PER_KEY
        full = {tag for tag, (_, count) in keyed if count >= most}  # a full key: its other pages are not answered
        found_by: dict[int, set[int]] = {tag: set() for tag in self.store.complete_tags if tag not in full}
        for tag, (seqs, _) in keyed:
            if tag in found_by:  # (homogeneous text: SimHash's keys are many, one of them full; no set made)
                found_by[tag].update(seqs)
        return found_by

    def without_chance(self, seqs: Sequence[int], mine: Mapping[int, Any], page: int | None = None) -> list[int]:
        """The last `candidates` answer without the chance collisions of the chance-telling method's keys.

        `seqs`, the last `candidates` answer (of a page whose signatures by tag are `mine`),
        without the stored pages that only keys of the store's chance-telling method found and
        whose kept word bits (`SignatureStore.words`) that method does not find: chance collisions
        of its short keys, no method's candidates, dropped unread. (A page of this batch, or one
        whose bits pass while its whole signature would not, is judged as any candidate: the
        method's own rule tells it.)

        `page`: the page's number in the staged batch (`stage`), whose chance checks of a whole
        batch's pages told each pair of a page and a stored page it found under such a key: where
        they told every one asked now (as a rule: a key of a few stored pages then was one of at
        most as many before the batch), their answers are read, the same bits and word asked."""
        tag = self.store.word_tag
        if not self.unvouched or tag is None or tag not in mine:
            return list(seqs)
        committed = np.fromiter((s for s in self.unvouched if s not in self._docs), dtype=np.uint64)
        told = self._staging.chance_told if self._staging is not None else ToldPairs(set(), set())
        pairs = page_pairs(page, committed).tolist() if page is not None and told.asked else None
        if pairs is not None and told.asked.issuperset(pairs):
            far = committed[np.array([pair in told.far for pair in pairs], dtype=np.bool_)]
        else:
            far = committed[self.store.chance_collisions(committed, mine[tag])]
        if not len(far):
            return list(seqs)
        gone = set(far.tolist())
        return [s for s in seqs if s not in gone]
