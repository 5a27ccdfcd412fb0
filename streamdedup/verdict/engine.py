"""The one decision engine: verified candidates + policy -> verdict. Pure; every mode calls it.

File mode, the local topology and the Faust app judge a page against one store; the global
topology judges it in every index partition its keys live in and gathers the answers by page id.
Both go through the same three steps here, so `streamdedup eval` measures what the Kafka worker does:

1. `CandidateSimilarities`: a candidate (a page sharing any index key) is verified by whichever
   methods the policy's rules ask for, not only by the method whose key brought it: "simhash+a12"
   needs both, wherever the candidate came from. Each test runs when a rule first needs it, in rule
   order, for all of a page's candidates that still need it at once (one array operation); a test
   that cannot pass, for a candidate no key of its method found, is not run (`FoundBy`).
2. `Policy.first_rules`: the first rule each candidate satisfies (own-site candidates by the site
   policy) -> a `Candidate`, with its place in the order and the cluster it belongs to.
3. `decide`: the earliest candidate in the order is what the page duplicates; the page joins the
   oldest cluster among its candidates' clusters (the earliest root), and names the others it
   bridges (`merged_clusters`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from streamdedup.fingerprints.base import FingerprintMethod
from streamdedup.store.layout import DocRecord
from streamdedup.verdict.contract import Verdict
from streamdedup.verdict.policy import Policy, SitePolicy

Methods = Mapping[str, tuple[int, FingerprintMethod[Any, Any]]]  # name -> (tag, method)
# the method whose signature of a rescued page's article element text is kept (`DocRecord.steered`),
# and how many of its minima: enough to tell element texts that share little from those that share
# most (exact Jaccard of the rescued own-site pairs of the dev sets: <= 0.4 apart, >= 0.7 alike),
# for half the bytes of a whole signature (132 bytes a rescued page)
STEERED_METHOD = "minhash"
STEERED_VALUES = 64


@dataclass(frozen=True)
class Candidate:
    """An earlier page that passed the policy against the page being judged.

    `order` is the candidate's place in the order every mode agrees on (file mode: its sequence
    number; the global topology: its global order bytes); `root_order`/`root_id` name the first
    page of the cluster it belongs to."""

    order: Any  # int or bytes: comparable within one run
    page_id: str
    rule: str
    similarity: float
    root_order: Any
    root_id: str


class CandidateSimilarities:
    """Each method's verdict on a page's candidates, computed when the policy first asks for it
    (then kept), for the candidates asked about, in one vectorised call per method
    (`FingerprintMethod.similarities`): `mine` are the page's signatures by method tag, `theirs`
    each candidate's encoded ones. NaN where a method abstains on either page or finds no match."""

    __slots__ = ("_asked", "_values", "methods", "mine", "tests", "theirs")

    def __init__(self, methods: Methods, mine: Mapping[int, Any], theirs: Sequence[Mapping[int, bytes]],
                 tests: Counter[str] | None = None) -> None:
        self.methods, self.mine, self.theirs = methods, mine, theirs
        self.tests = tests  # counts the tests asked ("tests_run"), one a candidate and measure
        self._values: dict[str, np.ndarray] = {}
        self._asked: dict[str, np.ndarray | None] = {}  # None: every candidate asked

    def __call__(self, name: str, rows: np.ndarray) -> np.ndarray:
        values = self._values.get(name)
        count = len(self.theirs)
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
            theirs, have = self.theirs, todo
            got = ([their.get(tag) for their in theirs] if len(todo) == count
                   else [theirs[i].get(tag) for i in todo.tolist()])
            if None in got:  # candidates the method abstained on: no match
                have = todo[np.fromiter((d is not None for d in got), dtype=bool, count=len(got))]
                data = [d for d in got if d is not None]
            else:
                data = cast("list[bytes]", got)
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
           tests: Counter[str] | None = None) -> Iterator[tuple[int, DocRecord, tuple[str, float]]]:
    """Steps 1 and 2 for one page (`page`: its id, site; `mine`: its signatures by tag): each stored
    candidate, other than the page itself and inside the retention window, with the rule it
    satisfies, in the order of `seqs`. Own-site candidates meet the stricter site policy only while
    the site's template is unknown (its cold start), and not then if they are another fetch of the
    page's own document (its URL: `DocRecord.document`), which no template can make look alike.
    The candidates of each policy are verified together, rule by rule (`Policy.first_rules`); an
    own-site match of two rescued pages stands only if their article elements agree (`_steered_agree`).

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
    if not template_known:  # candidates of the page's site meet the site policy
        strict = np.array([_own_site_other_document(page, other) for _, other in stored], dtype=np.bool_)
        if strict.all():
            groups = [(policy.same_site, None)]
        elif strict.any():
            groups = [(policy.other_site, np.flatnonzero(~strict)), (policy.same_site, np.flatnonzero(strict))]
    members = _found_members(stored, methods, found_by) if found_by is not None else {}
    for chosen, rows in groups:
        theirs = ([other.signatures for _, other in stored] if rows is None
                  else [stored[i][1].signatures for i in rows.tolist()])
        similarities = CandidateSimilarities(methods, mine, theirs, tests)
        numbers = chosen.first_rules(similarities, len(theirs), possible_rules(chosen, methods, members, rows))
        for j in np.flatnonzero(numbers >= 0).tolist():
            rule = chosen.rules[numbers[j]]
            row = j if rows is None else int(rows[j])
            verdicts[row] = ("+".join(m for m, _ in rule), similarities.value(rule[0][0], j))
    agree = _steered_agree(page, methods)
    for i in sorted(verdicts):  # in the order of `seqs`
        seq, other = stored[i]
        if agree is None or agree(other):
            yield seq, other, verdicts[i]


def _own_site_other_document(page: DocRecord, other: DocRecord) -> bool:
    """Whether a stored page is of the page's own site and not another fetch of its own document
    (its URL: `DocRecord.document`): the candidates the site policy and `_steered_agree` ask about."""
    return other.site == page.site and not (page.document and other.document == page.document)


def _steered_agree(page: DocRecord, methods: Methods) -> Callable[[DocRecord], bool] | None:
    """Whether a matched candidate stands, for a page whose article element held too little of its
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
    """What the lookup of all of a page's index keys says of its candidates, for the methods any of
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


def _found_members(stored: Sequence[tuple[int, DocRecord]], methods: Methods,
                   found_by: FoundBy) -> dict[int, np.ndarray]:
    """By tag of each method of `found_by` whose keys find every match, which of the `stored`
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
            firsts = np.array([u[0] if (u := other.unfiled) else _NO_PLACE for _, other in stored], dtype=np.int64)
        bound = found_by.unfiled_bounds.get(tag, 0)
        member = firsts < (_NO_PLACE if bound is None else bound)  # may not be filed under its keys
        if not found.isdisjoint(seqs):  # (homogeneous pages: another method's keys found them all)
            member |= np.fromiter((seq in found for seq in seqs), dtype=np.bool_, count=len(seqs))
        members[tag] = member
    return members


def possible_rules(policy: Policy, methods: Methods, members: Mapping[int, np.ndarray],
                   rows: np.ndarray | None = None) -> list[np.ndarray | None]:
    """For each rule of `policy`, which of the candidates `rows` (None: all) can satisfy it (None:
    any): those that can pass the test of every method of the rule that `members` (`_found_members`) names."""
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
    """The verdict from the page's candidates earlier in the order (none: unique)."""
    if not earlier:  # most pages of a crawl: nothing to rank
        return Verdict(page_id, "unique", page_id)
    ranked = sorted(earlier, key=lambda c: c.order)
    first = ranked[0]
    roots = sorted({(c.root_order, c.root_id) for c in ranked})
    cluster_id = roots[0][1]
    merged = tuple(dict.fromkeys(root for _, root in roots[1:] if root != cluster_id))
    return Verdict(page_id, "duplicate", cluster_id, first.page_id, first.similarity, first.rule, merged)
