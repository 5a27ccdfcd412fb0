"""A8 LogShingles (004).

Word 5-shingles with wrap-around (the text read as a ring, so the end joins the start), of which
only those whose fingerprint is divisible by a power of two 2^T are kept (logarithmic sampling). T
grows with log2 of the page's shingle count, so that about `target` shingles survive; two pages are
compared at the larger of their two levels (the sample at level T+1 is a subset of the one at T), by
the Jaccard of the samples."""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass

import numpy as np

from streamdedup.fingerprints.base import FingerprintMethod, Params
from streamdedup.fingerprints.keyed import set_jaccard
from streamdedup.tokens.document import Document
from streamdedup.tokens.hashing import shingle_hashes


@dataclass(frozen=True)
class LogShingleParams(Params):
    """Log-shingles' parameters: shingle size, the shingles kept (about), the Jaccard threshold."""

    shingle_size: int = 5
    target: int = 32  # shingles kept, about
    threshold: float = 0.5  # Jaccard of the samples
    min_elements: int = 4


def trailing_zeros(values: np.ndarray) -> np.ndarray:
    """Each uint64's count of trailing zero bits (64 for 0)."""
    low = values & (~values + np.uint64(1))  # lowest set bit
    safe = np.where(values == 0, np.uint64(1), low)
    return np.where(values == 0, 64, np.log2(safe.astype(np.float64)).astype(np.int64))


class LogShinglesMethod(FingerprintMethod[tuple[int, np.ndarray], LogShingleParams]):
    """Log-shingles: the shingles of at least T trailing zero bits, T chosen so that about `target` remain."""

    name = "logshingles"
    params_type = LogShingleParams

    def signature(self, doc: Document) -> tuple[int, np.ndarray] | None:
        """The page's level T and the shingles it keeps at it (None: no token)."""
        k = self.params.shingle_size
        hashes = doc.token_hashes
        if len(hashes) == 0:
            return None
        ring = np.concatenate([hashes, hashes[: k - 1]]) if len(hashes) >= k else hashes
        shingles = np.unique(shingle_hashes(ring, k))
        level = max(0, int(math.log2(max(1, len(shingles) / self.params.target))))
        kept = shingles[trailing_zeros(shingles) >= level]
        return (level, kept) if len(kept) >= self.params.min_elements else None

    def index_keys(self, signature: tuple[int, np.ndarray]) -> list[bytes]:
        """The kept shingles of level T+1, which a page at level T or T+1 keeps too, 8 bytes each."""
        level, kept = signature
        # filed under the shingles of level T+1, which pages at level T or T+1 both keep
        return [struct.pack("<Q", int(v)) for v in kept[trailing_zeros(kept) >= level + 1]]

    def similarity(self, signature: tuple[int, np.ndarray], other: tuple[int, np.ndarray]) -> float | None:
        """The Jaccard of both pages' shingles at the higher of their levels, if it reaches `threshold`, else None."""
        level = max(signature[0], other[0])
        a = signature[1][trailing_zeros(signature[1]) >= level]
        b = other[1][trailing_zeros(other[1]) >= level]
        value = set_jaccard(a, b)
        return value if value >= self.params.threshold else None

    def encode(self, signature: tuple[int, np.ndarray]) -> bytes:
        """The signature as bytes: the level, then the kept shingles."""
        return struct.pack("<B", signature[0]) + signature[1].astype("<u8").tobytes()

    def decode(self, data: bytes) -> tuple[int, np.ndarray]:
        """The signature `encode` wrote."""
        return data[0], np.frombuffer(data, dtype="<u8", offset=1).astype(np.uint64)
