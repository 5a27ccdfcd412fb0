"""Pages up to the content cap through the worker on the real broker: each comes out exactly once
(issue 11, "Silent loss of big pages"). Before: noida-db refused everything over ~1 MB with
MSG_SIZE_TOO_LARGE, the feed ignored the delivery report and the pages were never seen again."""

from __future__ import annotations

import os
import random
import time
import uuid
from dataclasses import replace

import cramjam
import orjson
import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from streamdedup.config import DetectorConfig
from streamdedup.outputs.record_size import RecordLimits
from streamdedup.record.readers import RawRecord
from streamdedup.runtime import topic_limits
from streamdedup.runtime.feed import feed
from streamdedup.runtime.topics import consumer_settings, ensure_topics
from streamdedup.runtime.worker import Worker
from streamdedup.testing import make_article, make_words, wrap_in_template

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


def read_all(settings, names: dict[str, str], expected: int) -> list[tuple[str, Message]]:
    """(name, message) of every committed message of the topics `names` maps to a name, until
    `expected` arrived and 1 s passed: one consumer for all, fetch sizes as the worker's."""
    consumer = Consumer(settings.client(**{"group.id": f"reader-{uuid.uuid4().hex[:6]}", "enable.auto.commit": False,
                                           "isolation.level": "read_committed", **consumer_settings()}))
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING) for topic in names])
    got: list[tuple[str, Message]] = []
    last, deadline = time.monotonic(), time.monotonic() + 60
    try:
        while time.monotonic() < deadline and (len(got) < expected or time.monotonic() - last < 1.0):
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                got.append((names[message.topic()], message))
                last = time.monotonic()
    finally:
        consumer.close()
    return got


def everything_once(settings, expected: int) -> dict[str, tuple[str, Message]]:
    """url -> (output name, message) over unique, duplicates and rejected; fails on a repeat."""
    t = settings.topics
    seen: dict[str, tuple[str, Message]] = {}
    for name, message in read_all(settings, {t.unique: "unique", t.duplicates: "duplicates", t.rejected: "rejected"},
                                  expected):
        url = orjson.loads(message.value()).get("url")
        assert url not in seen, f"{url} came out twice"
        seen[url] = (name, message)
    return seen


def test_pages_up_to_the_content_cap_come_out_whole(settings):
    records = [big_page(i, size) for i, size in enumerate(SIZES)]
    ensure_topics(settings)
    assert fed(settings, records) == len(records)
    worker = Worker(settings, DetectorConfig())
    stats = worker.run(idle_timeout_s=20, stop_after=len(records))  # a loaded CI box: slow fetches of 2 MB pages
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


def test_a_batch_stops_taking_messages_once_it_holds_batch_bytes(settings):
    """A batch is held in memory whole: 256 pages at the cap would be ~10 GB. With `batch_bytes`
    at 3 MB the pages (0.5 to 10 MB) come in batches whose messages before the last hold less than
    3 MB, and each page still comes out once."""
    records = [big_page(200 + i, size) for i, size in enumerate(SIZES)]
    settings = replace(settings, batch_bytes=3_000_000)
    ensure_topics(settings)
    assert fed(settings, records) == len(records)
    worker = Worker(settings, DetectorConfig())
    batches: list[list[int]] = []
    process = worker.process

    def recorded(messages):
        batches.append([len(m.value() or b"") for m in messages if m.topic() == settings.topics.pages])
        return process(messages)

    worker.process = recorded
    worker.run(idle_timeout_s=20, stop_after=len(records))  # a loaded CI box: slow fetches of 2 MB pages
    assert sorted(everything_once(settings, len(records))) == sorted(r["url"] for r in records)
    pages = [sizes for sizes in batches if sizes]
    assert sum(len(sizes) for sizes in pages) == len(records)
    assert all(sum(sizes[:-1]) < 3_000_000 for sizes in pages), pages
    assert len(pages) >= 3, pages


def compressed_as_the_producer_does(page: dict) -> int:
    return len(cramjam.zstd.compress(orjson.dumps(page), level=3))


def page_compressed_to(seed: int, target: int) -> dict:
    """The largest `big_page(seed, ...)` whose record compresses (zstd, as every producer of ours) to at most
    `target` bytes."""
    low, high = 100_000, 3_000_000
    while high - low > 2_000:
        middle = (low + high) // 2
        low, high = (middle, high) if compressed_as_the_producer_does(big_page(seed, middle)) <= target else (low, middle)
    return big_page(seed, low)


def run_once(settings, records: list[dict]):
    """The records fed and judged by one worker: its stats, and each page's one output by url."""
    ensure_topics(settings)
    assert fed(settings, records) == len(records)
    stats = Worker(settings, DetectorConfig()).run(idle_timeout_s=20, stop_after=len(records))  # a loaded CI box: slow fetches of 2 MB pages
    got = everything_once(settings, len(records))
    assert sorted(got) == sorted(r["url"] for r in records)
    return stats, got


def limit_verdict_topics(settings, limit: int) -> None:
    """The unique and duplicates topics made beforehand with `limit` as their `max.message.bytes` (an admin's)."""
    admin = AdminClient(settings.client())
    futures = admin.create_topics([NewTopic(t, 1, 1, config={"max.message.bytes": str(limit)})
                                   for t in (settings.topics.unique, settings.topics.duplicates)])
    for future in futures.values():
        future.result(30)


@pytest.mark.parametrize("topology", ["global", "local"])
def test_a_verdict_over_its_topics_limit_goes_out_as_its_stub_at_once(broker, settings, topology):
    """Output topics that already exist with a small limit (an admin made them, as on Apache
    Kafka with its 1 MB default): what does not fit goes to rejected as too_large_for_broker,
    with its id, url and size but not its content, in the batch's own transaction; a page whose
    record compresses to just under the limit goes out whole; the rest flows.

    Before: the broker's refusal failed the transaction at its commit, a minute later (60 s of the
    client's commit timeout), and the batch was consumed again to send the stub."""
    limit = 300_000
    limit_verdict_topics(settings, limit)
    under = page_compressed_to(103, limit - 12_000)  # 4% under: 1% margin, the verdict's dedup, headers
    records = [big_page(100, 1_100_000), big_page(101, 20_000), big_page(102, 30_000), under]
    assert len(orjson.dumps(under)) > 2 * limit  # over the limit before compression, under it after
    assert compressed_as_the_producer_does(records[0]) > limit
    settings = replace(settings, batch_size=4, topology=topology)
    ensure_topics(settings)
    assert fed(settings, records) == len(records)
    worker = Worker(settings, DetectorConfig())
    started = time.monotonic()
    stats = worker.run(idle_timeout_s=20, stop_after=len(records))  # a loaded CI box: slow fetches of 2 MB pages
    took = time.monotonic() - started
    got = everything_once(settings, len(records))
    assert sorted(got) == sorted(r["url"] for r in records)
    for whole in records[1:]:
        name, message = got[whole["url"]]
        assert name == "unique", dict(message.headers()).get("dedup.reason")
        assert orjson.loads(message.value())["content"] == whole["content"]
    verdict_lines = read_all(settings, {settings.topics.verdicts: "verdicts"}, len(records))
    assert sorted(orjson.loads(m.value())["url"] for _, m in verdict_lines) == sorted(r["url"] for r in records)
    assert stats.aborted == 0, "no transaction fails"
    assert took < 30, f"{took:.1f} s: a refused transaction waits out its 60 s commit timeout"
    name, message = got[records[0]["url"]]
    assert name == "rejected"
    headers = dict(message.headers())
    assert headers["dedup.reason"] == b"too_large_for_broker"
    stub = orjson.loads(message.value())
    assert stub["bytes"] > 1_100_000 and stub["dedup"]["status"] == "unique" and "content" not in stub
    assert stub["topic"] == settings.topics.unique
    refused = worker.metrics.registry.get_sample_value("streamdedup_refused_outputs_total",
                                                       {"topic": settings.topics.unique})
    assert refused == 1 and stats.refused == 1


def test_a_refusal_the_worker_could_not_foresee_stubs_only_the_largest_record(broker, settings, monkeypatch):
    """Where a topic's limit is not known (a broker that does not describe it, a limit lowered since
    the start), the broker's refusal fails the transaction at its commit and librdkafka fails every
    record of it with the size error. Only the largest is sent as its stub on the retry: the three
    pages that fit go out whole (before: all four went out as stubs)."""
    if broker.kind == "tansu":
        pytest.skip("Tansu applies no size limit: nothing is refused")
    monkeypatch.setattr(topic_limits, "read_limits", lambda *args, **kwargs: RecordLimits())  # none known
    limit = 300_000
    limit_verdict_topics(settings, limit)
    under = page_compressed_to(113, limit - 12_000)  # over the limit before compression, under it after
    records = [big_page(110, 1_100_000), big_page(111, 20_000), big_page(112, 30_000), under]
    stats, got = run_once(replace(settings, batch_size=4), records)
    for whole in records[1:]:
        name, message = got[whole["url"]]
        assert name == "unique", dict(message.headers()).get("dedup.reason")
    name, message = got[records[0]["url"]]
    assert name == "rejected" and dict(message.headers())["dedup.reason"] == b"too_large_for_broker"
    assert stats.aborted == 1 and stats.refused == 1


def test_the_feed_turns_a_page_the_broker_refuses_into_a_rejection(broker, settings):
    """`streamdedup feed` to a pages topic with a small limit: the refused page is on the rejected
    topic as too_large_for_broker (url and size, no content) and reported; the others are sent.
    Before, the delivery report was never read and the page vanished."""
    admin = AdminClient(settings.client())
    admin.create_topics([NewTopic(settings.topics.pages, 1, 1, config={"max.message.bytes": "300000"})]
                        )[settings.topics.pages].result(30)
    ensure_topics(settings)
    records = [big_page(200, 20_000), big_page(201, 1_100_000), big_page(202, 30_000)]
    refused: list[dict] = []
    sent = feed([RawRecord(f"test:{i}", data=orjson.dumps(r)) for i, r in enumerate(records)], settings.client(),
                settings.topics.pages, rejected_topic=settings.topics.rejected, refused=refused)
    assert sent == len(records)
    if broker.kind == "tansu":  # takes any size whatever the topic says
        assert refused == []
        return
    assert [r["url"] for r in refused] == [records[1]["url"]] and refused[0]["bytes"] > 1_100_000
    got: dict[str, list[Message]] = {"pages": [], "rejected": []}
    for name, message in read_all(settings, {settings.topics.pages: "pages", settings.topics.rejected: "rejected"},
                                  len(records)):
        got[name].append(message)
    assert sorted(orjson.loads(m.value())["url"] for m in got["pages"]) == [records[0]["url"], records[2]["url"]]
    [stub] = got["rejected"]
    assert dict(stub.headers())["dedup.reason"] == b"too_large_for_broker"
    assert orjson.loads(stub.value())["url"] == records[1]["url"] and b"content" not in stub.value()


def test_the_feed_sends_what_the_reader_rejected_to_the_rejected_topic_with_its_reason(broker, settings, tmp_path):
    """A WARC with a 200 and a 404 response: the 404 reaches the rejected topic as `http_status`,
    as `streamdedup dedup` writes it, not the worker as a page without content (missing_content)."""
    from conftest import write_warc

    from streamdedup.record.readers import read_input

    path = write_warc(tmp_path / "crawl.warc", [
        (f"https://warc.example/{status[:3]}", status,
         f"<html><body><p>{status} page body with some words</p></body></html>".encode())
        for status in ("200 OK", "404 Not Found")], gzip=False)
    ensure_topics(settings)
    sent = feed(read_input(str(path)), settings.client(), settings.topics.pages,
                rejected_topic=settings.topics.rejected)
    assert sent == 2
    got: dict[str, list[Message]] = {"pages": [], "rejected": []}
    for name, message in read_all(settings, {settings.topics.pages: "pages", settings.topics.rejected: "rejected"}, 2):
        got[name].append(message)
    assert [orjson.loads(m.value())["url"] for m in got["pages"]] == ["https://warc.example/200"]
    [rejected] = got["rejected"]
    value = orjson.loads(rejected.value())
    assert value["url"] == "https://warc.example/404" and value["dedup"]["reason"] == "http_status"
    assert dict(rejected.headers())["dedup.reason"] == b"http_status" and "404" in value["dedup"]["detail"]


METADATA_LIMIT = 1_000_000  # every output and internal topic's max.message.bytes
BIG = 3_000_000  # random bytes: they do not compress


def small_page(seed: int, site: str) -> dict:
    return {"url": f"https://{site}/story/{seed}", "content": wrap_in_template(make_article(seed), site)}


@pytest.mark.parametrize("topology", ["global", "local"])
def test_a_record_with_a_huge_header_or_key_ends_in_one_output(broker, settings, topology):
    """Records with megabytes of random Kafka headers or key, topics of a 1 MB limit: each ends in one
    output, the page after them is decided, no transaction fails.

    Before (ops review s75): the verdict line decoded a random header as text (3 bytes for each bad
    byte), a cluster event carried the key escaped; either went over its topic's limit, the broker
    refused the transaction on every attempt, and the partition stalled for good."""
    t = settings.topics
    admin = AdminClient(settings.client())
    limited = (*t.outputs, *t.internal)
    for future in admin.create_topics([NewTopic(name, 1, 1, config={"max.message.bytes": str(METADATA_LIMIT)})
                                       for name in limited]).values():
        future.result(30)
    settings = replace(settings, topology=topology)
    ensure_topics(settings)  # the pages topic: 32 MiB
    records = [(small_page(1, "a.example"), b"a", []),
               (small_page(2, "h.example"), b"h", [("trace", os.urandom(BIG)), ("tenant", b"t1")]),
               (small_page(3, "k.example"), os.urandom(BIG), []),
               ({"url": "https://r.example/1"}, os.urandom(BIG), [("trace", os.urandom(BIG))]),  # no content
               (small_page(5, "b.example"), b"b", [("tenant", b"t1")])]
    producer = Producer(settings.client(**{"message.max.bytes": 100_000_000, "compression.type": "zstd"}))
    for record, key, headers in records:
        producer.produce(t.pages, orjson.dumps(record), key, headers=headers)
    assert producer.flush(60) == 0
    worker = Worker(settings, DetectorConfig())
    stats = worker.run(idle_timeout_s=20, stop_after=len(records))  # a loaded CI box: slow fetches of 2 MB pages
    assert stats.decided == len(records)
    got = everything_once(settings, len(records))
    assert sorted(got) == sorted(record["url"] for record, _, _ in records)
    assert got["https://a.example/story/1"][0] == "unique"
    name, message = got["https://b.example/story/5"]  # the page after them: decided, its headers passed on
    assert name == "unique" and ("tenant", b"t1") in (message.headers() or [])
    name, message = got["https://h.example/story/2"]  # judged, its headers left out
    assert name == "unique", dict(message.headers() or [])
    headers = dict(message.headers() or [])
    assert int(headers["dedup.headers_omitted"]) > BIG and "tenant" not in headers
    assert got["https://k.example/story/3"][0] == "unique"
    name, message = got["https://r.example/1"]  # its dead letter whole, the key and headers left out
    assert name == "rejected" and message.key() is None
    assert dict(message.headers() or [])["dedup.reason"] == b"missing_content"
    lines = read_all(settings, {t.verdicts: "verdicts"}, len(records))
    assert sorted(orjson.loads(m.value())["url"] for _, m in lines) == sorted(r["url"] for r, _, _ in records)
    events = read_all(settings, {t.clusters: "clusters"}, 4)
    assert sorted(orjson.loads(m.value())["url"] for _, m in events) == sorted(
        r["url"] for r, _, _ in records if "content" in r)
    (k_event,) = [orjson.loads(m.value()) for _, m in events if b"k.example" in m.value()]
    assert k_event["key"] is None and k_event["key_omitted"] == BIG
    assert stats.aborted == 0, "no transaction fails"
