"""A dead letter's value carries our `dedup`, never the sender's: in Kafka as in rejected.jsonl."""

from __future__ import annotations

from typing import Any, cast

import orjson

from streamdedup.outputs.files import output_line
from streamdedup.outputs.kafka import Outputs, WorkerStats
from streamdedup.outputs.kafka_contract import Topics
from streamdedup.outputs.record_size import RecordLimits
from streamdedup.testing import run_records
from streamdedup.verdict.contract import Verdict

FORGED = {"status": "duplicate", "duplicate_of": "victim"}


class Sent:
    """A producer that keeps what it is given."""

    def __init__(self) -> None:
        self.messages: list[tuple[str, bytes | None, bytes | None, list]] = []

    def produce(self, topic: str, value: bytes | None = None, key: bytes | None = None, on_delivery: Any = None,
                headers: list | None = None) -> None:
        self.messages.append((topic, key, value, headers or []))

    def poll(self, _: float) -> int:
        return 0

    def on(self, topic: str) -> list[dict]:
        return [orjson.loads(value or b"") for name, _, value, _ in self.messages if name == topic]


def outputs(limits: RecordLimits | None = None) -> tuple[Outputs, Sent]:
    sent = Sent()
    return Outputs(cast(Any, sent), Topics(), cast(Any, None), WorkerStats(), limits), sent


def test_a_rejected_object_with_its_own_dedup_carries_ours_as_rejected_jsonl_does(tmp_path):
    """Before (an operator review): `{"url": ..., "dedup": {"status": "duplicate", ...}}` without content went to
    pages.rejected with the sender's `dedup` in its value (its headers said rejected); rejected.jsonl had ours."""
    record = {"url": "https://a.example/1", "dedup": FORGED}
    [outcome] = run_records([record], tmp_path / "state")
    in_file = orjson.loads(output_line(outcome))["dedup"]
    assert in_file["status"] == "rejected" and in_file["reason"] == "missing_content"
    out, sent = outputs()
    out.rejected(b"k", orjson.dumps(record), "missing_content", "no content field", "pages[0]@3")
    [value] = sent.on(Topics().rejected)
    assert value == {"url": "https://a.example/1", "dedup": {"status": "rejected", "reason": "missing_content",
                                                             "detail": "no content field", "origin": "pages[0]@3"}}
    assert value["dedup"].keys() == in_file.keys()  # the same fields as the file's (origin: where it came from)


def test_the_stub_of_a_verdict_too_large_for_the_broker_keeps_the_verdict():
    """The one dead letter whose `dedup` is not the rejection: the page's verdict, in our own stub."""
    out, sent = outputs(RecordLimits(topic_bytes={Topics().unique: 1500}))
    verdict = Verdict("p1", "unique", "p1").as_dict()
    out.verdict({"url": "https://a.example/1", "content": "x" * 5000}, verdict, "pages[0]@4")
    [stub] = sent.on(Topics().rejected)
    assert stub["dedup"] == verdict and stub["topic"] == Topics().unique and stub["id"] == "p1"
