"""One engine: the same pages through file mode and through the global topology on a real broker
give the same verdicts, field by field (issue 12). Pages arrive in fetch order on one partition,
so the global order is file mode's order and no answer can be late."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

import orjson
import pytest
from conftest import make_article, page, wrap_in_template
from test_template_model import site_feed

from runtime.conftest import read_topic
from runtime.scaleout.test_topologies import TANSU_GROUPS, run_workers, syndicated_crawl
from runtime.test_worker import send
from streamdedup.clean.article_block import inside_marks
from streamdedup.clusters import read_topic_stories
from streamdedup.config import DetectorConfig
from streamdedup.fingerprinter import Fingerprinted, Fingerprinter, Outcome
from streamdedup.fingerprints.wordpairs import WordPairsMethod, with_inside
from streamdedup.outputs.files import FileSink
from streamdedup.outputs.kafka import cluster_events
from streamdedup.record.page import site_of
from streamdedup.record.readers import RawRecord
from streamdedup.runtime.scaleout.index_stage import IndexPartition, supplements_of
from streamdedup.runtime.scaleout.messages import IndexRequest
from streamdedup.runtime.scaleout.routing import page_order
from streamdedup.runtime.settings import WorkerSettings
from streamdedup.runtime.topologies.scaleout import index_requests
from streamdedup.store.signature_store import method_tags
from streamdedup.testing import run_records
from streamdedup.verdict.relations import DUPLICATE, SUPERSEDES

# a digest: two stories of two sites, whole on a page of a third (`bridged_clusters`)
DIGEST_URL = "https://dsite.example/digest"


def bridged_clusters() -> list[dict]:
    """A bridge and a digest. R and A are an article's two parts on one site (`?page=1`, `?page=2`),
    each the first page of its cluster; B is R with a line added on another site (R's duplicate); C
    is the article whole at the site's own url (its view-all page): it supersedes R, B and A, so it
    is kept and bridges R's cluster and A's: in R's cluster (the oldest), merging A's. U and V are
    stories of two sites; D, on a third, holds both whole (a digest): it supersedes them and bridges
    neither (unique, in a cluster of its own)."""
    x, y, u, v = (make_article(seed, paragraphs=6) for seed in (501, 502, 503, 504))
    pages = [("https://rsite.example/story?page=1", x), ("https://rsite.example/story?page=2", y),
             ("https://bsite.example/story", [*x, "Updated with a line."]), ("https://rsite.example/story", x + y),
             ("https://usite.example/story", u), ("https://vsite.example/story", v), (DIGEST_URL, u + v)]
    return [page(url, wrap_in_template(body, site_of(url)), f"2024-03-09T0{i}:00:00Z")
            for i, (url, body) in enumerate(pages)]


def file_mode_stories(outcomes: Iterable[Outcome], out: Path) -> list[dict]:
    """The stories file mode writes for `outcomes` (its clusters.jsonl in `out`), read back."""
    sink = FileSink(out)
    for outcome in outcomes:
        sink.write(outcome)
    sink.write_clusters()
    sink.close()
    return [orjson.loads(line) for line in (out / "clusters.jsonl").read_bytes().splitlines()]


def worker_verdicts(settings: WorkerSettings) -> dict[str, dict]:
    """The `dedup` objects the workers emitted on the unique and duplicates topics, by page id (each page once)."""
    worker: dict[str, dict] = {}
    for topic in (settings.topics.unique, settings.topics.duplicates):
        for message in read_topic(settings, topic):
            dedup = orjson.loads(message.value())["dedup"]
            assert dedup["id"] not in worker, f"page {dedup['id']} emitted twice"
            worker[dedup["id"]] = dedup
    return worker


def test_file_mode_and_the_global_topology_give_the_same_verdicts_field_by_field(settings, tmp_path):
    # with a site whose template is learned on the way (and a page that is only template)
    crawl = [r for r in syndicated_crawl(16) if isinstance(r, dict)] + bridged_clusters() + site_feed()
    records = sorted(crawl, key=lambda r: r["fetched_at"])
    outcomes = run_records(records, tmp_path / "file-mode")
    file_mode = {o.dedup["id"]: o.dedup for o in outcomes if o.status != "rejected"}
    assert [o.dedup["reason"] for o in outcomes if o.status == "rejected"] == ["template_only"]
    assert sum(d["status"] == "duplicate" for d in file_mode.values()) >= len(records) // 2  # a test with matches
    assert any(d.get("merged_clusters") for d in file_mode.values())  # and with a bridge
    [digest] = [o.dedup for o in outcomes if o.record.get("url") == DIGEST_URL]  # and a digest, bridging none
    assert digest["cluster_id"] == digest["id"] and len(digest["supersedes"]) == 2 and "merged_clusters" not in digest

    send(settings, records)
    run_workers(settings, ["w1"], len(records))
    rejected = [dict(m.headers())["dedup.reason"].decode()
                for m in read_topic(settings, settings.topics.rejected)]
    assert rejected == ["template_only"]
    t = settings.topics
    worker = worker_verdicts(settings)
    events = [orjson.loads(m.value()) for m in read_topic(settings, t.clusters)]
    assert not [e for e in events if e["type"] == "late_match"], "one partition in fetch order: nothing is late"
    assert worker.keys() == file_mode.keys()
    for page_id, expected in file_mode.items():
        assert worker[page_id] == expected, page_id
    # the news-feed view (issue 58): file mode's clusters.jsonl is what the reader folds from the
    # worker's cluster view, the bridge's merge included; every page once, with its url
    stories = file_mode_stories(outcomes, tmp_path / "out")
    [bridged] = [s for s in stories if "https://rsite.example/story" in {p["url"] for p in s["pages"]}]
    assert {p["url"] for p in bridged["pages"]} == {"https://rsite.example/story?page=1", "https://bsite.example/story",
                                                    "https://rsite.example/story?page=2", "https://rsite.example/story"}
    assert [[p["url"] for p in s["pages"]] for s in stories if DIGEST_URL in {p["url"] for p in s["pages"]}] == [
        [DIGEST_URL]]
    assert read_topic_stories(settings.bootstrap_servers, t.cluster_view).stories() == stories
    view = read_topic(settings, t.cluster_view)
    assert sorted(m.key().decode() for m in view) == sorted(file_mode)
    assert all(orjson.loads(m.value())["url"] for m in view)


def merged_events(events) -> set[tuple]:
    return {(e["page_id"], e["cluster_id"], tuple(e["merged"])) for e in events if e["type"] == "merged"}


@pytest.mark.parametrize("names", [("w1",), ("w1", "w2", "w3")], ids=["1-worker", "3-workers"])
def test_six_partitions_give_file_modes_clusters_and_merges_field_by_field(broker, settings, tmp_path, names):
    """Copies of each story on several sites (other input partitions) and a bridge, on 6 partitions:
    a page's cluster is the oldest of its earlier matches' clusters as their gather gave them, so
    status, duplicate_of, cluster_id, merged_clusters and the `merged` events are file mode's.
    Before: each index partition named a page's cluster from its own matches only, and 1 worker
    emitted 7 `merged` events where file mode emits 1, 7 pages' merged_clusters wrong (3 workers:
    14 events, 13 pages)."""
    if broker.kind == "tansu" and len(names) > 1:
        pytest.skip(TANSU_GROUPS)
    records = sorted([r for r in syndicated_crawl(10) if isinstance(r, dict)] + bridged_clusters(),
                     key=lambda r: r["fetched_at"])
    outcomes = run_records(records, tmp_path / "file-mode")
    file_mode = {o.dedup["id"]: o.dedup for o in outcomes}
    run = replace(settings, partitions=6, verdict_wait_s=60.0)  # nothing released by the wait here
    send(run, records)
    run_workers(run, names, len(records))
    t = run.topics
    worker = worker_verdicts(run)
    events = [orjson.loads(m.value()) for m in read_topic(run, t.clusters)]
    fields = ("status", "duplicate_of", "cluster_id", "merged_clusters")
    differ = {page_id: [(f, d.get(f), worker.get(page_id, {}).get(f)) for f in fields
                        if d.get(f) != worker.get(page_id, {}).get(f)] for page_id, d in file_mode.items()}
    assert {page_id: d for page_id, d in differ.items() if d} == {}
    expected = merged_events(e for d in file_mode.values() for e in cluster_events(d))
    assert len(expected) == 1 and merged_events(events) == expected
    # each event names the page's url, fetch time and input key: no other topic to read
    by_id = {o.dedup["id"]: o.record for o in outcomes}
    assert [(e["url"], e["fetched_at"]) for e in events] == [(by_id[e["page_id"]]["url"],
                                                              by_id[e["page_id"]]["fetched_at"]) for e in events]
    assert all(e["key"] == site_of(e["url"]) for e in events)  # the feed keys messages by site


# a paragraph an editor added after the article (in its block) and a host's newsletter line (in a box of its own)
NOTE = ("Our reporters spent three months in the valley towns, speaking with farmers, teachers and council "
        "officials about the flooding and what the region plans next.")
BLURB = ("Subscribe to our free weekly newsletter for the latest stories from our newsroom, delivered every "
         "Friday morning straight to your inbox, and cancel whenever you like.")


def edge_copies() -> list[dict]:
    """A story, a copy on another site with a 24-word paragraph added after it in the article's block
    (its own text: it supersedes the story), and one with the host's blurb in a box there (a duplicate)."""
    story = make_article(61, paragraphs=14)
    return [page("https://a.example/story", wrap_in_template(story, "a.example"), "2024-03-09T01:00:00Z", id="story"),
            page("https://h.example/story", wrap_in_template([*story, NOTE], "h.example"), "2024-03-09T02:00:00Z",
                 id="added"),
            page("https://e.example/story", wrap_in_template(story, "e.example", boxes=(BLURB,)),
                 "2024-03-09T03:00:00Z", id="boxed")]


def test_an_edge_paragraph_in_the_article_block_is_new_text_in_the_global_topology_too(settings, tmp_path):
    """The article-block marks travel in the page's encoded word-pairs signature, so the global
    topology's index step, which judges a page from it, counts the added paragraph as file mode
    does (issue 57). Before: file mode's `added` superseded the story, the worker's was its duplicate."""
    records = edge_copies()
    file_mode = {o.dedup["id"]: o.dedup for o in run_records(records, tmp_path / "file-mode")}
    assert file_mode["added"]["status"] == "unique" and "story" in file_mode["added"]["supersedes"]
    assert file_mode["boxed"]["status"] == "duplicate" and file_mode["boxed"]["duplicate_of"] == "story"
    send(settings, records)
    run_workers(settings, ["w1"], len(records))
    assert worker_verdicts(settings) == file_mode


TITLE = "Flooding in the valley towns"
LEAD = ("Three months after the water rose, the valley towns are still counting the cost, and the council has "
        "promised a full account of what went wrong before the winter.")


def test_a_standfirst_outside_the_article_block_is_new_text_in_the_global_topology_too(settings, tmp_path):
    """A copy on another site lacking the article's standfirst comes first; the article's standfirst
    sits in a box of its own between its title and its text, outside the article's block. Its
    lead's mark (`article_block._leads`) travels in the signature as the block's marks do: the
    article supersedes the copy in file mode and in the index step alike (before: its duplicate)."""
    story = make_article(91, paragraphs=8)
    records = [page("https://b.example/copy", wrap_in_template(story, "b.example", title=TITLE),
                    "2024-03-09T01:00:00Z", id="copy"),
               page("https://a.example/story", wrap_in_template(story, "a.example", title=TITLE, lead=LEAD),
                    "2024-03-09T02:00:00Z", id="article")]
    file_mode = {o.dedup["id"]: o.dedup for o in run_records(records, tmp_path / "file-mode")}
    assert file_mode["article"]["status"] == "unique" and file_mode["article"]["supersedes"] == ["copy"]
    send(settings, records)
    run_workers(settings, ["w1"], len(records))
    assert worker_verdicts(settings) == file_mode


def test_a_lead_starting_as_the_title_is_new_text_in_the_global_topology_too(settings, tmp_path):
    """An attacker's copy lacking the article's lead comes first, on its own site; the article is
    titled with its lead's opening words, its text in a block of its own. The lead is located in its
    paragraph, not by the title's run of text (rules version 24), and its mark travels in the
    signature: the article supersedes the copy in file mode and in the index step alike (before:
    its duplicate in both; docs/limitations.md, Hostile pages)."""
    story = make_article(93, paragraphs=12)
    lead = " ".join(make_article(94, paragraphs=1)[0].split()[:34])  # new share 0.04: only its paragraph tells
    bare = "".join(f"<p>{p}</p>" for p in story)
    records = [page("https://evil.example/copy", f"<html><body><h1>{lead[:60]}</h1><article>{bare}</article></body></html>",
                    "2024-03-09T01:00:00Z", id="copy"),
               page("https://a.example/story", wrap_in_template([lead, *story], "a.example", title=lead[:60],
                                                                boxes=(BLURB,)), "2024-03-09T02:00:00Z", id="article")]
    file_mode = {o.dedup["id"]: o.dedup for o in run_records(records, tmp_path / "file-mode")}
    assert file_mode["article"]["status"] == "unique" and file_mode["article"]["supersedes"] == ["copy"]
    send(settings, records)
    run_workers(settings, ["w1"], len(records))
    assert worker_verdicts(settings) == file_mode


LINE = "The council will publish the full list of the affected streets on its website next week."


def test_an_article_after_an_edit_that_dropped_its_line_is_kept_in_the_global_topology_too(settings, tmp_path):
    """A light edit that dropped a 16-word line of the article (a word changed too) comes first, on
    another site; the article after it holds the line inside the copy, where the edit has nothing
    in its place: it is kept and supersedes the edit, in file mode and in the index step, which
    judges it from the same sketches (`line_places.inserted_line`; before: the edit's duplicate)."""
    story = make_article(71, paragraphs=9)
    edit = [*story[:2], story[2].replace(" ", " also ", 1), *story[3:]]
    records = [page("https://a.example/edit", wrap_in_template(edit, "a.example"), "2024-03-09T01:00:00Z", id="edit"),
               page("https://b.example/story", wrap_in_template([*story[:4], LINE, *story[4:]], "b.example"),
                    "2024-03-09T02:00:00Z", id="article")]
    file_mode = {o.dedup["id"]: o.dedup for o in run_records(records, tmp_path / "file-mode")}
    assert file_mode["article"]["status"] == "unique" and file_mode["article"]["supersedes"] == ["edit"]
    send(settings, records)
    run_workers(settings, ["w1"], len(records))
    t = settings.topics
    worker = {}
    for topic in (t.unique, t.duplicates):
        for message in read_topic(settings, topic):
            dedup = orjson.loads(message.value())["dedup"]
            worker[dedup["id"]] = dedup
    assert worker == file_mode


def test_a_list_added_inside_a_copy_is_new_text_in_the_global_topology_too(settings, tmp_path):
    """An article of ~780 words, then a copy on another site with a list of 8 lines of 7 words added
    inside: the sketch's block (`WordPairsParams.line_blocks`) travels in the encoded signature, told
    by its numbers byte, so the index step keeps the copy, superseding the article, as file mode
    does (`line_places.inserted_block`; before: the article's duplicate, new share 0.053)."""
    story = make_article(81, paragraphs=10)
    items = [" ".join(p.split()[k:k + 7]) for p in make_article(82, paragraphs=2) for k in (0, 7, 14, 21)]
    records = [page("https://a.example/story", wrap_in_template(story, "a.example"), "2024-03-09T01:00:00Z",
                    id="story"),
               page("https://b.example/listed", wrap_in_template([*story[:5], *items, *story[5:]], "b.example"),
                    "2024-03-09T02:00:00Z", id="listed")]
    file_mode = {o.dedup["id"]: o.dedup for o in run_records(records, tmp_path / "file-mode")}
    assert file_mode["listed"]["status"] == "unique" and file_mode["listed"]["supersedes"] == ["story"]
    send(settings, records)
    run_workers(settings, ["w1"], len(records))
    assert worker_verdicts(settings) == file_mode


def test_a_copy_filed_before_its_story_is_judged_with_its_stored_marks(tmp_path):
    """The copy with the added paragraph reaches an index partition before the story (a burst over
    several input partitions): the story's answer judges the copy as the later page from the copy's
    stored record (`IndexPartition._judged_as_the_later`), which keeps its marks: the copy supersedes
    the story, as in file mode and as when it comes last."""
    detector = Fingerprinter(DetectorConfig())
    tags = method_tags([m.name for m in detector.methods])
    pairs = next(m for m in detector.methods if isinstance(m, WordPairsMethod))

    def asked(record: dict, at: int) -> IndexRequest:
        item = detector.prepare(RawRecord("t", data=orjson.dumps(record)))
        assert isinstance(item, Fingerprinted)
        signature = item.signatures[pairs.name]
        marked = with_inside(signature, inside_marks(item.page, item.text, signature.line_hashes))
        item = item.replaced(signatures={**item.signatures, pairs.name: marked})
        doc, keys = index_requests(item, detector.methods, tags, 0, 1)
        return IndexRequest(page_order(at, at, 0, 0), replace(doc, page_id=record["id"]), keys[0])

    story, added, boxed = (asked(record, at) for at, record in enumerate(edge_copies(), start=1))
    policy = DetectorConfig().site_policies()
    in_order = IndexPartition(tmp_path / "in-order", detector.methods, policy, detector.store_config, partition=0)
    in_order.answer(story)
    relations = {r.doc.page_id: {m.page_id: m.relation for m in in_order.answer(r).earlier} for r in (added, boxed)}
    assert relations["added"] == {"story": SUPERSEDES} and relations["boxed"]["story"] == DUPLICATE
    in_order.close()
    reverse = IndexPartition(tmp_path / "reverse", detector.methods, policy, detector.store_config, partition=0)
    assert reverse.answer(added).earlier == ()
    assert [m.page_id for m in reverse.answer(boxed).earlier] == ["added"]  # later than it: its earlier match
    told = {s.page_id: s.match.relation for s in supplements_of(reverse.answer(story))}
    assert told == {"added": SUPERSEDES, "boxed": DUPLICATE}
    reverse.close()


def test_a_line_of_another_storys_page_of_the_host_is_judged_alike_in_the_global_topology(settings, tmp_path):
    """A host's second page copies an article with the teaser its first page (another story) showed
    inside it: file mode names it the article's duplicate (`fingerprints.one_page_lines`), and so does
    the global topology, which gets the page's lines of that page beside its signatures
    (`IndexRequest.one_page`). Before they were carried, it judged the teaser new text."""
    teaser = ("Read more: the harbour council votes next week on the new ferry timetable, after months of "
              "complaints from island residents about cancelled crossings and missed connections.")
    ferry, article = make_article(31, paragraphs=6), make_article(32, paragraphs=6)
    pages = [("https://harbour.example/ferry", [*ferry[:3], teaser, *ferry[3:]]),
             ("https://wire.example/article", article),
             ("https://harbour.example/copy", [*article[:3], teaser, *article[3:]])]
    records = [page(url, wrap_in_template(body, site_of(url)), f"2024-03-09T0{i}:00:00Z")
               for i, (url, body) in enumerate(pages)]
    outcomes = run_records(records, tmp_path / "file-mode")
    file_mode = {o.dedup["id"]: o.dedup for o in outcomes}
    _, original, copy = (o.dedup for o in outcomes)
    assert copy["status"] == "duplicate" and copy["duplicate_of"] == original["id"], copy
    send(settings, records)
    run_workers(settings, ["w1"], len(records))
    assert worker_verdicts(settings) == file_mode
