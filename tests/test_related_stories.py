"""Related stories for a news feed: a page kept as unique that shares much of earlier pages but adds
its own text names them in `related_to`; `Stories` keeps it per page and gives each story the
stories it is related to (`related`, `related_of`), resolved through merges, in any event order;
file mode's clusters.jsonl, `Deduplicator.stories()` and the fold of either Kafka topic agree.

Before: the view event carried `related_to`, but the fold dropped it (and the `pages.clusters`
topic dropped it on `joined` events), so a feed could not group follow-ups."""

from __future__ import annotations

import random

import orjson
from conftest import make_article, wrap_in_template

from streamdedup.cli import main
from streamdedup.clusters import Stories, page_fields, table, view_event


def follow_up_stream() -> list[dict]:
    """Eight news pages in fetch order, whose verdicts (checked below) relate stories.

    r: article X; r2: its copy (duplicate); a: article Y; f: a follow-up reusing Y's first 7 of 10
    paragraphs, then 4 of its own (unique, related to a); f2: f's copy; w: article V; p: V whole
    and Y's first 7 (joins w's story, supersedes w, related to a and f); c: X and Y whole on a site
    of its own (a digest: supersedes r, r2 and a, bridges neither story, a story of its own, related
    to f and f2); lone: unrelated."""
    x, y, z, v = (make_article(seed, paragraphs=10) for seed in (61, 62, 63, 64))
    bodies = [("r", x, "R"), ("r2", x, "S"), ("a", y, "A"), ("f", y[:7] + z[:4], "F"), ("f2", y[:7] + z[:4], "G"),
              ("w", v, "W"), ("p", v + y[:7], "P"), ("c", x + y, "C"), ("lone", make_article(65, paragraphs=10), "L")]
    return [{"id": i, "url": f"https://{site.lower()}.example/{i}", "fetched_at": f"2024-03-09T{n:02d}:00:00Z",
             "html": wrap_in_template(body, site)} for n, (i, body, site) in enumerate(bodies)]


# what the stream's stories are: name -> (pages, related stories)
EXPECTED = {"r": (["r", "r2"], []), "a": (["a"], ["f", "w"]), "c": (["c"], ["f"]), "f": (["f", "f2"], ["a", "c", "w"]),
            "w": (["w", "p"], ["a", "f"]), "lone": (["lone"], [])}


def shape(stories: list[dict]) -> dict[str, tuple[list[str], list[str]]]:
    return {s["cluster_id"]: ([p["id"] for p in s["pages"]], s["related"]) for s in stories}


def event(kind: str, page: str, cluster: str, day: int, **more: object) -> dict:
    return {"type": kind, "page_id": page, "cluster_id": cluster, "url": f"https://{page}.example/",
            "fetch_time": f"2024-03-{day:02d}T00:00:00Z", "status": "unique", **more}


def test_related_stories_are_resolved_through_merges_both_ways_in_any_order():
    events = [event("created", "a", "a", 1), event("created", "b", "b", 2),
              event("created", "f", "f", 3, related_to=["b"]),  # a follow-up of b
              event("joined", "f2", "f", 4, status="duplicate", duplicate_of="f"),
              event("joined", "c", "a", 5, status="duplicate", duplicate_of="a", merged=["b"]),  # b's story is a's
              event("created", "g", "g", 6, related_to=["f2", "c", "gone"]),  # "gone": a page this view never read
              event("created", "h", "h", 7, related_to=["g"]), event("joined", "h2", "h", 8, supersedes=["h"],
                                                                   related_to=["h"])]  # its own story: none
    reference = Stories()
    for item in events:
        reference.apply(item)
    stories = reference.stories()
    assert shape(stories) == {"a": (["a", "b", "c"], ["f", "g"]), "f": (["f", "f2"], ["a", "g"]),
                              "g": (["g"], ["a", "f", "h"]), "h": (["h", "h2"], ["g"])}
    assert [p.get("related_to") for p in stories[2]["pages"]] == [["f2", "c", "gone"]]  # each page keeps its own
    assert "related_to" not in stories[0]["pages"][0]  # where its verdict has none, as clusters.jsonl's pages were
    # by a story's name, any of its pages' ids, or a cluster merged into it; an id it never read: none
    assert reference.related_of("b") == reference.related_of("c") == reference.related_of("a") == ["f", "g"]
    assert reference.related_of("f2") == ["a", "g"] and reference.related_of("nobody") == []
    assert reference.related_of("gone") == []  # named, never read: in no story
    for seed in range(50):
        shuffled = Stories()
        for item in random.Random(seed).sample(events, len(events)):
            shuffled.apply(item)
        assert shuffled.stories() == stories and shuffled.related_of("b") == ["f", "g"]
    assert "a  (3 pages)  related: f, g" in table(stories)


def test_file_mode_the_library_and_both_topics_folds_give_the_same_related_stories(tmp_path):
    """The same stream through file mode (clusters.jsonl), a `Deduplicator` and the fold of its
    events as the worker writes them on the view and on `pages.clusters`, in any order."""
    from streamdedup import Deduplicator
    from streamdedup.outputs.kafka import cluster_events

    records = follow_up_stream()
    crawl = tmp_path / "crawl.jsonl"
    crawl.write_bytes(b"".join(orjson.dumps(r, option=orjson.OPT_APPEND_NEWLINE) for r in records))
    out = tmp_path / "out"
    assert main(["dedup", str(crawl), "--out", str(out), "-q"]) == 0
    clusters = [orjson.loads(line) for line in (out / "clusters.jsonl").read_bytes().splitlines()]
    verdicts = {v["id"]: v["dedup"] for v in map(orjson.loads, (out / "verdicts.jsonl").read_bytes().splitlines())}
    # the engine says what the stream is built for
    assert verdicts["f"]["status"] == "unique" and verdicts["f"]["related_to"] == ["a"]
    assert verdicts["p"]["cluster_id"] == "w" and verdicts["p"]["supersedes"] == ["w"]
    assert verdicts["p"]["related_to"] == ["a", "f", "f2"]
    assert (verdicts["c"]["cluster_id"], verdicts["c"]["supersedes"]) == ("c", ["r", "r2", "a"])
    assert "merged_clusters" not in verdicts["c"]
    assert shape(clusters) == EXPECTED
    pages = {p["id"]: p for s in clusters for p in s["pages"]}
    assert pages["f"]["related_to"] == ["a"] and "related_to" not in pages["f2"]

    with Deduplicator() as dedup:
        dedup.add_many(records)
        stories = dedup.stories()
        assert stories == clusters
        next(s for s in stories if s["cluster_id"] == "f")["pages"][0]["related_to"].append("changed")  # a copy
        assert dedup.stories() == clusters

    by_id = {r["id"]: r for r in records}
    view = [view_event(verdicts[i], *page_fields(by_id[i])) for i in verdicts]
    events = [e for i in verdicts for e in cluster_events(verdicts[i], by_id[i])]
    assert [e["type"] for e in events if e["page_id"] == "p"] == ["joined"]  # kept, in w's story, related too
    assert [e.get("related_to") for e in events if e["page_id"] == "p"] == [["a", "f", "f2"]]
    # the digest starts its story and names what it holds, on both topics
    assert [(e["type"], e.get("supersedes")) for e in events + view if e["page_id"] == "c"] == [
        ("created", ["r", "r2", "a"])] * 2
    for seed in range(10):
        for topic in (view, events):
            folded = Stories()
            for item in random.Random(seed).sample(topic, len(topic)):
                folded.apply(item)
            assert folded.stories() == clusters
            assert folded.related_of("a") == ["f", "w"] and folded.related_of("f2") == ["a", "c", "w"]
