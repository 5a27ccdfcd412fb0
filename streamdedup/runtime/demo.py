"""`streamdedup demo`: the whole system on one machine, in one command.

Starts the embedded broker, creates the topics, feeds the sample crawl shipped with the package,
runs a worker until every page has a verdict, reads the output topics back and says what
happened and where to look next; then stops everything."""

from __future__ import annotations

import tempfile
import time
from collections import Counter
from pathlib import Path

import orjson
from confluent_kafka import Message

from streamdedup.config import DetectorConfig
from streamdedup.record.readers import read_input
from streamdedup.runtime.broker import EmbeddedBroker
from streamdedup.runtime.feed import feed
from streamdedup.runtime.settings import WorkerSettings
from streamdedup.runtime.topics import ensure_topics
from streamdedup.runtime.worker import Worker


def read_all(settings: WorkerSettings, topic: str, expected: int, timeout_s: float = 60.0) -> list:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer(settings.client(**{"group.id": f"demo-reader-{topic}", "auto.offset.reset": "earliest",
                                           "enable.auto.commit": False, "isolation.level": "read_committed",
                                           "receive.message.max.bytes": 104_857_600}))
    partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
    messages: list[Message] = []
    deadline = time.monotonic() + timeout_s
    try:
        while len(messages) < expected and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                messages.append(message)
    finally:
        consumer.close()
    return messages


def run_demo(crawl: Path, workdir: Path | None, config: DetectorConfig) -> dict:
    base = Path(workdir or tempfile.mkdtemp(prefix="streamdedup-demo-"))
    with EmbeddedBroker(base / "broker") as broker:
        settings = WorkerSettings(bootstrap_servers=broker.bootstrap_servers, state_dir=base / "state",
                                  group_id="streamdedup-demo", worker_id="demo")
        print(f"1/4 broker (noida-db) up on {broker.bootstrap_servers}; topics: {ensure_topics(settings)}")
        sent = feed(read_input(str(crawl)), settings.client(), settings.topics.pages)
        print(f"2/4 fed {sent} pages from {crawl.name} into '{settings.topics.pages}'")
        started = time.monotonic()
        stats = Worker(settings, config).run(idle_timeout_s=15, stop_after=sent)
        elapsed = time.monotonic() - started
        print(f"3/4 worker decided {stats.decided} pages in {elapsed:.1f} s ({stats.decided / elapsed:.1f} pages/s, "
              f"including the group join; {settings.topology} topology)")
        t = settings.topics
        counts = {name: stats.produced.get(topic, 0) for name, topic in
                  (("unique", t.unique), ("duplicates", t.duplicates), ("rejected", t.rejected),
                   ("cluster events", t.clusters))}
        rejected = read_all(settings, t.rejected, counts["rejected"])
        reasons = Counter(dict(m.headers() or [])["dedup.reason"].decode() for m in rejected)
        events = [orjson.loads(m.value()) for m in read_all(settings, t.clusters, counts["cluster events"])]
        kinds = Counter(e["type"] for e in events)
        sizes = Counter(e["cluster_id"] for e in events if e["type"] in ("created", "joined"))
        # the current stories, as `dedup`'s summary counts them: a cluster merged into another counts once
        absorbed = {c for e in events if e["type"] == "merged" for c in e["merged"] if c != e["cluster_id"]}
        summary = {"pages_in": sent, **counts, "rejected_by_reason": dict(reasons),
                   "clusters": kinds.get("created", 0) - len(absorbed), "clusters_created": kinds.get("created", 0),
                   "clusters_with_duplicates": sum(1 for n in sizes.values() if n > 1),
                   "largest_cluster": max(sizes.values(), default=0), "merges": kinds.get("merged", 0),
                   "late_matches": kinds.get("late_match", 0),
                   "pages_per_s": round(stats.decided / elapsed, 1)}
        print("4/4 " + orjson.dumps(summary).decode())
        print(f"Where to look next: the stores are in {settings.state_dir}; run your own broker with "
              "`streamdedup broker`, a worker with `streamdedup worker`, feed pages with `streamdedup feed FILE`, "
              "or the whole system on Apache Kafka with `docker compose up` (README).")
    return summary
