"""An advance copy with the article's heading replaced by any line of its length hides the article.

Review of 0.29.0, for rules version 34 (`line_places.edited_short`): the attack meant
was a replacement heading searched (public default seed) to share one sketch value with the true
one. No search is needed: a short line (under the sketch's 12 words) replaced in its place counts
no new text, so the real article, crawled after the copy, is its `duplicate` whatever the copy's
line says (a falsified heading). `python bench/hostile/heading_replaced.py search L S 1`
(9-paragraph generated articles in a news template, a 6-word heading after the 3rd paragraph, a
random 6-word line of made-up words in the copy): layout `plain` 3 of 3 hidden, `repeated` (a
like line down the page) 3 of 3, `test` (tests/verdict/test_short_lines_edited.py's) 4 of 4; at the
code before rules version 34, `plain` 3 of 3: not made by it. Only a line replaced by
one the article shows elsewhere (test_short_lines_edited) is new text. docs/limitations.md.
"""

from __future__ import annotations

import pytest

from streamdedup.testing import make_article, run_records, wrap_in_template

HEADING = "Where the new pumping stations go"
FALSIFIED = "Why the pumping stations never came"  # 6 words, as long; a claim the article does not make


def _page(page_id: str, paragraphs: list[str], site: str, hour: int) -> dict:
    return {"id": page_id, "url": f"https://{site}/{page_id}", "fetched_at": f"2026-01-01T{hour:02d}:00:00Z",
            "html": wrap_in_template(paragraphs, site)}


@pytest.mark.xfail(strict=True, reason="a replaced short line counts no new text (docs/limitations.md)")
@pytest.mark.parametrize("seed", [0, 1])
def test_a_copy_with_a_falsified_heading_does_not_hide_the_article(tmp_path, seed):
    story = make_article(seed, paragraphs=9)
    pages = [_page("copy", [*story[:3], FALSIFIED, *story[3:]], "copies.example", 0),
             _page("article", [*story[:3], HEADING, *story[3:]], "news.example", 1)]
    got = {o.dedup["id"]: o.dedup for o in run_records(pages, tmp_path)}
    assert got["article"]["status"] != "duplicate", got["article"]
