"""The in-memory index rebuilt from the page records in bulk, after a crash (no snapshot).

`IndexRebuild` is the part of `SignatureStore` that rebuilds it when the store opens (a mixin:
the store's own tables and reads), in chunks of records, the table sized once from the first.
The same postings, inserted in the same order, chunk by chunk, as `IndexRebuild._index_pages`
inserts them from decoded `DocRecord`s (so the table is the same byte for byte), but a chunk's
records are read as one buffer: a compiled pass finds each record's id and signatures, and a
method that offers `index_key_rows` (MinHash, SimHash, A12, exact, word pairs) makes the keys of all its
signatures in one call, named in one array pass (`filing.key_name_ints`, which a batch's filing
uses too). Other methods' keys are made one signature at a time, as before; a record that names
keys it was not filed under (`DocRecord.unfiled`, rare) is decoded whole and filed by
`filing.filed_names`. The functions take the tables they change (the index, the chance check's
words) and the store's methods by tag, not the store.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, cast

import numpy as np
from rocksdict import Rdict

from streamdedup.jit import numba
from streamdedup.store import layout
from streamdedup.store.chance import word_postings
from streamdedup.store.filing import Methods, filed_names, key_name_ints
from streamdedup.store.index_kernels import name_ints
from streamdedup.store.layout import DocRecord
from streamdedup.store.memory_index import MemoryIndex

_REBUILD_CHUNK = 1 << 14  # page records indexed at once by a rebuild
_DOC_KEY = np.dtype([("prefix", "u1"), ("seq", ">u8")])


@numba.njit(cache=True)
def _varint(buf: np.ndarray, pos: int) -> Any:  # (value, position after it)
    n = np.int64(0)
    shift = np.int64(0)
    while True:
        b = np.int64(buf[pos])
        pos += 1
        n |= (b & 0x7F) << shift
        if b < 0x80:
            return n, pos
        shift += 7


@numba.njit(cache=True)
def _parse(buf: np.ndarray, ends: np.ndarray, column: np.ndarray, sig_at: np.ndarray, sig_len: np.ndarray,
           id_at: np.ndarray, id_len: np.ndarray, unfiled: np.ndarray) -> None:
    """Where each record holds its page id and its signatures, and whether it names unfiled keys.

    Where each record (`DocRecord.encode`, records back to back, record i ends at `ends[i]`)
    holds its page id and its signatures (by `column[tag]`, -1 none), and whether it names keys
    it was not filed under (bytes after its signatures)."""
    start = 0
    for i in range(len(ends)):
        pos = start + 16  # event ms, site
        n, pos = _varint(buf, pos)
        id_at[i] = pos
        id_len[i] = n
        pos += n
        n, pos = _varint(buf, pos)  # cluster id
        pos += max(0, n - 1)
        n, pos = _varint(buf, pos)  # duplicate of
        pos += n
        n_sigs = buf[pos]
        pos += 1
        for _ in range(n_sigs):
            tag = buf[pos]
            size, pos = _varint(buf, pos + 1)
            c = column[tag]
            if c >= 0:
                sig_at[i, c] = pos
                sig_len[i, c] = size
            pos += size
        unfiled[i] = pos < ends[i]
        start = ends[i]


def index_records(memory: MemoryIndex, kept_words: MemoryIndex, methods: Methods, word_tag: int | None,
                  keys: Sequence[bytes], values: Sequence[bytes]) -> None:
    """Insert the postings of these page records into `memory` and their words into `kept_words`.

    Insert the postings of these page records (doc keys and values, in seq order) into
    `memory` (the store's index) and their words into `kept_words` (the chance check's, if a
    method tells chance keys: `word_tag`): exactly `IndexRebuild._index_pages` of the decoded records."""
    if not keys:
        return
    names, seqs, word_seqs, words = record_postings(methods, word_tag, keys, values)
    memory.insert_ints(names, seqs)
    if word_tag is not None:  # the chance check's words
        kept_words.insert_ints(*word_postings(word_seqs, words))


def unindex_records(memory: MemoryIndex, kept_words: MemoryIndex, methods: Methods, word_tag: int | None,
                    keys: Sequence[bytes], values: Sequence[bytes]) -> None:
    """Take the postings of these page records out of `memory` (and their words out of `kept_words`).

    What `filing.filed_names` of each decoded record names, made in bulk (an expiry of many pages,
    `SignatureStore.expire`). A table's tombstones are the same in any order of removal."""
    if not keys:
        return
    names, seqs, word_seqs, words = record_postings(methods, word_tag, keys, values)
    memory.remove_ints(names, seqs)
    if word_tag is not None:
        kept_words.remove_ints(*word_postings(word_seqs, words))


def record_postings(methods: Methods, word_tag: int | None, keys: Sequence[bytes],
                    values: Sequence[bytes]) -> tuple[np.ndarray, np.ndarray, list[int], list[bytes]]:
    """The postings these page records are filed under, and the chance check's words.

    The postings these page records are filed under (names as 48-bit integers, seqs, in the
    order `index_records` inserts them), and the seqs and encoded `word_tag` signatures of those
    with one (the chance check's words)."""
    n = len(keys)
    data = b"".join(values)
    buf = np.frombuffer(data, dtype=np.uint8)
    ends = np.cumsum(np.fromiter(map(len, values), dtype=np.int64, count=n))
    seqs = np.frombuffer(b"".join(keys), dtype=_DOC_KEY)["seq"].astype(np.uint64)
    tags = sorted(methods)
    column = np.full(256, -1, dtype=np.int64)
    column[tags] = np.arange(len(tags))
    sig_at = np.full((n, len(tags)), -1, dtype=np.int64)
    sig_len = np.zeros((n, len(tags)), dtype=np.int64)
    id_at, id_len = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
    unfiled = np.zeros(n, dtype=np.bool_)
    _parse(buf, ends, column, sig_at, sig_len, id_at, id_len, unfiled)

    # first: in record order, a page's id (or all its names, if its record names keys it was not filed under)
    ids = name_ints([layout.page_id_key_of(data[a: a + size])
                     for a, size in zip(id_at.tolist(), id_len.tolist(), strict=True)])
    if unfiled.any():
        name_parts: list[np.ndarray] = []
        seq_parts: list[np.ndarray] = []
        last = 0
        for i in np.flatnonzero(unfiled).tolist():
            name_parts.append(ids[last:i])
            seq_parts.append(seqs[last:i])
            filed = filed_names(methods, DocRecord.decode(int(seqs[i]), values[i]))
            name_parts.append(name_ints(filed))
            seq_parts.append(np.full(len(filed), seqs[i], dtype=np.uint64))
            last = i + 1
        name_parts.append(ids[last:])
        seq_parts.append(seqs[last:])
    else:
        name_parts, seq_parts = [ids], [seqs]

    # then each method's keys of the other pages, methods in the order they first appear (as a dict fills)
    present = (sig_at >= 0) & ~unfiled[:, None]
    first = np.where(present.any(axis=0), present.argmax(axis=0), n)
    for c in sorted((c for c in range(len(tags)) if first[c] < n), key=lambda c: (first[c], tags[c])):
        tag, method = tags[c], methods[tags[c]]
        rows = np.flatnonzero(present[:, c])
        at, sizes = sig_at[rows, c].tolist(), sig_len[rows, c].tolist()
        names, counts = key_name_ints(tag, method, [data[a: a + size] for a, size in zip(at, sizes, strict=True)])
        name_parts.append(names)
        seq_parts.append(np.repeat(seqs[rows], counts))
    word_seqs: list[int] = []
    words: list[bytes] = []
    if word_tag is not None:
        c = int(column[word_tag])
        rows = np.flatnonzero(sig_len[:, c] >= 8)
        word_seqs, words = seqs[rows].tolist(), [data[a: a + 8] for a in sig_at[rows, c].tolist()]
    return np.concatenate(name_parts), np.concatenate(seq_parts), word_seqs, words


class IndexRebuild:
    """The store's in-memory index rebuilt from its page records (`SignatureStore`'s tables and reads)."""

    db: Rdict
    memory: MemoryIndex
    words: MemoryIndex
    word_tag: int | None
    _by_tag: Methods

    if TYPE_CHECKING:  # the store's own, which it defines
        def index_keys(self, doc: DocRecord) -> dict[int, list[bytes]]:
            """Every key the page is filed under, by method tag, from its signatures."""

        def filed_names(self, doc: DocRecord) -> list[bytes]:
            """The index names a stored page is filed under."""

        def file_words(self, seqs: Sequence[int], encoded: Sequence[bytes | None]) -> None:
            """Keep these pages' `word_tag` signatures in `words`."""

        def _check_memory(self, needed: int, what: str, opening: bool = True) -> None:
            ...

        def _scan(self, cf: Rdict, start: bytes | None = None, verify: bool = False) -> Iterator[tuple[bytes, bytes]]:
            ...

    def _rebuild_index(self, chunk: int | None = None, bulk: bool = True) -> None:
        """The in-memory index from the page records.

        Every page under its keys, but those its record names as not filed (full keys when it was
        added), and under its id. Pages are read in chunks and their keys named by method, one array
        pass each (`layout.index_names`). `bulk`: a chunk's raw records at once
        (`rebuild.index_records`, the same table, ~N x faster); else each record decoded
        (`_index_pages`)."""
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
        """Room for this many postings in the index, checked against the memory the process has.

        Checked by `_check_memory`, so a rebuild fills a table of its final size without doubling it."""
        postings += postings // 16  # some room: a page's postings vary
        self._check_memory(self.memory.reserved_bytes(postings) - self.memory.size_bytes,
                           f"{postings:,} postings")
        self.memory.reserve(postings)

    def _index_records(self, keys: list[bytes], values: list[bytes], bulk: bool) -> None:
        if bulk:
            index_records(self.memory, self.words, self._by_tag, self.word_tag, keys, values)
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
