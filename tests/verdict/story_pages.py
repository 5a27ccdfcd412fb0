"""Pages of stories in generated templates, and the story a page ends in: for the digest tests."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from streamdedup.testing import wrap_in_template


def story_page(page_id: str, site: str, paragraphs: list[str], when: str) -> dict[str, Any]:
    """A record of `paragraphs` in `site`'s generated template, fetched on 2026-12-07 at `when` (HH:MM)."""
    return {"id": page_id, "url": f"https://{site}/a/{page_id}", "fetched_at": f"2026-12-07T{when}:00Z",
            "html": wrap_in_template(paragraphs, site, title=f"Story {page_id}")}


def story_of(parents: dict[str, str], page: str) -> str:
    """The story `page` is in: its root in `parents` (a union of clusters, each mapped to another of its story)."""
    while parents.setdefault(page, page) != page:
        page = parents[page]
    return page


def story_parents(outcomes: Iterable[Any]) -> dict[str, str]:
    """The union of clusters a run's outcomes make (`story_of` reads it): each page's, its cluster's and those it merged."""
    parents: dict[str, str] = {}
    for out in outcomes:
        for cluster in [out.dedup["id"], *(out.dedup.get("merged_clusters") or [])]:
            parents[story_of(parents, cluster)] = story_of(parents, out.dedup["cluster_id"])
    return parents
