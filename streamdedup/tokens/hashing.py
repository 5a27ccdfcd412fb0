"""Vectorised hashing: each token is hashed once (xxh3), everything after is numpy arithmetic.

Per-token Python work is the bottleneck of every Python near-duplicate detector, so shingle
hashes are *derived* from token hashes with wrapping uint64 arithmetic instead of re-hashing
joined strings, and a final avalanche (splitmix64's finaliser) makes them uniform.
"""

from __future__ import annotations

import numpy as np
import xxhash

_U64 = np.uint64
_SHINGLE_MULT = _U64(0x9E3779B97F4A7C15)


_TOKEN_CACHE: dict[str, int] = {}
_TOKEN_CACHE_LIMIT = 2_000_000


def _hash_token(token: str) -> int:
    value = xxhash.xxh3_64_intdigest(token.encode("utf-8", "surrogatepass"))
    if len(_TOKEN_CACHE) >= _TOKEN_CACHE_LIMIT:
        _TOKEN_CACHE.clear()
    _TOKEN_CACHE[token] = value
    return value


def hash_tokens(tokens: list[str]) -> np.ndarray:
    """xxh3-64 of each token's UTF-8, as a uint64 array. Words follow Zipf's law, so most are
    looked up in a bounded cache instead of encoded and hashed again."""
    cache = _TOKEN_CACHE
    return np.fromiter([cache[t] if t in cache else _hash_token(t) for t in tokens], dtype=np.uint64,
                       count=len(tokens))


def mix64(values: np.ndarray) -> np.ndarray:
    """splitmix64 finaliser: a bijective avalanche on uint64 arrays."""
    z = values.astype(np.uint64, copy=True)
    z ^= z >> _U64(30)
    z *= _U64(0xBF58476D1CE4E5B9)
    z ^= z >> _U64(27)
    z *= _U64(0x94D049BB133111EB)
    z ^= z >> _U64(31)
    return z


def shingle_hashes(token_hashes: np.ndarray, k: int) -> np.ndarray:
    """Hashes of all contiguous k-token windows (one window of all tokens if fewer than k).

    h = mix(((t0 * M + t1) * M + t2) ...), computed for all windows at once: order matters, so
    'a b' and 'b a' differ.
    """
    n = len(token_hashes)
    if n == 0:
        return np.empty(0, dtype=np.uint64)
    width = min(k, n)
    windows = n - width + 1
    acc = token_hashes[:windows].copy()
    for offset in range(1, width):
        acc *= _SHINGLE_MULT
        acc += token_hashes[offset: offset + windows]
    return mix64(acc)


def combine(values: np.ndarray) -> int:
    """One 64-bit hash of a sequence of hashes (e.g. a sentence from its token hashes)."""
    return xxhash.xxh3_64_intdigest(np.ascontiguousarray(values, dtype=np.uint64).tobytes())
