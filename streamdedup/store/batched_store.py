"""What a batch reads and changes of its store: the interface `StoreBatch` is written against.

`SignatureStore` implements it; the batch (`batch.StoreBatch`) stages a group of pages' changes
against it and writes them at its commit.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Protocol

import numpy as np
from rocksdict import Rdict

from streamdedup.clean.template import TemplateParams
from streamdedup.store.layout import DocRecord
from streamdedup.store.memory_index import MemoryIndex
from streamdedup.store.template_store import TemplateCache


class BatchedStore(Protocol):
    """What a batch reads and changes of its store (`SignatureStore`).

    Its database and in-memory index, its chance filter, and the counters a commit moves."""

    db: Rdict
    memory: MemoryIndex
    templates: TemplateCache
    template_params: TemplateParams | None
    word_tag: int | None
    complete_tags: frozenset[int]
    index_version: int
    _time_scan_from: bytes
    _doc_cache: dict[int, DocRecord]

    def get_meta_int(self, name: str, default: int) -> int:
        """A meta entry as an int (`default`: not set)."""
        ...

    def doc(self, seq: int) -> DocRecord | None:
        """The record of the page with this seq (None: none)."""
        ...

    def docs(self, seqs: Sequence[int]) -> dict[int, DocRecord | None]:
        """The records of these seqs, read with one multi_get (None: none)."""
        ...

    def keep_decoded(self, docs: Iterable[DocRecord]) -> None:
        """Keep records just written decoded, as `docs` keeps those it reads."""
        ...

    def index_keys(self, doc: DocRecord) -> dict[int, list[bytes]]:
        """Every key the page is filed under, by method tag, from its signatures."""
        ...

    def chance_collisions(self, seqs: np.ndarray, words: Any) -> np.ndarray:
        """Which of these stored pages the chance-key method does not find for `words`."""
        ...

    def check_growth(self, names: np.ndarray, seqs: np.ndarray) -> None:
        """Refuse a batch that would grow the index past the memory left, before anything is written."""
        ...

    def file_words(self, seqs: Sequence[int], encoded: Sequence[bytes | None]) -> None:
        """Keep these pages' chance-key signatures in memory."""
        ...

