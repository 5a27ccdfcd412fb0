"""The one decision engine: verified candidates + policy -> verdict. Pure; every mode calls it.

File mode, the local topology and the Faust app judge a page against one store; the global
topology judges it in every index partition its keys live in and gathers the answers by page id.
All go through the same steps, so `streamdedup eval` measures what the Kafka worker does: 1 to 3
candidate by candidate (`judged`, verdict/relations.py), 4 from all of a page's (`decide`, here):

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
   later copy of one of them bridge the digest's, of which it is under half, or which is marked as a
   digest of overlapping stories, nor one of the digest's site for being of its site: `bridges`,
   `digest_of_overlapping`, `started_digest`). A page
   with no duplicate candidate is unique; it joins the cluster of what it supersedes, and names the
   earlier pages it is related to (their ids, the same in every mode: a page's cluster as an index
   partition knows it may be stale). A page whose
   main text was cut (`max_text_chars`) is a duplicate only of a copy of its whole text: what lies
   past the cut was never compared, so another candidate holding all the rest is only related to it
   (`as_cut`), and its verdict says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, replace
from typing import Any

from streamdedup.verdict.contract import Verdict
from streamdedup.verdict.relations import DUPLICATE, RELATED, SUPERSEDES

# the engine's fixed rules (the constants below and in verdict/relations.py, and how `judged` and
# `decide` use them): a change that can move a verdict bumps it, so that workers of two versions in one
# group are told (`verdict_settings`).
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
# 29: a paragraph with no counterpart of 3 values whose only paragraph of the other's in its place shares 2 and
#     as many words is held text for the bound on new text (`new_text._edited_in_place`: edited in place)
#     (its pairs counted 0.6 new: 2 of 4 values equal, one standard error below their estimate; `EDITED_NEW`)
# 30: past a long copy's 16 longest on another site, also where both sketches are capped, a paragraph stands in
#     the place of the other's between paragraphs agreeing with its two neighbours (`edits_past_longest`)
# 31: a short unit (a heading, a list item: a run of lines too short for a paragraph or a block, 2+ tokens,
#     `WordPairsParams.short_lines`) of 5+ words stating no number, inside a copy that the other page lacks,
#     with nothing of the other's between its neighbours' counterparts, is new text (`line_places.inserted_short`)
# 32: where a sketch is capped, no paragraph past the 16 longest is read as the other's edited (30 read one so):
#     an edit that kept no value is not told from other text of its length there
# 33: a digest two or more of whose stories' pages are each most of it (`digest_of_overlapping`: stories that
#     share a passage) is marked on its record; no later copy of another site bridges its cluster for being most
#     of it (`bridges`: each story's copy would be, merging the stories)
# 34: a short unit of rule 31 is no new text where a block or short unit of the other within `EDITED_LENGTH`
#     words of it, sharing a value, stands between the counterparts of its nearest matched neighbours: that
#     line edited (`line_places.edited_short`)
# 35: no paragraph past a long page's 16 longest is read as the other's of its length edited (0.15.0's rule,
#     30's and 32's readings of it withdrawn): one that kept no sketch value is not told from other text
# 36: every digest is marked (`started_digest`: a page over pages of two or more stories, bridging none); no page of
#     its site bridges its cluster for being of its site (`bridges`: the attacker's own copy of each story would)
# 37: nor does a fragment (a teaser of each story would); a page names a duplicate in no digest's cluster where one
#     holds as much (`named_duplicate`)
# 38: a page joining a page of its own site is a digest where it holds pages of two or more other stories it left
#     (`started_digest`); a page's mark marks its cluster, its own record's as its first page's
# 39: a line one earlier page of the site showed is no new text where that page is another story's: neither the
#     page's URL (`SiteTemplate.counted`) nor a candidate (`fingerprints.one_page_lines`)
# 40: a page is read as an extract, and its edits as edits (`MAX_EDITED_PAIRS`), on its own text: less the lines
#     its site showed that the match lacks (`new_shares.in_runs`, `shown_pairs_lacked`)
RULES_VERSION = 40
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
# a page that is most of a page holding it (under this share of that page's text absent from it) bridges
# the cluster of another site's page holding it only where it is most of that one too (`bridges`). Of a
# digest's stories at most one is most of it, so copies of its stories after it cannot merge two of them;
# a digest where two are (stories sharing a passage: `digest_of_overlapping`) is bridged by no copy for it
MOST_OF = 0.5


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
    # its cluster was started by a digest of overlapping stories (`digest_of_overlapping`, kept on the first
    # page's record: `DocRecord.overlapping`), which no later copy of another site bridges for being most of it
    overlapping: bool = False
    # its cluster holds a digest of any stories (`started_digest`, kept on the digest's record and on those of
    # the pages joining its cluster after it: `DocRecord.digest`), which no later page of its site bridges for
    # being of its site, nor a fragment
    digest: bool = False




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
    little of it (a light edit that dropped a line), the page names one that lacks nothing; of those,
    one in no digest's cluster where any is (`Candidate.digest`): its story's page, not a page that
    holds it beside other stories (whose cluster it would bridge into its story's)."""
    if not duplicates:
        return None
    least = min(c.new_share for c in duplicates)
    holding = [c for c in duplicates if not c.new_share > least + HOLDS_AS_MUCH]
    return _earliest_nearest(_lacking_no_paragraph([c for c in holding if not c.digest] or holding))


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
                                                   fragment, c.overlapping, c.digest)}
    if named is not None:
        bridged.add(named.root_id)
    kept = [root for root in roots if root[1] in bridged]
    if not kept:
        one_story = len({c.story_id or c.root_id for c in joins}) == 1  # merged before: not a digest
        return roots[:1] if one_story or any(root_id in stale for _, root_id in roots) else []
    return kept[:1] + [root for root in kept[1:] if root[1] not in stale]


def bridges(relation: str, same_site: bool, page_id: str, root_id: str, their_new_share: float = 0.0,
            fragment: bool = False, overlapping: bool = False, digest: bool = False) -> bool:
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
    site's own; a story copied onto the digest's site is in the cluster the story's own page started.

    `overlapping`: the candidate's cluster was started by a digest two of whose stories were each most
    of it (`digest_of_overlapping`: they share a passage, a quote both ran). Being most of it then says
    nothing of which story a page is: a copy of each would be, and bridge the digest's cluster into
    both stories. A copy bridges such a cluster only as the duplicate it names (`joined_roots`), of its
    own site, or as a fragment.

    `digest`: the candidate's cluster was started by a digest of any stories (`started_digest`). Its site
    is then no reason to bridge it: a page of the digest's site that one of its stories' pages holds is
    a copy of that story (the attacker's own, after his digest), not its view-all page or another fetch
    of its URL, and a copy of each story would merge them. Nor is being a fragment: a teaser of each
    story, most of none of the pages holding it, would. A page bridges such a cluster only where it is
    most of it (unless `overlapping`), or as the duplicate it names, which is a digest only where no
    page as near is not (`named_duplicate`)."""
    if relation == DUPLICATE:
        return ((same_site or fragment) and not digest) or not (overlapping or their_new_share >= MOST_OF)
    return relation == SUPERSEDES and same_site and root_id == page_id


def digest_of_overlapping(page_id: str, earlier: Sequence[Candidate], verdict: Verdict) -> bool:
    """Whether the page is a digest two or more of whose stories are each most of it: stories sharing a passage.

    A digest (`joined_roots`: a page over pages of several stories of other sites, bridging none) starts
    a cluster of its own. `MOST_OF` lets a later copy of another site bridge it where the copy is most
    of it, on the premise that of a digest's stories at most one is: true of stories sharing nothing,
    not of two of like length that print one quote (each 0.56 of the digest). The engine sees all the
    digest's stories here, at its own verdict, and nowhere later: a copy of one story is not a candidate
    of the other's. A story is most of the digest where one of its pages is (under `MOST_OF` of the
    digest's text absent from it: `new_share`, the page's share absent from the candidate); where two
    stories are, no one story is most of it beyond what the other holds, and the page is marked (its
    record's `overlapping`, read into `Candidate.overlapping` of its cluster): no later copy bridges its
    cluster for being most of it (`bridges`). A digest of one story plus a little is unmarked, as is
    one over clusters of one story (`story_id`: it joins the oldest, no digest)."""
    if verdict.cluster_id != page_id or verdict.merged_clusters:
        return False
    most_of = {c.story_id or c.root_id for c in earlier
               if c.relation in (DUPLICATE, SUPERSEDES) and not c.same_site and c.new_share < MOST_OF}
    return len(most_of) >= 2


def started_digest(page_id: str, earlier: Sequence[Candidate], verdict: Verdict) -> bool:
    """Whether the page is a digest: it holds pages of two or more stories it did not join (`joined_roots`).

    One that bridged none starts a cluster of its own though it duplicates or supersedes earlier pages;
    one that joined a page of its own site (its part, `bridges`) is in that page's cluster, and is a
    digest where it holds pages of two or more other stories it left (a page it supersedes, or one it
    is most of): the attacker's own page first, then his digest of it and two stories. It is marked on
    its record (`DocRecord.digest`, read into `Candidate.digest` of its cluster): no later page of its
    site bridges its cluster for being of its site, nor a fragment for being one (`bridges`). A page
    whose text was cut joins by fewer of its candidates (`as_cut`), as `decide` judged it."""
    held = [c for c in earlier if (as_cut(c.relation, c.rule) if verdict.text_cut else c.relation) != RELATED]
    if verdict.cluster_id == page_id and not verdict.merged_clusters:
        return bool(held)
    joined = {verdict.cluster_id, *verdict.merged_clusters}
    stories_joined = {c.story_id or c.root_id for c in held if c.root_id in joined}
    left = {c.story_id or c.root_id for c in held if c.root_id not in joined
            and (c.relation == SUPERSEDES or c.their_new_share < MOST_OF)}
    return len(left - stories_joined) >= 2


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
