"""Compiled inner loops of the word-pairs method (numba, cached on disk after the first run).

Its paragraph sketch (`paragraph_sketch`) and the numbers of its lines (`line_numbers`), the keys a
page is filed under (`paragraph_keys`), its 2-bit packed signature and the shares of new pairs read
from stored records (`pack_two_bits`, `two_bit_new_shares`), and what the verdict asks of the
paragraph sketches (`paragraphs_held`: `verdict/new_text.py`). The other methods' loops:
`kernels.py`.
"""

from __future__ import annotations

import numpy as np

from streamdedup.hash_arrays import in_table
from streamdedup.jit import numba


@numba.njit(cache=True)
def sketch_row(data: np.ndarray, at: int) -> int:
    """A stored paragraph sketch's row at `at`: 6 little-endian bytes, four 10-bit values then its words (7 bits)."""
    value = 0
    for b in range(6):
        value |= int(data[at + b]) << (8 * b)
    return value


@numba.njit(cache=True)
def paragraph_keys(paragraphs: np.ndarray, count: int, min_words: int, length_shift: int) -> np.ndarray:
    """`WordPairsMethod.index_keys` of one paragraph sketch (uint64 a paragraph): the keys' values.

    The `count` first paragraphs by length in words (the 7 bits from `length_shift`) descending,
    then by values (the bits below it) ascending; of those, the ones of `min_words` words or more,
    a repeated value once, in that order."""
    n = len(paragraphs)
    mask = (np.uint64(1) << np.uint64(length_shift)) - np.uint64(1)
    words = np.empty(n, dtype=np.int64)
    values = np.empty(n, dtype=np.uint64)
    for j in range(n):
        words[j] = np.int64((paragraphs[j] >> np.uint64(length_shift)) & np.uint64(127))
        values[j] = paragraphs[j] & mask
    keys = np.empty(min(max(count, 0), n), dtype=np.uint64)
    k = 0
    taken = np.zeros(n, dtype=np.bool_)
    for _ in range(len(keys)):
        best = -1
        for j in range(n):
            if not taken[j] and (best < 0 or words[j] > words[best]
                                 or (words[j] == words[best] and values[j] < values[best])):
                best = j
        taken[best] = True
        if words[best] < min_words:
            continue
        seen = False
        for m in range(k):
            if keys[m] == values[best]:
                seen = True
                break
        if not seen:
            keys[k] = values[best]
            k += 1
    return keys[:k]


@numba.njit(cache=True)
def paragraph_keys_many(data: np.ndarray, ends: np.ndarray, width: int, count: int, min_words: int,
                        row_bytes: int, length_shift: int, block: int) -> tuple[np.ndarray, np.ndarray]:
    """`paragraph_keys` of encoded signatures back to back (the i-th ends at `ends[i]`).

    Each one's sketch follows `width` bytes: a count byte, then `row_bytes` little-endian bytes a
    paragraph, then (where present) a numbers byte each; a paragraph whose numbers byte is over 0 and
    under `block` (a block of short lines: `paragraph_rows.blocks_of`) files no key, as `index_keys`. The
    keys' values as uint64 (little-endian bytes: the keys), and how many each signature has."""
    keys = np.empty(len(ends) * max(count, 0), dtype=np.uint64)
    counts = np.zeros(len(ends), dtype=np.int64)
    k = 0
    start = 0
    for i in range(len(ends)):
        end = ends[i]
        if end - start > width and count > 0:
            n = data[start + width] & 0x7F
            numbers_at = start + width + 1 + row_bytes * n
            numbered = end >= numbers_at + n
            rows = np.zeros(n, dtype=np.uint64)
            kept = 0
            for j in range(n):
                if numbered and 0 < data[numbers_at + j] < block:
                    continue
                at = start + width + 1 + row_bytes * j
                for b in range(row_bytes):
                    rows[kept] |= np.uint64(data[at + b]) << np.uint64(8 * b)
                kept += 1
            found = paragraph_keys(rows[:kept], count, min_words, length_shift)
            keys[k:k + len(found)] = found
            k += len(found)
            counts[i] = len(found)
        start = end
    return keys[:k].astype("<u8"), counts


@numba.njit(cache=True)
def pack_two_bits(minima: np.ndarray) -> np.ndarray:
    """The lowest 2 bits of each value, four to a byte (the first value in the lowest bits)."""
    out = np.zeros(minima.shape[0] // 4, dtype=np.uint8)
    for i in range(out.shape[0]):
        byte = 0
        for j in range(4):
            byte |= (int(minima[4 * i + j]) & 3) << (2 * j)
        out[i] = byte
    return out


@numba.njit(cache=True)
def two_bit_new_shares(data: np.ndarray, ends: np.ndarray, width: int, mine: np.ndarray, own: int, values: int,
                       collision: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`WordPairsMethod.new_shares` over the records that end at `ends` in `data` (one after another).

    Each record: its set size (uint32, little-endian), then 2-bit values packed four to a byte (as
    many bytes as `mine`), then anything (a paragraph sketch, not read); one shorter than `width`
    bytes (those two) is not comparable: NaN, NaN and size 0. Returns this page's share absent from
    each, each one's share absent from this page, and sizes."""
    count = ends.shape[0]
    absent_mine, absent_theirs, sizes = np.empty(count), np.empty(count), np.empty(count)
    own_size = max(1.0, float(own))
    start = 0
    for r in range(count):
        if ends[r] - start < width:
            absent_mine[r], absent_theirs[r], sizes[r] = np.nan, np.nan, 0.0
            start = ends[r]
            continue
        size = float(int(data[start]) | (int(data[start + 1]) << 8) | (int(data[start + 2]) << 16)
                     | (int(data[start + 3]) << 24))
        unequal = 0
        for i in range(mine.shape[0]):
            d = data[start + 4 + i] ^ mine[i]
            d = (d | (d >> 1)) & 0x55  # the low bit of each 2-bit field that differs
            unequal += (d & 1) + ((d >> 2) & 1) + ((d >> 4) & 1) + ((d >> 6) & 1)
        absent_mine[r], absent_theirs[r] = two_bit_absent(unequal, size, own_size, values, collision)
        sizes[r] = size
        start = ends[r]
    return absent_mine, absent_theirs, sizes


@numba.njit(cache=True)
def two_bit_absent(unequal: int, size: float, own_size: float, values: int, collision: float) -> tuple[float, float]:
    """The two new shares `two_bit_new_shares` gives from `unequal` of `values` 2-bit fields (set sizes as floats).

    One place for the float64 operations that the engine's measure and the candidate filter
    (`verdict.prefilter`) must share: this page's share absent from the other, and the other's from it."""
    jaccard = min(1.0, max(0.0, (1.0 - unequal / values - collision) / (1.0 - collision)))
    shared = jaccard * (size + own_size) / (1.0 + jaccard)
    return min(1.0, max(0.0, 1.0 - shared / own_size)), min(1.0, max(0.0, 1.0 - shared / max(size, 1.0)))


_EVEN_BITS = np.uint64(0x5555555555555555)
_PAIRS = np.uint64(0x3333333333333333)
_NIBBLES = np.uint64(0x0F0F0F0F0F0F0F0F)
_BYTES = np.uint64(0x0101010101010101)


@numba.njit(cache=True)
def two_bit_unequal(words: np.ndarray, mine: np.ndarray) -> int:
    """How many 2-bit fields differ between two packed signatures read as uint64 words.

    The count `two_bit_new_shares` makes a byte at a time (the same fields: the low bit of each
    field that differs, a word's bits shifted across a byte boundary land on an odd bit and are
    masked off), eight bytes at a time. Bytes past the signature's are zero in both."""
    unequal = 0
    for i in range(words.shape[0]):
        d = words[i] ^ mine[i]
        d = (d | (d >> np.uint64(1))) & _EVEN_BITS  # each 2-bit field: 1 if it differs
        d = (d & _PAIRS) + ((d >> np.uint64(2)) & _PAIRS)
        d = (d + (d >> np.uint64(4))) & _NIBBLES
        unequal += int((d * _BYTES) >> np.uint64(56))
    return unequal


def two_bit_words(packed: np.ndarray) -> np.ndarray:
    """Rows of 2-bit packed bytes (uint8, one signature a row) as uint64 words, zero bytes added to a multiple of 8."""
    rows, width = packed.shape
    padded = np.zeros((rows, -(-width // 8) * 8), dtype=np.uint8)
    padded[:, :width] = packed
    return padded.view("<u8").astype(np.uint64, copy=False)


@numba.njit(cache=True, inline="always")
def code_point(text: np.ndarray, width: int, i: int) -> np.int64:
    """The `i`-th code point of a text given as its code points' bytes (`hashing.code_points` viewed as uint8).

    `width` bytes a code point: 1 (ASCII text) or 4 (UTF-32, little-endian as encoded). One array
    type for any text: a kernel taking the code points themselves compiles (and loads at start-up)
    once for uint8 and once for uint32."""
    if width == 1:
        return np.int64(text[i])
    at = 4 * i
    return (np.int64(text[at]) | (np.int64(text[at + 1]) << 8) | (np.int64(text[at + 2]) << 16)
            | (np.int64(text[at + 3]) << 24))


@numba.njit(cache=True, inline="always")
def _searched(starts: np.ndarray, value: np.int64) -> int:
    """np.searchsorted(starts, value, side="right"): how many of the ascending `starts` are at most `value`."""
    low, high = 0, len(starts)
    while low < high:
        middle = (low + high) // 2
        if starts[middle] <= value:
            low = middle + 1
        else:
            high = middle
    return low


@numba.njit(cache=True)
def paragraph_sketch(text: np.ndarray, width: int, token_starts: np.ndarray, token_ends: np.ndarray,
                     pairs: np.ndarray, token_hashes: np.ndarray, common: tuple[np.ndarray, int, int, bool],
                     weight_starts: np.ndarray, weights: np.ndarray, units_per_word: int, a: np.ndarray,
                     b: np.ndarray, min_words: int, max_kept: int, tail: int, value_bits: int, max_words: int,
                     block_lines: int, short_tokens: int, number_hashes: np.ndarray, digits: np.ndarray,
                     count_shift: int, most: int, mix: np.uint64, short_numbered: int,
                     short_plain: int) -> tuple[np.ndarray, np.ndarray, bool, np.ndarray, np.ndarray]:
    """`WordPairsMethod._paragraphs`' sketch in one call: each kept line's packed values, span, numbers; capped.

    One call a page (issue 60: the newline mask, the letter units, the common-word test, the numbers
    and the short units were each a numpy or compiled call of 1-4 µs around this one, ~20 µs a page
    of 30; the same values). `text`: the text's code points as bytes, `width` a code point
    (`code_point`); only the text between tokens is read for newlines.

    A line's words are its word-equivalents (`paragraph_rows.letter_units`): the larger of its tokens
    and its tokens' letter units over `units_per_word`; a token's units are its code points times
    its script's weight (`weights`, a range from each of `weight_starts`, by its first code point),
    none where `weights` is empty (ASCII text, or lengths in tokens). A line (text between newlines)
    of at least `min_words` words and two tokens (offsets in code points) is a paragraph. So is a
    block: `block_lines` or more consecutive lines none of which is one (a list, a table's rows) that
    together have `min_words` words and two tokens, its words their sum, its pairs all of its tokens'
    (0: no block); so is such a run that is no block (under `min_words` words, or one line: a heading,
    a list item), of at least `short_tokens` tokens (0: none), a short unit. Past `max_kept`
    paragraphs (blocks aside) the longest are kept (ties: the earlier), and the last `tail`, in text
    order, and no block; under it, the longest blocks fill the places left (ties: the earlier), in
    text order. Of each kept one, for each of the len(a) functions, the least (a*p + b) >> 40
    (wrapping uint64) over its pairs `pairs` (pair i: tokens i and i + 1) but those of two common
    tokens (`token_hashes` in the `common` table: `hash_arrays.in_table`; over all where every pair
    is such), its low `value_bits` bits, packed the first lowest, then its words (at most
    `max_words`) above them; the line's [start, end) in the text; its numbers byte (`line_numbers`
    of the spans, with `number_hashes`, `digits` and the rest its arguments); and whether it is a
    short unit (words under `min_words`, where `short_tokens` is set), whose numbers byte is then
    `short_numbered` where it states a number, else `short_plain` (`paragraph_rows.SHORT_NUMBERED`, `SHORT_PLAIN`)."""
    n, size = len(token_starts), len(text) // width
    weighed = len(weights) > 0
    run_start = np.empty(n, dtype=np.int64)  # runs of tokens on one line: the first token, how many
    run_len = np.empty(n, dtype=np.int64)
    run_line = np.empty(n, dtype=np.int64)  # where its line starts
    run_units = np.zeros(n, dtype=np.int64)  # its tokens' letter units
    runs = 0
    line_start = 0
    new_line = True
    gap = 0  # past the previous token
    for t in range(n):
        for i in range(gap, token_starts[t]):
            if code_point(text, width, i) == 10:
                line_start = i + 1
                new_line = True
        gap = token_ends[t]
        if new_line:
            run_start[runs], run_len[runs], run_line[runs] = t, 0, line_start
            runs += 1
            new_line = False
        run_len[runs - 1] += 1
        if weighed:
            first = code_point(text, width, token_starts[t])
            run_units[runs - 1] += (token_ends[t] - token_starts[t]) * weights[_searched(weight_starts, first)]
    run_words = np.empty(runs, dtype=np.int64)  # word-equivalents: never fewer than its tokens
    for r in range(runs):
        run_words[r] = max(run_len[r], run_units[r] // units_per_word)
    # the paragraphs: a line, or a block of lines (`block_lines`), each its first and last run and its words
    unit_first = np.empty(runs, dtype=np.int64)
    unit_last = np.empty(runs, dtype=np.int64)
    unit_words = np.empty(runs, dtype=np.int64)
    is_block = np.zeros(runs, dtype=np.bool_)
    count = 0
    r = 0
    while r < runs:
        if run_words[r] >= min_words and run_len[r] >= 2:
            unit_first[count], unit_last[count], unit_words[count] = r, r, run_words[r]
            count += 1
            r += 1
            continue
        first_run, words, tokens = r, 0, 0
        while r < runs and not (run_words[r] >= min_words and run_len[r] >= 2):
            words += run_words[r]
            tokens += run_len[r]
            r += 1
        if block_lines > 0 and r - first_run >= block_lines and words >= min_words and tokens >= 2:
            unit_first[count], unit_last[count], unit_words[count] = first_run, r - 1, words
            is_block[count] = True
            count += 1
        elif short_tokens > 0 and tokens >= short_tokens and tokens >= 2:
            unit_first[count], unit_last[count], unit_words[count] = first_run, r - 1, words
            is_block[count] = True
            count += 1
    # the paragraphs are kept (and capped) as if there were no blocks; the blocks fill the places left,
    # the longest first (ties: the earlier)
    chosen = np.flatnonzero(~is_block[:count])
    blocks = np.flatnonzero(is_block[:count])
    paragraphs = len(chosen)
    capped = paragraphs > max_kept
    if capped:
        last = min(tail, max_kept)
        head = chosen[: paragraphs - last]
        longest = np.sort(np.argsort(-unit_words[head], kind="mergesort")[: max_kept - last])
        kept = np.empty(max_kept, dtype=np.int64)
        kept[: len(longest)] = head[longest]
        kept[len(longest):] = chosen[paragraphs - last:]
        chosen = kept
    elif len(blocks):
        room = min(max_kept - paragraphs, len(blocks))
        taken = np.argsort(-unit_words[blocks], kind="mergesort")[:room]
        chosen = np.sort(np.concatenate((chosen, blocks[taken])))
    out = np.empty(len(chosen), dtype=np.uint64)
    spans = np.empty((len(chosen), 2), dtype=np.int64)
    short = np.zeros(len(chosen), dtype=np.bool_)
    mask = np.uint64((1 << value_bits) - 1)
    values = len(a)
    keys, bits, reach, has_zero = common
    is_common = np.empty(n, dtype=np.bool_)  # asked of the kept units' tokens alone, once each (units do not overlap)
    for j in range(len(chosen)):
        u = chosen[j]
        r, last_run = unit_first[u], unit_last[u]
        first = run_start[r]
        tokens = run_start[last_run] + run_len[last_run] - first
        for i in range(first, first + tokens):
            is_common[i] = in_table(keys, bits, reach, has_zero, token_hashes[i])
        every = True  # no pair left once those skipped are: read them all
        for i in range(first, first + tokens - 1):
            if not (is_common[i] and is_common[i + 1]):
                every = False
                break
        words = min(unit_words[u], max_words)
        short[j] = short_tokens > 0 and words < min_words
        packed = np.uint64(words) << np.uint64(values * value_bits)
        # a skipped pair's value gets the top bit, above every value (24 bits) a kept pair has, so it is
        # never the minimum: no branch on whether a pair is skipped (a coin toss on real text, each
        # one mispredicted cost more than the pair's arithmetic)
        skipped_bit = np.uint64(0) if every else np.uint64(1 << 63)
        for k in range(values):
            # one function at a time, its minimum in a register (a minimum per function in an array
            # was a store and a load per pair and function: 2.3x slower)
            ak, bk = a[k], b[k]
            lowest = np.uint64(0xFFFFFFFFFFFFFFFF)
            for i in range(first, first + tokens - 1):
                skipped = np.uint64(is_common[i] & is_common[i + 1]) * skipped_bit
                lowest = min(lowest, ((ak * pairs[i] + bk) >> np.uint64(40)) | skipped)
            packed |= (lowest & mask) << np.uint64(k * value_bits)
        out[j] = packed
        end = token_ends[first + tokens - 1]
        while end < size and code_point(text, width, end) != 10:
            end += 1
        spans[j, 0], spans[j, 1] = run_line[r], end
    numbers = line_numbers(text, width, token_starts, token_ends, number_hashes, spans, digits, count_shift, most,
                           mix)
    for j in range(len(chosen)):
        if short[j]:
            numbers[j] = short_numbered if numbers[j] >> count_shift > 0 else short_plain
    return out, spans, capped, numbers, short


@numba.njit(cache=True)
def _outside_held(pairs: np.ndarray, unheld: np.ndarray, distinct: float) -> float:
    """A page's pairs outside its held paragraphs, of its `distinct` pairs (`paragraphs_held`).

    `pairs`: each paragraph's; `unheld`: which are not held. Its pairs are `distinct`, or, where its
    paragraphs hold more (repeated phrases), its paragraphs' pairs scaled to `distinct`. 0 where
    neither counts a pair (`distinct` not known, every block unheld: `paragraphs_held`)."""
    every, outside = 0, 0
    for i in range(pairs.shape[0]):
        every += pairs[i]
        if unheld[i]:
            outside += pairs[i]
    total = max(distinct, float(every))
    if total <= 0.0:
        return 0.0
    return (total - float(every) + float(outside)) * distinct / total


@numba.njit(cache=True)
def paragraphs_held(data: np.ndarray, starts: np.ndarray, ends: np.ndarray, width: int, mine: np.ndarray,
                    mine_blocks: np.ndarray, own: float, sizes: np.ndarray, agreeing: int,
                    block: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`new_text.outside_held_paragraphs` and `held_in_paragraphs` of the encoded word-pair records in `data`.

    Record r lies at `starts[r]`:`ends[r]`: `width` bytes, then its paragraph sketch (a byte of count,
    high bit: capped; 6 bytes each, little-endian). A paragraph's pairs are read as its words less
    one: exact where its words are its tokens, more where its word-equivalents exceed them (long
    words: `paragraph_rows.letter_units`), and scaled to the page's pairs where they add up to more
    (`_outside_held`). A paragraph of the page (`mine`) is held when one of the record's agrees with
    it in `agreeing` of its 4 10-bit values, k-th with k-th. Blocks of short lines (`mine_blocks`; a
    record's: the paragraphs whose numbers byte, after the rows, is over 0 and under `block`:
    `paragraph_rows.blocks_of`) are held so by a block: a list the other shows line for line is held
    text, as a paragraph is (rules version 27). A block not held is read as no paragraph: its pairs are
    outside paragraphs, as before blocks were sketched, so a block moves a bound only down. Returns, for
    each record with a whole sketch (NaN, NaN, 0 for the others, and for a record cut short): the
    page's pairs outside its held paragraphs and not shown before, the record's outside its
    paragraphs that the page holds (of `sizes[r]`), and the page's pairs in its held paragraphs or
    shown before, taken from `own`."""
    count = starts.shape[0]
    n = mine.shape[0]
    mine_out, their_out, held_in = np.full(count, np.nan), np.full(count, np.nan), np.zeros(count)
    mine_values = np.empty((n, 4), dtype=np.int64)
    mine_pairs = np.empty(n, dtype=np.int64)
    mine_shown = np.empty(n, dtype=np.bool_)
    for i in range(n):
        for k in range(4):
            mine_values[i, k] = (mine[i] >> np.uint64(10 * k)) & np.uint64(1023)
        mine_pairs[i] = ((mine[i] >> np.uint64(40)) & np.uint64(127)) - 1
        mine_shown[i] = (mine[i] & np.uint64(1 << 47)) != 0
    held_row = np.empty(n, dtype=np.bool_)
    unheld = np.empty(n, dtype=np.bool_)
    mine_counted = np.empty(n, dtype=np.int64)
    for r in range(count):
        start = starts[r] + width
        if ends[r] <= start:
            continue
        m = data[start] & 0x7F
        if m == 0 or ends[r] < start + 1 + 6 * m:  # none, or a record cut short: read as no sketch
            continue
        theirs = np.empty((m, 4), dtype=np.int64)
        their_pairs = np.empty(m, dtype=np.int64)
        their_blocks = np.zeros(m, dtype=np.bool_)
        held_col = np.zeros(m, dtype=np.bool_)
        numbered = ends[r] >= start + 1 + 7 * m  # each paragraph's numbers byte after the rows
        for j in range(m):
            value = sketch_row(data, start + 1 + 6 * j)
            for k in range(4):
                theirs[j, k] = (value >> (10 * k)) & 1023
            their_pairs[j] = ((value >> 40) & 127) - 1
            their_blocks[j] = numbered and 0 < data[start + 1 + 6 * m + j] < block
        for i in range(n):
            held_row[i] = False
            for j in range(m):
                if their_blocks[j] != mine_blocks[i]:  # a paragraph by a paragraph, a block by a block
                    continue
                equal = 0
                for k in range(4):
                    if mine_values[i, k] == theirs[j, k]:
                        equal += 1
                if equal >= agreeing:
                    held_row[i] = True
                    held_col[j] = True
        for i in range(n):  # a block not held: no paragraph, its pairs outside them
            mine_counted[i] = 0 if mine_blocks[i] and not held_row[i] else mine_pairs[i]
        for j in range(m):
            if their_blocks[j] and not held_col[j]:
                their_pairs[j] = 0
        for i in range(n):
            unheld[i] = not (held_row[i] or mine_shown[i])
        mine_out[r] = _outside_held(mine_counted, unheld, own)
        their_out[r] = _outside_held(their_pairs, ~held_col, sizes[r])
        for i in range(n):
            unheld[i] = (not held_row[i]) or mine_shown[i]
        held_in[r] = own - _outside_held(mine_counted, unheld, own)
    return mine_out, their_out, held_in


@numba.njit(cache=True)
def line_numbers(text: np.ndarray, width: int, token_starts: np.ndarray, token_ends: np.ndarray,
                 token_hashes: np.ndarray, spans: np.ndarray, digits: np.ndarray, count_shift: int, most: int,
                 mix: np.uint64) -> np.ndarray:
    """`paragraph_rows.numbers_bytes`: a byte a line at `spans` of its numbers (0: none), uint8[n].

    A number: tokens starting with a `digits` code point, one separator (. , :) apart ("3.000", "3:38,72").
    How many (at most `most`) above `count_shift`, under it the top bits of the wrapping sum of
    their tokens' hashes, each times `mix` and an odd number of its number's rank in the line.
    `text`: the code points' bytes, `width` a code point (`code_point`)."""
    n = spans.shape[0]
    out = np.zeros(n, dtype=np.uint8)
    line, count, total, top, after = 0, 0, np.uint64(0), np.uint64(64 - count_shift), -2
    for t in range(len(token_starts)):
        at = token_starts[t]
        while line < n and at >= spans[line, 1]:
            if count:
                out[line] = np.uint8((min(count, most) << count_shift) | np.int64(total >> top))
            line, count, total = line + 1, 0, np.uint64(0)
        if line >= n:
            break
        point = code_point(text, width, at)
        if at < spans[line, 0] or point >= 0x10000 or not digits[point]:
            continue
        sign = code_point(text, width, at - 1) if at >= 1 else 0
        if not (count and at == after + 1 and (sign == 46 or sign == 44 or sign == 58)):
            count += 1  # a number of its own, else the rest of the one before
        total += token_hashes[t] * np.uint64(2 * count - 1) * mix
        after = token_ends[t]
    if line < n and count:
        out[line] = np.uint8((min(count, most) << count_shift) | np.int64(total >> top))
    return out


@numba.njit(cache=True)
def edited_in_place(values: np.ndarray, words: np.ndarray, blocks: np.ndarray, shown: np.ndarray, own: float,
                    their_values: np.ndarray, their_words: np.ndarray, their_blocks: np.ndarray,
                    offsets: np.ndarray, out: np.ndarray, agreeing: int, in_place: int, longest: int,
                    edited_new: float) -> np.ndarray:
    """`new_text._edited_in_place` of several candidates in one pass: their bounds `out`, lowered where it lowers them.

    The page's paragraphs: their 4 values (`paragraph_values`), words, blocks and lines shown before;
    candidate r's: rows `offsets[r]`:`offsets[r + 1]` of `their_values`, `their_words` and
    `their_blocks`. The same tests and float64 operations as the numpy reading it replaces
    (`_equal_values`, `_sole_slot`, `_outside_held`): a paragraph held agrees with one of the
    candidate's of its kind in `agreeing` values; among the paragraphs (blocks left out), one with
    no counterpart whose place holds exactly one of the other's, no other's counterpart, sharing
    `in_place` values and as many words (under `longest`), is edited in place and counts
    `edited_new` of its pairs outside. Returns a copy of `out`."""
    n = values.shape[0]
    result = out.copy()
    counted = np.empty(n, dtype=np.int64)
    unheld = np.empty(n, dtype=np.bool_)
    held = np.empty(n, dtype=np.bool_)
    mine_rows = np.flatnonzero(~blocks)
    n_in = mine_rows.shape[0]
    counterpart = np.empty(n_in, dtype=np.int64)
    best = np.empty(n_in, dtype=np.int64)
    afters = np.empty(n_in, dtype=np.int64)
    edited = np.empty(n_in, dtype=np.bool_)
    for r in range(offsets.shape[0] - 1):
        first, last = offsets[r], offsets[r + 1]
        m = last - first
        if m == 0 or not np.isfinite(out[r]):
            continue
        their_rows = np.flatnonzero(~their_blocks[first:last]) + first
        m_in = their_rows.shape[0]
        if n_in == 0 or m_in == 0:
            continue
        for i in range(n):  # held: agreeing with one of its kind (a paragraph by a paragraph, a block by a block)
            held[i] = False
            for j in range(first, last):
                if their_blocks[j] != blocks[i]:
                    continue
                equal = 0
                for k in range(4):
                    equal += values[i, k] == their_values[j, k]
                if equal >= agreeing:
                    held[i] = True
                    break
        taken = np.zeros(m_in, dtype=np.bool_)
        for a in range(n_in):  # each paragraph's counterpart among the other's paragraphs: the first sharing most
            i = mine_rows[a]
            counterpart[a], best[a] = -1, -1
            for b in range(m_in):
                j = their_rows[b]
                equal = 0
                for k in range(4):
                    equal += values[i, k] == their_values[j, k]
                if equal >= agreeing:
                    taken[b] = True
                    if equal > best[a]:
                        counterpart[a], best[a] = b, equal
        after = m_in  # the first counterpart after each paragraph (m_in: none), from the last one back
        for a in range(n_in - 1, -1, -1):
            afters[a] = after
            if 0 <= counterpart[a] < after:
                after = counterpart[a]
        any_edited = False
        before = -1  # the last counterpart before it (-1: none)
        for a in range(n_in):
            slot = before + 1 if counterpart[a] < 0 and afters[a] - before == 2 else -1
            if slot >= 0 and taken[slot]:
                slot = -1
            edited[a] = False
            if slot >= 0 and not held[mine_rows[a]]:
                i, j = mine_rows[a], their_rows[slot]
                equal = 0
                for k in range(4):
                    equal += values[i, k] == their_values[j, k]
                edited[a] = equal >= in_place and words[i] == their_words[j] and words[i] < longest
                any_edited = any_edited or edited[a]
            if counterpart[a] > before:
                before = counterpart[a]
        if not any_edited:
            continue
        for i in range(n):
            counted[i] = 0 if blocks[i] and not held[i] else words[i] - 1
            unheld[i] = not (held[i] or shown[i])
        outside = _outside_held(counted, unheld, own)
        for a in range(n_in):
            if edited[a]:
                unheld[mine_rows[a]] = False
        inside = _outside_held(counted, unheld, own)
        bound = inside + edited_new * (outside - inside)
        if bound < result[r]:
            result[r] = bound
    return result
