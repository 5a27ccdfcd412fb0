"""A digest (a page holding whole stories, published after them) bridges none of their stories.

docs/limitations.md, "Hostile pages": anyone could copy two published articles into one page of
their own site and merge the two stories of a news feed, as a view-all page joins its parts. A page
now bridges the clusters of what it supersedes only where they are its parts': started by a page of
its own site (`engine.joined_roots`). File mode through the public API; the global topology decides
with the same `decide` (tests/runtime/scaleout)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from streamdedup import Deduplicator, Verdict
from streamdedup.testing import make_article, wrap_in_template
from streamdedup.verdict.engine import Candidate, decide, joined_roots
from streamdedup.verdict.relations import SUPERSEDES


def _record(url: str, paragraphs: Sequence[str], hour: int, site: str) -> dict:
    return {"url": url, "content": wrap_in_template(list(paragraphs), site, title=f"Page {hour}"),
            "fetched_at": f"2026-03-01T{hour:02d}:00:00Z"}


def _stories_of(dedup: Deduplicator) -> dict[str, set[str]]:
    """Each story's pages, by url."""
    return {story["cluster_id"]: {page["url"] for page in story["pages"]} for story in dedup.stories()}


def _story_holding(stories: dict[str, set[str]], url: str) -> set[str]:
    return next(pages for pages in stories.values() if url in pages)


@pytest.mark.parametrize("count", [2, 4])
def test_a_digest_of_whole_stories_published_after_them_merges_none(count):
    """Each story on its news site and copied on another host, then a digest of all of them on a
    third: unique, superseding them, in a story of its own. Before: it joined the first story and
    named the others in `merged_clusters`, one story in the feed."""
    articles = [make_article(900 + i, paragraphs=6) for i in range(count)]
    records = []
    for i, article in enumerate(articles):
        records.append(_record(f"https://news{i}.example/story-{i}", article, len(records), f"news{i}.example"))
        records.append(_record(f"https://mirror{i}.example/copy-{i}", article, len(records), f"mirror{i}.example"))
    records.append(_record("https://digest.example/today", [p for a in articles for p in a], len(records),
                           "digest.example"))
    with Deduplicator() as dedup:
        verdicts: list[Verdict] = [v for v in dedup.add_many(records) if isinstance(v, Verdict)]
        stories = _stories_of(dedup)
    assert len(verdicts) == len(records)
    for i in range(count):  # each story whole: its copy joins it
        assert verdicts[2 * i].status == "unique" and verdicts[2 * i + 1].duplicate_of == verdicts[2 * i].page_id
    digest = verdicts[-1]
    assert digest.status == "unique" and digest.cluster_id == digest.page_id, digest
    assert digest.merged_clusters == (), digest
    # a crawler may still replace what it holds (with 4 stories, one of them reads as related only)
    assert len(digest.supersedes) >= 4 and set(digest.supersedes) <= {v.page_id for v in verdicts[:-1]}
    assert len(stories) == count + 1
    for i in range(count):
        assert _story_holding(stories, f"https://news{i}.example/story-{i}") == {
            f"https://news{i}.example/story-{i}", f"https://mirror{i}.example/copy-{i}"}


def test_stories_copied_onto_the_digests_own_site_first_are_not_its_parts():
    """The attacker's copies of two stories on his own site join the stories' clusters (they are
    the stories' duplicates, not the first pages of their clusters): a digest there bridges neither."""
    a, b = make_article(911, paragraphs=6), make_article(912, paragraphs=6)
    records = [_record("https://news-a.example/a", a, 0, "news-a.example"),
               _record("https://news-b.example/b", b, 1, "news-b.example"),
               _record("https://evil.example/a", a, 2, "evil.example"),
               _record("https://evil.example/b", b, 3, "evil.example"),
               _record("https://evil.example/both", a + b, 4, "evil.example")]
    with Deduplicator() as dedup:
        verdicts = dedup.add_many(records)
        stories = _stories_of(dedup)
    assert [v.duplicate_of for v in verdicts[2:4]] == [verdicts[0].page_id, verdicts[1].page_id]
    digest = verdicts[-1]
    assert (digest.status, digest.cluster_id, digest.merged_clusters) == ("unique", digest.page_id, ()), digest
    assert _story_holding(stories, "https://news-a.example/a") == {"https://news-a.example/a", "https://evil.example/a"}


def test_a_view_all_page_after_its_parts_still_joins_them():
    """The merge a digest imitated: the parts `?page=1` and `?page=2` of one article, each the first
    page of its cluster, then the article whole at the site's own url: one story of the three."""
    article = make_article(921, paragraphs=6)
    url = "https://paged.example/long-read"
    records = [_record(f"{url}?page=1", article[:3], 0, "paged.example"),
               _record(f"{url}?page=2", article[3:], 1, "paged.example"),
               _record(url, article, 2, "paged.example")]
    with Deduplicator() as dedup:
        verdicts = dedup.add_many(records)
        stories = _stories_of(dedup)
    first, second, whole = verdicts
    assert first.cluster_id == first.page_id and second.cluster_id == second.page_id
    assert whole.status == "unique" and set(whole.supersedes) == {first.page_id, second.page_id}
    assert whole.cluster_id == first.page_id and whole.merged_clusters == (second.page_id,), whole
    assert list(stories.values()) == [{f"{url}?page=1", f"{url}?page=2", url}]


def test_copies_after_a_digest_keep_its_stories_apart():
    """Two stories, a digest of both on a third site (a story of its own), then a wire copy of each
    on other hosts: each copy is its story's duplicate and is held by the digest too. Before, each
    copy bridged its story and the digest's cluster (`merged_clusters`), so the two stories became
    one through the digest: the merge rule 20 refused the digest itself (a fresh user's review).
    Now a copy bridges the digest's cluster only where it is most of the digest: one story at most."""
    a, b = make_article(931, paragraphs=6), make_article(932, paragraphs=6)
    records = [_record("https://news-a.example/a", a, 0, "news-a.example"),
               _record("https://news-b.example/b", b, 1, "news-b.example"),
               _record("https://digest.example/today", a + b, 2, "digest.example"),
               _record("https://wire-a.example/a", a, 3, "wire-a.example"),
               _record("https://wire-b.example/b", b, 4, "wire-b.example")]
    with Deduplicator() as dedup:
        verdicts = dedup.add_many(records)
        stories = _stories_of(dedup)
    story_a, story_b, digest, copy_a, copy_b = verdicts
    assert digest.cluster_id == digest.page_id and digest.merged_clusters == (), digest
    assert (copy_a.status, copy_a.duplicate_of) == ("duplicate", story_a.page_id), copy_a
    assert (copy_b.status, copy_b.duplicate_of) == ("duplicate", story_b.page_id), copy_b
    assert not (copy_a.merged_clusters and copy_b.merged_clusters), (copy_a, copy_b)
    pages_a = _story_holding(stories, "https://news-a.example/a")
    pages_b = _story_holding(stories, "https://news-b.example/b")
    assert pages_a != pages_b, stories
    assert {"https://news-a.example/a", "https://wire-a.example/a"} <= pages_a
    assert {"https://news-b.example/b", "https://wire-b.example/b"} <= pages_b
    assert "https://digest.example/today" not in pages_a & pages_b


def test_a_copy_bridges_a_digest_of_another_site_only_where_it_is_most_of_it():
    """A digest of three stories: a later copy of any one is under half of it, and bridges none."""
    articles = [make_article(951 + i, paragraphs=6) for i in range(3)]
    records = [_record(f"https://news{i}.example/s", a, i, f"news{i}.example") for i, a in enumerate(articles)]
    records.append(_record("https://digest.example/today", [p for a in articles for p in a], 3, "digest.example"))
    records += [_record(f"https://wire{i}.example/s", a, 4 + i, f"wire{i}.example") for i, a in enumerate(articles)]
    with Deduplicator() as dedup:
        verdicts = dedup.add_many(records)
        stories = _stories_of(dedup)
    for i in range(3):
        copy = verdicts[4 + i]
        assert (copy.duplicate_of, copy.cluster_id, copy.merged_clusters) == (
            verdicts[i].page_id, verdicts[i].page_id, ()), copy
        assert _story_holding(stories, f"https://news{i}.example/s") == {f"https://news{i}.example/s",
                                                                         f"https://wire{i}.example/s"}
    assert _story_holding(stories, "https://digest.example/today") == {"https://digest.example/today"}


def test_a_part_after_its_view_all_page_and_a_digest_joins_the_story_it_names():
    """A part (`?page=1`) held by its site's view-all page and by a digest on another site, in two
    clusters: a duplicate in the cluster of the page it names, bridging neither into the other. It is
    most of neither, a fragment, which bridges its story's clusters (a teaser healing two: web dev, a
    copy the story's page was only related to; bridging only where it is most of them lost 6 of web
    dev's 550 true pairs and 7 of multilingual's), but not a digest's (rules version 37:
    `engine.started_digest`; it bridged both before), and names the page that is no digest."""
    a, b = make_article(941, paragraphs=6), make_article(942, paragraphs=6)
    records = [_record("https://paged.example/a", a, 0, "paged.example"),
               _record("https://news-b.example/b", b, 1, "news-b.example"),
               _record("https://digest.example/today", a + b, 2, "digest.example"),
               _record("https://paged.example/a?page=1", a[:3], 3, "paged.example")]
    with Deduplicator() as dedup:
        verdicts = dedup.add_many(records)
        stories = _stories_of(dedup)
    whole, _, digest, part = verdicts
    assert digest.cluster_id == digest.page_id, digest
    assert part.status == "duplicate" and part.merged_clusters == (), part
    assert part.cluster_id == next(v.cluster_id for v in verdicts if v.page_id == part.duplicate_of)
    assert _story_holding(stories, "https://digest.example/today") in (
        {"https://digest.example/today"}, {"https://digest.example/today", "https://paged.example/a?page=1"})
    assert len(_story_holding(stories, "https://paged.example/a")) in (1, 2)


def test_clusters_only_guessed_are_never_bridged_and_a_digest_over_them_joins_the_oldest():
    """`joined_roots(joins, stale)`: the global topology's guessed clusters (an index partition's, maybe
    stale). A page bridging two clusters names a stale one as merged no more (file mode: none stale,
    the merge stands); a digest over whole stories starts its own cluster, unless one is stale: then
    they may be one story, and it joins the oldest, bridging none."""
    copy_of = [Candidate(1, "A", "exact", 1.0, 1, "A"), Candidate(2, "B", "exact", 1.0, 2, "B")]
    assert joined_roots(copy_of) == [(1, "A"), (2, "B")]
    assert joined_roots(copy_of, stale={"B"}) == [(1, "A")]
    assert decide("P", copy_of, stale={"B"}).merged_clusters == ()
    whole = [Candidate(n, s, "minhash", 0.6, n, s, SUPERSEDES, 0.4) for n, s in ((1, "A"), (2, "B"))]
    assert joined_roots(whole) == [] and decide("D", whole).cluster_id == "D"
    assert joined_roots(whole, stale={"B"}) == [(1, "A")]
    verdict = decide("D", whole, stale={"B"})
    assert verdict.cluster_id == "A" and verdict.merged_clusters == ()


def _rewritten_story_then_its_wire_copy(rewritten: bool) -> list[dict]:
    """One story at one url (a first fetch less paragraph 4; optionally a rewrite in place less paragraph 2,
    related to it; a third fetch less both, a duplicate of each that bridges them), then the whole
    article on a wire site."""
    article = make_article(961, paragraphs=6)
    url = "https://news.example/flood"
    fetches = [article[:4] + article[5:], *([article[:2] + article[3:]] if rewritten else []),
               article[:2] + article[3:4] + article[5:]]
    records = [_record(url, paragraphs, hour, "news.example") for hour, paragraphs in enumerate(fetches)]
    return [*records, _record("https://wire.example/flood", article, len(records), "wire.example")]


def test_a_wire_copy_holding_a_story_whole_joins_it():
    """The control of the next test: without the rewrite the story is one cluster, and the wire copy
    that supersedes its pages joins it."""
    with Deduplicator() as dedup:
        verdicts = dedup.add_many(_rewritten_story_then_its_wire_copy(rewritten=False))
        stories = _stories_of(dedup)
    assert [v.status for v in verdicts] == ["unique", "duplicate", "unique"]
    assert verdicts[-1].cluster_id == verdicts[0].page_id and len(verdicts[-1].supersedes) == 2
    assert list(stories.values()) == [{"https://news.example/flood", "https://wire.example/flood"}]


def test_a_wire_copy_holding_a_story_of_two_clusters_whole_joins_it():
    """The same story with a rewrite in place between (its own cluster, related to the first fetch) that
    the third fetch bridged: one story of two clusters. The wire copy holding all three fetches whole
    is taken for a digest of two stories: unique in a story of its own, related to none, its
    `supersedes` naming the other story's pages (story-dev + feed-dev as one crawl in the sets' order:
    feed-dev's original of an article story-dev had fetched three times before)."""
    with Deduplicator() as dedup:
        verdicts = dedup.add_many(_rewritten_story_then_its_wire_copy(rewritten=True))
        stories = _stories_of(dedup)
    first, rewrite, third, wire = verdicts
    assert rewrite.related_to == (first.page_id,) and rewrite.cluster_id == rewrite.page_id
    assert third.duplicate_of == first.page_id and third.merged_clusters == (rewrite.page_id,)
    assert set(wire.supersedes) == {first.page_id, rewrite.page_id, third.page_id}
    assert wire.cluster_id == first.page_id, wire
    assert list(stories.values()) == [{"https://news.example/flood", "https://wire.example/flood"}]


def test_the_merge_is_kept_in_the_store_for_a_wire_copy_of_a_later_run(tmp_path):
    """The third fetch's merge is kept in the store (on the record of the rewrite, the first page of the
    cluster it merged): a wire copy judged by a later run on the same store joins the story too."""
    *story, wire = _rewritten_story_then_its_wire_copy(rewritten=True)
    with Deduplicator(state=tmp_path / "store") as dedup:
        first, rewrite, third = dedup.add_many(story)
    assert third.merged_clusters == (rewrite.page_id,)
    with Deduplicator(state=tmp_path / "store") as dedup:
        [copy] = dedup.add_many([wire])
    assert copy.status == "unique" and set(copy.supersedes) == {first.page_id, rewrite.page_id, third.page_id}
    assert copy.cluster_id == first.page_id and copy.merged_clusters == (), copy


def _chain_of_merges(clusters: int) -> list[dict]:
    """Clusters C1..Cn of one story on n sites (a core and two paragraphs of their own, each related to the
    ones before), bridged by pages B(n-1)..B1 in that order (B k: the core and the paragraph C k and C k+1
    share, a duplicate of both): merges Cn -> C(n-1) -> ... -> C1, a chain of n - 1. Then a wire copy
    holding C1 and Cn whole."""
    paragraphs = make_article(77, paragraphs=clusters + 5)
    core, own = paragraphs[:3], paragraphs[3:]

    def page(page_id: str, site: str, held: Sequence[str], minute: int) -> dict:
        return {"id": page_id, "url": f"https://{site}/a", "content": wrap_in_template(list(held), site, title="T"),
                "fetched_at": f"2026-03-01T{minute // 60:02d}:{minute % 60:02d}:00Z"}

    pages = [page(f"C{k}", f"s{k}.example", core + own[k:k + 2], k) for k in range(1, clusters + 1)]
    pages += [page(f"B{k}", f"b{k}.example", core + own[k + 1:k + 2], 100 + clusters - k)
              for k in range(clusters - 1, 0, -1)]
    return [*pages, page("WIRE", "wire.example", core + own[1:3] + own[clusters:clusters + 2], 300)]


@pytest.mark.parametrize("clusters", [6, 20, 40])
def test_a_copy_of_a_story_merged_along_a_chain_longer_than_a_story_of_reads_joins_it(clusters):
    """A chain of merges longer than `StoreBatch.story_of` reads at once (16 records): the wire copy's
    candidates' clusters C1, C(n-1) and Cn are one story. With n = 20 the first ask for C19 stopped at C3
    (a story of its own to the digest rule): the copy was taken for a digest of two stories and started
    its own, though C(n-1)'s and Cn's asks left the chain short enough for the next ask."""
    with Deduplicator() as dedup:
        *pages, wire = dedup.add_many(_chain_of_merges(clusters))
    assert [v.merged_clusters for v in pages[clusters:]] == [(f"C{k + 1}",) for k in range(clusters - 1, 0, -1)]
    assert {"C1", f"C{clusters}"} <= set(wire.supersedes)
    assert wire.cluster_id == "C1", wire


@pytest.mark.parametrize("own_site", [False, True])
def test_teasers_after_a_digest_keep_its_stories_apart(own_site):
    """The attacker's teasers of each story (its first half) after his digest of both, on other sites or on his:
    each is a fragment, most of none of the pages holding it, and bridged its story's cluster and the
    digest's, naming either (`python bench/hostile/digest_merges.py teasers,samesite_teasers 6`: 6 of 6
    seeds merged before rules version 37). A fragment bridges no digest's cluster, and names its story's page."""
    a, b = make_article(971, paragraphs=8), make_article(972, paragraphs=8)
    there = ("evil.example", "evil.example") if own_site else ("gamma.example", "delta.example")
    records = [_record("https://news-a.example/a", a, 0, "news-a.example"),
               _record("https://news-b.example/b", b, 1, "news-b.example"),
               _record("https://evil.example/today", a + b, 2, "evil.example"),
               _record(f"https://{there[0]}/a", a[:3], 3, there[0]),
               _record(f"https://{there[1]}/b", b[:3], 4, there[1])]
    with Deduplicator() as dedup:
        verdicts = dedup.add_many(records)
        stories = _stories_of(dedup)
    story_a, story_b, digest, teaser_a, teaser_b = verdicts
    assert digest.cluster_id == digest.page_id, digest
    for teaser, story in ((teaser_a, story_a), (teaser_b, story_b)):
        assert (teaser.status, teaser.duplicate_of, teaser.cluster_id, teaser.merged_clusters) == (
            "duplicate", story.page_id, story.page_id, ()), teaser
    assert _story_holding(stories, "https://news-a.example/a") != _story_holding(stories, "https://news-b.example/b")
