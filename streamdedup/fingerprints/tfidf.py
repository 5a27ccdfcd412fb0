"""A2 TF*IDF (004): BM25-style weights (k = 2, b = 0.75), top 6 words, alphabetical, CRC32."""

from __future__ import annotations

from collections import Counter

from streamdedup.fingerprints.topwords import TopWordsMethod
from streamdedup.fingerprints.words import bm25_weights
from streamdedup.tokens.document import Document


class TfIdfMethod(TopWordsMethod):
    """TF*IDF (004's A2): a key of the page's 6 words heaviest by BM25 weight."""

    name = "tfidf"

    def weights(self, tf: Counter[str], doc: Document) -> dict[str, float]:
        """Each word's BM25 weight (k = 2, b = 0.75) under the lexicon."""
        return bm25_weights(tf, self.lexicon, doc.lang)
