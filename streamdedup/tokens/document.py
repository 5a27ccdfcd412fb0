"""The unit every fingerprint method reads: normalised text, its tokens and their hashes.

Built once per page; derived views (shingle sets of a given width, sentence spans) are cached so
that running five methods costs one tokenisation and one round of hashing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from streamdedup.tokens.hashing import hash_tokens, shingle_hashes
from streamdedup.tokens.language import guess_language
from streamdedup.tokens.tokenize import BREAK, words_and_breaks


@dataclass(eq=False)
class Document:
    text: str
    tokens: list[str]
    token_hashes: np.ndarray  # uint64, one per token
    sentence_bounds: np.ndarray  # int64 token offsets: sentence i is tokens[b[i]:b[i+1]]
    lang: str = "en"
    _shingles: dict[int, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict, repr=False)

    @classmethod
    def from_text(cls, text: str, lang: str | None = None) -> "Document":
        """Tokenise sentence by sentence so sentence boundaries are token offsets; `lang` is the
        declared language, guessed from the script when missing."""
        tokens: list[str] = []
        bounds = [0]
        for token in words_and_breaks(text):
            if token != BREAK:
                tokens.append(token)
            elif len(tokens) > bounds[-1]:
                bounds.append(len(tokens))
        if len(tokens) > bounds[-1]:
            bounds.append(len(tokens))
        return cls(text=text, tokens=tokens, token_hashes=hash_tokens(tokens),
                   sentence_bounds=np.asarray(bounds, dtype=np.int64), lang=guess_language(text, lang))

    @property
    def num_sentences(self) -> int:
        return len(self.sentence_bounds) - 1

    def sentence_spans(self) -> list[tuple[int, int]]:
        b = self.sentence_bounds.tolist()
        return list(zip(b[:-1], b[1:]))

    def shingles(self, k: int) -> np.ndarray:
        """Distinct k-token shingle hashes (sorted, uint64)."""
        return self.shingle_counts(k)[0]

    def shingle_counts(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Distinct k-token shingle hashes (sorted) and how often each occurs."""
        cached = self._shingles.get(k)
        if cached is None:
            cached = np.unique(shingle_hashes(self.token_hashes, k), return_counts=True)
            self._shingles[k] = cached
        return cached
