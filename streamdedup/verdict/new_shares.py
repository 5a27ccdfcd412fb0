"""The shares of new text each way, from the word pairs each page lacks of the other.

The engine (`relations.judged`) asks them of each stored candidate: the shares of word pairs each
page lacks of the other (`new_shares_of`, `fingerprints/wordpairs.py`), made shares of new text in
runs (`in_runs`) and less the lines the page's site showed before (`without_shown`). The measures
from the paragraph sketches (the longest new paragraph each way, the paragraphs each page holds) are
verdict/new_text.py's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

import numpy as np

from streamdedup.clean.page_urls import document_tag
from streamdedup.fingerprints.one_page_lines import with_other_stories_lines
from streamdedup.fingerprints.wordpairs import WordPairsSignature
from streamdedup.store.layout import DocRecord
from streamdedup.verdict.columns import Measured, Methods, SignatureColumns

# the method that measures how much of a page is absent from a candidate (its `new_shares`)
NEW_TEXT_METHOD = "wordpairs"


def new_shares_of(columns: SignatureColumns, methods: Methods, mine: Mapping[int, Any],
                  measured: Measured | None = None) -> tuple[np.ndarray, np.ndarray, int, np.ndarray] | None:
    """The shares of word pairs the page and each stored candidate lack of each other.

    For each stored candidate: the page's share of word pairs absent from it and its share
    absent from the page (NaN where either side has no word pairs), the page's count of pairs, and
    each candidate's; None when the new-text measure is not enabled. `measured`: those the
    candidate filter measured already (`Measured.tested`), taken as they are; the arrays returned
    are the caller's to change."""
    entry = methods.get(NEW_TEXT_METHOD)
    if entry is None:
        return None
    tag, method = entry
    signature = mine.get(tag)
    count = len(columns)
    if signature is None:  # too short for a word pair: nothing to measure
        return np.full(count, np.nan), np.full(count, np.nan), 0, np.zeros(count)
    if measured is not None and measured.tested.all():  # (recombined text: the filter measured ~60 a page)
        return measured.new_shares, measured.their_new_shares, int(signature.set_size), measured.sizes
    todo = np.arange(count) if measured is None else np.flatnonzero(~measured.tested)
    rows, theirs = columns.present(tag, todo)
    if len(rows) == count:  # the usual case: every candidate has pairs, measured in one call
        new_share, their_new_share, sizes = cast(Any, method).new_shares(signature, theirs)
        return new_share, their_new_share, int(signature.set_size), sizes
    if measured is None:
        new_share, their_new_share, sizes = np.full(count, np.nan), np.full(count, np.nan), np.zeros(count)
    else:  # the filter's where it measured; NaN elsewhere, but where measured below
        untested = ~measured.tested
        new_share = np.where(untested, np.nan, measured.new_shares)
        their_new_share = np.where(untested, np.nan, measured.their_new_shares)
        sizes = np.where(untested, 0.0, measured.sizes)
    if len(rows):
        new_share[rows], their_new_share[rows], sizes[rows] = cast(Any, method).new_shares(signature, theirs)
    return new_share, their_new_share, int(signature.set_size), sizes

# a page with fewer than this share of its match's word pairs is "much smaller" (`in_runs`)
MUCH_SMALLER = 0.7
# the runs correction reads new pairs as scattered edits only up to this share of the page's pairs
# new (`in_runs`): a changed word makes 2 new pairs, so 0.25 is ~12 % of the words changed, over
# twice the light edits the families hold (2-5 %); beyond, the page is other text in the same words
# (another selection of one topic's sentences, a rewrite), and its share of new pairs stands
MAX_EDITED_PAIRS = 0.25


def in_runs(columns: SignatureColumns, methods: Methods, mine: Mapping[int, Any],
             new_share: np.ndarray, their_new_share: np.ndarray, own: int, sizes: np.ndarray,
             rows: np.ndarray, shown: np.ndarray | None = None) -> None:
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
    read 0.05-0.07 new in runs against 0.44-0.47 of their pairs new).

    `shown`: of each candidate, the pairs of the page's lines its site showed that it lacks
    (`shown_pairs_lacked`; None: none). Both tests read the page's own text, without them: a
    host's box, other text than the match's, is new pairs in a run, not words of the page's own
    text changed, and no part of its size."""
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
    gone = np.zeros(len(rows)) if shown is None else np.minimum(np.nan_to_num(shown[rows]), pairs * own)
    own_text = own - gone  # the page's own text: its pairs less the shown lines' its match lacks
    extract = (own_text < MUCH_SMALLER * size2) | (size2 < MUCH_SMALLER * own_text)  # a verbatim extract's sizes
    own_new = (pairs * own - gone) / np.maximum(own_text, 1.0)
    runs = np.maximum(0.0, (5 * pairs * own - 2 * mine5 * own5) / (3 * own))
    their_runs = np.maximum(0.0, (5 * theirs2 * size2 - 2 * theirs5 * sizes5) / (3 * np.maximum(size2, 1.0)))
    new_share[rows] = np.where(extract, (pairs + mine5) / 2, np.where(own_new > MAX_EDITED_PAIRS, pairs, runs))
    their_new_share[rows] = np.where(extract, (theirs2 + theirs5) / 2,
                                     np.where(theirs2 > MAX_EDITED_PAIRS, theirs2, their_runs))


def other_stories_lines_shown(methods: Methods, mine: Mapping[int, Any], page: DocRecord,
                             others: Sequence[DocRecord]) -> Mapping[int, Any]:
    """The page's signatures with its lines one other story's page of its site showed counted as shown before.

    `fingerprints.one_page_lines`: a line only one earlier page of the site showed is the host's
    (not the page's new text) where that page is neither the page's own URL nor linked to it
    (`others`: its candidates a rule matched or that are related, as judged without this step): a
    paginated part, a revision, a re-fetch of the story is linked and keeps its lines as content.
    Linked, not any candidate: which candidates a page has depends on how they were found (the
    candidate filter, the global topology's index partitions), what it is to them does not."""
    entry = methods.get(NEW_TEXT_METHOD)
    signature = mine.get(entry[0]) if entry is not None else None
    if entry is None or not isinstance(signature, WordPairsSignature) or not signature.one_page:
        return mine
    linked = {document_tag(page.document), *(document_tag(other.document) for other in others)}
    marked = with_other_stories_lines(signature, linked)
    return mine if marked is signature else {**mine, entry[0]: marked}


def shown_pairs_lacked(columns: SignatureColumns, methods: Methods, mine: Mapping[int, Any],
                       rows: np.ndarray) -> np.ndarray | None:
    """Of each candidate at `rows`, the pairs of the page's lines its site showed that it lacks (None: no such line).

    A line two of the site's earlier pages showed (a menu, a blurb, a disclaimer the template model
    does not remove yet: `wordpairs.with_shown_lines`) is the host's, not text the page adds; so are
    the lines one other story's page of the site showed (`other_stories`, `one_page_lines`), each
    set of them measured apart. S errs low (its Jaccard is clipped at 0); 0 at other rows, NaN where
    not comparable."""
    entry = methods.get(NEW_TEXT_METHOD)
    signature = mine.get(entry[0]) if entry is not None else None
    lines = getattr(signature, "shown", None)
    others = getattr(signature, "other_stories", ())
    if entry is None or (lines is None and not others) or not len(rows):
        return None
    shown = lines.pairs if lines is not None else None  # made only now: most pages have no match
    parts = [pairs for pairs in (other.pairs for other in others) if pairs is not None]
    if shown is None and not parts:
        return None
    rows, data = columns.present(entry[0], rows)
    if not len(rows):
        return None
    method = cast(Any, entry[1])
    gone = np.zeros(len(rows))
    if shown is not None:
        gone = method.new_shares(shown, data)[0] * float(shown.set_size)  # NaN: not comparable, left as it is
    for pairs in parts:  # another story's lines (`one_page_lines`): each set apart, its pairs mostly its own
        gone = gone + np.nan_to_num(method.new_shares(pairs, data)[0] * float(pairs.set_size))
    lacked = np.zeros(len(columns))
    lacked[rows] = gone
    return lacked


def without_shown(new_share: np.ndarray, own: int, rows: np.ndarray, shown: np.ndarray | None) -> np.ndarray:
    """The new shares at `rows` made shares of the page less the site's lines its match lacks (in place).

    `shown`: those lines' pairs each candidate lacks (`shown_pairs_lacked`). Of the page's N new
    pairs (in runs), the S pairs of such lines absent from the match are taken out of the new text
    and the page: (N - S) / (own - S); lines the match holds too stay (a same-site light edit reads
    as before). Returns the pairs each share is of (`own`, or own - S)."""
    owns = np.full(len(new_share), float(own))
    if shown is None or not own or not len(rows):
        return owns
    gone = np.minimum(shown[rows], new_share[rows] * own)  # shown pairs the match lacks
    usable = ~np.isnan(gone) & (own - gone > 0)
    rows, gone = rows[usable], gone[usable]
    new_share[rows] = (new_share[rows] * own - gone) / (own - gone)
    owns[rows] = own - gone
    return owns
