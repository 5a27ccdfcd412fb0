"""The faust-streaming app: the same detector, at-least-once with idempotent re-emission."""

from __future__ import annotations

import os
import subprocess
import sys

import orjson
from conftest import make_article, page, wrap_in_template

from runtime.conftest import read_topic
from runtime.test_worker import BAD, crawl, send
from streamdedup.config import DetectorConfig
from streamdedup.detector import Detector
from streamdedup.runtime.faust_app import outputs_for
from streamdedup.testing import run_records


def test_a_replayed_message_re_emits_the_journaled_verdict_byte_for_byte(tmp_path):
    story = make_article(5, paragraphs=4)
    messages = [orjson.dumps(page("https://a.example/1", wrap_in_template(story, "A"))),
                orjson.dumps(page("https://b.example/1", wrap_in_template(story, "B")))]
    with Detector(DetectorConfig(), tmp_path) as detector:
        first = [outputs_for(detector, "pages", 0, offset, None, value) for offset, value in enumerate(messages)]
        docs = detector.store.stats()["docs"]
        again = [outputs_for(detector, "pages", 0, offset, None, value) for offset, value in enumerate(messages)]
        assert again == first  # same targets, keys, values, headers: consumers keyed by page id see one page
        assert detector.store.stats()["docs"] == docs  # the replay changed no state
    assert [out[0][0] for out in first] == ["unique", "duplicate"]


def test_faust_app_against_the_broker(settings, tmp_path):
    records = crawl(10)
    send(settings, records)
    env = {**os.environ, "STREAMDEDUP_BOOTSTRAP_SERVERS": settings.bootstrap_servers,
           **{f"STREAMDEDUP_TOPIC_{k.upper()}": v for k, v in settings.topics.__dict__.items()}}
    started_in = tmp_path / "cwd"  # Faust's own files go under --state-dir, not "<app id>-data" here
    started_in.mkdir()
    process = subprocess.Popen([sys.executable, "-m", "streamdedup", "faust", "--state-dir", str(tmp_path / "fs"),
                                "--group-id", settings.group_id], env=env, stdout=subprocess.DEVNULL,
                               stderr=open(tmp_path / "faust.log", "wb"), cwd=started_in)
    try:
        t = settings.topics
        unique = read_topic(settings, t.unique, expect_at_least=10, quiet_s=3, timeout_s=120)
        duplicates = read_topic(settings, t.duplicates, expect_at_least=20, quiet_s=3, timeout_s=60)
        rejected = read_topic(settings, t.rejected, expect_at_least=len(BAD), quiet_s=3, timeout_s=60)
    finally:
        process.terminate()
        process.wait(timeout=60)
    got = {}
    for message in unique + duplicates:
        dedup = orjson.loads(message.value())["dedup"]
        got.setdefault(dedup["id"], set()).add(dedup["status"])
    expected = {o.dedup["id"]: o.status for o in run_records(records, tmp_path / "file-mode") if o.status != "rejected"}
    assert {k: v.pop() for k, v in got.items() if len(v) == 1} == expected, (tmp_path / "faust.log").read_text()[-3000:]
    assert sorted(m.value() for m in rejected) == sorted(BAD)
    assert list(started_in.iterdir()) == []
