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
        names = [bytes([1]) + i.to_bytes(8, "big") for i in range(3)]
        from streamdedup.store.layout import DocRecord

        for seq in range(6):  # pages 0-5 under key 0; pages 4 and 5 also under keys 1 and 2
            keys = names if seq >= 4 else names[:1]
            batch.add(DocRecord(seq, f"p{seq}", 0, f"p{seq}"), {}, {1: keys})
        assert batch.candidates(names, limit=3) == [0, 4, 5]
        assert batch.last_found == 6
        assert batch.candidates(names, limit=10) == [0, 1, 2, 3, 4, 5]


def test_homogeneous_pages_cost_a_bounded_number_of_verifications(tmp_path):
    """Pages of one vocabulary (a forum, a listing) share keys with much of the store."""
    import random

    from streamdedup.testing import make_words

    rng = random.Random(3)
    vocabulary = make_words(rng, 2000)
    zipf = [1 / rank ** 1.1 for rank in range(1, len(vocabulary) + 1)]  # every page draws from one distribution
    pages = [page(f"https://forum.example/t/{i}", " ".join(rng.choices(vocabulary, zipf, k=600)), "2024-03-01T00:00:00Z",
                  content_type="text/plain") for i in range(300)]
    with Detector(DetectorConfig(), tmp_path) as detector:
        list(detector.run(raw_records(pages)))
        work = detector.work_per_page()
    assert work["pages_over_candidate_limit"] > 0, work  # the limit bound here...
    assert work["candidates_verified_mean"] <= signature_store.MAX_CANDIDATES < work["candidates_found_max"]
