"""I-Match (Chowdhury et al. 2002; 000, 001).

SHA1 over the page's distinct words that belong to the lexicon of middle-IDF words (the commonest
and the rarest words are dropped), sorted. Equal signatures mean duplicates. One value per page:
fast, but one lexicon word added or removed changes it, and pages with few lexicon words are not
judged (004's minimum)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from streamdedup.fingerprints.base import DefaultTypeVar, Params
from streamdedup.fingerprints.keyed import PositionalKeys
from streamdedup.fingerprints.words import content_words, mid_idf_words
from streamdedup.stats.lexicon import load_lexicon
from streamdedup.tokens.document import Document


@dataclass(frozen=True)
class IMatchParams(Params):
    """I-Match's parameters: the idf band of the lexicon's words, the words a page needs, LexRand's extras."""

    min_idf: float = 2.5  # below: too common to tell pages apart
    max_idf: float = 12.0  # above: too rare (typos, ids, unknown words)
    min_words: int = 10  # lexicon words a page needs
    extra_lexicons: int = 0  # K: LexRand's extra lexicons (none for I-Match)
    drop_fraction: float = 0.33  # p: fraction of L each extra lexicon drops
    seed: int = 1
    lexicon: str = "wordfreq"


def sha1_key(words: set[str]) -> int:
    """A non-zero 64-bit key of a set of words: SHA-1 of them sorted, one a line."""
    digest = hashlib.sha1("\n".join(sorted(words)).encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "little") or 1


IP = DefaultTypeVar("IP", bound=IMatchParams, default=IMatchParams)


class IMatchMethod(PositionalKeys[IP]):
    """I-Match (Chowdhury et al. 2002): one hash of the set of the page's mid-idf words."""

    name = "imatch"
    params_type = IMatchParams

    def describe(self) -> str:
        """The method's description with its lexicon's version (another lexicon gives other keys)."""
        return f"{super().describe()}[{load_lexicon(self.params.lexicon).version}]"

    def lexicon_words(self, doc: Document) -> set[str]:
        """The page's content words whose idf lies within [`min_idf`, `max_idf`]."""
        p = self.params
        return mid_idf_words(set(content_words(doc)), load_lexicon(p.lexicon), doc.lang, p.min_idf, p.max_idf)

    def keys(self, doc: Document) -> tuple[int, ...] | None:
        """The SHA-1 key of the page's lexicon words (None: fewer than `min_words` of them)."""
        words = self.lexicon_words(doc)
        if len(words) < self.params.min_words:
            return None
        return (sha1_key(words),)
