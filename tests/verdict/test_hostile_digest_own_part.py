"""An attacker's digest that holds a page of his own site first is a digest all the same.

Hostile review of rules versions 36 and 37: the attacker's own page E1 (any text of his, its cluster's
first page), stories A and B on their own sites, then his digest D of E1, A and B on E1's site. D
supersedes E1, a part of its site (`engine.bridges`), so it joins E1's cluster: it started none, and
neither mark was set (`engine.started_digest`: "bridged none"). His copy of each story on his site
(or a teaser of each, on any site) then bridged E1's cluster for D being of its site (or for being a
fragment) into A's story and B's: one story, 6 of 6 seeds with copies and 5 of 6 with teasers, at
rules 35 and 37 alike. A page over pages of two or more stories it did not join is a digest, whatever
cluster it joined by its parts.
"""

from __future__ import annotations

import pytest
from story_pages import story_of, story_page, story_parents

from streamdedup.testing import make_article, run_records


def _own_page(page_id: str, paragraphs: list[str], when: str) -> dict:
    """A page of the attacker's site under one heading (his digest's), so his digest holds it whole."""
    page = story_page(page_id, "evil.example", paragraphs, when)
    return {**page, "html": page["html"].replace(f"Story {page_id}", "Today")}


@pytest.mark.parametrize("teasers", [False, True])
@pytest.mark.parametrize("seed", [1, 2])
def test_a_digest_joining_its_own_sites_page_keeps_its_stories_apart(tmp_path, seed, teasers):
    """His copies on his site, or teasers (a story's first three paragraphs) on two others, after his digest."""
    first, second = make_article(seed, paragraphs=8, sentences=3), make_article(seed + 300, paragraphs=8, sentences=3)
    own = make_article(seed + 700, paragraphs=8, sentences=3)
    copies = ([story_page("A2", "gamma.example", first[:3], "08:40"), story_page("B2", "delta.example", second[:3], "08:50")]
              if teasers else [story_page("A2", "evil.example", first, "08:40"),
                               story_page("B2", "evil.example", second, "08:50")])
    records = [_own_page("E1", own, "07:50"), story_page("A", "alpha.example", first, "08:00"),
               story_page("B", "beta.example", second, "08:10"), _own_page("D", own + first + second, "08:30"), *copies]
    outcomes = run_records(records, tmp_path)
    verdicts = {out.dedup["id"]: out.dedup for out in outcomes}
    assert verdicts["D"]["cluster_id"] == "E1", verdicts["D"]  # the layout: D joins its site's page
    for copy, story in (("A2", "A"), ("B2", "B")):
        assert (verdicts[copy]["status"], verdicts[copy]["duplicate_of"], verdicts[copy]["cluster_id"]) == (
            "duplicate", story, story), verdicts[copy]
    parents = story_parents(outcomes)
    assert story_of(parents, "A") != story_of(parents, "B")


def test_a_page_of_an_articles_site_over_it_and_two_stories_leaves_its_copies_joining_it(tmp_path):
    """The mark abused: a page of the article's own site (a user's page of its host, or its top stories) holding
    the article and two wire stories joins the article's cluster and marks it. Its re-fetch, a wire copy
    and its `?page=1` still join it (the page it names, or the one cluster holding it); the stories stay apart."""
    article = make_article(81, paragraphs=8, sentences=3)
    first, second = make_article(82, paragraphs=8, sentences=3), make_article(83, paragraphs=8, sentences=3)
    records = [story_page("X", "news.example", article, "07:00"), story_page("A", "apwire.example", first, "07:10"),
               story_page("B", "reuters.example", second, "07:20"),
               {**story_page("P", "news.example", [*article, "Story A", *first, "Story B", *second], "07:30"),
                "url": "https://news.example/user/evil/today"},
               {**story_page("X2", "news.example", article, "08:00"), "url": "https://news.example/a/X"},
               story_page("W", "wire.example", article, "08:10"),
               {**story_page("XP", "news.example", article[:3], "08:20"), "url": "https://news.example/a/X?page=1"}]
    outcomes = run_records(records, tmp_path)
    verdicts = {out.dedup["id"]: out.dedup for out in outcomes}
    # the layout: it joins the article (its part) and holds both stories (each with its headline), a digest
    assert (verdicts["P"]["cluster_id"], verdicts["P"]["supersedes"]) == ("X", ["X", "A", "B"]), verdicts["P"]
    assert [(verdicts[p]["status"], verdicts[p]["cluster_id"]) for p in ("X2", "W", "XP")] == [("duplicate", "X")] * 3
    assert [verdicts[p]["duplicate_of"] for p in ("X2", "W")] == ["X", "X"]
    parents = story_parents(outcomes)
    assert len({story_of(parents, p) for p in ("X", "A", "B")}) == 3


@pytest.mark.xfail(strict=True, reason="a cluster of his site over two stories, one page each: docs/limitations.md")
def test_two_pages_each_over_his_sites_page_and_one_story_keep_the_stories_apart(tmp_path):
    """The digest split in two: his page E1, then E1's text with story A, then with story B, on his site. Each
    holds one story beside its part E1 and joins E1's cluster: no page is a digest, yet the cluster holds
    both stories; his copy of each (here the second page itself, E1's text learned as his site's template
    by then) bridges it into its story: one story, 6 of 6 seeds, at rules versions 35, 37 and 38 alike."""
    first, second = make_article(1, paragraphs=8, sentences=3), make_article(301, paragraphs=8, sentences=3)
    own = make_article(701, paragraphs=8, sentences=3)
    records = [_own_page("E1", own, "07:50"), story_page("A", "alpha.example", first, "08:00"),
               story_page("B", "beta.example", second, "08:10"), _own_page("Da", own + first, "08:30"),
               _own_page("Db", own + second, "08:35"), story_page("A2", "evil.example", first, "08:40"),
               story_page("B2", "evil.example", second, "08:50")]
    outcomes = run_records(records, tmp_path)
    verdicts = {out.dedup["id"]: out.dedup for out in outcomes}
    assert verdicts["Da"]["cluster_id"] == "E1", verdicts["Da"]  # the layout: it joins its part
    parents = story_parents(outcomes)
    assert story_of(parents, "A") != story_of(parents, "B")
