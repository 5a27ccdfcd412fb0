"""A store's batch: the staged changes of a group of pages, visible to later pages of the group.

Every change a page makes (its DocRecord, time entry, counters) is staged in a `StoreBatch` and
written with one RocksDB WriteBatch at `commit`, so the store is never half-updated; the
in-memory index is changed only after that write. Pages of the same batch see each other
through the batch's overlay. Lookups for a whole batch of pages are one pass over the table
(`prefetch`, `stage`: its names sorted in `batch_staging`); a page's candidates are looked up
through the overlay by `batch_candidates.BatchCandidates`, the part of the batch that reads.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from itertools import chain
from typing import cast

import numpy as np
from rocksdict import WriteBatch

from streamdedup.clean.template import SiteTemplate
from streamdedup.store import candidates as caps
from streamdedup.store import layout
from streamdedup.store.batch_candidates import UNREAD, BatchCandidates
from streamdedup.store.batch_staging import StagedNames, stage_names
from streamdedup.store.batched_store import BatchedStore
from streamdedup.store.candidates import answer_of, places_among_ints, stop_answer
from streamdedup.store.filing import index_names, seq_with_id
from streamdedup.store.index_kernels import name_ints
from streamdedup.store.layout import DocRecord
from streamdedup.store.template_store import SiteTemplates

TIME_SCAN_FROM = "time_scan_from"  # meta: `SignatureStore._time_scan_from`
# the most records of clusters' first pages `StoreBatch.story_of` reads for one cluster: the merges it
# follows are made shorter as it reads them (each points at the last it reached), so a page's work
# stays bounded however many merges the store holds (a chain longer is followed on at the next ask)
MAX_MERGE_HOPS = 16


class _IdKeys(dict[str, bytes]):
    """Page id -> `layout.page_id_key`, each hashed when first asked."""

    def __missing__(self, page_id: str) -> bytes:
        key = self[page_id] = layout.page_id_key(page_id)
        return key


class StoreBatch(BatchCandidates):
    """Staged changes of a group of pages, visible to later pages of the group, committed at once.

    Postings values read for the batch are cached; a page files itself by appending its seq to
    the cached value (read-modify-write: one writer per store), and commit writes the values.
    """

    def __init__(self, store: BatchedStore) -> None:
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
        # postings value -> the answer of the value it grew from and the seq appended (`_add`), whose
        # answer `_answer` makes from them: a hot key's value, which every page appends to, is not
        # decoded again at every page's lookup
        self._appended: dict[bytes, tuple[tuple[list[int], int], int]] = {}
        self._live: set[bytes] = set()  # names whose value has seqs (the rest: known empty, or unread)
        self._docs: dict[int, DocRecord] = {}
        self._committed_docs: dict[int, DocRecord | None] = {}
        self._merged_records: set[int] = set()  # committed records `merge` changed (in `_committed_docs`)
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
        # the names of the last `candidates` call, if every one was read and none has a page yet
        self._names_without_pages: Sequence[bytes] | None = None
        self._staging: StagedNames | None = None  # `stage`: the batch's names as integers, sorted

    def __len__(self) -> int:
        return len(self._docs)

    def next_seq(self) -> int:
        """The seq the next page filed in this batch gets."""
        return self._seq

    def prefetch(self, names: Iterable[bytes], page_ids: Iterable[str] = ()) -> None:
        """Read these index keys and page ids, and the DocRecords they name, with one multi_get each.

        Read these index keys (`SignatureStore.index_names`) and page ids, and the DocRecords
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
        """The `prefetch` for a whole batch of pages from their index names as 48-bit integers.

        `prefetch` for a whole batch of pages from their index names as 48-bit integers
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
        if self._docs or self._staging is not None:
            raise ValueError("stage() takes the whole batch, before any page is added")
        self.prefetch((), page_ids)
        staged = stage_names(self.store, names, ends, words, self._values)
        self._staging = staged.names
        self._values.update(staged.values)
        self._answers.update(staged.answers)
        hits = [name for name, value in staged.values.items() if value is not None]
        self._live.update(hits)
        if any(staged.shared):  # (no page with a shared name: no value read, no record to read)
            answers_seqs = set(chain.from_iterable([staged.answers[cast(bytes, staged.values[name])][0]
                                                    for name in hits]))
            unread = [s for s in answers_seqs
                      if s not in staged.skipped and s not in self._committed_docs and s not in self._docs]
            self._committed_docs.update(self.store.docs(unread))
        return staged.shared

    def _value(self, name: bytes) -> bytes | None:
        if name not in self._values:
            value = self._values[name] = self.store.memory.values([name])[0]
            if value:
                self._live.add(name)
        return self._values[name]

    def lookup(self, tag: int, key: bytes) -> list[int]:
        """Seqs filed under `key` of method `tag`, as this batch sees them (its staged postings included)."""
        return layout.seqs_from(self._value(layout.index_key(tag, key)))

    def records_read(self) -> Mapping[int, DocRecord | None]:
        """The stored records read for the batch so far, by seq (`stage` reads all its pages' names answer)."""
        return self._committed_docs

    def docs_of(self, seqs: Sequence[int]) -> list[DocRecord | None]:
        """`doc` of each seq, those the batch has not read yet read with one multi_get.

        A page's candidates at once (on homogeneous pages ~30 a page, most read already by `stage`)."""
        staged, committed = self._docs, self._committed_docs
        try:  # the usual case: every one read already (a KeyError: some to read first)
            return [staged[s] if s in staged else committed[s] for s in seqs]
        except KeyError:
            pass
        unread = [s for s in seqs if s not in staged and s not in committed]
        committed.update(self.store.docs(unread))
        return [staged[s] if s in staged else committed[s] for s in seqs]

    def doc(self, seq: int) -> DocRecord | None:
        """A page's record: staged by this batch, or read from the store once and kept for the batch."""
        staged = self._docs.get(seq)
        if staged is not None:
            return staged
        if seq not in self._committed_docs:
            self._committed_docs[seq] = self.store.doc(seq)
        return self._committed_docs[seq]

    def seq_for(self, page_id: str) -> int | None:
        """The seq of the page with this id, staged or stored (None: no such page)."""
        staged = self._ids.get(page_id)
        if staged is not None:
            return staged
        key = self._id_keys[page_id]
        value = self._values[key] if key in self._values else self._value(key)
        return None if value is None else seq_with_id(page_id, value, self.doc)

    def story_of(self, cluster_id: str) -> str:
        """The cluster a cluster is part of after the merges the store records: the end of its `merged_into` chain.

        `cluster_id` itself where its first page's record names no merge, or is gone (expired,
        deleted: the merges through it are not known any more). At most `MAX_MERGE_HOPS` records
        are read; each read on the way is made to point at the last one reached (path compression,
        staged with the batch), so a later ask reads one."""
        passed: list[int] = []
        current = cluster_id
        for _ in range(MAX_MERGE_HOPS):
            seq = self.seq_for(current)
            doc = None if seq is None else self.doc(seq)
            if seq is None or doc is None or not doc.merged_into:
                break
            passed.append(seq)
            current = doc.merged_into
        for seq in passed[:-1]:
            self._set_merged_into(seq, current)
        return current

    def overlapping(self, cluster_id: str) -> bool:
        """Whether a cluster's first page is a digest of overlapping stories (`DocRecord.overlapping`).

        False where its record is gone (expired, deleted) or names none (rules before version 33)."""
        doc = self._first_record(cluster_id)
        return doc is not None and doc.overlapping

    def digest(self, cluster_id: str) -> bool:
        """Whether a cluster's first page is a digest of any stories (`DocRecord.digest`); False where it is gone."""
        doc = self._first_record(cluster_id)
        return doc is not None and doc.digest

    def _first_record(self, cluster_id: str) -> DocRecord | None:
        """The record of a cluster's first page; None where it is gone (expired, deleted)."""
        seq = self.seq_for(cluster_id)
        return None if seq is None else self.doc(seq)

    def merge(self, merged: Iterable[str], cluster_id: str) -> None:
        """Record that a page merged these clusters into `cluster_id`'s (its verdict's `merged_clusters`).

        Each cluster's story (`story_of`) is made to point at `cluster_id`'s, on the record of the
        first page of that story's cluster: one field on that record, no entry a page."""
        into = self.story_of(cluster_id)
        for cluster in merged:
            root = self.story_of(cluster)
            seq = None if root == into else self.seq_for(root)
            if seq is not None:
                self._set_merged_into(seq, into)

    def _set_merged_into(self, seq: int, cluster_id: str) -> None:
        """Stage a record's `merged_into` (a page staged in the batch changed in place; a stored one rewritten)."""
        doc = self.doc(seq)
        if doc is None or doc.merged_into == cluster_id:
            return
        if seq in self._docs:
            doc.merged_into = cluster_id
        else:  # the store's cached record is not changed before the batch is written
            self._committed_docs[seq] = dataclasses.replace(doc, merged_into=cluster_id)
            self._merged_records.add(seq)

    def add(self, doc: DocRecord, keys: Mapping[int, list[bytes]],
            names: Mapping[int, list[bytes]] | None = None, displaces: bool = False) -> None:
        """File the page under its index keys but the full ones.

        File the page under its index keys (`names`: the same keys from `index_names`, if the
        caller has them already) but the full ones, which its record names (`DocRecord.unfiled`).
        `displaces`: it matched no earlier page, and takes a full key's slot (`_add`)."""
        self.add_named(doc, [n for tag_names in (names or index_names(keys)).values()
                             for n in tag_names], displaces)

    def add_named(self, doc: DocRecord, names: Sequence[bytes], displaces: bool = False) -> None:
        """The `add` with the page's index names of every method in one sequence.

        The names as `SignatureStore.index_names_of_records` makes them."""
        if self._staging is not None:
            raise ValueError("a batch that was staged (`stage`) files its pages with add_staged")
        self._add(doc, names, lambda full: places_among_ints(name_ints(names), full), displaces)

    def add_staged(self, doc: DocRecord, page: int, shared: Sequence[bytes], displaces: bool = False) -> None:
        """`add_named` of the batch's page number `page` (`stage`), given its shared names.

        Those are filed now, the others when the batch commits."""
        staging = self._staging
        if staging is None:
            raise ValueError("add_staged files the pages of a staged batch (`stage`)")
        names = staging.page_names(page)
        self._add(doc, shared, lambda full: places_among_ints(names, full), displaces, len(names))
        staging.page_seqs[page] = doc.seq

    def _answer(self, value: bytes) -> tuple[list[int], int]:
        """`answer_of(value)`, decoded once a batch (a hot key's value is every page's)."""
        answer = self._answers.get(value)
        if answer is None:
            grown = self._appended.pop(value, None)
            answer = self._answers[value] = answer_of(value) if grown is None else _answer_with(*grown)
        return answer

    def _all_read_none_filed(self, names: AbstractSet[bytes]) -> bool:
        """Whether no page is filed under any of `names` read into the batch.

        Every one of `names` read into the batch and none with a page under it (a page that
        shares no key, the common case): told by two set operations, no value read."""
        return self._live.isdisjoint(names) and self._values.keys() >= names

    def _add(self, doc: DocRecord, names: Sequence[bytes],
             places: Callable[[list[bytes]], tuple[int, ...]], displaces: bool = False,
             keys: int | None = None) -> None:
        """File the page under `names` (but the full ones).

        `places`: where full names stand among all the page's sorted distinct names, as its record
        keeps them; `keys`: how many those are (None: `names` are all of them).

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
        values, answers, appended = self._values, self._answers, self._appended
        filed: list[bytes] = []
        full: list[bytes] = []
        unique = dict.fromkeys(names) if names else {}  # none: a staged page that shares no name (most pages)
        if not unique:
            pass  # only its id is filed here (its other names at commit, `add_staged`)
        elif names is self._names_without_pages or self._all_read_none_filed(unique.keys()):
            filed = list(unique)  # the common case: every key read, none has a page yet
            values.update(dict.fromkeys(filed, seq))
        else:
            value_of = values.get
            for name in unique:
                if (current := value_of(name, UNREAD)) is UNREAD:
                    current = self._value(name)
                if not current:  # a key no page has yet
                    values[name] = seq
                elif ((answer[1] if (answer := answers.get(current)) else layout.postings_count(current))
                      >= caps.MAX_POSTINGS_PER_KEY):
                    full.append(name)
                    continue
                else:
                    values[name] = value = current + seq
                    if answer is not None:  # the new value's answer, made from this one if asked (`_answer`)
                        appended[value] = answer, doc.seq
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
        self._names_without_pages = None

    def set_meta(self, name: str, value: bytes) -> None:
        """Stage a meta entry, written at commit."""
        self._meta[name] = value

    def set_journal(self, name: str, value: bytes) -> None:
        """Stage a journal entry, written at commit."""
        self._journal[name] = value

    def delete_journal(self, start: str, end: str) -> None:
        """Remove the journal entries from `start` up to (not including) `end` at commit.

        Remove the journal entries named from `start` up to (not including) `end` at commit,
        before this batch's own entries are written."""
        self._journal_deletes.append((start, end))

    def template(self, site_hash: int) -> SiteTemplate:
        """A site's template model as of this batch (read once; written back at commit)."""
        return self._templates.get(site_hash)

    def _postings(self) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, int]:
        """The postings the batch files when it commits, with the free slots found at `stage`.

        The postings the batch files when it commits (names as 48-bit integers, their seqs),
        and for each the first free slot its probe met at `stage` with that table's epoch
        (`MemoryIndex.insert_ints`; -1: none, as for names filed one by one)."""
        names = name_ints(self._filed_names) if self._filed_names else np.zeros(0, dtype=np.uint64)
        seqs = np.asarray(self._filed_seqs, dtype=np.uint64)
        if self._staging is None:
            return names, seqs, None, -1
        return self._staging.postings(names, seqs)

    def _take_out_displaced(self) -> tuple[list[bytes], list[int], list[DocRecord]]:
        """The displaced postings of pages committed before, and the records that name them.

        The displaced postings of pages committed before (`_displaced`: the batch's own are left
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
            every = sorted({n for tag_names in index_names(self.store.index_keys(doc)).values()
                            for n in tag_names})
            unfiled = tuple(sorted({*doc.unfiled, *places_among_ints(name_ints(every), names)}))
            if seq in self._docs:
                doc.unfiled = unfiled
            else:
                changed.append(dataclasses.replace(doc, unfiled=unfiled))
        removed = [(n, s) for n, s in self._displaced if s not in self._docs]
        return [n for n, _ in removed], [s for _, s in removed], changed

    def commit(self) -> None:
        """Write the batch's records, postings, metas and journal in one WriteBatch, then update the index in memory."""
        removed_names, removed_seqs, changed = self._take_out_displaced()
        names, seqs, free, epoch = self._postings()
        self.store.check_growth(names, np.fromiter(self._docs, dtype=np.uint64, count=len(self._docs)))
        wb = WriteBatch(raw_mode=True)
        rewritten = [doc for seq in sorted(self._merged_records) if (doc := self._committed_docs[seq]) is not None]
        changed_seqs = {doc.seq for doc in changed}  # made from the merged records' changes too (`doc`)
        for doc in rewritten:
            if doc.seq not in changed_seqs:
                wb.put(layout.doc_key(doc.seq), doc.encode())
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
            self._meta[TIME_SCAN_FROM] = scan_from
        self._meta["next_seq"] = str(self._seq).encode()
        self._meta["index_version"] = str(self.store.index_version + 1).encode()
        for meta_name, value in self._meta.items():
            wb.put(layout.meta_key(meta_name), value)
        for start, end in self._journal_deletes:
            wb.delete_range(layout.journal_key(start), layout.journal_key(end))
        for journal_name, value in self._journal.items():
            wb.put(layout.journal_key(journal_name), value)
        self.store.db.write(wb)
        self.store.keep_decoded(self._docs.values())  # as written: the next batches' likeliest candidates
        for doc in rewritten:  # as written (where cached: a record the cache keeps must not be stale)
            if doc.seq in self.store._doc_cache:
                self.store._doc_cache[doc.seq] = doc
        self.store._time_scan_from = scan_from
        self._templates.written()
        self.store.index_version += 1
        self._names_without_pages = None
        if removed_names:  # before the filings: a filing reuses the slot a posting leaves
            self.store.memory.remove_ints(name_ints(removed_names), np.asarray(removed_seqs, dtype=np.uint64))
            for doc in changed:
                self.store._doc_cache[doc.seq] = doc
        self.store.memory.insert_ints(names, seqs, free, epoch)
        if (tag := self.store.word_tag) is not None:
            self.store.file_words(list(self._docs), [d.signatures.get(tag) for d in self._docs.values()])
        self._staging = None
        self._filed_names.clear()
        self._filed_seqs.clear()
        self._displaced.clear()
        self._answers.clear()
        self._appended.clear()
        self._journal.clear()
        self._journal_deletes.clear()
        self._templates.clear()
        self._values.clear()
        self._live.clear()
        self._docs.clear()
        self._committed_docs.clear()
        self._merged_records.clear()
        self._ids.clear()
        self._id_keys.clear()
        self._meta.clear()


def _answer_with(answer: tuple[list[int], int], seq: int) -> tuple[list[int], int]:
    """`answer_of(value + varint(seq))` from `answer_of(value)`, for a value of a key not full.

    A key not full answers all its seqs, in the order filed: the new value's are those and `seq`
    (a key full now answers `stop_answer` of them)."""
    seqs, count = answer
    if count >= caps.MAX_POSTINGS_PER_KEY:
        raise ValueError("a full key's answer keeps only some of its seqs")
    more = [*seqs, seq]
    return (stop_answer(more) if count + 1 >= caps.MAX_POSTINGS_PER_KEY else more), count + 1
