"""Candidates that cannot link to a page are not judged, and every verdict stays as judging them all.

`verdict.prefilter.CandidateFilter` runs the engine's first tests on a batch's arrays and drops
the candidates no rule, held match or relation can take; a page with none left skips
`relations.judged` (on text of one shared vocabulary, nearly every page)."""

from __future__ import annotations

import random

import numpy as np
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


def test_other_signature_widths_keep_the_verdicts(tmp_path, monkeypatch):
    """Word pairs of 132 values (33 bytes: not whole uint64 words, padded) and 16-bit MinHash values:
    the filter's in-place reads give the verdicts of judging every candidate."""
    config = DetectorConfig(batch_size=64, method_params={"wordpairs": {"num_perm": 132},
                                                          "minhash": {"value_bits": 16, "band_check_bits": 0}})
    with Detector(config, tmp_path / "filtered") as judge:
        filtered = [o.dedup for o in judge.run(raw_records(_pages()))]
        assert judge.work["candidates_ruled_out"] > 0.8 * judge.work["candidates_verified"]
    monkeypatch.setattr(prefilter.CandidateFilter, "usable", classmethod(lambda cls, methods: False))
    with Detector(config, tmp_path / "every") as judge:
        every = [o.dedup for o in judge.run(raw_records(_pages()))]
    assert filtered == every
    assert {d["id"]: d for d in every}["copy"]["duplicate_of"] == "story"


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


# -- the filter's own arithmetic, at its edges (pure logic) ----------------------------------------------------


def test_the_word_count_of_differing_fields_is_the_byte_count():
    """`two_bit_unequal` (eight bytes at a time) counts the fields `two_bit_new_shares` counts a byte at a time:
    fields differing in their high bit only, in their low bit only, at a word's and a byte's edge."""
    import numpy as np

    from streamdedup.fingerprints.wordpair_kernels import two_bit_new_shares, two_bit_unequal, two_bit_words

    rng = np.random.default_rng(3)
    mine = rng.integers(0, 256, 64, dtype=np.uint8)
    rows = [mine.copy() for _ in range(6)]
    rows[1][0] ^= 0b10  # the high bit of the first field
    rows[2][7] ^= 0b1000_0000  # the high bit of the last field of the first word
    rows[3][8] ^= 0b1  # the low bit of the first field of the second word
    rows[4] = ~mine  # every field
    rows[5] = rng.integers(0, 256, 64, dtype=np.uint8)
    for other in [*rows, *rng.integers(0, 256, (40, 64), dtype=np.uint8)]:
        record = np.concatenate([np.array([200, 1, 0, 0], dtype=np.uint8), other])
        bytewise = two_bit_new_shares(record, np.array([68]), 68, mine, 300, 256, 0.25)
        unequal = two_bit_unequal(two_bit_words(other[None, :])[0], two_bit_words(mine[None, :])[0])
        want = sum(((int(a) ^ int(b)) >> shift) & 3 != 0 for a, b in zip(other, mine, strict=True) for shift in (0, 2, 4, 6))
        assert unequal == want
        # the same count gives the same shares (1 - unequal/256 estimates the Jaccard)
        jaccard = min(1.0, max(0.0, (1.0 - want / 256 - 0.25) / 0.75))
        shared = jaccard * (456 + 300) / (1.0 + jaccard)
        assert bytewise[0][0] == min(1.0, max(0.0, 1.0 - shared / 300))
    assert two_bit_unequal(two_bit_words(rows[0][None, :])[0], two_bit_words(mine[None, :])[0]) == 0
    assert two_bit_unequal(two_bit_words(rows[4][None, :])[0], two_bit_words(mine[None, :])[0]) == 256


def _bare_filter(rules, complete, firsts):
    """A `CandidateFilter` holding only what its rule checks read."""
    made = object.__new__(prefilter.CandidateFilter)
    made._rules, made._complete = rules, complete
    made._first_unfiled = np.asarray(firsts, dtype=np.int64)
    return made


def test_no_rule_may_hold_only_where_the_rule_check_rules_every_candidate_out():
    """`_no_rule_may_hold` (two figures) says True only where `_some_rule_may_hold` (each candidate) rules all
    out: at the edges, a similarity equal to a rule's floor and a first unfiled place one below a bound keep it."""
    from streamdedup.verdict.found_by import FoundBy

    rules = [([], [1]), ([0.5], []), ([], [3, 0]), ([0.8], [3])]  # exact | minhash | simhash+a12 | minhash>=0.8+simhash
    seqs = [10, 11, 12]
    rows = np.arange(3)
    unfiled = [1 << 62] * 3
    bounds = {0: 36, 1: 37, 3: 46}
    nobody = FoundBy({0: set(), 1: set(), 3: set()}, bounds)

    def told(similarity, firsts, found_by):
        made = _bare_filter(rules, [0, 1, 3], firsts)
        similarity = np.asarray(similarity, dtype=np.float64)
        measured = similarity[~np.isnan(similarity)]
        best = float(measured.max()) if len(measured) else -np.inf
        quick = made._no_rule_may_hold(seqs, best, int(min(firsts)), found_by)
        each = made._some_rule_may_hold(seqs, rows, similarity, found_by)
        assert not (quick and each.any())  # never a candidate a rule may hold for ruled out
        return quick, each

    nan = np.nan
    quick, each = told([nan, 0.3, 0.49], unfiled, nobody)  # every similarity below the floor, none found
    assert quick and not each.any()
    quick, each = told([nan, 0.5, 0.2], unfiled, nobody)  # at the floor: minhash may hold
    assert not quick and each.tolist() == [False, True, False]
    firsts = [1 << 62, 36, 1 << 62]  # one below exact's bound (37): it may not be filed under its key
    quick, each = told([nan, nan, nan], firsts, nobody)
    assert not quick and each.tolist() == [False, True, False]
    quick, each = told([nan, nan, nan], [1 << 62, 37, 1 << 62], nobody)  # at the bound: filed under all
    assert quick and not each.any()
    # found by exact's keys: may hold; exact with a full key of the page (not in `seqs`): every candidate may
    quick, each = told([nan, nan, nan], unfiled, FoundBy({0: set(), 1: {12}, 3: set()}, bounds))
    assert not quick and each.tolist() == [False, False, True]
    quick, each = told([nan, nan, nan], unfiled, FoundBy({0: set(), 3: set()}, bounds))
    assert not quick and each.all()
    # SimHash's keys found them all, A12's none: simhash+a12 holds for none; a12 with a full key: may
    quick, each = told([nan, nan, nan], unfiled, FoundBy({0: set(), 1: set(), 3: set(seqs)}, bounds))
    assert quick and not each.any()
    quick, each = told([nan, nan, nan], unfiled, FoundBy({1: set(), 3: set(seqs)}, bounds))
    assert not quick and each.all()


def test_no_rule_may_hold_never_rules_out_what_the_rule_check_keeps():
    from streamdedup.verdict.found_by import FoundBy

    rng = random.Random(7)
    for _ in range(3000):
        tags = [0, 1, 3]
        rules = [(rng.sample([0.5, 0.6, 0.8], rng.randint(0, 2)), rng.sample(tags, rng.randint(0, 2)))
                 for _ in range(rng.randint(1, 4))]
        rules = [rule for rule in rules if rule[0] or rule[1]] or [([0.5], [])]
        count = rng.randint(1, 6)
        seqs = sorted(rng.sample(range(50), count))
        firsts = [rng.choice([1 << 62, 0, 10, 35, 36, 37, 45, 46]) for _ in seqs]
        similarity = np.array([rng.choice([np.nan, 0.2, 0.5, 0.59, 0.6, 0.8, 0.9]) for _ in seqs])
        found = {tag: set(rng.sample(seqs + [99], rng.randint(0, 2))) for tag in tags if rng.random() < 0.8}
        bounds = {tag: rng.choice([None, 0, 36, 37, 46]) for tag in tags if rng.random() < 0.9}
        by = FoundBy(found, bounds)
        made = _bare_filter(rules, sorted({t for _, ts in rules for t in ts}), firsts)
        measured = similarity[~np.isnan(similarity)]
        best = float(measured.max()) if len(measured) else -np.inf
        if made._no_rule_may_hold(seqs, best, min(firsts), by):
            assert not made._some_rule_may_hold(seqs, np.arange(count), similarity, by).any()


def test_the_batch_arrays_hold_each_stored_record_at_its_row(tmp_path):
    """The filter's arrays, made at C speed: a gone record (None) has no row, a record's first unfiled
    place and word-pair head sit at its row, and a row with a signature too short is blank and not tested."""
    from streamdedup.store.layout import DocRecord
    from streamdedup.verdict.found_by import NO_PLACE

    with Detector(DetectorConfig(), tmp_path / "arrays") as judge:
        texts = ["\n".join(make_article(seed, paragraphs=4)) for seed in (1, 2, 3, 4, 5)]
        encoded = [judge._encoded(judge.fingerprinter.prepare(raw))
                   for raw in raw_records([{"id": f"p{i}", "url": f"https://s{i}.example/", "content": text,
                                            "content_type": "text/plain"} for i, text in enumerate(texts)])]
        mh_tag, wp_tag = judge.methods_by_name["minhash"][0], judge.methods_by_name["wordpairs"][0]
        width = judge.methods_by_name["wordpairs"][1].record_width
        short_mh = {**encoded[3], mh_tag: encoded[3][mh_tag][:-1]}  # a MinHash record of another width
        stored = {10: DocRecord(10, "a", 0, "a", signatures=encoded[2], unfiled=(3, 9)), 11: None,
                  12: DocRecord(12, "b", 0, "b", signatures=short_mh),
                  13: DocRecord(13, "c", 0, "c", signatures=encoded[4], unfiled=(0,))}
        for short_wp in (False, True):  # a word-pair record shorter than its head, too
            if short_wp:
                stored[12] = DocRecord(12, "b", 0, "b", signatures={**short_mh, wp_tag: encoded[3][wp_tag][:width - 1]})
            made = prefilter.CandidateFilter(judge.methods_by_name, judge.policy, encoded[:2], stored)
            assert made._row_of == {10: 2, 12: 3, 13: 4}
            assert made._first_unfiled.tolist() == [NO_PLACE, NO_PLACE, 3, NO_PLACE, 0]
            assert made._ok.tolist() == [True, True, True, False, True]
            rows = [encoded[0], encoded[1], encoded[2], None, encoded[4]]
            for row, record in enumerate(rows):
                head = np.zeros(width, dtype=np.uint8) if record is None else np.frombuffer(record[wp_tag][:width], np.uint8)
                assert made._wp_sizes[row] == head[:4].copy().view("<u4")[0]
                assert made._wp_words[row].tobytes()[:width - 4] == head[4:].tobytes()
