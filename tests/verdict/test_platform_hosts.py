"""An attacker's free blog on a platform where anyone opens a host, beside a real newsletter there (docs/limitations.md).

substack.com, medium.com, wordpress.com, tumblr.com and others give each author a host
(`alice.substack.com`) but are not in the Public Suffix List's private section (blogspot.com,
github.io and wixsite.com are), so every host there was one site (`record.page.site_of`): an
attacker's `evil.substack.com` had the trust of an article's own site. His copy of an article with
its lines merged into one, lacking a paragraph, hid it (`line_places.SHOWN_EACH` trusts one site:
its print copies wrap lines otherwise); his digest of two newsletters' stories merged them into one
story (`engine.joined_roots`: a page bridges what it supersedes on its own site, as a view-all page
its parts). Each such host is now a site of its own (`record.page.USER_HOSTED`).
"""

from __future__ import annotations

from typing import Any

import pytest

from streamdedup.record.page import site_of
from streamdedup.testing import make_article, run_records, wrap_in_template


def _page(page_id: str, host: str, paragraphs: list[str], when: str, bare: bool = False) -> dict[str, Any]:
    html = (wrap_in_template(paragraphs, host, title=f"Story {page_id}") if not bare else
            "<html><head><title>Archive</title></head><body><h1>Archive</h1><article>"
            + "".join(f"<p>{p}</p>" for p in paragraphs) + "</article></body></html>")
    return {"id": page_id, "url": f"https://{host}/p/{page_id}", "fetched_at": f"2026-12-07T{when}:00Z", "html": html}


@pytest.mark.parametrize("platform", ["substack.com", "medium.com", "wordpress.com", "tumblr.com"])
def test_each_authors_host_on_a_platform_is_a_site_of_its_own(platform):
    assert site_of(f"https://alice.{platform}/p/1") == f"alice.{platform}"
    assert site_of(f"https://alice.{platform}/p/1") != site_of(f"https://evil.{platform}/p/2")
    assert site_of(f"https://www.{platform}/about") == site_of(f"https://{platform}/") == platform


@pytest.mark.parametrize("seed", [10, 11, 12])
def test_a_copy_on_another_authors_host_lacking_a_paragraph_does_not_hide_the_article(tmp_path, seed):
    """The attacker's copy, its lines merged into one and lacking a 30-word paragraph, first: the article is unique."""
    story = make_article(seed, paragraphs=14, sentences=3)
    extra = " ".join(make_article(seed + 100, paragraphs=1, sentences=4)[0].split()[:30]) + "."
    whole = story[:7] + [extra] + story[7:]
    got = {o.dedup["id"]: o.dedup for o in run_records(
        [_page("copy", "evil.substack.com", [" ".join(story)], "09:00", bare=True),
         _page("story", "reporter.substack.com", whole, "10:00")], tmp_path)}
    assert got["story"]["status"] == "unique", got["story"]


def test_a_digest_on_another_authors_host_does_not_merge_two_newsletters_stories(tmp_path):
    """Stories of alice and bob, the attacker's digest of both, then a wire copy of each: two stories."""
    a, b = make_article(1, 6), make_article(2, 6)
    got = {o.dedup["id"]: o.dedup for o in run_records(
        [_page("A", "alice.substack.com", a, "08:00"), _page("B", "bob.substack.com", b, "08:10"),
         _page("digest", "evil.substack.com", a + b, "09:00", bare=True),
         _page("A2", "wire.example", a, "10:00"), _page("B2", "wire2.example", b, "10:10")], tmp_path)}
    assert got["digest"]["supersedes"] == ["A", "B"], got["digest"]
    assert not got["digest"].get("merged_clusters") and got["digest"]["cluster_id"] not in ("A", "B"), got["digest"]
    assert got["A2"]["cluster_id"] == "A" and got["B2"]["cluster_id"] == "B", (got["A2"], got["B2"])
