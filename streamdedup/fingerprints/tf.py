"""A1 TF (004): the 6 most frequent words, alphabetical, CRC32."""

from __future__ import annotations

from collections import Counter

from streamdedup.fingerprints.topwords import TopWordsMethod
from streamdedup.tokens.document import Document


class TfMethod(TopWordsMethod):
    name = "tf"

    def describe(self) -> str:  # no collection statistics involved
        return f"{self.name}({self.params})"

    def weights(self, tf: Counter[str], doc: Document) -> dict[str, float]:
        return {w: float(c) for w, c in tf.items()}
