"""Candidate ranking and the caps that bound a page's work (docs/design.md, "Hot keys").

A key keeps at most `MAX_POSTINGS_PER_KEY` pages (a full key), a full key answers only a few of
them (`stop_answer`), and a page is verified against at most `MAX_CANDIDATES` pages, those that
share the most of its keys first (`rank_candidates`). Where a full key stands among a page's
sorted names is what its record keeps (`places_among_ints`, `DocRecord.unfiled`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from streamdedup.fingerprints.base import FingerprintMethod
from streamdedup.store import layout
from streamdedup.store.index_kernels import name_ints, name_places

# Bounded work per page (docs/design.md, "Hot keys"): a key keeps at most this many pages, and a
# page is verified against at most MAX_CANDIDATES pages.
MAX_POSTINGS_PER_KEY = 32
MAX_CANDIDATES = 100
# A full key is a stop key (LSH deployments' hot buckets): everything collides there, so it carries
# no evidence. It answers only a few of its pages, not all of them: its first (the earliest, which
# the earliest-page rule wants: a page re-crawled a thousand times is still found as its first
# crawl's duplicate) and its latest. A page judged unique that meets a full key is filed there in
# place of the key's second-oldest page (a duplicate is not: its cluster is found already), so
# pages filed in advance to fill a story's keys (an attacker publishes first) do not hide the story
# from its copies: the story is among its keys' latest pages, and its copies take no slot.
STOP_KEY_ANSWERS = 4


def stop_answer(ordered: list[int]) -> list[int]:
    """What a full key answers of its seqs (ascending): its first and its latest pages."""
    if len(ordered) <= STOP_KEY_ANSWERS:
        return ordered
    return [ordered[0], *ordered[len(ordered) - STOP_KEY_ANSWERS + 1:]]


def count_lookup(work: Counter[str], found: int, answered: int, verified: int) -> None:
    """A page's lookup in a caller's work counts (`Detector.WORK_COUNTS`).

    The candidates `found` before the limit (`StoreBatch.last_found`), a page over it (`answered`
    fewer), the most found for one page, those dropped as chance collisions (`answered` -
    `verified`) and those verified. One place for the Detector and the global topology's index
    partitions."""
    work["candidates_found"] += found
    work["pages_over_candidate_limit"] += int(found > answered)
    work["max_candidates_found"] = max(work["max_candidates_found"], found)
    work["candidates_by_chance"] += answered - verified
    work["candidates_verified"] += verified


def places_among_ints(every: np.ndarray, names: Sequence[bytes]) -> tuple[int, ...]:
    """The places of `names` among the sorted distinct names of `every`, ascending.

    The places of `names` among the sorted distinct names of `every` (48-bit integers: big-endian
    names sort as their integers), ascending (`DocRecord.unfiled`)."""
    return tuple(name_places(np.asarray(every, dtype=np.uint64), name_ints(names)).tolist())


def answer_of(value: bytes) -> tuple[list[int], int]:
    """The seqs a postings value answers a lookup with, and how many it holds.

    The seqs a postings value answers a lookup with (all of them, or a full key's `stop_answer`) and
    how many it holds (a full key's count: MAX_POSTINGS_PER_KEY or more)."""
    count = layout.postings_count(value)
    seqs = layout.seqs_from(value)
    return (stop_answer(seqs) if count >= MAX_POSTINGS_PER_KEY else seqs), count




def place_bounds(methods: Mapping[int, FingerprintMethod[Any]]) -> dict[int, int | None]:
    """By tag of `methods`, the place among a page's sorted names below which that method's names stand.

    None: no bound. A page's names sort by method tag first, and each method has at most `max_index_keys` of
    them, so a method's names stand below its own bound and every lower tag's added up. A record whose first
    unfiled place (`DocRecord.unfiled`) is at or past a method's bound was filed under all that method's keys
    (`found_by.FoundBy.unfiled_bounds`)."""
    bounds: dict[int, int | None] = {}
    total: int | None = 0
    for tag in sorted(methods):
        most = methods[tag].max_index_keys
        total = None if total is None or most is None else total + most
        bounds[tag] = total
    return bounds



def rank_candidates(shared: Counter[int], limit: int) -> list[int]:
    """The seqs of `shared` (seq -> how many of a page's keys found it) a page is verified against, ascending.

    All of them, or past `limit` those sharing the most keys (LSH: more colliding bands, higher
    similarity), the earliest on a tie (the earliest-page rule)."""
    if len(shared) <= limit:
        return sorted(shared)
    return sorted(sorted(shared, key=lambda s: (-shared[s], s))[:limit])
