"""Compiled inner loops of the default methods (numba, cached on disk after the first run).

Each is a plain loop over arrays that numpy would do in several passes with temporaries:
the MinHash minimum over permutations x shingles, SimHash's weighted bit vote and the LSH band
hashes. They compute exactly what the numpy formulas in the methods' docstrings say.
"""

from __future__ import annotations

import numpy as np

from streamdedup.jit import numba


@numba.njit(cache=True)
def minhash_min(shingles: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """min over x of (a[i]*x + b[i]) >> 32 (wrapping uint64), for each permutation i: uint32.

    Shingles outside, permutations inside. The shift comes before the minimum (it is monotone,
    so the result is the same): AVX2 has an unsigned 32-bit minimum but no 64-bit one, and with
    it the inner loop vectorises (3.3x faster on a 2-core EPYC without AVX-512). Four shingles a
    pass over the permutations: each permutation's minimum, multiplier and offset are loaded and
    stored once for four products, not once for each (the same minima; 1.2-1.4x faster at 600
    shingles and 128 or 256 permutations on a 2-core Xeon with AVX-512)."""
    count = len(a)
    lowest = np.full(count, np.uint32(0xFFFFFFFF))
    shift = np.uint64(32)
    done = len(shingles) - len(shingles) % 4
    for j in range(0, done, 4):
        x0, x1, x2, x3 = shingles[j], shingles[j + 1], shingles[j + 2], shingles[j + 3]
        for i in range(count):
            ai, bi = a[i], b[i]
            first = min(np.uint32((ai * x0 + bi) >> shift), np.uint32((ai * x1 + bi) >> shift))
            second = min(np.uint32((ai * x2 + bi) >> shift), np.uint32((ai * x3 + bi) >> shift))
            lowest[i] = min(lowest[i], min(first, second))
    for j in range(done, len(shingles)):
        x = shingles[j]
        for i in range(count):
            lowest[i] = min(lowest[i], np.uint32((a[i] * x + b[i]) >> shift))
    return lowest


@numba.njit(cache=True)
def weighted_sign_bits(features: np.ndarray, weights: np.ndarray) -> np.uint64:
    """Bit b is set when the features that have b set carry more than half the total weight."""
    votes = np.zeros(64, dtype=np.int64)
    total = np.int64(0)
    for j in range(len(features)):
        f, w = features[j], np.int64(weights[j])
        total += w
        for bit in range(64):  # branch-free, so the compiler vectorises it
            votes[bit] += w * np.int64((f >> np.uint64(bit)) & np.uint64(1))
    result = np.uint64(0)
    for bit in range(64):
        if votes[bit] * 2 > total:
            result |= np.uint64(1) << np.uint64(bit)
    return result


@numba.njit(cache=True)
def sign_bits(features: np.ndarray) -> np.uint64:
    """`weighted_sign_bits` with every weight 1, for fewer than 2^31 features.

    32-bit counts without the multiply, twice as many lanes a vector (1.5x faster on 600 features)."""
    votes = np.zeros(64, dtype=np.int32)
    for j in range(len(features)):
        f = features[j]
        for bit in range(64):  # branch-free, so the compiler vectorises it
            votes[bit] += np.int32((f >> np.uint64(bit)) & np.uint64(1))
    total = np.int64(len(features))
    result = np.uint64(0)
    for bit in range(64):
        if np.int64(votes[bit]) * 2 > total:
            result |= np.uint64(1) << np.uint64(bit)
    return result


@numba.njit(cache=True)
def _absorb(h: np.uint64, value: np.uint64) -> np.uint64:
    """One splitmix-style step of a band's hash: `value` absorbed into `h`."""
    z = (h ^ value) * np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@numba.njit(cache=True)
def band_keys(values: np.ndarray, checks: np.ndarray, bands: int, rows: int) -> np.ndarray:
    """The LSH keys of a MinHash, back to back.

    Per band one byte (the band number) and a little-endian 64-bit hash of its rows (splitmix-style
    absorption of each value), then of its check byte when `checks` has one a band (`band_checks`;
    empty: the keys of before checks)."""
    out = np.empty(bands * 9, dtype=np.uint8)
    checked = len(checks) == bands
    for band in range(bands):
        h = np.uint64(0x243F6A8885A308D3) ^ np.uint64(band)
        for r in range(band * rows, (band + 1) * rows):
            h = _absorb(h, np.uint64(values[r]))
        if checked:  # set apart from any value by its bit 8
            h = _absorb(h, np.uint64(checks[band]) | np.uint64(0x100))
        out[band * 9] = band
        for byte in range(8):
            out[band * 9 + 1 + byte] = (h >> np.uint64(8 * byte)) & np.uint64(0xFF)
    return out


@numba.njit(cache=True)
def band_keys_many(values: np.ndarray, checks: np.ndarray, bands: int, rows: int) -> np.ndarray:
    """The `band_keys` of each row of `values` with that row of `checks`.

    `band_keys` of each row of `values` (one MinHash a row) with that row of `checks` (or
    none: `checks` of 0 columns), one row of keys each."""
    out = np.empty((values.shape[0], bands * 9), dtype=np.uint8)
    for i in range(values.shape[0]):
        out[i] = band_keys(values[i], checks[i], bands, rows)
    return out


@numba.njit(cache=True)
def band_checks(minima: np.ndarray, bands: int, rows: int) -> np.ndarray:
    """Per band, the top byte of `band_keys`' hash of its rows' *whole* 32-bit minima.

    Kept beside values cut to 8 bits, it makes a band key 40 bits of its rows' minima, not 32."""
    keys = band_keys(minima, np.empty(0, dtype=np.uint8), bands, rows)
    out = np.empty(bands, dtype=np.uint8)
    for band in range(bands):
        out[band] = keys[band * 9 + 8]
    return out


@numba.njit(cache=True)
def distinct_sentence_keys(data: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A12's index keys of encoded signatures back to back (`A12Method.encode`, the i-th ends at `ends[i]`).

    Each one's sentence hashes, a repeated one once (first place kept), as uint64 (little-endian
    bytes: the keys), and how many each signature has."""
    keys = np.empty(len(data) // 8, dtype=np.uint64)
    counts = np.zeros(len(ends), dtype=np.int64)
    k = 0
    start = 0
    for i in range(len(ends)):
        n_ss = data[start + 8]
        first = k
        for j in range(n_ss):
            at = start + 10 + 8 * j
            value = np.uint64(0)
            for b in range(8):
                value |= np.uint64(data[at + b]) << np.uint64(8 * b)
            seen = False
            for m in range(first, k):
                if keys[m] == value:
                    seen = True
                    break
            if not seen:
                keys[k] = value
                k += 1
        counts[i] = k - first
        start = ends[i]
    return keys[:k].astype("<u8"), counts


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
                        row_bytes: int, length_shift: int) -> tuple[np.ndarray, np.ndarray]:
    """`paragraph_keys` of encoded signatures back to back (the i-th ends at `ends[i]`).

    Each one's sketch follows `width` bytes: a count byte, then `row_bytes` little-endian bytes a
    paragraph. The keys' values as uint64 (little-endian bytes: the keys), and how many each
    signature has."""
    keys = np.empty(len(ends) * max(count, 0), dtype=np.uint64)
    counts = np.zeros(len(ends), dtype=np.int64)
    k = 0
    start = 0
    for i in range(len(ends)):
        end = ends[i]
        if end - start > width and count > 0:
            n = data[start + width] & 0x7F
            rows = np.zeros(n, dtype=np.uint64)
            for j in range(n):
                at = start + width + 1 + row_bytes * j
                for b in range(row_bytes):
                    rows[j] |= np.uint64(data[at + b]) << np.uint64(8 * b)
            found = paragraph_keys(rows, count, min_words, length_shift)
            keys[k:k + len(found)] = found
            k += len(found)
            counts[i] = len(found)
        start = end
    return keys[:k].astype("<u8"), counts


@numba.njit(cache=True)
def longest_distinct(lengths: np.ndarray, hashes: np.ndarray, count: int) -> np.ndarray:
    """Hashes of the `count` longest distinct (length, hash) pairs, ties by hash.

    One pass that keeps a sorted top list (most words are shorter than its last and rejected at
    once)."""
    top_len = np.empty(count, dtype=np.int64)
    top_hash = np.empty(count, dtype=np.uint64)
    m = 0
    for t in range(len(lengths)):
        length, h = lengths[t], hashes[t]
        if m == count and (length < top_len[m - 1] or (length == top_len[m - 1] and h >= top_hash[m - 1])):
            continue
        pos = m
        duplicate = False
        for j in range(m):
            if top_len[j] == length and top_hash[j] == h:
                duplicate = True
                break
            if length > top_len[j] or (length == top_len[j] and h < top_hash[j]):
                pos = j
                break
        if duplicate:
            continue
        last = min(m, count - 1)
        for j in range(last, pos, -1):
            top_len[j], top_hash[j] = top_len[j - 1], top_hash[j - 1]
        top_len[pos], top_hash[pos] = length, h
        m = min(m + 1, count)
    return top_hash[:m].copy()


@numba.njit(cache=True)
def words_and_longest(starts: np.ndarray, ends: np.ndarray, hashes: np.ndarray, is_cjk: np.ndarray, min_letters: int,
                      count: int) -> tuple[int, np.ndarray]:
    """A12's words of a page: its count of words and the hashes of its `count` longest distinct tokens.

    A word: a token of at least `min_letters` code points, or one Han/kana character; the longest
    by `longest_distinct` of the tokens' lengths and hashes. One call for what took four numpy
    passes and two calls (~4 µs a page, most of it their overheads)."""
    lengths = ends - starts
    words = 0
    for t in range(len(lengths)):
        if lengths[t] >= min_letters or is_cjk[t]:
            words += 1
    return words, longest_distinct(lengths, hashes, count)


@numba.njit(cache=True)
def longest_spans(bounds: np.ndarray, count: int) -> np.ndarray:
    """Indices of the spans [bounds[i], bounds[i+1]) at least as long as the count-th longest.

    The only ones that can rank among the `count` longest, whatever breaks the ties."""
    spans = len(bounds) - 1
    top = np.zeros(count, dtype=np.int64)  # the longest sizes so far, descending
    for i in range(spans):
        size = bounds[i + 1] - bounds[i]
        j = count
        while j > 0 and size > top[j - 1]:
            j -= 1
        if j < count:
            top[j + 1:] = top[j:count - 1].copy()
            top[j] = size
    cutoff = top[count - 1] if spans >= count else 0
    chosen = np.empty(spans, dtype=np.int64)
    m = 0
    for i in range(spans):
        if bounds[i + 1] - bounds[i] >= cutoff:
            chosen[m] = i
            m += 1
    return chosen[:m].copy()


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
        jaccard = min(1.0, max(0.0, (1.0 - unequal / values - collision) / (1.0 - collision)))
        shared = jaccard * (size + own_size) / (1.0 + jaccard)
        absent_mine[r] = min(1.0, max(0.0, 1.0 - shared / own_size))
        absent_theirs[r] = min(1.0, max(0.0, 1.0 - shared / max(size, 1.0)))
        sizes[r] = size
        start = ends[r]
    return absent_mine, absent_theirs, sizes


@numba.njit(cache=True)
def minhash_similarities(rows: np.ndarray, sizes: np.ndarray, values: np.ndarray, size: int, threshold: float,
                         collision: float, containment: float, min_shingles: int) -> np.ndarray:
    """MinHashMethod.similarity of `values` (set size `size`) with each row (its set size in `sizes`), NaN for None.

    The same float64 operations in the same order, one pass."""
    out = np.empty(rows.shape[0])
    n = rows.shape[1]
    for r in range(rows.shape[0]):
        same = 0
        for i in range(n):
            same += rows[r, i] == values[i]
        estimate = max(0.0, (same / n - collision) / (1.0 - collision))
        out[r] = np.nan
        if estimate >= threshold:
            out[r] = estimate
        elif containment < 1.0:
            other = int(sizes[r])
            smaller = min(other, size)
            if smaller >= min_shingles and smaller > 0:
                if min(1.0, estimate * (size + other) / ((1.0 + estimate) * smaller)) >= containment:
                    out[r] = estimate
    return out


@numba.njit(cache=True)
def a12_similarities(lengths: np.ndarray, sentences: np.ndarray, ss: np.ndarray, ws: np.ndarray, length: int,
                     count: int, my_ss: np.ndarray, my_ws: np.ndarray, length_ratio: float, count_ratio: float,
                     min_word_matches: int) -> np.ndarray:
    """The A12Method.similarity of one signature with each row of one layout.

    A12Method.similarity of one signature (`length`, `count` sentences, `my_ss`, `my_ws`) with
    each row (signatures of one layout: as many sentences and words each), NaN for None; the same
    tests and float64 operations. Words are counted as sets, as `similarity` counts them."""
    out = np.full(lengths.shape[0], np.nan)
    needed = min(min_word_matches, len(my_ws), ws.shape[1])
    for r in range(lengths.shape[0]):
        other, other_count = int(lengths[r]), int(sentences[r])
        if max(length, other) / max(1, min(length, other)) > length_ratio:
            continue
        if max(count, other_count) / max(1, min(count, other_count)) > count_ratio:
            continue
        common = 0
        for i in range(ws.shape[1]):
            seen = False
            for j in range(i):
                seen |= ws[r, j] == ws[r, i]
            if not seen:
                for w in my_ws:
                    if w == ws[r, i]:
                        common += 1
                        break
        if common < needed:
            continue
        same = ss[r, 0] == my_ss[0]
        if not same and count > 5 and other_count > 5 and len(my_ss) == 3 and ss.shape[1] == 3:
            a, b, c, d = my_ss[1], my_ss[2], ss[r, 1], ss[r, 2]
            same = (c == a or c == b) and (d == a or d == b) and (a == c or a == d) and (b == c or b == d)
        if same:
            out[r] = min(length, other) / max(length, other)
    return out


@numba.njit(cache=True)
def paragraph_sketch(is_newline: np.ndarray, token_starts: np.ndarray, token_ends: np.ndarray, pairs: np.ndarray,
                     common: np.ndarray, letter_units: np.ndarray, units_per_word: int, a: np.ndarray, b: np.ndarray,
                     min_words: int, max_kept: int, tail: int, value_bits: int,
                     max_words: int) -> tuple[np.ndarray, np.ndarray, bool]:
    """`WordPairsMethod._paragraphs`' sketch in one pass: each kept line's packed values, its span, capped.

    A line's words are its word-equivalents (`wordpairs.letter_units`): the larger of its tokens
    and its tokens' `letter_units` over `units_per_word`. A line (text between newlines) of at least
    `min_words` words and two tokens (offsets in code points) is a paragraph; only the text between
    tokens is read for newlines. Past `max_kept` paragraphs the longest are kept (ties: the
    earlier), and the last `tail`, in text order. Of each kept one, for each of the len(a)
    functions, the least (a*p + b) >> 40 (wrapping uint64) over its pairs `pairs` (pair i: tokens i
    and i + 1) but those of two `common` tokens (over all where every pair is such), its low
    `value_bits` bits, packed the first lowest, then its words
    (at most `max_words`) above them; and the line's [start, end) in the text. `is_newline`: whether
    each of the text's code points is a newline (an array, one type for any text: a str argument is
    typed in Python, ~2 µs a call, and its code points are uint8 or uint32, two compiled versions
    to load)."""
    n, size = len(token_starts), len(is_newline)
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
            if is_newline[i]:
                line_start = i + 1
                new_line = True
        gap = token_ends[t]
        if new_line:
            run_start[runs], run_len[runs], run_line[runs] = t, 0, line_start
            runs += 1
            new_line = False
        run_len[runs - 1] += 1
        run_units[runs - 1] += letter_units[t]
    run_words = np.empty(runs, dtype=np.int64)  # word-equivalents: never fewer than its tokens
    for r in range(runs):
        run_words[r] = max(run_len[r], run_units[r] // units_per_word)
    chosen = np.empty(runs, dtype=np.int64)
    count = 0
    for r in range(runs):
        if run_words[r] >= min_words and run_len[r] >= 2:
            chosen[count] = r
            count += 1
    chosen = chosen[:count]
    capped = count > max_kept
    if capped:
        last = min(tail, max_kept)
        head = chosen[: count - last]
        longest = np.sort(np.argsort(-run_words[head], kind="mergesort")[: max_kept - last])
        kept = np.empty(max_kept, dtype=np.int64)
        kept[: len(longest)] = head[longest]
        kept[len(longest):] = chosen[count - last:]
        chosen = kept
    out = np.empty(len(chosen), dtype=np.uint64)
    spans = np.empty((len(chosen), 2), dtype=np.int64)
    mask = np.uint64((1 << value_bits) - 1)
    values = len(a)
    for j in range(len(chosen)):
        r = chosen[j]
        first, tokens = run_start[r], run_len[r]
        every = True  # no pair left once those skipped are: read them all
        for i in range(first, first + tokens - 1):
            if not (common[i] and common[i + 1]):
                every = False
                break
        packed = np.uint64(min(run_words[r], max_words)) << np.uint64(values * value_bits)
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
                skipped = np.uint64(common[i] & common[i + 1]) * skipped_bit
                lowest = min(lowest, ((ak * pairs[i] + bk) >> np.uint64(40)) | skipped)
            packed |= (lowest & mask) << np.uint64(k * value_bits)
        out[j] = packed
        end = token_ends[first + tokens - 1]
        while end < size and not is_newline[end]:
            end += 1
        spans[j, 0], spans[j, 1] = run_line[r], end
    return out, spans, capped


@numba.njit(cache=True)
def _outside_held(pairs: np.ndarray, unheld: np.ndarray, distinct: float) -> float:
    """A page's pairs outside its held paragraphs, of its `distinct` pairs (`paragraphs_held`).

    `pairs`: each paragraph's; `unheld`: which are not held. Its pairs are `distinct`, or, where its
    paragraphs hold more (repeated phrases), its paragraphs' pairs scaled to `distinct`."""
    every, outside = 0, 0
    for i in range(pairs.shape[0]):
        every += pairs[i]
        if unheld[i]:
            outside += pairs[i]
    total = max(distinct, float(every))
    return (total - float(every) + float(outside)) * distinct / total


@numba.njit(cache=True)
def paragraphs_held(data: np.ndarray, starts: np.ndarray, ends: np.ndarray, width: int, mine: np.ndarray,
                    own: float, sizes: np.ndarray, agreeing: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`new_text.outside_held_paragraphs` and `held_in_paragraphs` of the encoded word-pair records in `data`.

    Record r lies at `starts[r]`:`ends[r]`: `width` bytes, then its paragraph sketch (a byte of count,
    high bit: capped; 6 bytes each, little-endian). A paragraph's pairs are read as its words less
    one: exact where its words are its tokens, more where its word-equivalents exceed them (long
    words: `wordpairs.letter_units`), and scaled to the page's pairs where they add up to more
    (`_outside_held`). A paragraph of the page (`mine`) is held when one
    of the record's agrees with it in `agreeing` of its 4 10-bit values, k-th with k-th. Returns, for
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
    for r in range(count):
        start = starts[r] + width
        if ends[r] <= start:
            continue
        m = data[start] & 0x7F
        if m == 0 or ends[r] < start + 1 + 6 * m:  # none, or a record cut short: read as no sketch
            continue
        theirs = np.empty((m, 4), dtype=np.int64)
        their_pairs = np.empty(m, dtype=np.int64)
        held_col = np.zeros(m, dtype=np.bool_)
        for j in range(m):
            at = start + 1 + 6 * j
            value = 0
            for b in range(6):
                value |= int(data[at + b]) << (8 * b)
            for k in range(4):
                theirs[j, k] = (value >> (10 * k)) & 1023
            their_pairs[j] = ((value >> 40) & 127) - 1
        for i in range(n):
            held_row[i] = False
            for j in range(m):
                equal = 0
                for k in range(4):
                    if mine_values[i, k] == theirs[j, k]:
                        equal += 1
                if equal >= agreeing:
                    held_row[i] = True
                    held_col[j] = True
        for i in range(n):
            unheld[i] = not (held_row[i] or mine_shown[i])
        mine_out[r] = _outside_held(mine_pairs, unheld, own)
        their_out[r] = _outside_held(their_pairs, ~held_col, sizes[r])
        for i in range(n):
            unheld[i] = (not held_row[i]) or mine_shown[i]
        held_in[r] = own - _outside_held(mine_pairs, unheld, own)
    return mine_out, their_out, held_in


@numba.njit(cache=True)
def line_numbers(code_points: np.ndarray, token_starts: np.ndarray, token_ends: np.ndarray, token_hashes: np.ndarray,
                 spans: np.ndarray, digits: np.ndarray, count_shift: int, most: int, mix: np.uint64) -> np.ndarray:
    """`wordpairs.numbers_bytes`: a byte a line at `spans` of its numbers (0: none), uint8[n].

    A number: tokens starting with a `digits` code point, one separator (. , :) apart ("3.000", "3:38,72").
    How many (at most `most`) above `count_shift`, under it the top bits of the wrapping sum of
    their tokens' hashes, each times `mix` and an odd number of its number's rank in the line."""
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
        point = code_points[at]
        if at < spans[line, 0] or point >= 0x10000 or not digits[point]:
            continue
        sign = code_points[at - 1] if at >= 1 else 0
        if not (count and at == after + 1 and (sign == 46 or sign == 44 or sign == 58)):
            count += 1  # a number of its own, else the rest of the one before
        total += token_hashes[t] * np.uint64(2 * count - 1) * mix
        after = token_ends[t]
    if line < n and count:
        out[line] = np.uint8((min(count, most) << count_shift) | np.int64(total >> top))
    return out
