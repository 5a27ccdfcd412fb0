"""What the set builders count and edit as a 'word'.

Space-delimited text (English, German, Russian, Vietnamese syllables, ...) is split on whitespace,
as the builders always did. Chinese and Tibetan are written without spaces between words: there a
unit is one Han (or kana) character, or one Tibetan syllable with its tsheg (and a shad that
follows), each with the whitespace after it, so that joining the units gives the text back and a
light edit changes 2-5 % of the characters or syllables, not 2-5 % of whole paragraphs.
"""

from __future__ import annotations

from dataclasses import dataclass

import regex

_CJK = r"\p{Han}\p{Hiragana}\p{Katakana}"
# a Han/kana character, a Tibetan syllable up to its tsheg, or any other run up to a space
UNIT_RE = regex.compile(rf"[{_CJK}]\s*|[^\s{_CJK}\u0f0b]+\u0f0b?\s*|\u0f0b\s*", regex.V1)


@dataclass(frozen=True)
class Segmenter:
    dense: bool  # True: the text has no spaces between words (units are characters or syllables)

    def split(self, text: str) -> list[str]:
        return UNIT_RE.findall(text) if self.dense else text.split()

    def join(self, units: list[str]) -> str:
        return "".join(units).strip() if self.dense else " ".join(units)

    def count(self, text: str) -> int:
        return len(self.split(text))


SPACES = Segmenter(False)
UNITS = Segmenter(True)
