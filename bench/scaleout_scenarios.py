"""Scale-out scenarios on a real noida-db: `streamdedup worker` processes joining, leaving, SIGKILLed, restarted.

    python bench/scaleout_scenarios.py join-leave --topology global --strategy range --file-mode
    python bench/scaleout_scenarios.py kill-restart --topology local --static
    python bench/scaleout_scenarios.py kill-noreturn --env STREAMDEDUP_MAX_POLL_INTERVAL_S=20
    python bench/scaleout_scenarios.py kill-restart --faust --static --stories 160 --file-mode

Scenarios: join-leave (two workers, a third joins, the first leaves), kill-restart (two workers, six
SIGKILLs, each started again), kill-noreturn (three workers, one SIGKILLed for good, a fourth joins),
churn / churn-term (members join and leave every chunk; SIGKILL or SIGTERM / SIGTERM only), grow (the
pages topic doubles its partitions mid-stream), grow-join (the same, then a join and a leave),
before-topic (workers started before the topics exist), broker-restart (noida-db stopped and started
again on its port and data). `--faust` runs `streamdedup faust` apps instead of workers (the app is per
input partition, so `--file-mode` then runs file mode on each input partition's records). Pages of generated stories on up to four of eight sites, keyed by site,
plus bad records; each has an id. Prints one JSON line: inputs, outputs read committed from the
unique, duplicates and rejected topics, ids missing and doubled (`copies`: how many ids came out how many
times; a Faust app's repeats are checked byte for byte, `repeats_unequal`), and with `--file-mode` the statuses
and `duplicate_of` that differ from `streamdedup dedup` on the same records. A worker that exits 75
(the watchdog) is started again, as a supervisor would. Written for the scale-out review of
2026-12-07 (docs/limitations.md, "Running on Kafka and Faust").
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

WT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(WT))
from streamdedup.runtime.broker import EmbeddedBroker  # noqa: E402
from streamdedup.testing import make_article, wrap_in_template  # noqa: E402

PY = sys.executable
SITES = ("Alpha", "Beta", "Gamma", "Delta", "Epsilon", "Zeta", "Eta", "Theta")


def crawl(stories: int, seed: int = 0) -> list[dict]:
    rng = random.Random(seed)
    records = []
    n = 0
    for i in range(stories):
        story = make_article(5000 + i, paragraphs=4)
        for j, site in enumerate(rng.sample(SITES, 1 + i % 4)):
            text = story if j < 2 else story[:-1] + [story[-1] + " Updated with a correction."]
            minute = n
            n += 1
            records.append({"id": f"p{n:05d}", "url": f"https://{site.lower()}.example/{i}",
                            "content": wrap_in_template(text, site),
                            "fetched_at": f"2024-03-01T{minute // 60 % 24:02d}:{minute % 60:02d}:{n % 60:02d}Z"})
    # a few bad records with ids, to count the dead letters
    for k in range(max(1, stories // 20)):
        n += 1
        records.append({"id": f"p{n:05d}", "url": f"https://bad.example/{k}", "content": ""})
    return records


def site_key(record: dict) -> bytes:
    return record["url"].split("/")[2].encode()


class Run:
    def __init__(self, args):
        self.args = args
        self.dir = Path(args.dir) / f"{args.scenario}-{args.topology}-{args.strategy}-{uuid.uuid4().hex[:4]}"
        self.dir.mkdir(parents=True)
        self.broker = EmbeddedBroker(self.dir / "broker", port=args.port or None)
        self.procs: dict[str, subprocess.Popen] = {}
        self.stopped: set[str] = set()
        self.logs: dict[str, list[Path]] = {}
        self.run_id = uuid.uuid4().hex[:6]
        self.env = {**os.environ, "PYTHONPATH": str(WT),
                    "STREAMDEDUP_GROUP_ID": f"g-{self.run_id}", "STREAMDEDUP_PARTITIONS": str(args.partitions),
                    "STREAMDEDUP_ASSIGNMENT_STRATEGY": args.strategy,
                    "STREAMDEDUP_STATIC_MEMBERSHIP": "true" if args.static else "false",
                    "STREAMDEDUP_BATCH_SIZE": str(args.batch_size), "STREAMDEDUP_TOPOLOGY": args.topology,
                    "STREAMDEDUP_VERDICT_WAIT_S": str(args.wait)}
        for name in ("PAGES", "UNIQUE", "DUPLICATES", "REJECTED", "CLUSTERS", "INDEX", "PARTS", "VERDICTS",
                     "CLUSTER_VIEW"):
            self.env[f"STREAMDEDUP_TOPIC_{name}"] = f"{name.lower()}-{self.run_id}"
        self.topics = {k: self.env[f"STREAMDEDUP_TOPIC_{k}"] for k in ("PAGES", "UNIQUE", "DUPLICATES", "REJECTED")}

    @property
    def bootstrap(self) -> str:
        return self.broker.bootstrap_servers

    def start_broker(self):
        self.broker.start()
        self.env["STREAMDEDUP_BOOTSTRAP_SERVERS"] = self.bootstrap

    def create_topics(self):
        subprocess.run([PY, "-m", "streamdedup", "topics", "create"], env=self.env, check=True, cwd=WT)

    def worker(self, name: str):
        log = self.dir / f"{name}-{len(self.logs.get(name, []))}.log"
        self.logs.setdefault(name, []).append(log)
        cmd = [PY, "-m", "streamdedup", "-v", "worker", "--state", str(self.dir / f"state-{name}"),
               "--worker-id", name]
        if self.args.faust:  # Faust's own files go under its state; its group as the workers' would be
            cmd[4] = "faust"
            cmd += ["--group-id", self.env["STREAMDEDUP_GROUP_ID"]]
        self.stopped.discard(name)
        self.procs[name] = subprocess.Popen(cmd, env=self.env, cwd=WT, stdout=open(log, "wb"),
                                            stderr=subprocess.STDOUT, start_new_session=True)
        print(f"  [{self.t():6.1f}] start {name} pid {self.procs[name].pid}", flush=True)

    def wait_assigned(self, name: str, timeout: float = 60):
        log = self.logs[name][-1]
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if b'"assigned ' in log.read_bytes() or b"assigned " in log.read_bytes():
                print(f"  [{self.t():6.1f}] {name} assigned", flush=True)
                return True
            time.sleep(0.2)
        print(f"  [{self.t():6.1f}] {name} NOT assigned in {timeout}s", flush=True)
        return False

    def kill(self, name: str, sig=signal.SIGKILL):
        p = self.procs[name]
        self.stopped.add(name)
        if p.poll() is None:
            os.kill(p.pid, sig)
            p.wait(timeout=120)
        print(f"  [{self.t():6.1f}] {signal.Signals(sig).name} {name} rc={p.returncode}", flush=True)

    def t(self) -> float:
        return time.monotonic() - self.t0

    def send(self, records: list[dict], rate: float | None = None):
        prod = Producer({"bootstrap.servers": self.bootstrap, "enable.idempotence": True, "linger.ms": 5})
        start = time.monotonic()
        for k, r in enumerate(records):
            prod.produce(self.topics["PAGES"], orjson.dumps(r), key=site_key(r))
            prod.poll(0)
            if rate:
                ahead = (k + 1) / rate - (time.monotonic() - start)
                if ahead > 0:
                    time.sleep(ahead)
        assert prod.flush(60) == 0

    def read(self, topic: str, isolation="read_committed") -> list:
        c = Consumer({"bootstrap.servers": self.bootstrap, "group.id": f"r-{uuid.uuid4().hex[:6]}",
                      "enable.auto.commit": False, "isolation.level": isolation, "enable.partition.eof": True,
                      "receive.message.max.bytes": 104857600})
        parts = c.list_topics(topic, timeout=10).topics[topic].partitions
        c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in parts])
        out, eof = [], set()
        deadline = time.monotonic() + 60
        while len(eof) < len(parts) and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF:
                    eof.add(m.partition())
                continue
            eof.discard(m.partition())
            out.append(m)
        c.close()
        return out

    def counts(self) -> tuple[Counter, dict]:
        per_id: Counter = Counter()
        status: dict = {}
        self.forms: dict = {}  # id -> the distinct (topic, value) it came out as
        for kind in ("UNIQUE", "DUPLICATES", "REJECTED"):
            for m in self.read(self.topics[kind]):
                v = orjson.loads(m.value())
                pid = v.get("dedup", {}).get("id") or v.get("id")
                per_id[pid] += 1
                status[pid] = (kind.lower(), v.get("dedup", {}).get("duplicate_of"))
                self.forms.setdefault(pid, set()).add((kind, m.value()))
        return per_id, status

    def input_partitions(self) -> dict[int, list[dict]]:
        """The records of each pages partition, in offset order (as fed, keyed by site)."""
        parts: dict[int, list] = {}
        for m in self.read(self.topics["PAGES"]):
            parts.setdefault(m.partition(), []).append((m.offset(), orjson.loads(m.value())))
        return {p: [r for _, r in sorted(lst, key=lambda x: x[0])] for p, lst in parts.items()}

    def decided(self) -> int:
        """How many input ids came out at least once (a repeat does not stand in for a page still missing)."""
        return len(self.counts()[0])

    def supervise(self):
        for name, p in list(self.procs.items()):
            if p.poll() is not None and p.returncode == 75 and name not in self.stopped:
                print(f"  [{self.t():6.1f}] {name} exited 75: restarting", flush=True)
                self.worker(name)

    def wait_all(self, n: int, timeout: float) -> int:
        deadline = time.monotonic() + timeout
        got = 0
        while time.monotonic() < deadline:
            self.supervise()
            got = self.decided()
            if got >= n:
                break
            time.sleep(2)
        return got

    def stop_all(self):
        for p in self.procs.values():
            if p.poll() is None:
                os.kill(p.pid, signal.SIGTERM)
        for p in self.procs.values():
            try:
                p.wait(timeout=90)
            except subprocess.TimeoutExpired:
                os.kill(p.pid, signal.SIGKILL)
                p.wait()

    def report(self, records: list[dict], file_status: dict | None):
        per_id, status = self.counts()
        ids = [r["id"] for r in records]
        missing = [i for i in ids if per_id[i] == 0]
        doubled = {i: c for i, c in per_id.items() if c > 1}
        extra = [i for i in per_id if i not in set(ids)]
        diff = []
        if file_status:
            for i in ids:
                if i in status and file_status.get(i) and status[i][0] != file_status[i][0]:
                    diff.append((i, status[i], file_status[i]))
        dupof = sum(1 for i in ids if file_status and i in status and file_status.get(i)
                    and status[i][0] == file_status[i][0] and status[i][1] != file_status[i][1])
        res = {"dupof_diff": dupof, "scenario": self.args.scenario, "topology": self.args.topology, "strategy": self.args.strategy,
               "inputs": len(ids), "outputs": sum(per_id.values()), "missing": len(missing),
               "doubled": len(doubled), "copies": dict(sorted(Counter(per_id.values()).items())),
               "repeats_unequal": sum(1 for i in doubled if len(self.forms[i]) > 1),
               "extra": len(extra), "status_diff": len(diff),
               "missing_ids": missing[:10], "doubled_ids": list(doubled)[:10], "diff": diff[:5],
               "dir": str(self.dir)}
        print(json.dumps(res), flush=True)
        print("  exit codes:", {n: p.returncode for n, p in self.procs.items()})
        for logs in self.logs.values():
            for log in logs:
                text = log.read_text(errors="replace")
                bad = [line for line in text.splitlines() if any(w in line for w in (
                    "Traceback", "KeyError", "ERROR", "CRITICAL", "error:"))]
                if bad:
                    print(f"  {log.name}: {len(bad)} bad lines, first: {bad[0][:300]}")
        return res


def file_mode(records: list[dict], work: Path) -> dict:
    work.mkdir(parents=True, exist_ok=True)
    src = work / "crawl.jsonl"
    with open(src, "wb") as f:
        for r in records:
            f.write(orjson.dumps(r) + b"\n")
    out = work / "file-out"
    subprocess.run([PY, "-m", "streamdedup", "dedup", str(src), "--out", str(out)], check=True, cwd=WT,
                   env={**os.environ, "PYTHONPATH": str(WT)}, stdout=subprocess.DEVNULL)
    status = {}
    for kind in ("unique", "duplicates", "rejected"):
        for line in open(out / f"{kind}.jsonl", "rb"):
            v = orjson.loads(line)
            pid = v.get("dedup", {}).get("id") or v.get("id")
            status[pid] = (kind, v.get("dedup", {}).get("duplicate_of"))
    return status


def scenario(run: Run, records: list[dict]):
    a = run.args
    s = a.scenario
    n = len(records)
    third = n // 3
    if s == "join-leave":  # w0,w1 start; w2 joins mid-stream; w0 leaves (SIGTERM) mid-stream
        run.worker("w0")
        run.worker("w1")
        run.wait_assigned("w0")
        run.send(records[:third], rate=a.rate)
        run.worker("w2")
        run.send(records[third:2 * third], rate=a.rate)
        run.wait_assigned("w2")
        run.kill("w0", signal.SIGTERM)
        run.send(records[2 * third:], rate=a.rate)
    elif s == "kill-restart":  # 2 workers, each SIGKILLed mid-stream and restarted
        run.worker("w0")
        run.worker("w1")
        chunks = [records[k * n // 6:(k + 1) * n // 6] for k in range(6)]
        for k, chunk in enumerate(chunks):
            run.send(chunk, rate=a.rate)
            victim = f"w{k % 2}"
            run.kill(victim)
            time.sleep(random.uniform(0, 2))
            run.worker(victim)
    elif s == "kill-noreturn":  # 3 workers, one SIGKILLed for good, another joins later
        run.worker("w0")
        run.worker("w1")
        run.worker("w2")
        run.send(records[:third], rate=a.rate)
        run.kill("w1")
        run.send(records[third:2 * third], rate=a.rate)
        run.worker("w3")
        run.send(records[2 * third:], rate=a.rate)
    elif s in ("churn", "churn-term"):  # rapid joins and leaves
        run.worker("w0")
        chunks = [records[k * n // 8:(k + 1) * n // 8] for k in range(8)]
        for k, chunk in enumerate(chunks):
            run.send(chunk, rate=a.rate)
            name = f"w{1 + k % 3}"
            if name in run.procs and run.procs[name].poll() is None:
                run.kill(name, signal.SIGTERM if s == "churn-term" else random.choice([signal.SIGTERM, signal.SIGKILL]))
            else:
                run.worker(name)
    elif s == "grow":  # the pages topic grows from P to 2P partitions mid-stream
        run.worker("w0")
        run.worker("w1")
        run.send(records[:n // 2], rate=a.rate)
        admin = AdminClient({"bootstrap.servers": run.bootstrap})
        admin.create_partitions([NewPartitions(run.topics["PAGES"], 2 * a.partitions)])[run.topics["PAGES"]].result()
        print(f"  [{run.t():6.1f}] pages grown to {2 * a.partitions}", flush=True)
        run.send(records[n // 2:], rate=a.rate)
    elif s == "grow-join":  # grown mid-stream, then a worker joins and one leaves
        run.worker("w0")
        run.worker("w1")
        run.wait_assigned("w0")
        run.send(records[:n // 3], rate=a.rate)
        admin = AdminClient({"bootstrap.servers": run.bootstrap})
        admin.create_partitions([NewPartitions(run.topics["PAGES"], 2 * a.partitions)])[run.topics["PAGES"]].result()
        print(f"  [{run.t():6.1f}] pages grown to {2 * a.partitions}", flush=True)
        run.send(records[n // 3:2 * n // 3], rate=a.rate)
        run.worker("w2")
        run.wait_assigned("w2")
        run.kill("w0", signal.SIGTERM)
        run.send(records[2 * n // 3:], rate=a.rate)
    elif s == "before-topic":  # the worker starts before any topic exists
        run.worker("w0")
        time.sleep(8)
        run.worker("w1")
        run.send(records, rate=a.rate)
    elif s == "broker-restart":  # SIGTERM the broker mid-stream, start it again on the same port and data
        run.worker("w0")
        run.worker("w1")
        run.send(records[:n // 2], rate=a.rate)
        run.broker.stop()
        print(f"  [{run.t():6.1f}] broker stopped", flush=True)
        time.sleep(a.broker_down)
        run.broker.start()
        print(f"  [{run.t():6.1f}] broker started again", flush=True)
        run.send(records[n // 2:], rate=a.rate)
    else:
        raise SystemExit(f"unknown scenario {s}")


def _term(*_):
    raise KeyboardInterrupt


def main():
    signal.signal(signal.SIGTERM, _term)
    ap = argparse.ArgumentParser()
    ap.add_argument("scenario")
    ap.add_argument("--topology", default="global")
    ap.add_argument("--strategy", default="range")
    ap.add_argument("--stories", type=int, default=60)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--rate", type=float, default=15)
    ap.add_argument("--wait", type=float, default=5)
    ap.add_argument("--static", action="store_true")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--broker-down", type=float, default=3)
    ap.add_argument("--timeout", type=float, default=240)
    ap.add_argument("--dir", default=tempfile.gettempdir())
    ap.add_argument("--file-mode", action="store_true")
    ap.add_argument("--env", action="append", default=[])
    ap.add_argument("--faust", action="store_true", help="run `streamdedup faust` apps, not workers")
    a = ap.parse_args()
    if a.faust:
        a.topology = "local"  # the app's topics are the local topology's
    records = crawl(a.stories)
    run = Run(a)
    for kv in a.env:
        k, v = kv.split("=", 1)
        run.env[k] = v
    run.t0 = time.monotonic()
    file_status = file_mode(records, run.dir) if a.file_mode and not a.faust else None
    run.start_broker()
    try:
        if a.scenario != "before-topic":
            run.create_topics()
        scenario(run, records)
        got = run.wait_all(len(records), a.timeout)
        print(f"  [{run.t():6.1f}] {got} outputs of {len(records)}; settling", flush=True)
        time.sleep(3)
        run.stop_all()
        if a.file_mode and a.faust:  # the app judges each input partition apart, as the local topology
            file_status = {}
            for p, part in run.input_partitions().items():
                file_status.update(file_mode(part, run.dir / f"file-mode-{p}"))
        run.report(records, file_status)
    finally:
        for p in run.procs.values():
            if p.poll() is None:
                os.kill(p.pid, signal.SIGKILL)
        run.broker.__exit__(None, None, None)


if __name__ == "__main__":
    main()
