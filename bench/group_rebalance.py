"""Does a development broker finish a consumer-group rebalance? Plain confluent-kafka, no streamdedup code.

    python bench/group_rebalance.py                                  # 8 trials, cooperative-sticky, noida-db
    python bench/group_rebalance.py --strategy range --trials 8
    python bench/group_rebalance.py --broker tansu --max-poll-interval-ms 15000

Each trial starts a fresh embedded broker, three topics of 6 partitions, and two consumers in one
group that split the 18 partitions; then a third consumer joins. A trial is `ok` once the third
consumer owns a partition, `stuck` if it owns none after `--wait-s`. Apache Kafka finishes every
such rebalance in seconds. noida-db 0.2.3, with the other core busy, left 6 of 16
cooperative-sticky trials stuck (the followers' JoinGroup never answered: librdkafka asks again
only after `max.poll.interval.ms` + 3 s) and 0 of 8 range trials (runtime/broker.py). Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import threading
import time
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from streamdedup.runtime.broker import EmbeddedBroker

TOPICS = ("a", "b", "c")


def member(bootstrap: str, group: str, strategy: str, max_poll_ms: int, owned: set[tuple[str, int]],
           stop: threading.Event) -> None:
    """One consumer that records what it owns, polling until `stop`."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                         "enable.auto.commit": False, "session.timeout.ms": 10_000,
                         "max.poll.interval.ms": max_poll_ms, "partition.assignment.strategy": strategy})
    cooperative = strategy == "cooperative-sticky"

    def on_assign(c: Consumer, parts: list[TopicPartition]) -> None:
        if not cooperative:
            owned.clear()
        owned.update((p.topic, p.partition) for p in parts)
        c.incremental_assign(parts) if cooperative else c.assign(parts)

    def on_revoke(c: Consumer, parts: list[TopicPartition]) -> None:
        owned.difference_update((p.topic, p.partition) for p in parts)
        c.incremental_unassign(parts) if cooperative else c.unassign()

    consumer.subscribe(list(TOPICS), on_assign=on_assign, on_revoke=on_revoke, on_lost=on_revoke)
    while not stop.is_set():
        consumer.consume(4, 0.2)
    consumer.close()


def trial(kind: str, strategy: str, max_poll_ms: int, wait_s: float) -> dict[str, Any]:
    with EmbeddedBroker(tempfile.mkdtemp(prefix="rebalance-"), kind=kind) as broker:
        bootstrap = broker.bootstrap_servers
        admin = AdminClient({"bootstrap.servers": bootstrap})
        for future in admin.create_topics([NewTopic(t, 6) for t in TOPICS]).values():
            future.result()
        producer = Producer({"bootstrap.servers": bootstrap})
        for i in range(60):
            for topic in TOPICS:
                producer.produce(topic, b"x", partition=i % 6)
        producer.flush(30)
        owned: dict[str, set[tuple[str, int]]] = {name: set() for name in ("w0", "w1", "w2")}
        stop = threading.Event()

        def start(name: str) -> threading.Thread:
            thread = threading.Thread(target=member, args=(bootstrap, "g", strategy, max_poll_ms, owned[name], stop),
                                      daemon=True)
            thread.start()
            return thread

        threads = [start("w0"), start("w1")]
        deadline = time.monotonic() + wait_s
        while sum(len(v) for v in owned.values()) < 6 * len(TOPICS) and time.monotonic() < deadline:
            time.sleep(0.1)
        joined = time.monotonic()
        threads.append(start("w2"))
        while not owned["w2"] and time.monotonic() < joined + wait_s:
            time.sleep(0.1)
        result = {"ok": bool(owned["w2"]), "seconds": round(time.monotonic() - joined, 1),
                  "owned": {name: len(parts) for name, parts in owned.items()}}
        stop.set()
        for thread in threads:
            thread.join(30)
        return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--broker", choices=("noida", "tansu"), default="noida")
    parser.add_argument("--strategy", choices=("cooperative-sticky", "range"), default="cooperative-sticky")
    parser.add_argument("--trials", type=int, default=8)
    parser.add_argument("--max-poll-interval-ms", type=int, default=300_000, help="librdkafka's (and Kafka's) default")
    parser.add_argument("--wait-s", type=float, default=60.0, help="how long the third consumer may wait")
    args = parser.parse_args()
    trials = [trial(args.broker, args.strategy, args.max_poll_interval_ms, args.wait_s) for _ in range(args.trials)]
    print(json.dumps({"broker": args.broker, "strategy": args.strategy, "max_poll_interval_ms": args.max_poll_interval_ms,
                      "stuck": sum(not t["ok"] for t in trials), "trials": trials}))


if __name__ == "__main__":
    main()
