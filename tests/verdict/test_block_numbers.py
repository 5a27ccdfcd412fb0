"""A score or a price replaced in a table's rows under an article is new text; a stamp's time changed is not.

A table's rows are lines under the sketch's 12 words: one block of the sketch (`line_blocks`), whose
numbers were not kept (its numbers byte only said "a block"). A re-fetch of a results page with one
score changed kept the block's pairs but two and read as a light edit: the later fetch was the
earlier one's duplicate, and a crawler dropping it kept the old score (issue 57; `bench/crawler_cases.py`
kind `table`: 6 of 6 duplicates). The block's byte now holds a hash of its numbers, dates and times
left out (`paragraph_rows.block_numbers`): a re-fetch whose update stamps and listed times changed
stays a duplicate, and so does a word changed in a row.
"""

from __future__ import annotations

import numpy as np

from streamdedup.fingerprints.paragraph_rows import (
    BLOCK_NUMBERED,
    BLOCK_NUMBERS,
    BLOCKS_BELOW,
    block_numbers,
    blocks_of,
)
from streamdedup.fingerprints.wordpairs import WordPairsMethod
from streamdedup.testing import run_records
from streamdedup.tokens.document import Document

ARTICLE = [
    "The league's spring round opened on Saturday afternoon in front of crowds that the clubs described as "
    "the largest since the stadiums reopened, with several grounds sold out days before kick-off.",
    "Rapid needed a late goal to stay level with Sturm after a first half in which the visitors controlled "
    "the midfield and forced the home goalkeeper into a string of saves from distance.",
    "In Salzburg the champions struggled against a disciplined Austria side that defended deep and waited "
    "for the counter-attack, which came twice in the final quarter of an hour.",
    "The coaches of the promoted sides said afterwards that the results showed how much their squads had "
    "learned during the winter break, and both promised to attack more in the coming weeks.",
]
ROWS = [("Rapid", 2, 2, "Sturm"), ("Austria", 1, 0, "Salzburg"), ("LASK", 3, 1, "Hartberg"),
        ("Altach", 0, 0, "Wolfsberg"), ("Ried", 2, 1, "Tirol")]


def _page(page_id: str, rows: list[tuple[str, int, int, str]], day: int, stamps: tuple[str, str] | None = None
          ) -> dict:
    """The results page of a real-looking news template: nav, the article, its table, a footer."""
    table = "<table class='results'>" + "".join(
        f"<tr><td>{home}</td><td>{x}:{y}</td><td>{away}</td></tr>" for home, x, y, away in rows) + "</table>"
    times = ("" if stamps is None else
             f"<ul class='times'><li>Kick-off times: Saturday, {stamps[0]}</li><li>Last update: {stamps[1]}</li></ul>")
    html = ("<!doctype html><html><head><title>Matchday results | sport.example</title><meta charset='utf-8'>"
            "</head><body><header><nav><ul><li><a href='/'>Home</a></li><li><a href='/football'>Football</a></li>"
            "<li><a href='/tables'>Tables</a></li></ul></nav></header><main><article><h1>Matchday results</h1>"
            + "".join(f"<p>{p}</p>" for p in ARTICLE) + table + times
            + "</article><aside><h2>Most read</h2><p><a href='/a'>Transfer news</a></p></aside></main>"
            "<footer><p>Copyright 2026 sport.example. All rights reserved.</p></footer></body></html>")
    return {"id": page_id, "url": "https://sport.example/round-7", "fetched_at": f"2026-03-0{day}T18:00:00Z",
            "html": html}


def _verdicts(pages: list[dict], path) -> dict[str, dict]:
    return {o.dedup["id"]: o.dedup for o in run_records(pages, path)}


def test_a_score_changed_in_the_table_is_new_text(tmp_path):
    """One score or every score changed: the later fetch is unique and supersedes the earlier (one story)."""
    one = [*ROWS[:2], ("LASK", 3, 2, "Hartberg"), *ROWS[3:]]
    every = [(home, x + 1, y, away) for home, x, y, away in ROWS]
    for name, rows in (("one", one), ("every", every)):
        got = _verdicts([_page("earlier", ROWS, 1), _page("later", rows, 2)], tmp_path / name)
        assert got["later"]["status"] == "unique", (name, got["later"])
        assert got["later"]["supersedes"] == ["earlier"], (name, got["later"])


def test_a_stamp_or_a_word_changed_beside_the_table_stays_a_duplicate(tmp_path):
    """Times and dates a re-fetch changes, or a team's name spelled otherwise, add no number: a duplicate."""
    pages = [_page("earlier", ROWS, 1, ("14:30 and 17:00", "7 March 2026, 18:02")),
             _page("stamped", ROWS, 2, ("14:30 and 17:30", "8 March 2026, 09:15"))]
    got = _verdicts(pages, tmp_path / "stamp")
    assert got["stamped"]["status"] == "duplicate" and got["stamped"]["duplicate_of"] == "earlier", got["stamped"]
    renamed = [("SK Rapid", 2, 2, "Sturm"), *ROWS[1:]]
    got = _verdicts([_page("earlier", ROWS, 1), _page("renamed", renamed, 2)], tmp_path / "word")
    assert got["renamed"]["status"] == "duplicate" and got["renamed"]["duplicate_of"] == "earlier", got["renamed"]


def _rows_text(rows: list[tuple[str, int, int, str]]) -> str:
    return "\n".join(f"{home} {x}:{y} {away}" for home, x, y, away in rows)


def test_a_blocks_byte_holds_its_numbers_and_still_says_block():
    """A count of 0 with a hash: `BLOCK_NUMBERED` and up for a block stating numbers, `BLOCK_NUMBERS`
    for one stating dates and times only; each a block to `blocks_of` and to the stored records' kernels
    (a block files no paragraph key)."""
    text = "\n".join([*ARTICLE[:2], _rows_text(ROWS), *ARTICLE[2:]])
    signature = WordPairsMethod().signature(Document.from_text(text))
    assert signature is not None
    assert blocks_of(signature.numbers, len(signature.paragraphs)).tolist() == [False, False, True, False, False]
    assert BLOCK_NUMBERED <= int(signature.numbers[2]) < BLOCKS_BELOW
    method = WordPairsMethod()
    rows = method.index_key_rows([method.encode(signature)])
    assert rows is not None and [bytes(key) for key in rows[0]] == method.index_keys(signature)
    stamps = "Kick-off times: Saturday, 14:30 and 17:00\nLast update: 7 March 2026, 18:02\nRapid against Sturm"
    doc = Document.from_text(stamps)
    assert block_numbers(doc, np.array([[0, len(doc.text)]], dtype=np.int64)).tolist() == [BLOCK_NUMBERS]
