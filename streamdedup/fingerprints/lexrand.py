"""A7 LexRand, lexicon-randomised I-Match (Kołcz et al.; 000, 004).

Besides the lexicon L, K extra lexicons, each L without a random fraction p of its words; K + 1
signatures, any one equal means duplicates. A change of n lexicon words leaves some signature intact
with probability 1 - (1 - p^n)^K (K = 10, p = 0.33: 0.98 for one word, 0.67 for two)."""

from __future__ import annotations

from dataclasses import dataclass

import xxhash

from streamdedup.fingerprints.imatch import IMatchMethod, IMatchParams, sha1_key
from streamdedup.tokens.document import Document


@dataclass(frozen=True)
class LexRandParams(IMatchParams):
    """LexRand's parameters: I-Match's and the number of extra lexicons and the share each drops."""

    extra_lexicons: int = 10  # K
    drop_fraction: float = 0.33  # p


def in_extra_lexicon(word: str, k: int, drop_fraction: float, seed: int) -> bool:
    """Word membership of extra lexicon k: a fixed pseudo-random draw per (word, k)."""
    draw = xxhash.xxh3_64_intdigest(word.encode("utf-8", "surrogatepass"), seed=seed * 1000 + k)
    return draw / 2**64 >= drop_fraction


class LexRandMethod(IMatchMethod[LexRandParams]):
    """LexRand (Kołcz et al.): I-Match's key and one more for each random sub-lexicon."""

    name = "lexrand"
    params_type = LexRandParams

    def keys(self, doc: Document) -> tuple[int, ...] | None:
        """The SHA-1 key of the page's lexicon words and of each extra lexicon's share of them (None: too few words)."""
        p = self.params
        words = self.lexicon_words(doc)
        if len(words) < p.min_words:
            return None
        subsets = [{w for w in words if in_extra_lexicon(w, k, p.drop_fraction, p.seed)}
                   for k in range(1, p.extra_lexicons + 1)]
        return (sha1_key(words), *(sha1_key(s) if s else 0 for s in subsets))
