"""SpotSigs (Theobald, Siddharth & Paepcke, SIGIR 2008; 001).

A spot is an antecedent stop word followed by a chain of the next `chain` non-stop words; a page is
the set of its spots and pages are compared by Jaccard. Navigation and ads have few stop words, so
spots come from the prose. The paper's two engineering ideas are both here: size partitions (Jaccard
<= |A|/|B|, so pages of very different spot counts are never compared) and an inverted index over
spots (a candidate shares a spot: we file each page under a consistent sample of its spots)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from streamdedup.fingerprints.base import Params
from streamdedup.fingerprints.keyed import HashSet
from streamdedup.hash_arrays import mix64
from streamdedup.stats.stopwords import stop_words
from streamdedup.tokens.document import Document

_SPOT_MULT = 0x9E3779B97F4A7C15
_MASK = (1 << 64) - 1


@dataclass(frozen=True)
class SpotSigsParams(Params):
    """SpotSigs' parameters: the chain length, the antecedents, the Jaccard threshold, the keys sampled."""

    chain: int = 3
    antecedents: int = 20  # the language's most frequent words serve as antecedents
    threshold: float = 0.5
    index_sample: int = 16
    min_elements: int = 3


class SpotSigsMethod(HashSet[SpotSigsParams]):
    """SpotSigs: the set of a page's spots (a stop word and the next non-stop words), compared by Jaccard."""

    name = "spotsigs"
    params_type = SpotSigsParams

    def elements(self, doc: Document) -> np.ndarray:
        """The hashes of the page's spots: each antecedent stop word with the chain of non-stop words after it."""
        p = self.params
        antecedents = stop_words(doc.lang, p.antecedents)
        stops = stop_words(doc.lang)
        tokens, hashes = doc.tokens, doc.token_hashes.tolist()
        content = [i for i, t in enumerate(tokens) if t not in stops]
        spots = []
        cursor = 0
        for i, token in enumerate(tokens):
            if token not in antecedents:
                continue
            while cursor < len(content) and content[cursor] <= i:
                cursor += 1
            chain = content[cursor: cursor + p.chain]
            if len(chain) == p.chain:
                value = hashes[i]
                for j in chain:
                    value = (value * _SPOT_MULT + hashes[j]) & _MASK
                spots.append(value)
        return mix64(np.asarray(spots, dtype=np.uint64)) if spots else np.empty(0, dtype=np.uint64)
