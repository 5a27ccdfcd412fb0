"""A6 megashingles (Fetterly et al.; 004).

36 min-wise functions over word 5-shingles, 6 supershingles of 6, and the 15 pairs of supershingles
('megashingles'); one equal megashingle means similar (that is: two supershingles agree)."""

from __future__ import annotations

import itertools
import struct
from dataclasses import dataclass

import xxhash

from streamdedup.fingerprints.supershingles import (
    SuperShingleParams,
    SuperShinglesMethod,
)


@dataclass(frozen=True)
class MegaShingleParams(SuperShingleParams):
    """Megashingles' parameters: supershingles' with 6 groups of 36 functions."""

    functions: int = 36
    groups: int = 6
    min_matching: int = 1
    seed: int = 13


class MegaShinglesMethod(SuperShinglesMethod[MegaShingleParams]):
    """Megashingles (Fetterly et al.): a page filed under every pair of its 6 supershingles."""

    name = "megashingles"
    params_type = MegaShingleParams

    def combine(self, supershingles: tuple[int, ...]) -> tuple[int, ...]:
        """All 15 pairs of the 6 supershingles."""
        return tuple(xxhash.xxh3_64_intdigest(struct.pack("<QQ", a, b)) or 1
                     for a, b in itertools.combinations(supershingles, 2))
