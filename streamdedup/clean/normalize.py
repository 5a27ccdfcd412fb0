"""Unicode normal form for comparison: NFKC, case folding, one kind of quote, tidy whitespace.

Near-duplicates differ in exactly these ways (full-width digits, curly quotes, ligatures, case),
so they are erased before tokenising. Paragraph breaks are kept: sentences end there.

Arabic-script text is folded as Lucene's Arabic and Persian normalisers fold it (the forms sites
write one word in): the elongation mark (tatweel) and the vowel marks (harakat) dropped, the alef
with hamza or madda written as a bare alef, teh marbuta as heh, alef maksura and the Persian yeh
as the Arabic yeh, the Persian keheh as kaf, heh goal and heh with yeh above as heh. A Persian
text written with the Arabic yeh and kaf (common between Persian sites, and in Urdu) was unique to
its copy, and a word stretched with tatweel another word. After case folding, Greek is read
without its accents (as Lucene's Greek lower-casing does: a text in capitals carries none) and
Turkish without its dotted and dotless i (case folding makes "İ" an "i" with a dot above and leaves
"ı"): a copy set in capitals was another text.
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
_ARABIC_FOLD = str.maketrans({
    "\u0640": None, **{chr(code): None for code in range(0x064B, 0x0660)}, "\u0670": None,
    "\u0622": "\u0627", "\u0623": "\u0627", "\u0625": "\u0627", "\u0629": "\u0647",
    "\u0649": "\u064a", "\u06cc": "\u064a", "\u06a9": "\u0643", "\u06c1": "\u0647", "\u06c0": "\u0647"})
# after case folding: Greek vowels with tonos or dialytika as the bare vowel (full case folding
# writes ΐ and ΰ as the vowel and two combining marks: dropped), Turkish ı as i, and the dot above
# that folding puts on İ's i dropped
_CASELESS_FOLD = str.maketrans({
    **dict(zip("άέήίόύώϊϋ", "αεηιουωιυ", strict=True)), "\u0131": "i", "\u0307": None, "\u0308": None, "\u0301": None})
# which texts are folded: Arabic-script ones hold an alef or a lam (its article), Greek ones an alpha
# or an omicron, Turkish ones a dotless i or, after folding, a dot above. A substring scan for one
# character is free on a text of Latin-1 letters (a wider character cannot be in it) and ~0.4 µs on
# another page's text; a regex scan for a class of characters ~25 µs. Those texts are folded as the
# quotes are, a scan and a replace per character they hold: a translate (a lookup per character)
# cost ~1.5 ms on a page whose language menu names "العربية"
_ARABIC_TEXT = ("\u0627", "\u0644")
_CASELESS_TEXT = ("\u03b1", "\u03bf", "\u0131", "\u0307")
_ARABIC_REPLACEMENTS = tuple((chr(code), value or "") for code, value in _ARABIC_FOLD.items())
_CASELESS_REPLACEMENTS = tuple((chr(code), value or "") for code, value in _CASELESS_FOLD.items())


def _replaced(text: str, replacements: tuple[tuple[str, str], ...]) -> str:
    """The text with each character of `replacements` it holds replaced (a scan for each, a replace where found)."""
    for char, replacement in replacements:
        if char in text:
            text = text.replace(char, replacement)
    return text
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
        text = _replaced(text, _REPLACEMENTS)
        if any(char in text for char in _ARABIC_TEXT):
            text = _replaced(text, _ARABIC_REPLACEMENTS)
        text = text.casefold()
        if any(char in text for char in _CASELESS_TEXT):
            text = _replaced(text, _CASELESS_REPLACEMENTS)
        return tidy_whitespace(text, after_nfkc=True)
    return tidy_whitespace(text.casefold(), after_nfkc=True)
