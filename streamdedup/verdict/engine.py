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
   (`fingerprints/wordpairs.py`, `in_runs`), less the lines its site's earlier pages showed that
   the candidate lacks (`without_shown`), is within the tolerance (`NewTextTolerance`).
   A match whose own text is (nearly) all in the page is one the page *supersedes* (the view-all
   page after its part); any other match, or a candidate sharing at least half of the smaller
   page's pairs, is *related* (a follow-up reusing an opening, an article with paragraphs replaced).
4. `decide`: of the duplicate candidates that hold (about) the most of the page, and of those the
   ones lacking none of its paragraphs if any do, the earliest of the nearest (`NEAR_AS`) is what
   it duplicates; the page joins the oldest cluster among its duplicate and superseded candidates'
   clusters (the earliest root) and names the others it bridges (`merged_clusters`): of several, only
   its duplicates' and its parts' (`joined_roots`: a digest of whole stories bridges none, nor does a
   later copy of one of them bridge the digest's, of which it is under half: `bridges`). A page
   with no duplicate candidate is unique; it joins the cluster of what it supersedes, and names the
   earlier pages it is related to (their ids, the same in every mode: a page's cluster as an index
   partition knows it may be stale). A page whose
   main text was cut (`max_text_chars`) is a duplicate only of a copy of its whole text: what lies
   past the cut was never compared, so another candidate holding all the rest is only related to it
   (`as_cut`), and its verdict says so.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, replace
from operator import attrgetter
from typing import Any, NamedTuple, cast

import numpy as np

from streamdedup.store.layout import DocRecord
from streamdedup.verdict.columns import MINHASH, CandidateSimilarities, Measured, Methods, SignatureColumns
from streamdedup.verdict.contract import Verdict
from streamdedup.verdict.found_by import FoundBy, found_members_of, possible_rules
from streamdedup.verdict.new_text import (
    NEW_TEXT_METHOD,
    held_in_paragraphs,
    in_runs,
    new_paragraphs,
    new_shares_of,
    outside_held_paragraphs,
    paragraphs_asked,
    without_shown,
)
from streamdedup.verdict.policy import NewText, NewTextTolerance, Policy, SitePolicy

# the method whose signature of a rescued page's article element text is kept (`DocRecord.steered`),
# and how many of its minima: enough to tell element texts that share little from those that share
# most (exact Jaccard of the rescued own-site pairs of the dev sets: <= 0.4 apart, >= 0.7 alike),
# for half the bytes of a whole signature (132 bytes a rescued page)
STEERED_METHOD = "minhash"
STEERED_VALUES = 64
DUPLICATE, SUPERSEDES, RELATED = "duplicate", "supersedes", "related"
# the engine's fixed rules (the constants below and how `decide` uses them): a change that can move
# a verdict bumps it, so that workers of two versions in one group are told (`verdict_settings`).
# 2: edits explain new pairs only up to MAX_EDITED_PAIRS; a new paragraph is new text
# 3: a short paragraph in the place of another is new text (`NewTextTolerance.exceeded_by`)
# 4: lines two of the site's earlier pages showed, which the match lacks, are no new text (`without_shown`)
# 5: of the duplicates holding as much of the page, the earliest of the nearest is named (NEAR_AS)
# 6: new lines at a cross-site copy's start or end count where they took the place of its match's one paragraph there
# 7: a paragraph's counterpart agrees in 3 of 4 values, or in 1 in its place; up to 127 paragraphs sketched
# 8: a share of new text moves down to what lies outside the paragraphs the other holds, within its
#    error; any new paragraph in the place of one of the other's is new text, not only the longest
# 9: ... also between two pages of one site whose sketches are both capped (127+ paragraphs)
#    a new paragraph of 100+ words at a copy's start or end counts on another site too
# 10: a match in a paragraph's place holds it only if no more than 20 words shorter (`_absent_from`)
# 11: (global topology) a page filed at an index partition before an earlier one arrived is judged
#     with it as the page, as it is when it comes last (`IndexPartition._judged_as_the_later`)
# 12: a page whose main text was cut (`max_text_chars`) is no duplicate, only related (`as_cut`)
# 13: a cut page is the duplicate of an earlier one with the same whole text (`exact`: `Texts.main_hash`)
# 14: every paragraph inside a copy on another site is judged, not only its 16 longest (`new_paragraphs`),
#     past them one in the place of the other's of about its length as its edit (`edits_past_longest`);
#     Arabic-script, Greek and Turkish texts folded (clean/normalize.py: their fingerprints moved);
#     a paragraph's words are its word-equivalents (`wordpairs.letter_units`: Korean, Malayalam, ...)
# 15: of the copies holding as much of a page, one lacking none of its paragraphs is named (`decide`)
# 16: a paragraph stating other numbers than its counterpart (as many) is new text (`new_text.numbers_changed`)
# 17: a new line at a copy's edge on another site counts at any length where it sits in the page's
#     article block (`clean.article_block`); a host's lines sit outside it (`line_places.counted_new`)
# 18: a new line of 15+ words inside a copy, where the other page has none it lacks, is new text
#     (`line_places.inserted_line`: an article crawled after a light edit that dropped one of its lines)
# 19: a line outside the article block, after the page's first <h1> and before the block, sharing a
#     word with the title before it, is the article's lead: marked as in the block (`article_block._leads`)
# 20: a page bridges what it supersedes only as its parts' clusters (`joined_roots`): a digest bridges none
# 21: a duplicate that is most of one of the pages holding it bridges the cluster of a page of another site
#     holding it only where it is most of that page too (`MOST_OF`: not a digest's story); it joins the
#     cluster of the page it names (`named_duplicate`)
# 22: a block of short lines (a list, a table's rows: `WordPairsParams.line_blocks`) inside a copy that the
#     other page lacks, with nothing of the other's in its place, is a new paragraph (`line_places.inserted_block`)
# 23: a paragraph with no counterpart of 3 values has one in the only paragraph of the other's in its
#     place sharing 2 and as many words, for its numbers (`new_text.numbers_changed`: a number corrected)
# 24: a line is located in the block whose text holds it where several runs of the page start as it does
#     (`article_block._holding`: a title of the lead's opening words no longer puts the lead outside the block)
# 25: a block of short lines states other numbers than its counterpart block, as many and as long, dates
#     and times left out (`new_text.block_numbers_changed`: a table's score replaced)
# 26: another site's page holds a paragraph only where it shows it as a line: against its capped sketch
#     every paragraph is judged, and where its lines are not alike, it has a line longer than most of the
#     page's (or its cap left them out), the page's absent ones count (`line_places.SHOWN_EACH`); an
#     author's host on a platform the Public Suffix List lacks is a site (`record.page.USER_HOSTED`)
# 27: a block of short lines that a block of the other agrees with in 3 of 4 values is held text, as a
#     paragraph is (`new_text.outside_held_paragraphs`): a teaser of an article with a list is bounded by
#     its own new lines; a block not held is outside paragraphs, as before
# 28: a page over whole pages of clusters a page merged before (one story: `Candidate.story_id`) joins the
#     oldest, bridging none, where it read as a digest of two stories (`joined_roots`)
RULES_VERSION = 28
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
# at most this many ids in `supersedes` and `related_to` (the earliest): a verdict stays small
MAX_NAMED = 8
# a page that is most of a page holding it (under this share of that page's text absent from it) bridges
# the cluster of another site's page holding it only where it is most of that one too (`bridges`). Of a
# digest's stories at most one is most of it, so copies of its stories after it cannot merge two of them
MOST_OF = 0.5


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
    new_paragraph: int = 0  # the words of the page's longest paragraph absent from the candidate (`Judged`)
    same_site: bool = False  # a page of the page's own site (`DocRecord.site`: its registrable domain)
    story_id: str = ""  # its cluster's story after the merges known (`StoreBatch.story_of`); "": `root_id`


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
    in_runs(columns, methods, mine, new_shares, their_new_shares, own, sizes, matched_rows)
    owns = without_shown(columns, methods, mine, new_shares, own, matched_rows)
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


def as_cut(relation: str, rule: str) -> str:
    """A candidate's relation to a page whose main text was cut (`Texts.main_cut`): DUPLICATE by `exact` alone.

    The page's text past `max_text_chars` was never compared, so a candidate holding all the rest
    may lack it: dropping the page could lose text. It is RELATED instead (the page starts its own
    cluster); what the page supersedes stands, its text being all in the part compared. A cut page's
    exact signature is its whole text's hash (`Texts.main_hash`): an `exact` match is a whole copy."""
    return RELATED if relation == DUPLICATE and rule != "exact" else relation


def decide(page_id: str, earlier: Sequence[Candidate], text_cut: bool = False,
           stale: AbstractSet[str] = frozenset()) -> Verdict:
    """The verdict from the page's linked candidates earlier in the order (none: unique).

    `text_cut`: the page's main text was cut: it duplicates only a whole copy (`as_cut`), and its verdict says
    it was cut. `stale`: clusters (root ids) only guessed (`joined_roots`; file mode: none)."""
    if not earlier:  # most pages of a crawl: nothing to rank
        return Verdict(page_id, "unique", page_id, text_cut=text_cut)
    if text_cut:
        earlier = [replace(c, relation=as_cut(c.relation, c.rule)) for c in earlier]
    ranked = sorted(earlier, key=lambda c: c.order)
    duplicates = [c for c in ranked if c.relation == DUPLICATE]
    superseded = [c for c in ranked if c.relation == SUPERSEDES]
    first = named_duplicate(duplicates)
    roots = joined_roots(duplicates + superseded, first, stale)
    if roots:  # the page joins the oldest of their clusters, and bridges the others
        cluster_id = roots[0][1]
        merged = tuple(dict.fromkeys(root for _, root in roots[1:] if root != cluster_id))
    else:  # nothing joined, or whole stories it may not bridge (a digest): a cluster of its own
        cluster_id, merged = page_id, ()
    if first is not None:
        return Verdict(page_id, "duplicate", cluster_id, first.page_id, first.similarity, first.rule, merged,
                       new_share=first.new_share, text_cut=text_cut)
    related = tuple(c.page_id for c in ranked if c.relation == RELATED)[:MAX_NAMED]
    supersedes = tuple(c.page_id for c in superseded[:MAX_NAMED])
    return Verdict(page_id, "unique", cluster_id, merged_clusters=merged, supersedes=supersedes, related_to=related,
                   text_cut=text_cut)


def named_duplicate(duplicates: Sequence[Candidate]) -> Candidate | None:
    """The duplicate candidate a page names (`duplicate_of`), of `duplicates` in order; None if there is none.

    The earliest of the nearest of those holding the most of the page: where an earlier copy lacks a
    little of it (a light edit that dropped a line), the page names one that lacks nothing."""
    if not duplicates:
        return None
    least = min(c.new_share for c in duplicates)
    return _earliest_nearest(_lacking_no_paragraph([c for c in duplicates if not c.new_share > least + HOLDS_AS_MUCH]))


def joined_roots(joins: Sequence[Candidate], named: Candidate | None = None,
                 stale: AbstractSet[str] = frozenset()) -> list[tuple[Any, str]]:
    """The clusters a page joins (its DUPLICATE and SUPERSEDES `joins`'), as (root order, root id), the oldest first.

    Their clusters where they are one; else those it may bridge (`bridges`) and the cluster of the
    duplicate it names (`named`, whose story it is in). A page holding whole stories of other sites
    (a digest, anyone's to publish) bridges none: it joins its duplicates' and parts' clusters, and
    with none starts its own (unique, its `supersedes` naming them all). Nor does a later copy of one
    of those stories bridge the digest's cluster and its story's: it is most of its story's page,
    and under half of the digest's (`bridges`).

    `stale`: roots known only as a guess (the global topology: an index partition's, which did not
    see the match's own matches; file mode has none). A stale cluster is never bridged (a merge may
    be missed, never made up); where the page would start its own cluster and one of the clusters is
    stale (a copy filed before its story's page reached that partition names itself, so they may be
    one story), it joins the oldest, as where they are one, and bridges none; so it does where they are
    one story (`Candidate.story_id`: clusters a page merged before), not a digest of several."""
    roots = sorted({(c.root_order, c.root_id) for c in joins})
    if len(roots) <= 1:
        return roots
    fragment = not any(c.relation == DUPLICATE and not c.their_new_share >= MOST_OF for c in joins)
    bridged = {c.root_id for c in joins if bridges(c.relation, c.same_site, c.page_id, c.root_id, c.their_new_share,
                                                   fragment)}
    if named is not None:
        bridged.add(named.root_id)
    kept = [root for root in roots if root[1] in bridged]
    if not kept:
        one_story = len({c.story_id or c.root_id for c in joins}) == 1  # merged before: not a digest
        return roots[:1] if one_story or any(root_id in stale for _, root_id in roots) else []
    return kept[:1] + [root for root in kept[1:] if root[1] not in stale]


def bridges(relation: str, same_site: bool, page_id: str, root_id: str, their_new_share: float = 0.0,
            fragment: bool = False) -> bool:
    """Whether a page may bridge a candidate's cluster and another: its story's page, or its part.

    A duplicate (the page is (nearly) all in the candidate) is its story's page where the page is
    most of it (`their_new_share`, its text absent from the page, under `MOST_OF`: a copy, a lightly
    edited or longer version), where it is of the page's own site (its view-all page, another fetch
    of its URL), or where the page is a `fragment`: most of none of its duplicates (a teaser, a part,
    whose story's pages all hold it beside more). Otherwise a page of another site holding it beside
    as much text of its own or more, while another page is the page's story, is a digest or a
    follow-up, judged against that story when it came and kept apart if it holds another too: a
    copy of each of a digest's stories after it bridged their clusters and the digest's, merging the
    stories rule 20 kept apart. A part: a page of its own site that it supersedes, the first of its
    cluster (`root_id` is its `page_id`), as `?page=1` before its view-all page. Pagination is a
    site's own; a story copied onto the digest's site is in the cluster the story's own page started."""
    if relation == DUPLICATE:
        return same_site or fragment or not their_new_share >= MOST_OF
    return relation == SUPERSEDES and same_site and root_id == page_id


def _lacking_no_paragraph(holding: list[Candidate]) -> list[Candidate]:
    """Of the candidates holding as much of the page, those that lack none of its paragraphs, if any do; else all.

    A duplicate candidate may lack a paragraph of the page shorter than a new paragraph
    (`NewTextTolerance.min_paragraph_words`): a light edit that dropped a line of 10-19 words. Its
    share of the page held reads as high as a whole copy's within the estimates' error (`NEAR_AS`),
    but the paragraph sketches show the line missing from it and present in the copy: named, the
    edit would lose it (multilingual dev: a teaser named the light edit of its article that
    dropped a 12-word line, where the article itself held all of it)."""
    whole = [c for c in holding if not c.new_paragraph]
    return whole or holding


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
