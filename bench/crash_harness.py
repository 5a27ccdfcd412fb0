"""Crash harness: stream pages through a real broker and a worker that is killed with SIGKILL at
random moments and restarted, then check against the input that every page came out exactly once
with the verdict of an uninterrupted run, and that the store agrees with the committed offsets.

    python bench/crash_harness.py --pages 20000 --kills 50 [--broker noida|tansu]

Prints one JSON object: pages, kills (and how many landed mid-stream), lost, doubled, verdicts
that differ, store vs committed offset, seconds. Exit status 1 if anything was lost, doubled or
different. (tests/runtime/test_worker.py runs a short version: 3 kills over 123 pages.)

    python bench/crash_harness.py --mode file --pages 20000 --kills 20

The same for file mode: `streamdedup dedup` on one JSON Lines file, killed at random moments and
rerun (the same command, a random batch size each time) until a run ends; then every input line
must be in exactly one of unique/duplicates/rejected.jsonl with the uninterrupted run's verdict,
none a duplicate_id rejection, and summary.json must count them all. It also reports how many
kills left outputs the store had not committed (cut off by the rerun).
(tests/outputs/test_file_mode_recovery.py runs a short version: 2 kills over 3,000 records.)

    python bench/crash_harness.py --pages 2000 --kills 5 --topic-reset

A broker that starts over: half as many other pages are judged first, then every topic is deleted
and created again (a broker back without its data; the group keeps its offsets on noida-db, loses
them on Tansu), and the pages are fed to the new topics. A worker with the default
`on_topic_reset` must refuse (exit 2, one line); then the kills run with `restart`, and every new
page must come out once with the verdict of an uninterrupted file-mode run over old then new pages.

    python bench/crash_harness.py --mode faust --pages 2000 --kills 10

The same for `streamdedup faust` (at-least-once): killed at random moments and restarted, then run
until the group has committed every input. Each page must come out with the uninterrupted run's
verdict; a page may come out more than once (a replay), but only byte for byte the same.
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

try:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
    from confluent_kafka.admin import AdminClient
except ImportError:  # a venv without the [kafka] extra (a notebook's): one line naming the fix, not a traceback
    from peers import kafka_client  # bench/

    kafka_client("bench/crash_harness.py")
    raise

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


def start_over(settings: WorkerSettings, command: list[str], env: dict[str, str], old: list) -> dict:
    """Judge `old` to the end, delete every topic and create them again (a broker that lost its
    data); the refusal of a worker with the default `on_topic_reset`, as the operator sees it."""
    feed([RawRecord(f"old:{i}", data=m) for i, m in enumerate(old)], settings.client(), settings.topics.pages)
    first = subprocess.run(command, env={**env, "STREAMDEDUP_BATCH_SIZE": "64"}, capture_output=True, timeout=3600)
    admin = AdminClient(settings.client())
    names = [n for n in (settings.topics.pages, *settings.topics.outputs, *settings.topics.internal)
             if n in admin.list_topics(timeout=10).topics]
    for future in admin.delete_topics(names, operation_timeout=10).values():
        future.result(30)
    while set(names) & set(admin.list_topics(timeout=10).topics):
        time.sleep(0.1)
    ensure_topics(settings)
    return {"old_pages": len(old), "old_run_exit": first.returncode, "group_offset_after_reset": committed(settings)}


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


def file_ledger(out: Path) -> tuple[int, dict[str, int]]:
    """Records consumed and committed file lengths, as the store under OUT/state holds them."""
    from rocksdict import AccessType, Options, Rdict

    from streamdedup.outputs.job import Ledger
    from streamdedup.store import layout

    if not (out / "state" / "CURRENT").exists():
        return 0, {}
    db = Rdict(str(out / "state"), options=Options(raw_mode=True), access_type=AccessType.read_only())
    try:
        raw = db.get(layout.meta_key("file_job:.."))
    finally:
        db.close()
    if raw is None:
        return 0, {}
    ledger = Ledger.decode(raw)
    return ledger.jobs[-1].consumed, ledger.lengths


def output_bytes(out: Path) -> int:
    return sum(path.stat().st_size for path in out.glob("*.jsonl"))


def file_mode(args: argparse.Namespace, rng: random.Random, work: Path, messages: list,
              expected: dict[str, str], bad: int) -> tuple[dict, bool]:
    """Kill `streamdedup dedup` at random moments, rerun the same command, check the three files."""
    from streamdedup.outputs.files import FILES

    data = work / "crawl.jsonl"
    data.write_bytes(b"".join(m + b"\n" for m in messages))
    out = work / "out"
    command = [sys.executable, "-m", "streamdedup", "dedup", str(data), "--out", str(out), "-q"]
    kills, mid_stream, uncommitted, exits = 0, 0, 0, []
    while kills < args.kills:
        process = subprocess.Popen([*command, "--batch-size", str(rng.choice([4, 16, 64, 256]))],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        if rng.random() < 0.25:  # anywhere: start-up, the resume checks, the first batches
            time.sleep(rng.uniform(0.05, 2.5))
        else:  # once this run has written something: mid-batch, mid-sync, mid-commit
            written, deadline = output_bytes(out), time.monotonic() + 60
            while output_bytes(out) <= written and time.monotonic() < deadline and process.poll() is None:
                time.sleep(0.01)
            time.sleep(rng.uniform(0.0, 0.5))
        if process.poll() is not None:  # it finished first: the job is done
            exits.append(process.returncode)
            break
        process.send_signal(signal.SIGKILL)
        process.wait()
        kills += 1
        consumed, lengths = file_ledger(out)
        mid_stream += 0 < consumed < len(messages)
        uncommitted += any((out / name).exists() and (out / name).stat().st_size > lengths.get(status, 0)
                           for status, name in FILES.items())
    final = subprocess.run([*command, "--batch-size", "64"], capture_output=True, timeout=3600)
    lines = {status: [orjson.loads(line) for line in (out / name).read_bytes().splitlines()]
             for status, name in FILES.items()}
    seen = Counter(row["dedup"]["id"] for status in ("unique", "duplicate") for row in lines[status])
    got = {row["dedup"]["id"]: row["dedup"]["status"] for status in ("unique", "duplicate") for row in lines[status]}
    rejected = Counter(row["dedup"]["origin"] for row in lines["rejected"])
    summary = json.loads((out / "summary.json").read_text())
    result = {
        "mode": "file", "pages": len(messages), "bad_records": bad, "kills": kills, "kills_mid_stream": mid_stream,
        "kills_with_uncommitted_outputs": uncommitted, "final_run_exit": final.returncode,
        "lost": sum(1 for page_id in expected if page_id not in seen) + max(bad - len(rejected), 0),
        "doubled": sum(1 for n in seen.values() if n > 1) + sum(1 for n in rejected.values() if n > 1),
        "duplicate_id": sum(1 for row in lines["rejected"] if row["dedup"]["reason"] == "duplicate_id"),
        "rejected_out": len(lines["rejected"]),
        "verdicts_differ": sum(1 for k, v in expected.items() if got.get(k) != v),
        "summary_records": summary["records"], "seconds": 0.0,
    }
    ok = (result["lost"] == 0 and result["doubled"] == 0 and result["verdicts_differ"] == 0
          and result["duplicate_id"] == 0 and result["rejected_out"] == bad and final.returncode == 0
          and summary["records"] == len(messages) == sum(len(rows) for rows in lines.values()))
    return result, ok


def faust_mode(args: argparse.Namespace, rng: random.Random, settings: WorkerSettings, messages: list,
               expected: dict[str, str], bad: int) -> tuple[dict, bool]:
    """Kill `streamdedup faust` at random moments, restart it, then let it drain the topic."""
    env = {**os.environ, "STREAMDEDUP_BOOTSTRAP_SERVERS": settings.bootstrap_servers,
           **{f"STREAMDEDUP_TOPIC_{k.upper()}": v for k, v in settings.topics.__dict__.items()}}
    command = [sys.executable, "-m", "streamdedup", "faust", "--state-dir", str(settings.state_dir),
               "--group-id", settings.group_id]
    kills, mid_stream = 0, 0
    log_path = settings.state_dir.parent / "faust.log"  # every run's log, appended (a pipe could fill)
    with open(log_path, "ab") as log_file:
        while kills < args.kills and committed(settings) < len(messages):
            process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=log_file)
            time.sleep(rng.uniform(2.0, 12.0))  # start-up takes ~3 s: some kills land in it, most mid-stream
            process.send_signal(signal.SIGKILL)
            process.wait()
            kills += 1
            mid_stream += 0 < committed(settings) < len(messages)
        process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=log_file)
        deadline = time.monotonic() + args.drain_timeout
        while committed(settings) < len(messages) and time.monotonic() < deadline and process.poll() is None:
            time.sleep(1)
        process.terminate()
        process.wait(timeout=120)
    log = log_path.read_bytes()
    outputs = {name: read_all(settings, topic) for name, topic in
               (("unique", settings.topics.unique), ("duplicates", settings.topics.duplicates),
                ("rejected", settings.topics.rejected))}
    values: dict[str, set[bytes]] = {}  # page id -> the distinct values it came out with
    seen: Counter[str] = Counter()  # page id -> how many times it came out
    for name in ("unique", "duplicates"):
        for message in outputs[name]:
            page_id = orjson.loads(message.value())["dedup"]["id"]
            values.setdefault(page_id, set()).add(message.value())
            seen[page_id] += 1
    got = {page_id: orjson.loads(next(iter(v)))["dedup"]["status"] for page_id, v in values.items()}
    sources = Counter(dict(m.headers() or [])["dedup.source"] for m in outputs["rejected"])
    result = {
        "mode": "faust", "pages": len(messages), "bad_records": bad, "kills": kills, "kills_mid_stream": mid_stream,
        "lost": sum(1 for page_id in expected if page_id not in values) + max(bad - len(sources), 0),
        "repeated": sum(seen.values()) - len(seen) + sum(sources.values()) - len(sources),
        "outputs": sum(len(v) for v in outputs.values()),
        "repeats_differ": sum(1 for v in values.values() if len(v) > 1),
        "verdicts_differ": sum(1 for k, v in expected.items() if got.get(k) != v),
        "input_committed_offset": committed(settings), "seconds": 0.0,
    }
    ok = (result["lost"] == 0 and result["repeats_differ"] == 0 and result["verdicts_differ"] == 0
          and len(sources) == bad and result["input_committed_offset"] == len(messages))
    if not ok:
        print(log.decode(errors="replace")[-3000:], file=sys.stderr)
    return result, ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mode", default="worker", choices=("worker", "file", "faust"),
                        help="kill the Kafka worker, `streamdedup dedup` (file mode) or `streamdedup faust`")
    parser.add_argument("--pages", type=int, default=20_000)
    parser.add_argument("--kills", type=int, default=50)
    parser.add_argument("--broker", default="noida", choices=("noida", "tansu"))
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--topology", default="global", choices=("global", "local"))
    parser.add_argument("--topic-reset", action="store_true",
                        help="worker mode: judge other pages first, then every topic starts over (see above)")
    parser.add_argument("--drain-timeout", type=float, default=600.0,
                        help="faust mode: seconds the last run may take to commit every input")
    args = parser.parse_args()
    if args.topic_reset and args.mode != "worker":
        parser.error("--topic-reset is a worker-mode case (the Faust app's start-over is tested in tests/runtime)")
    started = time.monotonic()
    rng = random.Random(args.seed)
    work = Path(tempfile.mkdtemp(prefix="crash-harness-"))
    messages = pages(args.pages, args.seed)
    # --topic-reset: pages of other ids judged before the topics start over (the stores keep them)
    old = [m.replace(b"https://site", b"https://old.site") for m in pages(args.pages // 2, args.seed + 1)] \
        if args.topic_reset else []
    baseline = run_records(old + messages, work / "baseline")[len(old):]
    expected = {o.dedup["id"]: o.status for o in baseline if o.status != "rejected"}
    bad = sum(1 for o in baseline if o.status == "rejected")
    if args.mode == "file":
        result, ok = file_mode(args, rng, work, messages, expected, bad)
        result["seconds"] = round(time.monotonic() - started, 1)
        print(json.dumps(result))
        sys.exit(0 if ok else 1)
    with EmbeddedBroker(work / "broker", kind=args.broker) as broker:
        run = uuid.uuid4().hex[:6]
        settings = WorkerSettings(bootstrap_servers=broker.bootstrap_servers, group_id=f"crash-{run}", worker_id="w1",
                                  state_dir=work / "state", topology=args.topology,
                                  topics=Topics(**{k: f"{v}-{run}" for k, v in Topics().__dict__.items()}))
        ensure_topics(settings)
        if args.mode == "faust":
            feed([RawRecord(f"h:{i}", data=m) for i, m in enumerate(messages)], settings.client(),
                 settings.topics.pages)
            result, ok = faust_mode(args, rng, settings, messages, expected, bad)
            result.update(seconds=round(time.monotonic() - started, 1), broker=args.broker)
            print(json.dumps(result))
            sys.exit(0 if ok else 1)
        env = {**os.environ, "STREAMDEDUP_BOOTSTRAP_SERVERS": settings.bootstrap_servers,
               "STREAMDEDUP_GROUP_ID": settings.group_id, "STREAMDEDUP_WORKER_ID": "w1",
               "STREAMDEDUP_STATE_DIR": str(settings.state_dir), "STREAMDEDUP_TOPOLOGY": args.topology,
               **{f"STREAMDEDUP_TOPIC_{k.upper()}": v for k, v in settings.topics.__dict__.items()}}
        command = [sys.executable, "-m", "streamdedup", "worker", "--exit-when-idle", "5"]
        reset: dict = {}
        if args.topic_reset:
            reset = start_over(settings, command, env, old)
        feed([RawRecord(f"h:{i}", data=m) for i, m in enumerate(messages)], settings.client(), settings.topics.pages)
        if args.topic_reset:
            refused = subprocess.run(command, env=env, capture_output=True, timeout=600)
            lines = [line for line in refused.stderr.decode(errors="replace").splitlines()
                     if line.startswith("streamdedup: error:")]
            reset.update(refused_exit=refused.returncode, refused_line=lines[-1][:160] if lines else None)
            env["STREAMDEDUP_ON_TOPIC_RESET"] = "restart"
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
        "topology": args.topology, **reset,
    }
    print(json.dumps(result))
    ok = (result["lost"] == 0 and result["doubled"] == 0 and result["verdicts_differ"] == 0
          and result["rejected_out"] == bad and last_committed == len(messages)
          and result["stores_behind_committed"] == 0 and (not args.topic_reset or result["refused_exit"] == 2))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
