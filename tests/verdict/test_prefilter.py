"""Candidates that cannot link to a page are not judged, and every verdict stays as judging them all.

`verdict.prefilter.CandidateFilter` runs the engine's first tests on a batch's arrays and drops
the candidates no rule, held match or relation can take; a page with none left skips
`engine.judged` (on text of one shared vocabulary, nearly every page)."""

from __future__ import annotations

import random

import pytest

from streamdedup import detector
from streamdedup.config import DetectorConfig
from streamdedup.detector import Detector
from streamdedup.fingerprints.minhash import MinHashMethod
from streamdedup.fingerprints.wordpairs import WordPairsMethod
from streamdedup.testing import make_article, make_words, raw_records, wrap_in_template
from streamdedup.verdict import prefilter


def _page(page_id: str, paragraphs: list[str], site: str, hour: int) -> dict:
    return {"id": page_id, "url": f"https://{site}/{page_id}", "fetched_at": f"2026-01-01T{hour:02d}:00:00Z",
            "html": wrap_in_template(paragraphs, site)}


def _pages() -> list[dict]:
    """Pages of one vocabulary (few links, many candidates) among copies, parts, edits and follow-ups."""
    rng = random.Random(5)
    vocabulary = make_words(rng, 1500)
    weights = [1 / rank ** 1.1 for rank in range(1, len(vocabulary) + 1)]
    forum = [{"id": f"t{i}", "url": f"https://forum{i % 7}.example/t/{i}", "fetched_at": "2026-01-01T00:00:00Z",
              "content": "\n".join(" ".join(rng.choices(vocabulary, weights, k=40)) for _ in range(12)),
              "content_type": "text/plain"} for i in range(160)]
    article, story, other = (make_article(seed, paragraphs=10) for seed in (11, 12, 13))
    edited = [p.replace(" the ", " a ", 1) for p in story]
    news = [_page("part1", article[:5], "a.example", 1), _page("full", article, "b.example", 2),
            _page("part2", article[5:], "c.example", 3), _page("story", story, "d.example", 4),
            _page("followup", story[:6] + other[:5], "e.example", 5),
            _page("replaced", story[:6] + other[5:9], "f.example", 6),
            _page("copy", story, "g.example", 7), _page("edited", edited, "h.example", 8),
            _page("teaser", story[:2], "d.example", 9),
            # a brief under the relation's floor of pairs: only a rule links its copy
            _page("brief", [" ".join(article[0].split()[:30])], "i.example", 10),
            _page("brief-copy", [" ".join(article[0].split()[:30])], "j.example", 11)]
    # the news among the forum's pages, some in the first batches, some after them
    return forum[:60] + news[:4] + forum[60:120] + news[4:] + forum[120:]


def _run(tmp_path, name: str, batch_size: int) -> tuple[list[dict], Detector]:
    with Detector(DetectorConfig(batch_size=batch_size), tmp_path / name) as judge:
        return [o.dedup for o in judge.run(raw_records(_pages()))], judge


@pytest.mark.parametrize("batch_size", [256, 16])  # candidates of the same batch, and stored ones
def test_the_verdicts_are_those_of_judging_every_candidate(tmp_path, monkeypatch, batch_size):
    filtered, judge = _run(tmp_path, "filtered", batch_size)
    assert judge.work["candidates_ruled_out"] > 0.8 * judge.work["candidates_verified"]
    monkeypatch.setattr(prefilter.CandidateFilter, "usable", classmethod(lambda cls, methods: False))
    every, judge = _run(tmp_path, "every", batch_size)
    assert judge.work["candidates_ruled_out"] == 0
    assert filtered == every
    by_id = {d["id"]: d for d in every}
    # the links the filter must keep: duplicates, a superseded part, related pages no rule matched
    assert by_id["part2"]["status"] == "duplicate" and by_id["copy"]["duplicate_of"] == "story"
    assert by_id["edited"]["status"] == "duplicate"
    assert by_id["brief-copy"]["duplicate_of"] == "brief"
    assert by_id["full"]["supersedes"] == ["part1"] and by_id["teaser"]["status"] == "duplicate"
    assert by_id["followup"]["related_to"] == ["story"] and by_id["replaced"]["related_to"] == ["story", "followup"]


def test_a_page_none_of_whose_candidates_can_link_is_not_judged(tmp_path, monkeypatch):
    calls = [0]
    real = detector.judged

    def counted(*args, **kwargs):
        calls[0] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(detector, "judged", counted)
    _, judge = _run(tmp_path, "counted", 256)
    assert judge.work["candidates_verified"] > 10 * judge.work["pages"] / 2  # the forum's pages meet many
    assert 0 < calls[0] < 25  # the news pages' links, not the forum's pages


def test_what_the_filter_measured_is_not_measured_again(tmp_path, monkeypatch):
    """MinHash's test and the new shares of the candidates the filter keeps go on to `judged` (`columns.Measured`):
    the engine runs neither again for them (recombined text: ~60 kept a page, each measured twice before)."""
    asked = {"minhash": 0, "new_shares": 0, "judged": 0}
    real_similarities, real_new_shares = MinHashMethod.similarities, WordPairsMethod.new_shares
    real_judged = detector.judged

    def similarities(self, signature, others):
        asked["minhash"] += len(others)
        return real_similarities(self, signature, others)

    def new_shares(self, signature, others):
        asked["new_shares"] += len(others)
        return real_new_shares(self, signature, others)

    def judged(seqs, *args, **kwargs):
        asked["judged"] += len(seqs)
        return real_judged(seqs, *args, **kwargs)

    monkeypatch.setattr(MinHashMethod, "similarities", similarities)
    monkeypatch.setattr(WordPairsMethod, "new_shares", new_shares)
    monkeypatch.setattr(detector, "judged", judged)
    _run(tmp_path, "measured", 256)
    assert asked["judged"] > 10  # the news pages' candidates were judged
    assert asked["minhash"] == asked["new_shares"] == 0
