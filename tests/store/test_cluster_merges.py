"""The merges of clusters a store records (`StoreBatch.merge`, `story_of`): what the digest rule reads.

A page's verdict names the clusters it bridged (`merged_clusters`); the store keeps each merge on the
record of the merged cluster's first page (`DocRecord.merged_into`), so a later page sees the clusters
as one story (docs/limitations.md, "A story made of two clusters")."""

from __future__ import annotations

from dataclasses import replace

import pytest

from streamdedup.fingerprints.exact import ExactMethod
from streamdedup.fingerprints.minhash import MinHashMethod, MinHashParams
from streamdedup.store import batch as store_batch
from streamdedup.store import layout, rebuild
from streamdedup.store.layout import DocRecord
from streamdedup.store.signature_store import SignatureStore
from streamdedup.tokens.document import Document


def _open(path):
    return SignatureStore(path, [ExactMethod(), MinHashMethod(MinHashParams())], {"cleaning": "test"})


def _file(store, batch, page_id, cluster_id, event_ms=0):
    """A page of its own text, in cluster `cluster_id`."""
    doc = Document.from_text(f"the words of page {page_id} alone, and nothing else of any other page")
    sigs = {name: method.signature(doc) for name, method in store.methods.items()}
    tags = store.tags
    batch.add(DocRecord(batch.next_seq(), page_id, event_ms, cluster_id,
                        signatures={tags[n]: store.methods[n].encode(s) for n, s in sigs.items()}),
              {tags[n]: store.methods[n].index_keys(s) for n, s in sigs.items()})


def _merged_into(store, page_id):
    return store.doc(store.seq_for(page_id)).merged_into


def test_a_record_keeps_its_merge_and_one_without_is_as_before():
    record = DocRecord(7, "id-ü", -12, "id-ü", "", {0: b"\x00\x01", 3: b"xyz"}, site=5, document=9)
    merged = DocRecord(7, "id-ü", -12, "id-ü", "", {0: b"\x00\x01", 3: b"xyz"}, site=5, document=9,
                       merged_into="root-é")
    assert DocRecord.decode(7, merged.encode()) == merged
    assert DocRecord.decode(7, record.encode()).merged_into == ""
    assert len(merged.encode()) == len(record.encode()) + 2 + len("root-é".encode())  # tag, length, id
    # the rebuild's compiled parser files the record under the same keys with the field as without it
    methods = {0: ExactMethod()}
    key = [layout.doc_key(7)]
    with_merge = rebuild.record_postings(methods, None, key, [merged.encode()])
    without = rebuild.record_postings(methods, None, key, [record.encode()])
    assert [a.tolist() if hasattr(a, "tolist") else a for a in with_merge] == [
        a.tolist() if hasattr(a, "tolist") else a for a in without]


def test_merges_are_seen_in_the_batch_after_commit_after_reopen_and_after_a_rebuild(tmp_path):
    """r2 merged into r1, then r1 into r0: r2's story is r0, read across two links and then one (path
    compression), the same after a reopen and after the index is rebuilt from the records."""
    with _open(tmp_path) as store:
        batch = store.batch()
        for root in ("r0", "r1", "r2", "r3"):
            _file(store, batch, root, root)
        _file(store, batch, "b", "r1")  # a page bridging r1 and r2 (in the same batch: staged records)
        batch.merge(["r2"], "r1")
        assert batch.story_of("r2") == "r1" and batch.story_of("r3") == "r3"
        batch.commit()
        assert _merged_into(store, "r2") == "r1"
        batch = store.batch()
        batch.merge(["r1"], "r0")  # a committed record rewritten
        assert batch.story_of("r1") == "r0" and _merged_into(store, "r1") == ""  # staged, not written yet
        batch.commit()
        assert (_merged_into(store, "r1"), _merged_into(store, "r2")) == ("r0", "r1")
        batch = store.batch()
        assert batch.story_of("r2") == "r0"  # two links, the first made to point at the end
        batch.commit()
        assert _merged_into(store, "r2") == "r0"
        batch = store.batch()
        batch.merge(["r2", "r0"], "r3")  # r2's story is r0's: it points at r3's once
        batch.commit()
        assert [_merged_into(store, r) for r in ("r0", "r1", "r2", "r3")] == ["r3", "r0", "r0", ""]
    with _open(tmp_path) as store:
        assert store.batch().story_of("r2") == "r3"
    (tmp_path / "index-snapshot").unlink()  # as after a crash: the index rebuilt from the records
    with _open(tmp_path) as store:
        assert store.batch().story_of("r1") == "r3" and store.seq_for("b") == 4


def test_a_long_chain_is_read_a_bounded_number_of_records_at_a_time(tmp_path, monkeypatch):
    """Each ask reads at most MAX_MERGE_HOPS records and leaves the chain shorter: bounded per-page work."""
    monkeypatch.setattr(store_batch, "MAX_MERGE_HOPS", 2)
    with _open(tmp_path) as store:
        batch = store.batch()
        roots = [f"r{i}" for i in range(6)]
        for root in roots:
            _file(store, batch, root, root)
        for older, younger in reversed(list(zip(roots, roots[1:], strict=False))):  # r5 -> r4 -> ... -> r0
            batch.merge([younger], older)
        batch.commit()
        assert [_merged_into(store, r) for r in roots] == ["", "r0", "r1", "r2", "r3", "r4"]
        batch = store.batch()
        reached = [batch.story_of("r5") for _ in range(4)]
        assert reached == ["r3", "r2", "r1", "r0"], reached  # one link shorter an ask
        assert _merged_into(store, "r5") == "r4"  # (staged)
        batch.commit()
        assert _merged_into(store, "r5") == "r0"  # the last ask read r5 and r1 and made r5 point at r0


def test_a_merge_whose_first_page_is_gone_is_not_known(tmp_path):
    """Retention removes a cluster's first page first: its merge goes with it (a merge missed, none made up)."""
    with _open(tmp_path) as store:
        batch = store.batch()
        _file(store, batch, "r0", "r0", event_ms=0)
        _file(store, batch, "r1", "r1", event_ms=1)
        _file(store, batch, "p", "r1", event_ms=5)
        batch.merge(["r1"], "r0")
        batch.commit()
        assert store.batch().story_of("r1") == "r0"
        assert store.expire(2) == 2
        batch = store.batch()
        assert batch.story_of("r1") == "r1"
        batch.merge(["r1"], "r0")  # nothing to write it on
        batch.commit()
        assert store.seq_for("r1") is None


@pytest.mark.parametrize("into", ["r0", "gone"])
def test_a_merge_into_its_own_story_writes_nothing(tmp_path, into):
    with _open(tmp_path) as store:
        batch = store.batch()
        _file(store, batch, "r0", "r0")
        batch.merge(["r0"], "r0")
        assert batch.story_of("r0") == "r0"
        batch.merge(["gone"], into)  # a cluster whose first page the store does not hold
        batch.commit()
        assert _merged_into(store, "r0") == ""


def test_a_record_keeps_its_digest_mark_and_one_without_is_as_before():
    """`DocRecord.overlapping` (rules version 33) and `digest` (36): a tagged field of 3 bytes; none (older rules): False."""
    record = DocRecord(7, "id-ü", -12, "id-ü", "", {0: b"\x00\x01", 3: b"xyz"}, site=5, document=9,
                       merged_into="root-é")
    marked = DocRecord(7, "id-ü", -12, "id-ü", "", {0: b"\x00\x01", 3: b"xyz"}, site=5, document=9,
                       merged_into="root-é", overlapping=True)
    assert DocRecord.decode(7, marked.encode()) == replace(marked, digest=True)  # a digest of overlapping stories
    assert DocRecord.decode(7, record.encode()).overlapping is False
    digest = replace(record, digest=True)  # rules version 36: any digest, in the same field
    assert DocRecord.decode(7, digest.encode()) == digest and len(digest.encode()) == len(marked.encode())
    assert not DocRecord.decode(7, record.encode()).digest
    assert len(marked.encode()) == len(record.encode()) + 3
    methods = {0: ExactMethod()}
    key = [layout.doc_key(7)]
    with_mark = rebuild.record_postings(methods, None, key, [marked.encode()])
    without = rebuild.record_postings(methods, None, key, [record.encode()])
    assert [a.tolist() if hasattr(a, "tolist") else a for a in with_mark] == [
        a.tolist() if hasattr(a, "tolist") else a for a in without]


def test_a_clusters_mark_is_read_from_its_first_record_after_reopen(tmp_path):
    with _open(tmp_path) as store:
        batch = store.batch()
        _file(store, batch, "d", "d")
        _file(store, batch, "a", "a")
        batch.doc(batch.seq_for("d")).overlapping = True  # staged: as the Detector files a marked digest
        batch.doc(batch.seq_for("d")).digest = True
        assert batch.overlapping("d") and not batch.overlapping("a") and not batch.overlapping("gone")
        _file(store, batch, "e", "e")
        batch.doc(batch.seq_for("e")).digest = True  # a digest of stories sharing nothing
        batch.commit()
    with _open(tmp_path) as store:
        batch = store.batch()
        assert batch.overlapping("d") and not batch.overlapping("a") and not batch.overlapping("e")
        assert batch.digest("d") and batch.digest("e") and not batch.digest("a") and not batch.digest("gone")
