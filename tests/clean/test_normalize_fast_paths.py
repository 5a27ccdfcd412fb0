"""The fast normalisation paths give exactly what the plain regex/translate versions gave."""

from __future__ import annotations

import re
import sys
import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

from streamdedup.clean.normalize import _ARABIC_FOLD, _CASELESS_FOLD, _QUOTES, normalize_text, tidy_whitespace

_SPACES = re.compile(r"[^\S\n]+")
_BLANK_LINES = re.compile(r"\s*\n\s*")
# (combining marks: NBSP, replaced before NFKC, must stay NFKC's plain space beside them)
SPECIAL = "".join(chr(code) for code in (*_QUOTES, *_ARABIC_FOLD, *_CASELESS_FOLD)) + "İIΐΰΆαο\u0627\u0643 \t\r\n\x0b\x0c\x1c\x85\u00a0\u2028\u2029\u3000ﬁＡ\u0301\u0338\u0327"


def reference(text: str) -> str:
    """The previous implementation, kept as the specification."""
    text = unicodedata.normalize("NFKC", text).translate(_QUOTES)
    if "\u0627" in text or "\u0644" in text:  # an Arabic-script text (an alef or a lam)
        text = text.translate(_ARABIC_FOLD)
    text = text.casefold()
    if any(c in text for c in "\u03b1\u03bf\u0131\u0307"):  # a Greek or a Turkish text
        text = text.translate(_CASELESS_FOLD)
    return _BLANK_LINES.sub("\n", _SPACES.sub(" ", text)).strip()


texts = st.text(alphabet=st.one_of(st.sampled_from(SPECIAL), st.characters()), max_size=200)


@settings(max_examples=400, deadline=None)
@given(texts)
def test_normalize_text_matches_the_reference(text):
    assert normalize_text(text) == reference(text)


@settings(max_examples=200, deadline=None)
@given(texts)
def test_tidy_whitespace_matches_the_two_regexes(text):
    assert tidy_whitespace(text) == _BLANK_LINES.sub("\n", _SPACES.sub(" ", text)).strip()


def test_quotes_and_invisibles_are_replaced_and_blank_lines_dropped():
    assert normalize_text("  \u201cHi\u201d \u2014 it\u2019s\u00ad ok \n\n\t \n Next\u200b line ") == \
        '"hi" \u2014 it\'s ok\nnext line'


def _looks_like_text_reference(text: str) -> bool:
    if not text:
        return False
    sample = text[:20_000]
    controls = sum(1 for ch in sample if ord(ch) < 32 and ch not in "\t\n\r\f") + sample.count("\ufffd")
    return controls / len(sample) <= 0.05


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.one_of(st.characters(max_codepoint=40), st.characters()), max_size=300))
def test_looks_like_text_counts_controls_as_the_loop_did(text):
    from streamdedup.clean.decode import looks_like_text

    assert looks_like_text(text) == _looks_like_text_reference(text)


def test_binary_is_not_text_and_lone_surrogates_do_not_crash():
    from streamdedup.clean.decode import looks_like_text

    assert not looks_like_text("\x00\x01\x02abc" * 10)
    assert looks_like_text("plain\ttext\r\n\fwith a lone \ud800 surrogate")


def test_the_listed_odd_spaces_are_all_whitespace_but_space_and_newline():
    from streamdedup.clean.normalize import ODD_SPACES

    assert sorted(ODD_SPACES) == [chr(code) for code in range(sys.maxunicode + 1)
                                  if chr(code).isspace() and chr(code) not in " \n"]


def test_nbsp_beside_combining_marks_normalises_as_nfkc_does():
    for text in ("a\u00a0\u0301b", "\u0301\u00a0\u0338", "e\u0301\u00a0\u00a0\u0327x\u2026"):
        assert normalize_text(text) == reference(text)


def test_the_odd_spaces_nfkc_keeps_are_the_only_ones_a_normalised_text_holds():
    from streamdedup.clean.normalize import _ODD_AFTER_NFKC, ODD_SPACES

    for char in ODD_SPACES:
        folded = unicodedata.normalize("NFKC", char)
        assert char in _ODD_AFTER_NFKC if folded == char else not any(c in ODD_SPACES for c in folded)
