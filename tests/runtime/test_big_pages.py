"""Pages up to the content cap through the worker on the real broker: each comes out exactly once
(issue 11, "Silent loss of big pages"). Before: noida-db refused everything over ~1 MB with
MSG_SIZE_TOO_LARGE, the feed ignored the delivery report and the pages were never seen again."""

from __future__ import annotations

import random
import time
import uuid
from dataclasses import replace

import orjson
from confluent_kafka import OFFSET_BEGINNING, Consumer, Message, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from streamdedup.config import DetectorConfig
from streamdedup.record.readers import RawRecord
from streamdedup.runtime.feed import feed
from streamdedup.runtime.topics import consumer_settings, ensure_topics
from streamdedup.runtime.worker import Worker
from streamdedup.testing import make_words

SIZES = (500_000, 1_100_000, 2_000_000, 5_000_000, 10_000_000)  # content bytes; the cap is 10,000,000


def big_page(seed: int, size: int) -> dict:
    """An article page of exactly `size` bytes of HTML: real (pseudo-English) paragraphs, each
    one different, so it compresses like text (about 3x), not like a repeated block."""
    rng = random.Random(seed)
    vocabulary = make_words(rng, 3000)
    head = f"<!doctype html><html><head><title>Story {seed}</title></head><body><article><h1>Story {seed}</h1>"
    tail = "</article></body></html>"
    parts, total = [head], len(head) + len(tail)
    words = max(30, min(2000, size // 100))  # long paragraphs: fewer nodes, so parsing 10 MB stays quick
    while True:
        paragraph = f"<p>{' '.join(rng.choices(vocabulary, k=words)).capitalize()}.</p>"
        if total + len(paragraph) > size:
            break
        parts.append(paragraph)
        total += len(paragraph)
    html = "".join(parts) + tail
    return {"url": f"https://big.example/{seed}", "fetched_at": "2024-03-01T00:00:00Z",
            "content": html + " " * (size - len(html))}


def fed(settings, records: list[dict]) -> int:
    return feed([RawRecord(f"test:{i}", data=orjson.dumps(r)) for i, r in enumerate(records)],
                settings.client(), settings.topics.pages, rejected_topic=settings.topics.rejected)


def everything_once(settings, expected: int) -> dict[str, tuple[str, Message]]:
    """url -> (output name, message) over unique, duplicates and rejected; fails on a repeat.
    One read_committed consumer on the three topics, until `expected` arrived and 1 s passed."""
    t = settings.topics
    names = {t.unique: "unique", t.duplicates: "duplicates", t.rejected: "rejected"}
    consumer = Consumer(settings.client(**{"group.id": f"reader-{uuid.uuid4().hex[:6]}", "enable.auto.commit": False,
                                           "isolation.level": "read_committed", **consumer_settings()}))
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING) for topic in names])
    seen: dict[str, tuple[str, Message]] = {}
    count, last, deadline = 0, time.monotonic(), time.monotonic() + 60
    try:
        while time.monotonic() < deadline and (count < expected or time.monotonic() - last < 1.0):
            message = consumer.poll(0.2)
            if message is None or message.error() is not None:
                continue
            url = orjson.loads(message.value()).get("url")
            assert url not in seen, f"{url} came out twice"
            seen[url] = (names[message.topic()], message)
            count, last = count + 1, time.monotonic()
    finally:
        consumer.close()
    return seen


def test_pages_up_to_the_content_cap_come_out_whole(settings):
    records = [big_page(i, size) for i, size in enumerate(SIZES)]
    ensure_topics(settings)
    assert fed(settings, records) == len(records)
    worker = Worker(settings, DetectorConfig())
    stats = worker.run(idle_timeout_s=4, stop_after=len(records))
    got = everything_once(settings, len(records))
    assert sorted(got) == sorted(r["url"] for r in records)
    for record in records:
        name, message = got[record["url"]]
        assert name == "unique", (record["url"], dict(message.headers()))
        assert orjson.loads(message.value())["content"] == record["content"]  # the whole record, passed through
    assert stats.aborted == 0
    seen = worker.metrics.registry.get_sample_value
    assert seen("streamdedup_input_records_total", {"topic": settings.topics.pages}) == len(records)
    assert seen("streamdedup_output_records_total", {"topic": settings.topics.unique, "status": "unique"}) \
        == len(records)


def test_a_verdict_the_broker_refuses_becomes_a_rejection_not_a_stall(broker, settings):
    """Output topics that already exist with a small limit (an admin made them, as on Apache
    Kafka with its 1 MB default): what does not fit goes to rejected as too_large_for_broker,
    with its id, url and size but not its content; the rest flows and the worker moves on."""
    admin = AdminClient(settings.client())
    small = {"max.message.bytes": "300000"}
    futures = admin.create_topics([NewTopic(t, 1, 1, config=small) for t in (settings.topics.unique,
                                                                                settings.topics.duplicates)])
    for future in futures.values():
        future.result(30)
    records = [big_page(100, 1_100_000), big_page(101, 20_000), big_page(102, 30_000)]
    settings = replace(settings, batch_size=4)
    ensure_topics(settings)
    assert fed(settings, records) == len(records)
    stats = Worker(settings, DetectorConfig()).run(idle_timeout_s=4, stop_after=len(records))
    got = everything_once(settings, len(records))
    assert sorted(got) == sorted(r["url"] for r in records)
    for small in records[1:]:
        name, message = got[small["url"]]
        assert name == "unique", dict(message.headers()).get("dedup.reason")
    name, message = got[records[0]["url"]]
    if broker.kind == "tansu":  # Tansu keeps max.message.bytes as a label and takes any size
        assert name == "unique"
        return
    assert name == "rejected"
    headers = dict(message.headers())
    assert headers["dedup.reason"] == b"too_large_for_broker"
    stub = orjson.loads(message.value())
    assert stub["bytes"] > 1_100_000 and stub["dedup"]["status"] == "unique" and "content" not in stub
    assert stats.aborted <= 2  # one aborted transaction teaches the worker the limit
