"""The signature store: page records in RocksDB (rocksdict), the index in memory, atomic batched
updates, retention.

Every change a page makes (its DocRecord, time entry, counters) is staged in a `StoreBatch` and
written with one RocksDB WriteBatch, so the store is never half-updated. Pages of the same batch
see each other through the batch's overlay. The store records the parameters it was built with and
refuses to mix in signatures made with others.

The index (index key or page id -> seqs) is a table in memory (`memory_index`), rebuilt from the
page records when the store opens and changed only after a WriteBatch is written: RocksDB keeps
the records and the changelog, the table is a function of them. Lookups for a whole batch of pages
are one pass over the table (`StoreBatch.prefetch`).
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import logging
import os
import re
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from itertools import chain
from pathlib import Path
from typing import Any, cast

import numpy as np
from rocksdict import BlockBasedOptions, Cache, DBCompressionType, Options, Rdict, ReadOptions, WriteBatch

from streamdedup.clean.template import SiteTemplate, TemplateParams
from streamdedup.fingerprints.base import FingerprintMethod
from streamdedup.fingerprints.registry import (
    method_from_description,
    parse_description,
    pinned_setting,
    signature_config,
)
from streamdedup.store import layout, rebuild, retention
from streamdedup.store.errors import (  # noqa: F401 - StoreError and its kinds are imported from here too
    StoreConfigMismatch,
    StoreCorrupt,
    StoreError,
    StoreLocked,
    check_iterator,
    damaged,
    store_error,
)
from streamdedup.store.layout import DocRecord
from streamdedup.store.memory_index import (
    MemoryIndex,
    available_bytes,
    ints_names,
    name_ints,
    name_places,
)
from streamdedup.store.template_store import SiteTemplates, TemplateCache

# 2: postings as values in an index column family, hashed page ids, compact DocRecords; 3: 6-byte index keys;
# 4: the index in memory, rebuilt from the records (which name the keys a page was not filed under)
SCHEMA_VERSION = 4

_BLOCK_CACHE_BYTES = 128 << 20
_block_cache: Cache | None = None  # one for every store of the process (a worker opens one per partition)
_EXPIRE_CHUNK = 4096  # pages removed per WriteBatch by `expire`
_TIME_SCAN_FROM = "time_scan_from"  # meta: `SignatureStore._time_scan_from`
_DOC_CACHE = 1 << 15  # page records kept decoded (`SignatureStore.docs`)
_REBUILD_CHUNK = 1 << 14  # page records indexed at once by a rebuild


def method_tags(names: Sequence[str]) -> dict[str, int]:
    """The 1-byte tag of each method in the store's keys (by sorted name). Routing that must agree
    with a store's keys (the scale-out index partitions) uses this same rule."""
    return {name: tag for tag, name in enumerate(sorted(names))}


def place_bounds(methods: Mapping[int, FingerprintMethod[Any]]) -> dict[int, int | None]:
    """By tag of `methods`, the place among a page's sorted names below which that method's names
    stand (None: no bound): a page's names sort by method tag first, and each method has at most
    `max_index_keys` of them, so a method's names stand below its own bound and every lower tag's
    added up. A record whose first unfiled place (`DocRecord.unfiled`) is at or past a method's
    bound was filed under all that method's keys (`engine.FoundBy.unfiled_bounds`)."""
    bounds: dict[int, int | None] = {}
    total: int | None = 0
    for tag in sorted(methods):
        most = methods[tag].max_index_keys
        total = None if total is None or most is None else total + most
        bounds[tag] = total
    return bounds


def multi_get(db: Rdict, keys: list[bytes]) -> list[bytes | None]:
    """One multi_get (rocksdict's `get` of a list), typed; no keys, no call."""
    return cast("list[bytes | None]", db.get(cast(Any, keys))) if keys else []


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
    """A page's lookup in a caller's work counts (`Detector.WORK_COUNTS`): the candidates `found`
    before the limit (`StoreBatch.last_found`), a page over it (`answered` fewer), the most found
    for one page, those dropped as chance collisions (`answered` - `verified`) and those verified.
    One place for the Detector and the global topology's index partitions."""
    work["candidates_found"] += found
    work["pages_over_candidate_limit"] += int(found > answered)
    work["max_candidates_found"] = max(work["max_candidates_found"], found)
    work["candidates_by_chance"] += answered - verified
    work["candidates_verified"] += verified


def places_among_ints(every: np.ndarray, names: Sequence[bytes]) -> tuple[int, ...]:
    """The places of `names` among the sorted distinct names of `every` (48-bit integers: big-endian
    names sort as their integers), ascending (`DocRecord.unfiled`)."""
    return tuple(name_places(np.asarray(every, dtype=np.uint64), name_ints(names)).tolist())


def answer_of(value: bytes) -> tuple[list[int], int]:
    """The seqs a postings value answers a lookup with (all of them, or a full key's `stop_answer`) and
    how many it holds (a full key's count: MAX_POSTINGS_PER_KEY or more)."""
    count = layout.postings_count(value)
    seqs = layout.seqs_from(value)
    return (stop_answer(seqs) if count >= MAX_POSTINGS_PER_KEY else seqs), count


# Files RocksDB writes in a store directory. Those that hold data (a MANIFEST, tables, a WAL, blobs)
# without a CURRENT file mean a damaged store, never an empty directory.
_ROCKSDB_DATA_FILE = re.compile(r"MANIFEST-\d+|\d+\.(sst|log|blob)")
_ROCKSDB_OTHER_FILE = re.compile(r"IDENTITY|LOCK|LOG(\.old\.\d+)?|OPTIONS-\d+(\.dbtmp)?|rocksdict-config\.json")
_LEXICON_COPY = re.compile(r"lexicon-.+\.json\.gz")  # detector.keep_lexicon_with_state, before the store opens
log = logging.getLogger(__name__)

_SNAPSHOT = "index-snapshot"  # the in-memory index as the store was closed (`SignatureStore.close`)
_WORDS_SNAPSHOT = "words-snapshot"  # and the chance-check words beside it (`SignatureStore.words`)
_SNAPSHOT_FILES = (_SNAPSHOT, _SNAPSHOT + ".tmp", _WORDS_SNAPSHOT, _WORDS_SNAPSHOT + ".tmp")
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


def foreign_files(names: Iterable[str]) -> list[str]:
    """The names that are neither RocksDB's nor a lexicon copy: a directory holding any is not a store."""
    return [n for n in names if not (_ROCKSDB_DATA_FILE.fullmatch(n) or _ROCKSDB_OTHER_FILE.fullmatch(n)
                                     or n == "CURRENT" or n in _SNAPSHOT_FILES or _LEXICON_COPY.fullmatch(n))]


def _params_to_keep(built: Mapping[str, str], wanted: Mapping[str, str]) -> list[str]:
    """`method.name=value` of each method parameter whose stored value differs from this run's,
    for methods both name (a store built before a default changed: the flags that keep it)."""
    out = []
    for key in sorted(set(built) & set(wanted)):
        if not key.startswith("method."):
            continue
        try:
            name, stored, _ = parse_description(built[key])
            other, asked, _ = parse_description(wanted[key])
        except ValueError:
            continue
        if name == other:
            out += [f"{name}.{k}={v}" for k, v in stored.items() if k != "lexicon" and asked.get(k) != v]
    return out


class SignatureStore:
    def __init__(self, path: str | os.PathLike[str], methods: Sequence[FingerprintMethod[Any]],
                 config: Mapping[str, str], template_params: TemplateParams | None = None) -> None:
        """`config`: what else the signatures depend on (cleaning, tokeniser); the methods'
        own parameters are recorded from `methods`. `template_params`: what the site templates
        were learned with (their delta records are replayed with them)."""
        self.path = Path(path)
        self.template_params = template_params
        existed = self._prepare_directory(self.path)
        self.methods = {m.name: m for m in methods}
        self.tags = method_tags(list(self.methods))
        self._by_tag = {tag: self.methods[name] for name, tag in self.tags.items()}
        # the tag of the method whose short index keys find pages by chance (`tells_chance_keys`; the
        # first if several): its stored signatures are kept in memory too (`words`), to tell those unread
        self.word_tag = min((tag for tag, m in self._by_tag.items() if m.tells_chance_keys), default=None)
        # the tags of the methods any of whose matches share one of their keys (`keys_find_every_match`)
        self.complete_tags = frozenset(tag for tag, m in self._by_tag.items() if m.keys_find_every_match)
        self.templates = TemplateCache()  # site templates as last written, decoded (`StoreBatch.template`)
        self._doc_cache: dict[int, DocRecord] = {}  # page records read lately, decoded (`docs`)
        # by tag, the place below which a method's names stand among a page's (`place_bounds`)
        self.unfiled_bounds = place_bounds(self._by_tag)
        self.db = self._open(self.path, create=not existed)
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
        self._time_scan_from = self.get_meta(_TIME_SCAN_FROM) or layout.TIME
        # seq -> the low WORD_BITS bits of the page's `word_tag` signature (its first 8 bytes, little
        # endian): a MemoryIndex whose "names" are seqs and whose "seqs" are those bits
        self.words = MemoryIndex()
        self.memory = self._load_snapshot() or MemoryIndex()
        if not self.memory.postings:
            self._rebuild_index()
        self._ready = True

    def _load_snapshot(self) -> MemoryIndex | None:
        """The index as the store was last closed, if no write changed it since (the snapshot
        names the store's `index_version`, which every write that changes the index counts up)
        and its bytes are those the close wrote (its checksum); else None, the index to be rebuilt
        from the page records. A damaged snapshot is a WARNING; `snapshot_state` says which (`stats`).
        The file is used once: deleted as it is read, so a crash later never finds it."""
        path, words_path = self.path / _SNAPSHOT, self.path / _WORDS_SNAPSHOT
        if not path.exists():
            words_path.unlink(missing_ok=True)
            self.snapshot_state = "none: the index was rebuilt from the page records"
            return None
        size = sum(MemoryIndex.snapshot_table_bytes(file, self.index_version) or file.stat().st_size
                   for file in (path, words_path) if file.exists())  # the tables as loaded, free slots too
        self._check_memory(size, "its snapshot")  # kept: a run with more memory loads it
        memory = words = None
        reading = path
        try:
            memory = MemoryIndex.load(path, self.index_version)
            reading = words_path
            if words_path.exists():
                words = MemoryIndex.load(words_path, self.index_version)
        except (OSError, ValueError) as err:  # SnapshotDamaged is a ValueError
            memory = None
            self.snapshot_state = f"damaged ({reading.name}: {err}): the index was rebuilt from the page records"
            log.warning("the index snapshot of the store at %s is damaged (%s: %s): the index is rebuilt from "
                        "the page records", self.path, reading.name, err)
        else:
            self.snapshot_state = "loaded"
        path.unlink()
        words_path.unlink(missing_ok=True)
        if memory is None or (words is None and self.word_tag is not None):
            if self.snapshot_state == "loaded":  # not believed, as it is not this store's last close's
                self.snapshot_state = ("stale (an earlier format, or older than the store's last index change): "
                                       "the index was rebuilt from the page records")
            return None  # both or neither: the words are rebuilt with the index
        self.words = words or MemoryIndex()
        return memory

    def _save_snapshot(self) -> None:
        for name, table in ((_WORDS_SNAPSHOT, self.words), (_SNAPSHOT, self.memory)):  # the index last:
            tmp = self.path / (name + ".tmp")  # its file is what says a snapshot is there
            table.save(tmp, self.index_version)
            os.replace(tmp, self.path / name)

    def _rebuild_index(self, chunk: int | None = None, bulk: bool = True) -> None:
        """The in-memory index from the page records: every page under its keys, but those its
        record names as not filed (full keys when it was added), and under its id. Pages are read
        in chunks and their keys named by method, one array pass each (`layout.index_names`).
        `bulk`: a chunk's raw records at once (`rebuild.index_records`, the same table, ~N x
        faster); else each record decoded (`_index_pages`)."""
        chunk = chunk or _REBUILD_CHUNK
        keys: list[bytes] = []
        values: list[bytes] = []
        pages = self._count_pages()
        sized = False
        for key, value in self._scan(self.db, layout.DOC):
            if key[:1] != layout.DOC:
                break
            keys.append(key)
            values.append(value)
            if len(keys) == chunk:
                self._index_records(keys, values, bulk)
                if not sized:  # the table sized once, from the first chunk's postings a page
                    self._reserve(self.memory.postings * pages // chunk)
                    sized = True
                keys, values = [], []
        self._index_records(keys, values, bulk)

    def _count_pages(self) -> int:
        """How many page records the store holds (their keys only)."""
        pages = 0
        for key in self.db.keys(from_key=layout.DOC):
            if cast(bytes, key)[:1] != layout.DOC:
                break
            pages += 1
        return pages

    def _reserve(self, postings: int) -> None:
        """Room for this many postings in the index, checked against the memory the process has
        (`_check_memory`), so a rebuild fills a table of its final size without doubling it."""
        postings += postings // 16  # some room: a page's postings vary
        self._check_memory(self.memory.reserved_bytes(postings) - self.memory.size_bytes,
                           f"{postings:,} postings")
        self.memory.reserve(postings)

    def _check_memory(self, needed: int, what: str, opening: bool = True) -> None:
        """Refuse to open a store whose index does not fit in the memory left (or, `opening`
        False, to grow it), in one line naming the fix, rather than be killed by the kernel while
        loading, rebuilding or growing it."""
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
        """Refuse a batch whose postings (`names`) and pages (`seqs`, the chance check's words) would
        grow the index past the memory left, before anything of it is written: the store stays as
        the last batch left it, and the process ends in one line instead of the kernel's kill."""
        needed = self.memory.growth_bytes(names) + (self.words.growth_bytes(seqs) if self.word_tag is not None else 0)
        if needed:
            self._check_memory(needed, f"to grow past {self.memory.postings:,} postings; nothing of the batch "
                                       "was written", opening=False)

    def _index_records(self, keys: list[bytes], values: list[bytes], bulk: bool) -> None:
        if bulk:
            rebuild.index_records(self, keys, values)
        else:
            self._index_pages([DocRecord.decode(layout.seq_from(k), v) for k, v in zip(keys, values, strict=True)])

    def _index_pages(self, docs: Sequence[DocRecord]) -> None:
        keys: dict[int, list[bytes]] = {}
        owners: dict[int, list[int]] = {}
        names: list[bytes] = []
        seqs: list[int] = []
        for doc in docs:
            if doc.unfiled:  # the few pages that met a full key: one by one
                filed = self.filed_names(doc)
                names += filed
                seqs += [doc.seq] * len(filed)
                continue
            for tag, tag_keys in self.index_keys(doc).items():
                keys.setdefault(tag, []).extend(tag_keys)
                owners.setdefault(tag, []).extend([doc.seq] * len(tag_keys))
            names.append(layout.page_id_key(doc.page_id))
            seqs.append(doc.seq)
        for tag, tag_keys in keys.items():
            names += layout.index_names(tag, tag_keys)
            seqs += owners[tag]
        self.memory.insert(names, seqs)  # a name twice for one page (a hash collision) is filed once
        if (word_tag := self.word_tag) is not None:
            self.file_words([doc.seq for doc in docs], [doc.signatures.get(word_tag) for doc in docs])

    @staticmethod
    def _word_postings(seqs: Sequence[int], encoded: Sequence[bytes | None]) -> tuple[np.ndarray, np.ndarray]:
        """`words`' postings of these pages: their seqs and the low WORD_BITS bits of their
        `word_tag` signatures (encoded; None: the page has none, and no posting)."""
        words, has = _words(encoded)
        kept = np.asarray(has, dtype=np.bool_)
        return np.asarray(seqs, dtype=np.uint64)[kept], words[kept] & np.uint64(WORD_MASK)

    def words_of(self, encoded: Sequence[Mapping[int, bytes]]) -> np.ndarray | None:
        """Each page's word for the chance check, from its encoded signatures by tag (0 for a
        page without one, which names no SimHash key); None if no method tells chance keys."""
        if self.word_tag is None:
            return None
        return page_words([sigs.get(self.word_tag) for sigs in encoded])

    def file_words(self, seqs: Sequence[int], encoded: Sequence[bytes | None]) -> None:
        """Keep these pages' `word_tag` signatures (encoded; None: the page has none) in `words`."""
        if self.word_tag is not None:
            self.words.insert_ints(*self._word_postings(seqs, encoded))

    def stored_word_array(self, seqs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Whether each of these stored pages has a kept word (`words`), and its bits (0 if not)."""
        counts, starts, out = self.words.found_ints(np.asarray(seqs, dtype=np.uint64))
        has = counts > 0
        bits = np.zeros(len(counts), dtype=np.uint64)
        bits[has] = out[starts[has]]
        return has, bits

    def stored_words(self, seqs: Sequence[int]) -> dict[int, int]:
        """`stored_word_array` by seq (a page without a word: absent)."""
        has, bits = self.stored_word_array(np.asarray(seqs, dtype=np.uint64))
        return {seq: int(b) for seq, h, b in zip(seqs, has.tolist(), bits.tolist(), strict=True) if h}

    def chance_collisions(self, seqs: np.ndarray, words: Any) -> np.ndarray:
        """Which of these stored pages the `word_tag` method does not find for `words` (a page's
        own word, or one per stored page), from their kept bits: chance collisions of its keys.
        A page without a kept word is not one."""
        has, bits = self.stored_word_array(seqs)
        return has & ~self._by_tag[cast(int, self.word_tag)].index_finds_bits(words, bits, WORD_MASK)

    def filed_names(self, doc: DocRecord) -> list[bytes]:
        """The index names a stored page is filed under: its id's, and its keys' but those its
        record names as not filed (`DocRecord.unfiled`: places in the sorted names)."""
        keys = sorted({n for tag_names in self.index_names(self.index_keys(doc)).values() for n in tag_names})
        if doc.unfiled:
            skipped = set(doc.unfiled)
            keys = [name for i, name in enumerate(keys) if i not in skipped]
        keys.append(layout.page_id_key(doc.page_id))
        return keys

    @classmethod
    def open_existing(cls, path: str | os.PathLike[str]) -> SignatureStore:
        """Open a store with the very methods and parameters it was built with (for maintenance)."""
        if not cls._prepare_directory(Path(path), create=False):
            raise StoreError(f"no store at {path}: give --state the directory of a store (made by "
                             "`streamdedup dedup` or a worker)")
        db = cls._open(Path(path), create=False)
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

    @staticmethod
    def _prepare_directory(path: Path, create: bool = True) -> bool:
        """Whether `path` holds a store. A new one is made only in an empty or new directory:
        RocksDB files without CURRENT are a damaged store (a new one over them would forget
        every page), other files are not ours."""
        if path.exists() and not path.is_dir():
            raise StoreError(f"{path} is a file, not a store directory: give --state a directory")
        if (path / "CURRENT").exists():
            return True
        names = sorted(os.listdir(path)) if path.exists() else []
        data = [n for n in names if _ROCKSDB_DATA_FILE.fullmatch(n)]
        if data:
            raise StoreCorrupt(damaged(f"the store at {path}", f"it has {', '.join(data[:3])} but no CURRENT file"))
        foreign = foreign_files(names)
        if foreign:
            raise StoreError(f"{path} is not a store and not empty (it holds {foreign[0]!r}): a new store is only "
                             "made in an empty or new directory; give --state a store or an empty directory")
        if create:
            path.mkdir(parents=True, exist_ok=True)
        return False

    @classmethod
    def _open(cls, path: Path, create: bool) -> Rdict:
        options = cls._options()
        options.create_if_missing(create)
        try:
            return Rdict(str(path), options=options, column_families={layout.INDEX_CF: cls._index_options()})
        except Exception as err:  # noqa: BLE001 - rocksdict raises plain Exceptions
            raise store_error(err, path) or StoreError(f"cannot open the store at {path}: {err}") from None

    @staticmethod
    def _table() -> BlockBasedOptions:
        """Whole-key bloom filters (most lookups miss) and a block cache shared by every store of
        the process (a worker opens one per partition)."""
        global _block_cache
        if _block_cache is None:
            _block_cache = Cache(_BLOCK_CACHE_BYTES)
        table = BlockBasedOptions()
        table.set_bloom_filter(10, False)
        table.set_block_cache(_block_cache)
        table.set_format_version(5)
        return table

    @classmethod
    def _options(cls) -> Options:
        """The database and its default column family: lz4 above, zstd at the bottom level
        (where most bytes live)."""
        options = Options(raw_mode=True)
        options.create_if_missing(True)
        options.create_missing_column_families(True)
        options.set_max_background_jobs(2)
        options.set_block_based_table_factory(cls._table())
        options.set_compression_type(DBCompressionType.lz4())
        options.set_bottommost_compression_type(DBCompressionType.zstd())
        options.set_level_compaction_dynamic_level_bytes(True)
        options.set_write_buffer_size(16 << 20)
        return options

    @classmethod
    def _index_options(cls) -> Options:
        """The index column family: 6-byte random keys, point lookups that mostly miss, so a
        whole-key bloom filter in the memtable too. (A hashed memtable inserts 3x faster but
        answers lookups 1.7x slower: lookups are the larger half, so the skip list stays.)"""
        options = cls._options()
        options.set_memtable_whole_key_filtering(True)
        options.set_memtable_prefix_bloom_ratio(0.1)
        options.set_write_buffer_size(32 << 20)
        options.set_max_write_buffer_number(3)
        return options

    # -- configuration -------------------------------------------------------------------
    def _check_config(self, config: Mapping[str, str]) -> None:
        stored = self.get_meta("config")
        wanted = dict(sorted(config.items()))
        if stored is None:
            self.db[layout.meta_key("config")] = json.dumps(wanted).encode()
            return
        built = json.loads(stored)
        if built.get("schema") != wanted.get("schema"):
            self.close()
            raise StoreConfigMismatch(
                f"the store at {self.path} has schema {built.get('schema')!r}; this version of streamdedup reads "
                f"schema {wanted.get('schema')!r} (since 4 the index lives in memory, rebuilt from the page records, "
                "which must name the keys each page was filed under). Build a new store: file mode, rerun the "
                "inputs with a new --state (or --fresh); a worker, move the directory away and it rebuilds its "
                "store from Kafka")
        diffs = [f"  {k}: store has {built.get(k)!r}, this run asks for {wanted.get(k)!r}"
                 for k in sorted(set(built) | set(wanted))
                 if pinned_setting(k, built.get(k)) != pinned_setting(k, wanted.get(k))]
        if diffs:
            self.close()
            keep = _params_to_keep(built, wanted)
            raise StoreConfigMismatch(
                f"the store at {self.path} was built with other parameters:\n" + "\n".join(diffs)
                + "\nSignatures made with different parameters cannot be compared. Use a new --state "
                  "directory, or run with the parameters the store was built with"
                + (f" ({' '.join(f'--param {p}' for p in keep)}, or the same under [params] in --config)."
                   if keep else "."))

    def get_meta(self, name: str) -> bytes | None:
        return self.db.get(layout.meta_key(name))

    def metas(self, prefix: str) -> Iterator[tuple[str, bytes]]:
        """The store's meta entries whose names start with `prefix`: each name and value."""
        start = layout.meta_key(prefix)
        for key, value in self._scan(self.db, start):
            if not key.startswith(start):
                return
            yield key[len(layout.META):].decode(), value

    def get_journal(self, name: str) -> bytes | None:
        return self.db.get(layout.journal_key(name))

    def journal_names(self, prefix: str, limit: int | None = None) -> list[str]:
        """The names of the journal entries that start with `prefix`, in order (at most `limit`)."""
        start, names = layout.journal_key(prefix), list[str]()
        for key in self.db.keys(from_key=start):
            if not isinstance(key, bytes) or not key.startswith(start) or (limit is not None and len(names) >= limit):
                break
            names.append(key[len(layout.JOURNAL):].decode())
        return names

    def get_meta_int(self, name: str, default: int) -> int:
        value = self.get_meta(name)
        return default if value is None else int(value)

    # -- reads -----------------------------------------------------------------------------
    def lookup(self, tag: int, key: bytes) -> list[int]:
        """Seqs of the pages filed under `key` of method `tag`, oldest first."""
        return self.memory.seqs([layout.index_key(tag, key)])[0]

    def doc(self, seq: int) -> DocRecord | None:
        data = self.db.get(layout.doc_key(seq))
        return None if data is None else DocRecord.decode(seq, data)

    def docs(self, seqs: Sequence[int]) -> dict[int, DocRecord | None]:
        """Several DocRecords with one multi_get; those read lately are kept decoded (a hot key's
        first pages are every batch's candidates). A stored record never changes, and one removed
        leaves the cache with it (`_remove`); a seq is reused only after a batch that was never
        written, whose records were never read from here."""
        cache = self._doc_cache
        missing = [s for s in seqs if s not in cache]
        read: dict[int, DocRecord | None] = {}
        if missing:
            for s, v in zip(missing, multi_get(self.db, [layout.doc_key(s) for s in missing]), strict=True):
                doc = read[s] = None if v is None else DocRecord.decode(s, v)
                if doc is not None:
                    cache[s] = doc
        found = {s: read[s] if s in read else cache[s] for s in seqs}
        while len(cache) > _DOC_CACHE:  # after the answer: a record asked for may be the oldest kept
            del cache[next(iter(cache))]
        return found

    def seq_for(self, page_id: str) -> int | None:
        return self._seq_with_id(page_id, self.memory.values([layout.page_id_key(page_id)])[0], self.doc)

    @staticmethod
    def _seq_with_id(page_id: str, value: bytes | None, doc: Any) -> int | None:
        """The page with this id among those with its id hash (a hash collision is told apart by
        the DocRecord, which holds the id itself)."""
        for seq in reversed(layout.seqs_from(value)):
            record = doc(seq)
            if record is not None and record.page_id == page_id:
                return seq
        return None

    def _scan(self, cf: Rdict, start: bytes | None = None, verify: bool = False) -> Iterator[tuple[bytes, bytes]]:
        """Keys and values from `start` (or the first key). A damaged block raises StoreCorrupt:
        a RocksDB iterator just stops there and says so only in its status. `verify`: check every
        block's checksum without filling the block cache (a whole-store scan)."""
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
        """Remove the parameters recorded at open from a store that holds nothing else yet (no
        page, template or offset), so that the next open under any parameters takes it as new:
        a run stopped for its parameters before its first commit must not pin the directory to them."""
        config = layout.meta_key("config")
        if not any(key != config for key, _ in itertools.islice(self._scan(self.db), 2)):
            del self.db[config]

    def iter_docs(self) -> Iterator[DocRecord]:
        for key, value in self._scan(self.db, layout.DOC):
            if key[:1] != layout.DOC:
                return
            yield DocRecord.decode(layout.seq_from(key), value)

    def index_keys(self, doc: DocRecord) -> dict[int, list[bytes]]:
        """The reverse index: every key the page is filed under, recomputed from its signatures."""
        keys = {}
        for tag, data in doc.signatures.items():
            method = self._by_tag[tag]
            keys[tag] = method.index_keys(method.decode(data))
        return keys

    @staticmethod
    def index_names(keys: Mapping[int, list[bytes]]) -> dict[int, list[bytes]]:
        """Index keys as the index column family names them (tag + 5 bytes), by method tag."""
        return {tag: layout.index_names(tag, tag_keys) for tag, tag_keys in keys.items()}

    def index_names_of_records(self, pages: Sequence[Mapping[int, bytes]]) -> list[list[bytes]]:
        """Each page's index names (`index_names` of its `index_keys`, every method's, by method
        in the order its signatures come) from its encoded signatures by tag: each method's keys
        of all the pages made in one call where it offers one (`index_key_rows`, as the rebuild
        after a crash makes them), all named in one array pass."""
        names, ends = self.index_name_ints_of_records(pages)
        flat = ints_names(names)
        return [flat[start: end] for start, end in zip([0, *ends[:-1]], ends, strict=True)]

    def index_name_ints_of_records(self, pages: Sequence[Mapping[int, bytes]]) -> tuple[np.ndarray, list[int]]:
        """`index_names_of_records` as 48-bit integers (`memory_index.name_ints`): every page's
        names back to back in one array, and where each page's end (`StoreBatch.stage`)."""
        rows_of: dict[int, Sequence[int]] = {}
        first = pages[0].keys() if pages else {}.keys()
        if all(signatures.keys() == first for signatures in pages):  # every page signed by the same methods
            rows_of = dict.fromkeys(first, range(len(pages)))
        else:
            for i, signatures in enumerate(pages):
                for tag in signatures:
                    cast(list[int], rows_of.setdefault(tag, [])).append(i)
        if not rows_of:
            return np.zeros(0, dtype=np.uint64), [0] * len(pages)
        named: list[np.ndarray] = []
        owners: list[np.ndarray] = []
        for tag, rows in rows_of.items():
            names, counts = rebuild.key_name_ints(tag, self._by_tag[tag], [pages[i][tag] for i in rows])
            named.append(names)
            owners.append(np.repeat(np.asarray(rows, dtype=np.int64), counts))
        owner = np.concatenate(owners)
        order = np.argsort(owner, kind="stable")  # by page, each page's methods in order
        ends = np.cumsum(np.bincount(owner, minlength=len(pages))).tolist()
        return np.concatenate(named)[order], ends

    # -- writes ----------------------------------------------------------------------------
    def batch(self) -> StoreBatch:
        return StoreBatch(self)

    def _remove(self, docs: Sequence[DocRecord], wb: WriteBatch | None = None) -> None:
        """Remove these pages: their doc and time entries in one WriteBatch (with whatever `wb`
        holds already), then, once it is written, their postings from the in-memory index."""
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
            self.words.remove_ints(*self._word_postings([d.seq for d in docs], [d.signatures.get(tag) for d in docs]))

    def delete_page(self, page_id: str) -> bool:
        """Forget a page: it no longer matches anything. Returns False if it was not stored."""
        seq = self.seq_for(page_id)
        doc = None if seq is None else self.doc(seq)
        if doc is None:
            return False
        self._remove([doc])
        return True

    def expire_after_commit(self, before_ms: int | None) -> int:
        """What every mode's commit expires: the pages before `before_ms` (the retention clock's
        `expire_before`; None: no retention) within `retention.EXPIRY_BUDGET_S`, so a backlog
        drains over the next batches; returns how many (the `pages_expired` work count)."""
        return 0 if before_ms is None else self.expire(before_ms, budget_s=retention.EXPIRY_BUDGET_S)

    def expire(self, before_ms: int, limit: int | None = None, budget_s: float | None = None) -> int:
        """Remove the pages whose event time is before `before_ms`, oldest first, a chunk a
        WriteBatch; returns how many. At most `limit` pages; with `budget_s`, no chunk starts once
        that many seconds have passed (the first always runs), so a backlog drains over several
        calls (`retention.EXPIRY_BUDGET_S`) and what a call leaves is expired by the next."""
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
        """`_remove` of the pages of these time entries (a time entry whose page is gone goes
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
        wb.put(layout.meta_key(_TIME_SCAN_FROM), scan_from)
        self.db.write(wb)
        self._time_scan_from = scan_from
        for seq in seqs:
            self._doc_cache.pop(seq, None)
        self.index_version += 1
        rebuild.unindex_records(self, [key for key, _ in found], [value for _, value in found])

    def _expired_time_keys(self, bound: bytes, limit: int) -> list[tuple[bytes, int]]:
        """The first time entries before `bound`, at most `limit`, from where the last removal
        ended (`_time_scan_from`): a scan from the first time key stepped over the tombstone of
        every entry removed since the last compaction, so each batch's expiry cost more than the
        one before (`python bench/expire.py`, its `steady` part)."""
        found: list[tuple[bytes, int]] = []
        for key, _ in self._scan(self.db, self._time_scan_from):
            if len(found) >= limit or key[:1] != layout.TIME or key >= bound:
                break
            found.append((key, layout.time_key_parts(key)[1]))
        return found

    def stats(self) -> dict[str, Any]:
        """Counts from a full scan that verifies every block's checksum: a damaged store raises
        StoreCorrupt instead of looking healthy with fewer keys."""
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
                "index_snapshot": self.snapshot_state,
                "config": json.loads(self.get_meta("config") or b"{}")}

    def property_total(self, name: str) -> int:
        """A RocksDB integer property summed over both column families (metrics)."""
        return sum(cf.property_int_value(name) or 0 for cf in (self.db, self.index))

    def close(self) -> None:
        if self.db is not None:
            for index in (getattr(self, "memory", None), getattr(self, "words", None)):
                if index is not None:  # no growth left running beside a closed store
                    index.finish_growths()
            if getattr(self, "_ready", False) and self.memory.postings:
                self._save_snapshot()  # the next open loads it instead of rebuilding
            self._ready = False
            self.index = None  # type: ignore[assignment]
            self.memory = MemoryIndex()
            self.words = MemoryIndex()
            self.templates.clear()
            self._doc_cache.clear()
            self.db.close()
            self.db = None  # type: ignore[assignment]

    def __enter__(self) -> SignatureStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _IdKeys(dict[str, bytes]):
    """Page id -> `layout.page_id_key`, each hashed when first asked."""

    def __missing__(self, page_id: str) -> bytes:
        key = self[page_id] = layout.page_id_key(page_id)
        return key


class StoreBatch:
    """Staged changes of a group of pages, visible to later pages of the group, committed at once.

    Postings values read for the batch are cached; a page files itself by appending its seq to
    the cached value (read-modify-write: one writer per store), and commit writes the values.
    """

    def __init__(self, store: SignatureStore) -> None:
        self.store = store
        self._seq = store.get_meta_int("next_seq", 0)
        self._values: dict[bytes, bytes | None] = {}  # index / id key -> postings value (cache + staged)
        self._filed_names: list[bytes] = []  # postings added (name, seq), for the in-memory index at commit
        self._filed_seqs: list[int] = []
        # postings taken out of full keys by unique pages filed in their place (name, seq; `_add`):
        # out of the in-memory index at commit, and each page's record names the key as not filed
        self._displaced: list[tuple[bytes, int]] = []
        # postings value -> the seqs it answers and how many it holds (`answer_of`; hot keys: read often)
        self._answers: dict[bytes, tuple[list[int], int]] = {}
        self._live: set[bytes] = set()  # names whose value has seqs (the rest: known empty, or unread)
        self._docs: dict[int, DocRecord] = {}
        self._committed_docs: dict[int, DocRecord | None] = {}
        self._ids: dict[str, int] = {}
        self._id_keys = _IdKeys()  # page id -> its index name, hashed once a batch (`stage`, `seq_for`, `_add` ask)
        self._meta: dict[str, bytes] = {}
        self._journal: dict[str, bytes] = {}
        self._journal_deletes: list[tuple[str, str]] = []  # [start, end) name ranges, removed before the puts
        self._templates = SiteTemplates(store.db, store.template_params, store.templates)
        self.last_found = 0  # candidates of the last `candidates` call before the limit
        # of the last `candidates` answer, the seqs only one name found, a `store.word_tag` name of
        # at most CHANCE_POSTINGS pages
        self.unvouched: set[int] = set()
        # of the last `candidates` call, the (tag, answer) of each name of a method whose keys find
        # every match of its test that holds pages (`found_by`; an answer as `answer_of` gives it)
        self._keyed: list[tuple[int, tuple[list[int], int]]] = []
        self._quiet: Sequence[bytes] | None = None  # the names of the last `candidates` call, if all read and empty
        # `stage`: the batch's names as integers, and those only one page of the batch names, with no
        # stored page (filed at commit, as integers, under the seq of the page that names them)
        self._staged: tuple[np.ndarray, list[int]] | None = None
        # (names, the page of the batch naming each, their first free slots in the table and its epoch)
        self._lone: tuple[np.ndarray, np.ndarray, np.ndarray, int] | None = None
        self._page_seqs: np.ndarray | None = None  # the seq each staged page was added as (-1: not added)
        self._chance_only: dict[int, int] = {}  # `stage`: page -> its candidates, all chance collisions

    def __len__(self) -> int:
        return len(self._docs)

    def next_seq(self) -> int:
        return self._seq

    def prefetch(self, names: Iterable[bytes], page_ids: Iterable[str] = ()) -> None:
        """Read these index keys (`SignatureStore.index_names`) and page ids, and the DocRecords
        they name, with one multi_get each: the lookups of a whole batch of pages at once."""
        wanted = set(names)
        id_keys = self._id_keys
        wanted.update(id_keys[page_id] for page_id in page_ids)
        values = self._values
        missing = [n for n in wanted if n not in values]
        if not missing:
            return
        read = self.store.memory.values(missing)
        values.update(zip(missing, read, strict=True))
        hits = [(n, v) for n, v in zip(missing, read, strict=True) if v is not None]
        self._live.update(n for n, _ in hits)
        seqs = {s for _, v in hits for s in self._answer(v)[0]}
        unread = [s for s in seqs if s not in self._committed_docs and s not in self._docs]
        self._committed_docs.update(self.store.docs(unread))

    def stage(self, names: np.ndarray, ends: Sequence[int], page_ids: Iterable[str] = (),
              words: np.ndarray | None = None) -> list[list[bytes]]:
        """`prefetch` for a whole batch of pages from their index names as 48-bit integers
        (`SignatureStore.index_name_ints_of_records`: page i's names end at `ends[i]`), on a batch
        with nothing staged yet. Returns each page's *shared* names as bytes, in its order: those a
        stored page is filed under or that the batch names more than once. Only these can give or
        take a candidate: the page's other names (every name of a unique page) have no page before
        it and none of the batch after it, so `candidates` of its shared names is `candidates` of
        all its names, and `add_staged` files the others as integers when the batch commits, without
        a `bytes` or a dict entry each. (Lookups of those names by bytes inside the batch, `lookup`,
        do not see them: the Detector makes none.)

        A page whose every candidate is a chance collision (`chance_only`: found by SimHash keys of
        a few pages, none named twice in the batch) has none either: its names give no candidate it
        would judge and take none from the batch, so it is filed as integers too (at 10 M stored
        pages, most pages: ~2 chance collisions a page)."""
        if self._docs or self._staged is not None:
            raise ValueError("stage() takes the whole batch, before any page is added")
        self.prefetch((), page_ids)
        names = np.ascontiguousarray(names, dtype=np.uint64)
        self._staged = (names, list(ends))
        self._page_seqs = np.full(len(ends), -1, dtype=np.int64)
        counts, free, epoch = self.store.memory.counts_free_ints(names)
        order = np.argsort(names)  # equal names side by side (in any order among themselves)
        repeated = np.zeros(len(names), dtype=np.bool_)
        if len(names) > 1:
            same = names[order[1:]] == names[order[:-1]]
            repeated[order[1:]] |= same
            repeated[order[:-1]] |= same
        sizes = np.diff(np.asarray([0, *ends], dtype=np.int64)).astype(np.int64)
        owner = np.repeat(np.arange(len(ends), dtype=np.int64), sizes)
        has_postings = counts > 0
        stored = np.flatnonzero(has_postings)
        skipped: set[int] = set()
        shared = repeated | has_postings
        if len(stored):
            found, starts, seqs = self.store.memory.found_ints(names[stored], counts[stored])
            if words is not None:
                skipped = self._by_chance_only(names[stored], owner[stored], found, seqs, words, owner[repeated],
                                               len(ends))
                if self._chance_only:
                    told = np.zeros(len(ends), dtype=np.bool_)
                    told[list(self._chance_only)] = True
                    shared &= ~told[owner]
        lone = np.flatnonzero(~shared)
        # a lone name of a page told to have only chance collisions has postings: its first free
        # slot is still where `_insert` would put it (`MemoryIndex.insert_ints`)
        self._lone = (names[lone], owner[lone], free[lone], epoch)
        at = np.flatnonzero(shared)
        if not len(at):
            return [[] for _ in ends]
        as_bytes = ints_names(names[at])
        values = self._values
        hits: list[bytes] = []
        if len(stored):
            kept = shared[stored]  # the stored names of pages that judge candidates
            answers = self._answers
            for j, count, start in zip(np.searchsorted(at, stored[kept]).tolist(), found[kept].tolist(),
                                       starts[kept].tolist(), strict=True):
                name = as_bytes[j]
                if name not in values:
                    ordered = sorted(seqs[start: start + count].tolist())
                    value = values[name] = layout.seqs_value(ordered)
                    # its answer as `answer_of` would decode it from the value (read by `candidates`)
                    answers[value] = (stop_answer(ordered) if count >= MAX_POSTINGS_PER_KEY else ordered, count)
                    hits.append(name)
        for name in as_bytes:
            if name not in values:
                values[name] = None
        self._live.update(hits)
        answers_seqs = {s for name in hits for s in self._answers[cast(bytes, values[name])][0]}
        unread = [s for s in answers_seqs if s not in skipped and s not in self._committed_docs and s not in self._docs]
        self._committed_docs.update(self.store.docs(unread))
        cuts = np.searchsorted(at, np.asarray(ends, dtype=np.int64)).tolist()
        return [as_bytes[start: end] for start, end in zip([0, *cuts[:-1]], cuts, strict=True)]

    def _by_chance_only(self, named: np.ndarray, owners: np.ndarray, found: np.ndarray, seqs: np.ndarray,
                        words: np.ndarray, sharing: np.ndarray, pages: int) -> set[int]:
        """The stored pages whose records the batch need not read: wherever the batch finds them,
        they are under a SimHash key of the page naming it that holds at most CHANCE_POSTINGS
        pages, found by no other name, and their kept bits are too far from that page's own word
        (`words[p]`): chance collisions, which `without_chance` drops unread. `named[i]` (a 48-bit
        name, page `owners[i]`'s) has the `found[i]` postings of `seqs`. `sharing`: the pages
        with a name another page of the batch names too.

        Also notes the pages (`chance_only`) whose every candidate is such a collision of their
        own, each found by one of their names, none of them shared in the batch: what `candidates`
        and `without_chance` would find and drop one page at a time, told for the batch at once."""
        tag = self.store.word_tag
        if tag is None or not len(seqs):
            return set()
        asked = ((named >> np.uint64(40)) == np.uint64(tag)) & (found <= CHANCE_POSTINGS)
        if not asked.any():
            return set()
        at = np.repeat(asked, found)  # the postings of the SimHash names asked about
        far = self.store.chance_collisions(seqs[at], np.repeat(words[owners[asked]], found[asked]))
        self._note_chance_only(np.repeat(owners, found), seqs, at, far, sharing, pages)
        told = seqs[at][far]
        if not len(told):
            return set()
        needed = np.concatenate([seqs[at][~far], seqs[~at]])  # found some other way too: read
        return set(told[~np.isin(told, needed)].tolist())

    def _note_chance_only(self, posting_owners: np.ndarray, seqs: np.ndarray, asked: np.ndarray, far: np.ndarray,
                          sharing: np.ndarray, pages: int) -> None:
        """`chance_only` from the batch's postings of stored pages (`seqs[i]` found for page
        `posting_owners[i]`; `asked[i]`: under a SimHash key of at most CHANCE_POSTINGS pages,
        and then `far`: too far from the page's word; `sharing`: pages, with repeats)."""
        chance = np.zeros(len(seqs), dtype=np.bool_)
        chance[asked] = far
        spoiled = np.zeros(pages, dtype=np.bool_)
        spoiled[sharing] = True
        spoiled[posting_owners[~chance]] = True
        open_ = ~spoiled[posting_owners]  # only pages not yet spoiled need the next test
        pairs = np.sort((posting_owners[open_].astype(np.uint64) << np.uint64(47)) | seqs[open_])  # seqs < 2^47
        twice = pairs[1:][pairs[1:] == pairs[:-1]]  # a stored page found by two names of one page
        spoiled[(twice >> np.uint64(47)).astype(np.int64)] = True
        per_page = np.bincount(posting_owners, minlength=pages)
        clean = np.flatnonzero((per_page > 0) & (per_page <= MAX_CANDIDATES) & ~spoiled)
        self._chance_only = dict(zip(clean.tolist(), per_page[clean].tolist(), strict=True))

    def chance_only(self, page: int) -> int:
        """How many candidates the staged batch's page `page` has if every one is a chance
        collision of SimHash's short keys that `without_chance` drops (`_by_chance_only`); 0 if
        it has none or any other. Such a page's `candidates` and `without_chance` need not run:
        their answer is that nothing is left to judge."""
        return self._chance_only.get(page, 0)

    def _value(self, name: bytes) -> bytes | None:
        if name not in self._values:
            value = self._values[name] = self.store.memory.values([name])[0]
            if value:
                self._live.add(name)
        return self._values[name]

    def lookup(self, tag: int, key: bytes) -> list[int]:
        return layout.seqs_from(self._value(layout.index_key(tag, key)))

    def candidates(self, names: Sequence[bytes], limit: int = MAX_CANDIDATES) -> list[int]:
        """Seqs filed under any of these index keys, each once, oldest first; at most `limit`.

        Bounded work whatever the input: a page of homogeneous text (a forum, a listing) can
        share a key with a large part of the store. A full key (a stop key) answers only its
        first `STOP_KEY_ANSWERS` pages. Past `limit`, the candidates sharing the most
        of the page's keys win (LSH: more colliding bands, higher similarity), the earliest on a
        tie (the earliest-page rule). On normal crawls a page has a handful of candidates and the
        limit never binds. `last_found` keeps how many there were before the cut (metrics)."""
        self.last_found = 0
        self.unvouched = set()
        self._keyed = []
        if self._all_read_none_filed(set(names)):
            self._quiet = names
            return []
        self._quiet = None
        word_tag, complete = self.store.word_tag, self.store.complete_tags
        found: list[list[int]] = []  # the seqs each name with pages answers
        vouching: list[list[int]] = []  # those of names that cannot be a lone chance collision
        keyed: list[tuple[int, tuple[list[int], int]]] = []  # (tag, answer) of the names of complete methods
        values = self._values
        for n in names:
            if v := (values[n] if n in values else self._value(n)):
                answer = self._answer(v)
                found.append(answer[0])
                if n[0] != word_tag or answer[1] > CHANCE_POSTINGS:
                    vouching.append(answer[0])
                if n[0] in complete:
                    keyed.append((n[0], answer))
        if not found:
            return []
        self._keyed = keyed
        shared = Counter(chain.from_iterable(found))
        self.last_found = len(shared)
        if len(shared) <= limit:
            kept = sorted(shared)
        else:
            kept = sorted(sorted(shared, key=lambda s: (-shared[s], s))[:limit])
        # a chance collision is a page found by one key of the page, a SimHash key of at most
        # CHANCE_POSTINGS pages (N / 2^26 pages of the store are under one by chance); pages
        # sharing more keys, or found under fuller ones, are not asked
        if len(vouching) < len(found):
            vouched = {s for seqs in vouching for s in seqs}
            self.unvouched = {s for s in kept if shared[s] == 1 and s not in vouched}
        return kept

    def found_by(self) -> dict[int, set[int]]:
        """Of the last `candidates` answer, by tag of a method whose keys find every match of its
        test (`SignatureStore.complete_tags`), the seqs its keys found; for each such method none of
        whose keys of the page is full (a full key answers only its first pages: it may hide some).
        Asked by the caller that judges with it (the Detector), not made for every lookup."""
        found_by: dict[int, set[int]] = {tag: set() for tag in self.store.complete_tags}
        for tag, (seqs, count) in self._keyed:
            if count >= MAX_POSTINGS_PER_KEY:
                found_by.pop(tag, None)  # a full key: its other pages are not answered
            elif tag in found_by:
                found_by[tag].update(seqs)
        return found_by

    def without_chance(self, seqs: Sequence[int], mine: Mapping[int, Any]) -> list[int]:
        """`seqs`, the last `candidates` answer (of a page whose signatures by tag are `mine`),
        without the stored pages that only keys of the store's chance-telling method found and
        whose kept word bits (`SignatureStore.words`) that method does not find: chance collisions
        of its short keys, no method's candidates, dropped unread. (A page of this batch, or one
        whose bits pass while its whole signature would not, is judged as any candidate: the
        method's own rule tells it.)"""
        tag = self.store.word_tag
        if not self.unvouched or tag is None or tag not in mine:
            return list(seqs)
        committed = np.fromiter((s for s in self.unvouched if s not in self._docs), dtype=np.uint64)
        far = committed[self.store.chance_collisions(committed, mine[tag])]
        if not len(far):
            return list(seqs)
        gone = set(far.tolist())
        return [s for s in seqs if s not in gone]

    def docs_of(self, seqs: Sequence[int]) -> list[DocRecord | None]:
        """`doc` of each seq, those the batch has not read yet read with one multi_get: a page's
        candidates at once (on homogeneous pages ~30 a page, most read already by `stage`)."""
        staged, committed = self._docs, self._committed_docs
        unread = [s for s in seqs if s not in staged and s not in committed]
        if unread:
            committed.update(self.store.docs(unread))
        return [staged[s] if s in staged else committed[s] for s in seqs]

    def doc(self, seq: int) -> DocRecord | None:
        staged = self._docs.get(seq)
        if staged is not None:
            return staged
        if seq not in self._committed_docs:
            self._committed_docs[seq] = self.store.doc(seq)
        return self._committed_docs[seq]

    def seq_for(self, page_id: str) -> int | None:
        staged = self._ids.get(page_id)
        if staged is not None:
            return staged
        key = self._id_keys[page_id]
        value = self._values[key] if key in self._values else self._value(key)
        return None if value is None else self.store._seq_with_id(page_id, value, self.doc)

    def add(self, doc: DocRecord, keys: Mapping[int, list[bytes]],
            names: Mapping[int, list[bytes]] | None = None, displaces: bool = False) -> None:
        """File the page under its index keys (`names`: the same keys from `index_names`, if the
        caller has them already) but the full ones, which its record names (`DocRecord.unfiled`).
        `displaces`: it matched no earlier page, and takes a full key's slot (`_add`)."""
        self.add_named(doc, [n for tag_names in (names or SignatureStore.index_names(keys)).values()
                             for n in tag_names], displaces)

    def add_named(self, doc: DocRecord, names: Sequence[bytes], displaces: bool = False) -> None:
        """`add` with the page's index names of every method in one sequence
        (`SignatureStore.index_names_of_records`)."""
        if self._staged is not None:
            raise ValueError("a batch that was staged (`stage`) files its pages with add_staged")
        self._add(doc, names, lambda full: places_among_ints(name_ints(names), full), displaces)

    def add_staged(self, doc: DocRecord, page: int, shared: Sequence[bytes], displaces: bool = False) -> None:
        """`add_named` of the batch's page number `page` (`stage`), given its shared names: those
        are filed now, the others when the batch commits."""
        if self._staged is None or self._page_seqs is None:
            raise ValueError("add_staged files the pages of a staged batch (`stage`)")
        names, ends = self._staged
        start = ends[page - 1] if page else 0
        self._add(doc, shared, lambda full: places_among_ints(names[start: ends[page]], full), displaces,
                  ends[page] - start)
        self._page_seqs[page] = doc.seq

    def _answer(self, value: bytes) -> tuple[list[int], int]:
        """`answer_of(value)`, decoded once a batch (a hot key's value is every page's)."""
        answer = self._answers.get(value)
        if answer is None:
            answer = self._answers[value] = answer_of(value)
        return answer

    def _all_read_none_filed(self, names: AbstractSet[bytes]) -> bool:
        """Every one of `names` read into the batch and none with a page under it (a page that
        shares no key, the common case): told by two set operations, no value read."""
        return self._live.isdisjoint(names) and self._values.keys() >= names

    def _add(self, doc: DocRecord, names: Sequence[bytes],
             places: Callable[[list[bytes]], tuple[int, ...]], displaces: bool = False,
             keys: int | None = None) -> None:
        """File the page under `names` (but the full ones); `places`: where full names stand among
        all the page's sorted distinct names, as its record keeps them; `keys`: how many those are
        (None: `names` are all of them).

        A page that `displaces` (judged unique: it matched no earlier page) and meets full keys for
        at least half its keys is filed under them too, each in place of the key's second-oldest
        page (`stop_answer`: the first stays, the latest are answered), which is taken out at
        commit and its record names the key as not filed: a key's pages stay at the cap, and pages
        filed before a story to fill its keys do not hide it from its copies. A page with most of
        its keys open is found through those (its copies share many of them), and leaves the full
        ones as they are: stop keys that every page of a shared vocabulary meets (homogeneous
        pages: ~10 of ~46) do not turn over at every page, which costs a record rewrite each. A
        duplicate is not filed under a full key: the cluster it joins is found there already."""
        if doc.seq != self._seq:
            raise ValueError(f"pages must be added in seq order: expected {self._seq}, got {doc.seq}")
        self._seq += 1
        self._docs[doc.seq] = doc
        self._ids[doc.page_id] = doc.seq
        seq = layout.varint(doc.seq)
        values, answers = self._values, self._answers
        filed: list[bytes] = []
        full: list[bytes] = []
        unique = dict.fromkeys(names) if names else {}  # none: a staged page that shares no name (most pages)
        if not unique:
            pass  # only its id is filed here (its other names at commit, `add_staged`)
        elif names is self._quiet or self._all_read_none_filed(unique.keys()):
            filed = list(unique)  # the common case: every key read, none has a page yet
            values.update(dict.fromkeys(filed, seq))
        else:
            for name in unique:
                current = values[name] if name in values else self._value(name)
                if not current:  # a key no page has yet
                    values[name] = seq
                elif ((answer[1] if (answer := answers.get(current)) else layout.postings_count(current))
                      >= MAX_POSTINGS_PER_KEY):
                    full.append(name)
                    continue
                else:
                    values[name] = current + seq
                filed.append(name)
            if full and displaces and len(full) * 2 >= (keys if keys is not None else len(unique)):
                for name in full:  # mostly stop keys: it takes their slots (the docstring)
                    held = layout.seqs_from(values[name])  # ascending
                    self._displaced.append((name, held[1]))  # the oldest stays: the earliest-page rule's
                    values[name] = layout.seqs_value([held[0], *held[2:]]) + seq
                filed += full
                full = []
        id_key = self._id_keys[doc.page_id]
        values[id_key] = ((values[id_key] if id_key in values else self._value(id_key)) or b"") + seq
        filed.append(id_key)
        if full:  # the record names them by their places among the page's names, sorted
            doc.unfiled = places(full)
        else:
            doc.unfiled = ()
        self._filed_names += filed
        self._filed_seqs += [doc.seq] * len(filed)
        self._live.update(filed)
        self._quiet = None

    def set_meta(self, name: str, value: bytes) -> None:
        self._meta[name] = value

    def set_journal(self, name: str, value: bytes) -> None:
        self._journal[name] = value

    def delete_journal(self, start: str, end: str) -> None:
        """Remove the journal entries named from `start` up to (not including) `end` at commit,
        before this batch's own entries are written."""
        self._journal_deletes.append((start, end))

    def template(self, site_hash: int) -> SiteTemplate:
        """A site's template model as of this batch (read once; written back at commit)."""
        return self._templates.get(site_hash)

    def _postings(self) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, int]:
        """The postings the batch files when it commits (names as 48-bit integers, their seqs),
        and for each the first free slot its probe met at `stage` with that table's epoch
        (`MemoryIndex.insert_ints`; -1: none, as for names filed one by one)."""
        names = name_ints(self._filed_names) if self._filed_names else np.zeros(0, dtype=np.uint64)
        seqs = np.asarray(self._filed_seqs, dtype=np.uint64)
        if self._lone is None or self._page_seqs is None:
            return names, seqs, None, -1
        lone_names, owners, lone_free, epoch = self._lone
        lone_seqs = self._page_seqs[owners]
        added = lone_seqs >= 0
        free = np.concatenate([np.full(len(names), -1, dtype=np.int64), lone_free[added]])
        return (np.concatenate([names, lone_names[added]]), np.concatenate([seqs, lone_seqs[added].astype(np.uint64)]),
                free, epoch)

    def _take_out_displaced(self) -> tuple[list[bytes], list[int], list[DocRecord]]:
        """The displaced postings of pages committed before (`_displaced`: the batch's own are left
        out of its filings instead), and every displaced page's record with those keys added to its
        unfiled places (the batch's own records changed in place; the others as new records)."""
        if not self._displaced:
            return [], [], []
        staged = set(zip(self._filed_names, self._filed_seqs, strict=True)) & set(self._displaced)
        if staged:
            kept = [(n, s) for n, s in zip(self._filed_names, self._filed_seqs, strict=True) if (n, s) not in staged]
            self._filed_names = [n for n, _ in kept]
            self._filed_seqs = [s for _, s in kept]
        by_seq: dict[int, list[bytes]] = {}
        for name, seq in self._displaced:
            by_seq.setdefault(seq, []).append(name)
        changed: list[DocRecord] = []
        for seq, names in by_seq.items():
            doc = self.doc(seq)
            if doc is None:
                continue
            every = sorted({n for tag_names in self.store.index_names(self.store.index_keys(doc)).values()
                            for n in tag_names})
            unfiled = tuple(sorted({*doc.unfiled, *places_among_ints(name_ints(every), names)}))
            if seq in self._docs:
                doc.unfiled = unfiled
            else:
                changed.append(dataclasses.replace(doc, unfiled=unfiled))
        removed = [(n, s) for n, s in self._displaced if s not in self._docs]
        return [n for n, _ in removed], [s for _, s in removed], changed

    def commit(self) -> None:
        removed_names, removed_seqs, changed = self._take_out_displaced()
        names, seqs, free, epoch = self._postings()
        self.store.check_growth(names, np.fromiter(self._docs, dtype=np.uint64, count=len(self._docs)))
        wb = WriteBatch(raw_mode=True)
        for doc in changed:
            wb.put(layout.doc_key(doc.seq), doc.encode())
        self._templates.write(wb)
        put, doc_key, time_key = wb.put, layout.doc_key, layout.time_key
        scan_from = self.store._time_scan_from
        for seq, doc in self._docs.items():
            put(doc_key(seq), doc.encode())
            put(filed := time_key(doc.event_ms, seq), b"")
            if filed < scan_from:  # a page older than what expiry removed: its next scan starts there
                scan_from = filed
        if scan_from != self.store._time_scan_from:
            self._meta[_TIME_SCAN_FROM] = scan_from
        self._meta["next_seq"] = str(self._seq).encode()
        self._meta["index_version"] = str(self.store.index_version + 1).encode()
        for meta_name, value in self._meta.items():
            wb.put(layout.meta_key(meta_name), value)
        for start, end in self._journal_deletes:
            wb.delete_range(layout.journal_key(start), layout.journal_key(end))
        for journal_name, value in self._journal.items():
            wb.put(layout.journal_key(journal_name), value)
        self.store.db.write(wb)
        self.store._time_scan_from = scan_from
        self._templates.written()
        self.store.index_version += 1
        self._quiet = None
        if removed_names:  # before the filings: a filing reuses the slot a posting leaves
            self.store.memory.remove_ints(name_ints(removed_names), np.asarray(removed_seqs, dtype=np.uint64))
            for doc in changed:
                self.store._doc_cache[doc.seq] = doc
        self.store.memory.insert_ints(names, seqs, free, epoch)
        if (tag := self.store.word_tag) is not None:
            self.store.file_words(list(self._docs), [d.signatures.get(tag) for d in self._docs.values()])
        self._staged = self._lone = self._page_seqs = None
        self._chance_only = {}
        self._filed_names.clear()
        self._filed_seqs.clear()
        self._displaced.clear()
        self._answers.clear()
        self._journal.clear()
        self._journal_deletes.clear()
        self._templates.clear()
        self._values.clear()
        self._live.clear()
        self._docs.clear()
        self._committed_docs.clear()
        self._ids.clear()
        self._id_keys.clear()
        self._meta.clear()
