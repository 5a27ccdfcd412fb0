"""A12 "3+5" (Zelenkov & Segalovich, RCDL 2007, 004 section 4): the best method of its table.

Per page: len (words of >= 3 letters), num (sentences), ss1..ss3 (signatures of the 3 longest
sentences, ties by signature) and ws1..ws5 (signatures of the 5 longest words). The page is filed
under ss1..ss3. Two pages sharing a sentence key are compared only inside the local length
neighbourhood (len ratio <= 1.15 for similarity 0.85, sentence-count ratio <= 1.20, >= 2 of the 5
word signatures in common) and are duplicates if their longest sentences agree, or, for pages
with more than 5 sentences, ss2 and ss3 agree in any order.

The word signatures are only ever compared for equality, 2 of 5 needed beside the other tests, so a
record keeps 32 bits of each (`word_bits`; 64 before 2026-12-02): 20 bytes a page less in the store.
The sentence signatures are the index keys and keep all 64.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from operator import itemgetter
from typing import ClassVar

import numpy as np

from streamdedup.fingerprints.base import FingerprintMethod, Params, all_sized
from streamdedup.fingerprints.kernels import a12_similarities, distinct_sentence_keys, longest_spans, words_and_longest
from streamdedup.hash_arrays import combine
from streamdedup.tokens.document import Document


@dataclass(frozen=True)
class A12Params(Params):
    """A12's parameters: the length and sentence-count neighbourhood, the word matches needed, the bits kept."""

    length_ratio: float = 1.15  # 1.15 <-> minimum similarity 0.85 in 004
    count_ratio: float = 1.20
    min_word_matches: int = 2
    min_word_letters: int = 3
    # bits kept of each word signature (ws1..ws5): 32 or 64. A description without it (a store
    # from before 2026-12-02) means 64 (`ABSENT_MEANS`)
    word_bits: int = 32

    # what a parameter added later means where a stored description does not name it
    ABSENT_MEANS: ClassVar[dict[str, str]] = {"word_bits": "64"}

    def __post_init__(self) -> None:
        if self.word_bits not in _WORD_FORMATS:
            raise ValueError(f"word_bits is 32 or 64 (bits kept of each word signature), got {self.word_bits}")


# a record's counts of sentences and words kept (its layout), sliced by `map` at C speed in `similarities`
_LAYOUT_BYTES = itemgetter(slice(8, 10))
_WORD_FORMATS = {32: "I", 64: "Q"}  # struct codes of a word signature by `word_bits`


@lru_cache(maxsize=64)
def _layout(n_ss: int, n_ws: int, word_bits: int) -> np.dtype:
    """An encoded signature with `n_ss` sentences and `n_ws` words (`A12Method.encode`) as one array row."""
    return np.dtype([("length", "<u4"), ("sentences", "<u4"), ("n_ss", "u1"), ("n_ws", "u1"),
                     ("ss", "<u8", (n_ss,)), ("ws", f"<u{word_bits // 8}", (n_ws,))])


@lru_cache(maxsize=64)
def _packer(n_ss: int, n_ws: int, word_format: str) -> struct.Struct:
    """The `struct.Struct` of an encoded signature of `n_ss` sentences and `n_ws` words.

    As `A12Method.encode` and `decode` write and read it."""
    return struct.Struct(f"<IIBB{n_ss}Q{n_ws}{word_format}")


@dataclass(frozen=True, slots=True)
class A12Signature:
    """A page's A12 signature: length in words, sentences, 3 longest sentences' and 5 longest words' hashes."""

    length: int
    sentences: int
    ss: tuple[int, ...]  # longest sentences first
    ws: tuple[int, ...]  # longest words first


def _ratio(a: int, b: int) -> float:
    return max(a, b) / max(1, min(a, b))


def _longest_sentences(doc: Document, count: int) -> tuple[int, ...]:
    """Signatures of the `count` longest sentences, ties by signature.

    Only sentences at least as long as the count-th longest are hashed."""
    bounds, hashes = doc.sentence_bounds.tolist(), doc.token_hashes
    ranked = sorted((bounds[i] - bounds[i + 1], combine(hashes[bounds[i]:bounds[i + 1]]))
                    for i in longest_spans(doc.sentence_bounds, count).tolist())
    return tuple(signature for _, signature in ranked[:count])


class A12Method(FingerprintMethod[A12Signature, A12Params]):
    """A12 "3+5": pages filed under their 3 longest sentences, checked by length, sentence count and longest words."""

    name = "a12"
    params_type = A12Params
    # a match has the same longest sentence, or the same next two: both pages file all three
    keys_find_every_match = True
    max_index_keys = 3  # ss1..ss3

    def __init__(self, params: A12Params | None = None) -> None:
        super().__init__(params)
        self._word_mask = (1 << self.params.word_bits) - 1
        self._word_mask_u64 = np.uint64(self._word_mask)
        self._word_format = _WORD_FORMATS[self.params.word_bits]

    def signature(self, doc: Document) -> A12Signature | None:
        """The page's length, sentence count, 3 longest sentences and 5 longest words (None: no word or sentence)."""
        # the page's length in words and its 5 longest distinct words (ties by hash)
        length, words = words_and_longest(doc.token_starts, doc.token_ends, doc.token_hashes, doc.token_is_cjk,
                                          self.params.min_word_letters, 5)
        sentences = doc.num_sentences
        if length == 0 or sentences == 0:
            return None
        kept = tuple((words & self._word_mask_u64).tolist())  # as `_kept` keeps them: `word_bits` bits
        return A12Signature(length, sentences, _longest_sentences(doc, 3), kept)

    def _kept(self, words: tuple[int, ...]) -> tuple[int, ...]:
        """Word signatures as a record keeps them: their low `word_bits` bits."""
        mask = self._word_mask
        return words if mask == (1 << 64) - 1 else tuple(word & mask for word in words)

    def index_keys(self, signature: A12Signature) -> list[bytes]:
        """The page's distinct longest-sentence hashes, 8 bytes each."""
        return [struct.pack("<Q", s) for s in dict.fromkeys(signature.ss)]

    def index_key_rows(self, encoded: Sequence[bytes]) -> tuple[np.ndarray, np.ndarray] | None:
        """The sentence keys of many encoded signatures in one compiled pass: 8-byte rows and a count a signature."""
        data = np.frombuffer(b"".join(encoded), dtype=np.uint8)
        ends = np.cumsum(np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded)))
        keys, counts = distinct_sentence_keys(data, ends)
        return keys.view(np.uint8).reshape(-1, 8), counts

    def similarity(self, signature: A12Signature, other: A12Signature) -> float | None:
        """1.0 if the pages are near in length and sentences and their longest sentences agree, else None."""
        p = self.params
        if _ratio(signature.length, other.length) > p.length_ratio:
            return None
        if _ratio(signature.sentences, other.sentences) > p.count_ratio:
            return None
        needed = min(p.min_word_matches, len(signature.ws), len(other.ws))
        if len(set(self._kept(signature.ws)) & set(self._kept(other.ws))) < needed:
            return None
        same_longest = signature.ss[0] == other.ss[0]
        same_next = (signature.sentences > 5 and other.sentences > 5 and len(signature.ss) == 3
                     and len(other.ss) == 3 and set(signature.ss[1:]) == set(other.ss[1:]))
        if not (same_longest or same_next):
            return None
        return min(signature.length, other.length) / max(signature.length, other.length)

    def similarities(self, signature: A12Signature, others: Sequence[bytes]) -> np.ndarray:
        """The `similarity` against many encoded signatures of one layout, in one compiled pass.

        `similarity` against many encoded signatures, those of one layout (as many sentences
        and words) in one compiled pass (`kernels.a12_similarities`): the same tests."""
        if not signature.ss:
            return super().similarities(signature, others)
        result = np.full(len(others), np.nan)
        kinds = list(map(_LAYOUT_BYTES, others))  # (sentences, words) kept: the record's layout
        layouts: dict[bytes, list[int]] = {}
        if len(set(kinds)) == 1:
            layouts[kinds[0]] = list(range(len(others)))
        else:
            for i, kind in enumerate(kinds):
                layouts.setdefault(kind, []).append(i)
        p = self.params
        mine_ss, mine_ws = np.array(signature.ss, dtype=np.uint64), np.array(self._kept(signature.ws), dtype=np.uint64)
        for counts, rows in layouts.items():
            group = others if len(rows) == len(others) else [others[i] for i in rows]
            layout = _layout(counts[0], counts[1], p.word_bits)
            if not counts[0] or not all_sized(group, layout.itemsize):
                result[rows] = super().similarities(signature, group)
                continue
            records = np.frombuffer(b"".join(group), dtype=layout)
            # copies: one array type for any number of records (one compiled overload, as in minhash)
            result[rows] = a12_similarities(records["length"].copy(), records["sentences"].copy(), records["ss"].copy(),
                                            records["ws"].astype(np.uint64),
                                            signature.length, signature.sentences, mine_ss, mine_ws,
                                            p.length_ratio, p.count_ratio, p.min_word_matches)
        return result

    def encode(self, signature: A12Signature) -> bytes:
        """The signature as bytes: length, sentences, the counts, sentence hashes, word hashes at `word_bits`."""
        ss, ws = signature.ss, signature.ws
        packer = _packer(len(ss), len(ws), self._word_format)
        try:  # the words as `signature` made them: `word_bits` bits already
            return packer.pack(signature.length, signature.sentences, len(ss), len(ws), *ss, *ws)
        except struct.error:  # a signature made elsewhere (a test's, the bench's) with wider words
            return packer.pack(signature.length, signature.sentences, len(ss), len(ws), *ss, *self._kept(ws))

    def laid_out_as_mine(self, data: bytes) -> bool:
        """Whether the encoded signature's size is the one its counts give at this method's `word_bits`."""
        return len(data) >= 10 and len(data) == 10 + 8 * data[8] + self.params.word_bits // 8 * data[9]

    def decode(self, data: bytes) -> A12Signature:
        """The signature `encode` wrote."""
        length, sentences, n_ss, n_ws = struct.unpack_from("<IIBB", data)
        values = _packer(n_ss, n_ws, self._word_format).unpack_from(data)[4:]  # after the header
        return A12Signature(length, sentences, tuple(values[:n_ss]), tuple(values[n_ss:]))
