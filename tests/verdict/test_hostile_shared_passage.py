"""An attacker's digest of two stories that share a passage no longer merges them (docs/limitations.md, Hostile pages).

Two real stories on their own sites, of like length, both print one ~100-word quote (a statement
both outlets ran). The attacker's page holding both whole comes after them, then a copy of each on
other sites. A digest bridges none (`engine.joined_roots`), and a later copy of one story bridges the
digest's cluster only where it is most of the digest (under half of the digest's text absent from
it, `engine.MOST_OF`), which of two stories at most one is where they share nothing; sharing the
quote, each is (0.44 of the digest absent from each): the first copy joins the digest to its story,
the second to its own, and the stories are one (cluster ids and `merged_clusters` read as one
union). 12 of 12 seeds, before and after rules version 28; a 1-sentence shared quote, 6 of 12.
Since rules version 33 the digest itself, where two of its stories are each most of it, is marked
(`engine.digest_of_overlapping`) and no later copy bridges its cluster for being most of it.
"""

from __future__ import annotations

from typing import Any

import pytest
from story_pages import story_of, story_page

from streamdedup import detector as detector_module
from streamdedup.testing import make_article, run_records
from streamdedup.verdict.engine import Candidate, bridges, decide, digest_of_overlapping
from streamdedup.verdict.relations import DUPLICATE, SUPERSEDES


def _stories(seed: int) -> tuple[list[str], list[str]]:
    """Two stories of 8 paragraphs each, a 6-sentence quote (~100 words) printed in both."""
    quote = make_article(seed + 600, paragraphs=1, sentences=6)[0]
    second = make_article(seed + 300, paragraphs=8, sentences=3)
    first = make_article(seed, paragraphs=8, sentences=3)
    return [*first[:4], quote, *first[4:]], [*second[:4], quote, *second[4:]]


def _parents(outcomes: list[Any]) -> dict[str, str]:
    """The union of clusters the verdicts name (cluster ids and `merged_clusters`), as parent links."""
    parents: dict[str, str] = {}
    for out in outcomes:
        verdict = out.dedup
        for cluster in [verdict["id"], *(verdict.get("merged_clusters") or [])]:
            parents[story_of(parents, cluster)] = story_of(parents, verdict["cluster_id"])
    return parents


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5, 6])
def test_a_digest_of_two_stories_sharing_a_quote_does_not_merge_them(tmp_path, seed):
    """The stories, the attacker's digest of both, a copy of each: the stories stay two (12 of 12 merged before)."""
    first, second = _stories(seed)
    records = [story_page("A", "alpha.example", first, "08:00"), story_page("B", "beta.example", second, "08:10"),
               story_page("D", "evil.example", first + second, "08:30"),
               story_page("A2", "gamma.example", first, "08:40"), story_page("B2", "delta.example", second, "08:50")]
    outcomes = run_records(records, tmp_path)
    parents = _parents(outcomes)
    assert story_of(parents, "A") != story_of(parents, "B")
    verdicts = {out.dedup["id"]: out.dedup for out in outcomes}
    assert verdicts["A2"]["duplicate_of"] == "A" and verdicts["B2"]["duplicate_of"] == "B"
    assert story_of(parents, "A2") == story_of(parents, "A") and story_of(parents, "B2") == story_of(parents, "B")


def test_a_full_copy_of_the_digest_joins_it_and_the_stories_stay_two(tmp_path):
    """The digest's own copy names it and joins its cluster (the mark is the cluster's: its first page's
    record), and the stories' copies after it still bridge neither into the digest's cluster."""
    first, second = _stories(1)
    records = [story_page("A", "alpha.example", first, "08:00"), story_page("B", "beta.example", second, "08:10"),
               story_page("D", "evil.example", first + second, "08:30"),
               story_page("D2", "mirror.example", first + second, "08:35"),
               story_page("A2", "gamma.example", first, "08:40"), story_page("B2", "delta.example", second, "08:50")]
    outcomes = run_records(records, tmp_path)
    verdicts = {out.dedup["id"]: out.dedup for out in outcomes}
    assert (verdicts["D2"]["duplicate_of"], verdicts["D2"]["cluster_id"]) == ("D", "D"), verdicts["D2"]
    parents = _parents(outcomes)
    assert story_of(parents, "A") != story_of(parents, "B")
    assert story_of(parents, "D2") == story_of(parents, "D")


def test_a_copy_of_a_digest_of_one_story_and_a_little_still_joins_it(tmp_path):
    """A page holding story A whole and a short page of another story (C): of its stories only A is most of
    it, so it is not marked, and a later copy of A, most of it, bridges it into A's story as before."""
    first, _ = _stories(1)
    brief = make_article(77, paragraphs=3, sentences=3)
    records = [story_page("A", "alpha.example", first, "08:00"), story_page("C", "beta.example", brief, "08:10"),
               story_page("D", "roundup.example", first + brief, "08:30"), story_page("A2", "gamma.example", first, "08:40")]
    outcomes = run_records(records, tmp_path)
    verdicts = {out.dedup["id"]: out.dedup for out in outcomes}
    assert verdicts["D"]["cluster_id"] == "D" and set(verdicts["D"]["supersedes"]) == {"A", "C"}, verdicts["D"]
    assert verdicts["A2"]["duplicate_of"] == "A" and verdicts["A2"]["merged_clusters"] == ["D"], verdicts["A2"]
    parents = _parents(outcomes)
    assert story_of(parents, "D") == story_of(parents, "A") != story_of(parents, "C")


def test_a_digest_filed_by_rules_before_32_is_read_as_before(tmp_path, monkeypatch):
    """A store written before rules version 33 keeps no mark: its digest's cluster is bridged by a copy that
    is most of it, as then (the stories merge); a digest filed now over the same store is marked."""
    first, second = _stories(2)
    monkeypatch.setattr(detector_module, "digest_of_overlapping", lambda *args: False)  # as rules 31 filed it
    run_records([story_page("A", "alpha.example", first, "08:00"), story_page("B", "beta.example", second, "08:10"),
                 story_page("D", "evil.example", first + second, "08:30")], tmp_path)
    monkeypatch.undo()
    later = run_records([story_page("A2", "gamma.example", first, "08:40"), story_page("B2", "delta.example", second, "08:50")],
                        tmp_path)
    assert [out.dedup["merged_clusters"] for out in later] == [["D"], ["D"]]  # A, D and B: one story, as before


def test_a_page_is_marked_only_where_two_stories_of_other_sites_are_each_most_of_it():
    """`digest_of_overlapping` from the digest's candidates: each story's share of the page absent from it."""
    def over(*shares: tuple[str, float]) -> list[Candidate]:
        return [Candidate(n, root, "minhash", 0.5, n, root, SUPERSEDES, share) for n, (root, share) in enumerate(shares)]

    quoted = over(("A", 0.44), ("B", 0.44))
    assert decide("D", quoted).cluster_id == "D" and digest_of_overlapping("D", quoted, decide("D", quoted))
    apart = over(("A", 0.4), ("B", 0.6))  # sharing nothing: one is most of it
    assert not digest_of_overlapping("D", apart, decide("D", apart))
    one_story = [Candidate(n, root, "minhash", 0.5, n, root, SUPERSEDES, 0.44, story_id="A")
                 for n, root in enumerate(("A", "B"))]
    assert decide("W", one_story).cluster_id == "A" and not digest_of_overlapping("W", one_story, decide("W", one_story))
    # a copy of one story, most of the marked digest: bridges its cluster no more, still its named duplicate's
    assert bridges(DUPLICATE, False, "D", "D", 0.44) and not bridges(DUPLICATE, False, "D", "D", 0.44, overlapping=True)
    # a marked digest is a digest (`started_digest`): neither its site nor a fragment bridges it (rules 36, 37)
    assert not bridges(DUPLICATE, True, "D", "D", 0.44, overlapping=True, digest=True)
    assert not bridges(DUPLICATE, False, "D", "D", 0.7, fragment=True, overlapping=True, digest=True)
