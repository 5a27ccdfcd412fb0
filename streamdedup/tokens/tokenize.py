"""Multilingual word and sentence splitting.

Rules on Unicode properties, and a dictionary only where a script leaves no other way to find its
words.

- Space-delimited scripts (Latin incl. Vietnamese syllables, Cyrillic, Greek, Arabic, Devanagari,
  Hangul, ...): a word is a run of letters, marks and digits (marks matter: Vietnamese tones and
  Indic/Tibetan vowel signs are combining characters).
- Han, Hiragana, Katakana: no spaces, so each character is a token; shingles of k characters are
  then character k-grams, the usual choice for Chinese/Japanese near-duplicate detection.
- Tibetan: the tsheg (U+0F0B) is punctuation, so runs of letters split into syllables; the shad
  (U+0F0D) ends a sentence.
- Thai, Lao, Khmer, Myanmar: written without spaces between words and with no syllable mark, so a
  run of letters is a phrase (often a whole clause): one edited word would change the whole token.
  Such runs are cut into words by ICU's dictionary break engines (the ones Lucene's ICUTokenizer
  and browsers use), through icu4py, whose wheels carry ICU and its dictionaries.
"""

from __future__ import annotations

import itertools
import re

import icu4py
import regex
from icu4py.breakers import WordBreaker
from icu4py.locale import Locale

_CJK = r"\p{Han}\p{Hiragana}\p{Katakana}"
WORD_RE = regex.compile(rf"[{_CJK}]|[[\w--_]--[{_CJK}]]+", regex.V1)
CJK_RE = regex.compile(rf"[{_CJK}]", regex.V1)
NON_CJK_WORD_RE = regex.compile(rf"[[\w--_]--[{_CJK}]]+", regex.V1)
# Fast path for the common case of text without Han or kana: letters, marks and digits.
PLAIN_WORD_RE = regex.compile(r"[\p{L}\p{M}\p{N}]+")
HAS_CJK_RE = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f]")

# A sentence ends at a paragraph break, after CJK/Tibetan/Devanagari full stops, or after
# . ! ? (with optional closing quotes/brackets) followed by a space. (stdlib re: 3x faster here)
SENTENCE_END_RE = re.compile(r"(?<=[.!?…])[\"')\]]*\s+|\n+|(?<=[。！？；])|(?<=[།༎॥।])\s*")


BREAK = "\x00"  # a sentence boundary, in the token stream of `words_and_breaks`
_BREAK_WORD_RE = regex.compile(rf"\x00|[{_CJK}]|[[\w--_]--[{_CJK}]]+", regex.V1)
_BREAK_PLAIN_RE = regex.compile(r"\x00|[\p{L}\p{M}\p{N}]+")


# Thai, Lao, Myanmar (and its extensions A and B), Khmer (and its symbols): the scripts ICU segments
# with a dictionary (first and last code point of each block)
UNSPACED_RANGES = ((0x0E00, 0x0EFF), (0x1000, 0x109F), (0x1780, 0x17FF), (0x19E0, 0x19FF), (0xA9E0, 0xA9FF),
                   (0xAA60, 0xAA7F))
UNSPACED_RE = re.compile("[" + "".join(f"{chr(first)}-{chr(last)}" for first, last in UNSPACED_RANGES) + "]")
ICU_VERSION = icu4py.icu_version  # its dictionaries decide these scripts' words: part of the store's config
_ROOT = Locale("und")  # the break engines go by script, not locale (made once: parsing one costs more than a break)


def dictionary_words(runs: list[str]) -> list[list[tuple[int, int]]]:
    """For each run of letters, the (start, end) offsets of its words as ICU's word breaker finds them.

    One ICU pass over all runs, joined by newlines (a break on both sides of a newline, and a
    combining mark never joins one, unlike a space)."""
    joined = "\n".join(runs)
    firsts = list(itertools.accumulate((len(r) + 1 for r in runs[:-1]), initial=0))  # each run's offset
    words: list[list[tuple[int, int]]] = [[] for _ in runs]
    run = 0
    for start, end in WordBreaker(joined, _ROOT).segments():
        if joined[start] == "\n":  # a separator
            continue
        while start >= firsts[run] + len(runs[run]):
            run += 1
        words[run].append((start - firsts[run], end - firsts[run]))
    return words


def _cut_unspaced(tokens: list[str]) -> list[str]:
    """The tokens, each run of Thai, Lao, Khmer or Myanmar letters cut into its words."""
    cut = [i for i, token in enumerate(tokens) if UNSPACED_RE.search(token)]
    if not cut:
        return tokens
    pieces = dict(zip(cut, dictionary_words([tokens[i] for i in cut]), strict=True))
    out: list[str] = []
    for i, token in enumerate(tokens):
        if i in pieces:
            out.extend(token[a:b] for a, b in pieces[i])
        else:
            out.append(token)
    return out


def words_and_breaks(text: str) -> list[str]:
    """All words of a text with BREAK between sentences, in one regex pass.

    The regex runs once per text, not once per sentence: the call overhead dominated tokenisation."""
    marked = SENTENCE_END_RE.sub(BREAK, text.replace(BREAK, " "))
    return _cut_unspaced((_BREAK_WORD_RE if HAS_CJK_RE.search(marked) else _BREAK_PLAIN_RE).findall(marked))


def split_words(text: str) -> list[str]:
    """The text's words, CJK per character and unspaced scripts cut by dictionary."""
    return _cut_unspaced(WORD_RE.findall(text) if HAS_CJK_RE.search(text) else PLAIN_WORD_RE.findall(text))


def split_sentences(text: str) -> list[str]:
    """The text's sentences, cut at sentence-ending punctuation, stripped."""
    return [s for s in (part.strip() for part in SENTENCE_END_RE.split(text)) if s]


def is_cjk(token: str) -> bool:
    """Whether the token is one Han or kana character."""
    return len(token) == 1 and CJK_RE.match(token) is not None
