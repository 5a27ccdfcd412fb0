"""The evaluation protocol of Zelenkov & Segalovich (004, sections 3 and 5), beside gold labels.

With no gold labels for 500k pages, the paper pools the pairs found by any method, verifies each
pooled pair by a direct text similarity (Perl's String::Similarity >= 0.8; here the same
normalised Indel similarity, from rapidfuzz), and reports per method the recall against the
verified pool, the precision of its pairs against the verification, the number of pairs it found
(its Table 3) and the Dice agreement between methods' pair sets (its Table 4).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import combinations

Pair = tuple[int, int]


def cluster_pairs(labels: Sequence[str]) -> set[Pair]:
    """All pairs of pages that share a predicted cluster."""
    members: dict[str, list[int]] = {}
    for i, label in enumerate(labels):
        members.setdefault(label, []).append(i)
    return {pair for group in members.values() if len(group) > 1 for pair in combinations(group, 2)}


def verify_pairs(pairs: Iterable[Pair], texts: Sequence[str], threshold: float = 0.8) -> set[Pair]:
    """The pairs whose texts are at least `threshold` alike by rapidfuzz's ratio (the papers' verification)."""
    from rapidfuzz.fuzz import ratio

    return {(i, j) for i, j in pairs if texts[i] and texts[j] and ratio(texts[i], texts[j]) / 100 >= threshold}


def paper_scores(found: dict[str, set[Pair]], verified: set[Pair]) -> dict[str, dict[str, float | int]]:
    """Each method's recall and precision of the verified pairs, and the pairs it found."""
    scores = {}
    for name, pairs in found.items():
        hits = len(pairs & verified)
        recall = hits / len(verified) if verified else 0.0
        precision = hits / len(pairs) if pairs else 0.0
        f = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        scores[name] = {"pool_recall": round(recall, 4), "verified_precision": round(precision, 4),
                        "verified_f": round(f, 4), "pairs_found": len(pairs)}
    return scores


def dice_matrix(found: dict[str, set[Pair]]) -> dict[str, dict[str, float]]:
    """The Dice overlap of each two methods' found pairs."""
    return {a: {b: round(2 * len(found[a] & found[b]) / (len(found[a]) + len(found[b])), 4)
                if found[a] or found[b] else 1.0 for b in found} for a in found}
