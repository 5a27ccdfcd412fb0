"""Shared shapes for the many methods whose signature is a few 64-bit keys or a set of hashes.

- `PositionalKeys`: a tuple of keys; key i is filed as (i, key); a candidate matches when at
  least `min_equal` positions agree (I-Match, LexRand, Pugh, supershingles, the top-words and
  sentence methods of 004). A key of 0 means 'no key at this position' (e.g. an empty list).
- `HashSet`: a set of 64-bit hashes compared by Jaccard; filed under a bottom-k sample of the
  set so that candidates come from an inverted index, not a scan (log-shingles, SpotSigs, A11).
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterable
from typing import Protocol, cast

import numpy as np

from streamdedup.fingerprints.base import FingerprintMethod, P
from streamdedup.tokens.document import Document


def set_jaccard(a: np.ndarray, b: np.ndarray) -> float:
    """Jaccard of two arrays of distinct hashes."""
    if len(a) == 0 or len(b) == 0:
        return 0.0
    common = len(np.intersect1d(a, b, assume_unique=True))
    return common / (len(a) + len(b) - common)


def crc32_of(words: Iterable[str]) -> int:
    """004's signature of a word list: CRC32 of the words joined in alphabetical order."""
    return zlib.crc32(" ".join(sorted(words)).encode("utf-8", "surrogatepass"))


class PositionalKeys(FingerprintMethod[tuple[int, ...], P]):
    """A method whose signature is a few 64-bit keys, key i filed as (i, key), matched where `min_equal` agree."""

    min_equal = 1

    def keys(self, doc: Document) -> tuple[int, ...] | None:
        """The page's keys, one a position (0: none there); None when it has none; each subclass makes its own."""
        raise NotImplementedError

    def signature(self, doc: Document) -> tuple[int, ...] | None:
        """The page's keys (`keys`)."""
        return self.keys(doc)

    def index_keys(self, signature: tuple[int, ...]) -> list[bytes]:
        """Each non-zero key with its position, 9 bytes each."""
        return [struct.pack("<BQ", i, k) for i, k in enumerate(signature) if k]

    def similarity(self, signature: tuple[int, ...], other: tuple[int, ...]) -> float | None:
        """The share of positions whose keys agree, if at least `min_equal` do, else None."""
        equal = sum(1 for a, b in zip(signature, other, strict=False) if a == b and a)
        return equal / max(len(signature), 1) if equal >= self.min_equal else None

    def encode(self, signature: tuple[int, ...]) -> bytes:
        """The keys as little-endian uint64s."""
        return struct.pack(f"<{len(signature)}Q", *signature)

    def decode(self, data: bytes) -> tuple[int, ...]:
        """The keys `encode` wrote."""
        return struct.unpack(f"<{len(data) // 8}Q", data)


class SetParams(Protocol):
    """What `HashSet` reads of its subclasses' parameters."""

    threshold: float
    index_sample: int
    min_elements: int


class HashSet(FingerprintMethod[np.ndarray, P]):
    """Subclasses give `elements(doc)`; their params have the `SetParams` fields."""

    @property
    def set_params(self) -> SetParams:
        """The parameters as the set shape reads them (`SetParams`)."""
        return cast(SetParams, self.params)

    def elements(self, doc: Document) -> np.ndarray:
        """The page's hashes, repeats allowed; each subclass makes its own."""
        raise NotImplementedError

    def signature(self, doc: Document) -> np.ndarray | None:
        """The page's distinct hashes, sorted (None: fewer than `min_elements`)."""
        values = np.unique(self.elements(doc))
        return values if len(values) >= self.set_params.min_elements else None

    def index_keys(self, signature: np.ndarray) -> list[bytes]:
        """The k smallest hashes: a consistent sample, so sets with a high Jaccard share some."""
        return [struct.pack("<Q", int(v)) for v in signature[: self.set_params.index_sample]]

    def jaccard(self, signature: np.ndarray, other: np.ndarray) -> float:
        """The Jaccard similarity of two sorted hash sets."""
        return set_jaccard(signature, other)

    def similarity(self, signature: np.ndarray, other: np.ndarray) -> float | None:
        """The sets' Jaccard if it reaches `threshold` (sizes too far apart are not compared), else None."""
        small, large = sorted((len(signature), len(other)))
        if small / large < self.set_params.threshold:  # Jaccard <= |A|/|B|: size filter first
            return None
        value = self.jaccard(signature, other)
        return value if value >= self.set_params.threshold else None

    def encode(self, signature: np.ndarray) -> bytes:
        """The hashes as little-endian uint64s."""
        return signature.astype("<u8").tobytes()

    def decode(self, data: bytes) -> np.ndarray:
        """The hashes `encode` wrote."""
        return np.frombuffer(data, dtype="<u8").astype(np.uint64)
