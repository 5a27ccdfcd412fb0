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

import regex

_CJK = r"\p{Han}\p{Hiragana}\p{Katakana}"
WORD_RE = regex.compile(rf"[{_CJK}]|[[\w--_]--[{_CJK}]]+", regex.V1)
CJK_RE = regex.compile(rf"[{_CJK}]", regex.V1)

# A sentence ends at a paragraph break, after CJK/Tibetan/Devanagari full stops, or after
# . ! ? (with optional closing quotes/brackets) followed by a space.
SENTENCE_END_RE = regex.compile(
    r"\n+|(?<=[.!?…][\"')\]]*)\s+|(?<=[。！？；])|(?<=[།༎॥।])\s*", regex.V1)


def split_words(text: str) -> list[str]:
    return WORD_RE.findall(text)


def split_sentences(text: str) -> list[str]:
    return [s for s in (part.strip() for part in SENTENCE_END_RE.split(text)) if s]


def is_cjk(token: str) -> bool:
    return len(token) == 1 and CJK_RE.match(token) is not None
