"""Clusters and merges on 6 partitions vs file mode, on real article text (issue 58's floor).

    python bench/cluster_agreement.py [--stories 200] [--workers 1,3] [--partitions 6] [--out FILE.json]
        [--env STREAMDEDUP_VERDICT_WAIT_S=1] [--stall-worker SECONDS | --join-mid-burst]

Real articles (the readability and trafilatura test pages in ../shared/data, their text taken by
trafilatura) become a fetch-ordered plain-text news crawl: each story on 2-5 sites (wire copies),
every third copy a revision (one paragraph rewritten, one added), and per ten stories a bridge:
story X's text with the start of the next, Y, appended (it supersedes X), then X less its start
with all of Y (it supersedes Y, related to the page before: under directional verdicts neither
merges two clusters), and a paginated story: its two halves on one site (`?page=1`, `?page=2`, two
clusters), then its view-all page there (a real merge: it supersedes both, its own site's parts)
and a copy of that on another site (a duplicate). The crawl
goes through `streamdedup dedup` (the reference) and through N `streamdedup worker` processes on
`--partitions` partitions (bench/agreement.py's harness: an embedded broker, one burst fed by site).
Stress, as bench/agreement.py's: `--stall-worker S` stops one worker for S seconds as the burst
comes, `--join-mid-burst` starts the others while the first holds every partition; `--env` sets a
worker variable (a short `STREAMDEDUP_VERDICT_WAIT_S` releases more pages by their wait).

Figures per worker count (JSON on stdout and `--out`): pages; pages whose status, duplicate_of,
cluster_id or merged_clusters differ from file mode's; `merged` events of file mode and of the
workers; false merges (worker `merged` events not in file mode's) and missed ones, counting the
late `merged` events of pages out by their wait before their matches' clusters were named
(`late_merges`, also counted apart); whether the clusters (`clusters_of` over the events) are equal.
"""

from __future__ import annotations

import argparse
import random
import tarfile
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

try:
    from agreement import file_mode, run_workers  # bench/agreement.py
except ImportError:  # a venv without the [kafka] extra (a notebook's): one line naming the fix, not a traceback
    from peers import kafka_client  # bench/

    kafka_client("bench/cluster_agreement.py")
    raise
from peers import archives  # bench/
from report_io import print_report  # bench/report_io.py

from streamdedup.outputs.kafka import cluster_events
from streamdedup.runtime.broker import EmbeddedBroker
from streamdedup.runtime.scaleout.clusters import clusters_of

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
ARCHIVES = ("readability-test-pages.tar.gz", "trafilatura-test-pages.tar.gz")
FIELDS = ("status", "duplicate_of", "cluster_id", "merged_clusters")


def articles(limit: int) -> list[list[str]]:
    """Paragraphs of real articles (>= 6 paragraphs of >= 20 words), each text once."""
    import trafilatura

    found: list[list[str]] = []
    seen: set[str] = set()
    for name in ARCHIVES:
        with tarfile.open(SHARED / name) as tar:
            for member in sorted((m for m in tar.getmembers() if m.isfile() and m.name.endswith((".html", ".htm"))),
                                 key=lambda m: m.name):
                html = tar.extractfile(member).read().decode("utf-8", "replace")  # type: ignore[union-attr]
                text = trafilatura.extract(html) or ""
                paragraphs = [p for p in text.split("\n") if len(p.split()) >= 20]
                if len(paragraphs) >= 6 and paragraphs[0] not in seen:
                    seen.add(paragraphs[0])
                    found.append(paragraphs[:12])
                if len(found) >= limit:
                    return found
    return found


def news_crawl(stories: list[list[str]], path: Path, seed: int = 58,
               paginated: Sequence[list[str]] = ()) -> dict[str, int]:
    """The crawl (see the module's docstring), written fetch-ordered; its make-up.

    `paginated`: stories published only as a paginated article, one per ten `stories` (fewer: fewer)."""
    rng = random.Random(seed)
    pages: list[tuple[str, str]] = []  # url, text
    made = {"stories": len(stories), "wire_copies": 0, "revisions": 0, "bridges": 0, "paginated": 0}
    for i, story in enumerate(stories):
        if i % 10 in (8, 9):  # the two stories a bridge joins: 6 paragraphs each (as in test_one_engine)
            story = story[:6]
        for j in range(rng.randint(2, 5)):
            text = list(story)
            if j and j % 3 == 0:
                k = rng.randrange(len(text))
                text[k] = " ".join(reversed(text[k].split()))
                text.append(f"Update: this story was revised at {j} o'clock with comment from officials.")
                made["revisions"] += 1
            made["wire_copies"] += j > 0
            pages.append((f"https://site{j}.example/story/{i}", "\n\n".join(text)))
        if i % 10 == 9:  # X then Y; B = X + Y's start joins X; C = X less its start + Y matches Y and B, not X
            x, y = stories[i - 1][:6], story
            pages.append((f"https://extended.example/{i}", "\n\n".join(x + y[:3])))
            pages.append((f"https://bridge.example/{i}", "\n\n".join(x[2:] + y)))
            made["bridges"] += 1
            if i // 10 < len(paginated):  # two parts, then the view-all page joining them, then its copy
                z = paginated[i // 10]
                half = len(z) // 2
                pages.append((f"https://paged.example/{i}?page=1", "\n\n".join(z[:half])))
                pages.append((f"https://paged.example/{i}?page=2", "\n\n".join(z[half:])))
                pages.append((f"https://paged.example/{i}?view=all", "\n\n".join(z)))
                pages.append((f"https://wire.example/paged/{i}", "\n\n".join(z)))
                made["paginated"] += 1
    with open(path, "wb") as out:
        for n, (url, text) in enumerate(pages):
            out.write(orjson.dumps({"url": url, "content": text, "content_type": "text/plain",
                                    "fetched_at": f"2024-03-{1 + n // 86400:02d}T{n // 3600 % 24:02d}:"
                                                  f"{n // 60 % 60:02d}:{n % 60:02d}Z"}) + b"\n")
    made["pages"] = len(pages)
    return made


def merges(dedups: list[dict[str, Any]]) -> set[tuple[str, str, tuple[str, ...]]]:
    return {(e["page_id"], e["cluster_id"], tuple(e["merged"])) for d in dedups for e in cluster_events(d)
            if e["type"] == "merged"}


def compare(reference: list[dict[str, Any]], got: dict[str, Any]) -> dict[str, Any]:
    expected = {d["id"]: d for d in reference}
    worker = {d["id"]: d for d in got["dedups"]}
    differ = [page for page, d in expected.items() if any(d.get(f) != worker.get(page, {}).get(f) for f in FIELDS)]
    want = merges(reference)
    have = {(e["page_id"], e["cluster_id"], tuple(e["merged"])) for e in got["events"] if e["type"] == "merged"}
    reference_events = [e for d in reference for e in cluster_events(d)]
    # directions: what a kept page supersedes is file mode's; `related_to` names a related match's
    # cluster as its index partition knows it (not asked of its gather), so it may differ
    supersedes = sum(d.get("supersedes") != worker.get(page, {}).get("supersedes") for page, d in expected.items())
    related = sum(d.get("related_to") != worker.get(page, {}).get("related_to") for page, d in expected.items())
    return {"pages": len(worker), "pages_differing": len(differ), "differing_examples": differ[:3],
            "supersedes_differing": supersedes, "related_to_differing": related,
            "merged_events_file_mode": len(want), "merged_events": len(have), "false_merges": len(have - want),
            "missed_merges": len(want - have), "late_matches": sum(e["type"] == "late_match" for e in got["events"]),
            "late_related": sum(e["type"] == "late_related" for e in got["events"]),
            "late_merges": sum(e["type"] == "merged" and bool(e.get("late")) for e in got["events"]),
            "late_merges_by_cause": got.get("late_merges_by_cause", {}),
            "clusters_equal": clusters_of(got["events"]) == clusters_of(reference_events),
            **cluster_differences(clusters_of(reference_events), clusters_of(got["events"])),
            "seconds": got["seconds"]}


def cluster_differences(reference: list[frozenset[str]], got: list[frozenset[str]]) -> dict[str, Any]:
    """File mode's stories the workers split (pages in two clusters or more) and workers' clusters that join stories."""
    story = {page: n for n, pages in enumerate(reference) for page in pages}
    cluster = {page: n for n, pages in enumerate(got) for page in pages}
    split = [pages for pages in reference if len({cluster.get(p) for p in pages}) > 1]
    joined = [pages for pages in got if len({story.get(p) for p in pages}) > 1]
    return {"stories_split": len(split), "stories_joined": len(joined),
            "split_examples": [[sorted(p for p in pages if cluster.get(p) == n)
                                for n in sorted({cluster.get(p) for p in pages}, key=str)] for pages in split[:2]]}


def main() -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stories", type=int, default=300)
    parser.add_argument("--workers", default="1,3")
    parser.add_argument("--partitions", type=int, default=6)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--dump", type=Path, help="a folder: file mode's verdicts and the workers' verdicts and "
                                                  "events, written where the clusters differ or a merge is false")
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                        help="an environment variable for the workers (repeatable), e.g. STREAMDEDUP_VERDICT_WAIT_S=1")
    stress = parser.add_mutually_exclusive_group()
    stress.add_argument("--stall-worker", type=float, default=0.0, metavar="SECONDS",
                        help="stop one worker (SIGSTOP) for SECONDS as the burst comes")
    stress.add_argument("--join-mid-burst", action="store_true",
                        help="the first worker takes every partition and idles before the others join")
    args = parser.parse_args()
    archives("bench/cluster_agreement.py", [SHARED / name for name in ARCHIVES])
    env = dict(item.split("=", 1) for item in args.env)
    with tempfile.TemporaryDirectory(prefix="cluster-agreement-") as tmp:
        work = Path(tmp)
        crawl = work / "crawl.jsonl"
        found = articles(args.stories + args.stories // 10)
        made = news_crawl(found[:args.stories], crawl, paginated=found[args.stories:])
        reference, rejected = file_mode(crawl, work)
        result: dict[str, Any] = {"crawl": made, "partitions": args.partitions, "file_mode_rejected": rejected,
                                  "env": env, "stall_worker_s": args.stall_worker,
                                  "join_mid_burst": args.join_mid_burst, "runs": {}}
        with EmbeddedBroker(work / "broker") as broker:
            for workers in (int(n) for n in args.workers.split(",")):
                got = run_workers(broker, crawl, workers, args.partitions, work / f"w{workers}", env,
                                  args.join_mid_burst, args.stall_worker)
                result["runs"][str(workers)] = compare(reference, got)
                run = result["runs"][str(workers)]
                if args.dump and (not run["clusters_equal"] or run["false_merges"]):  # to trace the difference
                    (args.dump / f"w{workers}.json").write_bytes(orjson.dumps(
                        {"reference": reference, "dedups": got["dedups"], "events": got["events"]}))
    print_report(result, args.out)
    return result


if __name__ == "__main__":
    main()
