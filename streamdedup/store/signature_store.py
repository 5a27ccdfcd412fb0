"""The signature store: page records in RocksDB (rocksdict), the index in memory, retention.

The store opens its directory (`opening`: what may stand in it, RocksDB's options, the config
it was built with, which it refuses to mix with another), then loads its in-memory index from
the files its last clean close wrote (`index_files`) or rebuilds it from the page records
(`rebuild.IndexRebuild`): RocksDB keeps the records and the changelog, the table (`memory_index`) is a
function of them. Changes are staged and written a batch at a time (`batch.StoreBatch`); a
batch's lookups are ranked and capped (`candidates`) and chance collisions of SimHash's short
keys dropped unread (`chance`). Pages leave it deleted by id or expired by event time
(`removal.PageRemoval`, `retention`).
"""

from __future__ import annotations

import itertools
import json
import logging
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

import numpy as np
from rocksdict import Rdict, ReadOptions

from streamdedup.clean.template import TemplateParams
from streamdedup.fingerprints.base import FingerprintMethod
from streamdedup.fingerprints.registry import method_from_description, signature_config
from streamdedup.store import filing, layout
from streamdedup.store.batch import TIME_SCAN_FROM, StoreBatch

# the names marked F401 are imported from here too (the Detector, the file mode, the scale-out
# stages, the CLI, tests, benches)
from streamdedup.store.candidates import (
    MAX_CANDIDATES,  # noqa: F401
    MAX_POSTINGS_PER_KEY,  # noqa: F401
    answer_of,  # noqa: F401
    count_lookup,  # noqa: F401
    place_bounds,
    places_among_ints,  # noqa: F401
)
from streamdedup.store.chance import (
    WORD_MASK,  # noqa: F401
    chance_collisions,
    page_words,  # noqa: F401
    stored_word_array,
    word_postings,
)
from streamdedup.store.errors import (
    StoreConfigMismatch,  # noqa: F401
    StoreCorrupt,  # noqa: F401
    StoreError,
    StoreLocked,  # noqa: F401
    check_iterator,
    store_error,  # noqa: F401
)
from streamdedup.store.index_files import load_index_files, save_index_files
from streamdedup.store.index_kernels import ints_names
from streamdedup.store.layout import DocRecord, method_tags
from streamdedup.store.memory_index import MemoryIndex
from streamdedup.store.memory_limits import available_bytes
from streamdedup.store.opening import (
    _SNAPSHOT,  # noqa: F401
    _WORDS_SNAPSHOT,  # noqa: F401
    SCHEMA_VERSION,
    config_mismatch,
    foreign_files,  # noqa: F401
    open_db,
    prepare_directory,
)
from streamdedup.store.plain import multi_get
from streamdedup.store.process_memory import DECODED_RECORDS
from streamdedup.store.rebuild import IndexRebuild
from streamdedup.store.removal import PageRemoval
from streamdedup.store.template_store import TemplateCache

log = logging.getLogger(__name__)


class SignatureStore(IndexRebuild, PageRemoval):
    """The page store: records in RocksDB, the index in memory, retention; opened on a directory with its methods."""

    def __init__(self, path: str | os.PathLike[str], methods: Sequence[FingerprintMethod[Any]],
                 config: Mapping[str, str], template_params: TemplateParams | None = None) -> None:
        """`config`: what else the signatures depend on (cleaning, tokeniser).

        The methods' own parameters are recorded from `methods`. `template_params`: what the site
        templates were learned with (their delta records are replayed with them)."""
        self.path = Path(path)
        self.template_params = template_params
        existed = prepare_directory(self.path)
        self.methods = {m.name: m for m in methods}
        self.tags = method_tags(list(self.methods))
        self._by_tag = {tag: self.methods[name] for name, tag in self.tags.items()}
        # the tag of the method whose short index keys find pages by chance (`tells_chance_keys`; the
        # first if several): its stored signatures are kept in memory too (`words`), to tell those unread
        self.word_tag = min((tag for tag, m in self._by_tag.items() if m.tells_chance_keys), default=None)
        # the tags of the methods any of whose matches share one of their keys (`keys_find_every_match`)
        self.complete_tags = frozenset(tag for tag, m in self._by_tag.items() if m.keys_find_every_match)
        self._doc_cache: dict[int, DocRecord] = {}  # page records read lately, decoded (`docs`)
        # by tag, the place below which a method's names stand among a page's (`place_bounds`)
        self.unfiled_bounds = place_bounds(self._by_tag)
        self.db = open_db(self.path, create=not existed)
        try:  # whatever stops the open (Ctrl-C while the index loads) closes the database first
            # what the store keeps decoded: its part of the process's memory (`process_memory`), given
            # back at `close` (which runs only once the database is open)
            self.templates = TemplateCache()  # site templates as last written, decoded (`StoreBatch.template`)
            self._doc_share = DECODED_RECORDS.join(self)  # how many page records `_doc_cache` keeps
            if existed and self.get_meta("config") is None and self._has_keys():
                self.close()
                raise StoreError(f"{self.path} is a RocksDB database but not a streamdedup store: give --state a "
                                 "streamdedup store, or an empty or new directory")
            self.index = self.db.get_column_family(layout.INDEX_CF)  # empty since schema 4 (see layout)
            self._check_config({**signature_config(config, methods),
                                "schema": str(SCHEMA_VERSION), "method_tags": json.dumps(self.tags, sort_keys=True)})
            self.index_version = self.get_meta_int("index_version", 0)
            # where the oldest time entries may start (`_expired_time_keys`): past what expiry removed,
            # back at any older entry a commit filed since; kept in the store with the writes that move
            # it, so a restart does not step over every tombstone since the last compaction once more
            self._time_scan_from = self.get_meta(TIME_SCAN_FROM) or layout.TIME
            # the index as the last clean close left it, else rebuilt below; `words`: seq -> the low
            # WORD_BITS bits of the page's `word_tag` signature (its first 8 bytes, little endian), a
            # MemoryIndex whose "names" are seqs and whose "seqs" are those bits
            loaded = load_index_files(self.path, self.index_version, self.word_tag is not None, self._check_memory)
            self.memory, self.words = loaded.memory or MemoryIndex(), loaded.words or MemoryIndex()
            self.snapshot_state = loaded.state  # what `stats` says of the index files the open found
            if not self.memory.postings:
                self._rebuild_index()
            self._ready = True
        except BaseException:
            self._abandon()
            raise

    def _abandon(self) -> None:
        """Close the database of an open that failed part way, no index files written.

        Else it stays open, and locked in this process, as long as the half-made store lives: a
        notebook keeps the last error's traceback, so opening the store again would be refused."""
        if self.db is None:  # closed already by the refusal that stopped the open
            return
        if hasattr(self, "_doc_share"):
            self._ready = False
            self.close()
        else:
            self.db.close()
            self.db = None  # type: ignore[assignment]

    def _check_memory(self, needed: int, what: str, opening: bool = True) -> None:
        """Refuse to open a store whose index does not fit in the memory left.

        With `opening` False: refuse to grow it. In one line naming the fix, rather than be killed by the
        kernel while loading, rebuilding or growing it."""
        available = available_bytes()
        if available is not None and needed > available:
            if opening:
                self.close()
            raise StoreError(
                f"the store at {self.path} needs {needed / 2**30:.1f} GiB more memory for its in-memory index "
                f"({what}) and this process has {available / 2**30:.1f} GiB available: run it where it has more "
                "memory, or keep fewer pages in one store (a shorter --retention; a worker: fewer partitions "
                "per worker, or more workers)")

    def check_growth(self, names: np.ndarray, seqs: np.ndarray) -> None:
        """Refuse a batch that would grow the index past the memory left, before anything is written.

        Refuse a batch whose postings (`names`) and pages (`seqs`, the chance check's words) would
        grow the index past the memory left, before anything of it is written: the store stays as
        the last batch left it, and the process ends in one line instead of the kernel's kill."""
        needed = self.memory.growth_bytes(names) + (self.words.growth_bytes(seqs) if self.word_tag is not None else 0)
        if needed:
            self._check_memory(needed, f"to grow past {self.memory.postings:,} postings; nothing of the batch "
                                       "was written", opening=False)

    def words_of(self, encoded: Sequence[Mapping[int, bytes]]) -> np.ndarray | None:
        """Each page's word for the chance check, from its encoded signatures by tag.

        0 for a page without one, which names no SimHash key; None if no method tells chance keys."""
        if self.word_tag is None:
            return None
        return page_words([sigs.get(self.word_tag) for sigs in encoded])

    def file_words(self, seqs: Sequence[int], encoded: Sequence[bytes | None]) -> None:
        """Keep these pages' `word_tag` signatures (encoded; None: the page has none) in `words`."""
        if self.word_tag is not None:
            self.words.insert_ints(*word_postings(seqs, encoded))

    def stored_word_array(self, seqs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Whether each of these stored pages has a kept word (`words`), and its bits (0 if not)."""
        return stored_word_array(self.words, seqs)

    def stored_words(self, seqs: Sequence[int]) -> dict[int, int]:
        """`stored_word_array` by seq (a page without a word: absent)."""
        has, bits = self.stored_word_array(np.asarray(seqs, dtype=np.uint64))
        return {seq: int(b) for seq, h, b in zip(seqs, has.tolist(), bits.tolist(), strict=True) if h}

    def chance_collisions(self, seqs: np.ndarray, words: Any) -> np.ndarray:
        """Which of these stored pages the `word_tag` method does not find for `words`.

        For a page's own word, or one per stored page, from their kept bits: chance collisions of its keys
        (`chance.chance_collisions`)."""
        return chance_collisions(self.words, self._by_tag[cast(int, self.word_tag)], seqs, words)

    def filed_names(self, doc: DocRecord) -> list[bytes]:
        """The index names a stored page is filed under (`filing.filed_names`)."""
        return filing.filed_names(self._by_tag, doc)

    @classmethod
    def open_existing(cls, path: str | os.PathLike[str]) -> SignatureStore:
        """Open a store with the very methods and parameters it was built with (for maintenance)."""
        if not prepare_directory(Path(path), create=False):
            raise StoreError(f"no store at {path}: give --state the directory of a store (made by "
                             "`streamdedup dedup` or a worker)")
        db = open_db(Path(path), create=False)
        try:
            raw = db.get(layout.meta_key("config"))
        finally:
            db.close()
        if raw is None:
            raise StoreError(f"{path} is a RocksDB database but not a streamdedup store")
        config = json.loads(raw)
        methods = [method_from_description(v, Path(path)) for k, v in config.items() if k.startswith("method.")]
        own = {k: v for k, v in config.items() if k not in ("schema", "method_tags") and not k.startswith("method.")}
        return cls(path, methods, own)

    # -- configuration -------------------------------------------------------------------
    def _check_config(self, config: Mapping[str, str]) -> None:
        """Record `config` in a new store; refuse one built with another (`opening.config_mismatch`)."""
        stored = self.get_meta("config")
        wanted = dict(sorted(config.items()))
        if stored is None:
            self.db[layout.meta_key("config")] = json.dumps(wanted).encode()
            return
        mismatch = config_mismatch(self.path, json.loads(stored), wanted)
        if mismatch is not None:
            self.close()
            raise mismatch

    def get_meta(self, name: str) -> bytes | None:
        """A meta entry's value (None: not set)."""
        return self.db.get(layout.meta_key(name))

    def metas(self, prefix: str) -> Iterator[tuple[str, bytes]]:
        """The store's meta entries whose names start with `prefix`: each name and value."""
        start = layout.meta_key(prefix)
        for key, value in self._scan(self.db, start):
            if not key.startswith(start):
                return
            yield key[len(layout.META):].decode(), value

    def get_journal(self, name: str) -> bytes | None:
        """A journal entry's value (None: none of that name)."""
        return self.db.get(layout.journal_key(name))

    def journal_names(self, prefix: str, limit: int | None = None) -> list[str]:
        """The names of the journal entries that start with `prefix`, in order (at most `limit`)."""
        start, names = layout.journal_key(prefix), list[str]()
        for key in self.db.keys(from_key=start):
            if not isinstance(key, bytes) or not key.startswith(start) or (limit is not None and len(names) >= limit):
                break
            names.append(key[len(layout.JOURNAL):].decode())
        return names

    def last_journal_name(self, prefix: str) -> str | None:
        """The name of the last journal entry that starts with `prefix`, or None without one."""
        start = layout.journal_key(prefix)
        entries = self.db.iter()
        try:
            entries.seek_for_prev(start + b"\xff")
            key = entries.key() if entries.valid() else None
        finally:
            del entries
        if not isinstance(key, bytes) or not key.startswith(start):
            return None
        return key[len(layout.JOURNAL):].decode()

    def get_meta_int(self, name: str, default: int) -> int:
        """A meta entry as an int (`default`: not set)."""
        value = self.get_meta(name)
        return default if value is None else int(value)

    # -- reads -----------------------------------------------------------------------------
    def lookup(self, tag: int, key: bytes) -> list[int]:
        """Seqs of the pages filed under `key` of method `tag`, oldest first."""
        return self.memory.seqs([layout.index_key(tag, key)])[0]

    def doc(self, seq: int) -> DocRecord | None:
        """The record of the page with this seq (None: none, expired or deleted)."""
        data = self.db.get(layout.doc_key(seq))
        return None if data is None else DocRecord.decode(seq, data)

    def keep_decoded(self, docs: Iterable[DocRecord]) -> None:
        """Records just written, kept as `docs` keeps those it reads (a record encodes all of its fields).

        On text of shared vocabulary a batch's candidates are mostly the pages of the batches just
        before it: they are not read and decoded again."""
        cache = self._doc_cache
        for doc in docs:
            cache[doc.seq] = doc
        _drop_oldest(cache, self._doc_share.limit())

    def docs(self, seqs: Sequence[int]) -> dict[int, DocRecord | None]:
        """Several DocRecords with one multi_get.

        Those read lately are kept decoded (a hot key's first pages are every batch's candidates). A
        stored record never changes, and one removed leaves the cache with it (`_remove`); a seq is
        reused only after a batch that was never written, whose records were never read from here."""
        cache = self._doc_cache
        missing = [s for s in seqs if s not in cache]
        read: dict[int, DocRecord | None] = {}
        if missing:
            for s, v in zip(missing, multi_get(self.db, [layout.doc_key(s) for s in missing]), strict=True):
                doc = read[s] = None if v is None else DocRecord.decode(s, v)
                if doc is not None:
                    cache[s] = doc
        found = {s: read[s] if s in read else cache[s] for s in seqs}
        _drop_oldest(cache, self._doc_share.limit())  # after the answer: a record asked for may be the oldest kept
        return found

    def seq_for(self, page_id: str) -> int | None:
        """The seq of the stored page with this id (None: no such page)."""
        return filing.seq_with_id(page_id, self.memory.values([layout.page_id_key(page_id)])[0], self.doc)

    def _scan(self, cf: Rdict, start: bytes | None = None, verify: bool = False) -> Iterator[tuple[bytes, bytes]]:
        """Keys and values from `start` (or the first key).

        A damaged block raises StoreCorrupt: a RocksDB iterator just stops there and says so only in
        its status. `verify`: check every block's checksum without filling the block cache (a
        whole-store scan)."""
        options = ReadOptions()
        if verify:
            options.set_verify_checksums(True)
            options.fill_cache(False)  # type: ignore[call-arg]  # rocksdict's stub omits the flag
        it = cf.iter(options)
        if start is None:
            it.seek_to_first()
        else:
            it.seek(start)
        while it.valid():
            yield it.key(), it.value()
            it.next()
        check_iterator(it, self.path)

    def _has_keys(self) -> bool:
        return next(self._scan(self.db), None) is not None

    def forget_config_if_empty(self) -> None:
        """Remove the parameters recorded at open from a store that holds nothing else yet.

        No page, template or offset is in it yet: the next open under any parameters takes it as new, so a run
        stopped for its parameters before its first commit does not pin the directory to them."""
        config = layout.meta_key("config")
        if not any(key != config for key, _ in itertools.islice(self._scan(self.db), 2)):
            del self.db[config]

    def iter_docs(self) -> Iterator[DocRecord]:
        """Every stored page's record, in seq order."""
        for key, value in self._scan(self.db, layout.DOC):
            if key[:1] != layout.DOC:
                return
            yield DocRecord.decode(layout.seq_from(key), value)

    def index_keys(self, doc: DocRecord) -> dict[int, list[bytes]]:
        """The reverse index: every key the page is filed under, recomputed from its signatures."""
        return filing.index_keys(self._by_tag, doc)

    index_names = staticmethod(filing.index_names)

    def index_names_of_records(self, pages: Sequence[Mapping[int, bytes]]) -> list[list[bytes]]:
        """Each page's index names from its encoded signatures by tag, in one array pass.

        Each page's index names (`index_names` of its `index_keys`, every method's, by method
        in the order its signatures come) from its encoded signatures by tag, all named in one
        array pass (`index_name_ints_of_records`)."""
        names, ends = self.index_name_ints_of_records(pages)
        flat = ints_names(names)
        return [flat[start: end] for start, end in zip([0, *ends[:-1]], ends, strict=True)]

    def index_name_ints_of_records(self, pages: Sequence[Mapping[int, bytes]]) -> tuple[np.ndarray, list[int]]:
        """The `index_names_of_records` as 48-bit integers, back to back, and where each page's end.

        `index_names_of_records` as 48-bit integers, every page's back to back, and where
        each page's end (`filing.index_name_ints_of_records`)."""
        return filing.index_name_ints_of_records(self._by_tag, pages)

    # -- writes ----------------------------------------------------------------------------
    def batch(self) -> StoreBatch:
        """A new batch of changes against this store."""
        return StoreBatch(self)

    def stats(self) -> dict[str, Any]:
        """Counts from a full scan that verifies every block's checksum.

        A damaged store raises StoreCorrupt instead of looking healthy with fewer keys."""
        counts = {name: 0 for name in ("docs", "time", "templates", "template_deltas", "journal")}
        prefixes = {layout.DOC: "docs", layout.TIME: "time", layout.TEMPLATE: "templates", layout.JOURNAL: "journal"}
        for key, _ in self._scan(self.db, verify=True):
            name = prefixes.get(key[:1])
            if name == "templates" and len(key) != len(layout.template_key(0)):
                name = "template_deltas"  # a site's records after its whole one
            if name:
                counts[name] += 1
        size = sum(f.stat().st_size for f in self.path.iterdir() if f.is_file())
        return {**counts, **self.memory.counts(), "index_memory_bytes": self.memory.size_bytes,
                "next_seq": self.get_meta_int("next_seq", 0), "bytes_on_disk": size,
                "index_snapshot": self.snapshot_state, "config": json.loads(self.get_meta("config") or b"{}")}

    def property_total(self, name: str) -> int:
        """A RocksDB integer property summed over both column families (metrics)."""
        return sum(cf.property_int_value(name) or 0 for cf in (self.db, self.index))

    def close(self) -> None:
        """Close the store: stop the index's growth threads, write the index files of a clean close, close RocksDB."""
        if self.db is not None:
            for index in (getattr(self, "memory", None), getattr(self, "words", None)):
                if index is not None:  # no growth left running beside a closed store
                    index.finish_growths()
            if getattr(self, "_ready", False) and self.memory.postings:
                save_index_files(self.path, self.index_version, self.memory, self.words)  # the next open loads them
            self._ready = False
            self.index = None  # type: ignore[assignment]
            self.memory = MemoryIndex()
            self.words = MemoryIndex()
            self.templates.close()
            self._doc_cache.clear()
            self._doc_share.leave()
            self.db.close()
            self.db = None  # type: ignore[assignment]

    def __enter__(self) -> SignatureStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _drop_oldest(cache: dict[int, DocRecord], keep: int) -> None:
    """The oldest entries of `cache` dropped until it holds `keep`, in one pass.

    Not `del cache[next(iter(cache))]` a record: each such iter scans the slots the deletions
    before it emptied, ~7 µs a page once a store holds more records than the cache."""
    if len(cache) > keep:
        for seq in list(itertools.islice(cache, len(cache) - keep)):
            del cache[seq]
