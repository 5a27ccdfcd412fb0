"""How much of a page is new to a match: a MinHash of its word pairs, for `new_share`.

A page judged a near-duplicate of an earlier one is only safe to drop if its own text is (nearly)
all in that page. The detectors' 5-word shingles cannot say so: one changed word removes five of
them, so three scattered edits of a 100-word brief look like 15 % new text, as much as a replaced
paragraph. Word pairs (2-shingles) move half as much under scattered edits (a changed word makes
two new pairs) and as much as the words themselves under a new paragraph (nearly every pair of new
text is new), so the share of a page's pairs absent from its match tells light edits (an "Updated"
line, a correction, a few words) from new text (a replaced fifth of an article).

The share is estimated from a b-bit MinHash of the pairs (Li & König 2010): 256 permutations, of
each minimum only its lowest 2 bits, packed four to a byte: 64 bytes and the set size (68 bytes a
page in the store). With m the share of equal 2-bit values, the Jaccard estimate is
J = (m - 1/4) / (3/4); then |A∩B| = J(|A|+|B|)/(1+J), and the page's new share is 1 - |A∩B|/|A|.
For the same bytes, 256 values of 2 bits estimate J with ~0.4x the variance of 64 values of 8 bits
(measured error of the new share, paragraphs of another article replacing a quarter: 0.033 sd
against 0.050). The method files no index keys and matches nothing by itself: it is a measure the
engine asks of the candidates the policy found (`engine.judged`), never a way to find them.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from streamdedup.fingerprints.base import FingerprintMethod, Params, all_sized
from streamdedup.fingerprints.kernels import minhash_min, pack_two_bits, two_bit_new_shares
from streamdedup.tokens.document import Document

_VALUE_BITS = 2  # bits kept of each minimum
_PER_BYTE = 8 // _VALUE_BITS


@dataclass(frozen=True)
class WordPairsParams(Params):
    num_perm: int = 256  # a multiple of 4: four 2-bit values a byte
    shingle_size: int = 2
    seed: int = 2

    def __post_init__(self) -> None:
        if self.num_perm < 4 or self.num_perm % _PER_BYTE:
            raise ValueError(f"num_perm is a multiple of {_PER_BYTE} (values packed {_PER_BYTE} a byte), "
                             f"got {self.num_perm}")
        if self.shingle_size < 1:
            raise ValueError(f"shingle_size is a number of words, got {self.shingle_size}")


@dataclass(frozen=True, slots=True)
class WordPairsSignature:
    packed: np.ndarray  # the low 2 bits of each minimum, four a byte: uint8[num_perm / 4]
    set_size: int  # distinct word pairs


class WordPairsMethod(FingerprintMethod[WordPairsSignature, WordPairsParams]):
    """A MinHash of word pairs that finds nothing and measures `new_shares` of the found."""

    name = "wordpairs"
    params_type = WordPairsParams
    finds_candidates = False

    def __init__(self, params: WordPairsParams | None = None) -> None:
        super().__init__(params)
        p = self.params
        rng = np.random.default_rng(p.seed)
        self._a = rng.integers(1, 2**63, size=p.num_perm, dtype=np.uint64) | np.uint64(1)
        self._b = rng.integers(0, 2**63, size=p.num_perm, dtype=np.uint64)
        self._bytes = p.num_perm // _PER_BYTE
        self._record = np.dtype([("size", "<u4"), ("packed", np.uint8, (self._bytes,))])
        self._collision = 2.0 ** -_VALUE_BITS  # P[two different minima keep equal low bits]

    def signature(self, doc: Document) -> WordPairsSignature | None:
        shingles = doc.shingles(self.params.shingle_size)
        if not len(shingles):
            return None
        minima = minhash_min(np.ascontiguousarray(shingles, dtype=np.uint64), self._a, self._b)
        return WordPairsSignature(pack_two_bits(minima), len(shingles))

    def index_keys(self, signature: WordPairsSignature) -> list[bytes]:
        return []

    def index_key_rows(self, encoded: Sequence[bytes]) -> tuple[np.ndarray, np.ndarray] | None:
        return np.empty((0, 9), dtype=np.uint8), np.zeros(len(encoded), dtype=np.int64)

    @property
    def max_index_keys(self) -> int:
        return 0

    def similarity(self, signature: WordPairsSignature, other: WordPairsSignature) -> float | None:
        return None

    def similarities(self, signature: WordPairsSignature, others: Sequence[bytes]) -> np.ndarray:
        return np.full(len(others), np.nan)

    def new_shares(self, signature: WordPairsSignature,
                   others: Sequence[bytes]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The estimated shares of word pairs each page lacks of the other, for each signature in `others`.

        For each encoded signature in `others`: the estimated share of this page's pairs absent
        from it, the share of its pairs absent from this page (float64 in [0, 1]; NaN where not
        comparable: another num_perm), and its count of pairs."""
        count = len(others)
        width = self._record.itemsize
        if len(signature.packed) != self._bytes or not all_sized(others, width):
            mine, theirs, sizes = np.full(count, np.nan), np.full(count, np.nan), np.zeros(count)
            for i, data in enumerate(others):
                if len(data) == width and len(signature.packed) == self._bytes:
                    one = self.new_shares(signature, [data])
                    mine[i], theirs[i], sizes[i] = one[0][0], one[1][0], one[2][0]
            return mine, theirs, sizes
        records = np.frombuffer(b"".join(others), dtype=np.uint8)
        return two_bit_new_shares(records, width, signature.packed, signature.set_size, self.params.num_perm,
                                  self._collision)

    def encode(self, signature: WordPairsSignature) -> bytes:
        return struct.pack("<I", signature.set_size) + signature.packed.tobytes()

    def decode(self, data: bytes) -> WordPairsSignature:
        (size,) = struct.unpack_from("<I", data)
        return WordPairsSignature(np.frombuffer(data, dtype=np.uint8, offset=4), size)

    def laid_out_as_mine(self, data: bytes) -> bool:
        return len(data) == self._record.itemsize
