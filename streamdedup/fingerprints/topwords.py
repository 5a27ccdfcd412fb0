"""The shape of 004's A1, A2, A3 and A10.

Weigh the page's words, take the 6 heaviest, join them in alphabetical order, CRC32. Each method is
one weighting."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from streamdedup.fingerprints.base import Params
from streamdedup.fingerprints.keyed import PositionalKeys, crc32_of
from streamdedup.fingerprints.words import content_words, top_words
from streamdedup.stats.lexicon import Lexicon, load_lexicon
from streamdedup.tokens.document import Document


@dataclass(frozen=True)
class TopWordsParams(Params):
    """The top-words methods' parameters: the words keyed, the content words a page needs, the lexicon."""

    top: int = 6
    min_words: int = 6  # distinct content words a page needs to be judged
    lexicon: str = "wordfreq"


class TopWordsMethod(PositionalKeys[TopWordsParams]):
    """004's top-words shape: weigh the page's words, a CRC of the heaviest in alphabetical order."""

    params_type = TopWordsParams

    @property
    def lexicon(self) -> Lexicon:
        """The collection statistics the weights read."""
        return load_lexicon(self.params.lexicon)

    def describe(self) -> str:
        """The method's description with its lexicon's version (another lexicon gives other keys)."""
        return f"{super().describe()}[{self.lexicon.version}]"

    def weights(self, tf: Counter[str], doc: Document) -> dict[str, float]:
        """Each content word's weight; each subclass is one weighting."""
        raise NotImplementedError

    def keys(self, doc: Document) -> tuple[int, ...] | None:
        """A CRC of the page's `top` heaviest words (None: fewer than `min_words` content words)."""
        tf = Counter(content_words(doc))
        if len(tf) < self.params.min_words:
            return None
        return (crc32_of(top_words(self.weights(tf, doc), self.params.top)),)
