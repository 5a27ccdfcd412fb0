from dataclasses import replace

import numpy as np
import pytest

from streamdedup.fingerprints.exact import ExactMethod
from streamdedup.fingerprints.minhash import MinHashMethod, MinHashParams
from streamdedup.store import candidates, layout, process_memory, rebuild, removal, signature_store
from streamdedup.store.layout import DocRecord
from streamdedup.store.signature_store import SignatureStore, StoreConfigMismatch, StoreError
from streamdedup.tokens.document import Document

CONFIG = {"cleaning": "test"}


def _open(path, threshold=0.5):
    methods = [ExactMethod(), MinHashMethod(MinHashParams(threshold=threshold))]
    return SignatureStore(path, methods, CONFIG)


def _add(store, batch, page_id, text, event_ms=0):
    exact, minhash = store.methods["exact"], store.methods["minhash"]
    doc = Document.from_text(text)
    sigs = {"exact": exact.signature(doc), "minhash": minhash.signature(doc)}
    tags = store.tags
    record = DocRecord(batch.next_seq(), page_id, event_ms, page_id,
                       signatures={tags[n]: store.methods[n].encode(s) for n, s in sigs.items()})
    batch.add(record, {tags[n]: store.methods[n].index_keys(s) for n, s in sigs.items()})
    return sigs


def test_persists_across_reopen(tmp_path):
    with _open(tmp_path) as store:
        batch = store.batch()
        sigs = _add(store, batch, "p1", "alpha beta gamma delta epsilon zeta")
        key = store.methods["exact"].index_keys(sigs["exact"])[0]
        assert batch.lookup(store.tags["exact"], key) == [0]  # visible inside the batch
        assert store.lookup(store.tags["exact"], key) == []  # not yet committed
        batch.commit()
    with _open(tmp_path) as store:
        assert store.lookup(store.tags["exact"], key) == [0]
        assert store.seq_for("p1") == 0
        assert store.doc(0).page_id == "p1"
        assert store.batch().next_seq() == 1


def test_refuses_other_parameters_with_a_clear_message(tmp_path):
    _open(tmp_path).close()
    with pytest.raises(StoreConfigMismatch, match=r"(?s)minhash.*threshold=0.5.*threshold=0.7.*new --state"):
        _open(tmp_path, threshold=0.7)


def test_delete_removes_every_key_of_the_page(tmp_path):
    with _open(tmp_path) as store:
        batch = store.batch()
        _add(store, batch, "p1", "one two three four five six seven")
        _add(store, batch, "p2", "eight nine ten eleven twelve")
        batch.commit()
        before = store.stats()
        assert store.delete_page("p1")
        assert not store.delete_page("p1")
        after = store.stats()
        assert after["docs"] == before["docs"] - 1
        keys_per_page = len(store.index_keys(store.doc(1))[store.tags["minhash"]]) + 1
        assert after["postings"] == before["postings"] - keys_per_page
        assert store.seq_for("p1") is None and store.seq_for("p2") == 1


def test_expire_by_event_time(tmp_path):
    with _open(tmp_path) as store:
        batch = store.batch()
        for i, t in enumerate([-5_000, 1_000, 2_000, 3_000]):
            _add(store, batch, f"p{i}", f"text number {i} with some words", event_ms=t)
        batch.commit()
        assert store.expire(2_000) == 2
        assert [d.page_id for d in store.iter_docs()] == ["p2", "p3"]
        assert store.stats()["time"] == 2
        assert store.expire(2_000) == 0


def test_doc_record_roundtrip():
    record = DocRecord(7, "id-ü", -12, "cluster", "dup", {0: b"\x00\x01", 3: b"xyz"})
    assert DocRecord.decode(7, record.encode()) == record
    assert layout.time_key_parts(layout.time_key(-12, 7)) == (-12, 7)
    assert layout.time_key(-1, 0) < layout.time_key(0, 0) < layout.time_key(5, 0)


def test_open_existing_rebuilds_the_methods_it_was_built_with(tmp_path):
    with _open(tmp_path, threshold=0.65) as store:
        batch = store.batch()
        _add(store, batch, "p1", "alpha beta gamma delta epsilon zeta eta")
        batch.commit()
    with SignatureStore.open_existing(tmp_path) as store:
        assert store.methods["minhash"].params.threshold == 0.65
        assert store.delete_page("p1")


def test_open_existing_refuses_a_non_store(tmp_path):
    with pytest.raises(StoreError, match="no store"):
        SignatureStore.open_existing(tmp_path)


def test_pages_sharing_a_key_are_one_postings_value_and_leave_it_one_by_one(tmp_path):
    text = "the same words on two pages of the crawl"
    with _open(tmp_path) as store:
        first = store.batch()
        sigs = _add(store, first, "p1", text)
        first.commit()
        second = store.batch()
        _add(store, second, "p2", text)
        key, tag = store.methods["exact"].index_keys(sigs["exact"])[0], store.tags["exact"]
        assert second.lookup(tag, key) == [0, 1]  # the committed page, then the staged one
        second.commit()
        assert store.lookup(tag, key) == [0, 1]
        assert store.stats()["index_keys"] * 2 == store.stats()["postings"]
        assert store.delete_page("p1")
        assert store.lookup(tag, key) == [1]
        assert store.delete_page("p2")
        assert store.stats()["index_keys"] == 0 and store.stats()["ids"] == 0


def test_prefetch_answers_lookups_of_the_whole_batch(tmp_path):
    with _open(tmp_path) as store:
        batch = store.batch()
        sigs = _add(store, batch, "p1", "alpha beta gamma delta epsilon zeta")
        batch.commit()
        keys = {store.tags[n]: store.methods[n].index_keys(s) for n, s in sigs.items()}
        names = store.index_names(keys)
        batch = store.batch()
        batch.prefetch([n for tag_names in names.values() for n in tag_names], ["p1", "p2"])
        assert batch.candidates(names[store.tags["exact"]]) == [0]
        assert batch.doc(0).page_id == "p1"
        assert batch.seq_for("p1") == 0 and batch.seq_for("p2") is None


def test_expire_in_chunks_removes_every_key(tmp_path, monkeypatch):
    monkeypatch.setattr(removal, "_EXPIRE_CHUNK", 2)
    with _open(tmp_path) as store:
        batch = store.batch()
        for i in range(5):
            _add(store, batch, f"p{i}", f"page {i} says something else entirely", event_ms=i)
        batch.commit()
        assert store.expire(4) == 4
        stats = store.stats()
        assert (stats["docs"], stats["time"], stats["ids"]) == (1, 1, 1)
        assert stats["postings"] == sum(len(k) for k in store.index_keys(store.doc(4)).values())


def test_page_id_hash_collision_is_told_apart_by_the_record(tmp_path, monkeypatch):
    monkeypatch.setattr(layout, "page_id_key", lambda page_id: b"\xff" + b"\x00" * 5)
    with _open(tmp_path) as store:
        batch = store.batch()
        _add(store, batch, "p1", "one text here")
        batch.commit()
        assert store.seq_for("p1") == 0 and store.seq_for("other") is None
        batch = store.batch()
        _add(store, batch, "other", "another text there")
        batch.commit()
        assert store.seq_for("other") == 1 and store.seq_for("p1") == 0
        assert store.delete_page("p1") and store.seq_for("other") == 1


def test_compact_doc_record_and_varints():
    own = DocRecord(3, "page", 5, "page", "", {1: b"\x07" * 300}, site=9)
    assert DocRecord.decode(3, own.encode()) == own
    assert len(own.encode()) < len(DocRecord(3, "page", 5, "other", "", {1: b"\x07" * 300}, site=9).encode())
    for seqs in ([], [0], [127, 128, 2**40, 5]):
        assert layout.seqs_from(layout.seqs_value(seqs)) == seqs
    assert layout.without_seq(layout.seqs_value([1, 2, 3]), 2) == layout.seqs_value([1, 3])


def test_grouped_seqs_values_are_each_groups_sorted_seqs_value():
    rng = np.random.default_rng(5)
    for high in (100, 20_000, 3_000_000, 2**40 - 1, 2**40, 2**62):  # one sort of (group, seq), or lexsort
        for _ in range(40):
            counts = rng.integers(0, 15, int(rng.integers(0, 20)))
            seqs = rng.integers(0, high, int(counts.sum())).astype(np.uint64)
            ordered, values = layout.grouped_seqs_values(seqs, counts)
            starts = np.concatenate([[0], np.cumsum(counts)]).tolist()
            expected = [sorted(seqs[a:b].tolist()) for a, b in zip(starts[:-1], starts[1:], strict=True)]
            assert ordered == expected
            assert values == [layout.seqs_value(group) for group in expected]


def test_property_total_sums_the_column_families(tmp_path):
    with _open(tmp_path) as store:
        batch = store.batch()
        _add(store, batch, "p1", "alpha beta gamma delta epsilon zeta eta theta")
        batch.commit()
        default_keys = store.db.property_int_value("rocksdb.estimate-num-keys")
        index_keys = store.index.property_int_value("rocksdb.estimate-num-keys")
        assert store.property_total("rocksdb.estimate-num-keys") == default_keys + index_keys > 0


def test_index_names_are_six_bytes_and_an_older_store_is_refused_by_its_schema(tmp_path):
    """Every index and id name is the tag byte and 5 bytes of hash; since schema 4 the index is in
    memory, rebuilt from the records: a store of an older schema is refused with what to do."""
    from streamdedup.store.memory_index import name_ints

    with _open(tmp_path / "s") as store:
        batch = store.batch()
        _add(store, batch, "p1", "alpha beta gamma delta epsilon zeta eta theta iota kappa")
        batch.commit()
        assert store.stats()["index_keys"] > 3 and store.stats()["ids"] == 1
        assert list(store.index.keys()) == []  # nothing in RocksDB's old index column family
        with pytest.raises(ValueError, match="6 bytes"):
            name_ints([b"\x01" + bytes(8)])
        store.db[layout.meta_key("config")] = store.get_meta("config").replace(b'"schema": "4"', b'"schema": "3"')
    with pytest.raises(StoreConfigMismatch, match="has schema '3'.*reads schema '4'.*new --state"):
        _open(tmp_path / "s")


def test_the_index_rebuilt_at_open_is_the_one_the_pages_made(tmp_path, monkeypatch):
    """The index lives in memory and is rebuilt from the page records when the store opens. A
    page is not filed under a full key; once expiry makes room, later pages are. The records say
    which keys each page was not filed under, so the rebuilt index is the same, not the one a
    replay in seq order would make (that would file pages under keys they never went under)."""

    monkeypatch.setattr(candidates, "MAX_POSTINGS_PER_KEY", 3)
    text = "one story crawled again and again by the same crawler with the same words"
    with _open(tmp_path) as store:
        for batch_pages in (range(0, 6), range(6, 10)):
            batch = store.batch()
            for i in batch_pages:
                _add(store, batch, f"p{i}", text + (" updated" if i % 2 else ""), event_ms=i)
            batch.commit()
            if batch_pages.start == 0:
                assert store.expire(2) == 2  # p0 and p1 go: their keys have room again
        names = sorted({n for doc in store.iter_docs()
                        for tag_names in store.index_names(store.index_keys(doc)).values() for n in tag_names})
        names += [layout.page_id_key(f"p{i}") for i in range(10)]
        before = store.memory.seqs(names)
        assert any(len(seqs) == 3 for seqs in before)  # full keys
        assert any(doc.unfiled for doc in store.iter_docs())
    (tmp_path / "index-snapshot").unlink()  # as after a crash: no snapshot of the table, a rebuild
    with _open(tmp_path) as store:
        assert store.memory.seqs(names) == before
        assert store.seq_for("p7") == 7 and store.seq_for("p1") is None


def test_a_cleanly_closed_store_reopens_from_its_snapshot_and_a_stale_one_is_not_used(tmp_path):
    """Closing writes the table beside the records; the next open loads it (and deletes it: it is
    used once). A snapshot older than the store's last index change is ignored and rebuilt from."""
    import shutil

    with _open(tmp_path) as store:
        batch = store.batch()
        _add(store, batch, "p0", "alpha beta gamma delta epsilon zeta eta theta")
        batch.commit()
    shutil.copy(tmp_path / "index-snapshot", tmp_path.parent / "old-snapshot")
    with _open(tmp_path) as store:
        assert not (tmp_path / "index-snapshot").exists()  # loaded, and gone
        assert store.seq_for("p0") == 0
        batch = store.batch()
        _add(store, batch, "p1", "iota kappa lambda mu nu xi omicron pi rho")
        batch.commit()
        assert store.delete_page("p0")
        kept = store.stats()
    shutil.copy(tmp_path.parent / "old-snapshot", tmp_path / "index-snapshot")  # as if the last close's were lost
    with _open(tmp_path) as store:
        assert store.seq_for("p0") is None and store.seq_for("p1") == 1
        assert {k: store.stats()[k] for k in ("index_keys", "postings", "ids")} == {
            k: kept[k] for k in ("index_keys", "postings", "ids")}


_WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho".split()


def _mixed_page(methods, i, step, full_every, short_every):
    """Page i's signatures: texts of many lengths, every `full_every`-th one that fills keys (the
    same text), every `short_every`-th without one method's signature (as a page too short for it)."""
    text = " ".join(_WORDS[(i * step + j) % len(_WORDS)] for j in range(4 + i % 40)) + ". " * (i % 3)
    text = text if i % full_every else "the same story again and again. " * 6  # full keys
    doc = Document.from_text(text)
    sigs = {m.name: s for m in methods if (s := m.signature(doc)) is not None}
    if i % short_every == 1:  # as a page too short for some methods
        sigs = {n: s for n, s in sigs.items() if n != ("a12" if i % (2 * short_every) == 1 else "minhash")}
    return sigs


def test_the_bulk_rebuild_makes_the_same_table_as_decoding_each_record(tmp_path, monkeypatch):
    """After a crash the index is rebuilt from the raw records in bulk (`store/rebuild.py`): the
    table is the one decoding every record makes, byte for byte, with pages expired and deleted,
    pages not filed under full keys, pages without some methods' signatures, and several chunks."""
    import numpy as np

    from streamdedup.fingerprints.a12 import A12Method
    from streamdedup.fingerprints.simhash import SimHashMethod
    from streamdedup.store.memory_index import MemoryIndex

    monkeypatch.setattr(candidates, "MAX_POSTINGS_PER_KEY", 3)
    methods = [ExactMethod(), MinHashMethod(MinHashParams()), SimHashMethod(), A12Method()]
    with SignatureStore(tmp_path, methods, CONFIG) as store:
        for b in range(6):
            batch = store.batch()
            for i in range(b * 12, b * 12 + 12):
                sigs = _mixed_page(methods, i, step=7, full_every=5, short_every=4)
                tags = store.tags
                record = DocRecord(batch.next_seq(), f"p{i}-é", i, f"p{i}-é",
                                   signatures={tags[n]: store.methods[n].encode(s) for n, s in sigs.items()})
                batch.add(record, {tags[n]: store.methods[n].index_keys(s) for n, s in sigs.items()})
            batch.commit()
            store.expire(b * 10)
            assert store.delete_page(f"p{b * 12 + 11}-é")
        docs = list(store.iter_docs())
        assert any(doc.unfiled for doc in docs) and any(len(doc.signatures) < len(methods) for doc in docs)
        tables = []
        for bulk in (True, False):
            store.memory = MemoryIndex()
            store._rebuild_index(chunk=16, bulk=bulk)
            tables.append(store.memory)
        bulk_table, each_record = tables
        assert all(np.array_equal(a, b) for a, b in zip(bulk_table.table(), each_record.table(), strict=True))
        assert (bulk_table.postings, bulk_table.tombstones) == (each_record.postings, each_record.tombstones)
        assert bulk_table.postings > len(docs) * 4


def _postings(memory):
    import numpy as np

    words, low = memory.table()
    live = words >> np.uint64(63) == 0
    words, low = words[live], low[live].astype(np.uint64)
    names = (words & np.uint64((1 << 48) - 1)).tolist()
    seqs = (((words >> np.uint64(48)) << np.uint64(32)) | low).tolist()
    return sorted(zip(names, seqs, strict=True))


@pytest.mark.parametrize("displacing", [False, True])
def test_pages_filed_by_a_batch_are_the_index_their_records_rebuild(tmp_path, monkeypatch, displacing):
    """The batch's filing (the detector's way: a batch's names made at once from the encoded
    signatures, looked up, then filed; and `add` from keys) puts every page under exactly the keys
    its record says, full keys left out: the table after the commits holds the postings the
    rebuild from the records makes, and the names are `index_names` of each page's `index_keys`.
    `displacing`: the even pages are unique and take full keys' slots where most of their keys
    are full (pages of the same text), and the pages they displace are rewritten to agree."""
    from streamdedup.fingerprints.a12 import A12Method
    from streamdedup.fingerprints.simhash import SimHashMethod
    from streamdedup.store.memory_index import MemoryIndex

    monkeypatch.setattr(candidates, "MAX_POSTINGS_PER_KEY", 3)
    methods = [ExactMethod(), MinHashMethod(MinHashParams()), SimHashMethod(), A12Method()]
    displaced = 0
    with SignatureStore(tmp_path, methods, CONFIG) as store:
        tags = store.tags
        for b in range(5):
            batch = store.batch()
            pages = [(f"p{i}", _mixed_page(methods, i, step=5, full_every=4, short_every=6))
                     for i in range(b * 12, b * 12 + 12)]
            encoded = [{tags[n]: store.methods[n].encode(s) for n, s in sigs.items()} for _, sigs in pages]
            named = store.index_names_of_records(encoded)
            for (_, sigs), names in zip(pages, named, strict=True):
                keys = {tags[n]: store.methods[n].index_keys(s) for n, s in sigs.items()}
                assert names == [n for tag_names in store.index_names(keys).values() for n in tag_names]
            batch.prefetch(n for names in named for n in names)
            for i, ((page_id, sigs), signatures, names) in enumerate(zip(pages, encoded, named, strict=True)):
                record = DocRecord(batch.next_seq(), page_id, 0, page_id, signatures=signatures)
                if i % 2:
                    batch.candidates(names)
                    batch.add_named(record, names)
                else:
                    batch.add(record, {tags[n]: store.methods[n].index_keys(s) for n, s in sigs.items()},
                              displaces=displacing)
            displaced += len(batch._displaced)
            batch.commit()
        assert any(doc.unfiled for doc in store.iter_docs())
        assert bool(displaced) == displacing
        live = _postings(store.memory)
        store.memory = MemoryIndex()
        store._rebuild_index()
        assert _postings(store.memory) == live


def test_a_site_template_is_what_the_last_written_batch_left_even_after_a_dropped_batch(tmp_path):
    """Templates are kept decoded between batches (`TemplateCache`): a batch changes the model it
    takes, so one that is dropped (never committed, as a worker's after a failed write) must leave
    the next batch the model the store holds, not its changes; and a committed one is read back."""
    from streamdedup.clean.template import TemplateParams

    params = TemplateParams()
    with _open(tmp_path) as store:
        batch = store.batch()
        batch.template(7).learn("https://a.example/1", [1, 2, 3], params)
        batch.commit()
        dropped = store.batch()
        dropped.template(7).learn("https://a.example/2", [1, 2, 4], params)  # staged, then dropped
        batch = store.batch()
        assert (batch.template(7).pages, batch.template(7).counts) == (1, {1: 1, 2: 1, 3: 1})
        batch.template(7).learn("https://a.example/3", [1, 5], params)
        batch.commit()
        assert (store.batch().template(7).pages, store.batch().template(7).counts) == (2, {1: 2, 2: 1, 3: 1, 5: 1})
    with _open(tmp_path) as store:  # and so RocksDB holds it
        assert store.batch().template(7).counts == {1: 2, 2: 1, 3: 1, 5: 1}


def test_a_page_record_read_before_its_page_is_deleted_or_expired_is_not_read_again(tmp_path):
    """Records read by a batch are kept decoded for later batches (`SignatureStore.docs`): a page
    deleted by id or expired must be gone for the next batch, not served from that cache."""
    with _open(tmp_path) as store:
        batch = store.batch()
        _add(store, batch, "p0", "alpha beta gamma delta epsilon zeta eta theta", event_ms=10)
        _add(store, batch, "p1", "iota kappa lambda mu nu xi omicron pi rho", event_ms=20)
        batch.commit()
        batch = store.batch()
        assert batch.doc(0).page_id == "p0" and batch.doc(1).page_id == "p1"
        assert store.docs([0, 1])[1].page_id == "p1"  # read, and kept
        assert store.delete_page("p0")
        assert store.expire(before_ms=15) == 0 and store.expire(before_ms=25) == 1
        assert store.batch().doc(0) is None and store.batch().doc(1) is None
        assert store.docs([0, 1]) == {0: None, 1: None}


def test_records_asked_for_with_new_ones_are_returned_when_the_cache_overflows(tmp_path, monkeypatch):
    """A hot key's first page is asked for in every batch, beside pages never read: reading those
    must not drop it from the bounded cache before it is returned (a KeyError in a run of 1 M pages of
    homogeneous text with the real bound, 32,768 records)."""
    monkeypatch.setattr(process_memory.DECODED_RECORDS, "most", 2)
    monkeypatch.setattr(process_memory.DECODED_RECORDS, "least", 2)
    with _open(tmp_path) as store:
        batch = store.batch()
        for i in range(4):
            _add(store, batch, f"p{i}", f"alpha beta gamma delta epsilon zeta eta theta {i}", event_ms=10 + i)
        batch.commit()
        assert store.docs([0])[0].page_id == "p0"  # cached
        got = store.docs([0, 1, 2, 3])  # three read: the cache overflows
        assert [got[s].page_id for s in range(4)] == ["p0", "p1", "p2", "p3"]


def test_a_staged_batch_finds_and_files_as_the_bytes_path(tmp_path, monkeypatch):
    """`stage` (the batch's names as integers, only the shared ones as bytes) + `add_staged` give
    each page the candidates `prefetch` + `candidates` + `add_named` give it, name the same full
    keys in the records, and leave the same postings, with pages that share keys inside a batch
    and with stored ones, full keys, and pages left out (a duplicate id is not filed)."""
    from streamdedup.fingerprints.a12 import A12Method
    from streamdedup.fingerprints.simhash import SimHashMethod

    monkeypatch.setattr(candidates, "MAX_POSTINGS_PER_KEY", 3)
    methods = [ExactMethod(), MinHashMethod(MinHashParams()), SimHashMethod(), A12Method()]
    seen = {}
    for way in ("bytes", "staged"):
        with SignatureStore(tmp_path / way, methods, CONFIG) as store:
            tags = store.tags
            found, unfiled = [], []
            for b in range(5):
                batch = store.batch()
                # every 7th page has the id of a page 3 before it (in the batch or stored): refused
                pages = [(f"p{i - 3}" if i % 7 == 3 else f"p{i}", _mixed_page(methods, i, step=5, full_every=4,
                                                                              short_every=6))
                         for i in range(b * 12, b * 12 + 12)]
                encoded = [{tags[n]: store.methods[n].encode(s) for n, s in sigs.items()} for _, sigs in pages]
                if way == "bytes":
                    named = store.index_names_of_records(encoded)
                    batch.prefetch((n for names in named for n in names), [p for p, _ in pages])
                else:
                    names_int, ends = store.index_name_ints_of_records(encoded)
                    named = batch.stage(names_int, ends, [p for p, _ in pages])
                for i, ((page_id, _), signatures, names) in enumerate(zip(pages, encoded, named, strict=True)):
                    found.append((batch.candidates(names), batch.last_found))
                    if (b * 12 + i) % 7 == 3:
                        continue  # a page refused for its id: looked up, never filed
                    record = DocRecord(batch.next_seq(), page_id, 0, page_id, signatures=signatures)
                    if way == "bytes":
                        batch.add_named(record, names)
                    else:
                        batch.add_staged(record, i, names)
                    unfiled.append(record.unfiled)
                batch.commit()
            seen[way] = (found, unfiled, _postings(store.memory))
    assert any(u for u in seen["bytes"][1]) and any(c for c, _ in seen["bytes"][0])
    assert seen["staged"] == seen["bytes"]


def test_a_rebuild_sizes_the_index_once_from_the_page_count(tmp_path, monkeypatch):
    """After a crash the table is sized from the store's page count and the first chunk's postings
    a page, so rebuilding never doubles it (a doubling holds both tables: the 10 M-page OOM)."""
    from streamdedup.store.memory_index import MemoryIndex

    with _open(tmp_path) as store:
        batch = store.batch()
        for i in range(300):
            _add(store, batch, f"p{i}", " ".join(f"w{i}x{j}" for j in range(30 + i % 50)))
        batch.commit()
        live = _postings(store.memory)
        events = []
        real_grow, real_reserve = MemoryIndex._grow, MemoryIndex.reserve
        monkeypatch.setattr(MemoryIndex, "_grow",
                            lambda self, segment, adding: events.append("grow") or real_grow(self, segment, adding))
        monkeypatch.setattr(MemoryIndex, "reserve",
                            lambda self, postings: events.append("reserve") or real_reserve(self, postings))
        store.memory = MemoryIndex()
        store._rebuild_index(chunk=32)  # as after a crash, 32 records at a time
        assert _postings(store.memory) == live
        assert store.memory.postings / store.memory.slots > 0.4  # sized for the whole store
        assert events.count("reserve") == 1
        assert "grow" not in events[events.index("reserve"):]  # the first chunk's table only, never after it


def _own_pages(store, batch, pages):
    """Pages `p{i}` for i in `pages`, each with words of its own, added to `batch`."""
    for i in pages:
        _add(store, batch, f"p{i}", f"page {i} has words of its own, {i} times")


@pytest.mark.parametrize("snapshot", [True, False])
def test_a_store_whose_index_does_not_fit_in_memory_is_refused_in_one_line(tmp_path, monkeypatch, snapshot):
    """Opening a store whose index needs more memory than the process has ends in one line naming
    the fix (not in the OOM killer's hands mid-rebuild); its snapshot stays for a run that has it."""
    from streamdedup.store import signature_store

    with _open(tmp_path) as store:
        batch = store.batch()
        _own_pages(store, batch, range(400))  # an index larger than an empty one (64 small segments)
        batch.commit()
    if not snapshot:
        (tmp_path / "index-snapshot").unlink()
    monkeypatch.setattr(rebuild, "_REBUILD_CHUNK", 16)
    monkeypatch.setattr(signature_store, "available_bytes", lambda: 1000)
    with pytest.raises(StoreError, match="GiB available: run it where it has more memory, or keep fewer pages") as err:
        _open(tmp_path)
    assert "\n" not in str(err.value)
    assert (tmp_path / "index-snapshot").exists() == snapshot
    monkeypatch.setattr(signature_store, "available_bytes", lambda: None)  # unknown: no check
    with _open(tmp_path) as store:
        assert store.seq_for("p99") == 99


def test_the_memory_a_snapshot_needs_is_its_table_not_its_file(tmp_path, monkeypatch):
    """A snapshot leaves the table's free slots out, so its file is smaller than the table it
    loads into: the memory check before loading counts the table (from the snapshot's headers),
    and a process with room for the file but not for the table is refused, not killed mid-load."""
    from streamdedup.store import signature_store
    from streamdedup.store.memory_index import MemoryIndex

    with _open(tmp_path) as store:
        batch = store.batch()
        _own_pages(store, batch, range(300))
        batch.commit()
        table, version = store.memory.size_bytes, store.index_version
    snapshot = tmp_path / "index-snapshot"
    assert MemoryIndex.snapshot_table_bytes(snapshot, version) == table > snapshot.stat().st_size
    monkeypatch.setattr(signature_store, "available_bytes", lambda: (table + snapshot.stat().st_size) // 2)
    with pytest.raises(StoreError, match="its snapshot"):
        _open(tmp_path)
    assert snapshot.exists()
    monkeypatch.setattr(signature_store, "available_bytes", lambda: 2 * table)
    with _open(tmp_path) as store:
        assert store.memory.size_bytes == table and store.seq_for("p299") == 299


def test_a_batch_that_would_grow_the_index_past_the_memory_left_is_refused_before_anything_is_written(
        tmp_path, monkeypatch):
    """A store that outgrows its memory mid-stream is told so in one line naming the fix, before the
    batch is written, not killed by the kernel half-way through growing its index: the store stays
    as the last batch left it, and the batch commits once there is room."""
    from streamdedup.store.memory_index import MemoryIndex

    with _open(tmp_path) as store:
        batch = store.batch()
        _own_pages(store, batch, range(10))
        batch.commit()
        postings, version = store.memory.postings, store.index_version
        monkeypatch.setattr(signature_store, "available_bytes", lambda: 1000)
        batch = store.batch()
        _own_pages(store, batch, range(10, 1000))  # ~34 postings each: past what the first tables hold
        with pytest.raises(StoreError, match="more memory for its in-memory index \\(to grow past "
                                             f"{postings:,} postings; nothing of the batch was written\\) and "
                                             "this process has 0.0 GiB available: run it where it has more memory"
                           ) as err:
            batch.commit()
        assert "\n" not in str(err.value)
        assert (store.memory.postings, store.index_version, store._count_pages()) == (postings, version, 10)
        assert store.seq_for("p10") is None and store.seq_for("p9") == 9
        monkeypatch.setattr(signature_store, "available_bytes", lambda: None)  # unknown: no check
        batch = store.batch()
        _own_pages(store, batch, range(10, 1000))
        batch.commit()
        assert store.seq_for("p999") == 999
        table = _postings(store.memory)
    with _open(tmp_path) as store:  # the snapshot the close wrote is the records' index
        assert _postings(store.memory) == table
        store.memory = MemoryIndex()
        store._rebuild_index()
        assert _postings(store.memory) == table


def test_the_template_cache_holds_a_partitions_worth_of_full_site_models(monkeypatch):
    """The cache's default budget is in bytes and holds 1,500 sites whose models are full (4,096
    lines, 1,024 recent URLs, the URL set made): a partition's worth (before: 2^20 lines and URLs
    held ~200). Beyond its budget the least recently written site goes first."""
    import numpy as np

    from streamdedup.clean.template import SiteTemplate, TemplateParams
    from streamdedup.store.template_store import CACHE_ENTRY_BYTES, TemplateCache

    params = TemplateParams()
    full = SiteTemplate(counts={line: 1 + line % 50 for line in range(params.max_lines)},
                        urls=np.arange(1, params.recent_urls + 1, dtype="<u8"))
    data = full.encode()
    monkeypatch.setattr(process_memory.TEMPLATE_BYTES, "holders", 0)  # a store alone in its process
    cache = TemplateCache()
    for site in range(1500):
        template = SiteTemplate.decode(data)
        template.learn(f"https://a.example/{site}", [], params)  # as a batch does: the URL set is made
        cache.put(site, template)
    assert all(cache.take(site) is not None for site in range(1500))
    cache.close()
    small = TemplateCache(budget=3 * (full.nbytes + CACHE_ENTRY_BYTES))
    for site in range(4):
        small.put(site, SiteTemplate.decode(data))
    assert small.take(0) is None and all(small.take(site) is not None for site in (1, 2, 3))


def test_a_record_keeps_its_document_key_apart_from_its_signatures_and_old_records_have_none():
    doc = DocRecord(3, "p3", 1000, "p3", "", {0: b"\x01" * 8, 2: b"sig"}, site=7, document=0xABCDEF)
    back = DocRecord.decode(3, doc.encode())
    assert back.document == 0xABCDEF and back.signatures == {0: b"\x01" * 8, 2: b"sig"} and back == doc
    old = DocRecord(3, "p3", 1000, "p3", "", {0: b"\x01" * 8}, site=7)  # written before the field
    assert len(old.encode()) == len(doc.encode()) - 10 - 5 and DocRecord.decode(3, old.encode()).document == 0


def test_a_record_keeps_a_rescued_pages_element_signature_apart_from_its_signatures():
    doc = DocRecord(4, "p4", 1000, "p4", "", {0: b"\x01" * 8}, site=7, document=0xAB, steered=b"\x05" * 132)
    back = DocRecord.decode(4, doc.encode())
    assert back == doc and back.signatures == {0: b"\x01" * 8} and back.steered == b"\x05" * 132
    assert DocRecord.decode(4, DocRecord(4, "p4", 1000, "p4", "", {0: b"\x01" * 8}).encode()).steered == b""
    shown = replace(doc, shown=b"\x07" * 68)  # an index partition's record: its site's shown lines too
    assert DocRecord.decode(4, shown.encode()) == shown and len(shown.encode()) == len(doc.encode()) + 2 + 68


def test_a_batch_writes_what_a_site_template_learned_and_a_read_replays_it_to_the_same_model(tmp_path):
    """A site's model is written whole only now and then: in between a batch writes what it
    learned (a delta record), and reading the model replays the deltas after the whole record.
    After every commit, the model the store holds (read cold, as after a restart) is the one
    learned page by page in memory, through whole writes, deltas and the halving of the counts;
    the deltas stay bounded, and a batch that learns nothing writes nothing."""
    import random

    from streamdedup.clean.template import SiteTemplate, TemplateParams
    from streamdedup.store.template_store import MAX_DELTAS, read_template

    params = TemplateParams(half_life=50)
    rng = random.Random(4)
    pool = [rng.getrandbits(64) for _ in range(400)]
    expected = SiteTemplate()
    most_deltas = 0
    methods = [ExactMethod(), MinHashMethod(MinHashParams())]
    with SignatureStore(tmp_path, methods, CONFIG, params) as store:
        for i in range(200):
            lines = rng.sample(pool[:30], 10) + rng.sample(pool, 20) + [rng.getrandbits(64) for _ in range(5)]
            batch = store.batch()
            batch.template(7).learn(f"https://a.example/{i}", lines, params)
            expected.learn(f"https://a.example/{i}", lines, params)
            if i % 10 == 3:  # a re-crawl: nothing learned, nothing written
                batch.template(7).learn(f"https://a.example/{i}", lines, params)
            batch.commit()
            cold = read_template(store.db, 7, params)
            assert cold == expected, i
            most_deltas = max(most_deltas, cold.deltas)
            keys = [k for k in store.db.keys(from_key=layout.template_key(7)) if k[:9] == layout.template_key(7)]
            assert len(keys) == 1 + cold.deltas and cold.deltas <= MAX_DELTAS
        assert 0 < most_deltas  # deltas were written, and folded into whole records again
        batch = store.batch()
        assert batch.template(7) == expected  # the cached model too
    with SignatureStore(tmp_path, methods, CONFIG, params) as store:  # replayed with the params it learned with
        assert store.batch().template(7) == expected


def test_full_names_are_placed_among_a_pages_names_as_the_bytes_sort():
    """A page's record places its full names from its 48-bit integer names (a sort and a scan);
    the places are those of the names' bytes in sorted order, since big-endian names sort as their
    integers (names with repeats, high bytes and low)."""
    import random

    import numpy as np

    from streamdedup.store.memory_index import ints_names
    from streamdedup.store.signature_store import places_among_ints

    def places_among(every: list[bytes], names: list[bytes]) -> tuple[int, ...]:  # by the bytes' order
        place = {name: i for i, name in enumerate(sorted(set(every)))}
        return tuple(sorted(place[name] for name in names))

    rng = random.Random(7)
    for _ in range(200):
        ints = np.array([rng.choice([rng.getrandbits(48), rng.getrandbits(8), 2**48 - 1 - rng.getrandbits(8)])
                         for _ in range(rng.randint(1, 60))], dtype=np.uint64)
        ints = np.concatenate([ints, ints[: rng.randint(0, len(ints))]])  # names a page gives twice
        names = ints_names(ints)
        full = rng.sample(sorted(set(names)), rng.randint(1, len(set(names))))
        assert places_among_ints(ints, full) == places_among(names, full)


def test_page_records_and_keys_keep_the_bytes_stores_on_disk_hold():
    """The record and key bytes are the store's format (schema 4): an encoder rewritten for speed
    must write what the earlier one wrote, byte for byte, not only what it decodes back. These
    were written by the encoder of 2026-11-27 (30ec8e1)."""
    plain = DocRecord(7, "https://a.example/1", 1_700_000_000_000, "https://a.example/1", "",
                      {3: bytes(range(200)), 1: b"\x01" * 16}, site=0x1234, document=99)
    assert plain.encode().hex() == (
        "0068e5cf8b01000034120000000000001368747470733a2f2f612e6578616d706c652f3100000301100101010101010101"
        "010101010101010103c801" + bytes(range(200)).hex() + "fe086300000000000000")
    odd = DocRecord(2**40, "p\u00e9\udcff", -5, "c" * 130, "d", {4: b""}, site=2**64 - 1, unfiled=(0, 3, 200),
                    steered=b"\x09" * 10)
    assert odd.encode().hex() == ("fbffffffffffffffffffffffffffffff0670c3a9edb3bf8301" + "63" * 130
                                  + "0164020400fd0a" + "09" * 10 + "030003c801")
    assert DocRecord.decode(7, plain.encode()) == plain and DocRecord.decode(2**40, odd.encode()) == odd
    # a record's unfiled places read back ascending, whatever order its bytes hold them in: the
    # engine reads the first as the least (`found_by.found_members_of`)
    shuffled = DocRecord(5, "p", 0, "p", unfiled=(200, 0, 3))
    assert DocRecord.decode(5, shuffled.encode()).unfiled == (0, 3, 200)
    assert layout.doc_key(2**40).hex() == "440000010000000000"
    assert layout.time_key(-5, 2**40).hex() == "547ffffffffffffffb0000010000000000"
    assert layout.template_delta_key(2**64 - 1, 7).hex() == "53ffffffffffffffff00000007"


def test_the_decoded_cache_drops_its_oldest_records_first():
    from streamdedup.store.signature_store import _drop_oldest

    cache = {seq: seq for seq in range(10)}
    _drop_oldest(cache, 4)  # type: ignore[arg-type]
    assert list(cache) == [6, 7, 8, 9]
    _drop_oldest(cache, 8)  # type: ignore[arg-type]
    assert list(cache) == [6, 7, 8, 9]
