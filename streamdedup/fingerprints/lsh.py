"""Locality-sensitive banding, threshold first: give θ, get the bands and rows.

Like datasketch, the (bands, rows) split of a MinHash signature is derived from the similarity
threshold by minimising the weighted areas of false positives (below θ) and false negatives
(above θ) of the S-curve P(candidate | s) = 1 - (1 - s^r)^b, instead of being asked for.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np


def candidate_probability(s: np.ndarray | float, bands: int, rows: int) -> np.ndarray | float:
    """The chance two pages of similarity `s` share a band: 1 - (1 - s^rows)^bands."""
    return 1.0 - (1.0 - np.power(s, rows)) ** bands


# `searched_bands` of the defaults' banding (minhash: lsh_threshold 0.4 of 128 permutations), as it
# answers (tests/fingerprints/test_minhash.py checks each against it): the search is ~0.01-0.02 CPU-s
# of every process's start-up, an answer looked up is none
SEARCHED: dict[tuple[float, int, float, float], tuple[int, int]] = {(0.4, 128, 0.5, 0.5): (32, 4)}


@lru_cache(maxsize=64)
def optimal_bands(threshold: float, num_perm: int, fp_weight: float = 0.5,
                  fn_weight: float = 0.5) -> tuple[int, int]:
    """The (bands, rows) that minimise the weighted false positive and negative areas at `threshold`."""
    if not 0.0 < threshold < 1.0:
        raise ValueError(f"threshold must be in (0, 1), got {threshold}: it is a Jaccard similarity")
    if abs(fp_weight + fn_weight - 1.0) > 1e-9:
        raise ValueError("fp_weight + fn_weight must be 1")
    known = SEARCHED.get((threshold, num_perm, fp_weight, fn_weight))
    return known if known is not None else searched_bands(threshold, num_perm, fp_weight, fn_weight)


def searched_bands(threshold: float, num_perm: int, fp_weight: float, fn_weight: float) -> tuple[int, int]:
    """`optimal_bands` by search: every split of `num_perm`, the first of the least error."""
    low = np.linspace(0.0, threshold, 200)
    high = np.linspace(threshold, 1.0, 200)
    best, best_error = (1, num_perm), float("inf")
    for bands in range(1, num_perm + 1):
        for rows in range(1, num_perm // bands + 1):
            fp = np.trapezoid(candidate_probability(low, bands, rows), low)
            fn = np.trapezoid(1.0 - candidate_probability(high, bands, rows), high)
            error = fp_weight * fp + fn_weight * fn
            if error < best_error:
                best, best_error = (bands, rows), error
    return best
