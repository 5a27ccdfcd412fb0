"""An input with megabytes of binary headers or key: every output fits its topic, none carries them unbounded.

Before: the verdict line decoded a 30 MB random header into a 71 MB line, a cluster event carried a
30 MB key as a 98 MB escaped string; the broker refused the transaction on every attempt and the
partition stalled for good (ops review, s75).
"""

from __future__ import annotations

import os
from typing import Any, cast

import orjson
from confluent_kafka import KafkaError

from streamdedup.clusters import verdict_line
from streamdedup.outputs.kafka import Outputs, WorkerStats, cluster_events, event_stub
from streamdedup.outputs.kafka_contract import Topics
from streamdedup.outputs.record_size import RecordLimits, record_size
from streamdedup.record.passed import PASSED_BYTES, bounded_headers, bounded_key, headers_bytes
from streamdedup.runtime.scaleout.messages import PageHeader
from streamdedup.verdict.contract import Rejection

LIMIT = 200_000  # every topic's max.message.bytes here
BIG = 1_000_000
TOPICS = Topics()
DEDUP = {"id": "p1", "status": "unique", "cluster_id": "p1", "duplicate_of": None, "method": None}
RECORD = {"url": "https://h.example/1", "content": "<p>ferries leave the north quay at nine</p>"}


class _Producer:
    """What `Outputs` asks of a producer, keeping what it was given."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, bytes | None, bytes | None, list[tuple[str, bytes | None]]]] = []

    def produce(self, topic: str, value: bytes | None = None, key: bytes | None = None, on_delivery: Any = None,
                headers: Any = None, **_: Any) -> None:
        self.sent.append((topic, key, value, list(headers or [])))

    def poll(self, _: float) -> int:
        return 0


def _outputs(limits: RecordLimits | None = None) -> tuple[Outputs, _Producer]:
    producer = _Producer()
    limits = limits or RecordLimits(topic_bytes={name: LIMIT for name in TOPICS.outputs}, compression="zstd")
    return Outputs(cast(Any, producer), TOPICS, cast(Any, None), WorkerStats(), limits), producer


def _all_fit(producer: _Producer) -> None:
    for topic, key, value, headers in producer.sent:
        assert record_size(key, value, headers) < LIMIT, (topic, record_size(key, value, headers))


def test_bounds():
    small = [("trace", b"x" * 100), ("tenant", None)]
    assert bounded_headers(small) == (small, 0)
    big = [("trace", b"x" * PASSED_BYTES)]
    assert bounded_headers(big) == ([], PASSED_BYTES + 5)
    assert bounded_headers(None, 7) == ([], 7)
    assert headers_bytes(small) == 5 + 100 + 6
    assert bounded_key(b"k") == (b"k", 0)
    assert bounded_key(None) == (None, 0)
    assert bounded_key(b"k" * (PASSED_BYTES + 1)) == (None, PASSED_BYTES + 1)


def test_verdict_line_leaves_out_headers_over_the_bound():
    line = verdict_line(RECORD, DEDUP, [("trace", os.urandom(BIG))])
    assert "headers" not in line and line["headers_omitted"] == BIG + 5
    assert len(orjson.dumps(line)) < 1_000
    assert verdict_line(RECORD, DEDUP, [("trace", b"\xff")])["headers"] == [["trace", "\ufffd"]]


def test_cluster_events_leave_out_a_key_over_the_bound():
    (event,) = cluster_events(DEDUP, RECORD, os.urandom(BIG))
    assert event["key"] is None and event["key_omitted"] == BIG
    (event,) = cluster_events(DEDUP, RECORD, b"h")
    assert event["key"] == "h" and "key_omitted" not in event
    stub = event_stub({**event, "url": "u" * BIG}, 123)
    assert "url" not in stub and "key" not in stub and stub["omitted_bytes"] == 123 and stub["cluster_id"] == "p1"


def test_a_big_header_leaves_every_output_within_its_topic_and_the_page_judged():
    outputs, producer = _outputs()
    outputs.verdict(dict(RECORD), dict(DEDUP), "pages[0]@1", [("trace", os.urandom(BIG)), ("t", b"1")], b"h")
    _all_fit(producer)
    by_topic = {topic: (key, value, headers) for topic, key, value, headers in producer.sent}
    assert set(by_topic) == {TOPICS.unique, TOPICS.verdicts, TOPICS.clusters, TOPICS.cluster_view}
    _, value, headers = by_topic[TOPICS.unique]  # the page whole, the input's headers left out
    assert orjson.loads(value or b"")["content"] == RECORD["content"]
    assert ("dedup.headers_omitted", str(BIG + 5 + 2).encode()) in headers and ("t", b"1") not in headers
    assert orjson.loads(by_topic[TOPICS.verdicts][1] or b"")["headers_omitted"] == BIG + 7


def test_a_big_key_leaves_every_output_within_its_topic():
    outputs, producer = _outputs()
    outputs.verdict(dict(RECORD), dict(DEDUP), "pages[0]@1", [], os.urandom(BIG))
    _all_fit(producer)
    assert {topic for topic, *_ in producer.sent} == {TOPICS.unique, TOPICS.verdicts, TOPICS.clusters,
                                                      TOPICS.cluster_view}
    # a dead letter keyed by the input's key: its stub, without the key
    outputs, producer = _outputs()
    outputs.rejected(os.urandom(BIG), b"not json", "invalid_json", "no JSON", "pages[0]@2", [("trace", b"1")])
    _all_fit(producer)
    (dead,) = [sent for sent in producer.sent if sent[0] == TOPICS.rejected]
    assert dead[1] is None and ("dedup.key_omitted", str(BIG).encode()) in dead[3]
    (line,) = [sent for sent in producer.sent if sent[0] == TOPICS.verdicts]  # its line says so too
    assert line[1] is None and ("dedup.key_omitted", str(BIG).encode()) in line[3]


def test_a_refused_verdict_line_goes_as_its_stub():
    """A refusal learnt on the verdicts topic (its limit unknown) was learnt for ever and changed nothing."""
    outputs, producer = _outputs(RecordLimits())  # no topic limit known
    record = {**RECORD, "url": "https://h.example/" + "\x01" * BIG}  # a rejected record's url, escaped x6
    outputs.rejected(b"k", orjson.dumps(record), "invalid_field", "url too long", "pages[0]@3")
    (line,) = [sent for sent in producer.sent if sent[0] == TOPICS.verdicts]
    outputs.failures = [((TOPICS.verdicts, line[1], record_size(line[1], line[2], line[3])),
                         KafkaError(KafkaError.MSG_SIZE_TOO_LARGE))]
    assert outputs.learn_refusals()
    producer.sent.clear()
    outputs.rejected(b"k", orjson.dumps(record), "invalid_field", "url too long", "pages[0]@3")
    (line,) = [sent for sent in producer.sent if sent[0] == TOPICS.verdicts]
    stub = orjson.loads(line[2] or b"")
    assert stub["url"] is None and stub["omitted_bytes"] > BIG and stub["dedup"]["reason"] == "invalid_field"


def test_a_page_header_over_the_limit_is_judged_without_the_input_headers():
    header = PageHeader("p1", b"\x00" * 8, (0,), dict(RECORD), "pages[0]@1", headers=(("trace", os.urandom(BIG)),),
                        key=os.urandom(BIG))
    within = header.passed_within()
    assert within.headers == () and within.key is None
    assert (within.headers_omitted, within.key_omitted) == (BIG + 5, BIG)
    assert PageHeader.from_json(orjson.loads(within.encode())) == within
    assert len(within.encode()) < 1_000
    small = PageHeader("p1", b"\x00" * 8, (0,), dict(RECORD), "o", headers=(("t", b"1"),), key=b"k")
    assert small.passed_within() == small


def _faust_sends(output: tuple, limits: RecordLimits) -> tuple:
    """What the Faust app ends up sending for `output` to a broker with these limits, refused form after form."""
    from streamdedup.runtime.faust_outputs import after_refusal

    topic = {"unique": TOPICS.unique, "rejected": TOPICS.rejected}[output[0]]
    form = output
    while not limits.fits(topic, form[1], form[2], form[3]):
        form = after_refusal(form, output, topic, "pages[0]@1")
        assert form is not None, "the smallest form was refused"
        topic = TOPICS.rejected if form[0] == "rejected" else topic
    return form


def test_the_faust_app_leaves_out_big_input_headers_before_stubbing_a_page_as_the_worker_does():
    """A page that fits its topic without its input's headers goes whole without them, in both modes.

    Before: the worker sent the page with `dedup.headers_omitted`, the Faust app its `too_large_for_broker` stub
    (ops review, s86)."""
    from streamdedup.runtime.faust_outputs import render

    limits = RecordLimits(topic_bytes={name: LIMIT for name in TOPICS.outputs}, compression="zstd")
    passed = [("trace", os.urandom(BIG)), ("t", b"1")]
    outputs, producer = _outputs(limits)
    outputs.verdict(dict(RECORD), dict(DEDUP), "pages[0]@1", passed, b"h")
    [worker] = [(headers, value) for topic, _, value, headers in producer.sent if topic == TOPICS.unique]
    [page, *_] = render(dict(DEDUP), b"h", orjson.dumps(RECORD), "pages[0]@1", passed)
    target, _, value, headers = _faust_sends(page, limits)
    assert target == "unique" and headers == worker[0] and orjson.loads(value) == orjson.loads(worker[1] or b"")
    assert ("dedup.headers_omitted", str(BIG + 5 + 2).encode()) in headers
    # a dead letter likewise: its original without the input's headers, not its stub
    rejection = Rejection("no_text", "no text", "pages[0]@1", "p1").as_dict()
    [dead, _] = render(rejection, b"h", orjson.dumps(RECORD), "pages[0]@1", passed)
    target, _, value, headers = _faust_sends(dead, limits)
    assert target == "rejected" and orjson.loads(value)["content"] == RECORD["content"]
    assert ("dedup.headers_omitted", str(BIG + 5 + 2).encode()) in headers
    # a page over the limit by its body goes as its stub, carrying the input's headers up to the bound
    big_page = {**RECORD, "content": os.urandom(LIMIT).hex()}
    [page, *_] = render(dict(DEDUP), b"h", orjson.dumps(big_page), "pages[0]@1", [("t", b"1")])
    target, _, value, headers = _faust_sends(page, limits)
    assert target == "rejected" and dict(headers)["dedup.reason"] == b"too_large_for_broker" and ("t", b"1") in headers
