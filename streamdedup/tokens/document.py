"""The unit every fingerprint method reads: normalised text, its tokens and their hashes.

Built once per page by one compiled scan (`scan.py`): token offsets, token hashes and sentence
bounds are arrays. Everything else is derived on first use and cached, so the default methods,
which read only hashes and offsets, never pay for token strings or a language guess.
"""

from __future__ import annotations

import itertools
from functools import cached_property

import numpy as np

from streamdedup.hash_arrays import distinct, first_seen
from streamdedup.tokens.hashing import code_points as text_code_points
from streamdedup.tokens.hashing import shingle_hashes
from streamdedup.tokens.language import guess_language
from streamdedup.tokens.scan import scan


class Document:
    """A text's tokens (offsets, hashes, CJK flags) and sentences, as every fingerprint method reads them."""

    def __init__(self, text: str, token_starts: np.ndarray, token_ends: np.ndarray,
                 token_hashes: np.ndarray, token_is_cjk: np.ndarray, sentence_bounds: np.ndarray,
                 declared_lang: str | None = None, code_points: np.ndarray | None = None) -> None:
        self.text = text
        self.token_starts = token_starts  # int64 code point offsets into text
        self.token_ends = token_ends
        self.token_hashes = token_hashes  # uint64, one per token
        self.token_is_cjk = token_is_cjk  # bool: the token is one Han/kana character
        self.sentence_bounds = sentence_bounds  # int64 token offsets: sentence i is tokens[b[i]:b[i+1]]
        self.declared_lang = declared_lang
        self._code_points = code_points
        self._shingles: dict[int, np.ndarray] = {}
        self._all_shingles: dict[int, np.ndarray] = {}
        self._shingle_sets: dict[int, np.ndarray] = {}

    @classmethod
    def from_text(cls, text: str, lang: str | None = None) -> Document:
        """`lang` is the declared language; when missing it is guessed from the script on first use."""
        s = scan(text)
        return cls(text, s.starts, s.ends, s.hashes, s.cjk, s.sentence_bounds, lang, s.code_points)

    @property
    def code_points(self) -> np.ndarray:
        """The text's code points (`hashing.code_points`), as the scan read them.

        For a compiled loop over the text: numba types a str argument in Python (~2 µs a call), an
        array in C."""
        if self._code_points is None:
            self._code_points = text_code_points(self.text)
        return self._code_points

    @property
    def num_tokens(self) -> int:
        """How many tokens the text has."""
        return len(self.token_hashes)

    @cached_property
    def tokens(self) -> list[str]:
        """The tokens as strings, in text order."""
        text = self.text
        return [text[a:b] for a, b in zip(self.token_starts.tolist(), self.token_ends.tolist(), strict=True)]

    @cached_property
    def token_lengths(self) -> np.ndarray:
        """Characters (code points) per token."""
        return self.token_ends - self.token_starts

    @cached_property
    def lang(self) -> str:
        """The text's language: the declared one if given, else a guess from its script."""
        return guess_language(self.text, self.declared_lang)

    @property
    def num_sentences(self) -> int:
        """How many sentences the text has."""
        return len(self.sentence_bounds) - 1

    def sentence_spans(self) -> list[tuple[int, int]]:
        """Each sentence's token range (start, end), in text order."""
        b = self.sentence_bounds.tolist()
        return list(itertools.pairwise(b))

    def all_shingles(self, k: int) -> np.ndarray:
        """Every k-token shingle hash, in text order, repeats included (uint64)."""
        cached = self._all_shingles.get(k)
        if cached is None:
            cached = self._all_shingles[k] = shingle_hashes(self.token_hashes, k)
        return cached

    def shingles(self, k: int) -> np.ndarray:
        """Distinct k-token shingle hashes (sorted, uint64)."""
        cached = self._shingles.get(k)
        if cached is None:
            cached = self._shingles[k] = distinct(self.all_shingles(k))
        return cached

    def shingle_set(self, k: int) -> np.ndarray:
        """Distinct k-token shingle hashes in no set order (uint64): `shingles` where it is made, else unsorted.

        For a method that reads them as a set, their minima and how many (MinHash, word pairs): one
        hashed pass (`hash_arrays.first_seen`) and no sort, ~6 µs a 600-word page of each k saved."""
        made = self._shingles.get(k)
        if made is not None:
            return made
        cached = self._shingle_sets.get(k)
        if cached is None:
            cached = self._shingle_sets[k] = first_seen(self.all_shingles(k))
        return cached
