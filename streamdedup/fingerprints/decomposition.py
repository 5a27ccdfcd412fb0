"""A11 decomposition (004).

Every page is decomposed into its shingles, filed as (shingle, page, length); pages sharing a
shingle are compared only inside the local length window (neighbouring lengths within a ratio of
1.15, for similarity 0.85), with a precise similarity. We keep a 1-in-`sample` subset of shingles
(004: 'all or sampled'), file the page under the smallest `index_sample` of them, and compare by the
Jaccard of the samples."""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

from streamdedup.fingerprints.base import FingerprintMethod, Params
from streamdedup.fingerprints.keyed import set_jaccard
from streamdedup.tokens.document import Document


@dataclass(frozen=True)
class DecompositionParams(Params):
    """Decomposition's parameters: shingle size, the sampling modulus, the length ratio and Jaccard threshold."""

    shingle_size: int = 5
    sample: int = 4  # keep shingles whose hash is 0 modulo this
    length_ratio: float = 1.15
    threshold: float = 0.7
    index_sample: int = 24
    min_elements: int = 4


class DecompositionMethod(FingerprintMethod[tuple[int, np.ndarray], DecompositionParams]):
    """The shingles whose hash is 0 modulo `sample`, compared by Jaccard between pages of near length."""

    name = "decomposition"
    params_type = DecompositionParams

    def signature(self, doc: Document) -> tuple[int, np.ndarray] | None:
        """The page's length in tokens and its sampled shingles (None: fewer than `min_elements`)."""
        shingles = doc.shingles(self.params.shingle_size)
        kept = shingles[shingles % np.uint64(self.params.sample) == 0]
        return (len(doc.tokens), kept) if len(kept) >= self.params.min_elements else None

    def index_keys(self, signature: tuple[int, np.ndarray]) -> list[bytes]:
        """The `index_sample` smallest sampled shingles, 8 bytes each."""
        return [struct.pack("<Q", int(v)) for v in signature[1][: self.params.index_sample]]

    def similarity(self, signature: tuple[int, np.ndarray], other: tuple[int, np.ndarray]) -> float | None:
        """The samples' Jaccard if the lengths are within `length_ratio` and it reaches `threshold`, else None."""
        (len_a, a), (len_b, b) = signature, other
        if max(len_a, len_b) / max(1, min(len_a, len_b)) > self.params.length_ratio:
            return None
        value = set_jaccard(a, b)
        return value if value >= self.params.threshold else None

    def encode(self, signature: tuple[int, np.ndarray]) -> bytes:
        """The signature as bytes: the length, then the sampled shingles."""
        return struct.pack("<I", signature[0]) + signature[1].astype("<u8").tobytes()

    def decode(self, data: bytes) -> tuple[int, np.ndarray]:
        """The signature `encode` wrote."""
        return struct.unpack_from("<I", data)[0], np.frombuffer(data, dtype="<u8", offset=4).astype(np.uint64)
