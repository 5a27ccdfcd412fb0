"""What the worker writes to Kafka: verdicts, dead letters and cluster events, with their
headers and metrics, whichever stage decided them."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import orjson
from confluent_kafka import Producer

from streamdedup.runtime.metrics import WorkerMetrics
from streamdedup.runtime.settings import Topics


@dataclass
class WorkerStats:
    consumed: int = 0  # messages of every topic the worker reads
    decided: int = 0  # pages given their final outcome (verdict or rejection)
    produced: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    replayed: int = 0
    batches: int = 0
    aborted: int = 0


class Outputs:
    def __init__(self, producer: Producer, topics: Topics, metrics: WorkerMetrics, stats: WorkerStats) -> None:
        self.producer = producer
        self.topics = topics
        self.metrics = metrics
        self.stats = stats

    def send(self, topic: str, key: bytes | None, value: bytes | None,
             headers: list[tuple[str, bytes]] | None = None, partition: int | None = None) -> None:
        kwargs: dict[str, Any] = {} if partition is None else {"partition": partition}
        while True:
            try:
                self.producer.produce(topic, value=value, key=key, headers=headers or [], **kwargs)
                break
            except BufferError:
                self.producer.poll(0.1)
        self.producer.poll(0)
        self.stats.produced[topic] += 1

    def rejected(self, key: bytes | None, original: bytes | None, reason: str, detail: str, source: str) -> None:
        """Dead letter: the original bytes, the reason in headers."""
        headers = [("dedup.status", b"rejected"), ("dedup.reason", reason.encode()),
                   ("dedup.detail", detail[:1000].encode()), ("dedup.source", source.encode())]
        self.send(self.topics.rejected, key, original, headers)
        self.metrics.pages.labels("rejected").inc()
        self.metrics.rejected.labels(reason).inc()
        self.stats.decided += 1

    def verdict(self, record: dict[str, Any], dedup: dict[str, Any]) -> None:
        """A unique or duplicate page: the record with its `dedup` object, and cluster events."""
        status = dedup["status"]
        headers = [("dedup.status", status.encode()), ("dedup.cluster_id", dedup["cluster_id"].encode()),
                   ("dedup.duplicate_of", (dedup["duplicate_of"] or "").encode()),
                   ("dedup.method", (dedup["method"] or "").encode())]
        target = self.topics.unique if status == "unique" else self.topics.duplicates
        self.send(target, dedup["id"].encode(), orjson.dumps({**record, "dedup": dedup}), headers)
        self.metrics.pages.labels(status).inc()
        self.stats.decided += 1
        for event in cluster_events(dedup):
            self.cluster_event(event)

    def cluster_event(self, event: dict[str, Any]) -> None:
        self.send(self.topics.clusters, event["cluster_id"].encode(), orjson.dumps(event))


def cluster_events(dedup: dict[str, Any]) -> list[dict[str, Any]]:
    """For the news-clustering feed: a cluster was created, a page joined one, clusters merged."""
    base = {"page_id": dedup["id"], "cluster_id": dedup["cluster_id"]}
    if dedup["status"] == "unique":
        events = [{"type": "created", **base}]
    else:
        events = [{"type": "joined", **base, "duplicate_of": dedup["duplicate_of"],
                   "similarity": dedup["similarity"], "method": dedup["method"]}]
    if dedup.get("merged_clusters"):
        events.append({"type": "merged", **base, "merged": dedup["merged_clusters"]})
    return events
