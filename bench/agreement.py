"""Many workers vs file mode on the same pages: do the near-duplicate pairs agree? (issue 15)

    python bench/agreement.py [--input FILE] [--workers 1,3] [--partitions 6] [--out FILE.json]

An embedded noida-db broker on a free loopback port (as `streamdedup demo` starts it). The crawl
is fed in one burst (`streamdedup feed`: keyed by site) to a fresh `pages` topic of
`--partitions` partitions; N workers (threads of this process, the global topology) run until
every page has its outcome. One `streamdedup dedup` run on the same file is the reference.

Figures per worker count (JSON on stdout, and `--out`):
- `edges_*`: Jaccard of the sets of (page, the earliest page it duplicates) edges against file
  mode's, as emitted (`duplicate_of` of the verdicts) and after applying the `late_match`
  corrections from `pages.clusters` (`clusters.corrected_pairs`);
- `cluster_pairs_*`: Jaccard of the sets of unordered pairs of pages in one cluster: at emit time
  the clusters the verdicts name (cluster_id, duplicate_of, merged_clusters), after corrections
  those plus the late-match edges (`clusters.clusters_of`);
- exactly once: every page has one outcome (verdict or rejection), none twice, none missing;
- `late_pages`, `late_matches_by_cause`: the workers' counters, read from their /metrics before
  they stop (why each late match came: docs/scaleout.md, "The race, and late matches").

`--simulate SEEDS` runs no broker: the index and gather steps in-process, every index partition's
arrivals shuffled (a site's pages kept in order), every page held until its supplements are in
(final verdicts with no bounded wait), to see what an arrival order alone changes;
`--syndicated STORIES,COPIES` generates a plain-text crawl of each story on COPIES sites as input.
`--join-mid-burst`: one worker starts first, takes every partition and goes idle (its infinite
watermarks out); the others start, and the burst is fed once the group has them all, while
noida-db may still be moving partitions (how the natural runs that had late matches looked).
`--stall-worker SECONDS`: once every worker is idle, one is stopped (SIGSTOP) as the burst is fed
and continued SECONDS later: its idle claims stand while its records wait (`idle_claims_doubted`:
how many the index partitions set aside); with `--index-partitions 2` (fewer than the workers)
the one stopped holds no index partition, so the others' pages need none of its answers.

Default input: /tmp/readme-eval/web-dev.jsonl if present (428 real pages built by `streamdedup
devset`, with many syndicated copies), else the sample crawl shipped with the package.
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import orjson
from broker import wait_for_members  # bench/broker.py
from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from prometheus_client.parser import text_string_to_metric_families
from report_io import print_report  # bench/report_io.py

from streamdedup.record.page import page_from_record
from streamdedup.record.readers import read_input
from streamdedup.runtime.broker import EmbeddedBroker, free_port
from streamdedup.runtime.feed import feed
from streamdedup.runtime.scaleout.clusters import UnionFind, corrected_pairs
from streamdedup.runtime.settings import Topics, WorkerSettings
from streamdedup.runtime.topics import ensure_topics, topic_config

REAL_CRAWL = Path("/tmp/readme-eval/web-dev.jsonl")
SAMPLE = Path(__file__).resolve().parent.parent / "streamdedup" / "data" / "sample_crawl.jsonl.gz"


def jaccard(a: set[Any], b: set[Any]) -> float:
    return len(a & b) / len(a | b) if a | b else 1.0


def cluster_pairs(dedups: Iterable[Mapping[str, Any]], events: Iterable[Mapping[str, Any]] = ()) -> set[tuple[str, str]]:
    """Unordered pairs of pages in one cluster: the components of the verdicts' cluster_id,
    duplicate_of and merged_clusters links, plus any late-match edges."""
    union = UnionFind()
    pages = []
    for dedup in dedups:
        page = dedup["id"]
        pages.append(page)
        union.union(page, dedup["cluster_id"])
        for other in (dedup.get("duplicate_of"), *dedup.get("merged_clusters", ())):
            if other:
                union.union(page, other)
    for event in events:
        if event["type"] == "late_match":
            union.union(event["page_id"], event["duplicate_of"])
    groups: dict[str, list[str]] = {}
    for page in pages:
        groups.setdefault(union.find(page), []).append(page)
    return {tuple(sorted(pair)) for group in groups.values() for pair in itertools.combinations(group, 2)}  # type: ignore[misc]


def file_mode(path: Path, work: Path) -> tuple[list[dict[str, Any]], int]:
    """`streamdedup dedup` on the file: its verdicts' dedup objects and its rejection count."""
    out = work / "file-mode"
    subprocess.run([sys.executable, "-m", "streamdedup", "dedup", str(path), "--out", str(out), "-q"], check=True)
    dedups = [orjson.loads(line)["dedup"] for name in ("unique.jsonl", "duplicates.jsonl")
              for line in (out / name).read_bytes().splitlines() if line.strip()]
    rejected = sum(1 for line in (out / "rejected.jsonl").read_bytes().splitlines() if line.strip())
    return dedups, rejected


class Collector:
    """Reads the output topics as the workers commit them (read_committed), from the start."""

    def __init__(self, settings: WorkerSettings) -> None:
        t = settings.topics
        self.kinds = {t.unique: "verdict", t.duplicates: "verdict", t.rejected: "rejected", t.clusters: "event"}
        self.consumer = Consumer(settings.client(**{
            "group.id": f"agreement-{uuid.uuid4().hex[:6]}", "auto.offset.reset": "earliest",
            "enable.auto.commit": False, "isolation.level": "read_committed", "receive.message.max.bytes": 104_857_600}))
        self.consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for topic in self.kinds
                              for p in self.consumer.list_topics(topic, timeout=10).topics[topic].partitions])
        self.got: dict[str, list[Any]] = {"verdict": [], "rejected": [], "event": []}

    def poll(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            message = self.consumer.poll(0.1)
            if message is not None and message.error() is None:
                self.got[self.kinds[message.topic() or ""]].append(message)

    def outcomes(self) -> int:
        return len(self.got["verdict"]) + len(self.got["rejected"])

    def close(self) -> None:
        self.consumer.close()


def worker_env(settings: WorkerSettings, worker_id: str, extra: Mapping[str, str]) -> dict[str, str]:
    return {**os.environ, **extra, "STREAMDEDUP_BOOTSTRAP_SERVERS": settings.bootstrap_servers,
            "STREAMDEDUP_GROUP_ID": settings.group_id, "STREAMDEDUP_WORKER_ID": worker_id,
            "STREAMDEDUP_STATE_DIR": str(settings.state_dir / worker_id),
            "STREAMDEDUP_PARTITIONS": str(settings.partitions),
            **{f"STREAMDEDUP_TOPIC_{k.upper()}": v for k, v in settings.topics.__dict__.items()}}


def run_workers(broker: EmbeddedBroker, path: Path, workers: int, partitions: int, work: Path,
                env: Mapping[str, str], join_mid_burst: bool = False, stall_s: float = 0.0,
                index_partitions: int | None = None) -> dict[str, Any]:
    """N `streamdedup worker` processes (each its own extractor helper, as in production).
    `join_mid_burst`: the first worker takes every partition and goes idle (its infinite
    watermarks out) before the others start; the burst follows once the group has them all, and
    noida-db may still be moving partitions as it arrives (the pattern of the natural runs whose
    late matches came after idle). `stall_s`: once every worker is idle (its claims out), the first
    is stopped (SIGSTOP) as the burst is fed and continued after `stall_s` seconds: a stalled
    worker cannot take its idle claims back when its records come (scaleout/idle_claims.py); the
    one stopped holds input partitions and no index partition if a worker does (with fewer index
    partitions than workers, `index_partitions`), so the others' pages do not wait for its answers."""
    run = uuid.uuid4().hex[:8]
    topics = Topics(pages=f"pages-{run}", unique=f"unique-{run}", duplicates=f"dups-{run}",
                    rejected=f"rejected-{run}", clusters=f"clusters-{run}", index=f"index-{run}", parts=f"parts-{run}")
    settings = WorkerSettings(bootstrap_servers=broker.bootstrap_servers, group_id=f"agreement-{run}",
                              worker_id="w0", state_dir=work / f"state-{run}", topics=topics, partitions=partitions)
    if index_partitions:  # fewer than the input's: some worker may hold none
        admin = AdminClient(settings.client())
        [created] = admin.create_topics([NewTopic(topics.index, num_partitions=index_partitions, replication_factor=1,
                                                  config=topic_config(topics.index, settings))]).values()
        created.result(15)
    ensure_topics(settings)
    logs = work / f"logs-{run}"
    logs.mkdir(parents=True)
    ports = [free_port() for _ in range(workers)]  # each worker's /metrics, read before it stops

    def start(i: int) -> subprocess.Popen[bytes]:
        return subprocess.Popen([sys.executable, "-m", "streamdedup", "worker"],
                                env=worker_env(settings, f"w{i}", {**env, "STREAMDEDUP_METRICS_PORT": str(ports[i])}),
                                stdin=subprocess.DEVNULL, stdout=open(logs / f"w{i}.log", "ab"), stderr=subprocess.STDOUT)

    processes = [start(i) for i in range(1 if join_mid_burst else workers)]
    collector = Collector(settings)
    try:
        if join_mid_burst:
            if not wait_for_members(settings, 1, timeout=90):
                time.sleep(5)
            time.sleep(3)  # assigned, caught up and idle: its infinite watermarks are out
            processes += [start(i) for i in range(1, workers)]
        # the group has its members first, then the burst arrives (noida-db may still be assigning:
        # how the natural runs met a rebalance mid-burst)
        if not wait_for_members(settings, workers, timeout=90):
            time.sleep(5)  # the broker cannot say: give the group time to form
        if stall_s:
            time.sleep(2 * settings.watermark_interval_s + 1)  # every input idle, its claim out
            stalled = processes[stall_target(settings)]
            stalled.send_signal(signal.SIGSTOP)
            threading.Timer(stall_s, stalled.send_signal, (signal.SIGCONT,)).start()
        sent = feed(read_input(str(path)), settings.client(), topics.pages)
        started = time.monotonic()
        while collector.outcomes() < sent and time.monotonic() - started < 900:
            if any(p.poll() is not None for p in processes):
                raise RuntimeError(f"a worker ended: see {logs}")
            collector.poll(0.5)
        elapsed = time.monotonic() - started
        collector.poll(3.0)  # anything beyond one outcome per page (a doubled page) would show up
        late = late_counts(ports)
    finally:
        collector.close()
        for process in processes:
            if process.poll() is None:
                process.send_signal(signal.SIGCONT)  # a stalled one (a no-op for the others)
                process.send_signal(signal.SIGTERM)
        for process in processes:
            process.wait(timeout=60)
    events = [orjson.loads(m.value()) for m in collector.got["event"]]
    dedups = [orjson.loads(m.value())["dedup"] for m in collector.got["verdict"]]
    reasons = [dict(m.headers() or []).get("dedup.reason", b"").decode() for m in collector.got["rejected"]]
    return {"sent": sent, "dedups": dedups, "rejected": reasons, "events": events, "seconds": round(elapsed, 2),
            "logs": str(logs), **late}


def stall_target(settings: WorkerSettings) -> int:
    """The worker to stop: one holding input partitions and no index partition if there is one,
    else the first (static members: `streamdedup-w<i>`)."""
    admin = AdminClient(settings.client())
    [described] = admin.describe_consumer_groups([settings.group_id], request_timeout=5).values()
    for member in described.result(timeout=5).members:
        topics = {tp.topic for tp in (member.assignment.topic_partitions if member.assignment else [])}
        if settings.topics.pages in topics and settings.topics.index not in topics and member.group_instance_id:
            return int(member.group_instance_id.rsplit("-w", 1)[1])
    return 0


def late_counts(ports: Iterable[int]) -> dict[str, Any]:
    """The workers' late pages (summed over input partitions), late matches and merges by cause, read
    from their /metrics: why a late match came (scaleout.md, "The race, and late matches")."""
    pages, matches, merges, doubted = 0.0, {}, {}, 0.0
    for port in ports:
        text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()  # noqa: S310
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name == "streamdedup_late_pages_total":
                    pages += sample.value
                elif sample.name == "streamdedup_idle_claims_doubted_total":
                    doubted += sample.value
                elif sample.name in ("streamdedup_late_matches_total", "streamdedup_late_merges_total"):
                    cause, counts = sample.labels["cause"], matches if "matches" in sample.name else merges
                    counts[cause] = counts.get(cause, 0) + int(sample.value)
    return {"late_pages": int(pages), "late_matches_by_cause": matches, "late_merges_by_cause": merges,
            "idle_claims_doubted": int(doubted)}


def compare(reference: list[dict[str, Any]], got: dict[str, Any], order: Mapping[str, int]) -> dict[str, Any]:
    ids = [d["id"] for d in got["dedups"]]
    file_edges = {(d["id"], d["duplicate_of"]) for d in reference if d.get("duplicate_of")}
    emitted = {(d["id"], d["duplicate_of"]) for d in got["dedups"] if d.get("duplicate_of")}
    corrected = set(corrected_pairs(got["dedups"], got["events"], order=order.__getitem__).items())
    file_clusters = cluster_pairs(reference)
    late = [e for e in got["events"] if e["type"] == "late_match"]
    return {
        "pages": len(set(ids)), "verdicts": len(ids), "rejected": got["rejected"], "sent": got["sent"],
        "exactly_once": len(ids) == len(set(ids)) and set(ids) == {d["id"] for d in reference},
        "edges_file_mode": len(file_edges), "edges_emitted": len(emitted), "edges_corrected": len(corrected),
        "edges_agreement_emitted": round(jaccard(emitted, file_edges), 4),
        "edges_agreement_corrected": round(jaccard(corrected, file_edges), 4),
        "edges_extra_after_corrections": sorted(corrected - file_edges)[:20],
        "edges_missing_after_corrections": sorted(file_edges - corrected)[:20],
        "cluster_pairs_file_mode": len(file_clusters),
        "cluster_pairs_agreement_emitted": round(jaccard(cluster_pairs(got["dedups"]), file_clusters), 4),
        "cluster_pairs_agreement_corrected": round(jaccard(cluster_pairs(got["dedups"], late), file_clusters), 4),
        "late_matches": len(late), "seconds": got["seconds"],
        **{k: got[k] for k in ("late_pages", "late_matches_by_cause", "idle_claims_doubted") if k in got},
    }


def simulate(path: Path, partitions: int, seed: int, work: Path) -> dict[str, Any]:
    """The global topology's index and gather steps in this process, every index partition's
    arrivals in a random order (the worst a burst can do; a site's pages stay in order, as feed
    keys by site): which divergences from file mode an arrival order alone can cause."""
    import random

    from streamdedup.config import DetectorConfig
    from streamdedup.fingerprinter import Fingerprinted, Fingerprinter
    from streamdedup.own_text import own_text
    from streamdedup.runtime.scaleout.gather_verdicts import verdict_of
    from streamdedup.runtime.scaleout.index_stage import IndexPartition, supplements_of
    from streamdedup.runtime.scaleout.messages import Answer, IndexRequest, Match, PageHeader
    from streamdedup.runtime.scaleout.routing import page_order
    from streamdedup.runtime.topologies.fingerprint_stage import shown_lines_record
    from streamdedup.runtime.topologies.scaleout import index_requests
    from streamdedup.store.signature_store import method_tags
    from streamdedup.store.template_store import TemplateStore

    config = DetectorConfig()
    fingerprinter = Fingerprinter(config)
    tags = method_tags([m.name for m in fingerprinter.methods])
    templates = TemplateStore(work / f"sim-{seed}-templates")
    policy = config.site_policies()
    index = [IndexPartition(work / f"sim-{seed}-index-{p}", fingerprinter.methods, policy, fingerprinter.store_config, p)
             for p in range(partitions)]
    rng = random.Random(seed)
    arrivals: dict[int, list[tuple[float, int, IndexRequest]]] = {p: [] for p in range(partitions)}
    headers: dict[str, PageHeader] = {}
    rejected = []
    for position, raw in enumerate(read_input(str(path))):
        item = fingerprinter.prepare(raw)
        if isinstance(item, Fingerprinted) and config.template is not None:
            item = own_text(item, templates.template(item.site_hash), fingerprinter, config.template)
        if not isinstance(item, Fingerprinted) or item.page.id in headers:
            rejected.append(position)
            continue
        order = page_order(position, position, 0, position)
        doc, keys = index_requests(item, fingerprinter.methods, tags, position, partitions)
        shown = shown_lines_record(item, fingerprinter.methods)  # as the fingerprint stage sends it
        headers[item.page.id] = PageHeader(item.page.id, order, tuple(sorted(keys)), {}, "sim")
        for p, partition_keys in keys.items():
            arrivals[p].append((rng.random(), item.site_hash, IndexRequest(order, doc, partition_keys, True,
                                                                            item.template_known, shown=shown)))
    answers: dict[str, list[Answer]] = {}
    supplements: dict[str, list[Match]] = {}  # every page held until its supplements are in (final verdicts)
    for p, requests in arrivals.items():
        shuffled = sorted(requests, key=lambda r: r[0])
        slots: dict[int, list[int]] = {}
        for i, (_, site, _) in enumerate(shuffled):
            slots.setdefault(site, []).append(i)
        in_site_order = list(shuffled)
        for site_slots in slots.values():  # one input partition per site: its requests keep their order
            for i, request in zip(site_slots, sorted((shuffled[i] for i in site_slots), key=lambda r: r[2].order),
                                  strict=True):
                in_site_order[i] = request
        for _, _, request in in_site_order:
            answer = index[p].answer(request)
            answers.setdefault(request.doc.page_id, []).append(answer)
            for supplement in supplements_of(answer):
                supplements.setdefault(supplement.page_id, []).append(supplement.match)
        index[p].commit()
        index[p].close()
    templates.close()
    dedups = [verdict_of(header, answers.get(page_id, []), supplements.get(page_id, []))
              for page_id, header in headers.items()]
    return {"sent": position + 1, "dedups": dedups, "rejected": rejected, "events": [], "seconds": 0}


def syndicated(stories: int, copies: int, path: Path) -> Path:
    """A fetch-ordered plain-text crawl: each story on `copies` sites, every third copy edited."""
    from streamdedup.testing import make_article

    with open(path, "wb") as out:
        for i in range(stories):
            story = make_article(3000 + i, paragraphs=4)
            for j in range(copies):
                text = story if j % 3 else [*story[:-1], story[-1] + f" Updated {j}."]
                second = i * copies + j
                out.write(orjson.dumps({"url": f"https://s{j}.example/{i}", "content": "\n\n".join(text),
                                        "content_type": "text/plain",
                                        "fetched_at": f"2024-03-01T{second // 3600:02d}:{second // 60 % 60:02d}:"
                                                      f"{second % 60:02d}Z"}) + b"\n")
    return path


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--input", type=Path, default=REAL_CRAWL if REAL_CRAWL.exists() else SAMPLE)
    parser.add_argument("--workers", default="1,3", help="comma-separated worker counts to measure")
    parser.add_argument("--partitions", type=int, default=6)
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                        help="an environment variable for the workers (repeatable), e.g. STREAMDEDUP_BATCH_SIZE=64")
    parser.add_argument("--simulate", type=int, metavar="SEEDS",
                        help="no broker: the index and gather steps in-process, arrivals shuffled, SEEDS orders")
    parser.add_argument("--syndicated", metavar="STORIES,COPIES",
                        help="input: a generated plain-text crawl, each story on COPIES sites (e.g. 2,80)")
    parser.add_argument("--join-mid-burst", action="store_true",
                        help="one worker first, idle; the others join just before the burst (a rebalance may meet it)")
    parser.add_argument("--stall-worker", type=float, default=0.0, metavar="SECONDS",
                        help="stop one idle worker (SIGSTOP) as the burst is fed, for SECONDS (below the verdict wait)")
    parser.add_argument("--index-partitions", type=int, metavar="N",
                        help="the index topic's partitions (default: --partitions); fewer than the workers "
                             "leaves some worker without one")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    env = dict(item.split("=", 1) for item in args.env)
    work = Path(tempfile.mkdtemp(prefix="agreement-"))
    if args.syndicated:
        stories, copies = (int(n) for n in args.syndicated.split(","))
        args.input = syndicated(stories, copies, work / "syndicated.jsonl")
    reference, file_rejected = file_mode(args.input, work)
    # "earliest" for the corrections: file mode's order, the input's (the global order is event
    # time first; the default inputs are in fetch order with distinct fetch times, so they agree)
    order = {d["id"]: i for i, d in enumerate(sorted(reference, key=lambda d: d["id"]))}
    raw = gzip.decompress(args.input.read_bytes()) if args.input.suffix == ".gz" else args.input.read_bytes()
    for i, line in enumerate(raw.splitlines()):
        try:
            page = page_from_record(orjson.loads(line), max_content_bytes=1 << 40)
        except Exception:  # noqa: BLE001, S112 - a bad record has no verdict to order
            continue
        order[page.id] = -len(raw) + i  # before any id only the sort above placed
    result: dict[str, Any] = {"input": str(args.input), "partitions": args.partitions, "env": env,
                              "join_mid_burst": args.join_mid_burst, "stall_worker_s": args.stall_worker,
                              "index_partitions": args.index_partitions,
                              "file_mode": {"pages": len(reference), "rejected": file_rejected}}
    if args.simulate:
        for seed in range(args.simulate):
            result[f"simulated_{seed}"] = compare(reference, simulate(args.input, args.partitions, seed, work), order)
            print(json.dumps({f"simulated_{seed}": result[f"simulated_{seed}"]}), file=sys.stderr)
        args.workers = ""
    counts = [int(w) for w in args.workers.split(",") if w]
    if counts:
        with EmbeddedBroker(work / "broker") as broker:
            for workers in counts:
                got = run_workers(broker, args.input, workers, args.partitions, work, env, args.join_mid_burst,
                                  args.stall_worker, args.index_partitions)
                result[f"workers_{workers}"] = compare(reference, got, order)
                print(json.dumps({f"workers_{workers}": result[f"workers_{workers}"]}), file=sys.stderr)
    print_report(result, args.out, indent=1)
    return result


if __name__ == "__main__":
    main()
