"""What the set builders count and edit as a 'word'.

Space-delimited text (English, German, Russian, Vietnamese syllables, ...) is split on whitespace,
as the builders always did. Chinese, Tibetan, Thai, Lao, Khmer and Myanmar are written without
spaces between words: there a unit is one Han (or kana) character, one Tibetan syllable with its
tsheg (and a shad that follows), or one word of the other four as ICU's dictionaries cut them
(what an editor changes), each with the whitespace and punctuation after it, so that joining the
units gives the text back and a light edit changes 2-5 % of the characters, syllables or words,
not 2-5 % of whole paragraphs.
"""

from __future__ import annotations

from dataclasses import dataclass

import regex

from streamdedup.tokens.tokenize import UNSPACED_RE, dictionary_words

# languages written without spaces between words: their pages are counted and edited by unit
DENSE_LANGS = frozenset({"zh", "ja", "bo", "th", "lo", "km", "my"})
_CJK = r"\p{Han}\p{Hiragana}\p{Katakana}"
# a Han/kana character, a Tibetan syllable up to its tsheg, or any other run up to a space
UNIT_RE = regex.compile(rf"[{_CJK}]\s*|[^\s{_CJK}\u0f0b]+\u0f0b?\s*|\u0f0b\s*", regex.V1)


@dataclass(frozen=True)
class Segmenter:
    """How a text is cut into words: by spaces, or (dense) into characters or syllables."""

    dense: bool  # True: the text has no spaces between words (units are characters or syllables)

    def split(self, text: str) -> list[str]:
        """The text's words: by spaces, or a dense text's units, unspaced scripts cut by dictionary."""
        if not self.dense:
            return text.split()
        units = UNIT_RE.findall(text)
        if not UNSPACED_RE.search(text):
            return units
        return [word for unit in units for word in (_dictionary_units(unit) if UNSPACED_RE.search(unit) else [unit])]

    def join(self, units: list[str]) -> str:
        """The words joined back into text."""
        return "".join(units).strip() if self.dense else " ".join(units)

    def count(self, text: str) -> int:
        """The text's length in words (`split`)."""
        return len(self.split(text))


SPACES = Segmenter(False)
UNITS = Segmenter(True)


_LETTER = regex.compile(r"[\p{L}\p{M}\p{N}]")


def _dictionary_units(run: str) -> list[str]:
    """A run of Thai, Lao, Khmer or Myanmar text as its words (the tokeniser's), each with what follows it."""
    units: list[str] = []
    for start, end in dictionary_words([run])[0]:
        piece = run[start:end]
        if units and not _LETTER.search(piece):
            units[-1] += piece
        else:
            units.append(piece)
    return units
