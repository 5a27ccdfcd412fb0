"""An attacker's digest followed by his own copies of its stories, on his own site, no longer merges two real stories.

Review of 0.29.0: stories A and B on their own sites, the attacker's page holding both after them,
then his copy of A and his copy of B on the digest's site. Each copy is the duplicate of its story's
page and is held by the digest; a page of the digest's own site bridged its cluster whatever its
share (`engine.bridges`: `same_site`, for a view-all page or another fetch of its URL), so the copy of
A bridged the digest into A's story and the copy of B into B's: one story
(`python bench/hostile/digest_merges.py samesite,samesite_apart 6`: 6 of 6 seeds merged, stories
sharing a quote or nothing). A digest is now marked on its record whatever its stories share
(`engine.started_digest`, `DocRecord.digest`): its site is no reason to bridge its cluster, which a
page bridges only as one of another site would. The global topology:
tests/runtime/scaleout/test_digest_same_site.py. docs/limitations.md, Hostile pages.
"""

from __future__ import annotations

import pytest
from story_pages import story_of, story_page, story_parents

from streamdedup.testing import make_article, run_records
from streamdedup.verdict.contract import Verdict
from streamdedup.verdict.engine import Candidate, bridges, decide, started_digest
from streamdedup.verdict.relations import DUPLICATE, RELATED, SUPERSEDES


@pytest.mark.parametrize("quote", [False, True])
@pytest.mark.parametrize("seed", [1, 2])
def test_the_attackers_own_copies_after_his_digest_do_not_merge_twostory_parents(tmp_path, seed, quote):
    """Stories sharing nothing (the digest is no digest of overlapping stories), or a ~100-word quote (it is)."""
    first, second = make_article(seed, paragraphs=8, sentences=3), make_article(seed + 300, paragraphs=8, sentences=3)
    if quote:
        shared = make_article(seed + 600, paragraphs=1, sentences=6)[0]
        first, second = [*first[:4], shared, *first[4:]], [*second[:4], shared, *second[4:]]
    records = [story_page("A", "alpha.example", first, "08:00"), story_page("B", "beta.example", second, "08:10"),
               story_page("D", "evil.example", first + second, "08:30"),
               story_page("A2", "evil.example", first, "08:40"), story_page("B2", "evil.example", second, "08:50")]
    outcomes = run_records(records, tmp_path)
    verdicts = {out.dedup["id"]: out.dedup for out in outcomes}
    assert verdicts["D"]["cluster_id"] == "D", verdicts["D"]
    assert (verdicts["A2"]["status"], verdicts["A2"]["cluster_id"]) == ("duplicate", "A"), verdicts["A2"]
    parents = story_parents(outcomes)
    assert story_of(parents, "A") != story_of(parents, "B")


def test_a_page_of_its_site_still_bridges_a_cluster_no_digest_started(tmp_path):
    """The same-site bridge kept: an article's first part syndicated on another site with a line of its own,
    then the article whole on its own site (related to the syndicated part: a cluster of its own, no
    digest), then the site's `?page=1`: the duplicate of both, under half of the whole, bridges them."""
    article = make_article(41, paragraphs=8, sentences=3)
    intro = make_article(42, paragraphs=1, sentences=3)[0]
    records = [story_page("E", "wire.example", [intro, *article[:3]], "08:00"),
               story_page("V", "paged.example", article, "08:10"),
               {**story_page("P1", "paged.example", article[:3], "08:20"), "url": "https://paged.example/a/V?page=1"}]
    verdicts = {out.dedup["id"]: out.dedup for out in run_records(records, tmp_path)}
    assert verdicts["V"]["cluster_id"] == "V" and verdicts["V"]["related_to"] == ["E"], verdicts["V"]
    assert verdicts["P1"]["status"] == "duplicate", verdicts["P1"]
    assert {verdicts["P1"]["cluster_id"], *verdicts["P1"]["merged_clusters"]} == {"E", "V"}, verdicts["P1"]


def test_a_digest_is_marked_and_its_cluster_bridged_for_its_site_no_more():
    """`started_digest`: a page over pages of two stories that bridged none; `bridges` with `digest`."""
    def over(*roots: str, relation: str = SUPERSEDES) -> list[Candidate]:
        return [Candidate(n, root, "minhash", 0.5, n, root, relation, 0.55) for n, root in enumerate(roots)]

    digest = over("A", "B")
    assert decide("D", digest).cluster_id == "D" and started_digest("D", digest, decide("D", digest))
    one = over("A")
    assert not started_digest("W", one, decide("W", one))  # one story with text of its own: joins it
    related = over("A", "B", relation=RELATED)
    assert not started_digest("R", related, decide("R", related))  # related only: no digest
    merged = over("A", "B") + [Candidate(9, "X", "exact", 1.0, 0, "A")]
    assert not started_digest("C", merged, decide("C", merged))  # a copy joins its duplicate's cluster
    cut = [Candidate(n, root, "minhash", 0.9, n, root, DUPLICATE, 0.0, 0.55) for n, root in enumerate(("A", "B"))]
    assert not started_digest("T", cut, Verdict("T", "unique", "T", text_cut=True))  # a cut page joins neither
    # a copy of one of its stories, of its site, under half of it
    assert bridges(DUPLICATE, True, "A2", "D", 0.52) and not bridges(DUPLICATE, True, "A2", "D", 0.52, digest=True)
    assert bridges(DUPLICATE, True, "D2", "D", 0.02, digest=True)  # another fetch of it: most of it
    assert not bridges(DUPLICATE, True, "D2", "D", 0.02, overlapping=True, digest=True)  # ... unless overlapping
    assert bridges(DUPLICATE, False, "T", "D", 0.8, fragment=True) and not bridges(DUPLICATE, False, "T", "D", 0.8,
                                                                                   fragment=True, digest=True)


def test_an_article_made_a_digest_by_pages_of_its_halves_before_it_keeps_its_copies(tmp_path):
    """The mark abused: the attacker's two pages, each one half of an article, crawled before it, make the
    article a digest (it holds pages of two stories). Its re-fetch and a wire copy still join it (most of
    it, named); its own `?page=1` is no longer bridged into it for being of its site: it names the
    attacker's half that holds it whole (a merge missed, nothing hidden: the article stays unique)."""
    article = make_article(61, paragraphs=8, sentences=3)
    records = [story_page("P1", "evil1.example", article[:4], "08:00"),
               story_page("P2", "evil2.example", article[4:], "08:05"),
               story_page("X", "news.example", article, "08:10"),
               {**story_page("XP", "news.example", article[:3], "08:20"), "url": "https://news.example/a/X?page=1"},
               story_page("X2", "news.example", article, "08:30"), story_page("W", "wire.example", article, "08:40")]
    verdicts = {out.dedup["id"]: out.dedup for out in run_records(records, tmp_path)}
    assert (verdicts["X"]["status"], verdicts["X"]["cluster_id"]) == ("unique", "X"), verdicts["X"]
    assert [(verdicts[p]["duplicate_of"], verdicts[p]["cluster_id"]) for p in ("X2", "W")] == [("X", "X")] * 2
    assert (verdicts["XP"]["status"], verdicts["XP"]["duplicate_of"]) == ("duplicate", "P1"), verdicts["XP"]
    assert not verdicts["XP"].get("merged_clusters"), verdicts["XP"]
