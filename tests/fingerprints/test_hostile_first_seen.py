"""Hostile text against `hash_arrays.first_seen`'s table (linear probing on shingle hashes, 0.29.0).

The shingle hashes and the table's slot (`_slot`, a Fibonacci hash) are public, so an attacker can
pick each next word of his page so that the new 5-shingle's slot falls in the table's first 1/512:
every shingle then probes past all those placed before, ~n^2/2 probes for n shingles. Measured
(`bench/hostile/first_seen_text.py`, k=5 shingles of 4-letter words, CPU, one run each): 50,000
characters 31.5 ms against 0.1 ms for the same words in random order; 500,000 characters 3,010 ms
against 0.7 ms; 2,000,000 (`max_text_chars`) 49.0 s. Before 0.29.0 (a sort) the work was n log n
whatever the text. `first_seen` now counts its probes and past 16 a value (plus 64) gives the same
answer from a sort (`np.unique`'s first indices), so a page's work stays n log n.
"""

from __future__ import annotations

import time

import numpy as np

from streamdedup.hash_arrays import _FIBONACCI, first_seen

_INVERSE = pow(_FIBONACCI, -1, 1 << 64)


def _crowded(count: int, window_bits: int, seed: int) -> np.ndarray:
    """`count` distinct values whose own slots in `first_seen`'s table all lie in its first 2**-window_bits."""
    bits = max(4, (2 * count - 1).bit_length())
    rng = np.random.default_rng(seed)
    slots = rng.integers(0, 1 << (bits - window_bits), size=count)
    low = rng.integers(1, 1 << (64 - bits), size=count, dtype=np.uint64)
    return np.array([((int(s) << (64 - bits)) + int(r)) * _INVERSE % (1 << 64) for s, r in zip(slots, low, strict=True)],
                    dtype=np.uint64)


def _cpu(values: np.ndarray) -> float:
    start = time.process_time()
    got = first_seen(values)
    spent = time.process_time() - start
    assert got.tolist() == list(dict.fromkeys(values.tolist()))  # the same answer either way
    return spent


def test_values_crowded_into_a_corner_of_the_table_cost_no_more_than_a_sort():
    """200,000 values in 1/512 of the table: ~20 s of probing unbounded; bounded, a few ms like random ones."""
    first_seen(np.arange(1, 100, dtype=np.uint64))  # compiled
    crowded = _crowded(200_000, 9, 1)
    spread = np.random.default_rng(2).integers(1, 1 << 63, size=200_000, dtype=np.uint64)
    assert _cpu(crowded) < 0.5 + 50 * _cpu(spread)
