"""The worker (global topology, real broker): one page's clock must not switch deduplication off."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import orjson
from conftest import make_article, page, wrap_in_template

from runtime.conftest import run_until_decided
from runtime.test_worker import outputs, send
from streamdedup.config import DetectorConfig
from streamdedup.runtime.worker import Worker


def test_a_page_dated_9999_does_not_expire_the_index(settings):
    """Before: the far-future page's time became the index partitions' watermark and every later
    copy of the story was forgotten right after its batch."""
    story = make_article(51)
    original = page("https://planet.example/story", wrap_in_template(story, "Planet"), "2024-03-01T10:00:00Z")
    attacker = page("https://evil.example/x", wrap_in_template(make_article(98), "Evil"), "9999-12-31T00:00:00Z")
    copies = [page(f"https://mirror{i}.example/story", wrap_in_template(story, f"Mirror {i}"),
                   f"2024-03-02T{i:02d}:00:00Z") for i in range(12)]
    records = [original, attacker, *copies]
    # batches of one input message, so expiry runs between the copies as it would on a live stream
    settings = replace(settings, batch_size=1)
    send(settings, records)
    worker = Worker(settings, DetectorConfig(retention=timedelta(days=30)))
    assert run_until_decided(worker, len(records)).decided == len(records)
    got = outputs(settings)
    verdicts = {}
    for name in ("unique", "duplicates"):
        for message in got[name]:
            value = orjson.loads(message.value())
            verdicts[value["url"]] = value["dedup"]
    assert len(verdicts) == len(records) and not got["rejected"]
    assert "9999-12-31" in verdicts["https://evil.example/x"]["time_note"]
    assert [verdicts[c["url"]]["status"] for c in copies] == ["duplicate"] * len(copies)
