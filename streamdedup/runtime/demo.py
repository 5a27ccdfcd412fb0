"""`streamdedup demo`: the whole system on one machine, in one command.

Loads the compiled kernels (on a first run, compiles them), starts the embedded broker, creates
the topics, feeds the sample crawl shipped with the package, runs a worker until every page has a
verdict, reads the output topics back and says what happened, shows a few verdicts and where to
look next; then stops everything. Ctrl-C at any step stops it (exit 130), without a summary of a
run cut short."""

from __future__ import annotations

import itertools
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import orjson
from confluent_kafka import Message

from streamdedup.config import DetectorConfig
from streamdedup.detector import Detector
from streamdedup.record.readers import read_input
from streamdedup.runtime.broker import EmbeddedBroker
from streamdedup.runtime.feed import feed
from streamdedup.runtime.settings import WorkerSettings
from streamdedup.runtime.topics import ensure_topics
from streamdedup.runtime.worker import Worker


def read_all(settings: WorkerSettings, topic: str, expected: int, timeout_s: float = 60.0) -> list:
    """The messages of a topic read from its start until `expected` came or `timeout_s` passed."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer(settings.client(**{"group.id": f"demo-reader-{topic}", "auto.offset.reset": "earliest",
                                           "enable.auto.commit": False, "isolation.level": "read_committed",
                                           "receive.message.max.bytes": 104_857_600}))
    partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
    messages: list[Message] = []
    deadline = time.monotonic() + timeout_s
    try:
        while len(messages) < expected and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                messages.append(message)
    finally:
        consumer.close()
    return messages


# the crawl's first pages judged in process before the worker starts (`warm_kernels`)
WARM_UP_PAGES = 64


def warm_kernels(crawl: Path, config: DetectorConfig) -> float:
    """Judge the crawl's first pages in process, on a store of their own, so the compiled kernels are loaded.

    On a first run after an install, numba compiles the kernels (1-2 minutes on 2 busy cores: 106 s
    measured after `make run`'s install) and caches them beside the code; later runs load them (a
    few seconds). Done before the worker starts, so its
    figure is its own: judging and the group join. The store is temporary. Returns the seconds."""
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="streamdedup-warm-up-") as folder, Detector(config, folder) as detector:
        detector.process_batch(list(itertools.islice(read_input(str(crawl)), WARM_UP_PAGES)))
    return time.monotonic() - started


@contextmanager
def demo_folder(workdir: Path | None) -> Iterator[Path]:
    """`--workdir`, kept; without it a temporary folder, removed when the demo ends (~19 MB a sample crawl's run)."""
    if workdir is not None:
        yield workdir
        return
    with tempfile.TemporaryDirectory(prefix="streamdedup-demo-", ignore_cleanup_errors=True) as folder:
        yield Path(folder)


def run_demo(crawl: Path, workdir: Path | None, config: DetectorConfig) -> dict:
    """Run the demo on a crawl (in `workdir`, or a temporary folder) and return its summary."""
    # an earlier run's broker would hold its pages: fed again, they came out as 49 `duplicate_id`
    # rejections beside the leftovers of a run cut short, in a summary of neither run
    if workdir is not None and any((workdir / name).exists() for name in ("broker", "state")):
        raise ValueError(f"--workdir {workdir} holds an earlier demo run (its broker and stores): give a new "
                         f"--workdir, or remove that one to start over (rm -r {workdir})")
    with demo_folder(workdir) as base:
        return _run_demo(crawl, base, config, kept=workdir is not None)


def _run_demo(crawl: Path, base: Path, config: DetectorConfig, kept: bool) -> dict:
    # said before the wait: a first run compiles for a minute or two, and a silent terminal looks hung
    print("1/5 loading the compiled kernels (a first run after an install compiles them: 1-2 minutes)...",
          flush=True)
    warmed = warm_kernels(crawl, config)
    print(f"    kernels ready in {warmed:.1f} s (compiled on a first run and cached beside the code, "
          "else loaded from that cache)")
    with EmbeddedBroker(base / "broker") as broker:
        settings = WorkerSettings(bootstrap_servers=broker.bootstrap_servers, state_dir=base / "state",
                                  group_id="streamdedup-demo", worker_id="demo")
        topics = ensure_topics(settings)
        print(f"2/5 broker (noida-db) up on {broker.bootstrap_servers}; topics: "
              + ", ".join(f"{name} ({count} partition{'s' if count != 1 else ''})" for name, count in topics.items()))
        by_reader: Counter[str] = Counter()  # records the reader rejected (a WARC's 404): `feed` sends them rejected
        sent = feed(read_input(str(crawl)), settings.client(), settings.topics.pages,
                    rejected_topic=settings.topics.rejected, by_reader=by_reader)
        rejected_by_reader = by_reader.total()
        print(f"3/5 fed {sent} pages from {crawl.name} into '{settings.topics.pages}'"
              + (f" ({rejected_by_reader} the reader rejected into '{settings.topics.rejected}')"
                 if rejected_by_reader else ""))
        started = time.monotonic()
        worker = Worker(settings, config)
        stats = worker.run(idle_timeout_s=15, stop_after=sent - rejected_by_reader)
        elapsed = time.monotonic() - started
        if worker.stopped_by is not None:  # Ctrl-C: the worker finished its batch; no summary of a cut run
            raise KeyboardInterrupt(worker.stopped_by)
        print(f"4/5 worker decided {stats.decided} pages in {elapsed:.1f} s ({stats.decided / elapsed:.1f} pages/s, "
              f"including its start and the group join; {settings.topology} topology)")
        t = settings.topics
        counts = {name: stats.produced.get(topic, 0) for name, topic in
                  (("unique", t.unique), ("duplicates", t.duplicates), ("rejected", t.rejected),
                   ("cluster events", t.clusters))}
        counts["rejected"] += rejected_by_reader
        rejected = read_all(settings, t.rejected, counts["rejected"])
        reasons = Counter(dict(m.headers() or [])["dedup.reason"].decode() for m in rejected)
        events = [orjson.loads(m.value()) for m in read_all(settings, t.clusters, counts["cluster events"])]
        summary = {"pages_in": sent, **counts, "rejected_by_reason": dict(reasons), **story_counts(events),
                   "pages_per_s": round(stats.decided / elapsed, 1)}
        print("5/5 " + orjson.dumps(summary).decode())
        verdicts = [orjson.loads(m.value()) for m in read_all(settings, t.verdicts, stats.produced.get(t.verdicts, 0))]
        print(f"Some of the verdicts ({t.verdicts}; each page itself is on {t.unique}, {t.duplicates} or "
              f"{t.rejected}):")
        print("\n".join(verdict_lines(verdicts)))
        stores = (f"the stores are in {settings.state_dir}" if kept else
                  "the stores go with the demo's temporary folder (--workdir keeps them)")
        print("Where to look next:\n"
              "  - every verdict of the sample crawl, in files: `make dedup` (out/sample/)\n"
              f"  - {stores}\n"
              "  - your own broker: `streamdedup broker`; a worker: `streamdedup worker`; pages into it: "
              "`streamdedup feed FILE`\n"
              f"  - the whole system on Apache Kafka: `docker compose up` (README){commands_hint()}")
    return summary


def commands_hint() -> str:
    """How to reach `streamdedup` when it is not on the PATH ("" when it is).

    `make run` runs it from .venv/bin; the next step's `streamdedup broker` said "command not found"."""
    here = Path(sys.executable).parent
    found = shutil.which("streamdedup")
    if found is not None and Path(found).parent.resolve() == here.resolve():
        return ""
    try:
        shown = here.relative_to(Path.cwd())
    except ValueError:
        shown = here
    if (here / "activate").is_file():
        return f"; these commands are in {shown}: `. {shown}/activate` puts them on your PATH"
    return f"; these commands are in {shown}, which is not on your PATH"


def story_counts(events: list[dict]) -> dict[str, int]:
    """The demo summary's story figures from the `pages.clusters` events.

    The current stories, as `dedup`'s summary counts them (a cluster merged into another counts
    once), the largest, the stories merged into another (each once, however many pages bridged it:
    `clusters` is `clusters_created` less `merges`), and the corrections sent after a page's verdict:
    `late_match` (it joined an earlier page's story) and `late_related` (its story is related to one)."""
    kinds = Counter(e["type"] for e in events)
    sizes = Counter(e["cluster_id"] for e in events if e["type"] in ("created", "joined"))
    absorbed = {c for e in events if e["type"] == "merged" for c in e["merged"] if c != e["cluster_id"]}
    return {"clusters": kinds.get("created", 0) - len(absorbed), "clusters_created": kinds.get("created", 0),
            "clusters_with_duplicates": sum(1 for n in sizes.values() if n > 1),
            "largest_cluster": max(sizes.values(), default=0), "merges": len(absorbed),
            "late_matches": kinds.get("late_match", 0), "late_related": kinds.get("late_related", 0)}


def verdict_lines(verdicts: list[dict], per_kind: int = 3) -> list[str]:
    """A few verdicts of each kind, one line each, pages named by url.

    What a duplicate copies, what a unique page supersedes or is related to (those first), why a
    record was rejected.

    `verdicts` are `pages.verdicts` records (the page's id, url and its `dedup` object), in order."""
    urls = {v["id"]: v["url"] for v in verdicts if v.get("id") and v.get("url")}

    def named(ids: list[str]) -> str:
        return ", ".join(urls.get(i, i) for i in ids)

    def plain(verdict: dict) -> bool:  # a unique page without an earlier page it names: shown last
        return not (verdict["dedup"].get("supersedes") or verdict["dedup"].get("related_to"))

    lines: dict[str, list[str]] = {"duplicate": [], "unique": [], "rejected": []}
    for verdict in sorted(verdicts, key=plain):
        dedup, url = verdict["dedup"], verdict.get("url")
        status = dedup["status"]
        if status not in lines or len(lines[status]) >= per_kind:
            continue
        if status == "duplicate":
            line = (f"of {named([dedup['duplicate_of']])} ({dedup.get('method')} similarity "
                    f"{dedup.get('similarity') or 0:.2f}, {dedup.get('new_share') or 0:.0%} of its text new)")
        elif status == "unique":
            line = "; ".join(f"{word} {named(dedup[key])}" for key, word in
                             (("supersedes", "supersedes"), ("related_to", "related to")) if dedup.get(key)) \
                or "no earlier copy"
        else:
            line = f"{dedup.get('reason')}: {dedup.get('detail')}"
        lines[status].append(f"  {status:<9}  {url or dedup.get('origin', '?')}  {line}")
    return [line for kind in lines.values() for line in kind]
