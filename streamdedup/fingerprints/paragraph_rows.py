"""The paragraph sketch's rows and what they measure: a paragraph's length in words and the numbers it states.

A `wordpairs` signature keeps one uint64 a paragraph (`WordPairsSignature.paragraphs`): 4 MinHash
values of its word pairs (10 bits each), its length in word-equivalents (7 bits; `letter_units`)
and a bit for a line its site showed before (`SHOWN_BIT`), and a byte a paragraph of the numbers it
states (`numbers_bytes`). This module reads those rows and measures the two things they hold beyond
the values; `wordpairs.py` (its docstring: why) makes and encodes the signature.
"""

from __future__ import annotations

import re
import unicodedata
from functools import cache

import numpy as np

from streamdedup.fingerprints.wordpair_kernels import line_numbers, sketch_row
from streamdedup.jit import numba
from streamdedup.tokens.document import Document
from streamdedup.tokens.scan import scan

PARAGRAPH_VALUES = 4  # MinHash values kept of each paragraph's word pairs
PARAGRAPH_VALUE_BITS = 10
PARAGRAPH_BYTES = 6  # 4 x 10 bits of values, 7 bits of length in words, 1 bit: shown before
MAX_PARAGRAPH_WORDS = 127  # a longer paragraph reads 127 words
SHOWN_BIT = np.uint64(1 << 47)  # a row's top bit: its line was shown before on its site (`shown_before`)
_VALUE_MASK = (1 << PARAGRAPH_VALUE_BITS) - 1
LENGTH_SHIFT = PARAGRAPH_VALUES * PARAGRAPH_VALUE_BITS  # a row's length in words sits above its values
NUMBERS_COUNT_SHIFT = 5  # `numbers_bytes`: the count in the top 3 bits, a hash of the numbers in the low 5
NUMBERS_MOST = 7  # a count read as "this many or more"
# the numbers byte of a block of short lines (`WordPairsParams.line_blocks`): a count of 0 with a hash, which no
# line's numbers make (a line stating none reads 0), so a stored sketch tells its blocks (`blocks_of`).
# `BLOCK_NUMBERS`: a block stating no number but dates and times (and every block of a record of rules
# version 24 or before: its numbers not known); from `BLOCK_NUMBERED` to `BLOCKS_BELOW` - 1, a block
# stating numbers, a hash of them (`block_numbers`; `new_text.block_numbers_changed`). A paragraph's
# count of 0 is never asked (`new_text.numbers_changed`)
BLOCK_NUMBERS = 1
BLOCK_NUMBERED = 2
BLOCKS_BELOW = 1 << NUMBERS_COUNT_SHIFT  # (a count of 0)
BLOCK_COUNTS, BLOCK_HASHES = 3, 10  # a numbered block's byte: its count modulo 3, a hash of 10 values (`block_numbers`)
# a block's line whose numbers a re-fetch changes without new text: a time ("16:37", "10h30"), a date
# ("04.06.2024", "2024-06-04", "5/6/24", "5 March 2024"), a relative time ("3 hours ago", "vor 3 Stunden");
# its numbers are not the block's (`block_numbers`). Month names and time words of the languages the
# dev sets hold; a line this misses reads as a number replaced (the page is kept: no content lost)
_STAMP_NUMBERS = re.compile(r"(?<!\d)\d{1,2}[:h]\d{2}(?!\d)|\d{1,2}[./-]\d{1,2}[./-]\d{2,4}|"
                            r"\d{4}[./-]\d{1,2}[./-]\d{1,2}")
_STAMP_WORDS = frozenset((
    "ago updated update aktualisiert published posted veröffentlicht publié actualizado min mins minute minutes "
    "hour hours hr hrs day days week weeks stunde stunden minuten tag tagen woche wochen heure heures jour jours "
    "hora horas minutos días jan feb mar apr may jun jul aug sep sept oct nov dec january february march april "
    "june july august september october november december januar februar märz mai juni juli oktober dezember "
    "janvier février mars avril juin juillet août septembre octobre novembre décembre enero febrero marzo abril "
    "mayo junio julio agosto septiembre octubre noviembre diciembre uhr gmt utc cet cest pst tháng ngày giờ phút"
).split())
_STAMP_STEMS = ("январ", "феврал", "март", "апрел", "мая", "май", "июн", "июл", "август", "сентябр", "октябр",
                "ноябр", "декабр")
_STAMP_CHARACTERS = frozenset("年月日時分")
_WORD = re.compile(r"\w+")


def _a_stamp(line: str) -> bool:
    """Whether a line states a date or a time (`block_numbers`: its numbers are not the block's)."""
    if _STAMP_NUMBERS.search(line) or not _STAMP_CHARACTERS.isdisjoint(line):
        return True
    words = _WORD.findall(line.lower())
    return not _STAMP_WORDS.isdisjoint(words) or any(word.startswith(_STAMP_STEMS) for word in words)


# an odd constant: spreads a number's hash by its rank (`numbers_bytes`); with a seed of the deployment's
# own (not the default), an odd number of that seed's (`WordPairsMethod`)
NUMBERS_MIX = np.uint64(0x9E3779B97F4A7C15)
LETTERS_PER_WORD = 6  # of a word-equivalent (`letter_units`)
# the scripts whose letters carry more of a text than Latin's, and how much more (tenths): first
# code point of each range, its weight; a range ends where the next begins (UDHR, `letter_units`).
# Latin, Greek, Cyrillic and Armenian (below U+0590; Latin and Greek Extended) count their tokens
# alone (0): their words' letters follow their tokens, and a German compound's letters would turn an
# 18-word correction note into a 21-word paragraph (feed dev: one of six corrections missed)
WEIGHT_TENTHS = 10
_SCRIPT_WEIGHTS = (
    (0x0590, 15), (0x0600, 14), (0x0700, 10),  # Hebrew; Arabic
    (0x0750, 14), (0x0780, 10), (0x0870, 14), (0x0900, 10),  # Arabic Supplement, Extended-B and -A
    (0x1100, 25), (0x1200, 20), (0x13A0, 10),  # Hangul Jamo; Ethiopic and its Supplement
    (0x1E00, 0), (0x2000, 10),  # Latin Extended Additional (Vietnamese), Greek Extended
    (0x2D80, 20), (0x2DE0, 10), (0x3130, 25), (0x3190, 10),  # Ethiopic Extended; Hangul Compatibility Jamo
    (0xA960, 25), (0xA980, 10), (0xAB00, 20), (0xAB30, 10),  # Hangul Jamo Extended-A; Ethiopic Extended-A
    (0xAC00, 25), (0xD800, 10),  # Hangul Syllables, Hangul Jamo Extended-B
    (0xFB1D, 15), (0xFB50, 14), (0xFE00, 10), (0xFE70, 14), (0xFF00, 10),  # presentation forms
)
WEIGHT_STARTS = np.array([start for start, _ in _SCRIPT_WEIGHTS], dtype=np.int64)
WEIGHTS = np.array([0] + [weight for _, weight in _SCRIPT_WEIGHTS], dtype=np.int64)


def letter_units(doc: Document) -> np.ndarray:
    """Each token's share of a paragraph's word-equivalents: its letters times its script's weight, in tenths.

    A paragraph's length in words is its word-equivalents: the larger of its tokens and of its
    letters (code points inside its tokens) times their script's weight over `LETTERS_PER_WORD`
    (6: the long end of European languages' average word; English's is ~5, German's ~6), so no
    paragraph counts shorter than its tokens. Tokens alone undercount the text of languages that
    write more in a word: on one text in ~50 languages (the UDHR), Malayalam has 0.45 of
    English's tokens, Korean 0.64, Turkish 0.77, and a new paragraph of 20 tokens there is ~30-45
    words of English, which `NewTextTolerance.min_paragraph_words` let pass as a light edit. Letters
    carry about as much text in every alphabet and abugida (0.93-1.35 of English's: Latin,
    Cyrillic, Greek, Indic, Georgian, Thai, Malayalam 1.07), fewer only where a letter holds more:
    Hangul (0.39 of English's), Ethiopic (0.49), Hebrew (0.66), the Arabic script (0.70-0.84),
    each weighted by about the inverse (2.5, 2.0, 1.5, 1.4); the other scripts of South and South
    East Asia, Georgian and the rest 1. Latin, Greek, Cyrillic and Armenian keep their tokens (0):
    their words' letters follow their tokens, and long German compounds made an 18-word correction
    note a 21-word paragraph (Finnish and Turkish, 0.72-0.77 of English's tokens, stay so). Han
    and kana (0.3-0.45) are left at 1: their tokens count more than their letters anyway. A
    token's script is its first code point's. Sum a paragraph's and divide by `LETTERS_PER_WORD` tenths."""
    letters = doc.token_ends - doc.token_starts
    if not len(letters):
        return letters
    if doc.text.isascii():  # every token Latin (weight 0); CPython knows without looking: ~20 µs a page saved
        return np.zeros(len(letters), dtype=np.int64)
    first = doc.code_points[doc.token_starts].astype(np.int64)
    weights = WEIGHTS[np.searchsorted(WEIGHT_STARTS, first, side="right")]
    return letters * weights


@cache
def decimal_digits() -> np.ndarray:
    """Whether each code point of the Basic Multilingual Plane is a decimal digit (any script): bool[65536].

    A decimal digit is what `re`'s `\\d` matches in text: Unicode's category Nd, as `str.isdecimal`
    tells it, asked of every code point in one numpy string call (~1 ms at a process's first page,
    where the regex over the plane joined into one str took ~7 ms). numpy 1's `np.char` asks
    `str.isdecimal` itself: the same answer, slower."""
    strings = getattr(np, "strings", np.char)
    return np.asarray(strings.isdecimal(np.arange(0x10000, dtype=np.uint32).view("U1")), dtype=np.bool_)


def numbers_bytes(doc: Document, spans: np.ndarray, mix: np.uint64 = NUMBERS_MIX) -> np.ndarray:
    """The numbers each line of `doc` at `spans` (int64[n, 2], ascending, apart) states, a byte a line: uint8[n].

    A number is a token that starts with a decimal digit, with those one separator after it ("1,200",
    "3:38,72": the tokeniser splits them); a line's byte is how many (3 bits) and a 5-bit hash of
    them in text order (`wordpair_kernels.line_numbers`), each number read as its value: written in another
    script's digits it hashes as in ASCII ones (`number_hashes`). `mix`: the hash's odd multiplier."""
    if not len(spans) or not doc.num_tokens:
        return np.zeros(len(spans), dtype=np.uint8)
    points = doc.code_points
    return line_numbers(points.view(np.uint8), points.itemsize, doc.token_starts, doc.token_ends, number_hashes(doc),
                        np.ascontiguousarray(spans, dtype=np.int64), decimal_digits(), NUMBERS_COUNT_SHIFT,
                        NUMBERS_MOST, mix)


@cache
def _ascii_digits() -> dict[int, str]:
    """Each decimal digit beyond ASCII (Arabic-Indic, Persian, Devanagari, Thai, ...) to its ASCII digit."""
    beyond = np.flatnonzero(decimal_digits()[128:]) + 128
    return {code: str(unicodedata.decimal(chr(code))) for code in beyond.tolist()}


def number_hashes(doc: Document) -> np.ndarray:
    """The tokens' hashes, a token starting with a digit beyond ASCII hashed as its ASCII digits' token.

    A site writes its numbers in its script's digits or in ASCII ones ("١٢٠", "۱۲۰", "120"; Hindi
    "१२०" or "120"), and a copy on another site may write them the other way: the same number, which
    `new_text.numbers_changed` must not read as another (full-width digits are ASCII after NFKC already).
    Most pages have no such token and keep the document's own hashes."""
    hashes = doc.token_hashes
    if doc.text.isascii():  # no digit beyond ASCII (CPython knows without looking)
        return hashes
    firsts = doc.code_points[doc.token_starts]
    in_plane = firsts < 0x10000
    native = np.flatnonzero(in_plane & (firsts >= 128) & decimal_digits()[np.where(in_plane, firsts, 0)])
    if not len(native):
        return hashes
    hashes, fold, text = hashes.copy(), _ascii_digits(), doc.text
    for t, start, end in zip(native.tolist(), doc.token_starts[native].tolist(), doc.token_ends[native].tolist(),
                             strict=True):
        folded = scan(text[start:end].translate(fold)).hashes
        if len(folded) == 1:  # one token as it was (else its own hash: the number reads as written)
            hashes[t] = folded[0]
    return hashes


def block_numbers(doc: Document, spans: np.ndarray, mix: np.uint64 = NUMBERS_MIX) -> np.ndarray:
    """The numbers byte of each block of short lines at `spans` (int64[n, 2], in `doc`'s text): uint8[n].

    `BLOCK_NUMBERS` where its lines state no number but in a date or a time (`_a_stamp`, which an
    update stamp or a list of fetched times changes at every re-fetch); else `BLOCK_NUMBERED` plus
    `BLOCK_HASHES` times how many numbers modulo `BLOCK_COUNTS` and a hash of its lines' numbers
    (`numbers_bytes`, each line's in its text order; the lines' in any order: two lines swapped are a
    light edit, multilingual dev) modulo `BLOCK_HASHES`: the 30 values left, so a stored sketch
    still tells its blocks (`blocks_of`). A score, a price or a count replaced in a table's row
    changes the hash (1 in 10: not); a number inserted or deleted (a light edit that puts "4" for
    "are") the count, which `new_text.block_numbers_changed` does not ask (`block_count`)."""
    out = np.full(len(spans), BLOCK_NUMBERS, dtype=np.uint8)
    text = doc.text
    for b, (start, end) in enumerate(spans.tolist()):
        lines, at = [], start
        for line in text[start:end].split("\n"):
            if line:
                lines.append((at, at + len(line)))
            at += len(line) + 1
        stated = numbers_bytes(doc, np.array(lines, dtype=np.int64), mix) if lines else np.zeros(0, dtype=np.uint8)
        total = count = 0
        for (first, last), byte in zip(lines, stated.tolist(), strict=True):
            if not byte or _a_stamp(text[first:last]):
                continue  # a sum: lines reordered (a light edit's swap) state the same numbers
            total += ((byte + 1) * 2_654_435_761) >> 7 & 0xFFFF
            count += byte >> NUMBERS_COUNT_SHIFT
        if not count:
            continue
        out[b] = BLOCK_NUMBERED + (count % BLOCK_COUNTS) * BLOCK_HASHES + total % BLOCK_HASHES
    return out


# a short unit's numbers byte (`WordPairsParams.short_lines`: a lone line under the sketch's words, kept as a
# block is): whether it states a number (a date line, "Updated 10:42", "3 comments", "Page 2": a host's
# or a re-fetch's), which `line_places.inserted_block` does not count, or none. Both read as a block's
# (`blocks_of`); `new_text.block_numbers_changed` does not ask a short unit
SHORT_NUMBERED, SHORT_PLAIN = BLOCK_NUMBERS, BLOCK_NUMBERED


def block_count(numbers: np.ndarray) -> np.ndarray:
    """The count class (how many numbers modulo `BLOCK_COUNTS`) of blocks' numbers bytes of `BLOCK_NUMBERED` or more."""
    return (numbers.astype(np.int64) - BLOCK_NUMBERED) // BLOCK_HASHES


def numbers_byte(line: str, mix: np.uint64 = NUMBERS_MIX) -> int:
    """The numbers one line of text states, in a byte (`numbers_bytes`); 0: none."""
    doc = Document.from_text(line, None)
    return int(numbers_bytes(doc, np.array([[0, len(doc.text)]], dtype=np.int64), mix)[0])



def paragraph_values(paragraphs: np.ndarray) -> np.ndarray:
    """Each paragraph's 4 MinHash values: int64[n, 4]."""
    shifts = np.arange(PARAGRAPH_VALUES, dtype=np.uint64) * np.uint64(PARAGRAPH_VALUE_BITS)
    return ((paragraphs[:, None] >> shifts[None, :]) & np.uint64(_VALUE_MASK)).astype(np.int64)


def paragraph_words(paragraphs: np.ndarray) -> np.ndarray:
    """Each paragraph's length in words (its word-equivalents, `letter_units`; at most 127): int64[n]."""
    return ((paragraphs >> np.uint64(LENGTH_SHIFT)) & np.uint64(MAX_PARAGRAPH_WORDS)).astype(np.int64)


def shown_before(paragraphs: np.ndarray) -> np.ndarray:
    """Whether each paragraph is a line its site showed on an earlier page (`mark_shown`): bool[n]."""
    return (paragraphs & SHOWN_BIT) != 0


def blocks_of(numbers: np.ndarray, count: int) -> np.ndarray:
    """Which of a sketch's `count` paragraphs are blocks of short lines, by their numbers bytes: bool[count].

    A block's byte is a count of 0 with a hash (`BLOCK_NUMBERS` to `BLOCKS_BELOW` - 1). All False (no
    block) where the numbers are not known (a record of 0.16.0 or before)."""
    if len(numbers) != count:
        return np.zeros(count, dtype=np.bool_)
    return (numbers > 0) & (numbers < BLOCKS_BELOW)


@numba.njit(cache=True)
def record_sketches(data: np.ndarray, starts: np.ndarray, ends: np.ndarray, width: int,
                    block: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, bool]:
    """The paragraph sketches of encoded word-pair records, side by side, in one pass over their bytes.

    Record r lies at `starts[r]`:`ends[r]`: `width` bytes, then (where longer) a byte of count (high
    bit: capped), 6 bytes a paragraph and, where the record holds them, a numbers byte a paragraph
    (and their marks). Each paragraph as `paragraph_values`, `paragraph_words` and `blocks_of` (with
    `block`: `BLOCKS_BELOW`) read `WordPairsMethod.paragraphs_of`'s sketch and numbers: its 4 values
    (int64[N, 4]), its words (int64[N]), whether it is a block (bool[N]); record r's rows at
    `offsets[r]`:`offsets[r + 1]`; and whether every record was read whole (False: one is shorter
    than its size or its rows, which `paragraphs_of` refuses; its rows are then left out)."""
    count = starts.shape[0]
    offsets = np.zeros(count + 1, dtype=np.int64)
    whole = True
    for r in range(count):
        start = starts[r] + width
        m = 0
        if ends[r] - starts[r] < 4:
            whole = False
        elif ends[r] > start:
            m = data[start] & 0x7F
            if ends[r] < start + 1 + 6 * m:
                whole, m = False, 0
        offsets[r + 1] = offsets[r] + m
    total = offsets[count]
    values = np.empty((total, 4), dtype=np.int64)
    words = np.empty(total, dtype=np.int64)
    blocks = np.zeros(total, dtype=np.bool_)
    for r in range(count):
        first, m = offsets[r], offsets[r + 1] - offsets[r]
        start = starts[r] + width
        numbers_at = start + 1 + 6 * m
        numbered = ends[r] == numbers_at + m or ends[r] == numbers_at + m + (m + 7) // 8
        for j in range(m):
            value = sketch_row(data, start + 1 + 6 * j)
            for k in range(4):
                values[first + j, k] = (value >> (10 * k)) & 1023
            words[first + j] = (value >> 40) & 127
            blocks[first + j] = numbered and 0 < data[numbers_at + j] < block
    return values, words, blocks, offsets, whole
