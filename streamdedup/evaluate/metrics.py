"""Clustering agreement between gold labels and predicted clusters.

Pairwise precision / recall / F1 over same-cluster pairs, and the adjusted Rand index (Hubert &
Arabie 1985), all from one contingency table, so no pair list is ever materialised.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Sequence


def _pairs(n: int) -> int:
    return n * (n - 1) // 2


def pair_scores(gold: Sequence[Hashable], predicted: Sequence[Hashable]) -> dict[str, float | int]:
    """Pairwise precision, recall and F1 of a predicted clustering against the gold one, and the pair counts."""
    if len(gold) != len(predicted):
        raise ValueError(f"gold has {len(gold)} labels, predicted {len(predicted)}")
    joint = Counter(zip(gold, predicted, strict=True))
    true_positive = sum(_pairs(n) for n in joint.values())
    gold_pairs = sum(_pairs(n) for n in Counter(gold).values())
    predicted_pairs = sum(_pairs(n) for n in Counter(predicted).values())
    precision = true_positive / predicted_pairs if predicted_pairs else 1.0
    recall = true_positive / gold_pairs if gold_pairs else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    total = _pairs(len(gold))
    expected = gold_pairs * predicted_pairs / total if total else 0.0
    maximum = (gold_pairs + predicted_pairs) / 2
    ari = 1.0 if maximum == expected else (true_positive - expected) / (maximum - expected)
    return {"precision": precision, "recall": recall, "f1": f1, "ari": ari,
            "true_pairs": true_positive, "predicted_pairs": predicted_pairs, "gold_pairs": gold_pairs}
