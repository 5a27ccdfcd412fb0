"""Input headers reach the outputs: a crawler's trace id on the page is on its verdict or dead
letter, on either topology, and our own `dedup.*` headers are never shadowed by the input's; each
output names its input message in `dedup.source` (before, the local topology's verdicts had none)."""

from __future__ import annotations

import time
from dataclasses import replace

import orjson
import pytest
from confluent_kafka import Producer
from conftest import make_article, page, wrap_in_template

from runtime.conftest import read_topic, run_until_decided
from streamdedup.config import DetectorConfig
from streamdedup.detector import Detector
from streamdedup.runtime.topics import ensure_topics
from streamdedup.runtime.worker import Worker

SITES = ("Alpha", "Beta", "Gamma")


@pytest.mark.parametrize("topology", ["global", "local"])
def test_input_headers_are_carried_to_every_output(settings, topology):
    settings = replace(settings, topology=topology)
    ensure_topics(settings)
    values = [b"not json at all"]
    for i in range(2):
        story = make_article(3000 + i, paragraphs=4)
        values += [orjson.dumps(page(f"https://{site.lower()}.example/{i}", wrap_in_template(story, site),
                                     f"2024-03-01T{j:02d}:{i:02d}:00Z")) for j, site in enumerate(SITES)]
    producer = Producer(settings.client())
    for i, value in enumerate(values):
        producer.produce(settings.topics.pages, value=value, key=b"k", headers=[
            ("trace-id", f"trace-{i}".encode()), ("dedup.status", b"forged"), ("tenant", b"\x00\xffbinary"),
            ("empty", None)])
    assert producer.flush(30) == 0
    trace_of = {value: f"trace-{i}".encode() for i, value in enumerate(values)}
    # one partition: the i-th message is at offset i
    source_of_trace = {f"trace-{i}".encode(): f"{settings.topics.pages}[0]@{i}".encode() for i in range(len(values))}
    url_trace = {orjson.loads(v)["url"]: t for v, t in trace_of.items() if v.startswith(b"{")}

    worker = Worker(settings, DetectorConfig())
    started = time.monotonic()
    assert run_until_decided(worker, len(values)).decided == len(values)
    wall_s = time.monotonic() - started
    # the decide step's work, from either topology's handlers: each valid page judged (at least once)
    work = worker.metrics.registry.get_sample_value
    assert work("streamdedup_decide_work_total", {"kind": "pages"}) >= len(values) - 1
    assert work("streamdedup_decide_work_total", {"kind": "candidates_verified"}) >= 4  # two copies of each story
    # how the pages were read: each once, by `fast` (two pages a site: none warm)
    assert work("streamdedup_extraction_pages_total", {"kind": "fast"}) == len(values) - 1
    # and where its time went, by step: each step that topology's judging handlers time, within the run
    timed = Detector.STEPS if topology == "local" else ("lookups", "verdicts", "commit", "expire")
    steps = {step: work("streamdedup_store_step_seconds_total", {"step": step}) for step in timed}
    assert all(seconds is not None and seconds > 0 for seconds in steps.values()), steps
    assert sum(steps.values()) < wall_s, (steps, wall_s)

    t = settings.topics
    seen = 0
    for topic in (t.unique, t.duplicates, t.rejected):
        for message in read_topic(settings, topic):
            headers = message.headers()
            names = [name for name, _ in headers]
            assert names.count("dedup.status") == 1, headers  # ours only: the forged one is dropped
            status = dict(headers)["dedup.status"]
            assert status in (b"unique", b"duplicate", b"rejected")
            if topic == t.rejected:
                expected = trace_of[message.value()]  # the original bytes
            else:
                expected = url_trace[orjson.loads(message.value())["url"]]
            assert ("trace-id", expected) in headers, headers
            assert names.count("dedup.source") == 1 and dict(headers)["dedup.source"] == source_of_trace[expected], \
                headers  # the input message it came of
            assert ("tenant", b"\x00\xffbinary") in headers and ("empty", None) in headers, headers
            assert names.index("trace-id") > names.index("dedup.status")  # after ours
            seen += 1
    assert seen == len(values)
