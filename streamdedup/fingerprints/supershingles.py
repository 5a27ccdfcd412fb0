"""Broder's supershingles (001, 004).

M = 84 min-wise values over word 5-shingles, grouped into m' = 6 supershingles of 14 (a hash of each
group); similar when at least b = 2 supershingles match. A supershingle survives only if all 14
minima agree (probability J^14), which is why 004 found ~0 recall at similarity 0.75 and moved to
megashingles."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import xxhash

from streamdedup.fingerprints.base import DefaultTypeVar, Params
from streamdedup.fingerprints.keyed import PositionalKeys
from streamdedup.fingerprints.minhash import MinHashMethod, MinHashParams
from streamdedup.tokens.document import Document


@dataclass(frozen=True)
class SuperShingleParams(Params):
    """Supershingles' parameters: the min-wise functions, their groups, the matches needed, shingle size, seed."""

    functions: int = 84
    groups: int = 6
    min_matching: int = 2
    shingle_size: int = 5
    seed: int = 11


def group_hashes(values, groups: int) -> tuple[int, ...]:
    """A non-zero hash of each of `groups` equal runs of the values."""
    size = len(values) // groups
    return tuple(xxhash.xxh3_64_intdigest(values[i * size:(i + 1) * size].tobytes()) or 1 for i in range(groups))


SP = DefaultTypeVar("SP", bound=SuperShingleParams, default=SuperShingleParams)


class SuperShinglesMethod(PositionalKeys[SP]):
    """Broder's supershingles: hashes of groups of min-wise values; similar when `min_matching` agree."""

    name = "supershingles"
    params_type = SuperShingleParams

    def __init__(self, params: SP | None = None) -> None:
        super().__init__(params)
        p = self.params
        self.min_equal = p.min_matching
        self._minhash = MinHashMethod(MinHashParams(num_perm=p.functions, shingle_size=p.shingle_size, seed=p.seed))

    def supershingles_of(self, shingles: np.ndarray) -> tuple[int, ...]:
        """The hash of each group of the shingles' min-wise values."""
        return group_hashes(self._minhash.hash_values(shingles), self.params.groups)

    def combine(self, supershingles: tuple[int, ...]) -> tuple[int, ...]:
        """The keys made from the supershingles (Broder: the supershingles themselves)."""
        return supershingles

    def keys(self, doc: Document) -> tuple[int, ...] | None:
        """The keys `combine` makes of the page's supershingles (None: no shingle)."""
        shingles = doc.shingles(self.params.shingle_size)
        return None if len(shingles) == 0 else self.combine(self.supershingles_of(shingles))
