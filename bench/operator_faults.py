"""Operator faults: what happens to a running worker when the broker or a topic changes under it.

    python bench/operator_faults.py SCENARIO [--topology global|local] [--pages 300]

Each scenario starts noida-db (its own data folder), creates the topics, runs `streamdedup worker`
as an operator would (a subprocess, restarted like a supervisor's `restart: unless-stopped` when
it exits), does one thing to the broker or a topic, and then prints one JSON object: records in,
outputs per topic, ids out more than once, ids never out, the worker's exit codes and its
error lines. Scenarios:

- broker-restart: noida-db SIGKILLed 3 times mid-stream, started again 5-20 s later (same data)
- add-partitions: the pages topic goes from 2 to 4 partitions while the worker runs
- delete-output: pages.verdicts (an output) deleted while the worker runs
- delete-internal: pages.parts (global) deleted while the worker runs (--then-restart: then follow the
  refusal's advice, --on-topic-reset restart)
- recreate-input: the pages topic deleted and created again under the running worker, then twice as
  many records as before (--then-restart as above; --fast: created again and fed at once, the case
  still open in docs/runtime.md)
- odd-records: timestamps -1/0/2100, a null value, a 1 MB key, 200 headers
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
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions

sys.path.insert(0, str(Path(__file__).parent))
from crash_harness import pages  # noqa: E402

from streamdedup.runtime.broker import EmbeddedBroker  # noqa: E402
from streamdedup.runtime.settings import Topics, WorkerSettings  # noqa: E402
from streamdedup.runtime.topics import ensure_topics  # noqa: E402

OUTPUTS = ("unique", "duplicates", "rejected")


class Supervised:
    """`streamdedup worker` restarted whenever it exits, until stopped; keeps exit codes and errors."""

    def __init__(self, command: list[str], env: dict[str, str], log: Path) -> None:
        self.command, self.env, self.log = command, env, log
        self.exits: list[int] = []
        self.process: subprocess.Popen[bytes] | None = None

    def poll(self) -> None:
        if self.process is not None and self.process.poll() is not None:
            self.exits.append(self.process.returncode)
            self.process = None
            time.sleep(1.0)
        if self.process is None:
            with open(self.log, "ab") as out:
                self.process = subprocess.Popen(self.command, env=self.env, stdout=out, stderr=subprocess.STDOUT)

    def stop(self) -> None:
        if self.process is not None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(90)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            self.exits.append(self.process.returncode)
            self.process = None

    def errors(self) -> list[str]:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return [line[:300] for line in text.splitlines()
                if "error" in line.lower() or "critical" in line.lower() or "warning" in line.lower()]


def read_outputs(settings: WorkerSettings, topic: str) -> list:
    consumer = Consumer(settings.client(**{"group.id": f"r-{uuid.uuid4().hex[:6]}", "enable.auto.commit": False,
                                           "isolation.level": "read_committed", "enable.partition.eof": True,
                                           "receive.message.max.bytes": 104_857_600}))
    try:
        meta = consumer.list_topics(topic, timeout=10).topics.get(topic)
        if meta is None or meta.error is not None:
            return []
        parts = list(meta.partitions)
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in parts])
        messages, at_end, start = [], set(), time.monotonic()
        while len(at_end) < len(parts) and time.monotonic() - start < 30:
            m = consumer.poll(0.5)
            if m is None:
                continue
            if m.error() is None:
                messages.append(m)
            elif m.error().code() == KafkaError._PARTITION_EOF:
                at_end.add(m.partition())
        return messages
    finally:
        consumer.close()


REASONS: Counter = Counter()


def output_ids(settings: WorkerSettings) -> dict[str, Counter]:
    got: dict[str, Counter] = {}
    REASONS.clear()
    for name in OUTPUTS:
        ids: Counter = Counter()
        for m in read_outputs(settings, getattr(settings.topics, name)):
            if name == "rejected":
                REASONS[dict(m.headers() or []).get("dedup.reason", b"?").decode()] += 1
            try:
                ids[orjson.loads(m.value())["dedup"]["id"]] += 1
            except Exception:  # noqa: BLE001 - a dead letter that is not JSON: its headers
                ids[dict(m.headers() or []).get("dedup.id", b"?").decode()] += 1
        got[name] = ids
    return got


def produce(settings: WorkerSettings, records: list[tuple[bytes | None, bytes | None, list, int | None]],
            topic: str | None = None) -> None:
    producer = Producer(settings.client(**{"enable.idempotence": True, "compression.type": "zstd",
                                           "message.max.bytes": 50_000_000}))
    for key, value, headers, ts in records:
        kwargs = {"timestamp": ts} if ts is not None else {}
        producer.produce(topic or settings.topics.pages, value, key, headers=headers or None, **kwargs)
    assert producer.flush(120) == 0


def keyed(messages: list[bytes]) -> list[tuple[bytes | None, bytes | None, list, int | None]]:
    out = []
    for m in messages:
        try:
            key = orjson.loads(m)["url"].split("/")[2].encode()
        except Exception:  # noqa: BLE001 - a bad record
            key = b"bad"
        out.append((key, m, [], None))
    return out


def wait_for(settings: WorkerSettings, count: int, supervised: Supervised, timeout: float) -> dict[str, Counter]:
    deadline = time.monotonic() + timeout
    got = output_ids(settings)
    while sum(sum(c.values()) for c in got.values()) < count and time.monotonic() < deadline:
        supervised.poll()
        time.sleep(3)
        got = output_ids(settings)
    return got


def summary(got: dict[str, Counter], expected_ids: int, sent: int) -> dict:
    everything: Counter = Counter()
    for counter in got.values():
        everything.update(counter)
    return {"sent": sent, "out": {k: sum(v.values()) for k, v in got.items()},
            "distinct_ids_out": len(everything), "ids_out_twice": sum(1 for v in everything.values() if v > 1),
            "expected_distinct": expected_ids, "rejected_reasons": dict(REASONS)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("scenario", choices=("broker-restart", "add-partitions", "delete-output",
                                             "delete-internal", "recreate-input", "odd-records"))
    parser.add_argument("--topology", default="global", choices=("global", "local"))
    parser.add_argument("--pages", type=int, default=300)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--broker", default="noida", choices=("noida", "tansu"))
    parser.add_argument("--faust", action="store_true", help="run `streamdedup faust` instead of the worker")
    parser.add_argument("--fast", action="store_true",
                        help="recreate-input: create the topic again and feed it at once (the case still open)")
    parser.add_argument("--then-restart", action="store_true",
                        help="delete-*: after the refusal, restart the worker with --on-topic-reset restart")
    parser.add_argument("--keep", action="store_true", help="keep the work folder and print it")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    work = Path(tempfile.mkdtemp(prefix=f"op-{args.scenario}-"))
    broker = EmbeddedBroker(work / "broker", kind=args.broker).start()
    started = time.monotonic()
    try:
        run = uuid.uuid4().hex[:6]
        partitions = 2
        settings = WorkerSettings(bootstrap_servers=broker.bootstrap_servers, group_id=f"op-{run}", worker_id="w1",
                                  state_dir=work / "state", topology=args.topology, partitions=partitions,
                                  topics=Topics(**{k: f"{v}-{run}" for k, v in Topics().__dict__.items()}))
        ensure_topics(settings)
        env = {**os.environ, "STREAMDEDUP_BOOTSTRAP_SERVERS": settings.bootstrap_servers,
               "STREAMDEDUP_GROUP_ID": settings.group_id, "STREAMDEDUP_WORKER_ID": "w1",
               "STREAMDEDUP_STATE_DIR": str(settings.state_dir), "STREAMDEDUP_TOPOLOGY": args.topology,
               "STREAMDEDUP_PARTITIONS": str(partitions), "STREAMDEDUP_BATCH_SIZE": "16",
               **{f"STREAMDEDUP_TOPIC_{k.upper()}": v for k, v in settings.topics.__dict__.items()}}
        command = [sys.executable, "-m", "streamdedup", "worker", "-v"]
        if args.faust:
            command = [sys.executable, "-m", "streamdedup", "faust", "--state-dir", str(settings.state_dir),
                       "--group-id", settings.group_id]
            result_mode = "faust"
        else:
            result_mode = f"worker {args.topology}"
        worker = Supervised(command, env, work / "worker.log")
        messages = pages(args.pages, args.seed)
        expected = len(messages)
        result: dict = {"scenario": args.scenario, "mode": result_mode, "broker": args.broker}
        worker.poll()
        if args.scenario == "broker-restart":
            third = len(messages) // 3
            produce(settings, keyed(messages[:third]))
            downs = []
            for i in range(3):
                time.sleep(rng.uniform(1.0, 3.0))
                os.killpg(broker.process.pid, signal.SIGKILL)
                broker.process.wait()
                down = rng.uniform(5, 20)
                downs.append(round(down, 1))
                deadline = time.monotonic() + down
                while time.monotonic() < deadline:
                    worker.poll()
                    time.sleep(0.5)
                broker.start()
                if i < 2:
                    produce(settings, keyed(messages[third * (i + 1):third * (i + 2)]))
            produce(settings, keyed(messages[third * 3:]))
            result["down_s"] = downs
        elif args.scenario == "add-partitions":
            half = len(messages) // 2
            produce(settings, keyed(messages[:half]))
            time.sleep(5)
            admin = AdminClient(settings.client())
            for future in admin.create_partitions([NewPartitions(settings.topics.pages, 4)]).values():
                future.result(30)
            time.sleep(2)
            produce(settings, keyed(messages[half:]))
        elif args.scenario in ("delete-output", "delete-internal"):
            half = len(messages) // 2
            produce(settings, keyed(messages[:half]))
            wait_for(settings, half, worker, 120)
            victim = settings.topics.verdicts if args.scenario == "delete-output" else settings.topics.parts
            admin = AdminClient(settings.client())
            for future in admin.delete_topics([victim], operation_timeout=10).values():
                future.result(30)
            result["deleted"] = victim
            time.sleep(1)
            produce(settings, keyed(messages[half:]))
            if args.then_restart:  # the operator follows the refusal's line: --on-topic-reset restart
                wait_for(settings, expected, worker, 30)
                result["exits_before_restart_setting"] = list(worker.exits)
                worker.env = {**env, "STREAMDEDUP_ON_TOPIC_RESET": "restart"}
        elif args.scenario == "recreate-input":
            first = len(messages) // 3
            produce(settings, keyed(messages[:first]))
            wait_for(settings, first, worker, 120)
            admin = AdminClient(settings.client())
            for future in admin.delete_topics([settings.topics.pages], operation_timeout=10).values():
                future.result(30)
            while settings.topics.pages in admin.list_topics(timeout=10).topics:
                time.sleep(0.2)
            if not args.fast:
                time.sleep(3)
            ensure_topics(settings)
            produce(settings, keyed(messages[first:]))
            if args.then_restart:
                wait_for(settings, expected, worker, 30)
                result["exits_before_restart_setting"] = list(worker.exits)
                worker.env = {**env, "STREAMDEDUP_ON_TOPIC_RESET": "restart"}
        elif args.scenario == "odd-records":
            page = {k: v for k, v in orjson.loads(messages[0]).items() if k != "fetched_at"}
            odd = []
            for n, ts in enumerate((-1, 0, 4_102_444_800_000)):  # -1 means "none" to librdkafka: sent as now
                odd.append((b"odd", orjson.dumps({**page, "url": f"https://odd{n}.example/t"}), [], ts))
            odd.append((b"odd", None, [], None))  # a null value (a tombstone)
            odd.append((os.urandom(1_000_000), orjson.dumps({**page, "url": "https://odd.example/key"}), [], None))
            odd.append((b"odd", orjson.dumps({**page, "url": "https://odd.example/headers"}),
                        [(f"h{i}", os.urandom(64)) for i in range(200)], None))
            produce(settings, keyed(messages[:20]) + odd + keyed(messages[20:40]))
            expected = 40 + len(odd)
        got = wait_for(settings, expected, worker, 240)
        time.sleep(5)
        worker.poll()
        got = output_ids(settings)
        worker.stop()
        result.update(summary(got, expected, expected))
        result.update(worker_exits=worker.exits, worker_lines=worker.errors()[-12:],
                      seconds=round(time.monotonic() - started, 1))
        if args.keep:
            result["work"] = str(work)
        print(json.dumps(result, indent=1))
    finally:
        broker.stop()


if __name__ == "__main__":
    main()
