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
# str.translate with a dict costs a lookup per character (~40 % of normalising a page's text);
# a membership test per special character and a replace only where one occurs is ~10x cheaper.
_REPLACEMENTS = tuple((chr(code), value or "") for code, value in _QUOTES.items())
# whitespace other than space and newline (tabs, NBSP, ...): every c with c.isspace() but those two
# (a test checks the list against all of Unicode); listed, the regex engine finds them in half the
# time of the category class r"[^\S \n]" (real pages' main and visible texts: ~10 µs of ~55 a text)
_ASCII_ODD_SPACE = "\t\r\x0b\x0c\x1c\x1d\x1e\x1f"
ODD_SPACES = _ASCII_ODD_SPACE + "\x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a" \
    "\u2028\u2029\u202f\u205f\u3000"
_ODD_SPACE = re.compile("[" + ODD_SPACES + "]")


def _has_odd_space(text: str) -> bool:
    if text.isascii():  # a few substring scans beat one regex scan of the whole text
        return any(c in text for c in _ASCII_ODD_SPACE)
    return _ODD_SPACE.search(text) is not None


def _tidy_line(line: str) -> str:
    return " ".join(line.split()) if line[:1] == " " or line[-1:] == " " or "  " in line else line


def tidy_whitespace(text: str) -> str:
    """Runs of spaces/tabs -> one space.

    Any whitespace run with a newline -> one newline; no blank lines, no leading or trailing
    whitespace. Line by line, and a line is split into words only when it needs it: a regex
    substitution per space cost more than the rest of the page."""
    if _has_odd_space(text):
        return "\n".join(line for line in (" ".join(part.split()) for part in text.split("\n")) if line)
    return "\n".join(_tidy_line(line) for line in text.split("\n") if line and not line.isspace())


def normalize_text(text: str) -> str:
    text = unicodedata.normalize("NFKC", text)
    if not text.isascii():  # every character _QUOTES maps is beyond ASCII
        for char, replacement in _REPLACEMENTS:
            if char in text:
                text = text.replace(char, replacement)
    return tidy_whitespace(text.casefold())
