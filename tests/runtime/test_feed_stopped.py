"""`feed` whose producer fails for good names what reached the topic and the record to feed again from.

An operator review: a broker restart cut `feed` off with "Local: Fatal error" and no word of which
records were sent. The producer here is a stand-in (a fatal error cannot be provoked on demand on a
real broker); what is tested is the feed's own bookkeeping."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException

from streamdedup.record.readers import RawRecord
from streamdedup.runtime import feed as feed_module
from streamdedup.runtime.feed import FeedFailed, feed


class FailingProducer:
    """Acknowledges the first `good` records, then fails for good, as librdkafka's idempotent producer can."""

    good = 3

    def __init__(self, _settings: dict) -> None:
        self.pending: list = []
        self.produced = 0

    def produce(self, topic, value=None, key=None, on_delivery=None, headers=None) -> None:
        if self.produced >= self.good + 1:
            raise KafkaException(KafkaError(KafkaError._FATAL, "fatal idempotent producer error"))
        self.produced += 1
        self.pending.append((on_delivery, None if self.produced <= self.good else KafkaError(KafkaError._FATAL)))

    def poll(self, _timeout: float = 0) -> int:
        pending, self.pending = self.pending, []
        for callback, error in pending:
            callback(error, None)
        return len(pending)

    def flush(self, _timeout: float = 0) -> int:
        self.poll()
        return 0


def test_a_producer_that_fails_for_good_names_the_first_record_to_feed_again(monkeypatch):
    monkeypatch.setattr(feed_module, "Producer", FailingProducer)
    records = [RawRecord(f"crawl.jsonl:{i + 1}", data=b'{"url": "https://a.example/%d", "content": "x"}' % i)
               for i in range(10)]
    with pytest.raises(FeedFailed) as stopped:
        feed(records, {}, "pages")
    line = str(stopped.value)
    assert "\n" not in line and "fatal idempotent producer error" in line
    assert "3 of 5 records read were acknowledged by pages" in line
    assert "crawl.jsonl:4 (https://a.example/3) (record 4 of the input): feed again from it" in line
