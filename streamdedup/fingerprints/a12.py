"""A12 "3+5" (Zelenkov & Segalovich, RCDL 2007, 004 section 4): the best method of its table.

Per page: len (words of >= 3 letters), num (sentences), ss1..ss3 (signatures of the 3 longest
sentences, ties by signature) and ws1..ws5 (signatures of the 5 longest words). The page is filed
under ss1..ss3. Two pages sharing a sentence key are compared only inside the local length
neighbourhood (len ratio <= 1.15 for similarity 0.85, sentence-count ratio <= 1.20, >= 2 of the 5
word signatures in common) and are duplicates if their longest sentences agree, or, for pages
with more than 5 sentences, ss2 and ss3 agree in any order.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from streamdedup.fingerprints.base import FingerprintMethod, Params
from streamdedup.fingerprints.kernels import longest_distinct, longest_spans
from streamdedup.tokens.document import Document
from streamdedup.tokens.hashing import combine


@dataclass(frozen=True)
class A12Params(Params):
    length_ratio: float = 1.15  # 1.15 <-> minimum similarity 0.85 in 004
    count_ratio: float = 1.20
    min_word_matches: int = 2
    min_word_letters: int = 3


# an encoded signature with the usual 3 sentences and 5 words (`A12Method.encode`), as one array row
_FULL = np.dtype([("length", "<u4"), ("sentences", "<u4"), ("n_ss", "u1"), ("n_ws", "u1"),
                  ("ss", "<u8", (3,)), ("ws", "<u8", (5,))])


@dataclass(frozen=True, slots=True)
class A12Signature:
    length: int
    sentences: int
    ss: tuple[int, ...]  # longest sentences first
    ws: tuple[int, ...]  # longest words first


def _ratio(a: int, b: int) -> float:
    return max(a, b) / max(1, min(a, b))


def _ratios(a: int, b: np.ndarray) -> np.ndarray:
    """`_ratio` of `a` with each of `b`."""
    return np.maximum(a, b) / np.maximum(1, np.minimum(a, b))


def _longest_sentences(doc: Document, count: int) -> tuple[int, ...]:
    """Signatures of the `count` longest sentences, ties by signature; only sentences at least as
    long as the count-th longest are hashed."""
    bounds, hashes = doc.sentence_bounds.tolist(), doc.token_hashes
    ranked = sorted((bounds[i] - bounds[i + 1], combine(hashes[bounds[i]:bounds[i + 1]]))
                    for i in longest_spans(doc.sentence_bounds, count).tolist())
    return tuple(signature for _, signature in ranked[:count])


def _longest_words(lengths: np.ndarray, hashes: np.ndarray, count: int) -> tuple[int, ...]:
    """Hashes of the `count` longest distinct words, ties by hash."""
    return tuple(longest_distinct(lengths, hashes, count).tolist())


class A12Method(FingerprintMethod[A12Signature, A12Params]):
    name = "a12"
    params_type = A12Params

    def signature(self, doc: Document) -> A12Signature | None:
        lengths = doc.token_lengths
        length = int(np.count_nonzero((lengths >= self.params.min_word_letters) | doc.token_is_cjk))
        if length == 0 or doc.num_sentences == 0:
            return None
        return A12Signature(length, doc.num_sentences, _longest_sentences(doc, 3),
                            _longest_words(lengths, doc.token_hashes, 5))

    def index_keys(self, signature: A12Signature) -> list[bytes]:
        return [struct.pack("<Q", s) for s in dict.fromkeys(signature.ss)]

    def similarity(self, signature: A12Signature, other: A12Signature) -> float | None:
        p = self.params
        if _ratio(signature.length, other.length) > p.length_ratio:
            return None
        if _ratio(signature.sentences, other.sentences) > p.count_ratio:
            return None
        needed = min(p.min_word_matches, len(signature.ws), len(other.ws))
        if len(set(signature.ws) & set(other.ws)) < needed:
            return None
        same_longest = signature.ss[0] == other.ss[0]
        same_next = (signature.sentences > 5 and other.sentences > 5 and len(signature.ss) == 3
                     and len(other.ss) == 3 and set(signature.ss[1:]) == set(other.ss[1:]))
        if not (same_longest or same_next):
            return None
        return min(signature.length, other.length) / max(signature.length, other.length)

    def similarities(self, signature: A12Signature, others: Sequence[bytes]) -> np.ndarray:
        """`similarity` against many encoded signatures: those with 3 sentences and 5 distinct
        words (nearly all) in one pass of array operations, the same tests in the same float64
        arithmetic; any other one by one."""
        if len(signature.ss) != 3 or len(set(signature.ws)) != 5 or len(signature.ws) != 5:
            return super().similarities(signature, others)
        full = np.array([len(data) == _FULL.itemsize and data[8:10] == b"\x03\x05" for data in others], dtype=bool)
        result = np.full(len(others), np.nan)
        if full.any():
            rows = np.frombuffer(b"".join(d for d, f in zip(others, full.tolist(), strict=True) if f), dtype=_FULL)
            ordered = np.sort(rows["ws"], axis=1)
            distinct = (ordered[:, 1:] != ordered[:, :-1]).all(axis=1)  # as `similarity`'s sets count them
            result[np.flatnonzero(full)] = self._similarities(signature, rows)
            full[np.flatnonzero(full)[~distinct]] = False
        rest = np.flatnonzero(~full)
        if rest.size:
            result[rest] = super().similarities(signature, [others[i] for i in rest.tolist()])
        return result

    def _similarities(self, signature: A12Signature, rows: np.ndarray) -> np.ndarray:
        p = self.params
        length, sentences = rows["length"].astype(np.int64), rows["sentences"].astype(np.int64)
        ss, (s1, s2, s3) = rows["ss"], (np.uint64(v) for v in signature.ss)
        in_mine = (ss[:, 1] == s2) | (ss[:, 1] == s3), (ss[:, 2] == s2) | (ss[:, 2] == s3)
        in_theirs = (ss[:, 1] == s2) | (ss[:, 2] == s2), (ss[:, 1] == s3) | (ss[:, 2] == s3)
        same_next = (signature.sentences > 5) & (sentences > 5) & in_mine[0] & in_mine[1] & in_theirs[0] & in_theirs[1]
        ok = ((_ratios(signature.length, length) <= p.length_ratio)
              & (_ratios(signature.sentences, sentences) <= p.count_ratio)
              & (np.isin(rows["ws"], np.array(signature.ws, dtype=np.uint64)).sum(axis=1) >= min(p.min_word_matches, 5))
              & ((ss[:, 0] == s1) | same_next))
        return np.where(ok, np.minimum(length, signature.length) / np.maximum(length, signature.length), np.nan)

    def encode(self, signature: A12Signature) -> bytes:
        return struct.pack(f"<IIBB{len(signature.ss)}Q{len(signature.ws)}Q", signature.length,
                           signature.sentences, len(signature.ss), len(signature.ws),
                           *signature.ss, *signature.ws)

    def decode(self, data: bytes) -> A12Signature:
        length, sentences, n_ss, n_ws = struct.unpack_from("<IIBB", data)
        values = struct.unpack_from(f"<{n_ss + n_ws}Q", data, 10)
        return A12Signature(length, sentences, tuple(values[:n_ss]), tuple(values[n_ss:]))
