"""Does a development broker move a dead member's partitions, and to one member each? Plain confluent-kafka.

    python bench/dead_member.py                        # 3 trials, range, noida-db, 20 s max.poll.interval.ms
    python bench/dead_member.py --strategy cooperative-sticky --trials 3

Each trial starts a fresh embedded broker, three topics of 4 partitions and three consumer processes
in one group (dynamic membership, as `STREAMDEDUP_STATIC_MEMBERSHIP=false`); one is SIGKILLed (it
never leaves the group), and 6 s later a fourth joins. Each member prints what it owns at every
assignment and revocation; once the dead member's rebalance timeout (`max.poll.interval.ms`) and
`--settle-s` more have passed, a trial is `overlap` if two live members ever owned one partition at
once, `stuck` if some partition has no live owner at the end, else `ok`. Apache Kafka ends the dead
member's session after `session.timeout.ms` and gives each partition to one member. The streamdedup
workers met the same faults (scale-out review of 2026-12-07, docs/limitations.md). Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

TOPICS = ("a", "b", "c")


def member(bootstrap: str, strategy: str, max_poll_ms: int) -> None:
    """One group member: prints what it owns (JSON lines) at every change, polling for ever."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "g", "enable.auto.commit": False,
                         "session.timeout.ms": 10_000, "max.poll.interval.ms": max_poll_ms,
                         "partition.assignment.strategy": strategy})
    cooperative = strategy == "cooperative-sticky"
    owned: set[tuple[str, int]] = set()

    def tell() -> None:
        print(json.dumps({"at": time.time(), "owned": sorted(owned)}), flush=True)

    def on_assign(c: Consumer, parts: list[TopicPartition]) -> None:
        if not cooperative:
            owned.clear()
        owned.update((p.topic, p.partition) for p in parts)
        c.incremental_assign(parts) if cooperative else c.assign(parts)
        tell()

    def on_revoke(c: Consumer, parts: list[TopicPartition]) -> None:
        owned.difference_update((p.topic, p.partition) for p in parts)
        if not cooperative:
            owned.clear()
        c.incremental_unassign(parts) if cooperative else c.unassign()
        tell()

    consumer.subscribe(list(TOPICS), on_assign=on_assign, on_revoke=on_revoke, on_lost=on_revoke)
    while True:
        consumer.poll(0.2)


def trial(strategy: str, max_poll_ms: int, settle_s: float, kill_after_s: float = 7.0,
          join_after_s: float = 6.0) -> dict[str, Any]:
    from confluent_kafka.admin import AdminClient, NewTopic

    from streamdedup.runtime.broker import EmbeddedBroker

    with EmbeddedBroker(tempfile.mkdtemp(prefix="dead-member-")) as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        for future in admin.create_topics([NewTopic(t, 4) for t in TOPICS]).values():
            future.result()
        events: list[tuple[float, str, set[tuple[str, int]]]] = []
        procs: dict[str, subprocess.Popen[str]] = {}
        readers: list[threading.Thread] = []

        def start(name: str) -> None:
            proc = subprocess.Popen([sys.executable, __file__, "--member", broker.bootstrap_servers, "--strategy",
                                     strategy, "--max-poll-interval-ms", str(max_poll_ms)],
                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            procs[name] = proc

            def read() -> None:
                for line in proc.stdout or ():
                    told = json.loads(line)
                    events.append((told["at"], name, {(t, p) for t, p in told["owned"]}))

            readers.append(threading.Thread(target=read, daemon=True))
            readers[-1].start()

        for name in ("m0", "m1", "m2"):
            start(name)
        time.sleep(kill_after_s)
        os.kill(procs["m1"].pid, signal.SIGKILL)
        killed_at = time.time()
        time.sleep(join_after_s)
        start("m3")
        time.sleep(max_poll_ms / 1000 + settle_s)
        for proc in procs.values():
            proc.kill()
            proc.wait()
    owned: dict[str, set[tuple[str, int]]] = {}
    overlaps: set[tuple[str, int]] = set()
    for at, name, parts in sorted(events):
        if name == "m1" and at >= killed_at:
            continue
        owned[name] = parts
        live = {n: p for n, p in owned.items() if n != "m1" or at < killed_at}
        seen: set[tuple[str, int]] = set()
        for parts_of in live.values():
            overlaps |= seen & parts_of
            seen |= parts_of
    live_owned = set().union(*(p for n, p in owned.items() if n != "m1"))
    unowned = len(TOPICS) * 4 - len(live_owned)
    outcome = "overlap" if overlaps else "stuck" if unowned else "ok"
    return {"outcome": outcome, "partitions_owned_twice": len(overlaps), "partitions_unowned": unowned,
            "owned_at_end": {n: len(p) for n, p in sorted(owned.items()) if n != "m1"}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--strategy", choices=("cooperative-sticky", "range"), default="range")
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--max-poll-interval-ms", type=int, default=20_000,
                        help="the dead member's rebalance timeout on noida-db (Kafka's default 300,000)")
    parser.add_argument("--settle-s", type=float, default=15.0)
    parser.add_argument("--kill-after-s", type=float, default=7.0, help="the members' time together before the kill")
    parser.add_argument("--join-after-s", type=float, default=6.0, help="from the kill to the fourth member's start")
    parser.add_argument("--member", metavar="BOOTSTRAP", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.member:
        member(args.member, args.strategy, args.max_poll_interval_ms)
        return
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    trials = [trial(args.strategy, args.max_poll_interval_ms, args.settle_s, args.kill_after_s, args.join_after_s)
              for _ in range(args.trials)]
    print(json.dumps({"broker": "noida", "strategy": args.strategy, "max_poll_interval_ms": args.max_poll_interval_ms,
                      "overlap": sum(t["outcome"] == "overlap" for t in trials),
                      "stuck": sum(t["outcome"] == "stuck" for t in trials), "trials": trials}))


if __name__ == "__main__":
    main()
