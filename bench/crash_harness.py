"""Crash harness: stream pages through a real broker and a worker that is killed with SIGKILL at
random moments and restarted, then check against the input that every page came out exactly once
with the verdict of an uninterrupted run, and that the store agrees with the committed offsets.

    python bench/crash_harness.py --pages 20000 --kills 50 [--broker noida|tansu]

Prints one JSON object: pages, kills (and how many landed mid-stream), lost, doubled, verdicts
that differ, store vs committed offset, seconds. Exit status 1 if anything was lost, doubled or
different. (tests/runtime/test_worker.py runs a short version: 3 kills over 123 pages.)
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path

import orjson
from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

from streamdedup.record.readers import RawRecord
from streamdedup.runtime.broker import EmbeddedBroker
from streamdedup.runtime.feed import feed
from streamdedup.runtime.settings import Topics, WorkerSettings
from streamdedup.runtime.topics import ensure_topics
from streamdedup.runtime.worker import offset_key
from streamdedup.testing import make_article, run_records

BAD = [b"{not json", b'{"content": "no url"}', b'{"url": "https://e.example/", "content": ""}']


def pages(count: int, seed: int) -> list:
    """Plain-text articles, each with two edited copies on other sites, and 1 % bad records."""
    rng = random.Random(seed)
    records: list = []
    article = 0
    while len(records) < count:
        paragraphs = make_article(seed * 1_000_003 + article, paragraphs=3, sentences=4)
        for copy in range(3):
            text = "\n\n".join(paragraphs if copy == 0 else paragraphs + [f"Update {rng.randint(1, 999)}."])
            records.append({"url": f"https://site{copy}.example/{article}", "content": text,
                            "content_type": "text/plain", "fetched_at": f"2024-03-01T00:00:{copy:02d}Z"})
        if rng.random() < 0.03:
            records.append(rng.choice(BAD))
        article += 1
    return [r if isinstance(r, bytes) else orjson.dumps(r) for r in records[:count]]


def committed(settings: WorkerSettings, topic: str | None = None, partition: int = 0) -> int:
    consumer = Consumer(settings.client(**{"group.id": settings.group_id, "enable.auto.commit": False}))
    try:
        [tp] = consumer.committed([TopicPartition(topic or settings.topics.pages, partition)], timeout=30)
        return max(tp.offset, 0)
    finally:
        consumer.close()


def store_offsets(settings: WorkerSettings) -> dict[str, tuple[int, int]]:
    """Every partition store under the state directory: (its offset, the group's committed one)."""
    from rocksdict import Options, Rdict

    result = {}
    for path in sorted(p for p in settings.state_dir.iterdir() if (p / "CURRENT").exists()):
        topic, _, partition = path.name.rpartition("-")
        db = Rdict(str(path), options=Options(raw_mode=True))
        try:
            stored = int(db.get(b"M" + offset_key(topic, int(partition)).encode()) or 0)
        finally:
            db.close()
        result[path.name] = (stored, committed(settings, topic, int(partition)))
    return result


def read_all(settings: WorkerSettings, topic: str) -> list:
    consumer = Consumer(settings.client(**{"group.id": f"h-{uuid.uuid4().hex[:6]}", "enable.auto.commit": False,
                                           "isolation.level": "read_committed", "receive.message.max.bytes": 104_857_600}))
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    messages, quiet = [], time.monotonic()
    while time.monotonic() - quiet < 5:
        batch = consumer.consume(1000, 0.5)
        good = [m for m in batch if m.error() is None]
        messages.extend(good)
        if good:
            quiet = time.monotonic()
    consumer.close()
    return messages


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=20_000)
    parser.add_argument("--kills", type=int, default=50)
    parser.add_argument("--broker", default="noida", choices=("noida", "tansu"))
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--topology", default="global", choices=("global", "local"))
    args = parser.parse_args()
    started = time.monotonic()
    rng = random.Random(args.seed)
    work = Path(tempfile.mkdtemp(prefix="crash-harness-"))
    messages = pages(args.pages, args.seed)
    baseline = run_records(messages, work / "baseline")
    expected = {o.dedup["id"]: o.status for o in baseline if o.status != "rejected"}
    bad = sum(1 for o in baseline if o.status == "rejected")
    with EmbeddedBroker(work / "broker", kind=args.broker) as broker:
        run = uuid.uuid4().hex[:6]
        settings = WorkerSettings(bootstrap_servers=broker.bootstrap_servers, group_id=f"crash-{run}", worker_id="w1",
                                  state_dir=work / "state", topology=args.topology,
                                  topics=Topics(**{k: f"{v}-{run}" for k, v in Topics().__dict__.items()}))
        ensure_topics(settings)
        feed([RawRecord(f"h:{i}", data=m) for i, m in enumerate(messages)], settings.client(), settings.topics.pages)
        env = {**os.environ, "STREAMDEDUP_BOOTSTRAP_SERVERS": settings.bootstrap_servers,
               "STREAMDEDUP_GROUP_ID": settings.group_id, "STREAMDEDUP_WORKER_ID": "w1",
               "STREAMDEDUP_STATE_DIR": str(settings.state_dir), "STREAMDEDUP_TOPOLOGY": args.topology,
               **{f"STREAMDEDUP_TOPIC_{k.upper()}": v for k, v in settings.topics.__dict__.items()}}
        command = [sys.executable, "-m", "streamdedup", "worker", "--exit-when-idle", "5"]
        kills, mid_stream, progress = 0, 0, []
        while kills < args.kills:
            before = committed(settings)
            if before >= len(messages):
                break
            batch_size = rng.choice([4, 16, 64, 256])
            process = subprocess.Popen(command, env={**env, "STREAMDEDUP_BATCH_SIZE": str(batch_size)},
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            deadline = time.monotonic() + 60
            while not any(settings.state_dir.glob("*/CURRENT")) and time.monotonic() < deadline \
                    and process.poll() is None:
                time.sleep(0.02)
            time.sleep(rng.uniform(0.1, 1.0))
            process.send_signal(signal.SIGKILL)
            process.wait()
            kills += 1
            after = committed(settings)
            progress.append(after)
            mid_stream += 0 < after < len(messages)
        final = subprocess.run(command, env={**env, "STREAMDEDUP_BATCH_SIZE": "64"}, capture_output=True, timeout=3600)
        outputs = {name: read_all(settings, topic) for name, topic in
                   (("unique", settings.topics.unique), ("duplicates", settings.topics.duplicates),
                    ("rejected", settings.topics.rejected))}
        seen = Counter(orjson.loads(m.value())["dedup"]["id"] for name in ("unique", "duplicates") for m in outputs[name])
        got = {orjson.loads(m.value())["dedup"]["id"]: orjson.loads(m.value())["dedup"]["status"]
               for name in ("unique", "duplicates") for m in outputs[name]}
        last_committed = committed(settings)
        stores = store_offsets(settings)
    result = {
        "pages": len(messages), "bad_records": bad, "kills": kills, "kills_mid_stream": mid_stream,
        "final_run_exit": final.returncode,
        "lost": sum(1 for page_id in expected if page_id not in seen),
        "doubled": sum(1 for n in seen.values() if n > 1),
        "rejected_out": len(outputs["rejected"]), "verdicts_differ": sum(1 for k, v in expected.items() if got.get(k) != v),
        "input_committed_offset": last_committed, "stores_behind_committed": sum(a != b for a, b in stores.values()),
        "stores": len(stores), "seconds": round(time.monotonic() - started, 1), "broker": args.broker,
        "topology": args.topology,
    }
    print(json.dumps(result))
    ok = (result["lost"] == 0 and result["doubled"] == 0 and result["verdicts_differ"] == 0
          and result["rejected_out"] == bad and last_committed == len(messages)
          and result["stores_behind_committed"] == 0)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
