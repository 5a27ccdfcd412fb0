"""The prepare step's shortcuts give what the plain formulas give (issue 60: the text path's speed).

`minhash_min` takes four shingles a pass; `letter_units` and the numbers' hashes skip their
per-token script tables for ASCII text; the MinHashes read their shingles' set unsorted
(`hash_arrays.first_seen`); the paragraph sketch makes its rows' words and numbers in one call. Each must be the same, value for value and type for type:
the signatures, and so every verdict and store byte, depend on them.
"""

from __future__ import annotations

import numpy as np
import pytest

from streamdedup.fingerprints import paragraph_rows
from streamdedup.fingerprints.kernels import minhash_min
from streamdedup.fingerprints.minhash import MinHashMethod
from streamdedup.fingerprints.wordpairs import WordPairsMethod
from streamdedup.hash_arrays import first_seen
from streamdedup.tokens.document import Document


def _minima(shingles: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The kernel's docstring formula in numpy: min over x of (a*x + b) >> 32, wrapping uint64."""
    if not len(shingles):
        return np.full(len(a), 0xFFFFFFFF, dtype=np.uint32)
    with np.errstate(over="ignore"):
        values = (a[:, None] * shingles[None, :] + b[:, None]) >> np.uint64(32)
    return values.min(axis=1).astype(np.uint32)


@pytest.mark.parametrize("perms", [1, 3, 128, 256])
def test_minhash_min_is_the_formula_for_every_count_of_shingles(perms):
    """Counts 0-13 and 600-603 cover a pass of four, a tail of one to three, and none at all."""
    rng = np.random.default_rng(perms)
    a = rng.integers(1, 2**63, size=perms, dtype=np.uint64) | np.uint64(1)
    b = rng.integers(0, 2**63, size=perms, dtype=np.uint64)
    for count in [*range(14), 600, 601, 602, 603]:
        shingles = rng.integers(0, 2**64, size=count, dtype=np.uint64, endpoint=False)
        got = minhash_min(shingles, a, b)
        assert got.dtype == np.uint32
        assert np.array_equal(got, _minima(shingles, a, b)), count


def test_minhash_min_finds_a_minimum_in_each_place_of_a_pass():
    """The least value sits in each of the four lanes of a pass and in the tail in turn."""
    a = np.array([1], dtype=np.uint64)
    b = np.zeros(1, dtype=np.uint64)
    for count in range(1, 10):
        for place in range(count):
            shingles = np.full(count, 9 << 32, dtype=np.uint64)
            shingles[place] = np.uint64(5 << 32)
            assert minhash_min(shingles, a, b).tolist() == [5], (count, place)


def _letter_units_by_table(doc: Document) -> np.ndarray:
    """`letter_units` as its general path computes it (the script table of each token's first code point)."""
    letters = doc.token_ends - doc.token_starts
    first = doc.code_points[doc.token_starts].astype(np.int64)
    return letters * paragraph_rows.WEIGHTS[np.searchsorted(paragraph_rows.WEIGHT_STARTS, first, side="right")]


@pytest.mark.parametrize("text", ["Plain ASCII words, 12 numbers and 3:38,72 punctuation!\nA second line of it.",
                                  "x", "1,200 and 42"])
def test_ascii_text_takes_its_shortcuts_with_the_same_values(text):
    doc = Document.from_text(text)
    assert doc.text.isascii()
    units = paragraph_rows.letter_units(doc)
    expected = _letter_units_by_table(doc)
    assert units.dtype == expected.dtype == np.int64
    assert np.array_equal(units, expected)
    assert paragraph_rows.number_hashes(doc) is doc.token_hashes  # no digit beyond ASCII: the document's own


def test_other_text_still_weighs_its_scripts_and_folds_its_digits():
    doc = Document.from_text("한국어 문장 ١٢٠ and 120 words")
    assert not doc.text.isascii()
    units = paragraph_rows.letter_units(doc)
    assert np.array_equal(units, _letter_units_by_table(doc))
    assert units[0] == 3 * 25  # three Hangul syllables, weight 2.5 in tenths
    hashes = paragraph_rows.number_hashes(doc)
    tokens = doc.tokens
    assert hashes[tokens.index("١٢٠")] == hashes[tokens.index("120")]  # the Arabic-Indic number reads as 120


def test_the_decimal_digits_table_is_what_a_regex_digit_matches():
    """`paragraph_rows.decimal_digits` (one numpy string call) marks exactly the code points `re`'s `\\d`
    matches in the Basic Multilingual Plane (the table was made by that regex), and none other."""
    import re

    plane = "".join(map(chr, range(0x10000)))
    expected = np.zeros(0x10000, dtype=np.bool_)
    expected[[match.start() for match in re.finditer(r"\d", plane)]] = True
    table = paragraph_rows.decimal_digits()
    assert table.dtype == np.bool_ and table.shape == (0x10000,)
    assert np.flatnonzero(table).tolist() == np.flatnonzero(expected).tolist()
    assert table[ord("7")] and table[0x0663] and not table[0] and not table[ord("a")] and not table[0xD800]


def test_first_seen_is_each_distinct_value_once_in_the_order_first_met():
    """Repeats, zeros (the table's empty mark) and values that share a slot, at sizes around the table's."""
    rng = np.random.default_rng(60)
    for count in [0, 1, 2, 7, 8, 9, 100, 1000]:
        for spread in (3, 50, 2**64):
            values = rng.integers(0, spread, size=count, dtype=np.uint64, endpoint=False)
            values[rng.random(count) < 0.1] = 0
            got = first_seen(values)
            assert got.dtype == np.uint64
            assert got.tolist() == list(dict.fromkeys(values.tolist())), (count, spread)
    same_slot = np.array([1 << 60, 2 << 60, 3 << 60, 1 << 60, 0, 2 << 60], dtype=np.uint64)
    assert first_seen(same_slot).tolist() == [1 << 60, 2 << 60, 3 << 60, 0]


_TEXTS = ["the cat sat on the mat and the cat sat on the mat again " * 30,
          "Plain ASCII words, 12 numbers and 3:38,72 punctuation!\nA second line of it.",
          "한국어 문장 ١٢٠ and 120 words " * 9, "one", ""]


@pytest.mark.parametrize("text", _TEXTS)
def test_the_minhashes_read_their_unsorted_shingle_set_as_the_sorted_one(text):
    """MinHash and word pairs over `Document.shingle_set` encode what they encode over `Document.shingles`."""
    for method in (MinHashMethod(), WordPairsMethod()):
        unsorted = Document.from_text(text)
        ordered = Document.from_text(text)
        ordered.shingles(method.params.shingle_size)  # made: `shingle_set` hands these
        got, expected = method.signature(unsorted), method.signature(ordered)
        assert (got is None) == (expected is None)
        if got is not None:
            assert method.encode(got) == method.encode(expected), method.name


def test_each_paragraph_row_is_what_its_line_alone_gives():
    """The one-call sketch's words (letter units, scripts weighed) and numbers of each paragraph line.

    Each as `letter_units` and `numbers_byte` give them of the line alone (a token's hash is its own)."""
    lines = ["The council met on 5 May 2024 and voted 12 to 3 on the budget of 1,200 pounds for the city.",
             "한국어 문장은 영어보다 짧은 토큰으로 많은 내용을 담고 있어서 단어 수를 글자로 세어야 합니다 정말 그렇습니다 120",
             "Die Abstimmung ergab ١٢٠ Stimmen dafür und ۱۲۰ dagegen, so berichtete die Zeitung am Montag früh.",
             "A plain line of prose with no number at all, long enough to be a paragraph of the sketch."]
    method = WordPairsMethod()
    signature = method.signature(Document.from_text("\n".join(lines)))
    assert signature is not None and len(signature.paragraphs) == len(lines)
    for line, row, numbers in zip(lines, signature.paragraphs.tolist(), signature.numbers.tolist(), strict=True):
        alone = Document.from_text(line)
        words = max(alone.num_tokens, int(paragraph_rows.letter_units(alone).sum()) // 60)
        assert (row >> paragraph_rows.LENGTH_SHIFT) & 127 == min(127, words), line
        assert numbers == paragraph_rows.numbers_byte(line), line
