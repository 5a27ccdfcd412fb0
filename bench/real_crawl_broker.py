"""Real pages through a real broker: does every page come out, once? (issue 11's crawl check)

    python bench/real_crawl_broker.py [--broker noida|tansu] [--pages ../shared/data/trafilatura-test-pages.tar.gz ...]

Every HTML page of the archives (the trafilatura test pages hold CNN and CNBC articles of
1.0-1.6 MB) becomes a JSON page (url, content, fetch time), is fed with `streamdedup feed`'s
producer to an embedded broker, and judged by one worker (the default global topology). Then the
output topics are read back (read_committed) and every input id is looked for: prints JSON with
pages in, outputs by topic, ids missing and ids seen twice, the largest page, seconds.
"""

from __future__ import annotations

import argparse
import json
import tarfile
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path

import orjson
from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

from streamdedup.config import DetectorConfig
from streamdedup.record.readers import RawRecord
from streamdedup.runtime.broker import EmbeddedBroker
from streamdedup.runtime.feed import feed
from streamdedup.runtime.settings import Topics, WorkerSettings
from streamdedup.runtime.topics import ensure_topics
from streamdedup.runtime.worker import Worker

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"


def crawl(archives: list[Path]) -> list[dict]:
    """One record per HTML file, with the url its annotations give (else one made from its name)."""
    pages = []
    for archive in archives:
        with tarfile.open(archive) as tar:
            members = [m for m in tar.getmembers() if m.isfile()]
            notes: dict = {}
            for m in members:
                if m.name.endswith("expected.json"):
                    notes = json.loads(tar.extractfile(m).read())  # type: ignore[union-attr]
            for i, m in enumerate(sorted((m for m in members if m.name.endswith((".html", ".htm"))),
                                         key=lambda m: m.name)):
                name = Path(m.name).name
                html = tar.extractfile(m).read().decode("utf-8", "replace")  # type: ignore[union-attr]
                url = (notes.get(name) or {}).get("url") or f"https://{archive.stem}.example/{name}"
                pages.append({"id": f"{archive.stem}/{m.name}", "url": url, "content": html,
                              "fetched_at": f"2024-03-{1 + i // 1440:02d}T{i // 60 % 24:02d}:{i % 60:02d}:00Z"})
    return pages


def read_ids(settings: WorkerSettings, topics: list[str]) -> Counter[str]:
    consumer = Consumer(settings.client(**{"group.id": f"check-{uuid.uuid4().hex[:6]}",
                                           "isolation.level": "read_committed", "enable.auto.commit": False,
                                           "fetch.max.bytes": 64 << 20, "max.partition.fetch.bytes": 64 << 20,
                                           "receive.message.max.bytes": 128 << 20}))
    ids: Counter[str] = Counter()
    try:
        consumer.assign([TopicPartition(t, p, OFFSET_BEGINNING) for t in topics
                         for p in consumer.list_topics(t, timeout=10).topics[t].partitions])
        quiet = time.monotonic()
        while time.monotonic() - quiet < 5:
            message = consumer.poll(0.5)
            if message is None or message.error() is not None:
                continue
            quiet = time.monotonic()
            value = orjson.loads(message.value())
            ids[str(value.get("id") or value.get("dedup", {}).get("id"))] += 1
    finally:
        consumer.close()
    return ids


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pages", type=Path, nargs="+", default=[SHARED / "trafilatura-test-pages.tar.gz",
                                                                   SHARED / "readability-test-pages.tar.gz"])
    parser.add_argument("--broker", choices=("noida", "tansu"), default="noida")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    records = crawl(args.pages)
    with tempfile.TemporaryDirectory() as tmp, EmbeddedBroker(Path(tmp) / "broker", kind=args.broker) as broker:
        settings = WorkerSettings(bootstrap_servers=broker.bootstrap_servers, state_dir=Path(tmp) / "state",
                                  group_id="crawl-check", worker_id="w1", topics=Topics())
        ensure_topics(settings)
        started = time.monotonic()
        sent = feed([RawRecord(f"crawl:{i}", data=orjson.dumps(r)) for i, r in enumerate(records)],
                    settings.client(), settings.topics.pages)
        stats = Worker(settings, DetectorConfig()).run(idle_timeout_s=20, stop_after=sent)
        elapsed = time.monotonic() - started
        t = settings.topics
        # rejected dead letters carry the original JSON (with its id) or a stub with the id
        ids = read_ids(settings, [t.unique, t.duplicates, t.rejected])
    wanted = {r["id"] for r in records}
    report = {"broker": args.broker, "pages_in": len(records), "fed": sent, "decided": stats.decided,
              "outputs_by_topic": dict(stats.produced), "refused": stats.refused,
              "missing": sorted(wanted - set(ids))[:20], "missing_count": len(wanted - set(ids)),
              "doubled": sorted(i for i, n in ids.items() if n > 1)[:20],
              "largest_page_bytes": max(len(r["content"].encode()) for r in records),
              "pages_over_1mb": sum(len(r["content"].encode()) > 1_000_000 for r in records),
              "seconds": round(elapsed, 1)}
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
