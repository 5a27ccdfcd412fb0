"""The Faust app's store rebuild per 1,000 pages, and how soon the app reads a partition added to its pages topic.

    python bench/faust_rebuild.py [--pages 1000]          # rebuild vs judging the same records one by one
    python bench/faust_rebuild.py --added-partition        # seconds from a new partition's record to its output

Rebuild: N generated news pages (every third re-publishes an earlier article on another site, as in
bench/e2e.py) are sent to a pages topic of a local noida-db; then, into fresh stores, (a) what the
app does per record minus the send (`JournalKeeper.outputs`, one record a WriteBatch) and (b) the
rebuild of a lost store (`faust_rebuild.rebuild`: read from the topic, decided in batches of the
worker's `batch_size`, journaled, nothing sent). Both after a 30-page warm-up (numba's kernels).

Added partition: `streamdedup faust` (this checkout's, as a subprocess) judges one page of a
one-partition topic, a second partition is created, a page is sent to it; the time from that send
until its output is on the unique topic (`--log FILE`: the app's log at INFO).

Figures (2-core machine shared with a CI run): rebuild 7.18 s (2.77 CPU-s) per 1,000 pages, judged
one by one 7.97 s (3.58 CPU-s); an added partition's first record out after 8.7-9.3 s.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import orjson
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions

from streamdedup.config import DetectorConfig
from streamdedup.detector import Detector
from streamdedup.record.readers import RawRecord
from streamdedup.runtime.broker import EmbeddedBroker
from streamdedup.runtime.faust_app import JournalKeeper
from streamdedup.runtime.faust_rebuild import range_consumer, read_range, rebuild
from streamdedup.runtime.feed import feed
from streamdedup.runtime.settings import Topics, WorkerSettings
from streamdedup.runtime.topics import ensure_topics
from streamdedup.testing import make_article, wrap_in_template


def records(count: int, start: int = 0) -> list[RawRecord]:
    """JSON records of generated news pages; every third re-publishes the article before it on another site."""
    out = []
    for i in range(start, start + count):
        seed = i - 1 if i % 3 == 2 else i
        html = wrap_in_template(make_article(seed, paragraphs=12, sentences=6), f"site{i % 7}.example",
                                title=f"Story {seed}")
        out.append(RawRecord(f"bench:{i}", data=orjson.dumps({"url": f"https://site{i % 7}.example/{i}",
                                                              "content": html, "fetched_at": "2024-03-01T00:00:00Z"})))
    return out


def settings_for(broker: EmbeddedBroker, state: Path) -> WorkerSettings:
    run = uuid.uuid4().hex[:8]
    topics = Topics(pages=f"pages-{run}", unique=f"unique-{run}", duplicates=f"dups-{run}", rejected=f"rejected-{run}",
                    clusters=f"clusters-{run}", verdicts=f"verdicts-{run}", cluster_view=f"view-{run}",
                    index=f"index-{run}", parts=f"parts-{run}")
    return WorkerSettings(bootstrap_servers=broker.bootstrap_servers, group_id=f"g-{run}", worker_id="w1",
                          state_dir=state, topics=topics)


def measure_rebuild(pages: int, work: Path) -> dict:
    with EmbeddedBroker(work / "broker") as broker:
        settings = settings_for(broker, work / "state")
        ensure_topics(settings)
        feed(records(30, start=10**6) + records(pages), settings.client(), settings.topics.pages)
        topic = settings.topics.pages
        consumer = range_consumer(settings, settings.group_id)
        messages = [m for batch in read_range(consumer, topic, 0, 0, 30 + pages, 64, 60) for m in batch]
        consumer.close()
        config = DetectorConfig()
        with Detector(config, work / "one-by-one") as detector:
            keeper = JournalKeeper(detector, topic, 0)
            for m in messages[:30]:  # warm-up
                keeper.outputs(m.offset(), m.key(), m.value(), m.timestamp()[1])
            started, cpu = time.perf_counter(), time.process_time()
            for m in messages[30:]:
                keeper.outputs(m.offset(), m.key(), m.value(), m.timestamp()[1])
            one_by_one = (time.perf_counter() - started, time.process_time() - cpu)
            statuses = [detector.store.get_journal(f"{topic}:0@{o:020d}") is not None for o in range(30 + pages)]
        with Detector(config, work / "rebuilt") as detector:
            keeper = JournalKeeper(detector, topic, 0)
            rebuild(keeper, settings, settings.group_id, 30, new_store=True)  # warm-up
            started, cpu = time.perf_counter(), time.process_time()
            done = rebuild(keeper, settings, settings.group_id, 30 + pages, new_store=False)
            rebuilt = (time.perf_counter() - started, time.process_time() - cpu)
            assert done is not None and done.records == pages and all(statuses)
    per_1000 = 1000 / pages
    return {"pages": pages, "batch_size": settings.batch_size,
            "rebuild_s_per_1000": round(rebuilt[0] * per_1000, 2), "rebuild_cpu_s_per_1000": round(rebuilt[1] * per_1000, 2),
            "judged_one_by_one_s_per_1000": round(one_by_one[0] * per_1000, 2),
            "judged_one_by_one_cpu_s_per_1000": round(one_by_one[1] * per_1000, 2)}


def wait_output(settings: WorkerSettings, url: str, timeout_s: float) -> float | None:
    """When (time.monotonic) the page with `url` was read from the unique topic, or None."""
    consumer = Consumer(settings.client(**{"group.id": f"r-{uuid.uuid4().hex[:6]}", "enable.auto.commit": False}))
    consumer.assign([TopicPartition(settings.topics.unique, p, OFFSET_BEGINNING) for p in range(3)])
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is not None and message.error() is None and orjson.loads(message.value())["url"] == url:
                return time.monotonic()
    finally:
        consumer.close()
    return None


def measure_added_partition(work: Path, timeout_s: float, log_to: Path | None = None) -> dict:
    with EmbeddedBroker(work / "broker") as broker:
        settings = settings_for(broker, work / "state")
        ensure_topics(settings)
        [first, second] = records(2)
        feed([first], settings.client(), settings.topics.pages)
        env = {**os.environ, "STREAMDEDUP_BOOTSTRAP_SERVERS": settings.bootstrap_servers,
               "PYTHONPATH": str(Path(__file__).resolve().parents[1]),
               **{f"STREAMDEDUP_TOPIC_{k.upper()}": v for k, v in settings.topics.__dict__.items()}}
        (work / "cwd").mkdir()
        with open(work / "faust.log", "wb") as log:
            app = subprocess.Popen([sys.executable, "-m", "streamdedup", *(["-v"] if log_to else []), "faust",
                                    "--state-dir", str(work / "fs"),
                                    "--group-id", settings.group_id], env=env, stdout=subprocess.DEVNULL, stderr=log,
                                   cwd=work / "cwd")
        try:
            assert wait_output(settings, orjson.loads(first.data)["url"], 120) is not None
            admin = AdminClient(settings.client())
            admin.create_partitions([NewPartitions(settings.topics.pages, 2)])[settings.topics.pages].result(30)
            producer = Producer(settings.client())
            producer.produce(settings.topics.pages, second.data, partition=1)
            producer.flush(30)
            sent = time.monotonic()
            out = wait_output(settings, orjson.loads(second.data)["url"], timeout_s)
        finally:
            app.terminate()
            app.wait(timeout=60)
            if log_to is not None:
                log_to.write_bytes((work / "faust.log").read_bytes())
    return {"seconds_to_output": None if out is None else round(out - sent, 1), "timeout_s": timeout_s}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=1000)
    parser.add_argument("--added-partition", action="store_true")
    parser.add_argument("--timeout", type=float, default=400)
    parser.add_argument("--log", type=Path, help="the app's log (at INFO) to this file")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        result = (measure_added_partition(Path(tmp), args.timeout, args.log) if args.added_partition
                  else measure_rebuild(args.pages, Path(tmp)))
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
