"""Which paragraphs of one sketch have a counterpart in another (`new_text._absent_from`): pure logic."""

from __future__ import annotations

import numpy as np

from streamdedup.verdict.line_places import took_a_place
from streamdedup.verdict.new_text import _absent_from


def _values(rows: list[list[int]]) -> np.ndarray:
    return np.array(rows, dtype=np.int64)


# the other page: five paragraphs, each with its own four values
THEIRS = _values([[10 * i + k for k in range(4)] for i in range(5)])


def _alike(mine: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The lengths of `mine`'s and THEIRS' paragraphs: 50 words each."""
    return np.full(len(mine), 50), np.full(len(THEIRS), 50)


def test_three_values_are_a_counterpart_anywhere() -> None:
    moved = [40, 41, 42, 999]  # paragraph 4's, one value changed, now first
    mine = _values([moved, [0, 1, 2, 3], [10, 11, 12, 13]])
    assert _absent_from(mine, THEIRS, *_alike(mine)).tolist() == [False, False, False]


def test_one_value_is_a_counterpart_only_in_the_paragraphs_place() -> None:
    # paragraph 2 edited (one value kept) between paragraphs 1 and 3, which have all theirs
    edited = _values([[0, 1, 2, 3], [10, 11, 12, 13], [20, 901, 902, 903], [30, 31, 32, 33]])
    assert _absent_from(edited, THEIRS, *_alike(edited)).tolist() == [False, False, False, False]
    # a new paragraph between 1 and 2, sharing one value with paragraph 4 (a name of the story)
    added = _values([[0, 1, 2, 3], [10, 11, 12, 13], [901, 902, 42, 904], [20, 21, 22, 23]])
    assert _absent_from(added, THEIRS, *_alike(added)).tolist() == [False, False, True, False]


def test_without_any_counterpart_of_three_values_the_place_is_the_whole_page() -> None:
    edited = _values([[0, 901, 902, 903], [904, 905, 32, 906]])  # every paragraph heavily edited
    assert _absent_from(edited, THEIRS, *_alike(edited)).tolist() == [False, False]
    assert _absent_from(_values([[901, 902, 903, 904]]), THEIRS, *_alike(THEIRS[:1])).tolist() == [True]
    assert _absent_from(_values([]).reshape(0, 4), THEIRS, *_alike(THEIRS[:0])).tolist() == []


def test_a_new_paragraph_takes_a_place_unless_one_there_is_its_edit() -> None:
    # the page's 14-word paragraph where the other had a 13-word one and a 40-word one: the short
    # one edited (a light edit that also dropped the long one), no paragraph replaced
    assert not took_a_place(np.array([14]), np.array([5]), np.array([13, 40]), np.array([5, 5]))
    # a 20-word one there: it took the place of one of them
    assert took_a_place(np.array([20]), np.array([5]), np.array([13, 40]), np.array([5, 5]))
    # any pair counts, not only the longest: the longest new of each stand at other places
    assert took_a_place(np.array([15, 19]), np.array([1, 6]), np.array([45, 60]), np.array([1, 9]))
    # another place, or a line the site showed before (0 words): none taken
    assert not took_a_place(np.array([15]), np.array([2]), np.array([45]), np.array([1]))
    assert not took_a_place(np.array([0]), np.array([1]), np.array([45]), np.array([1]))


def test_a_match_in_place_holds_a_paragraph_only_if_it_is_long_enough_to() -> None:
    """Paragraph 2 (80 words) replaced by 24 words that share one value with it (by chance, or
    found by trial: an adversarial review needed 72 tries): its text is not in those 24 words, so it
    is absent. Edited to 70 words, or split in two halves of 40 in its place, it is there."""
    lengths = np.array([60, 60, 80, 60, 60])
    replaced = _values([[0, 1, 2, 3], [10, 11, 12, 13], [20, 901, 902, 903], [30, 31, 32, 33]])
    mine = np.array([60, 60, 80, 60])
    assert _absent_from(replaced, THEIRS, mine, np.array([60, 60, 24, 60, 60])).tolist() == [False, False, True, False]
    assert _absent_from(replaced, THEIRS, mine, np.array([60, 60, 70, 60, 60])).tolist() == [False] * 4
    split = _values([[0, 1, 2, 3], [10, 11, 12, 13], [20, 901, 902, 903], [904, 21, 905, 906], [30, 31, 32, 33],
                     [40, 41, 42, 43]])
    halves = np.array([60, 60, 40, 40, 60, 60])
    assert _absent_from(THEIRS, split, lengths, halves).tolist() == [False] * 5  # 40 + 40 words in its place
    assert _absent_from(THEIRS, split, lengths, np.array([60, 60, 40, 12, 60, 60])).tolist()[2]  # 52: not all
