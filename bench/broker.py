"""Through a real broker: pages/s for one and two workers, and produce -> verdict latency.

    python bench/broker.py [--pages 4000] [--html-pages 300] [--repeat 3] [--out bench/results/broker.json]

An embedded noida-db broker (a Kafka-protocol broker from PyPI) on a free loopback port; the
input topic has 2 partitions (STREAMDEDUP_PARTITIONS=2) so two workers can share it. For 1 and
then 2 workers, each a `streamdedup worker` subprocess (`worker_command`):
  1. peak: a backlog of pages is produced at once; pages/s from the start of its production to
     its last verdict (verdict message timestamps; see `peak_rate`), median over `repeat`
     backlogs; and the CPU seconds per page the workers and the broker spent meanwhile (/proc);
  2. latency: pages fed at half that peak with `feed(rate=...)` (as `streamdedup feed --rate`);
     latency = when the verdict became readable here (read_committed) minus the input message's
     timestamp (set when it was produced), p50 and p99.
Plain-text pages by default (extraction would dominate); `--html-pages` adds a peak run on
generated HTML pages (trafilatura), or on the first HTML_PAGES pages of a JSON-lines set of real
ones with `--html-file` (e.g. /work/sets/web-dev.jsonl; with `--repeat 1`: a later backlog holds
the same pages again, under new ids). The workers' CPU counts their extraction processes too
(`workers_and_extraction`; `workers` is the worker processes alone). Each worker-settings profile (PROFILES: the defaults, and a
low-latency one) is measured on its own fresh topics. The workers run their default topology
(`global`: index and parts topics of PARTITIONS partitions too); `--topology local` measures the
store-per-input-partition one.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

from streamdedup.record.readers import RawRecord
from streamdedup.runtime.broker import BROKERS, EmbeddedBroker
from streamdedup.runtime.feed import feed
from streamdedup.runtime.settings import Topics, WorkerSettings
from streamdedup.runtime.topics import ensure_topics
from streamdedup.testing import make_words, wrap_in_template

DEFAULT_PARTITIONS = 2
PARTITIONS = DEFAULT_PARTITIONS  # --partitions sets it


# -- pages ---------------------------------------------------------------------------------------
HTML_FILE: Path | None = None  # --html-file: real HTML pages instead of generated ones


def make_pages(count: int, prefix: str, html: bool, seed: int = 1) -> list[bytes]:
    """Articles from one vocabulary on 100 sites; every third page is an edited copy of the page
    before it on another site (a near-duplicate). Ids carry `prefix` so runs never collide.

    With `HTML_FILE` (HTML, not the warm-up): its first `count` pages instead, their ids prefixed."""
    if html and HTML_FILE is not None and not prefix.endswith("-warm"):
        return real_pages(HTML_FILE, count, prefix)
    rng = random.Random(seed)
    vocabulary = make_words(rng, 5000)
    pages: list[bytes] = []
    paragraphs: list[str] = []
    for i in range(count):
        if i % 3 == 2:
            paragraphs = paragraphs + [f"Update {rng.randint(1, 999)}: " + " ".join(rng.choices(vocabulary, k=12)) + "."]
        else:
            paragraphs = [" ".join(" ".join(rng.choices(vocabulary, k=rng.randint(8, 24))).capitalize() + "."
                                   for _ in range(4)) for _ in range(6)]
        site = f"site{rng.randrange(100)}.example"
        content = wrap_in_template(paragraphs, site) if html else "\n\n".join(paragraphs)
        pages.append(orjson.dumps({"id": f"{prefix}-{i}", "url": f"https://{site}/{i}", "content": content,
                                   "content_type": "text/html" if html else "text/plain",
                                   "fetched_at": "2024-03-01T00:00:00Z"}))
    return pages


def real_pages(path: Path, count: int, prefix: str) -> list[bytes]:
    """The first `count` pages of a JSON-lines set (its page fields only), each id prefixed with `prefix`."""
    pages: list[bytes] = []
    with path.open("rb") as lines:
        for line in lines:
            if len(pages) >= count:
                break
            record = orjson.loads(line)
            page = {k: record[k] for k in ("url", "content", "content_type", "fetched_at") if k in record}
            pages.append(orjson.dumps({**page, "id": f"{prefix}-{record.get('id', len(pages))}"}))
    if not pages:
        raise SystemExit(f"{path} holds no pages: give --html-file a JSON-lines file of pages")
    return pages


# -- workers -------------------------------------------------------------------------------------
# worker settings compared (as STREAMDEDUP_* variables). The worker's consumer keeps librdkafka's
# fetch.wait.max.ms (500 ms) and waits up to batch_timeout_s (0.5 s) to fill a batch; against
# noida-db a fetch seems to wait out fetch.wait.max.ms, which costs latency and throughput.
PROFILES: dict[str, dict[str, str]] = {
    "defaults": {},
    "low-latency": {"STREAMDEDUP_KAFKA_FETCH_WAIT_MAX_MS": "10", "STREAMDEDUP_BATCH_TIMEOUT_S": "0.05"},
}


def worker_env(settings: WorkerSettings, worker_id: str, extra: dict[str, str]) -> dict[str, str]:
    return {**os.environ, **extra, "STREAMDEDUP_BOOTSTRAP_SERVERS": settings.bootstrap_servers,
            "STREAMDEDUP_GROUP_ID": settings.group_id, "STREAMDEDUP_WORKER_ID": worker_id,
            "STREAMDEDUP_STATE_DIR": str(settings.state_dir / worker_id),
            "STREAMDEDUP_PARTITIONS": str(PARTITIONS),
            **{f"STREAMDEDUP_TOPIC_{k.upper()}": v for k, v in settings.topics.__dict__.items()}}


def worker_command() -> list[str]:
    """How one worker is started (its settings come from the environment: `worker_env`)."""
    return [sys.executable, "-m", "streamdedup", "worker"]


def start_workers(settings: WorkerSettings, count: int, log_dir: Path,
                  extra: dict[str, str]) -> list[subprocess.Popen[bytes]]:
    log_dir.mkdir(parents=True, exist_ok=True)
    return [subprocess.Popen(worker_command(), env=worker_env(settings, f"w{i + 1}", extra), stdin=subprocess.DEVNULL,
                             stdout=open(log_dir / f"w{i + 1}.log", "ab"), stderr=subprocess.STDOUT)
            for i in range(count)]


def stop_workers(processes: list[subprocess.Popen[bytes]]) -> None:
    for process in processes:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    for process in processes:
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def wait_for_members(settings: WorkerSettings, count: int, timeout: float = 60.0) -> bool:
    """Until the group is stable with `count` members, so no rebalance falls inside a measurement.
    False if the broker cannot say (then the caller warms up longer instead)."""
    from confluent_kafka import ConsumerGroupState
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(settings.client())
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            [future] = admin.describe_consumer_groups([settings.group_id], request_timeout=5).values()
            group = future.result(timeout=5)
            assigned = [m for m in group.members if m.assignment and m.assignment.topic_partitions]
            if group.state == ConsumerGroupState.STABLE and len(assigned) == count:
                return True
        except Exception:  # noqa: BLE001 - group not there yet, or the API unsupported
            pass
        time.sleep(0.5)
    return False


# -- reading verdicts ----------------------------------------------------------------------------
@dataclass
class Collector:
    """Reads every output topic as it is committed; per page id: when it was read here and the
    verdict message's own timestamp."""

    settings: WorkerSettings
    seen: dict[str, tuple[float, int]] = field(default_factory=dict)
    stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        consumer = Consumer(self.settings.client(**{
            "group.id": f"bench-{uuid.uuid4().hex[:6]}", "enable.auto.commit": False,
            "isolation.level": "read_committed", "receive.message.max.bytes": 104_857_600,
            "fetch.wait.max.ms": 100}))
        topics = self.settings.topics
        consumer.assign([TopicPartition(t, p, OFFSET_BEGINNING) for t in (topics.unique, topics.duplicates,
                                                                           topics.rejected)
                         for p in range(PARTITIONS)])
        try:
            while not self.stop.is_set():
                for message in consumer.consume(1000, 0.2):
                    if message.error() is None:
                        now = time.time()
                        self.seen[page_id(message.value())] = (now, message.timestamp()[1])
        finally:
            consumer.close()

    def wait_for(self, ids: list[str], timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if all(i in self.seen for i in ids):
                return True
            time.sleep(0.05)
        return False


def page_id(value: bytes | None) -> str:
    record = orjson.loads(value or b"{}")
    return str(record.get("dedup", {}).get("id") or record.get("id"))


def input_timestamps(settings: WorkerSettings, wanted: set[str], timeout: float = 120.0) -> dict[str, int]:
    """Page id -> the input message's timestamp (ms, set by the producer), for the wanted ids."""
    consumer = Consumer(settings.client(**{"group.id": f"bench-{uuid.uuid4().hex[:6]}", "enable.auto.commit": False,
                                           "receive.message.max.bytes": 104_857_600}))
    consumer.assign([TopicPartition(settings.topics.pages, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
    stamps: dict[str, int] = {}
    deadline = time.monotonic() + timeout
    while not wanted <= stamps.keys() and time.monotonic() < deadline:
        for message in consumer.consume(1000, 0.5):
            if message.error() is None:
                stamps[page_id(message.value())] = message.timestamp()[1]
    consumer.close()
    return stamps


# -- measurements --------------------------------------------------------------------------------
def send(settings: WorkerSettings, pages: list[bytes], rate: float | None = None) -> list[str]:
    feed([RawRecord(f"bench:{i}", data=p) for i, p in enumerate(pages)], settings.client(),
         settings.topics.pages, rate)
    return [page_id(p) for p in pages]


def peak_rate(collector: Collector, ids: list[str], started_ms: float) -> dict[str, float]:
    """Pages/s of a backlog, two ways. `start_to_last` (the one reported and compared): the
    backlog's size over the time from the start of its production (produced far faster than it
    is processed) to its last verdict, which counts the pipeline's fill like a real backlog
    drain. `middle_80pct`: the verdicts between the 10th and 90th percentile over their span;
    verdicts come in bursts (a batch at a time, and in the global topology when a page's
    answers are all in), so on short backlogs it overstates the rate by up to a burst."""
    stamps = sorted(collector.seen[i][1] for i in ids)
    low, high = stamps[len(stamps) // 10], stamps[(len(stamps) * 9) // 10]
    middle = sum(1 for s in stamps if low < s <= high)
    return {"start_to_last": len(ids) / max(0.001, (stamps[-1] - started_ms) / 1000),
            "middle_80pct": middle / max(0.001, (high - low) / 1000)}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def latencies(collector: Collector, ids: list[str], produced: dict[str, int]) -> dict[str, float]:
    visible = [1000 * collector.seen[i][0] - produced[i] for i in ids if i in produced]
    emitted = [collector.seen[i][1] - produced[i] for i in ids if i in produced]
    if not visible:
        raise RuntimeError("the input messages' timestamps could not be read back")
    quarter = max(1, len(visible) // 4)
    return {"p50_ms": round(percentile(visible, 0.5), 1), "p99_ms": round(percentile(visible, 0.99), 1),
            # a rate the workers sustain keeps these two close; a growing queue makes the last larger
            "p50_first_quarter_ms": round(percentile(visible[:quarter], 0.5), 1),
            "p50_last_quarter_ms": round(percentile(visible[-quarter:], 0.5), 1),
            "max_ms": round(max(visible), 1), "verdict_emitted_p50_ms": round(percentile(emitted, 0.5), 1),
            "verdict_emitted_p99_ms": round(percentile(emitted, 0.99), 1), "pages": len(visible)}


def log_tails(log_dir: Path, chars: int = 1500) -> str:
    """The end of each worker's log, for an error that would otherwise point into a deleted folder."""
    return "\n".join(f"--- {log.name}:\n{log.read_text(errors='replace')[-chars:]}" for log in sorted(log_dir.glob("*.log")))


def warm_up(settings: WorkerSettings, collector: Collector, processes: list[subprocess.Popen[bytes]], workers: int,
            log_dir: Path, extra: dict[str, str], html: bool, run: str,
            timeout_s: float) -> tuple[list[subprocess.Popen[bytes]], bool, int]:
    """50 pages through the workers; the workers started again once if none comes out within `timeout_s`.

    A development broker can leave a group's join unanswered (noida-db, runtime/broker.py): a worker
    then waits out `max.poll.interval.ms` (300 s) before it asks again, and a benchmark would wait
    with it. Returns the workers, whether the group was seen stable, and how often they were restarted."""
    for restarts in range(2):
        stable = wait_for_members(settings, workers, timeout=min(60.0, timeout_s / 2))
        warm = send(settings, make_pages(50, f"{run}-warm{restarts}", html, seed=99 + restarts))
        if collector.wait_for(warm, timeout_s):  # a loaded 2-core machine: two workers start slowly
            return processes, stable, restarts
        print(f"{run}: no verdict {timeout_s:.0f} s after the warm-up pages (group stable: {stable}); "
              f"{'starting the workers again' if restarts == 0 else 'giving up'}", file=sys.stderr, flush=True)
        stop_workers(processes)
        if restarts == 0:
            processes = start_workers(settings, workers, log_dir, extra)
    raise RuntimeError(f"workers produced no verdicts, started twice; their logs:\n{log_tails(log_dir)}")


def run_topology(broker: EmbeddedBroker, work: Path, workers: int, pages: int, repeat: int, html: bool,
                 latency_seconds: float, latency_fraction: float = 0.5,
                 extra: dict[str, str] | None = None, warm_timeout_s: float = 240.0) -> dict[str, Any]:
    """One worker count on fresh topics: warm-up, `repeat` backlogs (peak), then half-peak latency."""
    run = f"{'html' if html else 'text'}{workers}-{uuid.uuid4().hex[:6]}"
    settings = WorkerSettings(bootstrap_servers=broker.bootstrap_servers, group_id=f"bench-{run}",
                              state_dir=work / run, partitions=PARTITIONS,
                              topics=Topics(**{k: f"{v}-{run}" for k, v in Topics().__dict__.items()}))
    ensure_topics(settings)
    collector = Collector(settings)
    reader = threading.Thread(target=collector.run, daemon=True)
    reader.start()
    log_dir = work / run / "logs"
    processes = start_workers(settings, workers, log_dir, extra or {})
    try:
        processes, stable, restarts = warm_up(settings, collector, processes, workers, log_dir, extra or {}, html, run,
                                              warm_timeout_s)
        if not stable:
            time.sleep(5)
        rates, middles = [], []
        cpu_before = cpu_snapshot(processes, broker)
        for r in range(repeat):
            backlog = make_pages(pages, f"{run}-peak{r}", html, seed=r)
            started_ms = time.time() * 1000
            ids = send(settings, backlog)
            if not collector.wait_for(ids, 600):
                raise RuntimeError(f"not every verdict arrived; the workers' logs:\n{log_tails(log_dir)}")
            rate = peak_rate(collector, ids, started_ms)
            rates.append(rate["start_to_last"])
            middles.append(rate["middle_80pct"])
        peak = statistics.median(rates)
        peak_pages = pages * repeat
        cpu_after = cpu_snapshot(processes, broker)
        cpu_ms = {name: round(1000 * (cpu_after[name] - cpu_before[name]) / peak_pages, 3) for name in cpu_after}
        result: dict[str, Any] = {"workers": workers, "pages_per_backlog": pages, "group_stable_check": stable,
                                  "workers_restarted_at_warm_up": restarts,
                                  "pages_per_s": round(peak, 1), "pages_per_s_runs": [round(x, 1) for x in rates],
                                  "pages_per_s_middle_80pct_of_verdicts": round(statistics.median(middles), 1),
                                  # CPU per page during the backlogs: what bounds the rate on this machine's
                                  # cores, whatever else is running (the broker shares them)
                                  "cpu_ms_per_page": cpu_ms,
                                  "cores_bound_pages_per_s": round(1000 * (os.cpu_count() or 1) / max(
                                      0.001, sum(v for k, v in cpu_ms.items() if k != "workers")), 1)}
        if latency_seconds > 0:
            rate = peak * latency_fraction
            ids = send(settings, make_pages(max(20, int(rate * latency_seconds)), f"{run}-lat", html, seed=77),
                       rate=rate)
            if not collector.wait_for(ids, 600):
                raise RuntimeError("not every verdict of the latency run arrived")
            result["latency_at_half_peak"] = {"rate_pages_per_s": round(rate, 1), "fraction_of_peak": latency_fraction,
                                              **latencies(collector, ids, input_timestamps(settings, set(ids)))}
        return result
    finally:
        stop_workers(processes)
        collector.stop.set()
        reader.join(10)


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a live process (Linux /proc), 0 where it cannot be read."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def tree_cpu_seconds(pid: int) -> float:
    """`cpu_seconds` of a process and its live descendants (a worker's extraction processes)."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
        children = [int(c) for t in tasks for c in Path(f"/proc/{pid}/task/{t}/children").read_text().split()]
    except (OSError, ValueError):
        children = []
    return cpu_seconds(pid) + sum(tree_cpu_seconds(c) for c in children)


def cpu_snapshot(workers: list[subprocess.Popen[bytes]], broker: EmbeddedBroker) -> dict[str, float]:
    """CPU seconds so far of the workers (summed), the broker and this process (the driver:
    producing the backlog and reading every verdict back); and of the workers with their
    extraction processes (`prepare_threads`: HTML is extracted in child processes)."""
    return {"workers": sum(cpu_seconds(w.pid) for w in workers),
            "workers_and_extraction": sum(tree_cpu_seconds(w.pid) for w in workers),
            "broker": cpu_seconds(broker.process.pid) if broker.process is not None else 0.0,
            "driver": cpu_seconds(os.getpid())}


def table(results: list[dict[str, Any]]) -> str:
    lines = ["| pages | worker settings | workers | pages/s (median) | vs 1 worker | CPU ms per page: workers, broker, driver "
             "| latency at half peak: rate, p50, p99 |", "| --- | --- | --- | --- | --- | --- | --- |"]
    base: dict[tuple[str, str], float] = {}
    for row in results:
        key = (row["pages_kind"], row["settings"])
        base.setdefault(key, row["pages_per_s"])
        lat = row.get("latency_at_half_peak")
        cpu = row["cpu_ms_per_page"]
        latency = f"{lat['rate_pages_per_s']}/s, {lat['p50_ms']:.0f} ms, {lat['p99_ms']:.0f} ms" if lat else "-"
        lines.append(f"| {row['pages_kind']} | {row['settings']} | {row['workers']} | {row['pages_per_s']} "
                     f"| {row['pages_per_s'] / base[key]:.2f} | {cpu['workers']} ({cpu['workers_and_extraction']} with "
                     f"extraction), {cpu['broker']}, {cpu['driver']} | {latency} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=4000, help="plain-text pages per backlog")
    parser.add_argument("--html-pages", type=int, default=2000, help="HTML pages per backlog (0: skip)")
    parser.add_argument("--html-file", type=Path, help="real HTML pages: a JSON-lines set (its first HTML_PAGES)")
    parser.add_argument("--repeat", type=int, default=3, help="backlogs per worker count")
    parser.add_argument("--latency-seconds", type=float, default=15.0, help="how long to feed at half peak")
    parser.add_argument("--latency-fraction", type=float, default=0.5, help="feed rate for latency, x peak")
    parser.add_argument("--profiles", default=",".join(PROFILES), help=f"worker settings to compare: {list(PROFILES)}")
    parser.add_argument("--worker-setting", action="append", default=[], metavar="NAME=VALUE",
                        help="a worker setting added to every profile, e.g. batch_size=64 (as STREAMDEDUP_NAME)")
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--partitions", type=int, default=DEFAULT_PARTITIONS,
                        help="partitions of the input (and index and parts) topics: the most workers that share work")
    parser.add_argument("--topology", choices=("global", "local"), default="global")
    parser.add_argument("--broker", choices=BROKERS, default="noida",
                        help="noida (default) or tansu (no read_committed isolation: for speed only)")
    parser.add_argument("--warm-timeout-s", type=float, default=240.0,
                        help="how long the first verdicts may take before the workers are started again (once)")
    parser.add_argument("--out", type=Path, default=Path("bench/results/broker.json"))
    args = parser.parse_args(argv)
    # SIGTERM (bench/run's time limit) ends like Ctrl-C: the `finally`s stop the workers and the broker
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    global PARTITIONS, HTML_FILE  # noqa: PLW0603 - read by the helpers above; one run, one count
    PARTITIONS, HTML_FILE = args.partitions, args.html_file
    counts = [int(w) for w in args.workers.split(",")]
    added = {f"STREAMDEDUP_{name.upper()}": value for name, _, value in (i.partition("=") for i in args.worker_setting)}
    added["STREAMDEDUP_TOPOLOGY"] = args.topology
    profiles = {name: {**PROFILES[name], **added} for name in args.profiles.split(",")}
    results = []
    with tempfile.TemporaryDirectory(prefix="broker-bench-") as tmp:
        with EmbeddedBroker(Path(tmp) / "broker", kind=args.broker) as broker:
            for kind, pages in (("text", args.pages), ("html", args.html_pages)):
                for profile, extra in profiles.items() if pages else []:
                    if kind == "html" and profile != next(iter(profiles)):
                        continue  # HTML: extraction-bound, the first profile only
                    for workers in counts:
                        row = run_topology(broker, Path(tmp), workers, pages, args.repeat, kind == "html",
                                           args.latency_seconds if kind == "text" else 0, args.latency_fraction, extra,
                                           args.warm_timeout_s)
                        results.append({"pages_kind": kind, "settings": profile, **row})
    rates: dict[str, dict[int, float]] = {}
    for row in results:
        rates.setdefault(f"{row['pages_kind']}, {row['settings']}", {})[row["workers"]] = row["pages_per_s"]
    ratios = {key: round(r[2] / r[1], 2) for key, r in rates.items() if 1 in r and 2 in r}
    report = {"broker": f"{args.broker} (embedded, loopback)", "input_partitions": PARTITIONS, "repeat": args.repeat,
              "cpus": os.cpu_count(), "worker_command": " ".join(worker_command()[1:]), "profiles": profiles,
              "two_over_one_worker": ratios, "results": results,
              "topology": args.topology}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2))
    print(table(results))
    print(f"2 workers / 1 worker: {ratios}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
