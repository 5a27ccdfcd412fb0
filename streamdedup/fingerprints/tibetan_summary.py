"""The Tibetan web-page pipeline (002).

Feature terms by TF*IDF (IDF with df + 1), a Luhn summary of the best sentences, a fixed-width
fingerprint of the summary, Hamming distance < 3 means a duplicate or reprint; similarity from the
distance.

Luhn's significance: inside a sentence, a cluster is a span that starts and ends with feature
terms with at most `gap` ordinary words between neighbouring feature terms; its weight is
(feature terms in it)² / its length; a sentence scores its best cluster. The `sentences` best
sentences, in text order, are the summary, fingerprinted with 64-bit SimHash and found through
permuted block tables. It works for any language; for Tibetan the stop words are its particles.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

import numpy as np

from streamdedup.fingerprints.base import FingerprintMethod, Params
from streamdedup.fingerprints.simhash import SimHashMethod, SimHashParams, simhash64
from streamdedup.fingerprints.words import content_words, top_words
from streamdedup.stats.lexicon import load_lexicon
from streamdedup.tokens.document import Document


@dataclass(frozen=True)
class TibetanSummaryParams(Params):
    """The Tibetan pipeline's parameters: feature terms, Luhn's gap, summary sentences, Hamming distance, lexicon."""

    feature_terms: int = 12
    gap: int = 4
    sentences: int = 5
    max_distance: int = 2  # Hamming < 3
    lexicon: str = "wordfreq"


def luhn_score(flags: list[bool], gap: int) -> float:
    """Best cluster weight of one sentence, given which of its words are feature terms."""
    positions = [i for i, f in enumerate(flags) if f]
    best, start = 0.0, 0
    for end in range(1, len(positions) + 1):
        if end == len(positions) or positions[end] - positions[end - 1] - 1 > gap:
            count = end - start
            span = positions[end - 1] - positions[start] + 1
            best = max(best, count * count / span)
            start = end
    return best


class TibetanSummaryMethod(FingerprintMethod[int, TibetanSummaryParams]):
    """The Tibetan pipeline (002): a SimHash-like fingerprint of a Luhn summary of the page."""

    name = "tibetan_summary"
    params_type = TibetanSummaryParams

    def __init__(self, params: TibetanSummaryParams | None = None) -> None:
        super().__init__(params)
        self._tables = SimHashMethod(SimHashParams(max_distance=self.params.max_distance, blocks=4))

    def describe(self) -> str:
        """The method's description with its lexicon's version (another lexicon gives other keys)."""
        return f"{super().describe()}[{load_lexicon(self.params.lexicon).version}]"

    def feature_terms(self, doc: Document) -> set[str]:
        """The page's `feature_terms` content words heaviest by TF*IDF (IDF with df + 1)."""
        tf = Counter(content_words(doc))
        lexicon = load_lexicon(self.params.lexicon)
        weights = {w: c * math.log(lexicon.n_docs / (lexicon.df(w, doc.lang) + 1)) for w, c in tf.items()}
        return set(top_words(weights, self.params.feature_terms))

    def summary_spans(self, doc: Document) -> list[tuple[int, int]]:
        """The token spans of the page's best sentences by Luhn's score over its feature terms."""
        features = self.feature_terms(doc)
        scored = []
        for order, (start, end) in enumerate(doc.sentence_spans()):
            score = luhn_score([t in features for t in doc.tokens[start:end]], self.params.gap)
            if score > 0:
                scored.append((score, order, (start, end)))
        best = sorted(scored, key=lambda s: (-s[0], s[1]))[: self.params.sentences]
        return [span for _, _, span in sorted(best, key=lambda s: s[1])]

    def signature(self, doc: Document) -> int | None:
        """The 64-bit fingerprint of the summary's words (None: no sentence scored)."""
        spans = self.summary_spans(doc)
        if not spans:
            return None
        hashes = np.concatenate([doc.token_hashes[s:e] for s, e in spans])
        words, counts = np.unique(hashes, return_counts=True)
        return simhash64(words, counts)

    def index_keys(self, signature: int) -> list[bytes]:
        """The fingerprint's permuted-table keys, as SimHash files it."""
        return self._tables.index_keys(signature)

    def similarity(self, signature: int, other: int) -> float | None:
        """1 - distance/64 within `max_distance` bits (SimHash's tables), else None."""
        return self._tables.similarity(signature, other)

    def encode(self, signature: int) -> bytes:
        """The fingerprint as SimHash encodes it."""
        return self._tables.encode(signature)

    def decode(self, data: bytes) -> int:
        """The fingerprint SimHash's encoding wrote."""
        return self._tables.decode(data)
