"""The candidates the chance check asks about: those only one small SimHash key of the page found.

`batch_candidates.unvouched` tells them from the few seqs of those keys; the definition reads every
candidate against the seqs of every other key. The same answer at the edges: a seq found by one
small key and by a vouching one, by the same small key named twice, by two small keys, cut by the
candidate limit."""

from __future__ import annotations

import random
from collections import Counter
from itertools import chain

from streamdedup.store.batch_candidates import unvouched
from streamdedup.store.candidates import rank_candidates


def _definition(found: list[list[int]], small: list[bool], limit: int) -> set[int]:
    shared = Counter(chain.from_iterable(found))
    kept = rank_candidates(shared, limit)
    vouched = set(chain.from_iterable(seqs for seqs, is_small in zip(found, small, strict=True) if not is_small))
    return {s for s in kept if shared[s] == 1 and s not in vouched}


def _told(found: list[list[int]], small: list[bool], limit: int) -> set[int]:
    shared = Counter(chain.from_iterable(found))
    chance = [seqs for seqs, is_small in zip(found, small, strict=True) if is_small]
    return unvouched(shared, chance, rank_candidates(shared, limit))


def test_the_edges():
    found = [[1, 2], [2, 3], [4], [4], [5, 6, 7, 8, 9]]  # 2: two keys; 4: one key named twice
    small = [True, False, True, True, False]
    assert _told(found, small, 100) == _definition(found, small, 100) == {1}
    found = [[1], [2], [3, 4, 5, 6]]  # two small keys: each of their seqs found once
    assert _told(found, [True, True, False], 100) == {1, 2}
    # past the limit the candidates sharing most keys stay: a lone one cut is not asked about
    found = [[1], [2, 3], [2, 3], [4]]
    assert _told(found, [True, False, False, True], 2) == _definition(found, [True, False, False, True], 2) == set()
    assert _told(found, [True, False, False, True], 3) == _definition(found, [True, False, False, True], 3) == {1}


def test_the_same_as_the_definition():
    rng = random.Random(11)
    for _ in range(4000):
        pool = rng.sample(range(200), rng.randint(1, 40))
        found = [sorted(rng.sample(pool, rng.randint(1, min(6, len(pool))))) for _ in range(rng.randint(1, 12))]
        if rng.random() < 0.3:
            found.append(list(rng.choice(found)))  # a name named twice
        small = [rng.random() < 0.4 for _ in found]
        limit = rng.choice([3, 10, 100])
        assert _told(found, small, limit) == _definition(found, small, limit)
