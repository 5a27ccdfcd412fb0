"""Pages leaving a store: one deleted by its id, or every page older than the retention clock's bound.

A removal writes the pages' doc and time entries' deletions in one WriteBatch and only then takes
their postings out of the in-memory index; expiry goes oldest first, a chunk a WriteBatch, within
a time budget (`retention.EXPIRY_BUDGET_S`), from where the last removal ended. `PageRemoval` is
the part of `SignatureStore` that does it (a mixin: the store's own tables and reads).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from rocksdict import Rdict, WriteBatch

from streamdedup.fingerprints.base import FingerprintMethod
from streamdedup.store import layout, rebuild, retention
from streamdedup.store.batch import TIME_SCAN_FROM
from streamdedup.store.chance import word_postings
from streamdedup.store.layout import DocRecord
from streamdedup.store.memory_index import MemoryIndex
from streamdedup.store.plain import multi_get

_EXPIRE_CHUNK = 4096  # pages removed per WriteBatch by `expire`


class PageRemoval:
    """Deletion and expiry of a store's pages (`SignatureStore`'s tables and reads)."""

    db: Rdict
    memory: MemoryIndex
    words: MemoryIndex
    word_tag: int | None
    index_version: int
    _by_tag: Mapping[int, FingerprintMethod[Any]]
    _doc_cache: dict[int, DocRecord]
    _time_scan_from: bytes

    if TYPE_CHECKING:  # the store's own, which it defines
        def filed_names(self, doc: DocRecord) -> list[bytes]:
            """The index names a stored page is filed under."""

        def seq_for(self, page_id: str) -> int | None:
            """The seq of the stored page with this id (None: no such page)."""

        def doc(self, seq: int) -> DocRecord | None:
            """The record of the page with this seq (None: none)."""

        def _scan(self, cf: Rdict, start: bytes | None = None, verify: bool = False) -> Iterator[tuple[bytes, bytes]]:
            ...

    def _remove(self, docs: Sequence[DocRecord], wb: WriteBatch | None = None) -> None:
        """Remove these pages.

        Their doc and time entries in one WriteBatch (with whatever `wb` holds already), then, once
        it is written, their postings from the in-memory index."""
        wb = WriteBatch(raw_mode=True) if wb is None else wb
        names: list[bytes] = []
        seqs: list[int] = []
        for doc in docs:
            filed = self.filed_names(doc)
            names += filed
            seqs += [doc.seq] * len(filed)
            wb.delete(layout.time_key(doc.event_ms, doc.seq))
            wb.delete(layout.doc_key(doc.seq))
        wb.put(layout.meta_key("index_version"), str(self.index_version + 1).encode())
        self.db.write(wb)
        for doc in docs:
            self._doc_cache.pop(doc.seq, None)
        self.index_version += 1
        self.memory.remove(names, seqs)
        if (tag := self.word_tag) is not None:
            self.words.remove_ints(*word_postings([d.seq for d in docs], [d.signatures.get(tag) for d in docs]))

    def delete_page(self, page_id: str) -> bool:
        """Forget a page: it no longer matches anything; False if it was not stored."""
        seq = self.seq_for(page_id)
        doc = None if seq is None else self.doc(seq)
        if doc is None:
            return False
        self._remove([doc])
        return True

    def expire_after_commit(self, before_ms: int | None) -> int:
        """What every mode's commit expires.

        The pages before `before_ms` (the retention clock's `expire_before`; None: no retention)
        within `retention.EXPIRY_BUDGET_S`, so a backlog drains over the next batches; returns how
        many (the `pages_expired` work count)."""
        return 0 if before_ms is None else self.expire(before_ms, budget_s=retention.EXPIRY_BUDGET_S)

    def expire(self, before_ms: int, limit: int | None = None, budget_s: float | None = None) -> int:
        """Remove the pages whose event time is before `before_ms`, oldest first, a chunk a WriteBatch.

        Returns how many. At most `limit` pages; with `budget_s`, no chunk starts once that many
        seconds have passed (the first always runs), so a backlog drains over several calls
        (`retention.EXPIRY_BUDGET_S`) and what a call leaves is expired by the next."""
        bound = layout.time_bound(before_ms)
        deadline = None if budget_s is None else time.monotonic() + budget_s
        removed = 0
        while limit is None or removed < limit:
            chunk = _EXPIRE_CHUNK if limit is None else min(_EXPIRE_CHUNK, limit - removed)
            expired = self._expired_time_keys(bound, chunk)
            if expired:
                self._remove_expired(expired)
                removed += len(expired)
            if len(expired) < chunk or (deadline is not None and time.monotonic() >= deadline):
                break
        return removed

    def _remove_expired(self, expired: list[tuple[bytes, int]]) -> None:
        """Remove the pages of these time entries, their postings made in bulk.

        `_remove` of the pages of these time entries (a time entry whose page is gone goes
        alone), their records read raw and their postings made in bulk (`rebuild.unindex_records`:
        ~6x the pages a second of decoding each record and naming its keys one by one)."""
        seqs = sorted({seq for _, seq in expired})
        doc_keys = [layout.doc_key(seq) for seq in seqs]
        found = [(key, value) for key, value in zip(doc_keys, multi_get(self.db, doc_keys), strict=True)
                 if value is not None]
        wb = WriteBatch(raw_mode=True)
        for key, _ in expired:
            wb.delete(key)
        for key, _ in found:
            wb.delete(key)
        scan_from = max(self._time_scan_from, expired[-1][0] + b"\x00")  # none left before it
        wb.put(layout.meta_key("index_version"), str(self.index_version + 1).encode())
        wb.put(layout.meta_key(TIME_SCAN_FROM), scan_from)
        self.db.write(wb)
        self._time_scan_from = scan_from
        for seq in seqs:
            self._doc_cache.pop(seq, None)
        self.index_version += 1
        rebuild.unindex_records(self.memory, self.words, self._by_tag, self.word_tag,
                                [key for key, _ in found], [value for _, value in found])

    def _expired_time_keys(self, bound: bytes, limit: int) -> list[tuple[bytes, int]]:
        """The first time entries before `bound`, at most `limit`, from where the last removal ended.

        From `_time_scan_from`: a scan from the first time key stepped over the tombstone of every entry
        removed since the last compaction, so each batch's expiry cost more than the one before (`python
        bench/expire.py`, its `steady` part)."""
        found: list[tuple[bytes, int]] = []
        for key, _ in self._scan(self.db, self._time_scan_from):
            if len(found) >= limit or key[:1] != layout.TIME or key >= bound:
                break
            found.append((key, layout.time_key_parts(key)[1]))
        return found

