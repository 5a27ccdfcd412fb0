"""`found_by.found_members` says, for each method whose keys find every match, which candidates can pass its test.

Asked as the engine asks it (`found_members_of`, from the records) and as the candidate filter does (an array).

Those its keys found and those not filed under all its keys (a first unfiled place below the
method's bound). Told at once where no candidate's first place is below the bound (homogeneous
pages: their full keys are other methods'); the same answer as asking each candidate."""

from __future__ import annotations

import random

import numpy as np

from streamdedup.fingerprints.a12 import A12Method
from streamdedup.fingerprints.exact import ExactMethod
from streamdedup.fingerprints.minhash import MinHashMethod
from streamdedup.fingerprints.simhash import SimHashMethod
from streamdedup.store.layout import DocRecord
from streamdedup.verdict.found_by import FoundBy, found_members, found_members_of

_NO_PLACE = 1 << 62


def _members_one_by_one(seqs, stored, methods, found_by):
    """The definition, candidate by candidate."""
    out = {}
    for tag, method in methods.values():
        found = found_by.seqs.get(tag)
        if not method.keys_find_every_match or found is None or (found and found.issuperset(seqs)):
            continue
        bound = found_by.unfiled_bounds.get(tag, 0)
        bound = _NO_PLACE if bound is None else bound
        out[tag] = np.array([seq in found or (doc.unfiled[0] if doc.unfiled else _NO_PLACE) < bound
                             for seq, doc in zip(seqs, stored, strict=True)], dtype=np.bool_)
    return out


def test_found_members_equal_the_candidate_by_candidate_definition():
    methods = {"exact": (1, ExactMethod()), "minhash": (2, MinHashMethod()), "simhash": (3, SimHashMethod()),
               "a12": (0, A12Method())}
    rng = random.Random(5)
    for _ in range(400):
        count = rng.randint(1, 40)
        seqs = rng.sample(range(1000), count)
        # no places, only high ones (other methods' full keys) or some low ones
        highest = rng.choice([0, 5, 60])
        stored = [DocRecord(seq, f"p{seq}", 0, f"p{seq}",
                            unfiled=tuple(sorted(rng.sample(range(highest), rng.randint(0, min(3, highest)))))
                            if highest and rng.random() < 0.7 else ())
                  for seq in seqs]
        found = {tag: set(rng.sample(seqs, rng.randint(0, count)) if rng.random() < 0.5 else ())
                 for tag in (0, 1, 3) if rng.random() < 0.8}
        bounds = {tag: rng.choice([None, 3, 4, 36, 46]) for tag in (0, 1, 3) if rng.random() < 0.9}
        by = FoundBy(found, bounds)
        got, want = found_members_of(seqs, stored, methods, by), _members_one_by_one(seqs, stored, methods, by)
        # as `verdict.prefilter` asks: the first places as an array, their least read from it
        firsts = np.array([doc.unfiled[0] if doc.unfiled else _NO_PLACE for doc in stored], dtype=np.int64)
        tags = [tag for tag, method in methods.values() if method.keys_find_every_match]
        filters = found_members(seqs, tags, by, firsts.copy)
        assert got.keys() == want.keys() == filters.keys()
        for tag in want:
            assert np.array_equal(got[tag], want[tag]), (tag, seqs, stored, by)
            assert np.array_equal(filters[tag], want[tag]), (tag, seqs, stored, by)
