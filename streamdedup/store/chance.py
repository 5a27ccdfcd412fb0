"""The SimHash chance filter: stored pages that a short SimHash key found by chance, dropped unread.

SimHash's index keys are short (~26 bits): among N stored pages a key holds a chance collision
with N / 2^26 others on average. The store keeps each stored page's SimHash word (its low
`WORD_BITS` bits) in memory, a `MemoryIndex` whose "names" are seqs and whose "seqs" are those
bits (`SignatureStore.words`), so that a candidate found only by one such key of a few pages
(`CHANCE_POSTINGS`) is told a chance collision from its bits, without reading its record.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from streamdedup.fingerprints.base import FingerprintMethod
from streamdedup.store.candidates import MAX_CANDIDATES
from streamdedup.store.memory_index import MemoryIndex

# The chance check reads this many low bits of a stored word: a MemoryIndex value holds 47 bits.
# Fewer bits can only keep more candidates (their Hamming distance can only be smaller), never drop one.
WORD_BITS = 47
WORD_MASK = (1 << WORD_BITS) - 1


# The most pages a SimHash key may hold for the chance check to ask about them. A key of ~26 bits
# holds a chance collision among N stored pages with N / 2^26 others on average (0.15 at 10 M; with
# 25-bit keys 0.3): asking only keys of one page left a fifth of them to be read and judged at 10 M.
# A key past this is one many pages share (homogeneous text): its pages are likely neighbours,
# and asking about each costs more than the check saves (measured: docs/design.md, "Hot keys").
CHANCE_POSTINGS = 4


_NO_WORD = bytes(8)


def page_words(encoded: Sequence[bytes | None]) -> np.ndarray:
    """The word of each encoded `word_tag` signature: its first 8 bytes, little-endian; 0 if none."""
    return _words(encoded)[0]


def _words(encoded: Sequence[bytes | None]) -> tuple[np.ndarray, list[bool]]:
    """`page_words`, and which signatures hold a word (their first 8 bytes), in one pass."""
    has: list[bool] = []
    parts: list[bytes] = []
    for data in encoded:
        word = data[:8] if data is not None and len(data) >= 8 else None
        has.append(word is not None)
        parts.append(word or _NO_WORD)
    return np.frombuffer(b"".join(parts), dtype="<u8").astype(np.uint64), has


def word_postings(seqs: Sequence[int], encoded: Sequence[bytes | None]) -> tuple[np.ndarray, np.ndarray]:
    """The kept words' postings of these pages.

    Their seqs and the low WORD_BITS bits of their `word_tag` signatures (encoded; None: the page
    has none, and no posting)."""
    words, has = _words(encoded)
    kept = np.asarray(has, dtype=np.bool_)
    return np.asarray(seqs, dtype=np.uint64)[kept], words[kept] & np.uint64(WORD_MASK)


def stored_word_array(kept: MemoryIndex, seqs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Whether each of these stored pages has a word in `kept` (the store's words), and its bits (0 if not)."""
    counts, starts, out = kept.found_ints(np.asarray(seqs, dtype=np.uint64))
    has = counts > 0
    bits = np.zeros(len(counts), dtype=np.uint64)
    bits[has] = out[starts[has]]
    return has, bits


def chance_collisions(kept: MemoryIndex, method: FingerprintMethod[Any], seqs: np.ndarray, words: Any) -> np.ndarray:
    """Which of these stored pages `method` does not find for `words`: chance collisions of its keys.

    Which of these stored pages `method` (the store's chance-telling one) does not find for
    `words` (a page's own word, or one per stored page), from their bits kept in `kept`: chance
    collisions of its keys. A page without a kept word is not one."""
    has, bits = stored_word_array(kept, seqs)
    return has & ~method.index_finds_bits(words, bits, WORD_MASK)


class ToldPairs(NamedTuple):
    """The (page of a staged batch, stored page) pairs whose chance check `by_chance_only` made.

    As `page_pairs` keys: those asked, and of them those told chance collisions (`far`)."""

    asked: set[int]
    far: set[int]


def page_pairs(pages: np.ndarray | int, seqs: np.ndarray) -> np.ndarray:
    """One integer for each (page of a batch, stored seq) pair: seqs are below 2^47."""
    return (np.asarray(pages).astype(np.uint64) << np.uint64(47)) | np.asarray(seqs, dtype=np.uint64)


def by_chance_only(collisions: Callable[[np.ndarray, Any], np.ndarray], tag: int, named: np.ndarray,
                   owners: np.ndarray, found: np.ndarray, seqs: np.ndarray, words: np.ndarray, sharing: np.ndarray,
                   pages: int) -> tuple[set[int], dict[int, int], ToldPairs]:
    """Of a staged batch, the stored pages whose records it need not read, its chance-only pages, the pairs told.

    Of a staged batch (`StoreBatch.stage`), the stored pages whose records it need not read,
    the pages whose every candidate is a chance collision (page -> how many: `chance_only`), and
    the (page, stored page) pairs asked and told chance collisions, which `StoreBatch.without_chance`
    reads instead of asking each page's again.

    A stored page need not be read if wherever the batch finds it, it is under a SimHash key
    (`tag`) of the page naming it that holds at most CHANCE_POSTINGS pages, found by no other name,
    and its kept bits are too far from that page's own word (`words[p]`; `collisions` tells):
    a chance collision, which `StoreBatch.without_chance` drops unread. `named[i]` (a 48-bit name,
    page `owners[i]`'s) has the `found[i]` postings of `seqs`. `sharing`: the pages with a name
    another page of the batch names too."""
    if not len(seqs):
        return set(), {}, ToldPairs(set(), set())
    asked = ((named >> np.uint64(40)) == np.uint64(tag)) & (found <= CHANCE_POSTINGS)
    if not asked.any():
        return set(), {}, ToldPairs(set(), set())
    at = np.repeat(asked, found)  # the postings of the SimHash names asked about
    far = collisions(seqs[at], np.repeat(words[owners[asked]], found[asked]))
    posting_owners = np.repeat(owners, found)
    only = chance_only_pages(posting_owners, seqs, at, far, sharing, pages)
    pairs = page_pairs(posting_owners[at], seqs[at])
    told_pairs = ToldPairs(set(pairs.tolist()), set(pairs[far].tolist()))
    told = seqs[at][far]
    if not len(told):
        return set(), only, told_pairs
    needed = np.concatenate([seqs[at][~far], seqs[~at]])  # found some other way too: read
    return set(told[~np.isin(told, needed)].tolist()), only, told_pairs


def chance_only_pages(posting_owners: np.ndarray, seqs: np.ndarray, asked: np.ndarray, far: np.ndarray,
                      sharing: np.ndarray, pages: int) -> dict[int, int]:
    """The pages of the batch whose every candidate is a chance collision of their own.

    The pages whose every candidate is a chance collision of their own, each found by one of
    their names, none of them shared in the batch (page -> how many candidates), from the batch's
    postings of stored pages (`seqs[i]` found for page `posting_owners[i]`; `asked[i]`: under a
    SimHash key of at most CHANCE_POSTINGS pages, and then `far`: too far from the page's word;
    `sharing`: pages, with repeats): what `candidates` and `without_chance` would find and drop
    one page at a time, told for the batch at once."""
    chance = np.zeros(len(seqs), dtype=np.bool_)
    chance[asked] = far
    spoiled = np.zeros(pages, dtype=np.bool_)
    spoiled[sharing] = True
    spoiled[posting_owners[~chance]] = True
    open_ = ~spoiled[posting_owners]  # only pages not yet spoiled need the next test
    pairs = np.sort(page_pairs(posting_owners[open_], seqs[open_]))
    twice = pairs[1:][pairs[1:] == pairs[:-1]]  # a stored page found by two names of one page
    spoiled[(twice >> np.uint64(47)).astype(np.int64)] = True
    per_page = np.bincount(posting_owners, minlength=pages)
    clean = np.flatnonzero((per_page > 0) & (per_page <= MAX_CANDIDATES) & ~spoiled)
    return dict(zip(clean.tolist(), per_page[clean].tolist(), strict=True))
