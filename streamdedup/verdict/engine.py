"""The one decision engine: verified candidates + policy -> verdict. Pure; every mode calls it.

File mode, the local topology and the Faust app judge a page against one store; the global
topology judges it in every index partition its keys live in and gathers the answers by page id.
All go through the same steps here, so `streamdedup eval` measures what the Kafka worker does:

1. `CandidateSimilarities`: a candidate (a page sharing any index key) is verified by whichever
   methods the policy's rules ask for, not only by the method whose key brought it: "simhash+a12"
   needs both, wherever the candidate came from. Each test runs when a rule first needs it, in rule
   order, for all of a page's candidates that still need it at once (one array operation); a test
   that cannot pass, for a candidate no key of its method found, is not run (`FoundBy`).
2. `Policy.first_rules`: the first rule each candidate satisfies -> a match.
3. Direction (`relation`): a match is the page's *duplicate* only if the page's own text is
   (nearly) all in the candidate: its `new_share`, the share of its new words in runs
   (`fingerprints/wordpairs.py`, `_in_runs`), less the lines its site's earlier pages showed that
   the candidate lacks (`_without_shown`), is within the tolerance (`NewTextTolerance`).
   A match whose own text is (nearly) all in the page is one the page *supersedes* (the view-all
   page after its part); any other match, or a candidate sharing at least half of the smaller
   page's pairs, is *related* (a follow-up reusing an opening, an article with paragraphs replaced).
4. `decide`: of the duplicate candidates that hold (about) the most of the page, the earliest of
   the nearest (`NEAR_AS`) is what it duplicates; the page joins the oldest cluster among its
   duplicate and superseded candidates' clusters (the earliest root) and names the others it
   bridges (`merged_clusters`). A page with no duplicate candidate is unique; it joins the
   cluster of what it supersedes, and names the earlier pages it is related to (their ids, the
   same in every mode: a page's cluster as an index partition knows it may be stale).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, cast

import numpy as np

from streamdedup.fingerprints.base import FingerprintMethod
from streamdedup.fingerprints.wordpairs import TAIL, paragraph_values, paragraph_words, shown_before
from streamdedup.store.layout import DocRecord
from streamdedup.verdict.contract import Verdict
from streamdedup.verdict.policy import NewText, NewTextTolerance, Policy, SitePolicy

Methods = Mapping[str, tuple[int, FingerprintMethod[Any, Any]]]  # name -> (tag, method)
# the method whose signature of a rescued page's article element text is kept (`DocRecord.steered`),
# and how many of its minima: enough to tell element texts that share little from those that share
# most (exact Jaccard of the rescued own-site pairs of the dev sets: <= 0.4 apart, >= 0.7 alike),
# for half the bytes of a whole signature (132 bytes a rescued page)
STEERED_METHOD = "minhash"
STEERED_VALUES = 64
# the method that measures how much of a page is absent from a candidate (its `new_shares`)
NEW_TEXT_METHOD = "wordpairs"
DUPLICATE, SUPERSEDES, RELATED = "duplicate", "supersedes", "related"
# the engine's fixed rules (the constants below and how `decide` uses them): a change that can move
# a verdict bumps it, so that workers of two versions in one group are told (`verdict_settings`).
# 2: edits explain new pairs only up to MAX_EDITED_PAIRS; a new paragraph is new text
# 3: a short paragraph in the place of another is new text (`NewTextTolerance.exceeded_by`)
# 4: lines two of the site's earlier pages showed, which the match lacks, are no new text (`_without_shown`)
# 5: of the duplicates holding as much of the page, the earliest of the nearest is named (NEAR_AS)
RULES_VERSION = 5
# a candidate no rule matched is related when it shares at least this share of the smaller page's
# word pairs, and that page has at least RELATED_MIN_PAIRS of them (fewer: boilerplate alone)
RELATED_SHARE = 0.5
RELATED_MIN_PAIRS = 60
# new shares this close to the least among a page's duplicate candidates hold as much of it (`decide`):
# about the estimate's error, so the earliest of them is named, not the luckiest draw
HOLDS_AS_MUCH = 0.03
# ... and of those, the earliest of the nearest is named: those whose estimated share of the page
# they hold (`_held_share`) is this close to the highest (about a MinHash estimate's error near 1).
# One further below is a lightly edited copy, which may lack a line of the page that no measure of
# new text sees: a heading or a list item of 5-30 words, under the new-paragraph rule and within the
# share's error (multilingual dev: a full page named a duplicate of the light edit that dropped such
# a line, while another copy of the same text held it: 7 of its 12 content-loss edges)
NEAR_AS = 0.05
# at most this many ids in `supersedes` and `related_to` (the earliest): a verdict stays small
MAX_NAMED = 8


def relation(matched: bool, new: NewText, their_new: NewText, tolerance: NewTextTolerance) -> str:
    """What a linked candidate is to the page, from the page's side.

    DUPLICATE when a rule matched and the page's text is (nearly) all in it, SUPERSEDES when a rule
    matched and its text is (nearly) all in the page, RELATED otherwise. `new`: the page's text
    absent from the candidate; `their_new`: the candidate's absent from the page. The candidate's
    side swaps them."""
    if matched and not tolerance.exceeded_by(new, their_new):
        return DUPLICATE
    if matched and not tolerance.exceeded_by(their_new, new):
        return SUPERSEDES
    return RELATED


class Judged(NamedTuple):
    """A candidate linked to the page.

    The rule it matched ("" if none), the rule's similarity, its relation to the page and the page's
    to it (`relation`), and the page's share of text absent from it and its share absent from the
    page (NaN: not measured)."""

    seq: int
    doc: DocRecord
    rule: str
    similarity: float
    relation: str
    their_relation: str
    new_share: float
    their_new_share: float


@dataclass(frozen=True)
class Candidate:
    """An earlier page that passed the policy against the page being judged.

    `order` is the candidate's place in the order every mode agrees on (file mode: its sequence
    number; the global topology: its global order bytes); `root_order`/`root_id` name the first
    page of the cluster it belongs to."""

    order: Any  # int or bytes: comparable within one run
    page_id: str
    rule: str  # "" for a related candidate no rule matched
    similarity: float
    root_order: Any
    root_id: str
    relation: str = "duplicate"  # DUPLICATE | SUPERSEDES | RELATED (`relation`)
    new_share: float = 0.0  # the share of the page's own text absent from the candidate
    their_new_share: float = 0.0  # the share of the candidate's text absent from the page (`_held_share`)


class SignatureColumns:
    """The candidates' encoded signatures of each method, gathered once a page.

    The candidates' encoded signatures of each method (by tag; None where a candidate has none),
    read from their records once a page: the policy's tests, `_new_shares` and `_in_runs` ask the
    same methods of the same candidates (minhash twice), and on homogeneous pages a page has ~50."""

    __slots__ = ("_columns", "records")

    def __init__(self, records: Sequence[Mapping[int, bytes]]) -> None:
        self.records = records
        self._columns: dict[int, tuple[list[bytes | None], bool]] = {}

    def __len__(self) -> int:
        return len(self.records)

    def column(self, tag: int) -> tuple[list[bytes | None], bool]:
        """Each candidate's encoded signature of the method `tag`, and whether every one has one."""
        column = self._columns.get(tag)
        if column is None:
            values = [record.get(tag) for record in self.records]
            column = self._columns[tag] = values, None not in values
        return column

    def present(self, tag: int, rows: np.ndarray) -> tuple[np.ndarray, list[bytes]]:
        """Of the candidates at `rows` (all, in order, if as many), those with a signature of `tag`, and theirs."""
        column, complete = self.column(tag)
        got = column if len(rows) == len(self.records) else [column[i] for i in rows.tolist()]
        if complete or None not in got:
            return rows, cast("list[bytes]", got)
        have = np.fromiter((data is not None for data in got), dtype=bool, count=len(got))
        return rows[have], [data for data in got if data is not None]


class CandidateSimilarities:
    """Each method's verdict on a page's candidates, computed when the policy first asks for it.

    Then kept, for the candidates asked about, in one vectorised call per method
    (`FingerprintMethod.similarities`): `mine` are the page's signatures by method tag, `theirs`
    each candidate's encoded ones. NaN where a method abstains on either page or finds no match."""

    __slots__ = ("_asked", "_values", "methods", "mine", "tests", "theirs")

    def __init__(self, methods: Methods, mine: Mapping[int, Any],
                 theirs: Sequence[Mapping[int, bytes]] | SignatureColumns, tests: Counter[str] | None = None) -> None:
        self.methods, self.mine = methods, mine
        self.theirs = theirs if isinstance(theirs, SignatureColumns) else SignatureColumns(theirs)
        self.tests = tests  # counts the tests asked ("tests_run"), one a candidate and measure
        self._values: dict[str, np.ndarray] = {}
        self._asked: dict[str, np.ndarray | None] = {}  # None: every candidate asked

    def __call__(self, name: str, rows: np.ndarray) -> np.ndarray:
        values = self._values.get(name)
        count = len(self.theirs)
        if values is None and len(rows) == count:  # the first question, of all of them (a first rule's)
            method_name, _, measure = name.partition(".")
            tag, method = self.methods[method_name]
            signature = self.mine.get(tag)
            column, complete = self.theirs.column(tag)
            if signature is not None and complete:  # the usual case: one call, nothing to place or track
                if self.tests is not None:
                    self.tests["tests_run"] += count
                data = cast("list[bytes]", column)
                values = self._values[name] = np.asarray(
                    method.measure_similarities(measure, signature, data) if measure
                    else method.similarities(signature, data), dtype=np.float64)
                self._asked[name] = None
                return values
        if values is None:  # the method's first question: nothing asked yet
            values = self._values[name] = np.full(count, np.nan)
            if len(rows) == count:  # all of them (a policy's first rule asks so): nothing to track
                self._asked[name] = None
            else:
                asked_rows = self._asked[name] = np.zeros(count, dtype=bool)
                asked_rows[rows] = True
            todo = rows
        else:
            asked = self._asked[name]
            if asked is None:
                return values[rows]
            todo = rows[~asked[rows]]
            if not todo.size:
                return values[rows]
            asked[todo] = True
        if self.tests is not None:
            self.tests["tests_run"] += len(todo)
        method_name, _, measure = name.partition(".")  # "minhash.containment": another measure of minhash's
        tag, method = self.methods[method_name]
        signature = self.mine.get(tag)
        if signature is not None:
            have, data = self.theirs.present(tag, todo)  # candidates the method abstained on: no match
            if have.size:
                values[have] = (method.measure_similarities(measure, signature, data) if measure
                                else method.similarities(signature, data))
        return values[rows]

    def value(self, name: str, row: int) -> float:
        """A similarity already asked for (the matched rule's first method: the verdict's similarity)."""
        return float(self._values[name][row])


def judged(seqs: Sequence[int], docs_of: Callable[[Sequence[int]], Sequence[DocRecord | None]], policy: SitePolicy,
           methods: Methods, page: DocRecord, mine: Mapping[int, Any],
           template_known: bool, oldest_ms: int | None, found_by: FoundBy | None = None,
           tests: Counter[str] | None = None) -> Iterator[Judged]:
    """Steps 1 to 3 for one page (`page`: its id, site; `mine`: its signatures by tag).

    Each stored candidate, other than the page itself and inside the retention window, that a rule
    matched or that is related to the page, with its relation (`relation`), in the order of `seqs`.

    Own-site candidates meet the site policy only while the site's template is unknown (its cold
    start; by default the site policy is the main one), and not then if they are another fetch of
    the page's own document (its URL: `DocRecord.document`), which no template can make look
    alike. The candidates of each policy are verified together, rule by rule (`Policy.first_rules`);
    an own-site match of two rescued pages stands only if their article elements agree (`_steered_agree`).

    `found_by` (when the caller looked up all of the page's keys, not one partition's): by tag of a
    method whose keys find every match of its test, the candidates its keys found. A rule naming
    such a method is not verified for a candidate outside them (`possible_rules`): its test would
    fail, so the verdicts are the same. On homogeneous pages, whose candidates only SimHash's keys
    find, three of the default policy's four tests are not run. `tests`: counts the tests run
    (`tests_run`: one a candidate and method or measure asked)."""
    page_id = page.page_id
    stored = [(seq, other) for seq, other in zip(seqs, docs_of(seqs), strict=True)
              if other is not None and other.page_id != page_id and (oldest_ms is None or other.event_ms >= oldest_ms)]
    if not stored:
        return
    verdicts: dict[int, tuple[str, float]] = {}  # by row of `stored`: the rule it satisfies
    # the candidates of each policy (None: all of them, as a rule: only the site policy's differ)
    groups: list[tuple[Policy, np.ndarray | None]] = [(policy.other_site, None)]
    if not template_known and policy.same_site != policy.other_site:  # candidates of the page's site: the site policy
        strict = np.array([_own_site_other_document(page, other) for _, other in stored], dtype=np.bool_)
        if strict.all():
            groups = [(policy.same_site, None)]
        elif strict.any():
            groups = [(policy.other_site, np.flatnonzero(~strict)), (policy.same_site, np.flatnonzero(strict))]
    members = _found_members(stored, methods, found_by) if found_by is not None else {}
    columns = SignatureColumns([other.signatures for _, other in stored])
    for chosen, rows in groups:
        theirs = columns if rows is None else SignatureColumns([stored[i][1].signatures for i in rows.tolist()])
        similarities = CandidateSimilarities(methods, mine, theirs, tests)
        numbers = chosen.first_rules(similarities, len(theirs), possible_rules(chosen, methods, members, rows))
        for j in np.flatnonzero(numbers >= 0).tolist():
            rule = chosen.rules[numbers[j]]
            row = j if rows is None else int(rows[j])
            verdicts[row] = ("+".join(m for m, _ in rule), similarities.value(rule[0][0], j))
    agree = _steered_agree(page, methods)
    shares = _new_shares(columns, methods, mine)
    if shares is None:  # no measure of new text: every match is a duplicate, as before directions
        for i in sorted(verdicts):
            seq, other = stored[i]
            if agree is None or agree(other):
                yield Judged(seq, other, verdicts[i][0], verdicts[i][1], DUPLICATE, DUPLICATE, 0.0, 0.0)
        return
    new_shares, their_new_shares, own, sizes = shares
    matched_rows = np.fromiter(sorted(verdicts), dtype=np.int64, count=len(verdicts))
    _in_runs(columns, methods, mine, new_shares, their_new_shares, own, sizes, matched_rows)
    owns = _without_shown(columns, methods, mine, new_shares, own, matched_rows)
    # related only (no rule matched): sharing half of the smaller page's pairs, which are more than
    # boilerplate (NaN, not measured, compares false: numpy warns of none of these operations)
    related = (np.minimum(sizes, own) >= RELATED_MIN_PAIRS) & (1.0 - np.fmin(new_shares, their_new_shares)
                                                               >= RELATED_SHARE)
    related[matched_rows] = True
    judged_rows = np.flatnonzero(related)
    tolerance = policy.tolerance
    asked = _paragraphs_asked(matched_rows, new_shares, their_new_shares, owns, sizes, tolerance)
    paragraph, their_paragraph, place, their_place = new_paragraphs(stored, columns, methods, mine, page.site, asked)
    for i in judged_rows.tolist():  # in the order of `seqs`
        seq, other = stored[i]
        if agree is not None and not agree(other):
            continue
        matched = verdicts.get(i)
        new_share, their_new_share = float(new_shares[i]), float(their_new_shares[i])
        exact = matched is not None and matched[0] == "exact"
        if exact:  # the same text: nothing new either way
            new_share = their_new_share = 0.0
        label, similarity = matched if matched is not None else ("", float("nan"))
        new = NewText(new_share, new_share * owns[i], 0 if exact else int(paragraph[i]), int(place[i]))
        their_new = NewText(their_new_share, their_new_share * sizes[i], 0 if exact else int(their_paragraph[i]),
                            int(their_place[i]))
        yield Judged(seq, other, label, similarity, relation(matched is not None, new, their_new, tolerance),
                     relation(matched is not None, their_new, new, tolerance), new_share, their_new_share)


def _paragraphs_asked(matched: np.ndarray, new_shares: np.ndarray, their_new_shares: np.ndarray, owns: np.ndarray,
                      sizes: np.ndarray, tolerance: NewTextTolerance) -> np.ndarray:
    """The matched candidates whose relations their new paragraphs can move (`new_paragraphs` measures them).

    An unmatched candidate is related whatever its new paragraphs (`relation`), and so is a matched
    one whose new text exceeds the tolerance both ways without a new paragraph: a new paragraph only
    adds new text (`NewTextTolerance.exceeded_by` holds with one if it holds without). On pages of one
    topic's sentences a page has ~10 related candidates and several matches, most other text."""
    if not tolerance.min_paragraph_words:  # paragraphs are not asked
        return matched[:0]
    keep = [i for i in matched.tolist()
            if not (tolerance.exceeded_by(NewText(float(new_shares[i]), float(new_shares[i]) * float(owns[i])))
                    and tolerance.exceeded_by(NewText(float(their_new_shares[i]),
                                                      float(their_new_shares[i]) * float(sizes[i]))))]
    return np.array(keep, dtype=np.int64)


def _new_shares(columns: SignatureColumns, methods: Methods,
                mine: Mapping[int, Any]) -> tuple[np.ndarray, np.ndarray, int, np.ndarray] | None:
    """The shares of word pairs the page and each stored candidate lack of each other.

    For each stored candidate: the page's share of word pairs absent from it and its share
    absent from the page (NaN where either side has no word pairs), the page's count of pairs, and
    each candidate's; None when the new-text measure is not enabled."""
    entry = methods.get(NEW_TEXT_METHOD)
    if entry is None:
        return None
    tag, method = entry
    signature = mine.get(tag)
    count = len(columns)
    if signature is None:  # too short for a word pair: nothing to measure
        return np.full(count, np.nan), np.full(count, np.nan), 0, np.zeros(count)
    rows, theirs = columns.present(tag, np.arange(count))
    if len(rows) == count:  # the usual case: every candidate has pairs, measured in one call
        new_share, their_new_share, sizes = cast(Any, method).new_shares(signature, theirs)
        return new_share, their_new_share, int(signature.set_size), sizes
    new_share, their_new_share, sizes = np.full(count, np.nan), np.full(count, np.nan), np.zeros(count)
    if len(rows):
        new_share[rows], their_new_share[rows], sizes[rows] = cast(Any, method).new_shares(signature, theirs)
    return new_share, their_new_share, int(signature.set_size), sizes


def new_paragraphs(stored: Sequence[tuple[int, DocRecord]], columns: SignatureColumns, methods: Methods,
                   mine: Mapping[int, Any], page_site: int,
                   rows: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The words of the page's longest new paragraph to each stored candidate, and of the candidate's to the page.

    Of the candidates at `rows` only (None: all; the others read 0): `judged` asks of the matched
    ones, whose relation the new paragraphs move, a few or none of the ~50 a page on homogeneous text.

    A paragraph of one page is new to the other when none of its 4 sketch values is among the
    other's paragraphs' (`fingerprints/wordpairs.py`): an edited paragraph keeps some, new text
    none. Against a capped sketch (its paragraphs with the least first values), only paragraphs
    whose first value is within its range are judged. int64 arrays, 0 where none or not measured;
    then the place of each (the paragraphs found before it; -1: none, or not known against a
    capped sketch), where a replaced paragraph has its counterpart (`NewTextTolerance`)."""
    count = len(stored)
    mine_words, their_words = np.zeros(count, dtype=np.int64), np.zeros(count, dtype=np.int64)
    mine_place, their_place = np.full(count, -1, dtype=np.int64), np.full(count, -1, dtype=np.int64)
    if rows is not None and not len(rows):  # none asked (most pages: no candidate matched)
        return mine_words, their_words, mine_place, their_place
    entry = methods.get(NEW_TEXT_METHOD)
    signature = mine.get(entry[0]) if entry is not None else None
    paragraphs = getattr(signature, "paragraphs", None)
    if entry is None or paragraphs is None:
        return mine_words, their_words, mine_place, their_place
    tag, method = entry
    capped = bool(getattr(signature, "capped", False))
    own = (paragraph_values(paragraphs), _own_words(paragraphs), paragraph_words(paragraphs))
    column, _ = columns.column(tag)
    for i in range(count) if rows is None else rows.tolist():
        other, data = stored[i][1], column[i]
        if data is None:
            continue
        theirs_sketch, theirs_capped = cast(Any, method).paragraphs_of(data)
        theirs = (paragraph_values(theirs_sketch), _own_words(theirs_sketch), paragraph_words(theirs_sketch))
        same_site = other.site == page_site
        mine_words[i], mine_place[i] = _longest_new(own, (theirs[0], theirs[2], theirs_capped), same_site)
        their_words[i], their_place[i] = _longest_new(theirs, (own[0], own[2], capped), same_site)
        if capped or theirs_capped:  # a capped sketch's kept paragraphs do not say where the others were
            mine_place[i] = their_place[i] = -1
    return mine_words, their_words, mine_place, their_place


# a page's new paragraphs count only when at least this share of its paragraphs are found in the
# other's: where fewer are, the two extractions split the text into other lines (a layout that
# merges paragraphs), and a paragraph of one is not a line of the other though its words are there
PARAGRAPHS_FOUND = 0.6
# against a capped sketch (its longest paragraphs), a paragraph is judged only if at least this many
# words longer than the shortest kept: its counterpart, an edit a word or two shorter, was kept too
CAP_MARGIN = 3
_MAX_LENGTH = 1 << 16  # past any paragraph's length: none judged


def _own_words(paragraphs: np.ndarray) -> np.ndarray:
    """Each paragraph's words, 0 for a line its site showed before (`wordpairs.mark_shown`): not its new text."""
    return np.where(shown_before(paragraphs), 0, paragraph_words(paragraphs))


def _longest_new(page: tuple[np.ndarray, np.ndarray, np.ndarray], other: tuple[np.ndarray, np.ndarray, bool],
                 same_site: bool) -> tuple[int, int]:
    """The words of the longest of `page`'s paragraphs none of whose values are in `other`'s (0: none), and its place.

    Its place: how many of the page's judged paragraphs before it are found in the other (-1: none new).

    On another site than the other page, only a paragraph between two found ones counts: new lines
    at a copy's start or end are as likely its host's template (a newsletter blurb, a cookie notice,
    another story's teaser) as content, while on one site the template is on both pages."""
    values, words, lengths = page
    their_values, their_lengths, capped = other
    if not len(values) or not len(their_values):
        return 0, -1  # no sketch on one side (a short page, an older record): not measured
    # none of its k-th values is any of the other's k-th, for every k (a few dozen values: one comparison)
    new = ~(values[:, None, :] == their_values[None, :, :]).any(axis=(1, 2))
    if capped:  # the other kept its longest: judge the paragraphs its counterparts surely are among
        longest = their_lengths[: len(their_lengths) - TAIL]
        judged = lengths >= (int(longest.min()) if len(longest) else _MAX_LENGTH) + CAP_MARGIN
        # and the page's last paragraph (where revisions add one): the other kept its last two, so
        # the counterpart of the page's last is kept unless the other goes on 2 paragraphs further
        judged[-1] = True
        values, words, new = values[judged], words[judged], new[judged]
    if not new.any() or new.sum() > (1.0 - PARAGRAPHS_FOUND) * len(values):
        return 0, -1  # nothing new, or the two pages' lines are not alike (another layout merged them)
    found_before = np.cumsum(~new) - ~new  # of each paragraph: the found ones before it
    if not same_site:  # between the first and the last found paragraph
        found = np.flatnonzero(~new)
        new[: found[0]] = False
        new[found[-1]:] = False
        if not new.any():
            return 0, -1
    chosen = int(np.argmax(np.where(new, words, -1)))
    return int(words[chosen]), int(found_before[chosen])


# a page with fewer than this share of its match's word pairs is "much smaller" (`_in_runs`)
MUCH_SMALLER = 0.7
# the runs correction reads new pairs as scattered edits only up to this share of the page's pairs
# new (`_in_runs`): a changed word makes 2 new pairs, so 0.25 is ~12 % of the words changed, over
# twice the light edits the families hold (2-5 %); beyond, the page is other text in the same words
# (another selection of one topic's sentences, a rewrite), and its share of new pairs stands
MAX_EDITED_PAIRS = 0.25


def _in_runs(columns: SignatureColumns, methods: Methods, mine: Mapping[int, Any],
             new_share: np.ndarray, their_new_share: np.ndarray, own: int, sizes: np.ndarray,
             rows: np.ndarray) -> None:
    """The word pairs' new shares made shares of new text in runs (in place), with MinHash's.

    A changed word makes 2 new word pairs and 5 new 5-word shingles; a run of L new words, L + 1
    and L + 4. So from N2 new pairs and N5 new shingles, scattered edits e and words in runs L
    are N2 = 2e + L and N5 = 5e + L: L = (5 N2 - 2 N5) / 3, which scattered edits do not move (a
    light edit of 5 % of the words: ~0 instead of ~10 % of the pairs) and a new or replaced
    paragraph does (its words; on real prose 93-99 % of a new run's pairs are new to the match,
    86 % in Tibetan, so L reads 0.9x the run, 0.8x in Tibetan). Its error is ~1.8x the pairs'
    alone: ~0.03 for pages of like length, where this is used.

    Where one page is much smaller than the other (a part beside its view-all page, a teaser),
    the error of a share derived from a Jaccard is multiplied by (|A|+|B|)/|A|: a part of a third
    of its view-all page, fully inside it, reads ~0.08 sd new. Such a page is a verbatim extract,
    not an edit, so its share is the mean of the two estimates (~0.7x the error), not the runs'.

    Edits explain new pairs only while they are light: a page with more than `MAX_EDITED_PAIRS` of
    its pairs new keeps that share (pages of one topic's pooled sentences, a third of them shared,
    read 0.05-0.07 new in runs against 0.44-0.47 of their pairs new)."""
    entry = methods.get("minhash")
    signature = mine.get(entry[0]) if entry is not None else None
    if entry is None or signature is None or not own or not len(rows):
        return
    rows, data = columns.present(entry[0], rows[sizes[rows] > 0])
    if not len(rows):
        return
    mine5, theirs5, sizes5 = cast(Any, entry[1]).new_shares(signature, data)
    usable = ~np.isnan(mine5) & (sizes5 > 0)  # not comparable: the pairs' shares stand
    rows, mine5, theirs5, sizes5 = rows[usable], mine5[usable], theirs5[usable], sizes5[usable]
    pairs, theirs2 = new_share[rows], their_new_share[rows]
    size2, own5 = sizes[rows], float(signature.set_size)
    extract = (own < MUCH_SMALLER * size2) | (size2 < MUCH_SMALLER * own)  # a verbatim extract's sizes
    runs = np.maximum(0.0, (5 * pairs * own - 2 * mine5 * own5) / (3 * own))
    their_runs = np.maximum(0.0, (5 * theirs2 * size2 - 2 * theirs5 * sizes5) / (3 * np.maximum(size2, 1.0)))
    new_share[rows] = np.where(extract, (pairs + mine5) / 2, np.where(pairs > MAX_EDITED_PAIRS, pairs, runs))
    their_new_share[rows] = np.where(extract, (theirs2 + theirs5) / 2,
                                     np.where(theirs2 > MAX_EDITED_PAIRS, theirs2, their_runs))


def _without_shown(columns: SignatureColumns, methods: Methods, mine: Mapping[int, Any], new_share: np.ndarray,
                   own: int, rows: np.ndarray) -> np.ndarray:
    """The new shares at `rows` made shares of the page less the site's lines its match lacks (in place).

    A line two of the site's earlier pages showed (a menu, a blurb, a disclaimer the template model
    does not remove yet: `wordpairs.with_shown_lines`) is the host's, not text the page adds. Of the
    page's N new pairs (in runs), the S pairs of such lines absent from the match are taken out of
    the new text and the page: (N - S) / (own - S); lines the match holds too stay (a same-site
    light edit reads as before). S errs low (its Jaccard is clipped at 0). Returns the pairs each
    share is of (`own`, or own - S)."""
    owns = np.full(len(columns), float(own))
    entry = methods.get(NEW_TEXT_METHOD)
    signature = mine.get(entry[0]) if entry is not None else None
    shown = getattr(signature, "shown", None)
    if entry is None or shown is None or not own or not len(rows):
        return owns
    rows, data = columns.present(entry[0], rows)
    if not len(rows):
        return owns
    absent, _, _ = cast(Any, entry[1]).new_shares(shown, data)
    gone = np.minimum(absent * float(shown.set_size), new_share[rows] * own)  # shown pairs the match lacks
    usable = ~np.isnan(gone) & (own - gone > 0)
    rows, gone = rows[usable], gone[usable]
    new_share[rows] = (new_share[rows] * own - gone) / (own - gone)
    owns[rows] = own - gone
    return owns


def _own_site_other_document(page: DocRecord, other: DocRecord) -> bool:
    """Whether a stored page is of the page's own site and not another fetch of its own document.

    Whether a stored page is of the page's own site and not another fetch of its own document
    (its URL: `DocRecord.document`): the candidates the site policy and `_steered_agree` ask about."""
    return other.site == page.site and not (page.document and other.document == page.document)


def _steered_agree(page: DocRecord, methods: Methods) -> Callable[[DocRecord], bool] | None:
    """Whether a matched candidate stands, for a page whose article element held too little of its text.

    Whether a matched candidate stands, for a page whose article element held too little of its
    text (None: every one does). trafilatura's rescue then read the page, and on a short page it
    may take the site's boxes (an author's note, a show's blurb, other stories' excerpts) for the
    article: two short pages of one site come out alike, or equal, while what each holds differs.
    The element's own text (`DocRecord.steered`) says what the page holds, so an own-site
    candidate rescued too must have an element text that MinHash's own test finds near-duplicate.
    Another fetch of the page's own document is exempt, as from the site policy; so is a candidate
    whose record keeps no such text (not rescued, an element of one line, or stored before records
    kept it) or one of another length (kept with another `STEERED_VALUES`)."""
    if not page.steered or STEERED_METHOD not in methods:
        return None
    method = methods[STEERED_METHOD][1]
    mine = method.decode(page.steered)

    def agree(other: DocRecord) -> bool:
        if not other.steered or not _own_site_other_document(page, other):
            return True
        theirs = method.decode(other.steered)
        return len(theirs.values) != len(mine.values) or method.similarity(mine, theirs) is not None

    return agree


@dataclass(frozen=True)
class FoundBy:
    """What the lookup of all of a page's index keys says of its candidates.

    What the lookup of all of a page's index keys says of its candidates, for the methods any of
    whose matches share one of their keys (`FingerprintMethod.keys_find_every_match`).

    `seqs[tag]`: the candidates that method's keys found; a method with a full key among the
    page's is not there (a full key answers only its first pages). `unfiled_bounds[tag]`: the
    place among a record's sorted names below which that method's names stand (None: no bound;
    a tag not there: none of its names is ever unfiled; `signature_store.place_bounds`). A
    candidate whose first unfiled place (`DocRecord.unfiled`) is below it may not be filed under
    every key of the method: a key full when it came does not hold it, and may no longer be full
    once an expiry took some of its pages."""

    seqs: Mapping[int, set[int] | frozenset[int]]
    unfiled_bounds: Mapping[int, int | None]


_NO_PLACE = 1 << 62  # past every place: a record filed under all its keys
_NONE_UNFILED = np.full(0, _NO_PLACE, dtype=np.int64)  # `_found_members`: no candidate has an unfiled place


def _found_members(stored: Sequence[tuple[int, DocRecord]], methods: Methods,
                   found_by: FoundBy) -> dict[int, np.ndarray]:
    """By tag of each method whose keys find every match, which stored candidates can pass its test.

    By tag of each method of `found_by` whose keys find every match, which of the `stored`
    candidates can pass its test: those its keys found, and those not filed under all its keys.
    A method whose keys found every candidate rules none out and is left out."""
    seqs = [seq for seq, _ in stored]
    firsts: np.ndarray | None = None
    members = {}
    for tag, method in methods.values():
        if not method.keys_find_every_match or (found := found_by.seqs.get(tag)) is None:
            continue
        if found.issuperset(seqs):  # its keys found every candidate: it rules none out (the usual case)
            continue
        if firsts is None:  # each candidate's first unfiled place (they are ascending), at once for every method
            # (none, the usual case: every candidate filed under all its keys, none a member so far)
            firsts = (np.array([u[0] if (u := other.unfiled) else _NO_PLACE for _, other in stored], dtype=np.int64)
                      if any(other.unfiled for _, other in stored) else _NONE_UNFILED)
        bound = found_by.unfiled_bounds.get(tag, 0)
        member = (np.zeros(len(seqs), dtype=np.bool_) if firsts is _NONE_UNFILED  # _NO_PLACE is below no bound
                  else firsts < (_NO_PLACE if bound is None else bound))  # may not be filed under its keys
        if not found.isdisjoint(seqs):  # (homogeneous pages: another method's keys found them all)
            member |= np.fromiter((seq in found for seq in seqs), dtype=np.bool_, count=len(seqs))
        members[tag] = member
    return members


def possible_rules(policy: Policy, methods: Methods, members: Mapping[int, np.ndarray],
                   rows: np.ndarray | None = None) -> list[np.ndarray | None]:
    """For each rule of `policy`, which of the candidates `rows` (None: all) can satisfy it (None: any).

    Those that can pass the test of every method of the rule that `members` (`_found_members`)
    names."""
    if not members:
        return [None] * len(policy.rules)
    out: list[np.ndarray | None] = []
    for names in policy.rule_methods:
        mask = None
        for name in names:
            if (member := members.get(methods[name][0])) is not None:
                mask = member if mask is None else mask & member
        out.append(mask if mask is None or rows is None else mask[rows])
    return out


def decide(page_id: str, earlier: Sequence[Candidate]) -> Verdict:
    """The verdict from the page's linked candidates earlier in the order (none: unique)."""
    if not earlier:  # most pages of a crawl: nothing to rank
        return Verdict(page_id, "unique", page_id)
    ranked = sorted(earlier, key=lambda c: c.order)
    duplicates = [c for c in ranked if c.relation == DUPLICATE]
    superseded = [c for c in ranked if c.relation == SUPERSEDES]
    joined = duplicates or superseded
    if joined:  # the page joins the oldest of their clusters, and bridges the others
        roots = sorted({(c.root_order, c.root_id) for c in duplicates + superseded})
        cluster_id = roots[0][1]
        merged = tuple(dict.fromkeys(root for _, root in roots[1:] if root != cluster_id))
    else:
        cluster_id, merged = page_id, ()
    if duplicates:
        # the earliest of the nearest of those holding the most of the page: where an earlier copy
        # lacks a little of it (a light edit that dropped a line), the page names one that lacks nothing
        least = min(c.new_share for c in duplicates)
        holding = [c for c in duplicates if not c.new_share > least + HOLDS_AS_MUCH]
        first = _earliest_nearest(holding)
        return Verdict(page_id, "duplicate", cluster_id, first.page_id, first.similarity, first.rule, merged,
                       new_share=first.new_share)
    related = tuple(c.page_id for c in ranked if c.relation == RELATED)[:MAX_NAMED]
    supersedes = tuple(c.page_id for c in superseded[:MAX_NAMED])
    return Verdict(page_id, "unique", cluster_id, merged_clusters=merged, supersedes=supersedes, related_to=related)


def _earliest_nearest(holding: Sequence[Candidate]) -> Candidate:
    """The earliest of the candidates (in order) whose held share (`_held_share`) is within `NEAR_AS` of the highest.

    A candidate whose share is not measured (NaN) is as near as any."""
    held = [_held_share(c) for c in holding]
    measured = [h for h in held if h == h]
    if not measured:
        return holding[0]
    nearest = max(measured)
    return next(c for c, h in zip(holding, held, strict=True) if not h < nearest - NEAR_AS)


def _held_share(candidate: Candidate) -> float:
    """The estimated share of the page's text that the candidate holds, from its rule's Jaccard and its own new share.

    With J the Jaccard of the two pages' texts and t the candidate's share absent from the page:
    |P ∩ Q| = (1 - t)|Q| and J = |P ∩ Q| / (|P| + |Q| - |P ∩ Q|), so the page's share held is
    1 / (1/J - 1/(1 - t) + 1), at most 1. Unlike J, a candidate's own extra text (its template's
    leftovers, a longer extraction) does not lower it; a light edit's edits and a dropped line do.
    Measured where the rule's similarity is a Jaccard (`exact`, MinHash's); NaN elsewhere."""
    similarity, theirs = candidate.similarity, candidate.their_new_share
    if candidate.rule.partition("+")[0] not in ("exact", "minhash") or not similarity > 0.0 or not theirs < 1.0:
        return float("nan")
    inverse = 1.0 / similarity - 1.0 / (1.0 - max(theirs, 0.0)) + 1.0
    return 1.0 if inverse <= 1.0 else 1.0 / inverse
