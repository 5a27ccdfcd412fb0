"""Faust apps on a real noida-db: when their committed offsets move, why, and how long SIGTERM takes.

    python bench/faust_commits.py --apps 2 --join-leave          # a third app joins, the first leaves
    python bench/faust_commits.py --apps 2 --kill --static       # the second SIGKILLed, started again
    NUMBA_CACHE_DIR=$(mktemp -d) python bench/faust_commits.py --apps 2 --join-leave --code /path/to/old/tree

Each app runs `streamdedup faust` with Faust's commit decisions logged (APP.commits.jsonl in the run's
folder: per commit, each partition's acknowledged offsets, committed offset and gaps, and what was
committed; judging calls over 50 ms). The group's committed offsets and the topic's ends are polled every
0.5 s. Prints the stalls (a partition's committed offset unmoved 5 s or more while behind its end), the
commit decisions where acknowledged offsets were held back, and how long each SIGTERM took. Pages are
`scaleout_scenarios.crawl`'s, fed at `--rate` a second. Written for the Faust review of 2026-12-07
(docs/limitations.md, "The Faust app's commits wait").
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def run_app(log_path: str) -> int:
    """`streamdedup faust` (the arguments after `--app LOG`) with Faust's commit decisions logged to `log_path`."""
    import faust.transport.consumer as consumer_module
    import faust.transport.drivers.aiokafka as driver

    out = open(log_path, "a", buffering=1)  # noqa: SIM115 - open for the process's life

    def write(**fields: object) -> None:
        out.write(json.dumps({"t": round(time.time(), 3), **fields}) + "\n")

    def name(tp: object) -> str:
        return f"{tp.topic}[{tp.partition}]"  # type: ignore[attr-defined]

    original_filter = consumer_module.Consumer._filter_committable_offsets

    def committable(self: object, tps: object) -> object:
        tps = list(tps)  # type: ignore[call-overload]
        before = {name(tp): {"acked": sorted(self._acked.get(tp, []))[:4], "count": len(self._acked.get(tp, [])),
                             "committed": self._committed_offset.get(tp),
                             "gaps": [(i.begin, i.end) for i in sorted(self._gap.get(tp, []))][:3]}
                  for tp in tps}
        result = original_filter(self, tps)
        write(ev="filter", before=before, result={name(tp): offset for tp, offset in result.items()})
        return result

    consumer_module.Consumer._filter_committable_offsets = committable
    original_commit = driver.AIOKafkaConsumerThread._commit

    async def commit(self: object, offsets: dict) -> bool:
        ok = await original_commit(self, offsets)
        write(ev="commit", ok=ok, offsets={name(tp): offset for tp, offset in offsets.items()})
        return ok

    driver.AIOKafkaConsumerThread._commit = commit
    import streamdedup.cli as cli
    from streamdedup.runtime import faust_journal

    outputs = faust_journal.JournalKeeper.outputs

    def timed_outputs(self: object, offset: int, *args: object, **kwargs: object) -> object:
        started = time.monotonic()
        try:
            return outputs(self, offset, *args, **kwargs)
        finally:
            if time.monotonic() - started > 0.05:
                write(ev="slow judging", offset=offset, s=round(time.monotonic() - started, 3))

    faust_journal.JournalKeeper.outputs = timed_outputs
    cli.check_extra = lambda *_: None  # faust's lazy module has no __spec__ once imported here
    from streamdedup.__main__ import main

    sys.argv = ["streamdedup", *sys.argv[sys.argv.index("--app") + 2:]]
    return main()


def stalls(polled: list, partitions: int, at_least: float = 5.0) -> list:
    """(partition, from, to, committed offset) where a partition's committed offset stood still while behind its end."""
    found, last = [], {}
    for t, committed, ends in polled:
        for p in range(partitions):
            if p not in last or committed[p] != last[p][1]:
                if p in last and t - last[p][0] >= at_least and last[p][2]:
                    found.append((p, last[p][0], t, last[p][1]))
                last[p] = (t, committed[p], max(committed[p], 0) < ends[p])
            elif max(committed[p], 0) < ends[p]:
                last[p] = (last[p][0], last[p][1], True)
    end = polled[-1][0]
    found += [(p, t0, end, c0) for p, (t0, c0, behind) in last.items()
              if behind and max(c0, 0) < polled[-1][2][p] and end - t0 >= at_least]
    return found


def main() -> None:  # noqa: PLR0915 - one scenario, top to bottom
    """Run the scenario and print its figures."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--apps", type=int, default=2)
    ap.add_argument("--stories", type=int, default=100)
    ap.add_argument("--rate", type=float, default=15)
    ap.add_argument("--static", action="store_true", help="static membership (default: dynamic)")
    ap.add_argument("--kill", action="store_true", help="SIGKILL the second app after a third of the pages, "
                    "start it again 1 s later")
    ap.add_argument("--join-leave", action="store_true", help="a third of the way one more app joins; two thirds, "
                    "the first leaves by SIGTERM")
    ap.add_argument("--tail", type=float, default=15, help="seconds watched after the last page")
    ap.add_argument("--code", default=str(HERE.parent), help="the tree whose streamdedup the apps run")
    ap.add_argument("--dir", default=None)
    a = ap.parse_args()
    sys.path.insert(0, str(HERE))
    sys.path.insert(0, str(HERE.parent))
    import scaleout_scenarios as scenarios
    from confluent_kafka import Consumer, TopicPartition

    args = argparse.Namespace(scenario="commits", topology="local", strategy="range", port=None, partitions=4,
                              static=a.static, batch_size=256, wait=1.0, faust=True,
                              dir=a.dir or os.path.join(os.environ.get("TMPDIR", "/tmp"), "faust-commits"))
    run = scenarios.Run(args)
    run.t0 = time.monotonic()
    run.env["PYTHONPATH"] = a.code
    run.start_broker()
    run.create_topics()
    procs: dict[str, subprocess.Popen] = {}
    logs: dict[str, Path] = {}

    def start(app: str) -> None:
        logs[app] = run.dir / f"{app}.log"
        procs[app] = subprocess.Popen(
            [sys.executable, __file__, "--app", str(run.dir / f"{app}.commits.jsonl"), "-v", "faust",
             "--state-dir", str(run.dir / f"state-{app}"), "--worker-id", app,
             "--group-id", run.env["STREAMDEDUP_GROUP_ID"]],
            env=run.env, cwd=run.dir, stdout=open(logs[app], "wb"), stderr=subprocess.STDOUT,  # noqa: SIM115
            start_new_session=True)
        print(f"[{run.t():6.1f}] start {app}", flush=True)

    def stop(app: str) -> None:
        started = time.monotonic()
        procs[app].send_signal(signal.SIGTERM)
        procs[app].wait(180)
        print(f"[{run.t():6.1f}] SIGTERM {app}: stopped in {time.monotonic() - started:.1f} s "
              f"(exit {procs[app].returncode})", flush=True)

    for i in range(a.apps):
        start(f"a{i}")
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and not all(b"Worker]: Ready" in log.read_bytes() for log in logs.values()):
        time.sleep(0.3)
    print(f"[{run.t():6.1f}] ready", flush=True)
    polled: list = []
    done = threading.Event()

    def poll() -> None:
        group = Consumer({"bootstrap.servers": run.bootstrap, "group.id": run.env["STREAMDEDUP_GROUP_ID"]})
        ends = Consumer({"bootstrap.servers": run.bootstrap, "group.id": "ends"})
        tps = [TopicPartition(run.topics["PAGES"], p) for p in range(4)]
        while not done.is_set():
            try:
                committed = [tp.offset for tp in group.committed(tps, timeout=5)]
                high = [ends.get_watermark_offsets(tp, timeout=5, cached=False)[1] for tp in tps]
                polled.append((round(run.t(), 1), committed, high))
            except Exception as err:  # noqa: BLE001 - a poll that failed is skipped
                print(f"[{run.t():6.1f}] poll failed: {err}", flush=True)
            time.sleep(0.5)

    watcher = threading.Thread(target=poll, daemon=True)
    watcher.start()
    records = scenarios.crawl(a.stories)
    n = len(records)
    if a.kill:
        run.send(records[: n // 3], rate=a.rate)
        procs["a1"].kill()
        procs["a1"].wait()
        print(f"[{run.t():6.1f}] SIGKILL a1", flush=True)
        time.sleep(1)
        start("a1")
        run.send(records[n // 3:], rate=a.rate)
    elif a.join_leave:
        run.send(records[: n // 3], rate=a.rate)
        start(f"a{a.apps}")
        run.send(records[n // 3: 2 * n // 3], rate=a.rate)
        stop("a0")
        run.send(records[2 * n // 3:], rate=a.rate)
    else:
        run.send(records, rate=a.rate)
    print(f"[{run.t():6.1f}] fed {n} pages", flush=True)
    time.sleep(a.tail)
    done.set()
    watcher.join()
    print("stalls of 5 s or more (partition, from, to, committed offset):", stalls(polled, 4))
    print("last poll (t, committed, ends):", polled[-1])
    for app, process in procs.items():
        if process.poll() is None:
            stop(app)
    decisions = held = 0
    for log in run.dir.glob("*.commits.jsonl"):
        for line in log.read_text().splitlines():
            event = json.loads(line)
            if event["ev"] == "filter":
                decisions += 1
                held += sum(1 for tp, s in event["before"].items() if s["count"] and tp not in event["result"])
    print(f"commit decisions: {decisions}; partitions whose acknowledged offsets were held back: {held}")
    drift = [line for log in logs.values() for line in log.read_text(errors="replace").splitlines()
             if "woke up too late" in line and "drift of +" in line
             and float(line.split("drift of +")[1].split()[0]) > 2]
    print(f"event loop held over 2 s: {len(drift)} times", *(d[:160] for d in drift), sep="\n  ")
    run.broker.stop()
    print("folder", run.dir)


if __name__ == "__main__":
    if "--app" in sys.argv:
        raise SystemExit(run_app(sys.argv[sys.argv.index("--app") + 1]))
    main()
