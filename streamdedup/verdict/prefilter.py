"""The candidates that cannot link to a page, told for a whole batch's columns before the engine judges it.

On text of one shared vocabulary a page has ~50 candidates, nearly all found by SimHash's keys
alone and nearly none of which the engine links to it (6,000 prose pages: 3 of 314,000). Judging
them costs the engine ~45 µs a page of fixed cost and ~0.8 µs a candidate (`relations.judged`).
`CandidateFilter` drops, before `judged`, the candidates it would yield nothing for, by the
engine's own first tests run on arrays made once a batch (each candidate's signatures are read
once, however many of the batch's pages find it), so that a page none of whose candidates can
link skips `judged` altogether.

A candidate can yield something in `judged` only if (engine.py's steps 1 and 3):

- a rule of either policy may hold for it: each of the rule's terms may pass. A `minhash` term
  passes where MinHash's test (`fingerprints.kernels.minhash_similarities`, the same call with the same
  arrays as `MinHashMethod.similarities`) gives at least its floor; a term of a method whose keys
  find every match of its test fails where `found_by.possible_rules` says so (its keys did not find
  the candidate, and the candidate is filed under all of them); any other term may pass;
- or it may be asked as a held match (`relations._held_matches`: the page's estimated new share at
  most `HELD_ASKED`, the candidate larger), or it is related (`relations._related`), from the same
  estimates `WordPairsMethod.new_shares` gives (`wordpair_kernels.two_bit_new_shares` on the same bytes).

Whatever none of these holds for is dropped; every other candidate goes to `judged` as before,
and so does every candidate this filter cannot test (a page of the batch not yet in its arrays, a
record read later, a signature of another size or missing). `judged` treats each candidate on its
own (a subset of its candidates yields the same links for them), so the verdicts are the same.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from itertools import compress, repeat
from operator import attrgetter, is_, itemgetter
from typing import Any, cast

import numpy as np

from streamdedup.fingerprints.kernels import minhash_similarity_of
from streamdedup.fingerprints.wordpair_kernels import two_bit_absent, two_bit_unequal, two_bit_words
from streamdedup.jit import numba
from streamdedup.store.layout import DocRecord
from streamdedup.verdict.columns import MINHASH, Measured, Methods, _read_column
from streamdedup.verdict.found_by import NO_PLACE, FoundBy, found_members
from streamdedup.verdict.new_shares import NEW_TEXT_METHOD
from streamdedup.verdict.policy import SitePolicy
from streamdedup.verdict.relations import HELD_ASKED, RELATED_MIN_PAIRS, RELATED_SHARE

_SIGNATURES, _UNFILED = attrgetter("signatures"), attrgetter("unfiled")  # of a stored record (`DocRecord`)


class CandidateFilter:
    """One batch's pages and the stored pages they may meet, as arrays: which candidates can link to a page.

    Made from the batch's pages' encoded signatures (page `i` at row `i`) and the stored records read
    for the batch; a page of the batch, once filed, is known by its seq (`filed`)."""

    __slots__ = ("_complete", "_first_unfiled", "_kernel_args", "_mh", "_mh_sizes", "_mh_table", "_ok", "_row_of",
                 "_rules", "_tags", "_wp", "_wp_sizes", "_wp_width", "_wp_words")

    def __init__(self, methods: Methods, policy: SitePolicy, pages: Sequence[Mapping[int, bytes]],
                 stored: Mapping[int, DocRecord | None]) -> None:
        mh_tag, minhash = methods[MINHASH]
        wp_tag, wordpairs = methods[NEW_TEXT_METHOD]
        self._tags = mh_tag, wp_tag
        self._mh, self._wp = cast(Any, minhash), cast(Any, wordpairs)
        # each rule of either policy: its MinHash terms' floors and its methods whose keys find every
        # match (their tags); None where a term of another kind may pass whatever this filter knows
        complete = {name: tag for name, (tag, method) in methods.items() if method.keys_find_every_match}
        rules: list[tuple[list[float], list[int]] | None] = []
        for chosen in dict.fromkeys((policy.other_site, policy.same_site)):
            for rule, names in zip(chosen.rules, chosen.rule_methods, strict=True):
                lows = [low for term, low in rule if term == MINHASH]
                tags = [complete[name] for name in names if name in complete]
                rules.append((lows, tags) if lows or tags else None)
        self._rules = None if None in rules else cast("list[tuple[list[float], list[int]]]", rules)
        self._complete = sorted({tag for rule in self._rules or () for tag in rule[1]})
        # the stored records read by `map` at C speed (text of one vocabulary: ~3,000 a batch); a seq
        # whose record is gone (None) has no row
        seqs, docs = list(stored), list(stored.values())
        if any(map(is_, docs, repeat(None))):
            seqs = [seq for seq, doc in zip(seqs, docs, strict=True) if doc is not None]
            docs = [doc for doc in docs if doc is not None]
        records = [*pages, *map(_SIGNATURES, docs)]
        self._row_of = dict(zip(seqs, range(len(pages), len(records)), strict=True))
        unfiled = list(map(_UNFILED, docs))
        self._first_unfiled = np.full(len(records), NO_PLACE, dtype=np.int64)
        for row in np.flatnonzero(np.fromiter(map(len, unfiled), dtype=np.int64, count=len(docs))).tolist():
            self._first_unfiled[len(pages) + row] = unfiled[row][0]
        mh_width = self._mh.record_dtype.itemsize
        wp_width = self._wp_width = self._wp.record_width
        count = len(records)
        mh, wp = _column(records, mh_tag), _column(records, wp_tag)
        mh_lengths = np.fromiter(map(len, mh), dtype=np.int64, count=count)
        wp_lengths = np.fromiter(map(len, wp), dtype=np.int64, count=count)
        # a row is tested only where both its signatures have the widths the kernels read
        self._ok = (mh_lengths == mh_width) & (wp_lengths >= wp_width)
        if not self._ok.all():  # (rare: a page too short for a signature) blanks in its place
            blank, wp_blank, ok = bytes(mh_width), bytes(wp_width), self._ok.tolist()
            mh = [data if length == mh_width else blank for data, length in zip(mh, mh_lengths.tolist(), strict=True)]
            wp = [data if tested else wp_blank for data, tested in zip(wp, ok, strict=True)]
        table = np.frombuffer(b"".join(mh), dtype=self._mh.record_dtype)
        self._mh_table, self._mh_sizes = np.ascontiguousarray(table["values"]), np.ascontiguousarray(table["size"])
        # the word pairs' records' heads (set size, packed values) a row each: sizes, and values as uint64 words
        # each record's head cut at C speed (a gather of every byte: ~3x the time)
        cut = b"".join(map(itemgetter(slice(wp_width)), wp))
        heads = np.frombuffer(cut, dtype=np.uint8).reshape(count, wp_width)
        self._wp_sizes = heads[:, :4].copy().view("<u4")[:, 0].astype(np.uint32)
        self._wp_words = np.ascontiguousarray(two_bit_words(heads[:, 4:]))
        p, q = self._mh.params, self._wp.params  # `linkable_rows`' arguments after a page's own
        self._kernel_args = (self._ok, self._mh_table, self._mh_sizes, p.threshold, self._mh.collision, p.containment,
                             p.containment_min_shingles, self._wp_words, self._wp_sizes, q.num_perm,
                             self._wp.collision, HELD_ASKED, RELATED_MIN_PAIRS, RELATED_SHARE, self._first_unfiled)

    @classmethod
    def usable(cls, methods: Methods) -> bool:
        """Whether `methods` have the two tests the filter runs (MinHash's and the word pairs' new shares)."""
        return (MINHASH in methods and NEW_TEXT_METHOD in methods
                and hasattr(methods[MINHASH][1], "record_dtype") and hasattr(methods[NEW_TEXT_METHOD][1], "new_shares"))

    def filed(self, page: int, doc: DocRecord) -> None:
        """The batch's page `page` was filed as `doc`: later pages of the batch find it as a candidate."""
        self._row_of[doc.seq] = page
        self._first_unfiled[page] = doc.unfiled[0] if doc.unfiled else NO_PLACE

    def linkable(self, seqs: Sequence[int], mine: Mapping[int, Any], found_by: FoundBy | None,
                 tests: Counter[str] | None = None) -> tuple[list[int], Measured | None]:
        """Of `seqs` (ascending), those `relations.judged` may yield something for, in order, and what they measured.

        `mine`: the page's signatures by tag; `found_by`: as `judged` is given it (None: every rule is
        verified, whatever the keys found); `tests`: counts MinHash's tests run here (`tests_run`,
        as `judged` counts its own). The `Measured` (None: nothing) is for `judged`, which does not
        run those tests again."""
        if self._rules is None:
            return list(seqs), None
        mh_sig, wp_sig = mine.get(self._tags[0]), mine.get(self._tags[1])
        minhash = self._mh
        if (mh_sig is None or wp_sig is None or len(mh_sig.values) != minhash.params.num_perm
                or mh_sig.values.dtype != self._mh_table.dtype or len(wp_sig.packed) != self._wp_width - 4):
            return list(seqs), None
        try:
            rows = np.fromiter(map(self._row_of.__getitem__, seqs), dtype=np.int64, count=len(seqs))
        except KeyError:  # a record read after the batch's lookups: judged as before
            get = self._row_of.get
            rows = np.fromiter((get(s, -1) for s in seqs), dtype=np.int64, count=len(seqs))
        similarity, new, their_new, sizes, measured, may, tested, may_count, best, least = linkable_rows(
            rows, mh_sig.values, mh_sig.set_size, _words_of(wp_sig.packed), wp_sig.set_size, *self._kernel_args)
        if tests is not None:
            tests["tests_run"] += tested
        if may_count < len(seqs):  # (a comparison with NaN warns of nothing: no `np.errstate` needed)
            if tested == len(seqs) and found_by is not None and self._no_rule_may_hold(seqs, best, least, found_by):
                if not may_count:  # (homogeneous text: nearly every page)
                    return [], None
            else:
                may |= self._some_rule_may_hold(seqs, rows, similarity, found_by)
            kept = list(compress(seqs, may.tolist()))
            if len(kept) < len(seqs):
                known = Measured(similarity, new, their_new, sizes, measured) if tested else None
                return kept, None if known is None or not kept else known.take(may)
        return list(seqs), Measured(similarity, new, their_new, sizes, measured) if tested else None

    def _no_rule_may_hold(self, seqs: Sequence[int], best: float, least: int, found_by: FoundBy) -> bool:
        """Whether no rule may hold for any of the candidates `seqs`, told from two figures (False: not told).

        True only where each rule has a term that fails for every candidate: a `minhash` floor above
        `best` (the largest similarity measured; every candidate measured), or a method whose keys
        find every match that `found_members` would make all False: its keys found none of them
        and `least` (their least first unfiled place) is not below its bound. (The usual case on
        text of one vocabulary: the page's candidates all found by SimHash's keys, none of them
        MinHash's neighbour.) Where this says False, `_some_rule_may_hold` tells each candidate."""
        for lows, tags in cast("list[tuple[list[float], list[int]]]", self._rules):
            if lows and not best >= max(lows):  # (best is -inf where nothing measured a similarity)
                continue
            for tag in tags:
                found = found_by.seqs.get(tag)
                if found is None or (found and found.issuperset(seqs)):
                    continue  # `found_members` leaves it out: it rules no candidate out
                bound = found_by.unfiled_bounds.get(tag, 0)
                if least >= (NO_PLACE if bound is None else bound) and (not found or found.isdisjoint(seqs)):
                    break  # no candidate a member: the rule holds for none
            else:
                return False
        return True

    def _some_rule_may_hold(self, seqs: Sequence[int], rows: np.ndarray, similarity: np.ndarray,
                            found_by: FoundBy | None) -> np.ndarray:
        """Of the candidates `seqs` (at `rows`), those a rule of either policy may hold for.

        A `minhash` term against its floor; a method whose keys find every match as the engine reads
        `FoundBy` (`found_by.found_members`, the candidates' first unfiled places from this filter's
        arrays); without `found_by` every candidate may pass it."""
        members = {} if found_by is None else found_members(seqs, self._complete, found_by,
                                                            lambda: self._first_unfiled[rows])
        out: np.ndarray | None = None
        for lows, tags in cast("list[tuple[list[float], list[int]]]", self._rules):
            holds: np.ndarray | None = None  # None: every candidate
            for tag in tags:
                if (member := members.get(tag)) is not None:
                    holds = member if holds is None else holds & member
            for low in lows:
                passed = similarity >= low  # NaN (no match) fails, as in `Policy.first_rules`
                holds = passed if holds is None else holds & passed
            if holds is None:
                return np.ones(len(seqs), dtype=np.bool_)
            out = holds if out is None else out | holds
        return np.zeros(len(seqs), dtype=np.bool_) if out is None else out


_LITTLE_ENDIAN = sys.byteorder == "little"


def _words_of(packed: np.ndarray) -> np.ndarray:
    """A page's packed word-pair values as `two_bit_words` makes a row of them (a view where it can be one)."""
    if _LITTLE_ENDIAN and packed.dtype == np.uint8 and not len(packed) % 8 and packed.flags.c_contiguous:
        return packed.view(np.uint64)
    return two_bit_words(packed[None, :])[0]


def _column(records: Sequence[Mapping[int, bytes]], tag: int) -> list[bytes]:
    """Each record's value at `tag`, b"" where it has none (`columns._read_column`, read once at C speed)."""
    values, complete = _read_column(records, tag)
    return cast("list[bytes]", values) if complete else [b"" if value is None else value for value in values]


@numba.njit(cache=True)
def linkable_rows(rows: np.ndarray, mh_values: np.ndarray, mh_size: int, wp_mine: np.ndarray, own: int,
                  ok: np.ndarray, mh_table: np.ndarray, mh_sizes: np.ndarray, threshold: float, mh_collision: float,
                  containment: float, min_shingles: int, wp_words: np.ndarray, wp_sizes: np.ndarray, num_perm: int,
                  wp_collision: float, held_asked: float, related_min: int, related_share: float,
                  first_unfiled: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                                      np.ndarray, int, int, float, int]:
    """MinHash's test and the new shares of the candidates at `rows` (-1: none), and which may link by the shares.

    The page's own: its MinHash values and set size, its word pairs' packed values as uint64 words
    (`two_bit_words`) and set size; then the filter's tables and the tests' parameters.

    The tests are the engine's own (`kernels.minhash_similarity_of`, the word pairs' fields
    counted as `two_bit_new_shares` counts them and `two_bit_absent`) read in place from the
    filter's tables. A candidate may link by its shares where it would be asked as a held match or
    is related (`relations._held_matches`, `relations._related`), or where it was not tested (a row of
    -1 or not `ok`) or a share is NaN. Returns the similarities, the page's and each candidate's
    new shares and the candidates' pairs (NaN, NaN, NaN and 0 where untested), where each was
    tested, that mask, how many rows were tested and how many the mask keeps; and, for
    `CandidateFilter._no_rule_may_hold`, the largest similarity measured (-inf: none) and the least
    first unfiled place of the rows (of those not -1)."""
    count = rows.shape[0]
    similarity, new_shares, their_new_shares = np.full(count, np.nan), np.full(count, np.nan), np.full(count, np.nan)
    pair_counts = np.zeros(count)
    measured = np.zeros(count, dtype=np.bool_)
    may = np.ones(count, dtype=np.bool_)
    tested = 0
    kept = count
    best = -np.inf
    least = NO_PLACE
    own_size = max(1.0, float(own))
    for j in range(count):
        row = rows[j]
        if row < 0:
            continue
        least = min(least, first_unfiled[row])
        if not ok[row]:
            continue
        measured[j] = True
        tested += 1
        found = minhash_similarity_of(mh_table[row], int(mh_sizes[row]), mh_values, mh_size, threshold, mh_collision,
                                      containment, min_shingles)
        similarity[j] = found
        if found > best:  # (NaN is not)
            best = found
        size = float(wp_sizes[row])
        a, b = two_bit_absent(two_bit_unequal(wp_words[row], wp_mine), size, own_size, num_perm, wp_collision)
        new_shares[j], their_new_shares[j], pair_counts[j] = a, b, size
        if np.isnan(a) or np.isnan(b):
            continue
        held = a <= held_asked and size > own
        related = min(size, float(own)) >= related_min and 1.0 - min(a, b) >= related_share
        may[j] = held or related
        kept -= not may[j]
    return similarity, new_shares, their_new_shares, pair_counts, measured, may, tested, kept, best, least
