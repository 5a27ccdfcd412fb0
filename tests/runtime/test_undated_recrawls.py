"""Re-crawls without a fetch time on Kafka: each fetch of a url is judged (its id made of its
topic, partition, offset and message timestamp), none is a dead letter."""

from __future__ import annotations

import os

import orjson
import pytest
from conftest import make_article

from runtime.conftest import read_topic, run_until_decided
from runtime.test_worker import outputs, send
from streamdedup.config import DetectorConfig
from streamdedup.runtime.worker import Worker

FEED = "https://news.example/feed"


@pytest.mark.skipif(os.environ.get("STREAMDEDUP_TEST_BROKER") == "tansu",
                    reason="ids from offsets and message timestamps: the same on every broker (noida-db pass)")
def test_an_undated_url_polled_three_times_gets_three_verdicts_from_the_worker(settings):
    """Global topology (the default), one worker: same, same, changed content, plus a dated
    page sent twice (a re-send: duplicate_id as in file mode). Every record one output."""
    first, changed = "\n\n".join(make_article(21, paragraphs=3)), "\n\n".join(make_article(22, paragraphs=3))
    dated = {"url": "https://news.example/a", "content": "\n\n".join(make_article(23, paragraphs=3)),
             "fetched_at": "2024-03-01T00:00:00Z"}
    records = [{"url": FEED, "content": first}, {"url": FEED, "content": first}, {"url": FEED, "content": changed},
               dated, dated]
    records = [{**record, "n": n} for n, record in enumerate(records)]
    send(settings, records)
    assert run_until_decided(Worker(settings, DetectorConfig()), len(records)).decided == len(records)
    got = outputs(settings)
    rows = sorted((orjson.loads(m.value()) for m in got["unique"] + got["duplicates"]), key=lambda row: row["n"])
    assert [row["n"] for row in rows] == [0, 1, 2, 3]
    one, same, other, _ = (row["dedup"] for row in rows)
    assert one["status"] == "unique" and other["status"] == "unique" and len({one["id"], same["id"], other["id"]}) == 3
    assert same["status"] == "duplicate" and same["duplicate_of"] == one["id"]
    assert [dict(m.headers())["dedup.reason"] for m in got["rejected"]] == [b"duplicate_id"]
    verdicts = [orjson.loads(m.value()) for m in read_topic(settings, settings.topics.verdicts)]
    resent = [row["id"] for row in verdicts if row["dedup"]["status"] == "rejected"]
    assert resent == [rows[3]["dedup"]["id"]]  # the verdict line names the id it repeats


def test_an_archived_crawl_s_undated_page_is_judged_where_file_mode_judges_it(settings, tmp_path):
    """An archived crawl replayed today: dated pages (2024) and a story's first fetch without a time,
    then a dated copy of it on another site. File mode stamps the undated page with the newest fetch
    time seen (design.md, "Event time"), so it comes first and the copy is its duplicate. The global
    topology stamped it with its arrival time (today): after every dated page, so the copy was the
    story's first page and the first fetch its duplicate (on the feed and story dev sets, 1 story of
    267 split, 2 named otherwise). The clock is kept with the partition's store: a worker restarted
    between the undated page and its copy judges as one that never stopped."""
    from streamdedup.cli import main
    from streamdedup.clusters import read_topic_stories

    def page(page_id: str, site: str, seed: int, hour: int | None) -> dict:
        record = {"id": page_id, "url": f"https://{site}.example/{seed}",
                  "content": "\n\n".join(make_article(seed, paragraphs=4))}
        return record if hour is None else {**record, "fetched_at": f"2024-03-01T{hour:02d}:00:00Z"}

    first = [page("dated", "a", 31, 0), page("undated-s", "u", 32, None)]
    second = [page("undated-t", "v", 33, None), page("copy-t", "y", 33, 1), page("copy-s", "y", 32, 2)]
    crawl = tmp_path / "crawl.jsonl"
    crawl.write_bytes(b"".join(orjson.dumps(r, option=orjson.OPT_APPEND_NEWLINE) for r in first + second))
    assert main(["dedup", str(crawl), "--out", str(tmp_path / "out"), "-q"]) == 0
    clusters = [orjson.loads(line) for line in (tmp_path / "out" / "clusters.jsonl").read_bytes().splitlines()]
    duplicates = {p["id"]: p["duplicate_of"] for s in clusters for p in s["pages"] if p["duplicate_of"]}
    assert duplicates == {"copy-s": "undated-s", "copy-t": "undated-t"}

    send(settings, first)
    assert run_until_decided(Worker(settings, DetectorConfig()), len(first)).decided == len(first)
    send(settings, second)  # a worker started again on the same state
    assert run_until_decided(Worker(settings, DetectorConfig()), len(second)).decided == len(second)
    assert read_topic_stories(settings.bootstrap_servers, settings.topics.cluster_view).stories() == clusters


@pytest.mark.parametrize("topology", ["global", "local"])
def test_undated_refetches_that_repeat_the_first_are_listed_as_fetched_on_the_worker_too(settings, tmp_path, topology):
    """Three undated fetches of one url (the second with a word changed, the third a paragraph less:
    both name the first) beside dated pages of other sites, on 3 partitions: the view lists them in
    the order fetched, as file mode's clusters.jsonl does. Their verdicts carry `arrival` (message
    timestamp, partition, offset) where file mode's carry the job's place; before, both listed the
    third fetch (its id sorts first) before the second."""
    from dataclasses import replace

    from streamdedup.cli import main
    from streamdedup.clusters import read_topic_stories

    settings = replace(settings, partitions=3, topology=topology)
    first = make_article(51, paragraphs=5)
    changed = [first[0].replace(" ", " quite ", 1), *first[1:]]
    records = [{"id": f"dated-{n}", "url": f"https://site{n}.example/a", "content": "\n\n".join(make_article(60 + n)),
                "fetched_at": f"2024-03-01T0{n}:00:00Z"} for n in range(3)]
    records[1:1] = [{"id": page_id, "url": FEED, "content": "\n\n".join(text)}
                    for page_id, text in (("c-first", first), ("b-second", changed), ("a-third", first[:3] + first[4:]))]
    crawl = tmp_path / "crawl.jsonl"
    crawl.write_bytes(b"".join(orjson.dumps(r, option=orjson.OPT_APPEND_NEWLINE) for r in records))
    assert main(["dedup", str(crawl), "--out", str(tmp_path / "out"), "-q"]) == 0
    clusters = [orjson.loads(line) for line in (tmp_path / "out" / "clusters.jsonl").read_bytes().splitlines()]
    [polled] = [s for s in clusters if s["cluster_id"] == "c-first"]
    assert [p["id"] for p in polled["pages"]] == ["c-first", "b-second", "a-third"]

    send(settings, records)
    assert run_until_decided(Worker(settings, DetectorConfig()), len(records)).decided == len(records)
    assert read_topic_stories(settings.bootstrap_servers, settings.topics.cluster_view).stories() == clusters
    verdicts = {row["id"]: row["dedup"] for row in map(orjson.loads, (m.value() for m in read_topic(
        settings, settings.topics.verdicts)))}
    places = [verdicts[page]["arrival"] for page in ("c-first", "b-second", "a-third")]
    assert places == sorted(places) and len({tuple(p[1:]) for p in places}) == 3  # one partition, offset order
    assert "arrival" not in verdicts["dated-0"]
