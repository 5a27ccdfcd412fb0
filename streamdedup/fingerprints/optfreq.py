"""A10 OptFreq (Maslov, 004).

IDF = -log(df/N) peaks in usefulness at 11.5 (= -ln(10/10^6)): IDF_opt = sqrt(IDF/11.5) below,
11.5/IDF above; weight = (0.5 + 0.5·tf/tf_max)·IDF_opt; top 6."""

from __future__ import annotations

import math
from collections import Counter

from streamdedup.fingerprints.topwords import TopWordsMethod
from streamdedup.tokens.document import Document

OPTIMUM = 11.5


def optimal_idf(idf: float) -> float:
    """An IDF's usefulness: sqrt(IDF / 11.5) below the optimum of 11.5, 11.5 / IDF above it."""
    return math.sqrt(idf / OPTIMUM) if idf < OPTIMUM else OPTIMUM / idf


class OptFreqMethod(TopWordsMethod):
    """OptFreq (Maslov, 004): the 6 words heaviest by augmented tf times the optimal-IDF curve."""

    name = "optfreq"

    def weights(self, tf: Counter[str], doc: Document) -> dict[str, float]:
        """Each word's (0.5 + 0.5 tf/tf_max) times `optimal_idf` of its IDF."""
        tf_max = max(tf.values())
        return {w: (0.5 + 0.5 * c / tf_max) * optimal_idf(self.lexicon.idf(w, doc.lang)) for w, c in tf.items()}
