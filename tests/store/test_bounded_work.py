"""Bounded work per page: a full key keeps its first pages, a page verifies a limited number of
candidates (those sharing the most keys, the earliest on a tie), and re-crawls are still found."""

from __future__ import annotations

from conftest import make_article, page, wrap_in_template

from streamdedup.config import DetectorConfig
from streamdedup.detector import Detector
from streamdedup.store import signature_store
from streamdedup.testing import raw_records


def test_a_full_key_keeps_its_first_pages_and_recrawls_still_find_the_original(tmp_path, monkeypatch):
    monkeypatch.setattr(signature_store, "MAX_POSTINGS_PER_KEY", 5)
    story = make_article(61)
    recrawls = [page(f"https://planet.example/story?crawl={i}", wrap_in_template(story, "Planet"),
                     f"2024-03-01T{i:02d}:00:00Z") for i in range(20)]
    with Detector(DetectorConfig(), tmp_path) as detector:
        outcomes = list(detector.run(raw_records(recrawls)))
        first = outcomes[0].dedup["id"]
        assert [o.dedup.get("duplicate_of") for o in outcomes[1:]] == [first] * 19
        assert detector.work_per_page()["candidates_found_max"] <= 5  # no key returned more than its cap


def test_candidates_past_the_limit_are_those_sharing_the_most_keys_then_the_earliest(tmp_path):
    with Detector(DetectorConfig(), tmp_path) as detector:
        batch = detector.store.batch()
        names = [bytes([1]) + i.to_bytes(5, "big") for i in range(3)]
        from streamdedup.store.layout import DocRecord

        for seq in range(6):  # pages 0-5 under key 0; pages 4 and 5 also under keys 1 and 2
            keys = names if seq >= 4 else names[:1]
            batch.add(DocRecord(seq, f"p{seq}", 0, f"p{seq}"), {}, {1: keys})
        assert batch.candidates(names, limit=3) == [0, 4, 5]
        assert batch.last_found == 6
        assert batch.candidates(names, limit=10) == [0, 1, 2, 3, 4, 5]


def test_homogeneous_pages_cost_a_bounded_and_flat_number_of_verifications(tmp_path):
    """Pages of one vocabulary (a forum, a listing) share keys with much of the store: their
    SimHash tables fill and become stop keys, so a page's candidates do not grow with the store."""
    import random

    from streamdedup.testing import make_words

    rng = random.Random(3)
    vocabulary = make_words(rng, 2000)
    zipf = [1 / rank ** 1.1 for rank in range(1, len(vocabulary) + 1)]  # every page draws from one distribution
    pages = [page(f"https://forum.example/t/{i}", " ".join(rng.choices(vocabulary, zipf, k=600)), "2024-03-01T00:00:00Z",
                  content_type="text/plain") for i in range(600)]
    with Detector(DetectorConfig(), tmp_path) as detector:
        list(detector.run(raw_records(pages[:300])))
        first = dict(detector.work)
        list(detector.run(raw_records(pages[300:])))
        work = detector.work
    found_first = first["candidates_found"] / first["pages"]
    found_second = (work["candidates_found"] - first["candidates_found"]) / (work["pages"] - first["pages"])
    assert found_second <= 1.25 * found_first, (found_first, found_second)  # flat as the store grows


def test_a_full_key_is_a_stop_key_answering_only_its_first_pages(tmp_path, monkeypatch):
    """Everything collides under a full key: it answers its first pages only (the earliest-page
    rule's), so its lookups cost a few candidates, not the cap's worth."""
    monkeypatch.setattr(signature_store, "MAX_POSTINGS_PER_KEY", 20)
    monkeypatch.setattr(signature_store, "STOP_KEY_ANSWERS", 3, raising=False)
    from streamdedup.store.layout import DocRecord

    with Detector(DetectorConfig(), tmp_path) as detector:
        hot, cold = bytes([1]) + bytes(5), bytes([1]) + bytes(4) + b"\x01"
        batch = detector.store.batch()
        for seq in range(30):  # 20 pages fill the hot key; pages 25-29 also go under a cold one
            batch.add(DocRecord(seq, f"p{seq}", 0, f"p{seq}"), {}, {1: [hot, cold] if seq >= 25 else [hot]})
        batch.commit()
        batch = detector.store.batch()
        batch.prefetch([hot, cold])
        assert batch.candidates([hot]) == [0, 1, 2]
        assert batch.candidates([hot, cold]) == [0, 1, 2, 25, 26, 27, 28, 29]
        assert batch.last_found == 8
