"""The worker's CPU seconds per page, to compare code with and without the cluster view (issue 58).

    PYTHONPATH=<checkout> python bench/cluster_view_cost.py [--stories 200] [--topology global]

Generated news pages (each story on three sites, one copy edited: wire copies and revisions) are
fed to an embedded broker, then one in-process worker judges them all; the CPU time of this
process (every thread: the worker's loop and librdkafka's) while the worker runs, per page, is
printed as JSON. The broker is another process and the feed is not timed. Run it under each
checkout in turn (alternating, so load from other processes hits both alike) and compare medians.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
import uuid
from dataclasses import fields
from pathlib import Path

import orjson

from streamdedup.config import DetectorConfig
from streamdedup.record.readers import RawRecord
from streamdedup.runtime.broker import EmbeddedBroker
from streamdedup.runtime.feed import feed
from streamdedup.runtime.settings import Topics, WorkerSettings
from streamdedup.runtime.topics import ensure_topics
from streamdedup.runtime.worker import Worker
from streamdedup.testing import make_article, wrap_in_template

SITES = ("Alpha", "Beta", "Gamma")


def pages(stories: int) -> list[bytes]:
    records = []
    for i in range(stories):
        story = make_article(3000 + i, paragraphs=5)
        for j, site in enumerate(SITES):
            text = story if j < 2 else story[:-1] + [story[-1] + " Updated with a correction."]
            minute = 3 * i + j
            records.append(orjson.dumps({"id": f"s{i}-{site}", "url": f"https://{site.lower()}.example/{i}",
                                         "content": wrap_in_template(text, site),
                                         "fetched_at": f"2024-03-{1 + minute // 1440:02d}T{minute // 60 % 24:02d}:"
                                                       f"{minute % 60:02d}:00Z"}))
    return records


def helpers_cpu(broker_pid: int | None) -> float:
    """CPU seconds of this process's children but the broker (the page extraction helpers), from /proc."""
    total, me = 0, os.getpid()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == broker_pid:
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        after = stat[stat.rindex(")") + 2:].split()  # state ppid ... utime (14th field) stime (15th)
        if int(after[1]) == me:
            total += int(after[11]) + int(after[12])
    return total / os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stories", type=int, default=200)
    parser.add_argument("--topology", choices=("global", "local"), default="global")
    args = parser.parse_args()
    records = pages(args.stories)
    with tempfile.TemporaryDirectory() as work, EmbeddedBroker(Path(work) / "broker") as broker:
        run = uuid.uuid4().hex[:6]
        topics = Topics(**{f.name: f"{f.name}-{run}" for f in fields(Topics)})  # every topic this checkout has
        settings = WorkerSettings(bootstrap_servers=broker.bootstrap_servers, group_id=f"g-{run}", worker_id="w1",
                                  state_dir=Path(work) / "state", topology=args.topology, topics=topics)
        ensure_topics(settings)
        feed([RawRecord(f"bench:{i}", data=r) for i, r in enumerate(records)], settings.client(), topics.pages)
        worker = Worker(settings, DetectorConfig())
        broker_pid = broker.process.pid if broker.process is not None else None
        cpu, helpers, wall = time.process_time(), helpers_cpu(broker_pid), time.monotonic()
        stats = worker.run(idle_timeout_s=2)
        cpu, wall = time.process_time() - cpu, time.monotonic() - wall
        helpers = helpers_cpu(broker_pid) - helpers
        assert stats.decided == len(records), stats
        print(json.dumps({"pages": len(records), "topology": args.topology, "worker_cpu_s": round(cpu, 3),
                          "helpers_cpu_s": round(helpers, 3),
                          "cpu_ms_per_page": round(1000 * (cpu + helpers) / len(records), 3),
                          "worker_cpu_ms_per_page": round(1000 * cpu / len(records), 3), "wall_s": round(wall, 2),
                          "produced": dict(stats.produced)}))


if __name__ == "__main__":
    main()
