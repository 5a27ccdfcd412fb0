"""A1 TF (004): the 6 most frequent words, alphabetical, CRC32."""

from __future__ import annotations

from collections import Counter

from streamdedup.fingerprints.topwords import TopWordsMethod
from streamdedup.tokens.document import Document


class TfMethod(TopWordsMethod):
    """TF (004's A1): a key of the page's 6 most frequent words."""

    name = "tf"

    def describe(self) -> str:  # no collection statistics involved
        """The method's name and parameters, without a lexicon (TF uses none)."""
        return f"{self.name}({self.params})"

    def weights(self, tf: Counter[str], doc: Document) -> dict[str, float]:
        """Each word's count in the page."""
        return {w: float(c) for w, c in tf.items()}
