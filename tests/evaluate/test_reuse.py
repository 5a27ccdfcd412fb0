"""The 'reuse' family and the gold content units every family writes, on generated pages."""

import random
from collections import defaultdict

import pytest
from conftest import make_article, wrap_in_template

from streamdedup.evaluate.directional import directional_scores
from streamdedup.evaluate.family_feed import build_feed
from streamdedup.evaluate.family_reuse import Counts, build_reuse
from streamdedup.evaluate.family_web import build_web
from streamdedup.evaluate.pages import SourcePage
from streamdedup.evaluate.sets import LabelledSet, fetch_order


def _page(i, paragraphs=6, sentences=5):
    texts = make_article(3000 + i, paragraphs=paragraphs, sentences=sentences)
    site = f"site{i}.de"
    return SourcePage(f"traf:r{i}.html", wrap_in_template(texts, f"Site{i}", f"Title {i}"), tuple(texts),
                      f"Title {i}", "en", site, "trafilatura")


@pytest.fixture(scope="module")
def reuse():
    """A small crawl: 60 long articles (6 paragraphs) and 30 short ones (4 paragraphs of ~30 words)."""
    pool = [_page(i) for i in range(60)] + [_page(i, 4, 2) for i in range(60, 90)]
    out = LabelledSet("reuse", "dev")
    counts = Counts(paginated=2, followups=2, replaced=2, light_edits=1, undated=3, brief_hosts=1,
                    template_hosts=1, template_articles=(4, 4))
    build_reuse(pool, pool, random.Random(11), out, counts)
    return sorted(out.records, key=fetch_order)


def _kinds(records):
    kinds = defaultdict(list)
    for r in records:
        kinds[r["variant"]].append(r)
    return kinds


def test_each_kind_holds_the_share_of_its_article_it_promises(reuse):
    kinds = _kinds(reuse)
    assert {"part_first", "full_after_part", "full_first", "part_after_full", "followup_same_site",
            "followup_other_site", "paragraphs_replaced", "words_changed_short", "update_line_long",
            "correction_short", "sentence_appended_long", "undated_original", "short_brief",
            "template_article"} <= set(kinds)
    by_cluster = defaultdict(list)
    for r in reuse:
        by_cluster[r["cluster"]].append(r)
    for full in kinds["full_after_part"]:  # the parts came first and each holds 35-65 % of it
        parts = [r for r in by_cluster[full["cluster"]] if r["variant"] == "part_first"]
        assert len(parts) == 2 and all(reuse.index(p) < reuse.index(full) for p in parts)
        assert sorted(u for p in parts for u in p["units"]) == sorted(full["units"])
        assert all(0.35 <= len(p["units"]) / len(full["units"]) <= 0.65 for p in parts)
        assert {p["url"] for p in parts} == {full["url"] + "?page=1", full["url"] + "?page=2"}
    originals = {r["source_page"]: r for r in kinds["original"]}
    for variant in ("followup_same_site", "followup_other_site"):
        for follow in kinds[variant]:
            article = originals[follow["source_page"]]["units"]
            reused = [u for u in follow["units"] if u in article]
            assert reused == article[: len(reused)] and 0.55 <= len(reused) / len(article) <= 0.75
            assert len(follow["units"]) > len(reused) and follow["cluster"] != originals[follow["source_page"]]["cluster"]
            same_host = follow["host"] == originals[follow["source_page"]]["host"]
            assert same_host == (variant == "followup_same_site")
    for replaced in kinds["paragraphs_replaced"]:
        article = originals[replaced["source_page"]]["units"]
        new = [u for u in replaced["units"] if u not in article]
        assert 0.2 <= len(new) / len(article) <= 0.35 and len(replaced["units"]) == len(article)
    for edit in kinds["words_changed_short"] + kinds["update_line_long"] + kinds["sentence_appended_long"]:
        assert edit["units"] == originals[edit["source_page"]]["units"] and edit["host"] == originals[
            edit["source_page"]]["host"]


def test_undated_re_crawls_carry_no_id_and_no_fetch_time_and_share_one_url(reuse):
    undated = [r for r in reuse if r["variant"].startswith("undated_")]
    assert undated and all("id" not in r and "fetched_at" not in r and r["arrived_at"] for r in undated)
    by_url = defaultdict(list)
    for r in undated:
        by_url[r["url"]].append(r["variant"])
    assert all(v[0] == "undated_original" and len(v) >= 2 for v in by_url.values())


def test_perfect_verdicts_from_the_gold_units_score_one_and_merging_parts_loses_content(reuse):
    """A page is a duplicate of the first earlier page holding all its units: every edge safe and
    every redundant page found; a view-all page called a duplicate of its part loses content."""
    perfect, seen = [], []
    for i, r in enumerate(reuse):
        name = r.get("id") or r["label_id"]
        target = next((j for j in seen if set(r["units"]) <= set(reuse[j]["units"])), None)
        perfect.append({"id": name, "status": "unique", "cluster_id": name} if target is None else
                       {"id": name, "status": "duplicate", "duplicate_of": reuse[target].get("id") or
                        reuse[target]["label_id"], "cluster_id": "x"})
        seen.append(i)
    scores = directional_scores(reuse, perfect)["all"]
    assert scores["redundant"] > 10 and scores["edge_recall"] == scores["edge_precision"] == 1.0
    wrong = list(perfect)
    for i, r in enumerate(reuse):
        if r["variant"] == "full_after_part":
            part = next(j for j in range(i) if reuse[j]["cluster"] == r["cluster"])
            wrong[i] = {"id": r["id"], "status": "duplicate", "duplicate_of": reuse[part]["id"], "cluster_id": "x"}
    by_variant = directional_scores(reuse, wrong)["by_variant"]["full_after_part"]
    assert by_variant["content_loss_edges"] == by_variant["pages"] == 2


def test_the_web_family_writes_what_each_copy_holds():
    pool = [_page(i, paragraphs=9) for i in range(40)]
    out = LabelledSet("web", "dev")
    build_web(pool, pool, random.Random(2), out)
    originals = {r["source_page"]: r["units"] for r in out.records if r["variant"] == "original"}
    kinds = _kinds(out.records)
    assert kinds["teaser"] and kinds["light_edit"] and kinds["syndicated"]
    for r in kinds["teaser"]:  # an opening: a proper prefix
        full = originals[r["source_page"]]
        assert r["units"] == full[: len(r["units"])] and len(r["units"]) < len(full)
    for r in kinds["light_edit"]:  # 9 paragraphs: one dropped, the edited ones keep their ids
        assert set(r["units"]) < set(originals[r["source_page"]]) and len(r["units"]) == 8
    assert all(r["units"] == originals[r["source_page"]] for r in kinds["syndicated"] + kinds["recrawl"])
    negatives = [r for r in out.records if r["negative"]]
    assert negatives and all(not set(r["units"]) & {u for us in originals.values() for u in us} for r in negatives)


def test_a_feed_revision_adds_a_unit_only_when_a_paragraph_is_appended():
    pool = [_page(i) for i in range(48)]
    out = LabelledSet("feed", "dev")
    build_feed(pool, pool, random.Random(5), out)
    previous, appended = {}, 0
    for r in sorted(out.records, key=fetch_order):  # each revision builds on the one before
        before = previous.get(r["cluster"])
        if before is not None:
            added = [u for u in r["units"] if u not in before]
            assert set(before) <= set(r["units"]) and len(added) == (r["variant"] == "paragraph_appended"), r["variant"]
            appended += len(added)
        previous[r["cluster"]] = r["units"]
    assert appended and {r["variant"] for r in out.records} >= {"correction", "update_line", "paragraph_appended"}
