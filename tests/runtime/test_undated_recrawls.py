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
    verdicts = [orjson.loads(m.value()) for m in read_topic(settings, settings.topics.verdicts, to_end=True)]
    resent = [row["id"] for row in verdicts if row["dedup"]["status"] == "rejected"]
    assert resent == [rows[3]["dedup"]["id"]]  # the verdict line names the id it repeats
