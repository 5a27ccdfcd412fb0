"""Which of a page's new paragraphs count as new text, by where they stand in the copy of the other.

`new_text.new_paragraphs` finds each page's paragraphs absent from the other's (`new_text._absent_from`,
from the paragraph sketches: `fingerprints/wordpairs.py`); these rules say which of them count. At a
copy's edges on another site, new lines may be its host's (teasers, newsletter blurbs, an author's
box): they count only where they took the place of an edge paragraph (`replaced_edges`), are
`EDGE_PARAGRAPH_WORDS` long, or sit in the page's article block (`counted_new`). Inside the copy,
a new paragraph in the place of one of the other's of another length is a paragraph replaced
(`took_a_place`), and one where the other has nothing it lacks is a line the other never had or
dropped (`inserted_line`). Past a long page's 16 longest paragraphs, one that kept none of its
sketch values is no edit for standing where the other's of its length is (rules version 35;
0.15.0-34 read it so): an attacker's advance copy with a paragraph replaced by as many other
words hid the article.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from streamdedup.fingerprints.wordpairs import TAIL
from streamdedup.verdict.policy import EDITED_LENGTH

# which of a copy's edges (its start, its end) count its new lines as new text (`replaced_edges`)
EVERY_EDGE, NO_EDGE = (True, True), (False, False)
# a new paragraph at a copy's edge this long counts at any edge: a host's lines there (teasers, blurbs,
# an author's box) are shorter. On web and multilingual dev the new lines at the edges of copies that
# are duplicates reach 40-59 words (counting lines from 40 words lost 2 duplicates on each; from 60,
# none): twice as long leaves room. A follow-up on another site that went on with a 127-word
# paragraph of another article was the article's duplicate (English reuse dev seed 2).
EDGE_PARAGRAPH_WORDS = 100
# against a page of another site with more paragraphs than this (either page), where its edges are is
# not known: a new host's teasers and widgets of 20-40 words look like paragraphs, and its new lines
# before the first found paragraph or after the last are excused (`NO_EDGE`), as they were when only
# the 16 longest paragraphs of such pages were judged (on web dev, judging them all at the edges
# found 4 fewer duplicates). Inside the copy, between paragraphs the other has, every paragraph is
# judged: a new one there is the copy's own text (a crawler's review: 12 of 16 copies of 1,200-word
# articles with a 20-49-word paragraph added inside were duplicates when only the longest were judged).
CROSS_SITE_PARAGRAPHS = 16

# a page's new paragraphs count only when at least this share of its paragraphs are found in the
# other's: where fewer are, the two extractions split the text into other lines (a layout that
# merges paragraphs), and a paragraph of one is not a line of the other though its words are there
PARAGRAPHS_FOUND = 0.6
# SHOWN_EACH: another site's page (an attacker's may be) holds a page's paragraph only where it shows
# it as a line of its own (`counted_new`'s `shown_each`). Where its lines are not alike the page's
# (`PARAGRAPHS_FOUND`) or its sketch is capped, the share of new word pairs alone was asked, which
# cannot see a paragraph under a tenth of the page (its error, ~0.03, is as large): an advance copy on
# another site with the article's paragraphs merged into longer lines, or padded past 127 paragraphs,
# lacked a 30-45-word one and the article was its duplicate (`tests/verdict/test_hostile_layout.py`).
# Lines split finer keep the paragraphs' sketch values (a paragraph's least value is in one of its
# parts): those are found, and one left out counts as before. On one site (a print or AMP copy whose
# lines wrap otherwise: web dev's RFC pages) the pages are the site's own.
SHOWN_EACH = True
# against a capped sketch (its longest paragraphs), a paragraph is judged only if at least this many
# words longer than the shortest kept: its counterpart, an edit a word or two shorter, was kept too
CAP_MARGIN = 3
_MAX_LENGTH = 1 << 16  # past any paragraph's length: none judged
_NONE = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))  # `counted_new`: no new paragraph counts


def replaced_edges(mine_new: np.ndarray, their_new: np.ndarray) -> tuple[bool, bool]:
    """At the start and at the end of a copy on another site: whether its new lines there took a paragraph's place.

    New lines before a copy's first found paragraph or after its last are as likely its host's
    template (a newsletter blurb, a cookie notice, another story's teaser) as content. But a host's
    lines are added to the article: they do not take the place of one of its paragraphs. Where the
    other page has exactly one paragraph at that edge that the page lacks, and the page has new
    lines there, the article's edge paragraph was replaced (a reworded lead, another closing
    paragraph), and the page's new lines at that edge count. Where the other has several, the page
    is a part or a teaser of it (its end cut, its host's lines after it), and none count."""
    if not len(mine_new) or not len(their_new) or mine_new.all() or their_new.all():
        return NO_EDGE
    mine_found, their_found = np.flatnonzero(~mine_new), np.flatnonzero(~their_new)
    start = bool(mine_found[0] >= 1 and their_found[0] == 1)
    end = bool(len(mine_new) - 1 - mine_found[-1] >= 1 and len(their_new) - 1 - their_found[-1] == 1)
    return start, end


def counted_new(page: tuple[np.ndarray, np.ndarray, np.ndarray], new: np.ndarray,
            other: tuple[np.ndarray, bool], edges: tuple[bool, bool], swapped: bool,
            inside: Callable[[], np.ndarray] | None = None, *, shown_each: bool = False
            ) -> tuple[np.ndarray, np.ndarray]:
    """The words of each of `page`'s paragraphs absent from the other (`new`) that count, and its place.

    Its place: how many of the page's judged paragraphs before it are found in the other. A line
    its site showed before reads 0 words (`new_text._own_words`). Empty arrays: none counts.

    Before the first found paragraph and after the last, new paragraphs count only at the `edges`
    asked (`replaced_edges`; on one site, both: the template is on both pages), or where they are
    `EDGE_PARAGRAPH_WORDS` long: longer than a host's lines, or where they sit in the page's
    article block (`inside()`, of each paragraph: `clean.article_block.inside_marks`, asked only
    where an edge's new line is excused without it; None: not known): a host's lines sit outside
    it, an editor's added paragraph inside.

    New paragraphs count only where most of the page's are found in the other (`PARAGRAPHS_FOUND`),
    or where exactly one of each page's is absent from the other (`swapped`): a layout that merges
    lines makes one line of several, never one of one, so that is a paragraph replaced, even on a
    page of two or three paragraphs.

    `shown_each`: the other page is of another site and the page's sketch is whole (not capped): the
    other holds a paragraph only where it shows it as a line (`SHOWN_EACH`). Then every paragraph is
    judged against a capped sketch, and where the two pages' lines are not alike the page's absent
    ones count, wherever they stand, if the other has a line longer than most of the page's or is
    capped."""
    values, words, lengths = page
    their_lengths, capped = other
    if not len(values) or not len(their_lengths):
        return _NONE  # no sketch on one side (a short page, an older record): not measured
    if capped and not shown_each:  # the other kept its longest: judge the paragraphs its counterparts surely are among
        longest = their_lengths[: len(their_lengths) - TAIL]
        judged = lengths >= (int(longest.min()) if len(longest) else _MAX_LENGTH) + CAP_MARGIN
        # and the page's last paragraph (where revisions add one): the other kept its last two, so
        # the counterpart of the page's last is kept unless the other goes on 2 paragraphs further
        judged[-1] = True
        values, words, new = values[judged], words[judged], new[judged]
    else:
        judged = None
    if not new.any():
        return _NONE
    found_before = np.cumsum(~new) - ~new  # of each paragraph: the found ones before it
    if new.sum() > (1.0 - PARAGRAPHS_FOUND) * len(values) and not swapped:
        # the two pages' lines are not alike (another layout merged or split them): none counts, but
        # where another site's page has a line longer than most of the page's (it may have merged
        # them; short lines beside it change nothing), or its capped sketch left them out (`SHOWN_EACH`)
        merged = shown_each and (capped or int(their_lengths.max()) > np.median(lengths))
        return (words[new], found_before[new]) if merged else _NONE
    found = np.flatnonzero(~new)
    # new lines before the first found paragraph or after the last; with none found (one line each,
    # `swapped`), the page has no edges: its new line took the other's place, and counts
    if edges != EVERY_EDGE and len(found):
        new = new.copy()
        kept = words >= EDGE_PARAGRAPH_WORDS  # longer than a host's lines: the article's own, whatever the edge
        at_edges = np.zeros(len(new), dtype=bool)
        at_edges[: found[0] if not edges[0] else 0] = True
        at_edges[found[-1] + 1 if not edges[1] else len(new):] = True
        if inside is not None and (new & at_edges & ~kept & (words > 0)).any():
            marks = inside() if judged is None else inside()[judged]
            kept |= marks  # in the article's block: its own, at any length
        if not edges[0]:
            new[: found[0]] &= kept[: found[0]]
        if not edges[1]:
            new[found[-1] + 1:] &= kept[found[-1] + 1:]
    return words[new], found_before[new]


def took_a_place(words: np.ndarray, places: np.ndarray, their: np.ndarray, their_places: np.ndarray) -> bool:
    """Whether a new paragraph of one page stands where one of the other's is, of another length.

    Any such pair, not only the two pages' longest: an article with two paragraphs replaced by
    shorter text has them at two places. A paragraph with one of the other's in its place within a
    few words of its length (`EDITED_LENGTH`) is that one edited, whatever else stands there (a
    light edit that changed a short line and dropped the next one)."""
    same = places[:, None] == their_places[None, :]
    edited = np.abs(words[:, None] - their[None, :]) <= EDITED_LENGTH
    shown = (words[:, None] == 0) | (their[None, :] == 0)  # a line the site showed before: no new text
    replaced = (same & ~edited & ~shown).any(axis=1) & ~(same & edited).any(axis=1)
    return bool(replaced.any())


def inserted_line(new: np.ndarray, words: np.ndarray, their_new: np.ndarray, floor: int) -> bool:
    """Whether a new paragraph of the page stands inside the copy where the other page has nothing it lacks.

    Inside: between two of the page's paragraphs found in the other (not at an edge, where a host
    adds its lines). Its place (the found paragraphs before it) holds none of the other's
    paragraphs absent from the page, so it is no edited nor replaced one (`took_a_place` reads
    those): the other page never had it, or dropped it (a light edit that dropped a line of 12-19
    words, the original crawled after it: multilingual dev's content-loss edges). Only a line
    `EDITED_LENGTH` words past the sketch's shortest (`floor`, 12) counts: an edit of a few words
    moves a line across the floor, and the other page may hold it unsketched (web dev: an 11-word
    line a light edit grew to 12 read as inserted). A line its site showed before (0 words) is the
    site's. `new`, `their_new`: `new_text._absent_from` of each page's paragraphs, uncapped sketches."""
    found = ~new
    if not new.any() or found.sum() < 2:
        return False
    places = np.cumsum(found) - found
    their_places = (np.cumsum(~their_new) - ~their_new)[their_new]
    inside = new & (words >= floor + EDITED_LENGTH) & (places > 0) & (places < int(found.sum()))
    return bool(inside.any() and not np.isin(places[inside], their_places).all())


def inserted_block(page: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
                   other: tuple[np.ndarray, np.ndarray, np.ndarray]) -> int:
    """The words of the page's longest block of short lines inside the copy that the other lacks (0: none).

    A block (`WordPairsParams.line_blocks`: a list, a table's rows, each line under the sketch's 12
    words) absent from the other counts as a paragraph of its words where it stands between two of
    the page's paragraphs found in the other, and the other has none of its own paragraphs or
    blocks absent from the page there (`inserted_line`'s test): a list added inside the article.
    Not at a copy's edges, where a host adds its lines and where an update stamp beside the title
    makes a block of the title's short lines; not where the other has lines of its own in its
    place (a light edit of a list, text wrapped into other lines); not where under
    `PARAGRAPHS_FOUND` of the page's paragraphs are found (another layout). `page`: of every kept
    paragraph in text order, whether it is a block, then the paragraphs' `new` (blocks left out),
    every one's absence from the other (`new_text._absent_from` of all), and its own words (0:
    shown before); `other`: the same three first of the other page. 0: none counts."""
    blocks, new, every_new, words = page
    their_blocks, their_new, their_every_new = other
    found = ~new
    if not (blocks & every_new).any() or found.sum() < 2 or new.sum() > (1.0 - PARAGRAPHS_FOUND) * len(new):
        return 0
    places, their_places = _found_before(blocks, found), _found_before(their_blocks, ~their_new)
    their_absent = their_every_new.copy()
    their_absent[~their_blocks] = their_new  # its paragraphs as the rules read them, and its blocks
    inside = (places > 0) & (places < int(found.sum()))
    counted = blocks & every_new & inside & ~np.isin(places, their_places[their_absent])
    return int(words[counted].max(initial=0))


def inserted_short(page: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray],
                   other: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
                   places: tuple[np.ndarray, np.ndarray, np.ndarray]) -> bool:
    """Whether a short unit of the page stands inside the copy where the other page has nothing it lacks.

    A short unit (`WordPairsParams.short_lines`: a heading, a list item, a run of lines too short for
    a paragraph or a block) that `page[3]` says counts (`new_text._plain_short`) and the other lacks
    (`page[2]`), between two of the page's paragraphs found in the other, where the other has none of
    its units absent from the page (`other[0]`, every unit) between the counterparts of the page's
    units around it (`places`: `new_text._places`' counterpart, before and after, every unit): a line
    the other dropped or never had (multilingual dev: a light edit that dropped "gid: ..." of 5 words,
    the original crawled after it). Its place is read through counterparts, not by counting found
    paragraphs: a paragraph of the other the page reads as its own edited, though the other lacks it
    (one value in place), shifts the other's count (site dev: a light edit's line grown from 3 words
    to 5 stood beside it). Not where the counterparts around it cross (its place is not known: a man
    page of like lines, multilingual dev), nor where under `PARAGRAPHS_FOUND` of the page's paragraphs
    are found, nor where it is a line of the other edited (`edited_short`). `page[4]`: every unit's
    words; `other`: the other's absent units, blocks, words, and `new_text._equal_values` page by other."""
    blocks, new, every_new, counts, words = page
    their_absent = other[0]
    found = ~new
    asked = every_new & counts
    if not asked.any() or found.sum() < 2 or new.sum() > (1.0 - PARAGRAPHS_FOUND) * len(new):
        return False
    at = _found_before(blocks, found)
    counterpart, before, after = places
    for unit in np.flatnonzero(asked & (at > 0) & (at < int(found.sum()))).tolist():
        # counterparts out of order (a page of like lines: "h1 tag", "h2 tag", ...): its place is not known
        if (before[unit] < after[unit] and not their_absent[before[unit] + 1: after[unit]].any()
                and not edited_short(unit, words, counterpart, other[1:])):
            return True
    return False


def edited_short(unit: int, words: np.ndarray, counterpart: np.ndarray,
                 other: tuple[np.ndarray, np.ndarray, np.ndarray]) -> bool:
    """Whether the page's short unit is the other's edited: one of about its length in its place sharing a value.

    Its place: between the counterparts of the nearest units before and after it that have one
    (`counterpart`: `new_text._places`', -1: none), in order. There a block or short unit of the
    other (`other`: its blocks, every unit's words, and `new_text._equal_values` page by other)
    within `EDITED_LENGTH` words of the unit's (a few words replaced, dropped or added) sharing one
    of its 4 values with it, k-th with k-th: the same line with a word or two changed (a light edit
    keeps some of a short line's few word pairs; one value of another line of the page is equal by
    chance ~4 in 1,000). `_absent_from` reads such a match in place as found, but through the
    running counterparts (`before`, `after`), which a like line elsewhere (nytimes' "Continue
    reading the main story", repeated down the page) makes cross: the unit then looked inserted
    where the other has its line edited (`bench/short_line_edits.py`). A heading replaced by another
    heading of its length shares none of its values: still new text. An edit that changed most of a
    short line's word pairs (3 words of a 7-word heading) keeps none, and reads as a line replaced."""
    their_blocks, their_words, equal = other
    earlier, later = counterpart[:unit], counterpart[unit + 1:]
    earlier, later = earlier[earlier >= 0], later[later >= 0]
    if not len(earlier) or not len(later) or earlier[-1] >= later[0] - 1:
        return False
    slot = np.arange(int(earlier[-1]) + 1, int(later[0]))
    alike = (their_blocks[slot] & (np.abs(their_words[slot] - int(words[unit])) <= EDITED_LENGTH)
             & (equal[unit, slot] >= 1))
    return bool(alike.any())


def _found_before(blocks: np.ndarray, found: np.ndarray) -> np.ndarray:
    """Of every kept paragraph in text order (`blocks`: which are blocks), how many found paragraphs precede it."""
    flags = np.zeros(len(blocks), dtype=np.int64)
    flags[~blocks] = found
    return np.cumsum(flags) - flags
