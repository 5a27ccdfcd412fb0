"""An attacker's copy of an article lacking its lead, crawled first on his own site (docs/limitations.md, Hostile pages).

The article, crawled later in its news site's template, adds its lead (34-66 words) to the copy:
it must not be the copy's duplicate (a crawler dropping duplicates would lose the lead). A copy on
another site counts new lines at its edges below 100 words only where they sit in the page's
article block (`line_places.counted_new`), and the lead does. The template here is a blog theme's
(`entry-header` with the `<h1>`, `entry-content` with the text: 3 of the 4 real templates in which
`bench/crawler_cases.py --kinds hostile_lead` lost the lead), titled with the lead's opening words
(a post without a title, a wire brief), as those cases were: the lead was located by the run of
text it shares with the title, outside the block. A syndicated copy with its host's boxes at its
edges stays the duplicate of the article.
"""

from __future__ import annotations

from typing import Any

import pytest

from streamdedup.testing import make_article, run_records

STORY = make_article(57, paragraphs=10)
LEAD = " ".join(" ".join(make_article(58, paragraphs=1, sentences=4)).split()[:40]) + "."
AUTHOR_BOX = ("Mara Lindqvist has covered the harbour district for the gazette since 2014 and writes about "
              "housing, transport and the city council; she lives in the old town with two cats.")


def _blog_page(page_id: str, site: str, title: str, paragraphs: list[str], before: str = "", after: str = "",
               fetched: str = "2026-12-07T10:00:00Z") -> dict[str, Any]:
    """A post in a blog theme's template: the title in the entry's header, the text in its content box."""
    nav = "".join(f"<li><a href='/{s}'>{s.title()}</a></li>" for s in ("news", "city", "culture", "sport", "opinion"))
    side = "".join(f"<li><a href='/p/{k}'>Most read on {site}, number {k}</a></li>" for k in range(6))
    def box(text: str) -> str:
        return f"<div class='summary-box'><p>{text}</p></div>" if text else ""

    text = "".join(f"<p>{p}</p>" for p in paragraphs)
    html = (f"<!doctype html><html><head><title>{title} - {site}</title></head><body>"
            f"<header class='site-header'><p class='site-title'><a href='/'>{site}</a></p><nav><ul>{nav}</ul></nav>"
            "</header><div id='content' class='site-content'><main id='main' class='site-main'>"
            "<article class='post type-post'><header class='entry-header'>"
            f"<h1 class='entry-title'>{title}</h1><div class='entry-meta'><span class='posted-on'>7 December 2026"
            f"</span></div></header>{box(before)}<div class='entry-content'>{text}</div>{box(after)}"
            "<footer class='entry-footer'><span class='cat-links'>Posted in City</span></footer></article>"
            f"</main><aside id='secondary' class='widget-area'><ul>{side}</ul></aside></div>"
            f"<footer class='site-footer'><p>Copyright 2026 {site}. All rights reserved.</p></footer></body></html>")
    return {"id": page_id, "url": f"https://{site}/{page_id}", "fetched_at": fetched, "html": html}


def _bare_copy(page_id: str, title: str, paragraphs: list[str]) -> dict[str, Any]:
    """The attacker's page: the title and the paragraphs, nothing else."""
    body = "".join(f"<p>{p}</p>" for p in paragraphs)
    return {"id": page_id, "url": f"https://evil.example/{page_id}", "fetched_at": "2026-12-07T09:00:00Z",
            "html": f"<html><head><title>{title}</title></head><body><h1>{title}</h1><article>{body}</article>"
                    "</body></html>"}


@pytest.mark.parametrize("title", [LEAD[:60], "Council to publish the flood report next month"],
                         ids=["titled-with-the-leads-opening", "titled-otherwise"])
def test_an_advance_copy_lacking_the_lead_does_not_hide_the_article(tmp_path, title):
    """The copy first, then the article: unique, and it supersedes the copy (all of the copy is in it)."""
    got = {o.dedup["id"]: o.dedup for o in run_records(
        [_bare_copy("copy", title, STORY), _blog_page("story", "gazette.example", title, [LEAD, *STORY])], tmp_path)}
    assert got["story"]["status"] == "unique", got["story"]
    assert got["story"]["supersedes"] == ["copy"], got["story"]


@pytest.mark.parametrize("where", ["before", "after"])
def test_a_syndicated_copy_with_its_hosts_box_at_an_edge_stays_a_duplicate(tmp_path, where):
    """The article, then a copy on another site with the host's box beside its text: a 30-word
    author's box, or a summary box repeating the lead's opening words (a line whose start is the
    lead's: the box it sits in is its own, not the lead's paragraph), before or after the text."""
    title = LEAD[:60]
    summary = " ".join(LEAD.split()[:22])
    for box in (AUTHOR_BOX, summary):
        copy = _blog_page("copy", "wire.example", title, [LEAD, *STORY], **{where: box},
                          fetched="2026-12-07T11:00:00Z")
        got = {o.dedup["id"]: o.dedup for o in run_records(
            [_blog_page("story", "gazette.example", title, [LEAD, *STORY]), copy], tmp_path / f"{where}{len(box)}")}
        assert got["copy"]["status"] == "duplicate" and got["copy"]["duplicate_of"] == "story", (box, got["copy"])
