"""One engine: the same pages through file mode and through the global topology on a real broker
give the same verdicts, field by field (issue 12). Pages arrive in fetch order on one partition,
so the global order is file mode's order and no answer can be late."""

from __future__ import annotations

import orjson
from conftest import make_article, page, wrap_in_template
from test_template_model import site_feed

from runtime.conftest import read_topic
from runtime.scaleout.test_topologies import run_workers, syndicated_crawl
from runtime.test_worker import send
from streamdedup.clusters import read_topic_stories
from streamdedup.outputs.files import FileSink
from streamdedup.testing import run_records


def bridged_clusters() -> list[dict]:
    """R and A are two stories; B is R with A's start appended (a duplicate of R); C is A with the
    end of R prepended: it matches A and B but not R, so it bridges R's cluster and A's. Its
    verdict: a duplicate of A (the earliest match), in R's cluster (the oldest), merging A's."""
    x, y = make_article(501, paragraphs=6), make_article(502, paragraphs=6)
    bodies = {"r": x, "a": y, "b": x + y[:3], "c": x[2:] + y}
    return [page(f"https://{name}site.example/story", wrap_in_template(body, name.upper()), f"2024-03-09T0{i}:00:00Z")
            for i, (name, body) in enumerate(bodies.items())]


def test_file_mode_and_the_global_topology_give_the_same_verdicts_field_by_field(settings, tmp_path):
    # with a site whose template is learned on the way (and a page that is only template)
    crawl = [r for r in syndicated_crawl(16) if isinstance(r, dict)] + bridged_clusters() + site_feed()
    records = sorted(crawl, key=lambda r: r["fetched_at"])
    outcomes = run_records(records, tmp_path / "file-mode")
    file_mode = {o.dedup["id"]: o.dedup for o in outcomes if o.status != "rejected"}
    assert [o.dedup["reason"] for o in outcomes if o.status == "rejected"] == ["template_only"]
    assert sum(d["status"] == "duplicate" for d in file_mode.values()) >= len(records) // 2  # a test with matches
    assert any(d.get("merged_clusters") for d in file_mode.values())  # and with a bridge

    send(settings, records)
    run_workers(settings, ["w1"], len(records))
    rejected = [dict(m.headers())["dedup.reason"].decode()
                for m in read_topic(settings, settings.topics.rejected, to_end=True)]
    assert rejected == ["template_only"]
    t = settings.topics
    worker = {}
    for topic in (t.unique, t.duplicates):
        for message in read_topic(settings, topic, quiet_s=1, to_end=True):
            dedup = orjson.loads(message.value())["dedup"]
            assert dedup["id"] not in worker
            worker[dedup["id"]] = dedup
    events = [orjson.loads(m.value()) for m in read_topic(settings, t.clusters, quiet_s=1, to_end=True)]
    assert not [e for e in events if e["type"] == "late_match"], "one partition in fetch order: nothing is late"
    assert worker.keys() == file_mode.keys()
    for page_id, expected in file_mode.items():
        assert worker[page_id] == expected, page_id
    # the news-feed view (issue 58): file mode's clusters.jsonl is what the reader folds from the
    # worker's cluster view, the bridge's merge included; every page once, with its url
    sink = FileSink(tmp_path / "out")
    for outcome in outcomes:
        sink.write(outcome)
    sink.write_clusters()
    sink.close()
    stories = [orjson.loads(line) for line in (tmp_path / "out" / "clusters.jsonl").read_bytes().splitlines()]
    [bridged] = [s for s in stories if "https://rsite.example/story" in {p["url"] for p in s["pages"]}]
    assert {f"https://{n}site.example/story" for n in "rabc"} <= {p["url"] for p in bridged["pages"]}
    assert read_topic_stories(settings.bootstrap_servers, t.cluster_view).stories() == stories
    view = read_topic(settings, t.cluster_view, to_end=True)
    assert sorted(m.key().decode() for m in view) == sorted(file_mode)
    assert all(orjson.loads(m.value())["url"] for m in view)
