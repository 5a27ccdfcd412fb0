"""Word statistics shared by the global methods of 004 and the lexicon methods.

004 normalises before weighting: stop words and words of three letters or fewer are dropped.
That length rule is made for words, not syllables: Vietnamese writes syllables, and scripts
without spaces (Han, kana, Tibetan) have short tokens by nature, so those keep every non-stop
token.
"""

from __future__ import annotations

import math
from collections import Counter

import regex

from streamdedup.stats.lexicon import Lexicon
from streamdedup.stats.stopwords import stop_words
from streamdedup.tokens.document import Document

_UNSPACED = regex.compile(r"[\p{Han}\p{Hiragana}\p{Katakana}\p{Tibetan}]")


_SYLLABIC = {"vi", "zh", "ja", "bo", "ko", "th", "lo", "km", "my"}


def is_content_word(token: str, stops: frozenset[str], syllabic: bool = False) -> bool:
    """Whether a token carries content: no stop word, no number, longer than 3 letters unless syllabic or unspaced."""
    if token in stops or token.isdigit():
        return False
    return syllabic or len(token) > 3 or _UNSPACED.match(token) is not None


def content_words(doc: Document) -> list[str]:
    """The page's tokens that are content words (`is_content_word`), in text order."""
    stops = stop_words(doc.lang)
    syllabic = doc.lang in _SYLLABIC
    return [t for t in doc.tokens if is_content_word(t, stops, syllabic)]


def top_words(weights: dict[str, float], k: int) -> list[str]:
    """The k heaviest words, ties broken alphabetically (deterministic across copies)."""
    return [w for w, _ in sorted(weights.items(), key=lambda item: (-item[1], item[0]))[:k]]


def bm25_weights(tf: Counter[str], lexicon: Lexicon, lang: str, k: float = 2.0, b: float = 0.75) -> dict[str, float]:
    """A2's TF*IDF: TF = tf / (k(1 - b + b·dl/dl_avg) + tf), IDF = log((N - df + 0.5)/(df + 0.5))."""
    dl = sum(tf.values())
    norm = k * ((1 - b) + b * dl / lexicon.avg_length)
    n = lexicon.n_docs
    weights = {}
    for word, count in tf.items():
        df = lexicon.df(word, lang)
        weights[word] = count / (norm + count) * math.log((n - df + 0.5) / (df + 0.5))
    return weights


def mid_idf_words(words: set[str], lexicon: Lexicon, lang: str, min_idf: float, max_idf: float) -> set[str]:
    """I-Match's lexicon test: neither too common nor too rare.

    A language the lexicon has no statistics for keeps every content word (there is nothing to rank
    them by)."""
    if not lexicon.knows(lang):
        return set(words)
    return {w for w in words if min_idf <= lexicon.idf(w, lang) <= max_idf}
