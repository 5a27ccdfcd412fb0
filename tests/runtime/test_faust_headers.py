"""The Faust app against the broker: a page over its topic's limit by its input's headers, as the worker sends it."""

from __future__ import annotations

import os

import orjson
import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from runtime.conftest import read_topic
from runtime.test_big_pages import small_page
from runtime.test_faust_app import run_app_until
from streamdedup.runtime.topics import ensure_topics

HEADER = 400_000  # random bytes: over the unique topic's 300 kB even compressed; the page is far under it


def test_a_page_over_its_topics_limit_by_its_input_headers_goes_whole_without_them(broker, settings, tmp_path):
    """The page goes to unique with `dedup.headers_omitted` and its verdict line says unique, as the worker's.

    Before (ops review s86): the Faust app sent it as its `too_large_for_broker` stub, with that line, where the
    worker first leaves out the input's headers over 64 KiB (`outputs.kafka.header_forms`)."""
    if broker.kind == "tansu":
        pytest.skip("Tansu keeps max.message.bytes as a label and takes any size")
    t = settings.topics
    admin = AdminClient(settings.client())
    admin.create_topics([NewTopic(t.unique, 1, 1, config={"max.message.bytes": "300000"})])[t.unique].result(30)
    ensure_topics(settings)
    records = [(small_page(1, "h.example"), b"h", [("trace", os.urandom(HEADER)), ("tenant", b"t1")]),
               (small_page(2, "b.example"), b"b", [("tenant", b"t1")])]
    producer = Producer(settings.client(**{"message.max.bytes": 100_000_000, "compression.type": "zstd"}))
    for record, key, headers in records:
        producer.produce(t.pages, orjson.dumps(record), key, headers=headers)
    assert producer.flush(60) == 0
    got, log = run_app_until(settings, tmp_path, "faust.log", len(records))
    name, message = got[b"https://h.example/story/1"]
    headers = dict(message.headers() or [])
    assert name == "unique" and int(headers["dedup.headers_omitted"]) > HEADER, (headers.get("dedup.reason"), log)
    assert "tenant" not in headers and orjson.loads(message.value())["content"] == records[0][0]["content"]
    name, message = got[b"https://b.example/story/2"]  # a page with small headers: they are passed on
    assert name == "unique" and ("tenant", b"t1") in (message.headers() or [])
    lines = {line["url"]: line for line in (orjson.loads(m.value()) for m in read_topic(settings, t.verdicts))}
    assert lines["https://h.example/story/1"]["dedup"]["status"] == "unique"
    assert lines["https://h.example/story/1"]["headers_omitted"] > HEADER
    assert "again without the input's headers" in log
