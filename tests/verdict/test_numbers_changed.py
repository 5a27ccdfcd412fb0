"""A fact corrected in one sentence (a number replaced) is no duplicate: `new_text.numbers_changed`."""

from __future__ import annotations

from typing import Any

import numpy as np

from streamdedup import Deduplicator
from streamdedup.fingerprints.wordpairs import WordPairsMethod, numbers_byte, paragraph_values
from streamdedup.tokens.document import Document
from streamdedup.verdict.new_text import numbers_changed

METHOD = WordPairsMethod()
STORY = [
    "The regional council met on Tuesday evening to discuss the flooding that hit the valley towns last week "
    "and the repairs that residents have been waiting for since the river burst its banks.",
    "Officials said 5 people were injured when the old footbridge near the mill collapsed under the weight of "
    "debris, and 120 homes along the lower road are still without drinking water.",
    "The council will vote next month on a plan to rebuild the bridge with a wider span and to raise the "
    "embankment along the northern bank before the autumn storms arrive in the region.",
]


def _page(paragraphs: list[str], name: str) -> dict[str, Any]:
    body = "".join(f"<p>{p}</p>" for p in paragraphs)
    return {"id": name, "url": f"https://news.example/{name}",
            "content": f"<html><head><title>Flood</title></head><body><article><h1>Flood</h1>{body}</article>"
                       "</body></html>"}


def _signature(paragraphs: list[str]):
    signature = METHOD.signature(Document.from_text("\n".join(paragraphs), "en"))
    assert signature is not None
    return signature


def test_a_number_replaced_in_a_sentence_is_not_a_duplicate_but_a_light_edit_and_an_update_line_are() -> None:
    corrected = [STORY[0], STORY[1].replace("5 people", "50 people"), STORY[2]]
    edited = [STORY[0], STORY[1].replace("weight of debris", "weight of the debris"), STORY[2]]
    updated = ["Updated: 06 December 2026, 14:30 GMT", *STORY]
    with Deduplicator() as dedup:
        first = dedup.add_many([_page(STORY, "original")])[0]
        # each judged against the original alone (`query` files nothing)
        fact, edit, stamp = (dedup.query(**_page(paragraphs, name)) for paragraphs, name in
                             ((corrected, "corrected"), (edited, "edited"), (updated, "updated")))
    assert first.status == "unique"
    assert fact.status == "unique" and fact.duplicate_of is None
    assert "original" in fact.related_to or first.cluster_id in fact.related_to
    assert edit.status == "duplicate" and edit.duplicate_of == "original"
    assert stamp.status == "duplicate" and stamp.duplicate_of == "original"


def test_the_numbers_of_a_paragraph_and_its_counterpart_are_compared_only_where_as_many() -> None:
    page = _signature(STORY)
    corrected = _signature([STORY[0], STORY[1].replace("120 homes", "130 homes"), STORY[2]])
    dropped = _signature([STORY[0], STORY[1].replace("5 people", "people"), STORY[2]])
    same = _signature([STORY[0], STORY[1].replace("debris", "the debris"), STORY[2]])
    values = METHOD.paragraphs_of(METHOD.encode(page))
    assert numbers_byte(STORY[1]) >> 5 == 2 and numbers_byte(STORY[0]) == 0
    for other, changed in ((corrected, True), (dropped, False), (same, False)):
        theirs = METHOD.paragraphs_of(METHOD.encode(other))
        assert numbers_changed(_values(values[0]), values[2], _values(theirs[0]), theirs[2]) is changed


def test_a_record_without_numbers_reads_none_and_is_laid_out_as_mine() -> None:
    """A store of 0.16.0 or before kept no numbers: its records decode, and no number reads changed."""
    data = METHOD.encode(_signature(STORY))
    old = data[: len(data) - 3]  # the three paragraphs' numbers cut off: the layout before
    assert METHOD.laid_out_as_mine(data) and METHOD.laid_out_as_mine(old)
    paragraphs, _, numbers = METHOD.paragraphs_of(old)
    assert len(paragraphs) == 3 and len(numbers) == 0
    corrected = _signature([STORY[0], STORY[1].replace("5 people", "50 people"), STORY[2]])
    assert not numbers_changed(_values(corrected.paragraphs), corrected.numbers, _values(paragraphs), numbers)


def _values(paragraphs: np.ndarray) -> np.ndarray:
    return paragraph_values(paragraphs)
