"""A9 DescrWords (Ilyinsky, 004).

A page is the bit vector 'descriptive word w is frequent here' (tf/tf_max above w's threshold) over
a fixed vocabulary of descriptive words; equal vectors mean duplicates.

Simplification, said plainly: 004 picks 3-5 thousand descriptive words and a threshold per word
by optimising coverage and precision on a labelled collection. We have no such collection, so the
descriptive words are the lexicon's middle-IDF words (as for I-Match) and one threshold serves
all. The vector is stored as the hash of its set bits."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from streamdedup.fingerprints.base import Params
from streamdedup.fingerprints.imatch import sha1_key
from streamdedup.fingerprints.keyed import PositionalKeys
from streamdedup.fingerprints.words import content_words, mid_idf_words
from streamdedup.stats.lexicon import load_lexicon
from streamdedup.tokens.document import Document


@dataclass(frozen=True)
class DescrWordsParams(Params):
    """Descriptive words' parameters: the frequency a bit needs, the idf band of the words, the lexicon."""

    threshold: float = 0.25  # relative frequency tf/tf_max for a bit to be set
    min_bits: int = 3
    min_idf: float = 2.5
    max_idf: float = 12.0
    lexicon: str = "wordfreq"


class DescrWordsMethod(PositionalKeys[DescrWordsParams]):
    """Descriptive words (004): a key of which mid-idf words are frequent in the page."""

    name = "descrwords"
    params_type = DescrWordsParams

    def describe(self) -> str:
        """The method's description with its lexicon's version (another lexicon gives other keys)."""
        return f"{super().describe()}[{load_lexicon(self.params.lexicon).version}]"

    def keys(self, doc: Document) -> tuple[int, ...] | None:
        """The page's key of its frequent descriptive words (None: no content word)."""
        p = self.params
        tf = Counter(content_words(doc))
        if not tf:
            return None
        descriptive = mid_idf_words(set(tf), load_lexicon(p.lexicon), doc.lang, p.min_idf, p.max_idf)
        tf_max = max(tf.values())
        bits = {w for w in descriptive if tf[w] / tf_max >= p.threshold}
        return (sha1_key(bits),) if len(bits) >= p.min_bits else None
