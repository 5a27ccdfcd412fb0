"""Compiled inner loops of MinHash, SimHash and A12 (numba, cached on disk after the first run).

Each is a plain loop over arrays that numpy would do in several passes with temporaries:
the MinHash minimum over permutations x shingles, SimHash's weighted bit vote, the LSH band
hashes, A12's sentence keys and the methods' similarities to many stored records at once. They
compute exactly what the numpy formulas in the methods' docstrings say. The word-pairs method's
loops: `wordpair_kernels.py`.
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
def minhash_similarities(rows: np.ndarray, sizes: np.ndarray, values: np.ndarray, size: int, threshold: float,
                         collision: float, containment: float, min_shingles: int) -> np.ndarray:
    """MinHashMethod.similarity of `values` (set size `size`) with each row (its set size in `sizes`), NaN for None.

    The same float64 operations in the same order, one pass."""
    out = np.empty(rows.shape[0])
    for r in range(rows.shape[0]):
        out[r] = minhash_similarity_of(rows[r], int(sizes[r]), values, size, threshold, collision, containment,
                                       min_shingles)
    return out


@numba.njit(cache=True)
def minhash_similarity_of(row: np.ndarray, other: int, values: np.ndarray, size: int, threshold: float,
                          collision: float, containment: float, min_shingles: int) -> float:
    """`minhash_similarities` of one row (its set size `other`): the estimate, or NaN for None.

    One place for the float64 operations that the engine's test and the candidate filter
    (`verdict.prefilter`) must share."""
    n = row.shape[0]
    same = 0
    for i in range(n):
        same += row[i] == values[i]
    estimate = max(0.0, (same / n - collision) / (1.0 - collision))
    if estimate >= threshold:
        return estimate
    if containment < 1.0:
        smaller = min(other, size)
        if smaller >= min_shingles and smaller > 0:
            if min(1.0, estimate * (size + other) / ((1.0 + estimate) * smaller)) >= containment:
                return estimate
    return np.nan


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
