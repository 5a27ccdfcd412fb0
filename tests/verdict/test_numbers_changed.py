"""A fact corrected in one sentence (a number replaced) is no duplicate: `new_text.numbers_changed`."""

from __future__ import annotations

from typing import Any

import numpy as np
from flood_page import flood_html

from streamdedup import Deduplicator
from streamdedup.fingerprints.paragraph_rows import numbers_byte, paragraph_values
from streamdedup.fingerprints.wordpairs import WordPairsMethod
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
    return {"id": name, "url": f"https://news.example/{name}", "content": flood_html(paragraphs)}


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


# a Hindi story (written for this test); its second paragraph states two numbers
HINDI = [
    "जिला प्रशासन ने मंगलवार को बताया कि पिछले सप्ताह आई बाढ़ से घाटी के कई गांवों में भारी नुकसान हुआ है और लोग "
    "अब भी मदद का इंतजार कर रहे हैं।",
    "अधिकारियों के अनुसार पुराने पुल के गिरने से {0} लोग घायल हुए और निचली सड़क के किनारे बसे {1} घरों में अब भी पीने "
    "का पानी नहीं पहुंच पाया है।",
    "परिषद अगले महीने एक नई योजना पर मतदान करेगी जिसके तहत पुल को चौड़ा बनाया जाएगा और नदी के उत्तरी किनारे पर "
    "तटबंध को ऊंचा किया जाएगा।",
]


def _in_digits(text: str, zero: int) -> str:
    """`text` with its ASCII digits written in the script whose zero is at code point `zero`."""
    return "".join(chr(zero + int(ch)) if "0" <= ch <= "9" else ch for ch in text)


def test_a_number_in_another_scripts_digits_is_the_same_number() -> None:
    """A copy writing a story's numbers in ASCII digits (or Persian ones for Arabic-Indic) states the same facts.

    Sites write numbers in their script's digits or in ASCII ones, and a syndicated copy may write
    them the other way; before, such a copy was new text both ways (`unique`), as a correction is."""
    line = "Officials said 120 people were hurt and 35 homes are without water since the storm hit the town."
    for zero in (0x660, 0x6F0, 0x966, 0xE50, 0x9E6):  # Arabic-Indic, Persian, Devanagari, Thai, Bengali
        assert numbers_byte(_in_digits(line, zero)) == numbers_byte(line)
        assert numbers_byte(_in_digits(line.replace("120", "130"), zero)) != numbers_byte(line)
    story = [p.format("१२०", "३५") for p in HINDI]
    ascii_copy = [p.format("120", "35") for p in HINDI]
    corrected = [p.format("१३०", "३५") for p in HINDI]
    with Deduplicator() as dedup:
        first = dedup.add_many([_page(story, "original")])[0]
        copy, fact = (dedup.query(**_page(paragraphs, name)) for paragraphs, name in
                      ((ascii_copy, "copy"), (corrected, "corrected")))
    assert first.status == "unique"
    assert copy.status == "duplicate" and copy.duplicate_of == "original", copy
    assert fact.status == "unique" and fact.duplicate_of is None, fact


def test_a_later_fetch_of_one_url_whose_counter_changed_supersedes_the_earlier_in_one_story() -> None:
    """A re-crawl whose 12+-word line states another count ("There are 14 comments ...") replaces its URL's earlier fetch.

    A number replaced is new text both ways, so the re-crawl was `unique`, related to the earlier
    fetch, and a story of its own. Between fetches of one URL the later is what the URL says now:
    it supersedes the earlier (one story) and is still not its duplicate (a correction there is
    kept). A fetch arriving after a later one of its URL, or a page at another URL, keeps the rule
    both ways."""
    def fetched(comments: int, at: str, url: str = "https://news.example/flood") -> dict[str, Any]:
        line = (f"There are {comments} comments on this story so far, join the discussion and tell us what you "
                "think about it")
        return {**_page([*STORY, line], "unused"), "id": f"{comments}-{at}", "url": url,
                "fetched_at": f"2024-03-01T{at}:00Z"}

    with Deduplicator() as dedup:
        first, again = dedup.add_many([fetched(12, "10:00"), fetched(14, "16:00")])
        assert [len(story["pages"]) for story in dedup.stories()] == [2]
    assert first.status == "unique"
    assert again.status == "unique" and again.supersedes == ("12-10:00",) and again.duplicate_of is None, again
    with Deduplicator() as dedup:
        later, late = dedup.add_many([fetched(14, "16:00"), fetched(12, "10:00")])  # the earlier fetch arrives last
        elsewhere = dedup.add(**fetched(16, "18:00", url="https://news.example/flood-2"))
    assert late.status == "unique" and late.supersedes == () and "14-16:00" in late.related_to, late
    assert elsewhere.status == "unique" and elsewhere.supersedes == () and elsewhere.duplicate_of is None, elsewhere


def test_the_paragraphs_agreement_is_counted_once_a_candidate_and_read_three_ways(monkeypatch: Any) -> None:
    """`new_paragraphs` counts the values each pair of paragraphs shares once a candidate: the page's
    side, the candidate's (its transpose) and `numbers_changed` read the one matrix, with the answers
    each made its own with."""
    import streamdedup.verdict.new_text as new_text
    import streamdedup.verdict.relations as relations

    counted, asked = [], []
    equal_values, new_paragraphs = new_text._equal_values, new_text.new_paragraphs

    def counting(values: np.ndarray, their_values: np.ndarray) -> np.ndarray:
        counted.append(1)
        return equal_values(values, their_values)

    def asking(*args: Any, **kwargs: Any) -> Any:
        rows = args[-1] if len(args) > 5 else kwargs.get("rows")
        asked.append(0 if rows is None else len(rows))
        return new_paragraphs(*args, **kwargs)

    monkeypatch.setattr(new_text, "_equal_values", counting)
    monkeypatch.setattr(relations, "new_paragraphs", asking)
    corrected = [STORY[0], STORY[1].replace("5 people", "50 people"), STORY[2]]
    with Deduplicator() as dedup:
        dedup.add_many([_page(STORY, "original")])
        fact = dedup.query(**_page(corrected, "corrected"))
    assert fact.status == "unique" and fact.duplicate_of is None  # the verdict as before
    assert sum(asked) >= 1 and len(counted) == sum(asked)

    page = _signature(STORY)
    values = METHOD.paragraphs_of(METHOD.encode(page))
    theirs = METHOD.paragraphs_of(METHOD.encode(_signature(corrected)))
    mine_values, their_values = _values(values[0]), _values(theirs[0])
    equal = equal_values(mine_values, their_values)
    words, their_words = np.full(len(mine_values), 30), np.full(len(their_values), 30)
    assert numbers_changed(mine_values, values[2], their_values, theirs[2], equal) is True
    assert (new_text._absent_from(mine_values, their_values, words, their_words, equal).tolist()
            == new_text._absent_from(mine_values, their_values, words, their_words).tolist())
    assert (new_text._absent_from(their_values, mine_values, their_words, words, equal.T).tolist()
            == new_text._absent_from(their_values, mine_values, their_words, words).tolist())
