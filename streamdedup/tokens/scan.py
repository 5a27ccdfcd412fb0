"""Compiled tokeniser: words, sentence breaks and token hashes in one pass over code points.

A regex `findall` is one C pass too, but it builds a Python string per token and the tokens are
then hashed one by one; that per-token Python work was most of the time spent fingerprinting. Here
the text is one array of code points (bytes when it is ASCII), every code point's class comes from a table built
once from the same Unicode properties the regex tokeniser uses (`tokenize.py`), and a numba loop
emits token offsets, 64-bit token hashes and sentence bounds as arrays. Token strings are made
only when a method asks for them (`Document.tokens`).

The rules are exactly those of `tokenize.words_and_breaks` (tests compare the two): a sentence
ends at a newline, after . ! ? … (with optional closing quotes or brackets) followed by a space,
and after CJK, Tibetan and Devanagari full stops.
"""

from __future__ import annotations

import os
import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import regex
import xxhash

from streamdedup.jit import numba
from streamdedup.tokens.hashing import TOKEN_SEED, code_points, hash_end, hash_spans, hash_step
from streamdedup.tokens.tokenize import (
    CJK_RE,
    HAS_CJK_RE,
    NON_CJK_WORD_RE,
    PLAIN_WORD_RE,
    UNSPACED_RANGES,
    UNSPACED_RE,
    dictionary_words,
)

# Code point classes (bits of one uint8 per code point).
PLAIN = 1  # [\p{L}\p{M}\p{N}]: a word character when the text has no Han or kana
WORDX = 2  # [\w--_] minus Han/kana: a word character of the CJK-aware tokeniser
CJK = 4  # Han, Hiragana, Katakana: one token each in the CJK-aware tokeniser
HAS_CJK = 8  # the range that switches a text to the CJK-aware tokeniser
SPACE = 16  # whitespace (and NUL, which the regex tokeniser read as a space)
TERM = 32  # . ! ? … : end a sentence when whitespace follows
CLOSE = 64  # " ' ) ] : may stand between TERM and the whitespace
STOP = 128  # newline and the full stops that end a sentence by themselves

# The tokeniser's own patterns; the sentence-end sets spell out tokenize.SENTENCE_END_RE.
_CLASSES = (
    (PLAIN, PLAIN_WORD_RE),
    (WORDX, NON_CJK_WORD_RE),
    (CJK, CJK_RE),
    (HAS_CJK, HAS_CJK_RE),
    (SPACE, re.compile(r"[\s\x00]+")),
    (TERM, re.compile("[.!?…]+")),
    (CLOSE, re.compile("[\"')\\]]+")),
    (STOP, re.compile("[\n。！？；།༎॥।]+")),
)


@lru_cache(maxsize=1)
def char_classes() -> np.ndarray:
    """uint8[0x110000] of class bits.

    Built from the regex properties themselves (~0.3 s) and kept beside numba's cache, keyed by
    everything it depends on, so a new process loads it."""
    key = xxhash.xxh3_64_hexdigest(repr((regex.__version__, unicodedata.unidata_version,
                                         [(bit, p.pattern, p.flags) for bit, p in _CLASSES])).encode())
    cached = Path(__file__).parent / "__pycache__" / f"char_classes-{key}.npy"
    try:
        table = np.load(cached)
        if table.shape == (0x110000,) and table.dtype == np.uint8:
            return table
    except (OSError, ValueError):
        pass
    table = _build_char_classes()
    try:
        cached.parent.mkdir(exist_ok=True)
        partial = cached.with_suffix(f".{os.getpid()}.tmp")
        with open(partial, "wb") as handle:
            np.save(handle, table)
        partial.replace(cached)
    except OSError:  # a read-only install: build it in every process
        pass
    return table


def _build_char_classes() -> np.ndarray:
    everything = "".join(map(chr, range(0x110000)))
    table = np.zeros(0x110000, dtype=np.uint8)
    for bit, pattern in _CLASSES:
        for match in _runs_of(pattern).finditer(everything):
            table[match.start():match.end()] |= bit
    return table


def _runs_of(pattern: re.Pattern[str]) -> re.Pattern[str]:
    """The character class as runs (one match per run, not per character: ~100 x fewer)."""
    module = re if isinstance(pattern, re.Pattern) else regex
    return module.compile(f"(?:{pattern.pattern})+", pattern.flags)


@numba.njit(cache=True)
def _scan(cps: np.ndarray, table: np.ndarray, ascii_only: bool):
    n = len(cps)
    cjk_mode = False
    for i in range(0 if ascii_only else n):
        if table[cps[i]] & HAS_CJK:
            cjk_mode = True
            break
    word = WORDX if cjk_mode else PLAIN
    starts = np.empty(n, dtype=np.int64)
    ends = np.empty(n, dtype=np.int64)
    hashes = np.empty(n, dtype=np.uint64)
    cjk = np.zeros(n, dtype=np.bool_)
    bounds = np.empty(n + 2, dtype=np.int64)
    bounds[0] = 0
    count = 0
    nb = 1
    pending = False  # a sentence break since the last token
    after_term = False  # inside ". ) " before the whitespace that makes it a break
    i = 0
    while i < n:
        c = table[cps[i]]
        h = hash_step(np.uint64(TOKEN_SEED), np.uint64(cps[i]))
        end = i + 1
        if cjk_mode and c & CJK:
            pass  # one character, one token
        elif c & word:
            while end < n and table[cps[end]] & word:
                h = hash_step(h, np.uint64(cps[end]))
                end += 1
        else:
            if c & STOP or (c & SPACE and after_term):
                pending = True
            after_term = bool(c & TERM) or (after_term and bool(c & CLOSE))
            i += 1
            continue
        if pending and count > bounds[nb - 1]:
            bounds[nb] = count
            nb += 1
        pending = False
        after_term = False
        starts[count] = i
        ends[count] = end
        hashes[count] = hash_end(h, end - i)
        cjk[count] = end == i + 1 and bool(c & CJK)
        count += 1
        i = end
    if count > bounds[nb - 1]:
        bounds[nb] = count
        nb += 1
    return (starts[:count].copy(), ends[:count].copy(), hashes[:count].copy(), cjk[:count].copy(),
            bounds[:nb].copy())


@dataclass(frozen=True, slots=True)
class Scan:
    """One pass over a text: its tokens' offsets, hashes and CJK flags, its sentences and code points."""

    starts: np.ndarray  # int64 code point offsets of each token
    ends: np.ndarray
    hashes: np.ndarray  # uint64 token hashes
    cjk: np.ndarray  # bool: the token is one Han/kana character
    sentence_bounds: np.ndarray  # int64 token offsets: sentence i is tokens[b[i]:b[i+1]]
    code_points: np.ndarray  # the text's (`hashing.code_points`: uint8 when ASCII, else uint32)


def scan(text: str) -> Scan:
    """Tokens, their hashes and sentence bounds of a (normalised) text."""
    cps = code_points(text)
    starts, ends, hashes, cjk, bounds = _scan(cps, char_classes(), text.isascii())
    found = Scan(starts, ends, hashes, cjk, bounds, cps)
    if text.isascii() or not _any_in(cps, _UNSPACED):
        return found
    return _cut_unspaced(text, cps, found)


def _code_point_set(ranges: tuple[tuple[int, int], ...]) -> np.ndarray:
    """Whether each code point of the Basic Multilingual Plane is in one of the [first, last] `ranges`."""
    table = np.zeros(0x10000, dtype=np.bool_)
    for first, last in ranges:
        table[first:last + 1] = True
    return table


# `UNSPACED_RE`'s code points: a compiled test of a text's code points takes ~1 µs where the
# regex search takes ~8 (3,000 characters of non-ASCII text, almost never one of these)
_UNSPACED = _code_point_set(UNSPACED_RANGES)


@numba.njit(cache=True)
def _any_in(cps: np.ndarray, table: np.ndarray) -> bool:
    """Whether any of the code points `cps` is one `table` (bool, indexed by code point) marks."""
    for c in cps:
        if c < len(table) and table[c]:
            return True
    return False


def _cut_unspaced(text: str, cps: np.ndarray, found: Scan) -> Scan:
    """The scan with Thai, Lao, Khmer or Myanmar tokens cut into their dictionary words.

    The scan with each token of Thai, Lao, Khmer or Myanmar letters cut into its dictionary
    words (`tokenize.dictionary_words`, as the regex tokeniser does)."""
    starts, ends = found.starts.tolist(), found.ends.tolist()
    cut = [i for i, (a, b) in enumerate(zip(starts, ends, strict=True)) if UNSPACED_RE.search(text, a, b)]
    pieces = dict(zip(cut, dictionary_words([text[starts[i]:ends[i]] for i in cut]), strict=True))
    new_starts: list[int] = []
    new_ends: list[int] = []
    cjk: list[bool] = []
    first = [0]  # first[i]: the new index of old token i
    for i, (a, b, is_cjk) in enumerate(zip(starts, ends, found.cjk.tolist(), strict=True)):
        spans = [(a + x, a + y) for x, y in pieces[i]] if i in pieces else [(a, b)]
        new_starts.extend(s for s, _ in spans)
        new_ends.extend(e for _, e in spans)
        cjk.extend([is_cjk and i not in pieces] * len(spans))
        first.append(len(new_starts))
    starts_array = np.array(new_starts, dtype=np.int64)
    ends_array = np.array(new_ends, dtype=np.int64)
    return Scan(starts_array, ends_array, hash_spans(cps, starts_array, ends_array), np.array(cjk, dtype=np.bool_),
                np.array(first, dtype=np.int64)[found.sentence_bounds], cps)
