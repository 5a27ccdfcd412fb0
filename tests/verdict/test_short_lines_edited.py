"""A short line of the article edited by a word is a light edit, also where a like line elsewhere crosses its place.

Issue 57: a light edit that changed a word of a heading or a list item (a line under the sketch's
12 words) inside the article was read as a line inserted (`line_places.inserted_short`) where the
line's original repeats down the page (nytimes' "Continue reading the main story" after every few
paragraphs): the other's line in its place agrees with a later one, the running counterparts
cross, and its place looked empty. The edit was `unique` (superseding the article) instead of its
duplicate (`bench/short_line_edits.py`, dev split's real pages). A line of its length sharing a
value with it, in its place between its neighbours' counterparts, is the line edited
(`line_places.edited_short`); a heading replaced by another keeps none of its values.
"""

from __future__ import annotations

from streamdedup.testing import make_article, run_records, wrap_in_template

REPEATED = "Continue reading the main story"  # 5 words: a short unit that counts
EDITED = "Continue reading the whole story"  # one word changed: keeps one of the 4 values
OTHER = "Sign up for our newsletters"  # another line of 5 words: shares none
HEADING = "Where the new pumping stations go"  # the article's own heading


def _page(page_id: str, paragraphs: list[str], site: str, hour: int = 0) -> dict:
    return {"id": page_id, "url": f"https://{site}/{page_id}", "fetched_at": f"2026-01-01T{hour:02d}:00:00Z",
            "html": wrap_in_template(paragraphs, site)}


def _article(seed: int, first: str) -> list[str]:
    story = make_article(seed, paragraphs=9)
    return [*story[:3], first, *story[3:6], REPEATED, *story[6:]]


def test_an_edit_of_a_repeated_short_line_is_the_articles_duplicate(tmp_path):
    """The edit changed a word of the first of two like lines: it adds nothing the article lacks."""
    for seed in range(3):
        pages = [_page("article", _article(seed, REPEATED), "a.example"),
                 _page("edit", _article(seed, EDITED), "b.example", 1)]
        got = {o.dedup["id"]: o.dedup for o in run_records(pages, tmp_path / str(seed))}
        assert got["edit"]["status"] == "duplicate" and got["edit"]["duplicate_of"] == "article", (seed, got)


def test_a_copy_with_a_heading_replaced_by_a_like_line_of_the_article_does_not_hide_it(tmp_path):
    """Hostile: a copy on another site whose heading is replaced by another line of its length that
    the article shows further down (so the copy's line there is found, out of place, and the running
    counterparts cross as a repeated line makes them), crawled first. Crawled after it, the real
    article holds a heading the copy lacks, sharing none of the values of the line in its place:
    still new text, not the copy's duplicate."""
    for seed in range(3):
        story = make_article(seed, paragraphs=9)
        article = [*story[:3], HEADING, *story[3:6], REPEATED, *story[6:8], OTHER, *story[8:]]
        copy = [*story[:3], OTHER, *story[3:6], REPEATED, *story[6:8], OTHER, *story[8:]]
        pages = [_page("copy", copy, "b.example"), _page("article", article, "a.example", 1)]
        got = {o.dedup["id"]: o.dedup for o in run_records(pages, tmp_path / str(seed))}
        assert got["article"]["status"] != "duplicate", (seed, got["article"])
