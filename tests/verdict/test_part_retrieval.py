"""A part of a longer page is found by its paragraphs, in both orders, though none is among the longest 8.

Issue 57: a `?page=2` whose paragraphs are the view-all page's shorter ones shares too little for
MinHash's bands (a Jaccard near 0.25), and when the paragraph keys were a page's 8 longest, the view-all
page was filed under its long first paragraphs only: the part was never a candidate, so it stayed
unique after its view-all page, and the view-all page after the part did not name it."""

from __future__ import annotations

from streamdedup.testing import make_article, run_records, wrap_in_template

SEEDS = (1, 2, 3, 5, 7, 10, 13)  # those of 0-19 that no MinHash band finds, in either order


def _page(page_id: str, paragraphs: list[str], site: str = "news.example") -> dict:
    return {"id": page_id, "url": f"https://{site}/story?{page_id}", "fetched_at": "2026-01-01T00:00:00Z",
            "html": wrap_in_template(paragraphs, site, title="Story")}


def _article(seed: int) -> tuple[list[str], list[str]]:
    """Ten long paragraphs (10 sentences: 80 words or more), then ten of 30-60 words."""
    long_part = make_article(500 + seed, paragraphs=10, sentences=10)
    short_part = [p for p in make_article(600 + seed, paragraphs=30, sentences=3) if 30 <= len(p.split()) <= 60][:10]
    assert len(short_part) == 10
    return long_part, short_part


def test_a_part_after_its_view_all_page_is_its_duplicate(tmp_path):
    pages = []
    for seed in SEEDS:
        first, second = _article(seed)
        pages += [_page(f"view-all-{seed}", first + second, f"s{seed}.example"),
                  _page(f"page-2-{seed}", second, f"s{seed}.example")]
    got = {o.dedup["id"]: o.dedup for o in run_records(pages, tmp_path)}
    for seed in SEEDS:
        part = got[f"page-2-{seed}"]
        assert part["status"] == "duplicate" and part["duplicate_of"] == f"view-all-{seed}", part


def test_the_view_all_page_after_its_part_names_it(tmp_path):
    pages = []
    for seed in SEEDS:
        first, second = _article(seed)
        pages += [_page(f"page-2-{seed}", second, f"s{seed}.example"),
                  _page(f"view-all-{seed}", first + second, f"s{seed}.example")]
    got = {o.dedup["id"]: o.dedup for o in run_records(pages, tmp_path)}
    for seed in SEEDS:
        whole = got[f"view-all-{seed}"]
        assert whole["status"] == "unique", whole
        assert f"page-2-{seed}" in (whole.get("supersedes") or []) + (whole.get("related_to") or []), whole
