"""Pugh (Google, US patent 6,658,423; in 004).

The page's vocabulary is split into a fixed number of lists by hash, one fingerprint per list; any
equal fingerprint means similar. An edit touches one list and leaves the others; lists with too few
words are not used (they match by chance)."""

from __future__ import annotations

from dataclasses import dataclass

import xxhash

from streamdedup.fingerprints.base import Params
from streamdedup.fingerprints.keyed import PositionalKeys
from streamdedup.fingerprints.words import content_words
from streamdedup.tokens.document import Document


@dataclass(frozen=True)
class PughParams(Params):
    """Pugh's parameters: the lists the vocabulary is split into, the words a list needs, the hash seed."""

    lists: int = 8
    min_list_words: int = 8
    seed: int = 7


class PughMethod(PositionalKeys[PughParams]):
    """Pugh: the page's vocabulary split into lists by hash, one key a list; one equal key means similar."""

    name = "pugh"
    params_type = PughParams

    def keys(self, doc: Document) -> tuple[int, ...] | None:
        """A hash of each list's words (0: a list with too few), or None."""
        p = self.params
        buckets: list[list[str]] = [[] for _ in range(p.lists)]
        for word in set(content_words(doc)):
            buckets[xxhash.xxh3_64_intdigest(word.encode("utf-8", "surrogatepass"), seed=p.seed) % p.lists].append(word)
        keys = tuple(xxhash.xxh3_64_intdigest("\n".join(sorted(b)).encode("utf-8", "surrogatepass")) or 1
                     if len(b) >= p.min_list_words else 0 for b in buckets)
        return keys if any(keys) else None
