"""Multilingual word and sentence splitting, with no per-language models.

- Space-delimited scripts (Latin incl. Vietnamese syllables, Cyrillic, Greek, Arabic, Devanagari,
  Hangul, ...): a word is a run of letters, marks and digits (marks matter: Vietnamese tones and
  Indic/Tibetan vowel signs are combining characters).
- Han, Hiragana, Katakana: no spaces, so each character is a token; shingles of k characters are
  then character k-grams, the usual choice for Chinese/Japanese near-duplicate detection.
- Tibetan: the tsheg (U+0F0B) is punctuation, so runs of letters split into syllables; the shad
  (U+0F0D) ends a sentence.
"""

from __future__ import annotations

import re

import regex

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


def words_and_breaks(text: str) -> list[str]:
    """All words of a text with BREAK between sentences, in one regex pass (one call per text,
    not per sentence: the call overhead dominated tokenisation)."""
    marked = SENTENCE_END_RE.sub(BREAK, text.replace(BREAK, " "))
    return (_BREAK_WORD_RE if HAS_CJK_RE.search(marked) else _BREAK_PLAIN_RE).findall(marked)


def split_words(text: str) -> list[str]:
    return WORD_RE.findall(text) if HAS_CJK_RE.search(text) else PLAIN_WORD_RE.findall(text)


def split_sentences(text: str) -> list[str]:
    return [s for s in (part.strip() for part in SENTENCE_END_RE.split(text)) if s]


def is_cjk(token: str) -> bool:
    return len(token) == 1 and CJK_RE.match(token) is not None
