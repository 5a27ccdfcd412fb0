"""Which language a page is in, when the crawler did not say.

By script, which is all the statistics-based methods need (they look words up in a per-language
lexicon and stop list)."""

from __future__ import annotations

import re

import regex

_SCRIPTS = (("bo", regex.compile(r"\p{Tibetan}")), ("zh", regex.compile(r"\p{Han}")),
            ("ja", regex.compile(r"[\p{Hiragana}\p{Katakana}]")), ("ru", regex.compile(r"\p{Cyrillic}")),
            ("ar", regex.compile(r"\p{Arabic}")), ("ko", regex.compile(r"\p{Hangul}")),
            ("hi", regex.compile(r"\p{Devanagari}")), ("el", regex.compile(r"\p{Greek}")))
_VIETNAMESE = re.compile(r"[ơưđăâêôạảấầẩẫậắằẳẵặẹẻẽếềểễệỉịọỏốồổỗộớờởỡợụủứừửữựỳỵỷỹ]")
_LATIN = regex.compile(r"\p{Latin}")
_BEYOND_LATIN = re.compile("[^\x00-\u024f\u2000-\u206f]")  # anything but Latin, punctuation, spaces
_ASCII_LETTERS = re.compile("[A-Za-z\u00c0-\u024f]")


def normalize_lang(tag: str | None) -> str | None:
    """'en-US' -> 'en', 'zh_Hant' -> 'zh'."""
    if not tag:
        return None
    return tag.replace("_", "-").split("-", 1)[0].strip().lower() or None


def guess_language(text: str, declared: str | None = None) -> str:
    """The declared language if any, else the dominant script's language ('en' for Latin)."""
    lang = normalize_lang(declared)
    if lang:
        return lang
    sample = text[:5000]
    if not _BEYOND_LATIN.search(sample):  # the common case, decided with two fast scans
        latin = len(_ASCII_LETTERS.findall(sample))
        return "vi" if latin and len(_VIETNAMESE.findall(sample)) > latin // 30 else "en"
    counts = {name: len(pattern.findall(sample)) for name, pattern in _SCRIPTS}
    latin = len(_LATIN.findall(sample))
    name, count = max(counts.items(), key=lambda item: item[1])
    if count > latin:
        return "ja" if name == "zh" and counts["ja"] > count // 10 else name
    if latin and len(_VIETNAMESE.findall(sample)) > latin // 30:
        return "vi"
    return "en"
