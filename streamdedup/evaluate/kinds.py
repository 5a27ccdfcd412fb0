"""Scores by kind: which variants a method finds, and which hard negatives it wrongly joins.

Pairwise, like the headline scores. A gold pair (two pages of one cluster) counts towards the
variant kind of each of its pages (original↔teaser counts for 'original' and for 'teaser'); its
recall is the share of those pairs in one predicted cluster. A false-positive pair (one predicted
cluster, two gold clusters) counts towards the negative kind of each of its pages (the `negative`
field the set builder writes), or 'other' when neither page is a built hard negative, so the kinds
may add up to more than the total.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from itertools import combinations
from typing import Any

OTHER = "other"


def _groups(labels: Sequence[str]) -> list[list[int]]:
    members: dict[str, list[int]] = {}
    for i, label in enumerate(labels):
        members.setdefault(label, []).append(i)
    return [group for group in members.values() if len(group) > 1]


def _kind(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "same_url" if value else "new_url"
    return str(value)


def negative_kind(record: dict[str, Any]) -> str | None:
    """The hard-negative class a page stands for; older sets only name it in `variant`."""
    if "negative" in record:
        return _kind(record["negative"])
    return _kind(record.get("variant")) if str(record.get("cluster", "")).startswith("neg-") else None


def recall_by_kind(records: Sequence[dict[str, Any]], gold: Sequence[str], predicted: Sequence[str],
                   field: str = "variant") -> dict[str, dict[str, float | int]]:
    """Per kind (the value of `field`): gold pairs, pairs found, recall."""
    pairs: Counter[str] = Counter()
    found: Counter[str] = Counter()
    for group in _groups(gold):
        for i, j in combinations(group, 2):
            together = predicted[i] == predicted[j]
            for kind in {k for k in (_kind(records[i].get(field)), _kind(records[j].get(field))) if k}:
                pairs[kind] += 1
                found[kind] += together
    return {kind: {"pairs": pairs[kind], "found": found[kind], "recall": round(found[kind] / pairs[kind], 4)}
            for kind in sorted(pairs)}


def false_positives_by_kind(records: Sequence[dict[str, Any]], gold: Sequence[str],
                            predicted: Sequence[str]) -> dict[str, int]:
    """Per negative kind: pairs in one predicted cluster that the gold labels keep apart."""
    counts: Counter[str] = Counter()
    for group in _groups(predicted):
        for i, j in combinations(group, 2):
            if gold[i] != gold[j]:
                kinds = {k for k in (negative_kind(records[i]), negative_kind(records[j])) if k}
                for kind in kinds or {OTHER}:
                    counts[kind] += 1
    return dict(sorted(counts.items()))


def page_kinds(records: Sequence[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """How many pages of each variant and negative kind the set has (the report's denominators)."""
    variants = Counter(str(r.get("variant")) for r in records if r.get("variant") is not None)
    negatives = Counter(k for k in (negative_kind(r) for r in records) if k is not None)
    return {"variants": dict(sorted(variants.items())), "negatives": dict(sorted(negatives.items()))}


def kind_scores(records: Sequence[dict[str, Any]], gold: Sequence[str], predicted: Sequence[str]) -> dict[str, Any]:
    """Everything the report shows by kind, for one method or policy."""
    scores: dict[str, Any] = {"recall_by_variant": recall_by_kind(records, gold, predicted),
                              "false_positives_by_negative": false_positives_by_kind(records, gold, predicted)}
    if any(r.get("same_url") is not None for r in records):
        scores["recall_by_url"] = recall_by_kind(records, gold, predicted, "same_url")
    return scores
