"""An attacker's advance copy on his own site with the article's lines laid out otherwise (docs/limitations.md).

The copy lacks one 30-word paragraph of a 14-paragraph article and is crawled first; the article
follows in its news site's template. With the copy's lines merged three to one or all into one
(beside 40 short lines of its own, too), or the copy padded past the 127 paragraphs a sketch keeps
(130 lines of 29 words after the text), the article's paragraphs had no line of the copy to be
compared with (`PARAGRAPHS_FOUND`, or not judged against the capped sketch), and the share of new
word pairs alone (a paragraph is under a tenth of a 700-word article) made the article the copy's
duplicate: a crawler dropping it lost the paragraph. Another site's page now holds a paragraph only
where it shows it as a line (`line_places.SHOWN_EACH`). A syndicated copy whose lines are the
article's stays its duplicate, and so does a print copy on the article's own site whose lines are
merged.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from streamdedup.testing import make_article, make_words, run_records, wrap_in_template


def _article(seed: int, words: int = 30) -> tuple[list[str], list[str]]:
    """Fourteen paragraphs of ~50 words, and the same with a `words`-word paragraph inside: (lacking, whole)."""
    story = make_article(seed, paragraphs=14, sentences=3)
    extra = " ".join(make_article(seed + 100, paragraphs=1, sentences=4)[0].split()[:words]) + "."
    return story, story[:7] + [extra] + story[7:]


def _bare(page_id: str, site: str, lines: list[str], when: str) -> dict[str, Any]:
    """A page of the attacker's: a heading and the lines, each its own paragraph."""
    body = "".join(f"<p>{line}</p>" for line in lines)
    return {"id": page_id, "url": f"https://{site}/{page_id}", "fetched_at": f"2026-12-07T{when}:00Z",
            "html": f"<html><head><title>Archive</title></head><body><h1>Archive</h1><article>{body}</article>"
                    "</body></html>"}


def _news(page_id: str, paragraphs: list[str], when: str = "10:00") -> dict[str, Any]:
    return {"id": page_id, "url": f"https://news.example/city/{page_id}", "fetched_at": f"2026-12-07T{when}:00Z",
            "html": wrap_in_template(paragraphs, "news.example", title="Council publishes the flood report")}


def _merged(lines: list[str], group: int) -> list[str]:
    return [" ".join(lines[i:i + group]) for i in range(0, len(lines), group)]


def _padded(lines: list[str], count: int, length: int) -> list[str]:
    rng = random.Random(9)
    vocabulary = make_words(rng, 4000)
    return lines + [" ".join(rng.choices(vocabulary, k=length)).capitalize() + "." for _ in range(count)]


def _short_lines(count: int) -> list[str]:
    """`count` lines of 12 words: beside a merged line they make most of the copy's lines short."""
    rng = random.Random(3)
    vocabulary = make_words(rng, 3000)
    return [" ".join(rng.choices(vocabulary, k=12)).capitalize() + "." for _ in range(count)]


LAYOUTS = {
    "merged-in-threes": lambda lines: _merged(lines, 3),
    "one-line": lambda lines: _merged(lines, len(lines)),
    "one-line-beside-40-short-lines": lambda lines: _merged(lines, len(lines)) + _short_lines(40),
    "padded-past-the-cap": lambda lines: _padded(lines, 130, 29),
}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("seed", [5, 6])
def test_a_copy_laid_out_otherwise_lacking_a_paragraph_does_not_hide_the_article(tmp_path, layout, seed):
    """The copy first, then the article: unique (the copy's text is in it)."""
    lacking, whole = _article(seed)
    got = {o.dedup["id"]: o.dedup for o in run_records(
        [_bare("copy", "evil.example", LAYOUTS[layout](lacking), "09:00"), _news("story", whole)], tmp_path)}
    assert got["story"]["status"] == "unique", got["story"]


@pytest.mark.parametrize("seed", [12, 16])
def test_a_later_copy_merged_into_one_line_lacking_a_paragraph_does_not_supersede_the_article(tmp_path, seed):
    """The article, then the copy lacking its 35-word paragraph, merged into one line, with a 60-word one of
    its own: an indexer replacing what a page supersedes would have shown the copy for the article."""
    lacking, whole = _article(seed, words=35)
    spam = " ".join(make_article(seed + 500, paragraphs=1, sentences=4)[0].split()[:60]) + "."
    got = {o.dedup["id"]: o.dedup for o in run_records(
        [_news("story", whole, "09:00"), _bare("copy", "evil.example", [*_merged(lacking, len(lacking)), spam], "10:00")],
        tmp_path)}
    assert "story" not in (got["copy"].get("supersedes") or []), got["copy"]


def test_a_syndicated_copy_with_the_articles_lines_stays_its_duplicate(tmp_path):
    """The article, then the same text on another site: its duplicate."""
    _, whole = _article(8)
    got = {o.dedup["id"]: o.dedup for o in run_records(
        [_news("story", whole, "09:00"), _bare("copy", "wire.example", whole, "10:00")], tmp_path)}
    assert got["copy"]["status"] == "duplicate" and got["copy"]["duplicate_of"] == "story", got["copy"]


def test_a_print_copy_on_the_articles_site_with_lines_merged_stays_a_duplicate(tmp_path):
    """The article, then its site's print copy with its paragraphs merged three to a line: its duplicate."""
    _, whole = _article(9)
    got = {o.dedup["id"]: o.dedup for o in run_records(
        [_news("story", whole, "09:00"), _bare("print", "news.example", LAYOUTS["merged-in-threes"](whole), "10:00")],
        tmp_path)}
    assert got["print"]["status"] == "duplicate" and got["print"]["duplicate_of"] == "story", got["print"]
