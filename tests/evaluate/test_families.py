"""The set families (feed, site, web) built from generated pages: promised counts, kinds, hosts,
splits that share no article and no template, and the same set for the same seed."""

import dataclasses
import io
import json
import random
import tarfile
from collections import Counter, defaultdict

import pytest
from conftest import make_article, wrap_in_template

from streamdedup.evaluate.construct import build_family, main
from streamdedup.evaluate.family_cold import build_cold
from streamdedup.evaluate.family_feed import REVISIONS, build_feed
from streamdedup.evaluate.family_site import EDITS, build_site
from streamdedup.evaluate.family_story import NEW_TEXT, NO_NEW_TEXT, build_story
from streamdedup.evaluate.pages import SourcePage, load_pages
from streamdedup.evaluate.sets import LabelledSet, distinct_articles, split_of
from streamdedup.evaluate.surgery import usable_template


def _page(i, site=None, corpus="trafilatura"):
    paragraphs = make_article(1000 + i, paragraphs=6)
    site = site or f"site{i}.de"
    return SourcePage(f"traf:p{i}.html", wrap_in_template(paragraphs, site.split(".")[0].title(), f"Title {i} news"),
                      tuple(paragraphs), f"Title {i} news", "en", site, corpus)


@pytest.fixture(scope="module")
def many():
    """280 pages on 140 sites (two pages each): enough for every family in both splits."""
    return [_page(i, f"site{i // 2}.de") for i in range(280)]


def _by_cluster(records):
    clusters = defaultdict(list)
    for r in records:
        clusters[r["cluster"]].append(r)
    return clusters


def test_feed_is_one_host_with_many_articles_and_their_revisions():
    pool = [_page(i) for i in range(48)]
    out = LabelledSet("feed", "dev")
    build_feed(pool, pool, random.Random(5), out)
    records = out.records
    assert len({r["host"] for r in records}) == 1 and len({r["template"] for r in records}) == 1
    originals = [r for r in records if r["variant"] == "original"]
    assert len(originals) >= 30
    revisions = [r for r in records if r["variant"] != "original"]
    assert {r["variant"] for r in revisions} <= set(REVISIONS) and len({r["variant"] for r in revisions}) >= 4
    assert {r["same_url"] for r in revisions} == {True, False}
    by_url = {r["url"]: r["cluster"] for r in originals}
    for r in revisions:  # a revision is in its article's cluster, and at the article's URL when same_url
        assert r["cluster"] in {o["cluster"] for o in originals}
        assert (by_url.get(r["url"]) == r["cluster"]) == r["same_url"]
    assert all(r["negative"] == "feed_article" for r in records)
    appended = [r for r in records if r["variant"] == "correction"]
    assert all("Correction: an earlier version" in r["content"] for r in appended)


def test_site_has_many_pages_per_host_with_short_pages_and_edits():
    pool = [_page(i) for i in range(180)]
    out = LabelledSet("site", "dev")
    build_site(pool, pool, random.Random(7), out)
    hosts = defaultdict(list)
    for r in out.records:
        hosts[r["host"]].append(r)
    assert len(hosts) == 5
    for pages in hosts.values():
        kinds = Counter(r["variant"] for r in pages)
        assert kinds["original"] >= 15 and kinds["short_page"] >= 12 and len(pages) >= 27
        assert len({r["template"] for r in pages}) == 1
    clusters = _by_cluster(out.records)
    shorts = [r for r in out.records if r["variant"] == "short_page"]
    assert all(len(clusters[r["cluster"]]) == 1 and r["negative"] == "short_page" for r in shorts)
    for r in shorts:  # 10-60 words of body: the text between the heading and the rest of the template
        body = r["content"].split("</h1><p>", 1)[1].split("</p>", 1)[0]
        assert 10 <= len(body.split()) <= 60
    edits = [r for r in out.records if r["variant"] in EDITS]
    assert edits and all(len(clusters[r["cluster"]]) == 2 for r in edits)
    assert {r["variant"] for r in edits} == set(EDITS)


def test_cold_hosts_are_seen_two_or_three_times_each_with_one_kind():
    pool = [_page(i) for i in range(200)]
    out = LabelledSet("cold", "dev")
    build_cold(pool, pool, random.Random(3), out, hosts=40)
    hosts = defaultdict(list)
    for r in sorted(out.records, key=lambda r: r["fetched_at"]):
        hosts[r["host"]].append(r)
    assert len(hosts) == 40
    kinds = Counter()
    for pages in hosts.values():
        assert 2 <= len(pages) <= 3
        negatives = {r["negative"] for r in pages}
        if negatives == {"cold_short"}:  # three different briefs
            kinds["briefs"] += 1
            assert len(pages) == 3 and len({r["cluster"] for r in pages}) == 3
        elif negatives == {"cold_article"}:  # two different stories
            kinds["articles"] += 1
            assert len({r["cluster"] for r in pages}) == 2
        else:  # a story first, then its revision (and maybe its print page): one cluster
            kinds["revision"] += 1
            assert pages[0]["variant"] == "original" and len({r["cluster"] for r in pages}) == 1
            assert {r["variant"] for r in pages[1:]} <= {f"cold_{k}" for k in REVISIONS} | {"cold_print"}
    assert kinds == {"briefs": 10, "articles": 10, "revision": 20}
    assert len({r["source_page"] for r in out.records if r["variant"] in ("original", "cold_short", "cold_article")}) \
        == sum(r["variant"] in ("original", "cold_short", "cold_article") for r in out.records)  # each source once


def test_a_cold_revisions_appended_paragraph_is_a_paragraph_not_a_heading():
    """The paragraph a cold revision appends is another story's first of 20 words or more: its
    first line at any length was a heading ("Highlights"), labelled as new content that no
    extraction keeps as a paragraph."""
    from streamdedup.evaluate.sets import text_unit

    def headed(i):
        page = _page(i)
        return dataclasses.replace(page, paragraphs=("Highlights", *page.paragraphs))

    pool = [headed(i) for i in range(200)]
    out = LabelledSet("cold", "dev")
    build_cold(pool, pool, random.Random(3), out, hosts=40)
    originals = {r["cluster"]: r for r in out.records if r["variant"] == "original"}
    appended = [r for r in out.records if r["variant"] == "cold_paragraph_appended"]
    assert appended
    for r in appended:  # one unit more than its original: a new paragraph, not a heading it holds
        assert r["units"][:-1] == originals[r["cluster"]]["units"] and r["units"][-1] != text_unit("Highlights")


def test_a_storys_later_fetches_differ_by_a_paragraph_of_the_story_itself():
    """The first fetch lacks one of the story's paragraphs; a later one adds it (or puts it in the
    place of another): new text of the story's own, its own cluster; or it drops another paragraph
    or changes a few words: the story's cluster, holding no unit the first lacks."""
    pool = [_page(i) for i in range(60)]
    out = LabelledSet("story", "dev")
    build_story(pool, pool, random.Random(4), out, stories=20)
    firsts = {r["source_page"]: r for r in out.records if r["variant"] == "story_first"}
    later = [r for r in out.records if r["variant"] != "story_first"]
    assert len(firsts) == 20 and {r["variant"] for r in later} == {*NEW_TEXT, *NO_NEW_TEXT}
    assert len({r["host"] for r in firsts.values()}) == 20
    for r in later:
        first = firsts[r["source_page"]]
        assert r["host"] == first["host"] and r["fetched_at" if "fetched_at" in r else "arrived_at"] > \
            first["fetched_at" if "fetched_at" in first else "arrived_at"]
        added = set(r["units"]) - set(first["units"])
        if r["variant"] in NEW_TEXT:  # one paragraph of the story the first fetch lacks
            assert len(added) == 1 and r["cluster"] != first["cluster"] and r["negative"] == r["variant"]
            assert added.pop().startswith(r["source_page"] + ":")
        else:
            assert not added and r["cluster"] == first["cluster"]
    undated = [r for r in out.records if "label_id" in r]
    assert undated and len(undated) < len(out.records)  # both undated re-fetches and dated ones


@pytest.mark.parametrize("family", ["web", "feed", "site"])
def test_splits_share_no_article_template_or_site_and_the_seed_fixes_the_set(many, family):
    distinct = distinct_articles(many)
    sites = {p.name: p.site_key for p in many}
    dev = build_family(many, 3, "dev", family, distinct)
    test = build_family(many, 3, "test", family, distinct)
    assert dev and test
    assert {r["split"] for r in dev} == {"dev"} and {r["split"] for r in test} == {"test"}

    def used(records):
        names = {r["source_page"] for r in records} | {r["template"] for r in records if r["template"]}
        return names, {sites[n] for n in names}

    (dev_pages, dev_sites), (test_pages, test_sites) = used(dev), used(test)
    assert not dev_pages & test_pages and not dev_sites & test_sites
    assert all(split_of(p) == "dev" for p in many if p.name in dev_pages)
    assert build_family(many, 3, "dev", family, distinct) == dev
    assert build_family(many, 4, "dev", family, distinct) != dev
    assert [r["fetched_at"] for r in dev] == sorted(r["fetched_at"] for r in dev)
    assert all({"variant", "negative", "host", "split", "family", "cluster"} <= set(r) for r in dev)


@pytest.mark.parametrize("family", ["web", "feed", "site", "cold"])
def test_both_splits_in_one_set_keep_their_clusters_apart(many, family):
    """`--split all` builds each split from its own pages: no gold cluster spans the two (the cold
    family named its briefs' clusters by their number alone, so dev's first brief and test's first
    brief were one cluster: pairs of unrelated pages counted as missed duplicates)."""
    records = build_family(many, 3, "all", family, distinct_articles(many))
    assert {r["split"] for r in records} == {"dev", "test"}
    assert all(len({r["split"] for r in pages}) == 1 for pages in _by_cluster(records).values())


def test_families_draw_on_disjoint_pages_so_they_merge(many):
    distinct = distinct_articles(many)
    used = {family: {r["source_page"] for r in build_family(many, 3, "dev", family, distinct)}
            for family in ("web", "feed", "site")}
    assert not used["web"] & used["feed"] and not used["web"] & used["site"] and not used["feed"] & used["site"]


def test_a_template_that_keeps_a_second_article_is_not_used():
    paragraphs = make_article(7)
    crowded = wrap_in_template(paragraphs, "Crowded").replace("</main>", "<div>" + " word" * 1200 + "</div></main>")
    assert usable_template(SourcePage("ok", wrap_in_template(paragraphs, "Fine"), tuple(paragraphs), "T", "en"))
    assert not usable_template(SourcePage("crowded", crowded, tuple(paragraphs), "T", "en"))


def _tarball(path, files):
    with tarfile.open(path, "w:gz") as tar:
        for name, content in files.items():
            data = content.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_trafilatura_pages_are_located_by_their_snippets(tmp_path):
    story = make_article(9, paragraphs=5)
    html = wrap_in_template(story, "Zeta").replace("<h1>", "<p>By our reporter, 3 May</p><h1>")
    html = html.replace("</article>", "<p>Share this story with your friends now</p></article>")
    expected = {"a.html": {"url": "https://www.zeta.de/x", "with": [story[0][:40], story[-1][-40:]],
                           "without": ["Share this story"]}}
    archive = _tarball(tmp_path / "t.tar.gz", {"pages/a.html": html, "expected.json": json.dumps(expected)})
    [page] = load_pages([archive])
    assert page.paragraphs == tuple(story) and page.site == "zeta.de" and page.corpus == "trafilatura"


def test_newspaper4k_pages_come_with_their_text_site_and_language(tmp_path):
    """newspaper4k's source distribution: the page, the article's text a line a paragraph, and its
    metadata (URL, language); a page without metadata is its own site, a page without text is left out."""
    story = make_article(11, paragraphs=4)
    files = {"newspaper4k-0.9.6/newspaper/__init__.py": "",
             "newspaper4k-0.9.6/tests/data/html/a.html": wrap_in_template(story, "Alpha"),
             "newspaper4k-0.9.6/tests/data/txt/a.txt": "\n\n".join(story),
             "newspaper4k-0.9.6/tests/data/metadata/a.json": json.dumps({"url": "https://www.alpha.com/x/1",
                                                                         "language": "en", "title": "A story"}),
             "newspaper4k-0.9.6/tests/data/html/b.html": "<html><body><p>东京的新闻</p></body></html>",
             "newspaper4k-0.9.6/tests/data/txt/b.txt": "东京的新闻。" * 20,
             "newspaper4k-0.9.6/tests/data/html/listing.html": "<html><body>no text file</body></html>"}
    archive = _tarball(tmp_path / "newspaper4k-0.9.6.tar.gz", files)
    a, b = load_pages([archive])
    assert (a.name, a.paragraphs, a.site, a.lang, a.title, a.dense) == ("np:a", tuple(story), "alpha.com", "en",
                                                                        "A story", False)
    assert (b.site, b.corpus, b.dense) == ("b", "newspaper4k", True)


def test_devset_command_writes_the_chosen_families(tmp_path, capsys):
    files = {"expected.json": "{}"}
    notes = {}
    for i in range(40):
        story = make_article(200 + i)
        files[f"pages/p{i}.html"] = wrap_in_template(story, f"S{i}")
        notes[f"p{i}.html"] = {"url": f"https://s{i}.de/a", "with": [story[0][:30], story[-1][-30:]], "without": []}
    files["expected.json"] = json.dumps(notes)
    archive = _tarball(tmp_path / "t.tar.gz", files)
    out = tmp_path / "set.jsonl"
    assert main(["--pages", str(archive), "--family", "web,site", "--split", "dev", "--out", str(out)]) == 0
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert records and {r["family"] for r in records} <= {"web", "site"} and {r["split"] for r in records} == {"dev"}
    assert json.loads(capsys.readouterr().out)["pages"] == len(records)
    with pytest.raises(SystemExit):
        main(["--pages", str(archive), "--family", "blog", "--out", str(out)])


def test_a_family_that_draws_no_page_says_what_it_needs(tmp_path, capsys):
    """readability's pages feed only the web family: asked for feed too, the set is written with a
    line saying why feed is missing; asked for feed alone, nothing is written (it was an empty file)."""
    files = {}
    for i in range(12):
        story = make_article(300 + i)
        files[f"test-pages/site{i}/source.html"] = wrap_in_template(story, f"S{i}")
        files[f"test-pages/site{i}/expected.html"] = "<div>" + "".join(f"<p>{p}</p>" for p in story) + "</div>"
    archive = _tarball(tmp_path / "readability-test-pages.tar.gz", files)
    out = tmp_path / "set.jsonl"
    assert main(["--pages", str(archive), "--family", "web,feed", "--split", "all", "--out", str(out)]) == 0
    assert out.read_text() and "family feed drew no pages" in capsys.readouterr().err
    out.unlink()
    with pytest.raises(SystemExit):
        main(["--pages", str(archive), "--family", "feed", "--split", "all", "--out", str(out)])
    err = capsys.readouterr().err
    assert "add trafilatura-test-pages.tar.gz" in err and "the set would be empty" in err and not out.exists()
