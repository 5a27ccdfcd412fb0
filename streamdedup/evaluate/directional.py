"""Directional scores: is a `duplicate_of` edge safe to drop, and are the pages an earlier page makes redundant found?

A crawler drops a page tagged `duplicate` and keeps the page its `duplicate_of` names, so the edge
P -> Q is **safe** when P's content is all in Q: units(P) ⊆ units(Q), the gold content units each
page holds (`units`, written by the set builders: '<article>:<paragraph>'; sets without them fall
back to the gold cluster: one cluster, one content). An unsafe edge is a **content-loss** edge when
P and Q share units (P holds more: the view-all page tagged a duplicate of its `?page=1`, a
follow-up of the article it continues), else a **false** edge (nothing shared).

- edge precision: safe edges / all duplicate edges (1.0 without edges);
- edge recall: pages P that an earlier page Q makes redundant (units(P) ⊆ units(Q), Q before P in
  fetch order) and that got a safe edge / all such P (1.0 without any);
- informational: `supersedes` recall (P holds an earlier page plus more, and names one such page
  in `supersedes`) and `related_to` recall (P shares units with an earlier page, neither holding
  the other, and names one such page, or its cluster, in `related_to`).

Everything is counted overall, per `variant` and per `negative` kind of P. Pure functions of the
records (in fetch order) and each page's `dedup` object.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

SAFE, CONTENT_LOSS, FALSE = "safe", "content_loss", "false"


def units_of(record: Mapping[str, Any], index: int) -> frozenset[str]:
    """The gold content units a page holds: its `units`, else its gold cluster's one unit."""
    units = record.get("units")
    if units is not None:
        return frozenset(str(u) for u in units)
    return frozenset({f"cluster:{record.get('cluster', f'unlabelled:{index}')}"})


def edge_kind(page: frozenset[str], target: frozenset[str]) -> str:
    """safe (the page's units all in the target), content_loss (some shared), or false (none)."""
    if page <= target:
        return SAFE
    return CONTENT_LOSS if page & target else FALSE


@dataclass
class Tally:
    """The counts of one group of pages (all, one variant, one negative kind)."""

    edges: int = 0
    safe: int = 0
    content_loss: int = 0
    false: int = 0
    redundant: int = 0
    found: int = 0
    superseding: int = 0
    supersedes_found: int = 0
    related: int = 0
    related_found: int = 0
    pages: int = 0

    def scores(self) -> dict[str, float | int]:
        """The group's edge counts and the precision and recall they give, rounded."""
        def ratio(part: int, whole: int) -> float:
            return round(part / whole, 4) if whole else 1.0

        return {"pages": self.pages, "edges": self.edges, "safe_edges": self.safe,
                "content_loss_edges": self.content_loss, "false_edges": self.false,
                "edge_precision": ratio(self.safe, self.edges), "redundant": self.redundant,
                "found": self.found, "edge_recall": ratio(self.found, self.redundant),
                "superseding": self.superseding, "supersedes_found": self.supersedes_found,
                "related": self.related, "related_found": self.related_found,
                "related_recall": ratio(self.related_found, self.related)}


@dataclass
class PageResult:
    """What one page's verdict was worth against the gold units."""

    edge: str | None = None  # safe / content_loss / false, or None (no duplicate edge)
    redundant: bool = False
    superseding: bool = False
    supersedes_found: bool = False
    related: bool = False
    related_found: bool = False
    target: int | None = None  # the record its duplicate_of names
    earlier: list[int] = field(default_factory=list)  # records that make it redundant


def judge(records: Sequence[Mapping[str, Any]], verdicts: Sequence[Mapping[str, Any]]) -> list[PageResult]:
    """Each page's result, from the records in fetch order and each one's `dedup` object."""
    if len(records) != len(verdicts):
        raise ValueError(f"{len(records)} records but {len(verdicts)} verdicts")
    units = [units_of(r, i) for i, r in enumerate(records)]
    index: dict[str, int] = {}
    for i, (record, verdict) in enumerate(zip(records, verdicts, strict=True)):
        for name in (verdict.get("id"), record.get("id")):
            if name is not None:
                index.setdefault(str(name), i)
    holders: dict[str, list[int]] = {}  # unit -> earlier pages holding it
    results = []
    for i, verdict in enumerate(verdicts):
        result = PageResult()
        sharing = sorted({j for u in units[i] for j in holders.get(u, ())})
        result.earlier = [j for j in sharing if units[i] <= units[j]]
        result.redundant = bool(result.earlier)
        contained = [j for j in sharing if units[j] < units[i]]
        result.superseding = not result.redundant and bool(contained)
        related = [j for j in sharing if not units[i] <= units[j] and not units[j] <= units[i]]
        result.related = not result.redundant and not result.superseding and bool(related)
        status = verdict.get("status")
        if status == "duplicate":
            target = index.get(str(verdict.get("duplicate_of")))
            result.target = target
            result.edge = FALSE if target is None else edge_kind(units[i], units[target])
        elif status == "unique":
            named = {index.get(str(p)) for p in verdict.get("supersedes") or ()}
            result.supersedes_found = result.superseding and bool(named & set(contained))
            clusters = {str(c) for c in verdict.get("related_to") or ()}
            result.related_found = result.related and any(  # a related page, or its cluster
                str(verdicts[j].get("cluster_id")) in clusters or str(verdicts[j].get("id")) in clusters
                for j in related)
        results.append(result)
        for u in units[i]:
            holders.setdefault(u, []).append(i)
    return results


def _add(tally: Tally, result: PageResult) -> None:
    tally.pages += 1
    if result.edge is not None:
        tally.edges += 1
        tally.safe += result.edge == SAFE
        tally.content_loss += result.edge == CONTENT_LOSS
        tally.false += result.edge == FALSE
    tally.redundant += result.redundant
    tally.found += result.redundant and result.edge == SAFE
    tally.superseding += result.superseding
    tally.supersedes_found += result.supersedes_found
    tally.related += result.related
    tally.related_found += result.related_found


def directional_scores(records: Sequence[Mapping[str, Any]],
                       verdicts: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Edge precision and recall, content-loss and false edges: overall, per variant, per negative kind."""
    overall = Tally()
    by_variant: dict[str, Tally] = {}
    by_negative: dict[str, Tally] = {}
    for record, result in zip(records, judge(records, verdicts), strict=True):
        _add(overall, result)
        _add(by_variant.setdefault(str(record.get("variant")), Tally()), result)
        if record.get("negative"):
            _add(by_negative.setdefault(str(record["negative"]), Tally()), result)
    return {"all": overall.scores(),
            "by_variant": {k: by_variant[k].scores() for k in sorted(by_variant)},
            "by_negative": {k: by_negative[k].scores() for k in sorted(by_negative)},
            "gold_units": "units" if any("units" in r for r in records) else "cluster"}


def directional_errors(records: Sequence[Mapping[str, Any]], verdicts: Sequence[Mapping[str, Any]],
                       limit: int = 200) -> dict[str, list[dict[str, Any]]]:
    """The unsafe edges and the redundant pages missed, described, for error analysis."""
    def describe(i: int | None) -> dict[str, Any] | None:
        if i is None:
            return None
        r = records[i]
        return {k: r.get(k) for k in ("id", "label_id", "url", "cluster", "variant") if k in r}

    unsafe, missed = [], []
    for i, result in enumerate(judge(records, verdicts)):
        if result.edge in (CONTENT_LOSS, FALSE):
            unsafe.append({"kind": result.edge, "page": describe(i), "duplicate_of": describe(result.target),
                           "method": verdicts[i].get("method"), "similarity": verdicts[i].get("similarity")})
        elif result.redundant and result.edge != SAFE:
            missed.append({"page": describe(i), "status": verdicts[i].get("status"),
                           "redundant_after": describe(result.earlier[0])})
    return {"unsafe_edges": unsafe[:limit], "missed_redundant": missed[:limit]}
