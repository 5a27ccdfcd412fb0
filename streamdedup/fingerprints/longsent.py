"""A4 LongSent (004): the 2 longest sentences (in words; ties alphabetical), joined in alphabetical order, CRC32.

The best recall of 004's classical methods."""

from __future__ import annotations

from dataclasses import dataclass

from streamdedup.fingerprints.base import Params
from streamdedup.fingerprints.keyed import PositionalKeys, crc32_of
from streamdedup.tokens.document import Document


@dataclass(frozen=True)
class SentenceParams(Params):
    """The sentence methods' parameters: the sentences keyed, the words a sentence needs, the lexicon."""

    sentences: int = 2
    min_sentence_words: int = 3
    lexicon: str = "wordfreq"  # HeavySent only


def sentence_texts(doc: Document, min_words: int) -> list[tuple[str, list[str]]]:
    """The page's sentences of at least `min_words` tokens: each as its text (tokens joined) and its tokens."""
    out = []
    for start, end in doc.sentence_spans():
        words = doc.tokens[start:end]
        if len(words) >= min_words:
            out.append((" ".join(words), words))
    return out


class LongSentMethod(PositionalKeys[SentenceParams]):
    """Long sentences (004): a key of the page's longest sentences."""

    name = "longsent"
    params_type = SentenceParams

    def keys(self, doc: Document) -> tuple[int, ...] | None:
        """A CRC of the page's `sentences` longest sentences, ties by text (None: no sentence long enough)."""
        sentences = sentence_texts(doc, self.params.min_sentence_words)
        if not sentences:
            return None
        longest = sorted(sentences, key=lambda s: (-len(s[1]), s[0]))[: self.params.sentences]
        return (crc32_of(text for text, _ in longest),)
