"""Reading the outputs back as one answer: the pairs found and the clusters they make.

For consumers of the news-clustering feed and for the tests that compare topologies. The
clusters topic is a stream of edges (`joined`: page -> duplicate_of and its cluster, `merged`:
page -> other clusters it bridges, `late_match`: a later page -> an earlier one it also
duplicates; `late_related`, a later page related to an earlier one, joins none); a cluster is a
connected component, named by its earliest page.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any


class UnionFind:
    """Disjoint sets of page ids, each named by its root: the connected components `clusters_of` builds."""

    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, item: str) -> str:
        """The root of `item`'s set (a new item is a set of its own), which `item` then points at directly."""
        parent = self.parent.setdefault(item, item)
        while parent != self.parent.setdefault(parent, parent):
            self.parent[item] = parent = self.parent[parent]
        return parent

    def union(self, a: str, b: str) -> None:
        """Join the sets of `a` and `b` into one, named by `a`'s root."""
        root_a, root_b = self.find(a), self.find(b)
        if root_a != root_b:
            self.parent[root_b] = root_a


def clusters_of(events: Iterable[Mapping[str, Any]]) -> list[frozenset[str]]:
    """The connected components of every page in the events (singletons included)."""
    union = UnionFind()
    for event in events:
        page = event["page_id"]
        union.find(page)
        union.union(page, event["cluster_id"])
        if event.get("duplicate_of"):
            union.union(page, event["duplicate_of"])
        for other in event.get("merged", ()):
            union.union(page, other)
    groups: dict[str, set[str]] = {}
    for item in union.parent:
        groups.setdefault(union.find(item), set()).add(item)
    return sorted((frozenset(g) for g in groups.values()), key=lambda g: min(g))


def corrected_pairs(verdicts: Iterable[Mapping[str, Any]], events: Iterable[Mapping[str, Any]],
                    order: Callable[[str], Any]) -> dict[str, str]:
    """page -> the earliest page it duplicates, from its verdict and any late-match corrections.

    This is what "the set of near-duplicate pairs found" means across topologies: a late match
    found by the earlier page replaces a later (or missing) `duplicate_of`."""
    best: dict[str, str] = {}
    candidates = [(v["id"], v["duplicate_of"]) for v in verdicts if v.get("duplicate_of")]
    candidates += [(e["page_id"], e["duplicate_of"]) for e in events if e["type"] == "late_match"]
    for page, earlier in candidates:
        if page not in best or order(earlier) < order(best[page]):
            best[page] = earlier
    return best
