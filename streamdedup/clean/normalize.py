"""Unicode normal form for comparison: NFKC, case folding, one kind of quote, tidy whitespace.

Near-duplicates differ in exactly these ways (full-width digits, curly quotes, ligatures, case),
so they are erased before tokenising. Paragraph breaks are kept: sentences end there.
"""

from __future__ import annotations

import re
import unicodedata

_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201b": "'", "\u2032": "'",
                         "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u00ab": '"', "\u00bb": '"',
                         "\u00ad": None, "\u200b": None, "\u200c": None, "\u200d": None, "\ufeff": None})
_SPACES = re.compile(r"[^\S\n]+")
_BLANK_LINES = re.compile(r"\s*\n\s*")


def normalize_text(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).translate(_QUOTES).casefold()
    text = _SPACES.sub(" ", text)
    return _BLANK_LINES.sub("\n", text).strip()
