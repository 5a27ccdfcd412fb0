"""SimHash (Charikar 2002) with Manku, Jain & Das Sarma's (WWW 2007) permuted block tables.

Fingerprint: every feature (a word k-shingle hash, weighted by its count in the page) votes
+w/-w on each of 64 bits; the sign of the sum is the bit. Near-duplicates differ in few bits. To
find all stored fingerprints within Hamming distance k without a scan, split the 64 bits into
B > k blocks: two fingerprints within distance k agree exactly on at least B - k blocks, so each
fingerprint is filed under every combination of B - k blocks (the 'permuted tables'), and a
lookup is C(B, k) exact key probes.
"""

from __future__ import annotations

import itertools
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from streamdedup.fingerprints.base import FingerprintMethod, Params, all_sized
from streamdedup.fingerprints.kernels import sign_bits, weighted_sign_bits
from streamdedup.tokens.document import Document

BITS = 64


@dataclass(frozen=True)
class SimHashParams(Params):
    """SimHash's parameters: shingle size, the Hamming distance that matches, the blocks of the tables."""

    shingle_size: int = 1  # 1 = words; tf-weighted words keep small edits within a few bits
    max_distance: int = 3  # k
    blocks: int = 5  # B > k; C(B, k) tables of (B - k) blocks each
    min_shingles: int = 1

    def __post_init__(self) -> None:
        if not 0 <= self.max_distance < self.blocks <= BITS:
            raise ValueError(f"need 0 <= max_distance < blocks <= 64, got k={self.max_distance}, "
                             f"B={self.blocks}: each table keys on B - k blocks that must agree")


def simhash64(feature_hashes: np.ndarray, weights: np.ndarray | None = None) -> int:
    """Sign of the (weighted) per-bit vote over all features (ties -> 0)."""
    if weights is None:
        if len(feature_hashes) < 1 << 31:
            return int(sign_bits(np.ascontiguousarray(feature_hashes, dtype=np.uint64)))
        weights = np.ones(len(feature_hashes), dtype=np.int64)
    return int(weighted_sign_bits(np.ascontiguousarray(feature_hashes, dtype=np.uint64),
                                  np.ascontiguousarray(weights, dtype=np.int64)))


def hamming(a: int, b: int) -> int:
    """The number of bits in which two 64-bit fingerprints differ."""
    return (a ^ b).bit_count()


_BYTE_BITS = np.array([bin(b).count("1") for b in range(256)], dtype=np.uint8)


def popcount64(values: np.ndarray) -> np.ndarray:
    """Set bits of each uint64 (numpy 2's bitwise_count, or a byte table on numpy 1.26)."""
    if hasattr(np, "bitwise_count"):
        return np.bitwise_count(values).astype(np.int64)
    return _BYTE_BITS[values.view(np.uint8)].reshape(-1, 8).sum(axis=1, dtype=np.int64)


class SimHashMethod(FingerprintMethod[int, SimHashParams]):
    """SimHash: a 64-bit fingerprint of weighted shingles, found by permuted block tables within `max_distance` bits."""

    name = "simhash"
    params_type = SimHashParams

    @cached_property
    def _table_masks(self) -> list[int]:
        """One mask per combination of B - k blocks (bit ranges split as evenly as possible)."""
        edges = np.linspace(0, BITS, self.params.blocks + 1).round().astype(int)
        block_masks = [((1 << int(hi - lo)) - 1) << int(lo) for lo, hi in itertools.pairwise(edges)]
        keep = self.params.blocks - self.params.max_distance
        return [sum(combo) for combo in itertools.combinations(block_masks, keep)]

    @property
    def max_index_keys(self) -> int:
        """One key a table: C(blocks, max_distance)."""
        return len(self._table_masks)

    def signature(self, doc: Document) -> int | None:
        """Every occurrence votes.

        The same sum as distinct features weighted by their counts, without finding the distinct
        ones (only needed to check min_shingles above 1)."""
        k, least = self.params.shingle_size, self.params.min_shingles
        features = doc.all_shingles(k)
        if (len(features) if least <= 1 else len(doc.shingles(k))) < least:
            return None
        return simhash64(features)

    def index_keys(self, signature: int) -> list[bytes]:
        """The fingerprint's bits of each table's blocks, with the table's number."""
        return [struct.pack("<BQ", table, signature & mask) for table, mask in enumerate(self._table_masks)]

    def index_key_rows(self, encoded: Sequence[bytes]) -> tuple[np.ndarray, np.ndarray] | None:
        """The table keys of many encoded fingerprints at once (None: not all 8 bytes)."""
        if not all_sized(encoded, 8):
            return None
        signatures = np.frombuffer(b"".join(encoded), dtype="<u8")
        masks = np.array(self._table_masks, dtype=np.uint64)
        keys = np.empty((len(signatures), len(masks), 9), dtype=np.uint8)
        keys[:, :, 0] = np.arange(len(masks), dtype=np.uint8)
        keys[:, :, 1:] = (signatures[:, None] & masks[None, :]).astype("<u8").view(np.uint8).reshape(-1, len(masks), 8)
        return keys.reshape(-1, 9), np.full(len(signatures), len(masks), dtype=np.int64)

    # A table's key is B - k of the B blocks, ~26 bits for B=5, k=3: among N stored pages about
    # N / 2^26 share it by chance, so each page's 10 keys find ~0.2 chance candidates at 1 M pages
    # and ~2 at 10 M (measured: bench/store.py). Manku et al. check the whole fingerprint within
    # the table itself; here the page's stored fingerprint is checked before the page is judged.
    tells_chance_keys = True
    # within distance k, at least B - k blocks agree: one table's key is the same (module docstring)
    keys_find_every_match = True

    def index_finds_bits(self, signature: int | np.ndarray, bits: np.ndarray, mask: int) -> np.ndarray:
        """The distance over the masked bits is at most the whole distance: never a real one dropped."""
        mine = signature.astype(np.uint64) if isinstance(signature, np.ndarray) else np.uint64(signature)
        return popcount64((bits ^ mine) & np.uint64(mask)) <= self.params.max_distance

    def similarity(self, signature: int, other: int) -> float | None:
        """1 - distance/64 if the fingerprints differ in at most `max_distance` bits, else None."""
        distance = hamming(signature, other)
        return 1.0 - distance / BITS if distance <= self.params.max_distance else None

    def similarities(self, signature: int, others: Sequence[bytes]) -> np.ndarray:
        """Hamming distances to every encoded fingerprint in `others` at once."""
        if not all_sized(others, 8):
            return super().similarities(signature, others)
        distance = popcount64(np.frombuffer(b"".join(others), dtype="<u8") ^ np.uint64(signature))
        return np.where(distance <= self.params.max_distance, 1.0 - distance / BITS, np.nan)

    def encode(self, signature: int) -> bytes:
        """The fingerprint as a little-endian uint64."""
        return struct.pack("<Q", signature)

    def decode(self, data: bytes) -> int:
        """The fingerprint `encode` wrote."""
        return struct.unpack("<Q", data)[0]
