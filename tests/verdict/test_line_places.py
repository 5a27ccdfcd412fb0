"""Where a page's new paragraphs stand in the copy (`line_places`): pure logic on sketch readings."""

from __future__ import annotations

import numpy as np

from streamdedup.verdict.line_places import edits_past_longest


def test_an_edit_between_the_same_two_paragraphs_is_an_edit_where_the_counts_part() -> None:
    """A paragraph absent from the other past the 16 longest, where the other lacks one of about its
    length between paragraphs agreeing with its two neighbours, is that one edited, though a paragraph
    read absent on one side only (a FAQ's repeated questions put counterparts out of order) moved the
    counts of found paragraphs before them. One whose neighbours agree with no such pair is new."""
    n = 40
    lengths = np.array([60 - i for i in range(20)] + [25] * 20)  # the 16 longest first
    new, their_new = np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
    new[[24, 30]] = True  # 24: read absent on this side only; 30: the edit
    their_new[31] = True  # the other's paragraph edited, one further on: its found count 30, the page's 29
    agreed = np.zeros((n, n), dtype=bool)
    agreed[np.arange(n), np.arange(n)] = True
    agreed[29, 30], agreed[31, 32] = True, True  # the edit's neighbours agree with those around the other's
    agreed[29, 29] = agreed[31, 31] = False
    assert edits_past_longest(new, lengths, their_new, lengths)[30]  # by the counts alone: not its place
    assert not edits_past_longest(new, lengths, their_new, lengths, agreed)[30]
    assert edits_past_longest(new, lengths, their_new, lengths, agreed)[24]  # nothing of the other's there
    # of another length (more than `EDITED_LENGTH` words apart), it is new text
    longer = lengths.copy()
    longer[31] = 30
    assert edits_past_longest(new, lengths, their_new, longer, agreed)[30]

