"""A lone short line of an article that an earlier light edit dropped is new text; a host's or an edit's is not.

A line under the sketch's 12 words between two paragraphs (a heading, a list item) was in no row of the
sketch (lines that short counted only in blocks of 2+, 12+ words together), so an article crawled after
a light edit that dropped one was the edit's duplicate, and a crawler dropping it lost the line (issue
57, multilingual dev's content-loss edges: "gid: ..." of 5 words, a 12-word heading beside two such
lines). Such lines of 2+ tokens are now a short unit of the sketch (`WordPairsParams.short_lines`),
which counts from 5 words, stating no number, as a block inside the copy does
(`line_places.inserted_block`).
"""

from __future__ import annotations

import random

from streamdedup.fingerprints.paragraph_rows import blocks_of, paragraph_words
from streamdedup.fingerprints.wordpairs import WordPairsMethod
from streamdedup.testing import make_article, run_records, wrap_in_template
from streamdedup.tokens.document import Document

LINE = "Where the new pumping stations go"  # 6 words: no paragraph, no block alone


def _page(page_id: str, paragraphs: list[str], site: str) -> dict:
    return {"id": page_id, "url": f"https://{site}/{page_id}", "fetched_at": "2026-01-01T00:00:00Z",
            "html": wrap_in_template(paragraphs, site)}


def _edited(paragraphs: list[str], seed: int) -> list[str]:
    """One word of one paragraph changed: a light edit."""
    rng = random.Random(seed)
    out = [p.split() for p in paragraphs]
    para = out[rng.randrange(len(out))]
    para[rng.randrange(len(para))] = f"edit{rng.randrange(1000)}"
    return [" ".join(p) for p in out]


def test_a_lone_short_line_is_a_short_unit_of_the_sketch():
    """The line between two paragraphs is kept as a unit, read as a block, and so is one of 2 tokens; a word alone is not."""
    story = make_article(71, paragraphs=6)
    method = WordPairsMethod()
    for line, kept in ((LINE, 6), ("Read more", 2), ("Advertisement", 0)):
        signature = method.signature(Document.from_text("\n".join([*story[:3], line, *story[3:]]), "en"))
        assert signature is not None
        words = paragraph_words(signature.paragraphs)
        blocks = blocks_of(signature.numbers, len(words))
        if kept:
            assert len(words) == 7 and blocks.tolist() == [False] * 3 + [True] + [False] * 3 and words[3] == kept
        else:
            assert len(words) == 6 and not blocks.any(), (words, blocks)
        decoded = method.decode(method.encode(signature))
        assert (blocks_of(decoded.numbers, len(decoded.paragraphs)) == blocks).all()


def test_an_article_after_a_light_edit_that_dropped_its_short_line_is_not_its_duplicate(tmp_path):
    """The edit (on another site, first) lacks the 6-word line; the article follows, is kept and supersedes it."""
    story = make_article(71, paragraphs=9)
    article = [*story[:4], LINE, *story[4:]]
    pages = [_page("edit", _edited(story, 7), "a.example"), _page("article", article, "b.example"),
             _page("copy", article, "c.example")]
    got = {o.dedup["id"]: o.dedup for o in run_records(pages, tmp_path)}
    assert got["article"]["status"] == "unique" and got["article"]["supersedes"] == ["edit"], got["article"]
    assert got["copy"]["status"] == "duplicate" and got["copy"]["duplicate_of"] == "article", got["copy"]


def test_a_short_line_edited_stamped_or_joined_to_a_list_stays_a_duplicate(tmp_path):
    """Not new text: the line with a word changed (the edit's line stands in its place); a line added
    inside the copy that states a number (a date line, "Updated 10:42": a host's or a re-fetch's) or
    has under 5 words (a byline, a photo credit: a light edit may grow a word the sketch leaves out
    to that); the line moved beside a longer short line that the other page shows joined with it as
    one unit (a paragraph swapped with it)."""
    story = make_article(72, paragraphs=9)
    after = "Residents can read the full plan at the library"  # 9 words
    article = [*story[:4], LINE, *story[4:6], after, *story[6:]]
    cases = {
        "reworded": [*story[:4], LINE.replace("pumping", "pump"), *story[4:6], after, *story[6:]],
        "stamped": [*story[:4], LINE, *story[4:5], "Updated 10:42 on 5 March", *story[5:6], after, *story[6:]],
        "credit": [*story[:4], LINE, *story[4:5], "Photo by Anna Berg", *story[5:6], after, *story[6:]],
    }
    for name, paragraphs in cases.items():  # each alone after the article
        pages = [_page("article", article, "a.example"), _page(name, paragraphs, f"{name}.example")]
        got = {o.dedup["id"]: o.dedup for o in run_records(pages, tmp_path / name)}
        assert got[name]["status"] == "duplicate" and got[name]["duplicate_of"] == "article", got[name]

    swapped = [*story[:4], *story[4:6], LINE, after, *story[6:]]  # the line now beside `after`: one unit
    pages = [_page("swapped", swapped, "a.example"), _page("article", article, "b.example")]
    got = {o.dedup["id"]: o.dedup for o in run_records(pages, tmp_path / "swap")}
    assert got["article"]["status"] == "duplicate" and got["article"]["duplicate_of"] == "swapped", got["article"]
