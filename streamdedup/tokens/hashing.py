"""Token hashing: each token is hashed once from its code points, shingles derived from the token hashes.

The arithmetic runs in compiled loops where numpy would need many passes; what the other stages do
with arrays of hashes (distinct values, membership, mixing) is in `streamdedup/hash_arrays.py`.

Per-token Python work is the bottleneck of every Python near-duplicate detector, so shingle
hashes are *derived* from token hashes with wrapping uint64 arithmetic instead of re-hashing
joined strings, and a final avalanche (splitmix64's finaliser) makes them uniform.
"""

from __future__ import annotations

import numpy as np

from streamdedup.jit import numba


def code_points(text: str) -> np.ndarray:
    """The text's code points.

    Uint8 when it is ASCII (CPython knows that without looking), else uint32 (lone surrogates kept,
    as everywhere else). Hashes do not depend on the width."""
    if text.isascii():
        return np.frombuffer(text.encode("ascii"), dtype=np.uint8)
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)


@numba.njit(cache=True, inline="always")
def mix_one(z: np.uint64) -> np.uint64:
    """splitmix64's finaliser on one value (the same function as `hash_arrays.mix64`)."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


TOKEN_SEED = 0x27D4EB2F165667C5  # a token's hash starts here, absorbs each code point, then ends


@numba.njit(cache=True, inline="always")
def hash_step(h: np.uint64, code_point: np.uint64) -> np.uint64:
    """Absorb one code point: multiply-xorshift."""
    h = (h ^ code_point) * np.uint64(0x9E3779B97F4A7C15)
    return h ^ (h >> np.uint64(29))


@numba.njit(cache=True, inline="always")
def hash_end(h: np.uint64, length: int) -> np.uint64:
    """End a token's hash: its length added, then splitmix64's finaliser."""
    return mix_one(h + np.uint64(length))


@numba.njit(cache=True, inline="always")
def hash_span(cps: np.ndarray, start: int, end: int) -> np.uint64:
    """A token's hash from its code points [start, end)."""
    h = np.uint64(TOKEN_SEED)
    for i in range(start, end):
        h = hash_step(h, np.uint64(cps[i]))
    return hash_end(h, end - start)


@numba.njit(cache=True)
def hash_spans(cps: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Hashes of the code point spans [starts[i], ends[i])."""
    out = np.empty(len(starts), dtype=np.uint64)
    for i in range(len(starts)):
        out[i] = hash_span(cps, starts[i], ends[i])
    return out


def hash_tokens(tokens: list[str]) -> np.ndarray:
    """The hash each token has in a `Document`, as uint64."""
    if not tokens:
        return np.empty(0, dtype=np.uint64)
    lengths = np.fromiter(map(len, tokens), dtype=np.int64, count=len(tokens))
    ends = np.cumsum(lengths)
    return hash_spans(code_points("".join(tokens)), ends - lengths, ends)


@numba.njit(cache=True)
def shingle_hashes(token_hashes: np.ndarray, k: int) -> np.ndarray:
    """Hashes of all contiguous k-token windows (one window of all tokens if fewer than k).

    h = mix(((t0 * M + t1) * M + t2) ...) with wrapping uint64 arithmetic: order matters, so
    'a b' and 'b a' differ.
    """
    n = len(token_hashes)
    width = min(k, n)
    windows = n - width + 1 if n else 0
    values = np.empty(windows, dtype=np.uint64)
    for i in range(windows):
        acc = token_hashes[i]
        for j in range(i + 1, i + width):
            acc = acc * np.uint64(0x9E3779B97F4A7C15) + token_hashes[j]
        values[i] = mix_one(acc)
    return values
