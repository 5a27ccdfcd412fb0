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
# the odd spaces NFKC leaves as they are (it makes the others, NBSP among them, a plain space): the
# only ones a normalised text can hold. Few enough that a substring scan for each (memchr) beats the
# regex scan: ~1 µs against ~7 of a page's text
_ODD_AFTER_NFKC = "".join(c for c in ODD_SPACES if unicodedata.normalize("NFKC", c) == c)


def _has_odd_space(text: str, after_nfkc: bool = False) -> bool:
    if text.isascii():  # a few substring scans beat one regex scan of the whole text
        return any(c in text for c in _ASCII_ODD_SPACE)
    if after_nfkc:
        return any(c in text for c in _ODD_AFTER_NFKC)
    return _ODD_SPACE.search(text) is not None


def tidy_whitespace(text: str, after_nfkc: bool = False) -> str:
    """Runs of spaces/tabs -> one space.

    Any whitespace run with a newline -> one newline; no blank lines, no leading or trailing
    whitespace. Line by line, and a line is split into words only when it needs it: a regex
    substitution per space cost more than the rest of the page. `after_nfkc`: the text is in NFKC
    (only the odd spaces NFKC keeps need looking for)."""
    if _has_odd_space(text, after_nfkc):
        return "\n".join(line for line in (" ".join(part.split()) for part in text.split("\n")) if line)
    # a line is split into words only where it has a space at an end or two in a row; the test
    # written out in a list, not a function called per line (~23 -> ~16 µs a page's text)
    return "\n".join([line if line[:1] != " " and line[-1:] != " " and "  " not in line else " ".join(line.split())
                      for line in text.split("\n") if line and not line.isspace()])


def normalize_text(text: str) -> str:
    """The text in NFKC, case folded, with one kind of quote and tidy whitespace (the module docstring)."""
    if not text.isascii():  # every character NFKC or _QUOTES changes is beyond ASCII
        if "\xa0" in text:
            # NBSP is NFKC's plain space, whatever stands beside it (neither composes with anything):
            # replaced first, most pages' texts pass NFKC's quick check instead of being decomposed
            # and composed again (~16 µs -> ~6 of a page's text)
            text = text.replace("\xa0", " ")
        text = unicodedata.normalize("NFKC", text)
        for char, replacement in _REPLACEMENTS:
            if char in text:
                text = text.replace(char, replacement)
    return tidy_whitespace(text.casefold(), after_nfkc=True)
