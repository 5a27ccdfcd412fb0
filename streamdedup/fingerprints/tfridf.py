"""A3 TF*RIDF (004).

TF = 0.5 + 0.5·tf/tf_max, residual IDF = -log(df/N) + log(1 - exp(-cf/N)) (the IDF minus the IDF a
Poisson-distributed word would have: high for 'bursty' content words)."""

from __future__ import annotations

import math
from collections import Counter

from streamdedup.fingerprints.topwords import TopWordsMethod
from streamdedup.tokens.document import Document


class TfRidfMethod(TopWordsMethod):
    """TF*RIDF (004's A3): a key of the page's 6 words heaviest by augmented tf times residual IDF."""

    name = "tfridf"

    def weights(self, tf: Counter[str], doc: Document) -> dict[str, float]:
        """Each word's (0.5 + 0.5 tf/tf_max) times its residual IDF (its IDF minus a Poisson word's)."""
        lexicon, lang = self.lexicon, doc.lang
        n, tf_max = lexicon.n_docs, max(tf.values())
        weights = {}
        for word, count in tf.items():
            df = max(lexicon.df(word, lang), 1.0)
            cf = max(lexicon.cf(word, lang), 1.0)
            ridf = -math.log(df / n) + math.log(-math.expm1(-cf / n))
            weights[word] = (0.5 + 0.5 * count / tf_max) * ridf
        return weights
