"""Arrays of uint64 hashes: their distinct values and counts, membership tests, mixing and combining.

The primitives every stage uses on hashes, whatever they hash (a page's lines in the template model,
tokens and shingles in the fingerprints): numpy where it is fast, compiled loops where numpy would
need many passes or allocations. Below `clean` and `tokens` in the layers, so both may use them.
"""

from __future__ import annotations

import numpy as np
import xxhash

from streamdedup.jit import numba

_U64 = np.uint64


def mix64(values: np.ndarray) -> np.ndarray:
    """splitmix64 finaliser: a bijective avalanche on uint64 arrays."""
    z = values.astype(np.uint64, copy=True)
    z ^= z >> _U64(30)
    z *= _U64(0xBF58476D1CE4E5B9)
    z ^= z >> _U64(27)
    z *= _U64(0x94D049BB133111EB)
    z ^= z >> _U64(31)
    return z


@numba.njit(cache=True)
def _run_lengths(ordered: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    distinct = np.empty(len(ordered), dtype=np.uint64)
    counts = np.empty(len(ordered), dtype=np.int64)
    m = 0
    for value in ordered:
        if m and value == distinct[m - 1]:
            counts[m - 1] += 1
        else:
            distinct[m] = value
            counts[m] = 1
            m += 1
    return distinct[:m].copy(), counts[:m].copy()


def distinct_counts(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """np.unique(values, return_counts=True) for uint64, without its overhead.

    numpy's sort (SIMD, faster than numba's) and one compiled pass."""
    ordered = np.sort(np.asarray(values, dtype=np.uint64))
    return _run_lengths(ordered)


@numba.njit(cache=True)
def _without_repeats(ordered: np.ndarray) -> np.ndarray:
    """The sorted values each once: compacted in place, the first ones of `ordered` (a view)."""
    m = 0
    for i in range(len(ordered)):
        if m == 0 or ordered[i] != ordered[m - 1]:
            ordered[m] = ordered[i]
            m += 1
    return ordered[:m]


def distinct(values: np.ndarray) -> np.ndarray:
    """np.unique(values) for uint64 (sorted), without its overhead; `distinct_counts` without the counts.

    MinHash asks only the distinct values: one compiled pass writing one array in place, not two new."""
    return _without_repeats(np.sort(np.asarray(values, dtype=np.uint64)))


def first_seen(values: np.ndarray) -> np.ndarray:
    """The distinct values in the order they first occur (uint64): `distinct` unsorted, in one pass.

    For a method that reads them as a set (a MinHash's minima, their count): no sort (~7 µs of 9 for
    600 shingles), a table of a power of two at least twice their count, probed from each value's
    Fibonacci hash on (`_slot`; empty slots hold 0, whether 0 occurs kept apart). The hashes are
    public, so a page can crowd its shingles into one corner of the table (~n^2/2 probes: 3 CPU s for
    500,000 characters): past `PROBES_EACH` probes a value the same answer comes from a sort."""
    found, done = _first_seen(values)
    if done:
        return found
    _, first = np.unique(values, return_index=True)
    return np.asarray(values, dtype=np.uint64)[np.sort(first)]


# probes a value (on average, plus 64) `first_seen`'s table may take: ~1.5 at its load of at most a half
PROBES_EACH = 16


@numba.njit(cache=True)
def _first_seen(values: np.ndarray) -> tuple[np.ndarray, bool]:
    """`first_seen` by its table, and whether it kept within `PROBES_EACH` probes a value (else stopped)."""
    n = len(values)
    budget = PROBES_EACH * n + 64
    bits = 4
    while (1 << bits) < 2 * n:
        bits += 1
    mask = (1 << bits) - 1
    table = np.zeros(1 << bits, dtype=np.uint64)
    out = np.empty(n, dtype=np.uint64)
    m = 0
    zero = False
    for value in values:
        if value == 0:
            if not zero:
                zero = True
                out[m] = value
                m += 1
            continue
        at = _slot(value, bits)
        while True:
            held = table[at]
            if held == value:
                break
            if held == 0:
                table[at] = value
                out[m] = value
                m += 1
                break
            at = (at + 1) & mask
            budget -= 1
            if budget < 0:
                return out[:0], False
    return out[:m], True


def combine(values: np.ndarray) -> int:
    """One 64-bit hash of a sequence of hashes (e.g. a sentence from its token hashes)."""
    return xxhash.xxh3_64_intdigest(np.ascontiguousarray(values, dtype=np.uint64).tobytes())


def in_sorted(ordered: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Whether each of `values` is in `ordered` (sorted, non-empty): bool[len(values)], one `searchsorted`."""
    at = np.searchsorted(ordered, values)
    at[at == len(ordered)] = 0
    return ordered[at] == values


_FIBONACCI = 0x9E3779B97F4A7C15  # 2^64 / golden ratio: a multiply that spreads any uint64 over the high bits


class HashSet:
    """A fixed set of uint64 values for many membership tests: an open-addressing table read without a branch.

    `in_sorted`'s binary search takes ~30 ns a value, a mispredicted branch at most of its ~10
    steps; a table probed until a hit or an empty slot mispredicts about once a value too (~8 ns).
    This table is at most an eighth full, and a lookup reads every slot from the value's own to the
    farthest any member was placed from its own (`_reach`: 3 for the 960 common words), with no
    branch: ~4 ns a value. For a set asked of every token of every page (`stats.common_words`).
    Empty slots hold 0, so whether 0 is a member is kept apart."""

    __slots__ = ("_bits", "_has_zero", "_keys", "_reach")

    def __init__(self, values: np.ndarray) -> None:
        distinct = np.unique(np.asarray(values, dtype=np.uint64))
        self._has_zero = bool(len(distinct) and distinct[0] == 0)
        members = distinct[1:] if self._has_zero else distinct
        self._bits = max(4, int(8 * len(members) - 1).bit_length())  # at least 8 slots a value
        self._keys, self._reach = _filled_table(members.tolist(), self._bits)

    @property
    def table(self) -> tuple[np.ndarray, int, int, bool]:
        """The table as `in_table` reads it: its slots, their bits, the farthest reach, whether 0 is a member."""
        return self._keys, self._bits, self._reach, self._has_zero

    def contains(self, values: np.ndarray) -> np.ndarray:
        """Whether each of `values` (uint64) is in the set: bool[len(values)]."""
        return _in_table(self._keys, self._bits, self._reach, self._has_zero, values)


@numba.njit(cache=True, inline="always")
def _slot(value: np.uint64, bits: int) -> np.int64:
    """A value's own slot: the high `bits` bits of a Fibonacci hash (spreads any values, mixed or not)."""
    return np.int64((value * np.uint64(_FIBONACCI)) >> np.uint64(64 - bits))


def _filled_table(members: list[int], bits: int) -> tuple[np.ndarray, int]:
    """The distinct non-zero `members` placed by linear probing, and the farthest one from its own slot.

    Past the end, the first slots again (a lookup near the end reads on there). In Python: made
    once a process, and a compiled loop would cost more to load (~4 ms) than this takes."""
    size, shift = 1 << bits, 64 - bits
    slots = [0] * size
    reach = 0
    for value in members:
        own = ((value * _FIBONACCI) & 0xFFFFFFFFFFFFFFFF) >> shift  # `_slot`
        at = own
        while slots[at % size]:
            at += 1
        slots[at % size] = value
        reach = max(reach, at - own)
    return np.array(slots + slots[:reach], dtype=np.uint64), reach


@numba.njit(cache=True, inline="always")
def in_table(keys: np.ndarray, bits: int, reach: int, has_zero: bool, value: np.uint64) -> bool:
    """Whether `value` is in a `HashSet`'s table (`HashSet.table`): every slot from its own to `reach` past it.

    For a compiled loop that asks it of values it has at hand (`wordpair_kernels.paragraph_sketch`)."""
    at = _slot(value, bits)
    found = False
    for j in range(at, at + reach + 1):
        found |= keys[j] == value
    return found if value != 0 else has_zero


@numba.njit(cache=True)
def _in_table(keys: np.ndarray, bits: int, reach: int, has_zero: bool, values: np.ndarray) -> np.ndarray:
    out = np.empty(len(values), dtype=np.bool_)
    for i in range(len(values)):
        out[i] = in_table(keys, bits, reach, has_zero, values[i])
    return out
