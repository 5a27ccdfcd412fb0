"""RocksDB signature store (rocksdict): lookups by index key, atomic batched updates, retention.

Every change a page makes (its DocRecord, id mapping, postings, time entry, counters) is staged in
a `StoreBatch` and written with one RocksDB WriteBatch, so the store is never half-updated. Pages
of the same batch see each other through the batch's overlay. The store records the parameters
it was built with and refuses to mix in signatures made with others.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from rocksdict import Options, Rdict, WriteBatch

from streamdedup.fingerprints.base import FingerprintMethod
from streamdedup.store import layout
from streamdedup.store.layout import DocRecord

SCHEMA_VERSION = 1


class StoreConfigMismatch(ValueError):
    """The store was built with other parameters; mixing signatures would give wrong answers."""


class SignatureStore:
    def __init__(self, path: str | os.PathLike[str], methods: Sequence[FingerprintMethod[Any]],
                 config: Mapping[str, str]) -> None:
        """`config`: what else the signatures depend on (cleaning, tokeniser); the methods'
        own parameters are recorded from `methods`."""
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        self.methods = {m.name: m for m in methods}
        self.tags = {name: tag for tag, name in enumerate(sorted(self.methods))}
        self._by_tag = {tag: self.methods[name] for name, tag in self.tags.items()}
        self.db = Rdict(str(self.path), options=self._options())
        self._check_config({**config, **{f"method.{m.name}": m.describe() for m in methods},
                            "schema": str(SCHEMA_VERSION), "method_tags": json.dumps(self.tags, sort_keys=True)})

    @classmethod
    def open_existing(cls, path: str | os.PathLike[str]) -> "SignatureStore":
        """Open a store with the very methods and parameters it was built with (for maintenance)."""
        from streamdedup.fingerprints.registry import method_from_description

        if not (Path(path) / "CURRENT").exists():
            raise FileNotFoundError(f"no store at {path} (expected a RocksDB directory)")
        db = Rdict(str(path), options=cls._options())
        try:
            raw = db.get(layout.meta_key("config"))
        finally:
            db.close()
        if raw is None:
            raise ValueError(f"{path} is a RocksDB directory but not a streamdedup store")
        config = json.loads(raw)
        methods = [method_from_description(v) for k, v in config.items() if k.startswith("method.")]
        own = {k: v for k, v in config.items() if k not in ("schema", "method_tags") and not k.startswith("method.")}
        return cls(path, methods, own)

    @staticmethod
    def _options() -> Options:
        options = Options(raw_mode=True)
        options.create_if_missing(True)
        return options

    # -- configuration -------------------------------------------------------------------
    def _check_config(self, config: Mapping[str, str]) -> None:
        stored = self.get_meta("config")
        wanted = dict(sorted(config.items()))
        if stored is None:
            self.db[layout.meta_key("config")] = json.dumps(wanted).encode()
            return
        built = json.loads(stored)
        diffs = [f"  {k}: store has {built.get(k)!r}, this run asks for {wanted.get(k)!r}"
                 for k in sorted(set(built) | set(wanted)) if built.get(k) != wanted.get(k)]
        if diffs:
            self.close()
            raise StoreConfigMismatch(
                f"the store at {self.path} was built with other parameters:\n" + "\n".join(diffs)
                + "\nSignatures made with different parameters cannot be compared. Use a new --state "
                  "directory, or run with the parameters the store was built with.")

    def get_meta(self, name: str) -> bytes | None:
        return self.db.get(layout.meta_key(name))

    def get_journal(self, name: str) -> bytes | None:
        return self.db.get(layout.journal_key(name))

    def get_meta_int(self, name: str, default: int) -> int:
        value = self.get_meta(name)
        return default if value is None else int(value)

    # -- reads -----------------------------------------------------------------------------
    def lookup(self, tag: int, key: bytes, it: Any = None) -> list[int]:
        """Seqs of the pages filed under `key` of method `tag`, oldest first. Pass an iterator to
        reuse it: creating one costs more than the seek itself."""
        prefix = layout.index_prefix(tag, key)
        width = len(prefix) + 8
        seqs = []
        it = self.db.iter() if it is None else it
        it.seek(prefix)
        while it.valid():
            k = it.key()
            if not k.startswith(prefix):
                break
            if len(k) == width:
                seqs.append(layout.seq_from(k))
            it.next()
        return seqs

    def doc(self, seq: int) -> DocRecord | None:
        data = self.db.get(layout.doc_key(seq))
        return None if data is None else DocRecord.decode(seq, data)

    def seq_for(self, page_id: str) -> int | None:
        data = self.db.get(layout.page_id_key(page_id))
        return None if data is None else layout.seq_from(data)

    def iter_docs(self) -> Iterator[DocRecord]:
        it = self.db.iter()
        it.seek(layout.DOC)
        while it.valid() and it.key()[:1] == layout.DOC:
            yield DocRecord.decode(layout.seq_from(it.key()), it.value())
            it.next()

    def index_keys(self, doc: DocRecord) -> dict[int, list[bytes]]:
        """The reverse index: every key the page is filed under, recomputed from its signatures."""
        keys = {}
        for tag, data in doc.signatures.items():
            method = self._by_tag[tag]
            keys[tag] = method.index_keys(method.decode(data))
        return keys

    # -- writes ----------------------------------------------------------------------------
    def batch(self) -> "StoreBatch":
        return StoreBatch(self)

    def _stage_removal(self, wb: WriteBatch, doc: DocRecord) -> None:
        for tag, keys in self.index_keys(doc).items():
            for key in keys:
                wb.delete(layout.posting_key(tag, key, doc.seq))
        wb.delete(layout.time_key(doc.event_ms, doc.seq))
        wb.delete(layout.doc_key(doc.seq))
        if self.seq_for(doc.page_id) == doc.seq:
            wb.delete(layout.page_id_key(doc.page_id))

    def delete_page(self, page_id: str) -> bool:
        """Forget a page: it no longer matches anything. Returns False if it was not stored."""
        seq = self.seq_for(page_id)
        doc = None if seq is None else self.doc(seq)
        if doc is None:
            return False
        wb = WriteBatch(raw_mode=True)
        self._stage_removal(wb, doc)
        self.db.write(wb)
        return True

    def expire(self, before_ms: int, limit: int | None = None) -> int:
        """Remove every page whose event time is before `before_ms`; returns how many."""
        bound = layout.time_bound(before_ms)
        wb = WriteBatch(raw_mode=True)
        removed = 0
        it = self.db.iter()
        it.seek(layout.TIME)
        while it.valid() and it.key()[:1] == layout.TIME and it.key() < bound:
            _, seq = layout.time_key_parts(it.key())
            doc = self.doc(seq)
            if doc is not None:
                self._stage_removal(wb, doc)
            else:
                wb.delete(it.key())
            removed += 1
            if limit is not None and removed >= limit:
                break
            it.next()
        if removed:
            self.db.write(wb)
        return removed

    def stats(self) -> dict[str, Any]:
        counts = {name: 0 for name in ("docs", "ids", "postings", "time")}
        prefixes = {layout.DOC: "docs", layout.PAGE_ID: "ids", layout.INDEX: "postings", layout.TIME: "time"}
        for key in self.db.keys():
            name = prefixes.get(key[:1])
            if name:
                counts[name] += 1
        size = sum(f.stat().st_size for f in self.path.iterdir() if f.is_file())
        return {**counts, "next_seq": self.get_meta_int("next_seq", 0), "bytes_on_disk": size,
                "config": json.loads(self.get_meta("config") or b"{}")}

    def close(self) -> None:
        if self.db is not None:
            self.db.close()
            self.db = None  # type: ignore[assignment]

    def __enter__(self) -> "SignatureStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class StoreBatch:
    """Staged changes of a group of pages, visible to later pages of the group, committed at once."""

    def __init__(self, store: SignatureStore) -> None:
        self.store = store
        self._seq = store.get_meta_int("next_seq", 0)
        self._postings: dict[bytes, list[int]] = {}
        self._docs: dict[int, DocRecord] = {}
        self._ids: dict[str, int] = {}
        self._meta: dict[str, bytes] = {}
        self._journal: dict[str, bytes] = {}
        # one iterator for all lookups of the batch: the committed state cannot change under it
        # (one writer), and the batch's own pages are found in the overlay. Released on commit
        # (an open iterator keeps the database from closing).
        self._iter: Any = None

    def __len__(self) -> int:
        return len(self._docs)

    def next_seq(self) -> int:
        return self._seq

    def lookup(self, tag: int, key: bytes) -> list[int]:
        if self._iter is None:
            self._iter = self.store.db.iter()
        committed = self.store.lookup(tag, key, self._iter)
        return committed + self._postings.get(layout.index_prefix(tag, key), [])

    def doc(self, seq: int) -> DocRecord | None:
        staged = self._docs.get(seq)
        return staged if staged is not None else self.store.doc(seq)

    def seq_for(self, page_id: str) -> int | None:
        staged = self._ids.get(page_id)
        return staged if staged is not None else self.store.seq_for(page_id)

    def add(self, doc: DocRecord, keys: Mapping[int, list[bytes]]) -> None:
        if doc.seq != self._seq:
            raise ValueError(f"pages must be added in seq order: expected {self._seq}, got {doc.seq}")
        self._seq += 1
        self._docs[doc.seq] = doc
        self._ids[doc.page_id] = doc.seq
        for tag, tag_keys in keys.items():
            for key in tag_keys:
                self._postings.setdefault(layout.index_prefix(tag, key), []).append(doc.seq)

    def set_meta(self, name: str, value: bytes) -> None:
        self._meta[name] = value

    def set_journal(self, name: str, value: bytes) -> None:
        self._journal[name] = value

    def commit(self) -> None:
        wb = WriteBatch(raw_mode=True)
        for seq, doc in self._docs.items():
            wb.put(layout.doc_key(seq), doc.encode())
            wb.put(layout.page_id_key(doc.page_id), layout.seq_bytes(seq))
            wb.put(layout.time_key(doc.event_ms, seq), b"")
        for prefix, seqs in self._postings.items():
            for seq in seqs:
                wb.put(prefix + layout.seq_bytes(seq), b"")
        self._meta["next_seq"] = str(self._seq).encode()
        for name, value in self._meta.items():
            wb.put(layout.meta_key(name), value)
        for name, value in self._journal.items():
            wb.put(layout.journal_key(name), value)
        self.store.db.write(wb)
        self._journal.clear()
        self._iter = None
        self._docs.clear()
        self._ids.clear()
        self._postings.clear()
        self._meta.clear()
