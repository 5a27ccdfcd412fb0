"""MinHash over word k-shingles with LSH banding (Broder 1997; 003's lecture; datasketch).

Every permutation is a multiply-add-shift hash (a·x + b) >> 32 of the 64-bit shingle hash,
computed for all permutations and all shingles in one compiled loop (`kernels.minhash_min`, no
permutations x shingles temporary); the signature keeps each minimum. P[minima equal] = Jaccard,
so the fraction of equal minima estimates it. Candidates are
pages sharing an LSH band (bands and rows derived from θ); each is verified by the estimate.

Teasers and truncations have a low Jaccard with their full article but are almost entirely
*contained* in it. With the set sizes stored beside the minima, containment of the smaller page
is estimated as |A∩B| / min(|A|, |B|), |A∩B| = J(|A|+|B|)/(1+J); a pair also matches when that
reaches `containment` and the smaller page has at least `containment_min_shingles` shingles
(short pages are too easily 'contained' in anything that shares their boilerplate).

Signatures keep only the low `value_bits` bits of each minimum (b-bit MinHash, Li & König 2010):
two different minima then collide with probability 2^-b, so the fraction of equal values m
estimates J as (m - 2^-b) / (1 - 2^-b). At 8 bits (the default) that correction is 0.4 % and the
signature a quarter of the whole minima's size (128 bytes for 128 permutations instead of 512), in
the store and on the wire.

A band of 4 rows of 8-bit values alone would be a 32-bit key: among 10 M stored pages, 32 bands
each, 0.075 pages a page would share one by chance, and each costs a record read, ever more as
the store grows. So each band also keeps `band_check_bits` (8) of a hash of its rows' whole
minima (`kernels.band_checks`), absorbed into its key: 40 bits of the rows, 0.0003 chance pages a
page at 10 M. Pages whose band rows are truly equal have equal checks, so the bands find what
bands of whole minima find. 32 bytes a page for 96 less than 16-bit values.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from streamdedup.fingerprints.base import FingerprintMethod, Params, all_sized
from streamdedup.fingerprints.kernels import band_checks, band_keys, band_keys_many, minhash_min, minhash_similarities
from streamdedup.fingerprints.lsh import optimal_bands
from streamdedup.tokens.document import Document

VALUE_TYPES = {8: np.uint8, 16: np.uint16, 32: np.uint32}
NO_CHECKS = np.empty(0, dtype=np.uint8)


@dataclass(frozen=True)
class MinHashParams(Params):
    """MinHash's parameters: permutations, shingle size, Jaccard and containment thresholds, banding, bits kept."""

    num_perm: int = 128
    shingle_size: int = 5
    threshold: float = 0.5  # Jaccard for a near-duplicate
    lsh_threshold: float = 0.4  # Jaccard the LSH banding is tuned for (low enough for teasers); 0 = threshold
    containment: float = 0.85  # containment of the smaller page that also matches; 1.0 = off
    containment_min_shingles: int = 100
    seed: int = 1
    min_shingles: int = 1
    # bits kept of each minimum (b-bit MinHash): 8, 16 or 32
    value_bits: int = 8
    # bits a band keeps of a hash of its rows' whole minima, absorbed into its key: 0 or 8. A
    # description without it (a store from before 2026-12-02) means 0 (`ABSENT_MEANS`)
    band_check_bits: int = 8

    # what a parameter added later means where a stored description does not name it
    ABSENT_MEANS: ClassVar[dict[str, str]] = {"band_check_bits": "0"}

    def __post_init__(self) -> None:
        if self.num_perm < 2:
            raise ValueError("num_perm must be at least 2")
        if self.value_bits not in VALUE_TYPES:
            raise ValueError(f"value_bits is one of {sorted(VALUE_TYPES)} (bits kept per minimum), "
                             f"got {self.value_bits}")
        if self.band_check_bits not in (0, 8):
            raise ValueError(f"band_check_bits is 0 or 8 (bits of a hash of a band's whole minima kept "
                             f"beside its values), got {self.band_check_bits}")
        for name in ("threshold", "lsh_threshold"):
            value = getattr(self, name)
            if not 0.0 <= value < 1.0 or (name == "threshold" and value == 0.0):
                raise ValueError(f"{name} is a Jaccard similarity in (0, 1), got {value}")
        if not 0.0 < self.containment <= 1.0:
            raise ValueError(f"containment is a fraction in (0, 1], got {self.containment}")

    @property
    def banding_threshold(self) -> float:
        """The Jaccard the LSH bands are tuned for: `lsh_threshold`, or `threshold` where that is 0."""
        return self.lsh_threshold or self.threshold


@dataclass(frozen=True, slots=True)
class MinHashSignature:
    """A page's MinHash: the low bits of each minimum, its distinct shingles, a check value a band."""

    values: np.ndarray  # the low value_bits bits of each minimum: uint8/16/32[num_perm]
    set_size: int  # distinct shingles, for containment estimates
    # per band, band_check_bits of a hash of its rows' whole minima: uint8[bands]; empty when 0
    checks: np.ndarray = field(default_factory=lambda: NO_CHECKS)


class MinHashMethod(FingerprintMethod[MinHashSignature, MinHashParams]):
    """MinHash over word shingles, filed under LSH bands; a match by Jaccard or by containment of the smaller page."""

    name = "minhash"
    params_type = MinHashParams
    measures = frozenset({"containment"})

    def __init__(self, params: MinHashParams | None = None) -> None:
        super().__init__(params)
        p = self.params
        rng = np.random.default_rng(p.seed)
        self._a = rng.integers(1, 2**63, size=(p.num_perm, 1), dtype=np.uint64) | np.uint64(1)
        self._b = rng.integers(0, 2**63, size=(p.num_perm, 1), dtype=np.uint64)
        self._a_flat, self._b_flat = self._a.ravel(), self._b.ravel()
        self.bands, self.rows = optimal_bands(p.banding_threshold, p.num_perm)
        self._dtype = VALUE_TYPES[p.value_bits]
        self._collision = 2.0 ** -p.value_bits  # P[two different minima keep equal low bits]
        self._checks = self.bands if p.band_check_bits else 0  # check bytes a signature keeps
        # an encoded signature: the set size, the values, the checks (`encode`); many at once are one array
        self._record = np.dtype([("size", "<u4"), ("values", self._dtype, (p.num_perm,)),
                                 ("checks", np.uint8, (self._checks,))])

    def hash_values(self, shingles: np.ndarray) -> np.ndarray:
        """The MinHash of a set of 64-bit shingle hashes: uint32[num_perm]."""
        return minhash_min(np.ascontiguousarray(shingles, dtype=np.uint64), self._a_flat, self._b_flat)

    def signature(self, doc: Document) -> MinHashSignature | None:
        """The page's minima over its shingles (None: fewer than `min_shingles`).

        Over its distinct shingles in no order (`Document.shingle_set`): the same minima and count, no sort."""
        shingles = doc.shingle_set(self.params.shingle_size)
        if len(shingles) < self.params.min_shingles:
            return None
        return self.signature_of_minima(self.hash_values(shingles), len(shingles))

    def signature_of_minima(self, minima: np.ndarray, set_size: int) -> MinHashSignature:
        """The signature of whole 32-bit minima: their low value_bits bits and the band checks."""
        checks = band_checks(minima, self.bands, self.rows) if self._checks else NO_CHECKS
        return MinHashSignature(minima.astype(self._dtype), set_size, checks)

    @property
    def max_index_keys(self) -> int:
        """One key a band."""
        return self.bands

    @property
    def record_dtype(self) -> np.dtype:
        """An encoded signature as a numpy record: its set size, values and band checks (`encode`)."""
        return self._record

    @property
    def collision(self) -> float:
        """The chance that two different minima keep equal low bits (`value_bits`)."""
        return self._collision

    def index_keys(self, signature: MinHashSignature) -> list[bytes]:
        """One 9-byte key per band: the band number and a 64-bit hash of its rows (and check)."""
        data = band_keys(signature.values, signature.checks, self.bands, self.rows).tobytes()
        return [data[i:i + 9] for i in range(0, len(data), 9)]

    def index_key_rows(self, encoded: Sequence[bytes]) -> tuple[np.ndarray, np.ndarray] | None:
        """The band keys of many encoded signatures in one compiled pass (None: not all of this method's size)."""
        if not all_sized(encoded, self._record.itemsize):
            return None
        records = np.frombuffer(b"".join(encoded), dtype=self._record)
        keys = band_keys_many(np.ascontiguousarray(records["values"]), np.ascontiguousarray(records["checks"]),
                              self.bands, self.rows).reshape(-1, 9)
        return keys, np.full(len(encoded), self.bands, dtype=np.int64)

    def jaccard(self, signature: MinHashSignature, other: MinHashSignature) -> float:
        """The Jaccard estimate: the share of equal values, corrected for equal low bits by chance."""
        equal = float(np.count_nonzero(signature.values == other.values)) / len(signature.values)
        return max(0.0, (equal - self._collision) / (1.0 - self._collision))

    @staticmethod
    def containment_of_smaller(jaccard: float, size_a: int, size_b: int) -> float:
        """The share of the smaller set inside the larger: J(|A|+|B|) / ((1+J) min(|A|, |B|)), at most 1."""
        smaller = min(size_a, size_b)
        if smaller == 0:
            return 0.0
        return min(1.0, jaccard * (size_a + size_b) / ((1.0 + jaccard) * smaller))

    def similarity(self, signature: MinHashSignature, other: MinHashSignature) -> float | None:
        """The Jaccard estimate if it or the smaller page's containment reaches its threshold, else None."""
        if len(other.values) != len(signature.values):
            # another num_perm, or a signature encoded with other value_bits (as the global
            # topology's internal topics may still hold from before a parameter change): not comparable
            return None
        estimate = self.jaccard(signature, other)
        if estimate >= self.params.threshold:
            return estimate
        p = self.params
        if (p.containment < 1.0 and min(signature.set_size, other.set_size) >= p.containment_min_shingles
                and self.containment_of_smaller(estimate, signature.set_size, other.set_size) >= p.containment):
            return estimate
        return None

    def similarities(self, signature: MinHashSignature, others: Sequence[bytes]) -> np.ndarray:
        """The `similarity` against every encoded signature in `others`, in one compiled pass.

        `similarity` against every encoded signature in `others` in one compiled pass
        (`kernels.minhash_similarities`): the same float64 operations as `jaccard` and `similarity`."""
        width = self._record.itemsize
        if (len(signature.values) != self.params.num_perm or signature.values.dtype != self._dtype
                or not all_sized(others, width)):
            return super().similarities(signature, others)
        records = np.frombuffer(b"".join(others), dtype=self._record)
        p = self.params
        # copies, so every call has one array type (a view of one record and a strided view of
        # several were two compiled overloads, each loaded from numba's cache at start-up)
        return minhash_similarities(records["values"].copy(), records["size"].copy(), signature.values,
                                    signature.set_size, p.threshold, self._collision, p.containment,
                                    p.containment_min_shingles)

    def measure_similarities(self, measure: str, signature: MinHashSignature, others: Sequence[bytes]) -> np.ndarray:
        """The estimated containment of the smaller page in the larger one.

        "containment": the estimated containment of the smaller page in the larger one, whatever
        the Jaccard (a policy term `minhash.containment>=X`); NaN where the smaller page has fewer
        than `containment_min_shingles` shingles, too few to tell its own text from shared boilerplate."""
        if measure != "containment":
            return super().measure_similarities(measure, signature, others)
        floor = max(1, self.params.containment_min_shingles)
        if not all_sized(others, self._record.itemsize) or len(signature.values) != self.params.num_perm:
            out = np.full(len(others), np.nan)  # signatures of other sizes: one by one, none of another num_perm
            for i, other in enumerate(map(self.decode, others)):
                if len(other.values) == len(signature.values) and min(other.set_size, signature.set_size) >= floor:
                    out[i] = self.containment_of_smaller(self.jaccard(signature, other), signature.set_size,
                                                         other.set_size)
            return out
        jaccard, stored_sizes = self._jaccards(signature, others)
        sizes = stored_sizes.astype(np.int64)
        smaller = np.minimum(sizes, signature.set_size)
        with np.errstate(divide="ignore", invalid="ignore"):
            contained = np.minimum(1.0, jaccard * (sizes + signature.set_size) / ((1.0 + jaccard) * smaller))
        return np.where(smaller >= floor, contained, np.nan)

    def new_shares(self, signature: MinHashSignature,
                   others: Sequence[bytes]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The estimated shares of shingles each page lacks of the other, for each encoded signature.

        For each encoded signature: the estimated share of this page's shingles absent from it,
        of its shingles absent from this page (NaN where not comparable), and its count of
        shingles: with the word pairs' shares, how much of a page's new text is in runs
        (`new_shares.new_shares_of`)."""
        count = len(others)
        if not count or len(signature.values) != self.params.num_perm or not all_sized(others, self._record.itemsize):
            return np.full(count, np.nan), np.full(count, np.nan), np.zeros(count)
        jaccard, stored_sizes = self._jaccards(signature, others)
        sizes = stored_sizes.astype(np.float64)
        own = float(max(1, signature.set_size))
        shared = jaccard * (sizes + own) / (1.0 + jaccard)
        return (np.clip(1.0 - shared / own, 0.0, 1.0), np.clip(1.0 - shared / np.maximum(sizes, 1.0), 0.0, 1.0),
                sizes)

    def _jaccards(self, signature: MinHashSignature, others: Sequence[bytes]) -> tuple[np.ndarray, np.ndarray]:
        """Each encoded signature's estimated Jaccard with `signature`, and its set size (as stored).

        All of `others` have this method's layout (`all_sized`): `measure_similarities` and
        `new_shares` read them as one array."""
        records = np.frombuffer(b"".join(others), dtype=self._record)
        equal = np.count_nonzero(records["values"] == signature.values, axis=1) / len(signature.values)
        return np.maximum(0.0, (equal - self._collision) / (1.0 - self._collision)), records["size"]

    def laid_out_as_mine(self, data: bytes) -> bool:
        """Whether the encoded signature is this method's record size (its num_perm, value_bits and checks)."""
        return len(data) == self._record.itemsize

    def encode(self, signature: MinHashSignature) -> bytes:
        """The signature as bytes: its set size, its values at `value_bits`, its band checks."""
        values = signature.values
        if values.dtype != self._dtype:  # its bytes would decode as other values, silently
            raise ValueError(f"a MinHash signature of {values.dtype} values, but this method keeps "
                             f"{self.params.value_bits} bits of each: made with another value_bits?")
        if len(signature.checks) != self._checks:
            raise ValueError(f"a MinHash signature with {len(signature.checks)} band checks, but this method keeps "
                             f"{self._checks}: made with another band_check_bits?")
        return struct.pack("<I", signature.set_size) + values.tobytes() + signature.checks.tobytes()

    def decode(self, data: bytes) -> MinHashSignature:
        """The signature `encode` wrote."""
        (size,) = struct.unpack_from("<I", data)
        if not self._checks:
            return MinHashSignature(np.frombuffer(data, dtype=self._dtype, offset=4), size)
        end = len(data) - self._checks
        values = np.frombuffer(data, dtype=self._dtype, count=(end - 4) * 8 // self.params.value_bits, offset=4)
        return MinHashSignature(values, size, np.frombuffer(data, dtype=np.uint8, offset=end))
