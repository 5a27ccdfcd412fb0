"""Charikar's random projection (STOC 2002; 001, 002).

The page's tf-weighted vector of content words (stop words carry no topic and make every page of a
language alike) is projected on b random directions; the signs are a b-bit fingerprint, and the
fraction of equal bits f estimates the angle: cos θ ≈ cos(π(1 - f)). Unlike SimHash's ±1 per hash
bit, each direction's components are (near-)Gaussian, drawn per word from its hash, as the theory
asks. Candidates share one of `bands` bit-bands (LSH over the bits)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from streamdedup.fingerprints.base import FingerprintMethod, Params
from streamdedup.fingerprints.words import content_words
from streamdedup.hash_arrays import mix64
from streamdedup.tokens.document import Document
from streamdedup.tokens.hashing import hash_tokens

_CHUNK = 2048


@dataclass(frozen=True)
class RandProjParams(Params):
    """Random projection's parameters: fingerprint bits, bands, the cosine threshold, the seed."""

    bits: int = 128
    bands: int = 8
    threshold: float = 0.9  # estimated cosine
    seed: int = 5

    def __post_init__(self) -> None:
        if self.bits % 64 or self.bits % self.bands:
            raise ValueError("bits must be a multiple of 64 and of bands")


def _gaussian(bits: np.ndarray) -> np.ndarray:
    """Four uniforms from one 64-bit word, summed and centred: Irwin-Hall, close to normal."""
    total = np.zeros(bits.shape, dtype=np.float64)
    for i in range(4):
        total += ((bits >> np.uint64(16 * i)) & np.uint64(0xFFFF)).astype(np.float64)
    return (total / 65535.0 - 2.0) * math.sqrt(3.0)


class RandProjMethod(FingerprintMethod[bytes, RandProjParams]):
    """Charikar's random projection: the signs of the page's tf vector on random directions, compared by cosine."""

    name = "randproj"
    params_type = RandProjParams

    def __init__(self, params: RandProjParams | None = None) -> None:
        super().__init__(params)
        rng = np.random.default_rng(self.params.seed)
        self._seeds = rng.integers(0, 2**63, size=self.params.bits, dtype=np.uint64)

    def signature(self, doc: Document) -> bytes | None:
        """The page's `bits`-bit fingerprint of its content words (None: no content word)."""
        content = content_words(doc)
        words, counts = np.unique(hash_tokens(content), return_counts=True)
        if len(words) == 0:
            return None
        total = np.zeros(self.params.bits)
        for start in range(0, len(words), _CHUNK):
            block = words[start: start + _CHUNK]
            directions = _gaussian(mix64(block[:, None] ^ self._seeds[None, :]))
            total += counts[start: start + _CHUNK].astype(np.float64) @ directions
        return np.packbits(total > 0).tobytes()

    def index_keys(self, signature: bytes) -> list[bytes]:
        """Each band of the fingerprint with its number."""
        width = len(signature) // self.params.bands
        return [bytes((i,)) + signature[i * width:(i + 1) * width] for i in range(self.params.bands)]

    def cosine(self, signature: bytes, other: bytes) -> float:
        """The cosine estimate from the share of differing bits: cos(pi d / bits)."""
        xor = bytes(a ^ b for a, b in zip(signature, other, strict=True))
        differing = int(np.unpackbits(np.frombuffer(xor, dtype=np.uint8)).sum())
        return math.cos(math.pi * differing / self.params.bits)

    def similarity(self, signature: bytes, other: bytes) -> float | None:
        """The cosine estimate if it reaches `threshold`, else None."""
        value = self.cosine(signature, other)
        return value if value >= self.params.threshold else None

    def encode(self, signature: bytes) -> bytes:
        """The fingerprint as it is."""
        return signature

    def decode(self, data: bytes) -> bytes:
        """The fingerprint as bytes."""
        return bytes(data)
