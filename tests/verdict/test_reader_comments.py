"""A reader's comment added under an article, as a crawler re-fetches it (a crawler's review).

`fast` follows trafilatura in leaving out a box whose class or id names a comment section, so the
re-fetch with a new comment there is its earlier fetch's duplicate and an indexer that drops
duplicates loses the comment (docs/limitations.md, Directions). In a box named otherwise the
comment is the page's text.
"""

from __future__ import annotations

from typing import Any

import pytest
from flood_page import STORY, flood_html

from streamdedup import Deduplicator

COMMENT = ("I live on the lower road and the water came up to our kitchen window on Thursday night, but nobody "
           "from the council has come to look at the damage to our houses yet.")


def _page(box: str, fetched: str) -> dict[str, Any]:
    return {"url": "https://news.example/flood", "fetched_at": fetched, "content": flood_html(STORY[:3], box)}


def _refetched_with(box_class: str) -> Any:
    box = (f'<div class="{box_class}"><h3>1 comment</h3><div><span>Karin M.</span> <span>7 Dec 2026</span>'
           f"<p>{COMMENT}</p></div></div>")
    with Deduplicator() as dedup:
        dedup.add_many([_page("", "2026-12-06T10:00:00Z")])
        return dedup.query(**_page(box, "2026-12-07T10:00:00Z"))


def test_a_comment_in_a_box_named_otherwise_is_text_of_the_page() -> None:
    assert _refetched_with("replies").status == "unique"


@pytest.mark.xfail(strict=True, reason="the extractor leaves out a box named as a comment section, as "
                   "trafilatura does: the re-fetch is a duplicate (docs/limitations.md, Directions)")
def test_a_comment_in_a_comment_box_is_text_of_the_page() -> None:
    assert _refetched_with("comments").status == "unique"
