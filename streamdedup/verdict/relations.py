"""Steps 1 to 3 of the engine, candidate by candidate: its rules verified, its new text each way, its relation.

`judged` gives, for one page, each stored candidate a rule matched or that is related to the page
(`Judged`): the rule it satisfies (`Policy.first_rules`, the tests run as a rule first needs them),
the page's and its new text (verdict/new_shares.py, verdict/new_text.py) and what each is to the
other (`relation`: DUPLICATE, SUPERSEDES or RELATED). `decide` (verdict/engine.py) makes the verdict
from them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from operator import attrgetter
from typing import Any, NamedTuple, cast

import numpy as np

from streamdedup.store.layout import DocRecord
from streamdedup.verdict.columns import MINHASH, CandidateSimilarities, Measured, Methods, SignatureColumns
from streamdedup.verdict.found_by import FoundBy, found_members_of, possible_rules
from streamdedup.verdict.new_shares import (
    NEW_TEXT_METHOD,
    in_runs,
    new_shares_of,
    other_stories_lines_shown,
    shown_pairs_lacked,
    without_shown,
)
from streamdedup.verdict.new_text import held_in_paragraphs, new_paragraphs, outside_held_paragraphs, paragraphs_asked
from streamdedup.verdict.policy import NewText, NewTextTolerance, Policy, SitePolicy

# the method whose signature of a rescued page's article element text is kept (`DocRecord.steered`),
# and how many of its minima: enough to tell element texts that share little from those that share
# most (exact Jaccard of the rescued own-site pairs of the dev sets: <= 0.4 apart, >= 0.7 alike),
# for half the bytes of a whole signature (132 bytes a rescued page)
STEERED_METHOD = "minhash"
STEERED_VALUES = 64
DUPLICATE, SUPERSEDES, RELATED = "duplicate", "supersedes", "related"
# a candidate no rule matched is related when it shares at least this share of the smaller page's
# word pairs, and that page has at least RELATED_MIN_PAIRS of them (fewer: boilerplate alone)
RELATED_SHARE = 0.5
RELATED_MIN_PAIRS = 60
# the rule of a candidate whose paragraphs hold nearly all of the page (`_held_matches`), asked of a
# candidate no rule matched whose estimate says the page has at most this share of new pairs: a page
# it contains reads under it unless 3+ standard errors off (asking at half cost the verdict step
# 8-10 % on homogeneous text, where pages share a third of their pairs, for no more matches on dev)
HELD_RULE = "paragraphs"
HELD_ASKED = 0.25
# a share of new text the paragraphs held in the match contradict moves down by at most this many
# of its standard errors (`_bounded_by_held_paragraphs`): a teaser of 0.6 of its article reads
# 0.04 sd new, and 2 sd is one read in 40 (a share as far off the text in the other direction)
HELD_ERRORS = 1.0


def relation(matched: bool, new: NewText, their_new: NewText, tolerance: NewTextTolerance) -> str:
    """What a linked candidate is to the page, from the page's side.

    DUPLICATE when a rule matched and the page's text is (nearly) all in it, SUPERSEDES when a rule
    matched and its text is (nearly) all in the page, RELATED otherwise. `new`: the page's text
    absent from the candidate; `their_new`: the candidate's absent from the page. The candidate's
    side swaps them.

    A page's new lines at a copy's edges under `EDGE_PARAGRAPH_WORDS` may be its host's (a teaser, a
    box) and do not keep it from being a duplicate; but a candidate is superseded (an indexer may
    replace it) only if its paragraphs at the edges are in the page too (`NewText.edges_counted`): a
    page published after an article, holding all of it but its 45-word last paragraph (with spam
    inside, or beside another story whole), superseded it and merged the two stories (an
    adversarial review)."""
    if matched and not tolerance.exceeded_by(new):
        return DUPLICATE
    if matched and not tolerance.exceeded_by(their_new.edges_counted()):
        return SUPERSEDES
    return RELATED


def _numbers_of_an_earlier_fetch(page: DocRecord, other: DocRecord) -> bool:
    """Whether `other` is an earlier fetch of the page's own URL, whose numbers the page's replace.

    A number replaced (`NewText.numbers_changed`) is new text both ways, so that neither page is
    the other's duplicate nor replaces it. Between two fetches of one URL the later is what the URL
    says now: a fact corrected there, or a counter or a time in a line of 12+ words ("read 1,234
    times", "updated 10:30 GMT", "3 hours ago", "There are 12 comments ..."), which changes at each
    re-crawl. The later fetch then supersedes the earlier (one story: a hostile review's re-crawls
    of that kind were new stories, 29 of 39) and is still not its duplicate (a correction is kept).
    No one else can publish at a site's URL; a fetch that arrives after a later one of its URL keeps
    the rule both ways."""
    return bool(page.document) and page.document == other.document and other.event_ms < page.event_ms


class Judged(NamedTuple):
    """A candidate linked to the page.

    The rule it matched ("" if none), the rule's similarity, its relation to the page and the page's
    to it (`relation`), the page's share of text absent from it and its share absent from the
    page (NaN: not measured), and the words of the page's longest paragraph absent from it and of
    its longest absent from the page, as counted (`new_text.new_paragraphs`; 0: none, or not
    measured). Among duplicates a paragraph absent is under `min_paragraph_words`, or the match
    would not be one: a short line the candidate lacks (`decide`)."""

    seq: int
    doc: DocRecord
    rule: str
    similarity: float
    relation: str
    their_relation: str
    new_share: float
    their_new_share: float
    new_paragraph: int = 0
    their_new_paragraph: int = 0


def judged(seqs: Sequence[int], docs_of: Callable[[Sequence[int]], Sequence[DocRecord | None]], policy: SitePolicy,
           methods: Methods, page: DocRecord, mine: Mapping[int, Any],
           template_known: bool, oldest_ms: int | None, found_by: FoundBy | None = None,
           tests: Counter[str] | None = None, measured: Measured | None = None) -> Iterator[Judged]:
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
    (`tests_run`: one a candidate and method or measure asked). `measured`: MinHash's test and the new
    shares the candidate filter ran already on `seqs` (`Measured`), neither run nor counted again."""
    page_id = page.page_id
    docs = docs_of(seqs)
    if (docs and all(docs) and page_id not in map(_PAGE_ID, docs)  # the usual case: every one stands
            and (oldest_ms is None or min(map(_EVENT_MS, docs)) >= oldest_ms)):  # (tested in C: map, all, in)
        stored_seqs, stored_docs = seqs, cast("Sequence[DocRecord]", docs)
        stored: list[tuple[int, DocRecord]] | None = None  # made if any is judged (most pages: none)
    else:
        kept = [i for i, other in enumerate(docs) if other is not None
                and other.page_id != page_id and (oldest_ms is None or other.event_ms >= oldest_ms)]
        if not kept:
            return
        stored = [(seqs[i], cast(DocRecord, docs[i])) for i in kept]
        stored_seqs, stored_docs = [seq for seq, _ in stored], [other for _, other in stored]
        if measured is not None and len(kept) < len(seqs):
            measured = measured.take(np.asarray(kept, dtype=np.int64))
    verdicts: dict[int, tuple[str, float]] = {}  # by row of `stored`: the rule it satisfies
    # the candidates of each policy (None: all of them, as a rule: only the site policy's differ)
    groups: list[tuple[Policy, np.ndarray | None]] = [(policy.other_site, None)]
    if not template_known and policy.same_site != policy.other_site:  # candidates of the page's site: the site policy
        strict = _own_site_other_documents(page, stored_docs)
        if strict.all():
            groups = [(policy.same_site, None)]
        elif strict.any():
            groups = [(policy.other_site, np.flatnonzero(~strict)), (policy.same_site, np.flatnonzero(strict))]
    members = found_members_of(stored_seqs, stored_docs, methods, found_by) if found_by is not None else {}
    columns = SignatureColumns(list(map(_SIGNATURES, stored_docs)))
    for chosen, rows in groups:
        theirs = columns if rows is None else SignatureColumns(list(map(columns.records.__getitem__, rows.tolist())))
        similarities = CandidateSimilarities(methods, mine, theirs, tests)
        if measured is not None:
            similarities.known(MINHASH, *((measured.similarity, measured.tested) if rows is None
                                          else (measured.similarity[rows], measured.tested[rows])))
        numbers = chosen.first_rules(similarities, len(theirs), possible_rules(chosen, methods, members, rows))
        for j in np.flatnonzero(numbers >= 0).tolist():
            rule = chosen.rules[numbers[j]]
            row = j if rows is None else int(rows[j])
            verdicts[row] = ("+".join(m for m, _ in rule), similarities.value(rule[0][0], j))
    agree = _steered_agree(page, methods)
    shares = new_shares_of(columns, methods, mine, measured)
    if shares is None:  # no measure of new text: every match is a duplicate, as before directions
        stored = stored or list(zip(stored_seqs, stored_docs, strict=True))
        for i in sorted(verdicts):
            seq, other = stored[i]
            if agree is None or agree(other):
                yield Judged(seq, other, verdicts[i][0], verdicts[i][1], DUPLICATE, DUPLICATE, 0.0, 0.0)
        return
    new_shares, their_new_shares, own, sizes = shares
    # the candidates the stricter site policy judges (None: none), which a held match does not judge
    strict_rows = (groups[-1][1] if len(groups) > 1
                   else None if groups[0][0] is policy.other_site else np.arange(len(stored_docs)))
    for i, held in _held_matches(columns, methods, mine, verdicts, new_shares, own, sizes, strict_rows,
                                 policy.tolerance):
        verdicts[i] = (HELD_RULE, held)
    # the candidates related to the page though no rule matched them (the steps below change matched
    # candidates' shares only, so this holds after them too)
    related = _related(new_shares, their_new_shares, own, sizes)
    if not verdicts and not related.any():
        return  # nothing matched nor related (most pages of shared vocabulary): the steps below change nothing
    stored = stored or list(zip(stored_seqs, stored_docs, strict=True))
    matched_rows = np.fromiter(sorted(verdicts), dtype=np.int64, count=len(verdicts))
    # the page's lines of another story's page: that page neither matched nor related (fingerprints/one_page_lines.py)
    mine = other_stories_lines_shown(methods, mine, page, [stored_docs[i] for i in np.flatnonzero(related).tolist()
                                                           + matched_rows.tolist()])
    shown = shown_pairs_lacked(columns, methods, mine, matched_rows) if own else None
    in_runs(columns, methods, mine, new_shares, their_new_shares, own, sizes, matched_rows, shown)
    owns = without_shown(new_shares, own, matched_rows, shown)
    _bounded_by_held_paragraphs(columns, methods, mine, new_shares, their_new_shares, own, owns, sizes,
                                matched_rows, policy.tolerance.max_share)
    related[matched_rows] = True
    judged_rows = np.flatnonzero(related)
    tolerance = policy.tolerance
    asked = paragraphs_asked(matched_rows, new_shares, their_new_shares, owns, sizes, tolerance)
    paragraph, their_paragraph, replaced, edge, their_edge, changed, inserted, their_inserted = new_paragraphs(
        stored, columns, methods, mine, page.site, asked)
    # the arrays as Python numbers (the same values): read one by one below, numpy's scalars cost more
    new_list, their_new_list = new_shares.tolist(), their_new_shares.tolist()
    owns_list, sizes_list = owns.tolist(), sizes.tolist()
    paragraph_list, their_paragraph_list = paragraph.tolist(), their_paragraph.tolist()
    replaced_list, edge_list, their_edge_list = replaced.tolist(), edge.tolist(), their_edge.tolist()
    changed_list, inserted_list, their_inserted_list = changed.tolist(), inserted.tolist(), their_inserted.tolist()
    for i in judged_rows.tolist():  # in the order of `seqs`
        seq, other = stored[i]
        if agree is not None and not agree(other):
            continue
        matched = verdicts.get(i)
        new_share, their_new_share = new_list[i], their_new_list[i]
        if matched is None:  # related only (no rule matched): RELATED both ways (`relation`), whatever its new text
            yield Judged(seq, other, "", _NAN, RELATED, RELATED, new_share, their_new_share, paragraph_list[i],
                         their_paragraph_list[i])
            continue
        exact = matched[0] == "exact"
        if exact:  # the same text: nothing new either way
            new_share = their_new_share = 0.0
        label, similarity = matched
        # a number changed is new both ways: each page states one the other does not; but an earlier
        # fetch of the page's own URL states nothing the page must keep (`_numbers_of_an_earlier_fetch`)
        figures = not exact and bool(changed_list[i])
        new = NewText(new_share, new_share * owns_list[i], 0 if exact else paragraph_list[i], replaced_list[i],
                      0 if exact else edge_list[i], figures, not exact and inserted_list[i])
        their_new = NewText(their_new_share, their_new_share * sizes_list[i], 0 if exact else their_paragraph_list[i],
                            replaced_list[i], 0 if exact else their_edge_list[i],
                            figures and not _numbers_of_an_earlier_fetch(page, other),
                            not exact and their_inserted_list[i])
        yield Judged(seq, other, label, similarity, relation(True, new, their_new, tolerance),
                     relation(True, their_new, new, tolerance), new_share, their_new_share,
                     new.paragraph, their_new.paragraph)


def _related(new_shares: np.ndarray, their_new_shares: np.ndarray, own: int, sizes: np.ndarray) -> np.ndarray:
    """Which candidates are related to the page if no rule matched them: sharing half of the smaller page's pairs.

    And the smaller page's pairs are more than boilerplate (`RELATED_MIN_PAIRS`). NaN, not measured,
    compares false: numpy warns of none of these operations. The steps after the rules change the
    shares of matched candidates only, so this is the same before them as after for the others."""
    return np.asarray((np.minimum(sizes, own) >= RELATED_MIN_PAIRS)
                      & (1.0 - np.fmin(new_shares, their_new_shares) >= RELATED_SHARE))


def _held_matches(columns: SignatureColumns, methods: Methods, mine: Mapping[int, Any],
                  verdicts: Mapping[int, tuple[str, float]], new_shares: np.ndarray, own: int, sizes: np.ndarray,
                  strict: np.ndarray | None, tolerance: NewTextTolerance) -> list[tuple[int, float]]:
    """The candidates no rule matched whose paragraphs hold nearly all of the page: a contained page's match.

    The page's paragraphs that the candidate holds nearly verbatim (`held_in_paragraphs`) are all of
    its own text but `tolerance.max_share`, and at least `RELATED_MIN_PAIRS` pairs (more than
    boilerplate): its text is in the candidate, whatever the MinHash estimates of a page much
    smaller than its match say. Asked only of larger candidates whose estimate of the page's new
    pairs is under `HELD_ASKED`, and not of those the stricter site policy judges (`strict`). Each with the
    share of the page it holds."""
    if not own:
        return []
    asked = new_shares <= HELD_ASKED  # (NaN compares false, without a warning)
    if verdicts:
        asked[list(verdicts)] = False
    if strict is not None:
        asked[strict] = False
    rows = np.flatnonzero(asked & (sizes > own))
    if not len(rows):
        return []
    held = held_in_paragraphs(columns, methods, mine, own, rows)
    out = []
    for i in rows.tolist():
        if held[i] >= RELATED_MIN_PAIRS and own - held[i] <= tolerance.max_share * own:
            out.append((i, round(float(held[i]) / own, 4)))
    return out


def _bounded_by_held_paragraphs(columns: SignatureColumns, methods: Methods, mine: Mapping[int, Any],
                                new_shares: np.ndarray, their_new_shares: np.ndarray, own: int, owns: np.ndarray,
                                sizes: np.ndarray, matched: np.ndarray, max_share: float) -> None:
    """The matched candidates' new shares, each way, cut to what lies outside the paragraphs the other holds (in place).

    Only where a share exceeds `max_share` (elsewhere no relation can move), and by at most
    `HELD_ERRORS` of its standard errors (`WordPairsMethod.new_share_errors`): the estimate's error,
    not the text, put it there when the pages' paragraphs say otherwise (`outside_held_paragraphs`)."""
    with np.errstate(invalid="ignore"):
        rows = matched[(new_shares[matched] > max_share) | (their_new_shares[matched] > max_share)]
    if not len(rows):
        return
    mine_out, their_out = outside_held_paragraphs(columns, methods, mine, own, sizes, rows)
    estimator = cast(Any, methods[NEW_TEXT_METHOD][1])  # present: the shares were measured
    for shares, out, of, other in ((new_shares, mine_out, owns, sizes), (their_new_shares, their_out, sizes, owns)):
        with np.errstate(invalid="ignore", divide="ignore"):
            cut = np.flatnonzero((out < shares * of) & (of > 0))
        if len(cut):
            lowest = shares[cut] - HELD_ERRORS * estimator.new_share_errors(shares[cut], of[cut], other[cut])
            shares[cut] = np.maximum(out[cut] / of[cut], lowest)


def _own_site_other_document(page: DocRecord, other: DocRecord) -> bool:
    """Whether a stored page is of the page's own site and not another fetch of its own document.

    Its own document: its URL (`DocRecord.document`). These are the candidates the site policy and
    `_steered_agree` ask about."""
    return other.site == page.site and not (page.document and other.document == page.document)


def _own_site_other_documents(page: DocRecord, others: Sequence[DocRecord]) -> np.ndarray:
    """`_own_site_other_document` of each of `others`, as a bool array: their sites and documents compared at once."""
    count = len(others)
    strict = np.fromiter(map(_SITE, others), dtype=np.uint64, count=count) == np.uint64(page.site)
    if page.document:
        strict &= np.fromiter(map(_DOCUMENT, others), dtype=np.uint64, count=count) != np.uint64(page.document)
    return strict


def _steered_agree(page: DocRecord, methods: Methods) -> Callable[[DocRecord], bool] | None:
    """Whether a matched candidate stands, for a page whose article element held too little of its text.

    None: every one does. trafilatura's rescue then read the page, and on a short page it may take the site's
    boxes (an author's note, a show's blurb, other stories' excerpts) for the article: two short pages of one
    site come out alike, or equal, while what each holds differs. The element's own text (`DocRecord.steered`)
    says what the page holds, so an own-site candidate rescued too must have an element text that MinHash's
    own test finds near-duplicate. Another fetch of the page's own document is exempt, as from the site
    policy; so is a candidate whose record keeps no such text (not rescued, an element of one line, or stored
    before records kept it) or one of another length (kept with another `STEERED_VALUES`)."""
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


# a record's fields, read by `map` over a page's candidates (at C speed, where a list comprehension is Python's)
_PAGE_ID, _EVENT_MS, _SIGNATURES, _UNFILED, _SITE, _DOCUMENT = (
    attrgetter(name) for name in ("page_id", "event_ms", "signatures", "unfiled", "site", "document"))
_NAN = float("nan")  # a related candidate's similarity: no rule matched it
