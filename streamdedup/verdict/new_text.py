"""How much of a page's text is absent from a candidate, and the reverse: the measures of directions.

The engine (verdict/relations.py) asks them of each linked candidate: the shares of word pairs each
page lacks of the other, made shares of new text in runs and less the lines the page's site showed
before (verdict/new_shares.py); then, where they can move a relation (`paragraphs_asked`), the
longest new paragraph each way (`new_paragraphs`, from the paragraph sketches; which of them count
by where they stand in the copy: verdict/line_places.py), and what the paragraphs each page holds
bound (`outside_held_paragraphs`). `NewTextTolerance` (verdict/policy.py) judges them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

import numpy as np

from streamdedup.fingerprints.paragraph_rows import (
    BLOCK_NUMBERED,
    BLOCKS_BELOW,
    MAX_PARAGRAPH_WORDS,
    NUMBERS_COUNT_SHIFT,
    NUMBERS_MOST,
    SHORT_PLAIN,
    block_count,
    blocks_of,
    paragraph_values,
    paragraph_words,
    record_sketches,
    shown_before,
)
from streamdedup.fingerprints.wordpair_kernels import edited_in_place, paragraphs_held
from streamdedup.fingerprints.wordpairs import lines_hashed
from streamdedup.store.layout import DocRecord
from streamdedup.verdict.columns import Methods, SignatureColumns
from streamdedup.verdict.line_places import (
    CROSS_SITE_PARAGRAPHS,
    EVERY_EDGE,
    NO_EDGE,
    SHOWN_EACH,
    counted_new,
    inserted_block,
    inserted_line,
    inserted_short,
    replaced_edges,
    took_a_place,
)
from streamdedup.verdict.new_shares import NEW_TEXT_METHOD
from streamdedup.verdict.policy import EDITED_LENGTH, NewText, NewTextTolerance


def paragraphs_asked(matched: np.ndarray, new_shares: np.ndarray, their_new_shares: np.ndarray, owns: np.ndarray,
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


def new_paragraphs(stored: Sequence[tuple[int, DocRecord]], columns: SignatureColumns, methods: Methods,
                   mine: Mapping[int, Any], page_site: int,
                   rows: np.ndarray | None = None
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                              np.ndarray]:
    """The words of the page's longest new paragraph to each stored candidate, and of the candidate's to the page.

    Of the candidates at `rows` only (None: all; the others read 0): `judged` asks of the matched
    ones, whose relation the new paragraphs move, a few or none of the ~50 a page on homogeneous text.

    A paragraph of one page is new to the other when no paragraph of the other is its counterpart
    (`_absent_from`; sketches: `fingerprints/wordpairs.py`): an edited paragraph keeps most of its
    values, new text none but by chance. Every paragraph is judged; against a capped sketch, only
    those longer than its shortest kept. At a copy's edges on another site, new lines count as
    `replaced_edges` says, or not at all on a long page (`CROSS_SITE_PARAGRAPHS`). int64 arrays,
    0 where none or not measured; then whether a new paragraph of one stands in the place of one
    of the other's (`took_a_place`; not known where edges are not, nor against a capped sketch
    but on one site, where both are), which makes it new text at any length (`NewTextTolerance`);
    and the words of each one's longest new paragraph with those at its edges counted too (`EVERY_EDGE`),
    which `supersedes` asks of the candidate (`relations.relation`); whether a paragraph of the page
    states other numbers than its counterpart (`numbers_changed`); and whether each page has a new
    line inside the copy where the other has nothing it lacks (`inserted_line`; not known against a
    capped sketch)."""
    count = len(stored)
    mine_words, their_words = np.zeros(count, dtype=np.int64), np.zeros(count, dtype=np.int64)
    mine_edge, their_edge = np.zeros(count, dtype=np.int64), np.zeros(count, dtype=np.int64)
    replaced = np.zeros(count, dtype=np.bool_)
    changed = np.zeros(count, dtype=np.bool_)
    inserted, their_inserted = np.zeros(count, dtype=np.bool_), np.zeros(count, dtype=np.bool_)
    if rows is not None and not len(rows):  # none asked (most pages: no candidate matched)
        return mine_words, their_words, replaced, mine_edge, their_edge, changed, inserted, their_inserted
    entry = methods.get(NEW_TEXT_METHOD)
    signature = mine.get(entry[0]) if entry is not None else None
    paragraphs = getattr(signature, "paragraphs", None)
    if entry is None or paragraphs is None:
        return mine_words, their_words, replaced, mine_edge, their_edge, changed, inserted, their_inserted
    numbers = cast(np.ndarray, getattr(signature, "numbers", _NO_NUMBERS))
    tag, method = entry
    whole_capped = bool(getattr(signature, "capped", False))
    # which of the page's paragraphs sit in its article's block (`clean.article_block`): the encoded
    # marks, or (file mode) found where they decide; None: not known
    inside = cast(np.ndarray, getattr(signature, "inside", _UNPLACED))
    lazy = getattr(signature, "article", None)
    placed: Callable[[], np.ndarray] | None = (
        (lambda: inside) if len(inside) == len(paragraphs) and len(inside)
        else lazy if lazy is not None and lines_hashed(signature)
        else None)
    # the blocks of short lines (`WordPairsParams.line_blocks`) are judged apart (`inserted_block`); the rules
    # below read the page's paragraphs alone, as they did before blocks were sketched
    mine_blocks, every_row, every_number = blocks_of(numbers, len(paragraphs)), _rows(paragraphs), numbers
    whole = every_row  # read, never written: the same arrays where the page has no block
    if mine_blocks.any():
        paragraphs, numbers = paragraphs[~mine_blocks], numbers[~mine_blocks]
        if placed is not None:
            placed = _without_blocks(placed, mine_blocks)
        whole = _rows(paragraphs)
    own_long = len(paragraphs) > CROSS_SITE_PARAGRAPHS
    floor = int(getattr(getattr(method, "params", None), "paragraph_words", 0))  # the sketch's shortest line
    # the fewest words of a short unit that counts (`_plain_short`): `EDITED_LENGTH` past the fewest tokens
    # the sketch keeps of one (`WordPairsParams.short_lines`; 0: none kept, none counts)
    short_lines = int(getattr(getattr(method, "params", None), "short_lines", 0))
    short_floor = short_lines + EDITED_LENGTH if short_lines else 0
    most_rows = int(getattr(getattr(method, "params", None), "max_paragraphs", 0))
    at, records = columns.present(tag, np.arange(count) if rows is None else rows)  # those with a sketch
    for i, data in zip(at.tolist(), records, strict=True):
        other = stored[i][1]
        theirs_sketch, theirs_capped, their_numbers = cast(Any, method).paragraphs_of(data)
        their_blocks, every_theirs = blocks_of(their_numbers, len(theirs_sketch)), _rows(theirs_sketch)
        theirs, every_their_number = every_theirs, their_numbers
        if their_blocks.any():
            theirs_sketch, their_numbers = theirs_sketch[~their_blocks], their_numbers[~their_blocks]
            theirs = _rows(theirs_sketch)
        # how many of its 4 values each paragraph shares with each of the other's: made once, read
        # both ways (its transpose) and by `numbers_changed`; with blocks, of every kept one, and the
        # paragraphs' read from it
        with_blocks = bool(mine_blocks.any() or their_blocks.any())
        every_equal = _equal_values(every_row[0], every_theirs[0]) if with_blocks else None
        equal = (_equal_values(whole[0], theirs[0]) if every_equal is None
                 else every_equal[~mine_blocks][:, ~their_blocks])
        changed[i] = numbers_changed(whole[0], numbers, theirs[0], their_numbers, equal, whole[2], theirs[2]) or (
            every_equal is not None and block_numbers_changed(
                every_equal, (mine_blocks & (every_row[2] >= floor), every_number, every_row[2]),
                (their_blocks & (every_theirs[2] >= floor), every_their_number, every_theirs[2])))
        one_site = other.site == page_site
        # a capped sketch's kept paragraphs do not say where the others were, nor which are missing
        either_capped = whole_capped or theirs_capped
        # against another site's long page, where its edges are is not known either: its host's lines
        # there (teasers, widgets of 20-40 words) are as long as paragraphs (`CROSS_SITE_PARAGRAPHS`)
        unplaced = either_capped or (not one_site and (own_long or len(theirs_sketch) > CROSS_SITE_PARAGRAPHS))
        mine_new = _absent_from(whole[0], theirs[0], whole[2], theirs[2], equal)
        their_new = _absent_from(theirs[0], whole[0], theirs[2], whole[2], equal.T)
        edges = (EVERY_EDGE if one_site else NO_EDGE if unplaced
                 else replaced_edges(mine_new, their_new))
        # one paragraph of each absent from the other: one took the other's place, whatever else is found
        swapped = not unplaced and int(mine_new.sum()) == 1 and int(their_new.sum()) == 1
        # another site's page holds a paragraph only where it shows it as a line (`SHOWN_EACH`)
        mine_shown, their_shown = (SHOWN_EACH and not one_site and not whole_capped,
                                   SHOWN_EACH and not one_site and not theirs_capped)
        words, places = counted_new(whole, mine_new, (theirs[2], theirs_capped), edges, swapped, placed,
                                    shown_each=mine_shown)
        their, their_places = counted_new(theirs, their_new, (whole[2], whole_capped), edges, swapped,
                                          shown_each=their_shown)
        mine_words[i] = mine_edge[i] = words.max(initial=0)
        their_words[i] = their_edge[i] = their.max(initial=0)
        if edges != EVERY_EDGE and not unplaced:  # the edges' new lines, excused above, counted
            mine_all, _ = counted_new(whole, mine_new, (theirs[2], theirs_capped), EVERY_EDGE, swapped,
                                      shown_each=mine_shown)
            their_all, _ = counted_new(theirs, their_new, (whole[2], whole_capped), EVERY_EDGE, swapped,
                                       shown_each=their_shown)
            mine_edge[i], their_edge[i] = mine_all.max(initial=0), their_all.max(initial=0)
        # places are known where neither sketch is capped or cut, or on one site where both are capped:
        # each page's paragraphs are then judged past the other's shortest kept (`counted_new`), and both
        # keep those in text order
        both_capped = one_site and whole_capped and theirs_capped
        if (not unplaced or both_capped) and len(words) and len(their):
            replaced[i] = took_a_place(words, places, their, their_places)
        if not either_capped:  # a line one page holds inside the copy, with nothing of the other's in its place
            inserted[i] = len(words) > 0 and inserted_line(mine_new, whole[1], their_new, floor)
            their_inserted[i] = len(their) > 0 and inserted_line(their_new, theirs[1], mine_new, floor)
        # a list inside the copy; not asked where every block of each has a counterpart anywhere (the
        # usual copy), which `_absent_from` never reads as absent
        if not either_capped and every_equal is not None and _a_block_unmatched(every_equal, mine_blocks,
                                                                                their_blocks):
            every_new = _absent_from(every_row[0], every_theirs[0], every_row[2], every_theirs[2], every_equal)
            every_their_new = _absent_from(every_theirs[0], every_row[0], every_theirs[2], every_row[2],
                                           every_equal.T)
            block = inserted_block((mine_blocks, mine_new, every_new, every_row[1]),
                                   (their_blocks, their_new, every_their_new))
            their_block = inserted_block((their_blocks, their_new, every_their_new, every_theirs[1]),
                                         (mine_blocks, mine_new, every_new))
            # a short unit inside the copy (a heading, a list item) the other dropped; not where a sketch is
            # full (its blocks and short units fill the places its paragraphs leave, the longest first: which
            # were left out is not known; story dev, a paragraph added to a page of 127 rows)
            if short_floor and max(len(every_row[0]), len(every_theirs[0])) < most_rows:
                floors = (short_floor, floor)
                inserted[i] |= inserted_short(
                    (mine_blocks, mine_new, every_new,
                     _plain_short(mine_blocks, every_number, every_row[1], floors,
                                  _merged_words(every_equal.T, their_blocks, every_theirs[2], every_row[2])),
                     every_row[2]),
                    (every_their_new, their_blocks, every_theirs[2], every_equal), _places(every_equal)[1:])
                their_inserted[i] |= inserted_short(
                    (their_blocks, their_new, every_their_new,
                     _plain_short(their_blocks, every_their_number, every_theirs[1], floors,
                                  _merged_words(every_equal, mine_blocks, every_row[2], every_theirs[2])),
                     every_theirs[2]),
                    (every_new, mine_blocks, every_row[2], every_equal.T), _places(every_equal.T)[1:])
            mine_words[i], mine_edge[i] = max(mine_words[i], block), max(mine_edge[i], block)
            their_words[i], their_edge[i] = max(their_words[i], their_block), max(their_edge[i], their_block)
    return mine_words, their_words, replaced, mine_edge, their_edge, changed, inserted, their_inserted


def _a_block_unmatched(equal: np.ndarray, blocks: np.ndarray, their_blocks: np.ndarray) -> bool:
    """Whether a block of either page has no unit of the other agreeing in `AGREEING_VALUES` (`equal`: of all)."""
    agreed = equal >= AGREEING_VALUES
    return bool((blocks & ~agreed.any(axis=1)).any() or (their_blocks & ~agreed.any(axis=0)).any())


def _plain_short(blocks: np.ndarray, numbers: np.ndarray, words: np.ndarray, floors: tuple[int, int],
                 merged: int) -> np.ndarray:
    """Which units of a sketch are short units that count where the other has nothing in their place.

    Short units (under the sketch's paragraph words, `floors[1]`) stating no number (`SHORT_PLAIN`:
    not a date line, an "Updated 10:42", a counter), of `floors[0]` own words or more (`words`: 0 for
    a line its site showed before, `mark_shown`): a light edit that
    grows a line the sketch leaves out (under `short_lines` tokens) by a word or two is no line added
    (web dev: "pod nosem chińczyków" -> "których nosem chce i chińczyków"). Not one the other page may
    hold merged into a block (`_merged_words`: within `EDITED_LENGTH` of as long)."""
    short_floor, floor = floors
    return (blocks & (words < floor) & (words >= short_floor) & (numbers == SHORT_PLAIN)
            & (words > merged + EDITED_LENGTH))


def _merged_words(equal: np.ndarray, blocks: np.ndarray, words: np.ndarray, their_words: np.ndarray) -> int:
    """The most words a block of one page holds beyond its counterpart in the other (0: none).

    `equal`: `_equal_values` of this page's units (rows) against the other's; a block agreeing with a
    unit of the other in `AGREEING_VALUES` and longer: a short line moved beside it (a paragraph swapped
    with it) joined it, and a short unit of the other as long is in it."""
    rows = np.flatnonzero(blocks)
    if not len(rows) or not equal.shape[1]:
        return 0
    near = equal[rows]
    best = np.argmax(near, axis=1)
    agreed = near[np.arange(len(rows)), best] >= AGREEING_VALUES
    excess = np.where(agreed, words[rows] - their_words[best], 0)
    return int(excess.max(initial=0))


def _rows(sketch: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A sketch's paragraphs' values, own words (0: shown before) and words, as `new_paragraphs` reads them."""
    return paragraph_values(sketch), _own_words(sketch), paragraph_words(sketch)


def _without_blocks(placed: Callable[[], np.ndarray], blocks: np.ndarray) -> Callable[[], np.ndarray]:
    """`placed`'s article-block marks of the paragraphs that are no block of short lines."""
    return lambda: placed()[~blocks]


def numbers_changed(values: np.ndarray, numbers: np.ndarray, their_values: np.ndarray,
                    their_numbers: np.ndarray, equal: np.ndarray | None = None,
                    words: np.ndarray | None = None, their_words: np.ndarray | None = None) -> bool:
    """Whether a paragraph of the page states other numbers than its counterpart does, as many of them.

    A fact corrected in one sentence ("5 injured" -> "50 injured", "in 1994" -> "in 1996") keeps a
    paragraph's values and adds two word pairs, as a typo fixed does: word pairs cannot tell a
    crawler that the page says something its match does not. The paragraph's counterpart (the one
    of the other's sharing most of its 4 values, at least `AGREEING_VALUES`) stating as many
    numbers, other ones (their hash differs), does, where no other paragraph that may be its
    counterpart states the same: a number replaced by another. A light edit that drops or adds a
    word leaves the numbers as they were, or changes their count (a number deleted, or one inserted
    from elsewhere: not told from a new detail, and not counted). Unknown (False) where either page
    kept no numbers (a record of 0.16.0 or before), and for lines under the sketch's 12 words (a
    heading, a list item). Two values anywhere are not enough: short lines of one manual page ("...
    (v.d. 23:13:48)", "... (th 3..cn)") share two by chance (multilingual dev). A number replaced in
    a paragraph of 12-30 words keeps 3 of the 4 values 82-97 % of the time (88 % of readability's
    test pages' paragraphs of 12-30 words with a number, 96 % of 31-60).

    With the paragraphs' lengths (`words`, `their_words`), a paragraph without a counterpart of 3
    values has one in the only paragraph of the other's in its place (between its neighbours'
    counterparts) sharing `IN_PLACE_VALUES` and as many words: a number replaced keeps the length
    (a crawler's review: a share price corrected in a 17-word line was a duplicate). Not asked: a
    paragraph of `NUMBERS_MOST` numbers or more, whose count reads "that many or more", so a number
    replaced by a word (a light edit) would read as one replaced by another (docs/limitations.md).
    `equal`: `_equal_values(values, their_values)` if the caller has it."""
    if len(numbers) != len(values) or len(their_numbers) != len(their_values) or not len(values):
        return False
    lengths = (words is not None and their_words is not None and len(words) == len(values)
               and len(their_words) == len(their_values))
    stated = numbers.astype(np.int64)
    theirs = their_numbers.astype(np.int64)
    count, their_count = stated >> NUMBERS_COUNT_SHIFT, theirs >> NUMBERS_COUNT_SHIFT
    asked = (count > 0) & (count < NUMBERS_MOST)
    if not asked.any() or not (their_count > 0).any():
        return False
    every = _equal_values(values, their_values) if equal is None else equal
    rows = np.flatnonzero(asked)
    equal = every[rows]
    best = np.argmax(equal, axis=1)
    counterpart = equal[np.arange(len(best)), best] >= AGREEING_VALUES
    if lengths:
        assert words is not None and their_words is not None
        slot = _sole_slot(every)[rows]
        in_place = ~counterpart & (slot >= 0) & (equal[np.arange(len(rows)), np.maximum(slot, 0)] >= IN_PLACE_VALUES)
        best = np.where(in_place, slot, best)
        as_long = words[rows] == their_words[best]
        counterpart = counterpart | (in_place & as_long)
    same_count = count[rows] == their_count[best]
    # none of the other's paragraphs that may be its counterpart states its numbers: paragraphs of one
    # story share phrases, and another one with its own year may agree as much as the edited one
    stated_there = ((equal >= AGREEING_VALUES) & (theirs[None, :] == stated[rows][:, None])).any(axis=1)
    stated_there |= theirs[best] == stated[rows]  # (a counterpart in place, of 2 values)
    return bool((counterpart & same_count & ~stated_there).any())


# values of 4 a paragraph shares with the only one of the other's in its place to be its counterpart there
IN_PLACE_VALUES = 2
# the share of its pairs a paragraph edited in place (`_edited_in_place`) counts as outside what the other
# holds: 2 of 4 values equal estimate a Jaccard J of 1/2 with a standard error of 1/4, and one error below
# (J = 1/4, as the bound moves a share by at most its error) one set's share absent from another as large is
# (1 - J) / (1 + J) = 0.6. Held whole, a paragraph sharing 2 values with a run of 45-60 of its 110 words
# replaced (an advance copy stating other facts) made the article its duplicate 1-2 of 12 times more often;
# at J = 1/2 (1/3 new), once the short units (rules version 31) held more, 1 of 12 at 60 words still
# (`tests/verdict/test_hostile_edit_in_place.py`)
EDITED_NEW = 0.6


def block_numbers_changed(equal: np.ndarray, mine: tuple[np.ndarray, np.ndarray, np.ndarray],
                          theirs: tuple[np.ndarray, np.ndarray, np.ndarray]) -> bool:
    """Whether a block of short lines of the page states other numbers than its counterpart block, as long.

    `mine`, `theirs`: which units of each sketch are blocks, their numbers bytes and words (of every
    unit, paragraphs and blocks); `equal`: `_equal_values` of every unit. A results table with a
    score changed, a price list with a price changed, keep the block's length and most of its pairs:
    word pairs read them as a typo fixed. A block's counterpart is the block of the other's sharing
    `AGREEING_VALUES` with it, or else the only unit of the other's in its place (between its
    neighbours' counterparts, `_sole_slot`), a block, sharing any values or none (a 5-row table of
    3-word rows with every score changed keeps none of its 4: a crawler's review); as many words,
    under the 127 a sketch reads for any longer (a row added or dropped: not asked); both stating
    numbers (`paragraph_rows.block_numbers`: dates and times left out, which a re-fetch changes), as
    many (modulo 3, `block_count`: a light edit that puts "4" for "are" in a list of "http 500s or
    404s" is no number replaced), other ones; and no other block agreeing with it stating its numbers.
    A record of rules version 24 or before keeps no block's numbers (`BLOCK_NUMBERS`): not asked."""
    blocks, numbers, words = mine
    their_blocks, their_numbers, their_words = theirs
    rows = np.flatnonzero(blocks & (numbers >= BLOCK_NUMBERED))
    if not len(rows) or not (their_blocks & (their_numbers >= BLOCK_NUMBERED)).any():
        return False
    stated = numbers.astype(np.int64)[rows]
    theirs_stated = their_numbers.astype(np.int64)
    near = equal[rows]
    best = np.argmax(near, axis=1)
    agreed = near[np.arange(len(rows)), best] >= AGREEING_VALUES
    slot = _sole_slot(equal)[rows]
    in_place = ~agreed & (slot >= 0)
    best = np.where(in_place, slot, best)
    # as long: a length read as 127 words (`MAX_PARAGRAPH_WORDS`) may be any longer (a part's list and its
    # view-all page's, en dev)
    counterpart = ((agreed | in_place) & their_blocks[best] & (words[rows] == their_words[best])
                   & (words[rows] < MAX_PARAGRAPH_WORDS))
    numbered = (theirs_stated[best] >= BLOCK_NUMBERED) & (block_count(theirs_stated[best]) == block_count(stated))
    stated_there = ((near >= AGREEING_VALUES) & their_blocks[None, :]
                    & (theirs_stated[None, :] == stated[:, None])).any(axis=1)
    return bool((counterpart & numbered & (theirs_stated[best] != stated) & ~stated_there).any())


def _sole_slot(equal: np.ndarray) -> np.ndarray:
    """For each paragraph, the only paragraph of the other's between its neighbours' counterparts (-1: none or more).

    Counterparts and places as `_absent_from` reads them (`_places`); a slot that is another
    paragraph's counterpart is none."""
    agreed, counterpart, before, after = _places(equal)
    slot = np.where((counterpart < 0) & (after - before == 2), before + 1, -1)
    taken = np.asarray(agreed.any(axis=0))
    return np.where((slot >= 0) & ~taken[np.maximum(slot, 0)], slot, -1)


# values of 4 two paragraphs share that make them counterparts anywhere on the page (`_absent_from`)
AGREEING_VALUES = 3


def _places(equal: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Each paragraph's counterparts and place, from `_equal_values`: (agreed, counterpart, before, after).

    `agreed`: bool[n, m], the other's paragraphs sharing `AGREEING_VALUES` with it; `counterpart`:
    the one sharing most (-1: none); its place: the other's paragraphs after `before` (the last
    counterpart before it, else -1) and before `after` (the first after it, else m)."""
    agreed = equal >= AGREEING_VALUES
    counterpart = np.where(agreed.any(axis=1), np.argmax(np.where(agreed, equal, -1), axis=1), -1)
    before = np.maximum.accumulate(np.concatenate([[-1], counterpart[:-1]]))
    later = np.where(counterpart >= 0, counterpart, equal.shape[1])
    after = np.minimum.accumulate(np.concatenate([later[1:], [equal.shape[1]]])[::-1])[::-1]
    return agreed, counterpart, before, after


def _own_words(paragraphs: np.ndarray) -> np.ndarray:
    """Each paragraph's words, 0 for a line its site showed before (`wordpairs.mark_shown`): not its new text."""
    return np.where(shown_before(paragraphs), 0, paragraph_words(paragraphs))


# a paragraph's match in its place (one value equal) holds it only if no more than this many words shorter:
# a new paragraph's length (NewTextTolerance's default) is text the match cannot hold (`_absent_from`)
IN_PLACE_SHORTER_BY = NewTextTolerance.min_paragraph_words


def _absent_from(values: np.ndarray, their_values: np.ndarray, words: np.ndarray,
                 their_words: np.ndarray, equal: np.ndarray | None = None) -> np.ndarray:
    """Whether each paragraph is absent from the other page's (bool[n]): none of theirs is its counterpart.

    A paragraph's counterpart keeps its k-th values with the Jaccard of their pairs: a light edit
    (2 words of 40 changed: ~0.8) most of the 4, new text none but by chance. Chance is not rare:
    paragraphs of one story share its names and phrases ("the prime minister", "the flooded
    valley"), and one value of a new paragraph is often another's. Three values are a counterpart
    anywhere (`AGREEING_VALUES`: a paragraph moved, even lightly edited, keeps them; two paragraphs
    of one story keep three by chance ~4 J^3, under 0.1 %); one value only in the paragraph's own
    place, between the counterparts of its neighbours (the paragraphs with three), where an edit
    stays and a chance match elsewhere on the page does not count. Where no paragraph has three,
    its place is the whole page. A paragraph of the story put in a fetch that lacked it reads as
    found 46 % of the time with one value anywhere, 8.2 % with this rule (the 130 articles of
    readability's test pages; `bench/counterparts.py`).

    A match in place holds a paragraph only if the paragraphs matched there are together no more
    than `IN_PLACE_SHORTER_BY` words shorter than it (`words`, `their_words`: the paragraphs'
    lengths): they cannot hold its text otherwise. A paragraph replaced by a short line whose one
    value is equal by chance or found by trial (an adversarial review replaced an 80-word
    paragraph by 24 words after 72 tries) is new; a paragraph split in two keeps both halves in
    its place. `equal`: `_equal_values(values, their_values)` if the caller has it."""
    if not len(values) or not len(their_values):
        return np.zeros(len(values), dtype=bool)
    if equal is None:
        equal = _equal_values(values, their_values)
    slots = np.arange(their_values.shape[0])
    # the place between the last counterpart before each paragraph and the first after it
    agreed, _, before, after = _places(equal)
    in_place = (slots[None, :] > before[:, None]) & (slots[None, :] < after[:, None])
    placed = (equal >= 1) & in_place
    long_enough = placed.astype(np.int64) @ their_words >= words - IN_PLACE_SHORTER_BY
    return np.asarray(~(agreed.any(axis=1) | (placed.any(axis=1) & long_enough)))


def _equal_values(values: np.ndarray, their_values: np.ndarray) -> np.ndarray:
    """How many of its 4 values each paragraph shares with each of the other's, k-th with k-th: int[n, m].

    n x m x 4 (a few thousand) in one comparison."""
    return (values[:, None, :] == their_values[None, :, :]).sum(axis=2)


_UNPLACED = np.zeros(0, dtype=np.bool_)  # a signature without its paragraphs' article-block marks
_NO_NUMBERS = np.zeros(0, dtype=np.uint8)  # a signature without its paragraphs' numbers (`blocks_of`: no block)


def outside_held_paragraphs(columns: SignatureColumns, methods: Methods, mine: Mapping[int, Any], own: int,
                             sizes: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The most word pairs each page can have new to the other: those outside its paragraphs the other surely holds.

    For the candidates at `rows`: of the page's `own` pairs, its paragraphs' that no paragraph of
    the candidate agrees with in 3 of 4 values (`AGREEING_VALUES`: held nearly verbatim; two
    paragraphs of one story agree so under 0.1 % of the time) and its site did not show before,
    plus its pairs outside paragraphs (short lines: `own` less all its paragraphs' pairs, a
    paragraph of w words being w - 1); the same of the candidate's `sizes` pairs against the page.
    The page's paragraph edited in place (2 values shared with the only one in its place, as long:
    `_edited_in_place`) is held too.
    A block of short lines (a list, a table's rows: `paragraph_rows.blocks_of`) is held by a block
    of the other agreeing so, as text the other shows line for line; one not held is read as its
    short lines, outside paragraphs (as before rules version 27), so a block only lowers a bound.
    The bound errs high where a sketch leaves paragraphs out (capped) or a length reads 127 words
    for more. Where a page repeats pairs (half of web dev's pages; more in Vietnamese, Chinese), its
    paragraphs hold more pairs than its distinct ones (a set): the share outside is then taken of
    its paragraphs' pairs (`_outside`), blind to its short lines, and the bound moves a share no
    further than the share's own error (`WordPairsMethod.new_share_errors`).

    The shares of new pairs are MinHash estimates whose error grows as the pages' sizes part: a
    teaser of 0.6 of its article, all of it inside, reads 0.04 sd new, one in ten over 0.10,
    the tolerance (`new_shares.in_runs`). What the sketches show held bounds them (`relations.judged`)."""
    count = len(columns)
    mine_out, their_out = np.full(count, np.nan), np.full(count, np.nan)
    held = _paragraphs_held(columns, methods, mine, own, sizes, rows)
    if held is not None:
        at, (mine_held_out, their_held_out, _) = held
        mine_out[at], their_out[at] = mine_held_out, their_held_out
        _edited_in_place(columns, methods, mine, own, at, mine_out)
    return mine_out, their_out


def _edited_in_place(columns: SignatureColumns, methods: Methods, mine: Mapping[int, Any], own: int,
                     rows: np.ndarray, out: np.ndarray) -> None:
    """`out` (the page's pairs outside its held paragraphs, at `rows`) less its paragraphs edited in place (in place).

    A paragraph with no counterpart of 3 values (`AGREEING_VALUES`) whose only paragraph of the
    other's in its place (between its neighbours' counterparts, `_sole_slot`) shares
    `IN_PLACE_VALUES` of its 4 values with it and as many words is that paragraph edited, as
    `numbers_changed` reads it: a light edit of a few words in a paragraph of 30-40 keeps 2 of its
    4 values as often as 3 (web dev: a 39-word opening with 5 words changed, 0.11 of its page read
    outside, 0.056 of its pairs new). It is held text, as a paragraph agreeing in 3 is (both bound
    an edit's few new pairs as none). Another paragraph of that length in its place shares 2 values
    by chance ~6 J^2 (J: two paragraphs of one story's Jaccard, under 0.07: under 3 %); and the
    bound moves a share by its error at most (`relations._bounded_by_held_paragraphs`). Asked of
    the few matched rows whose share the bound may move; paragraphs against paragraphs only, as
    `new_paragraphs` reads places, a block held only by a block (`wordpair_kernels.paragraphs_held`,
    whose reading this repeats where it moves nothing else)."""
    entry = methods.get(NEW_TEXT_METHOD)
    signature = mine.get(entry[0]) if entry is not None else None
    paragraphs = getattr(signature, "paragraphs", None)
    if entry is None or paragraphs is None or not len(paragraphs) or not own:
        return
    tag, method = entry
    # the rows' paragraphs side by side, then one compiled pass over all of them (`wordpair_kernels.edited_in_place`)
    at, records = columns.present(tag, rows[np.isfinite(out[rows])])
    if not len(at):
        return
    lengths = np.fromiter(map(len, records), dtype=np.int64, count=len(records))
    ends = np.cumsum(lengths)
    # the records' sketches read in one compiled pass (`record_sketches`); one cut short is refused as before
    their_values, their_words, their_blocks, offsets, whole = record_sketches(
        np.frombuffer(b"".join(records), dtype=np.uint8), ends - lengths, ends, cast(Any, method).record_width,
        BLOCKS_BELOW)
    if not whole:
        for data in records:
            cast(Any, method).paragraphs_of(data)  # raises, as it did for each record in turn
        raise ValueError("a word-pairs record shorter than its paragraph sketch")
    blocks = blocks_of(cast(np.ndarray, getattr(signature, "numbers", _NO_NUMBERS)), len(paragraphs))
    out[at] = edited_in_place(paragraph_values(paragraphs), paragraph_words(paragraphs), blocks,
                              shown_before(paragraphs), float(own), their_values, their_words, their_blocks, offsets,
                              out[at], AGREEING_VALUES, IN_PLACE_VALUES, MAX_PARAGRAPH_WORDS, EDITED_NEW)


def _paragraphs_held(columns: SignatureColumns, methods: Methods, mine: Mapping[int, Any], own: int,
                     sizes: np.ndarray | None, rows: np.ndarray) -> tuple[np.ndarray, tuple[np.ndarray, ...]] | None:
    """`wordpair_kernels.paragraphs_held` of the candidates at `rows` with word pairs: those rows and its three arrays.

    In one compiled pass over their records as stored (before: each record's sketch decoded, then
    compared, in numpy calls of a few values each). None where the page has no paragraph."""
    entry = methods.get(NEW_TEXT_METHOD)
    signature = mine.get(entry[0]) if entry is not None else None
    paragraphs = getattr(signature, "paragraphs", None)
    if paragraphs is not None:  # its blocks of short lines are held only by a block (`paragraphs_held`)
        numbers = cast(np.ndarray, getattr(signature, "numbers", _NO_NUMBERS))
        blocks = blocks_of(numbers, len(paragraphs))
    if entry is None or paragraphs is None or not len(paragraphs) or not len(rows):
        return None
    tag, method = entry
    at, data = columns.present(tag, rows)
    if not len(at):
        return None
    lengths = np.fromiter(map(len, data), dtype=np.int64, count=len(data))
    ends = np.cumsum(lengths)
    theirs = np.zeros(len(at)) if sizes is None else sizes[at].astype(np.float64)
    return at, paragraphs_held(np.frombuffer(b"".join(data), dtype=np.uint8), ends - lengths, ends,
                               cast(Any, method).record_width, paragraphs.astype(np.uint64), blocks, float(own),
                               theirs, AGREEING_VALUES, BLOCKS_BELOW)


def held_in_paragraphs(columns: SignatureColumns, methods: Methods, mine: Mapping[int, Any], own: int,
                       rows: np.ndarray) -> np.ndarray:
    """Of the page's `own` word pairs, those in its paragraphs each candidate at `rows` holds nearly verbatim.

    A paragraph held: one of the candidate's agrees with it in 3 of 4 values (`AGREEING_VALUES`).
    Lines its site showed before (`mark_shown`) are left out: they are the site's, and prove
    nothing of the page's own text. Of a page that repeats pairs, as `_outside` takes them
    (the share held of its paragraphs' pairs). 0 where not measured."""
    out = np.zeros(len(columns))
    held = _paragraphs_held(columns, methods, mine, own, None, rows)
    if held is not None:
        at, (_, _, held_pairs) = held
        out[at] = held_pairs
    return out
