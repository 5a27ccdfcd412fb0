"""The whole engine on generated pages: verdicts, clusters, persistence, retention, deletion."""

from datetime import timedelta

from conftest import make_article, page, wrap_in_template

from streamdedup.config import DetectorConfig
from streamdedup.detector import Detector
from streamdedup.testing import raw_records, run_records


def _pages():
    story, other = make_article(21), make_article(22)
    return [
        page("https://planet.example/story", wrap_in_template(story, "Daily Planet"), "2024-03-01T10:00:00Z"),
        page("https://bugle.example/copy", wrap_in_template(story, "Bugle", "Syndicated"), "2024-03-01T11:00:00Z"),
        page("https://planet.example/other", wrap_in_template(other, "Daily Planet"), "2024-03-01T12:00:00Z"),
        page("https://planet.example/story?utm=x", wrap_in_template(story[:-1] + [story[-1] + " Updated."], "Daily Planet"),
             "2024-03-02T10:00:00Z", crawler_meta={"depth": 2}),
    ]


def test_copies_in_other_templates_are_duplicates_of_the_first(tmp_path):
    outcomes = run_records(_pages(), tmp_path)
    first, copy, other, recrawl = outcomes
    assert first.status == "unique" and first.dedup["cluster_id"] == first.dedup["id"]
    assert copy.status == "duplicate" and copy.dedup["duplicate_of"] == first.dedup["id"]
    assert copy.dedup["cluster_id"] == first.dedup["id"]
    assert other.status == "unique"  # same template, different article
    assert recrawl.status == "duplicate" and recrawl.dedup["duplicate_of"] == first.dedup["id"]
    assert recrawl.output()["crawler_meta"] == {"depth": 2}  # fields pass through


def test_big_pages_make_smaller_batches_and_the_same_verdicts(tmp_path):
    """A batch is held in memory whole: it ends once its pages hold `batch_bytes` (each store
    commit is one batch), and where batches end does not change a verdict."""
    pages = _pages() * 2  # the second four are the same pages again: duplicate_id
    one_batch = run_records(pages, tmp_path / "one")
    with Detector(DetectorConfig(batch_bytes=1), tmp_path / "each") as detector:
        each = list(detector.run(raw_records(pages)))
        assert detector.store.index_version == len(pages)  # one commit a page
    assert [o.dedup for o in each] == [o.dedup for o in one_batch]


def test_bad_records_are_rejected_and_the_stream_goes_on(tmp_path):
    records = [b"{broken", {"url": "u"}, {"url": "u", "content": ""}, *_pages()[:2]]
    outcomes = run_records(records, tmp_path)
    assert [o.status for o in outcomes] == ["rejected"] * 3 + ["unique", "duplicate"]
    assert [o.dedup["reason"] for o in outcomes[:3]] == ["invalid_json", "missing_content", "empty_content"]
    assert outcomes[0].output()["raw"] == "{broken"


def test_a_second_run_continues_against_the_store(tmp_path):
    pages = _pages()
    run_records(pages[:1], tmp_path)
    again = run_records(pages[1:2], tmp_path)
    assert again[0].status == "duplicate"
    duplicate_id = run_records(pages[:1], tmp_path)
    assert duplicate_id[0].dedup["reason"] == "duplicate_id"


def test_pages_in_one_batch_see_each_other(tmp_path):
    outcomes = run_records(_pages(), tmp_path, batch_size=1)
    assert [o.status for o in outcomes] == [o.status for o in run_records(_pages(), tmp_path / "b", batch_size=100)]


def test_retention_forgets_old_pages(tmp_path):
    pages = _pages()
    pages[1]["fetched_at"] = "2024-03-09T10:00:00Z"  # copy arrives 8 days later
    outcomes = run_records(pages[:2], tmp_path, retention=timedelta(days=7))
    assert outcomes[1].status == "unique"
    with Detector(DetectorConfig(), tmp_path) as detector:
        assert detector.store.seq_for(outcomes[0].dedup["id"]) is None  # expired from the store too


def test_deleted_page_no_longer_matches(tmp_path):
    pages = _pages()
    first = run_records(pages[:1], tmp_path)[0]
    with Detector(DetectorConfig(), tmp_path) as detector:
        assert detector.store.delete_page(first.dedup["id"])
    assert run_records(pages[1:2], tmp_path)[0].status == "unique"


def test_a_page_bridging_two_clusters_reports_the_merge(tmp_path):
    a, b = make_article(31, paragraphs=4), make_article(32, paragraphs=4)
    records = [page("https://x.example/a", "\n\n".join(a), content_type="text/plain"),
               page("https://x.example/b", "\n\n".join(b), content_type="text/plain"),
               page("https://x.example/ab", "\n\n".join(a + b), content_type="text/plain")]
    outcomes = run_records(records, tmp_path, methods=("minhash",), policy="minhash",
                           method_params={"minhash": {"threshold": 0.3}})
    assert [o.status for o in outcomes] == ["unique", "unique", "duplicate"]
    assert outcomes[2].dedup["cluster_id"] == outcomes[0].dedup["id"]
    assert outcomes[2].dedup["merged_clusters"] == [outcomes[1].dedup["id"]]


def test_prepare_is_pure_and_decide_is_stateful(tmp_path):
    with Detector(DetectorConfig(), tmp_path) as detector:
        items = [detector.prepare(r) for r in raw_records(_pages())]
        assert detector.store.stats()["docs"] == 0
        assert [o.status for o in detector.decide_batch(items)] == ["unique", "duplicate", "unique", "duplicate"]


def test_a_batch_holds_the_cyclic_collector_off_and_leaves_it_as_it_found_it(tmp_path):
    import gc

    import pytest

    detector = Detector(DetectorConfig(), tmp_path / "state")
    seen = []
    batch = detector.store.batch

    def watched():
        seen.append(gc.isenabled())
        return batch()

    detector.store.batch = watched
    was = gc.isenabled()
    try:
        gc.enable()
        detector.commit(detector.decide_staged(detector.prepare_many(raw_records(_pages()[:1])))[1])
        assert seen == [False] and gc.isenabled()
        detector.store.batch = lambda: 1 / 0
        with pytest.raises(ZeroDivisionError):
            detector.decide_staged([])
        assert gc.isenabled()
        gc.disable()  # held off by the caller: still off after the batch
        detector.store.batch = watched
        detector.commit(detector.decide_staged([])[1])
        assert seen == [False, False] and not gc.isenabled()
    finally:
        (gc.enable if was else gc.disable)()
        detector.close()


def _postings(detector):
    """The index's (name, seq) postings, sorted."""
    import numpy as np

    words, low = detector.store.memory.table()
    live = words >> np.uint64(63) == 0
    seqs = ((words[live] >> np.uint64(48)) << np.uint64(32)) | low[live].astype(np.uint64)
    return sorted(zip((words[live] & np.uint64((1 << 48) - 1)).tolist(), seqs.tolist(), strict=True))


def test_a_batch_not_committed_leaves_no_posting_in_the_index(tmp_path):
    """A staged batch's pages reach the index only with its commit: dropped (`discard`), dropped
    silently (the next batch is staged), or left staged at close, they leave no posting, and the
    snapshot the close saves holds only what the records say (the postings of a table rebuilt from them)."""
    from streamdedup.store.signature_store import _SNAPSHOT

    pages = _pages()
    with Detector(DetectorConfig(), tmp_path / "state") as detector:
        detector.commit(detector.decide_staged(detector.prepare_many(raw_records(pages[:1])))[1])
        committed = _postings(detector)
        outcomes, _ = detector.decide_staged(detector.prepare_many(raw_records(pages[1:3])))
        assert _postings(detector) == committed
        detector.discard()
        assert _postings(detector) == committed
        again, staged = detector.decide_staged(detector.prepare_many(raw_records(pages[1:3])))
        assert [o.dedup for o in again] == [o.dedup for o in outcomes]
        detector.decide_staged(detector.prepare_many(raw_records(pages[1:3])))  # staged again: the first dropped
        detector.decide_staged(detector.prepare_many(raw_records(pages[3:])))  # left staged at close
        assert _postings(detector) == committed
    assert (tmp_path / "state" / _SNAPSHOT).exists()
    with Detector(DetectorConfig(), tmp_path / "state") as detector:  # the snapshot, loaded
        assert not (tmp_path / "state" / _SNAPSHOT).exists() and _postings(detector) == committed
        detector.commit(detector.decide_staged(detector.prepare_many(raw_records(pages[1:])))[1])
        live = _postings(detector)
    (tmp_path / "state" / _SNAPSHOT).unlink()  # as after a crash: rebuilt from the records
    with Detector(DetectorConfig(), tmp_path / "state") as detector:
        assert _postings(detector) == live and len(live) > len(committed)


def test_pages_refused_for_their_id_are_not_filed_and_the_others_get_their_seqs(tmp_path):
    """A page whose id is known (stored, or earlier in its batch) is refused and takes no seq; the
    batch's other pages are filed under the seqs their records have (the index the batch leaves
    is the one rebuilt from the records)."""
    from streamdedup.store.signature_store import _SNAPSHOT

    pages = _pages()
    with Detector(DetectorConfig(), tmp_path / "state") as detector:
        detector.decide_batch(detector.prepare_many(raw_records(pages[:1])))
        batch = [pages[0], pages[2], pages[2], pages[1], pages[3]]  # stored id, new, its repeat, new, new
        statuses = [o.dedup.get("reason", o.status) for o in detector.decide_batch(detector.prepare_many(raw_records(batch)))]
        assert statuses == ["duplicate_id", "unique", "duplicate_id", "duplicate", "duplicate"]
        live = _postings(detector)
    (tmp_path / "state" / _SNAPSHOT).unlink()
    with Detector(DetectorConfig(), tmp_path / "state") as detector:
        assert _postings(detector) == live
        assert detector.store.get_meta_int("next_seq", 0) == 4


def test_the_candidate_filter_is_switched_off_by_the_constructor_and_verdicts_stay(tmp_path):
    """`Detector(..., candidate_filter=False)` judges every candidate (none ruled out), and the verdicts are those
    of the filter on (the default), which on pages of one vocabulary rules out most candidates. bench/judge.py
    captures its calls so; it set the Detector's private `_filterable` before."""
    import random

    from streamdedup.testing import make_words

    rng = random.Random(3)
    vocabulary = make_words(rng, 1500)
    zipf = [1 / rank ** 1.1 for rank in range(1, len(vocabulary) + 1)]  # few links, many candidates
    forum = [{"id": f"t{i}", "url": f"https://forum{i % 5}.example/t/{i}", "fetched_at": "2026-01-01T00:00:00Z",
              "content": "\n".join(" ".join(rng.choices(vocabulary, zipf, k=40)) for _ in range(12)),
              "content_type": "text/plain"} for i in range(60)]
    pages = forum + [{**forum[7], "id": "copy", "url": "https://elsewhere.example/copy"}]
    runs = {}
    for on in (True, False):
        kwargs = {} if on else {"candidate_filter": False}
        with Detector(DetectorConfig(batch_size=16), tmp_path / str(on), **kwargs) as detector:
            runs[on] = [o.dedup for o in detector.run(raw_records(pages))], detector.work
    (filtered, work_on), (every, work_off) = runs[True], runs[False]
    assert work_on["candidates_ruled_out"] > work_on["candidates_verified"] / 2 > 0, work_on
    assert work_off["candidates_ruled_out"] == 0 and work_off["candidates_verified"] == work_on["candidates_verified"]
    assert filtered == every and every[-1]["duplicate_of"] == "t7"
