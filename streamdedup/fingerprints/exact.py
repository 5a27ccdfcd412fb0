"""A0 exact: one 128-bit hash of the normalised token sequence (MD5 in the Yandex paper).

Hashing tokens rather than raw text makes whitespace, punctuation and case differences vanish,
which the normaliser already promised; anything else is a different page.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import xxhash

from streamdedup.fingerprints.base import FingerprintMethod, Params, all_sized
from streamdedup.tokens.document import Document


@dataclass(frozen=True)
class ExactParams(Params):
    """Exact's parameters: the tokens a page needs."""

    min_tokens: int = 1


class ExactMethod(FingerprintMethod[bytes, ExactParams]):
    """Exact copies: one 128-bit hash of the page's token sequence, filed under itself."""

    name = "exact"
    params_type = ExactParams
    keys_find_every_match = True  # the key is the digest itself
    max_index_keys = 1

    def signature(self, doc: Document) -> bytes | None:
        """The 128-bit hash of the page's token hashes (None: fewer than `min_tokens` tokens)."""
        if doc.num_tokens < self.params.min_tokens:
            return None
        return xxhash.xxh3_128_digest(doc.token_hashes.tobytes())

    def index_keys(self, signature: bytes) -> list[bytes]:
        """The digest itself: equal pages share it."""
        return [signature]

    def index_key_rows(self, encoded: Sequence[bytes]) -> tuple[np.ndarray, np.ndarray] | None:
        """The digests of many encoded signatures as rows (each is its own one key), if they are all one size."""
        size = len(encoded[0]) if encoded else 0
        if not size or not all_sized(encoded, size):
            return None
        return np.frombuffer(b"".join(encoded), dtype=np.uint8).reshape(-1, size), np.ones(len(encoded), dtype=np.int64)

    def similarity(self, signature: bytes, other: bytes) -> float | None:
        """1.0 for the same digest, else None."""
        return 1.0 if signature == other else None

    def similarities(self, signature: bytes, others: Sequence[bytes]) -> np.ndarray:
        """1.0 for each encoded signature equal to the page's digest, NaN for the others."""
        return np.array([1.0 if data == signature else np.nan for data in others], dtype=np.float64)

    def encode(self, signature: bytes) -> bytes:
        """The digest as it is."""
        return signature

    def decode(self, data: bytes) -> bytes:
        """The digest as it is."""
        return data
