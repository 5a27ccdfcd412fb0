"""The candidates that cannot link to a page, told for a whole batch's columns before the engine judges it.

On text of one shared vocabulary a page has ~50 candidates, nearly all found by SimHash's keys
alone and nearly none of which the engine links to it (6,000 prose pages: 3 of 314,000). Judging
them costs the engine ~45 µs a page of fixed cost and ~0.8 µs a candidate (`engine.judged`).
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
- or it may be asked as a held match (`engine._held_matches`: the page's estimated new share at
  most `HELD_ASKED`, the candidate larger), or it is related (`engine._related`), from the same
  estimates `WordPairsMethod.new_shares` gives (`wordpair_kernels.two_bit_new_shares` on the same bytes).

Whatever none of these holds for is dropped; every other candidate goes to `judged` as before,
and so does every candidate this filter cannot test (a page of the batch not yet in its arrays, a
record read later, a signature of another size or missing). `judged` treats each candidate on its
own (a subset of its candidates yields the same links for them), so the verdicts are the same.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from itertools import compress
from typing import Any, cast

import numpy as np

from streamdedup.fingerprints.kernels import minhash_similarities
from streamdedup.fingerprints.wordpair_kernels import two_bit_new_shares
from streamdedup.jit import numba
from streamdedup.store.layout import DocRecord
from streamdedup.verdict.columns import MINHASH, Measured, Methods, _read_column
from streamdedup.verdict.engine import HELD_ASKED, RELATED_MIN_PAIRS, RELATED_SHARE
from streamdedup.verdict.found_by import NO_PLACE, FoundBy, found_members
from streamdedup.verdict.new_text import NEW_TEXT_METHOD
from streamdedup.verdict.policy import SitePolicy


class CandidateFilter:
    """One batch's pages and the stored pages they may meet, as arrays: which candidates can link to a page.

    Made from the batch's pages' encoded signatures (page `i` at row `i`) and the stored records read
    for the batch; a page of the batch, once filed, is known by its seq (`filed`)."""

    __slots__ = ("_complete", "_first_unfiled", "_mh", "_mh_sizes", "_mh_table", "_ok", "_row_of", "_rules",
                 "_tags", "_wp", "_wp_data", "_wp_starts", "_wp_width")

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
        docs = [(seq, doc) for seq, doc in stored.items() if doc is not None]
        records = [*pages, *(doc.signatures for _, doc in docs)]
        self._row_of = {seq: row for row, (seq, _) in enumerate(docs, start=len(pages))}
        self._first_unfiled = np.fromiter(
            [NO_PLACE] * len(pages) + [doc.unfiled[0] if doc.unfiled else NO_PLACE for _, doc in docs],
            dtype=np.int64, count=len(records))
        mh_width = self._mh.record_dtype.itemsize
        wp_width = self._wp_width = self._wp.record_width
        count = len(records)
        mh, wp = _column(records, mh_tag), _column(records, wp_tag)
        mh_lengths = np.fromiter(map(len, mh), dtype=np.int64, count=count)
        wp_lengths = np.fromiter(map(len, wp), dtype=np.int64, count=count)
        # a row is tested only where both its signatures have the widths the kernels read
        self._ok = (mh_lengths == mh_width) & (wp_lengths >= wp_width)
        if not self._ok.all():  # (rare: a page too short for a signature) a blank in its place
            blank = bytes(mh_width)
            mh = [data if length == mh_width else blank for data, length in zip(mh, mh_lengths.tolist(), strict=True)]
        table = np.frombuffer(b"".join(mh), dtype=self._mh.record_dtype)
        self._mh_table, self._mh_sizes = np.ascontiguousarray(table["values"]), np.ascontiguousarray(table["size"])
        # the word pairs' records as they are, one after another, and where each starts (the kernel reads its head)
        self._wp_data = np.frombuffer(b"".join(wp), dtype=np.uint8)
        self._wp_starts = np.zeros(count, dtype=np.int64)
        np.cumsum(wp_lengths[:-1], out=self._wp_starts[1:])

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
        """Of `seqs` (ascending), those `engine.judged` may yield something for, in order, and what they measured.

        `mine`: the page's signatures by tag; `found_by`: as `judged` is given it (None: every rule is
        verified, whatever the keys found); `tests`: counts MinHash's tests run here (`tests_run`,
        as `judged` counts its own). The `Measured` (None: nothing) is for `judged`, which does not
        run those tests again."""
        if self._rules is None:
            return list(seqs), None
        mh_sig, wp_sig = mine.get(self._tags[0]), mine.get(self._tags[1])
        minhash, wordpairs = self._mh, self._wp
        if (mh_sig is None or wp_sig is None or len(mh_sig.values) != minhash.params.num_perm
                or mh_sig.values.dtype != self._mh_table.dtype or len(wp_sig.packed) != self._wp_width - 4):
            return list(seqs), None
        try:
            rows = np.fromiter(map(self._row_of.__getitem__, seqs), dtype=np.int64, count=len(seqs))
        except KeyError:  # a record read after the batch's lookups: judged as before
            get = self._row_of.get
            rows = np.fromiter((get(s, -1) for s in seqs), dtype=np.int64, count=len(seqs))
        p, q = minhash.params, wordpairs.params
        similarity, new, their_new, sizes, measured, may, tested, may_count = linkable_rows(
            rows, self._ok, self._mh_table, self._mh_sizes, mh_sig.values, mh_sig.set_size, p.threshold,
            minhash.collision, p.containment, p.containment_min_shingles, self._wp_data, self._wp_starts,
            self._wp_width, wp_sig.packed,
            wp_sig.set_size, q.num_perm, wordpairs.collision, HELD_ASKED, RELATED_MIN_PAIRS, RELATED_SHARE)
        if tests is not None:
            tests["tests_run"] += tested
        known = Measured(similarity, new, their_new, sizes, measured) if tested else None
        if may_count < len(seqs):  # (a comparison with NaN warns of nothing: no `np.errstate` needed)
            may |= self._some_rule_may_hold(seqs, rows, similarity, found_by)
            kept = list(compress(seqs, may.tolist()))
            if len(kept) < len(seqs):
                return kept, None if known is None or not kept else known.take(may)
        return list(seqs), known

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


def _column(records: Sequence[Mapping[int, bytes]], tag: int) -> list[bytes]:
    """Each record's value at `tag`, b"" where it has none (`columns._read_column`, read once at C speed)."""
    values, complete = _read_column(records, tag)
    return cast("list[bytes]", values) if complete else [b"" if value is None else value for value in values]


@numba.njit(cache=True)
def linkable_rows(rows: np.ndarray, ok: np.ndarray, mh_table: np.ndarray, mh_sizes: np.ndarray, mh_values: np.ndarray,
                  mh_size: int, threshold: float, mh_collision: float, containment: float, min_shingles: int,
                  wp_data: np.ndarray, wp_starts: np.ndarray, width: int, wp_packed: np.ndarray, own: int,
                  num_perm: int, wp_collision: float, held_asked: float, related_min: int,
                  related_share: float
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, int, int]:
    """MinHash's test and the new shares of the candidates at `rows` (-1: none), and which may link by the shares.

    The tests are the engine's own kernels (`minhash_similarities`, `two_bit_new_shares`) on the
    rows gathered as `MinHashMethod.similarities` and `WordPairsMethod.new_shares` pass them. A
    candidate may link by its shares where it would be asked as a held match or is related
    (`engine._held_matches`, `engine._related`), or where it was not tested (a row of -1 or not
    `ok`) or a share is NaN. Returns the similarities, the page's and each candidate's new shares
    and the candidates' pairs (NaN, NaN, NaN and 0 where untested), where each was tested, that
    mask, how many rows were tested and how many the mask keeps."""
    count = rows.shape[0]
    similarity, new_shares, their_new_shares = np.full(count, np.nan), np.full(count, np.nan), np.full(count, np.nan)
    pair_counts = np.zeros(count)
    measured = np.zeros(count, dtype=np.bool_)
    may = np.ones(count, dtype=np.bool_)
    at = np.empty(count, dtype=np.int64)
    tested = 0
    for j in range(count):
        if rows[j] >= 0 and ok[rows[j]]:
            at[tested] = j
            measured[j] = True
            tested += 1
    if not tested:
        return similarity, new_shares, their_new_shares, pair_counts, measured, may, 0, count
    values = np.empty((tested, mh_table.shape[1]), dtype=mh_table.dtype)
    sizes = np.empty(tested, dtype=mh_sizes.dtype)
    heads = np.empty(tested * width, dtype=np.uint8)
    ends = np.empty(tested, dtype=np.int64)
    for i in range(tested):
        row = rows[at[i]]
        values[i, :] = mh_table[row, :]
        sizes[i] = mh_sizes[row]
        heads[i * width:(i + 1) * width] = wp_data[wp_starts[row]:wp_starts[row] + width]
        ends[i] = (i + 1) * width
    found = minhash_similarities(values, sizes, mh_values, mh_size, threshold, mh_collision, containment, min_shingles)
    new, their_new, pairs = two_bit_new_shares(heads, ends, width, wp_packed, own, num_perm, wp_collision)
    kept = count
    for i in range(tested):
        j = at[i]
        similarity[j] = found[i]
        a, b, size = new[i], their_new[i], pairs[i]
        new_shares[j], their_new_shares[j], pair_counts[j] = a, b, size
        if np.isnan(a) or np.isnan(b):
            continue
        held = a <= held_asked and size > own
        related = min(size, float(own)) >= related_min and 1.0 - min(a, b) >= related_share
        may[j] = held or related
        kept -= not may[j]
    return similarity, new_shares, their_new_shares, pair_counts, measured, may, tested, kept
