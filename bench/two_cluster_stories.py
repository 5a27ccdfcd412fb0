"""story-dev + feed-dev as one crawl, feed-dev's pages dated later: file mode vs the global topology.

    python bench/two_cluster_stories.py [--days 80] [--workers 2] [--partitions 3] [--out FILE.json]

feed-dev's pages moved `--days` later (undated pages kept after the dated page before them), then
every page in fetch-time order: feed-dev's original of an article story-dev fetched three times
comes after those fetches, a story of two clusters (docs/limitations.md, "A story made of two
clusters"). The crawl goes through `streamdedup dedup` and through N workers on `--partitions`
partitions (bench/agreement.py's harness, an embedded broker); bench/cluster_agreement.py's
comparison, with each mode's story count and the cluster `feed-dev-original-00030` joins. Ids of
undated pages differ between the modes (Kafka makes them from offsets), so their fields and
stories count as differing however they are judged.
"""

from __future__ import annotations

import argparse
import datetime as dt
import tempfile
from pathlib import Path
from typing import Any

import orjson
from agreement import file_mode, run_workers  # bench/agreement.py
from cluster_agreement import compare  # bench/cluster_agreement.py
from report_io import print_report  # bench/report_io.py

from streamdedup.outputs.kafka import cluster_events
from streamdedup.runtime.broker import EmbeddedBroker
from streamdedup.runtime.scaleout.clusters import clusters_of

SETS = Path("/work/sets")
WATCHED = "feed-dev-original-00030"


def crawl(sets: Path, days: int) -> list[dict[str, Any]]:
    """The two dev sets, feed-dev's pages `days` later, in fetch-time order."""
    rows: list[dict[str, Any]] = []
    for name in ("story", "feed"):
        for line in (sets / f"{name}-dev.jsonl").read_bytes().splitlines():
            row = orjson.loads(line)
            if name == "feed" and row.get("fetched_at"):
                moved = dt.datetime.fromisoformat(row["fetched_at"].replace("Z", "+00:00")) + dt.timedelta(days=days)
                row["fetched_at"] = moved.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
            rows.append(row)
    keys, last = [], ""
    for row in rows:  # an undated page stays after the dated page before it
        last = row.get("fetched_at") or last
        keys.append(last)
    return [row for _, _, row in sorted(zip(keys, range(len(rows)), rows, strict=True))]


def main() -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sets", type=Path, default=SETS)
    parser.add_argument("--days", type=int, default=80)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--partitions", type=int, default=3)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="two-cluster-stories-"))
    path = work / "crawl.jsonl"
    path.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in crawl(args.sets, args.days)))
    reference, _ = file_mode(path, work)
    with EmbeddedBroker(work / "broker") as broker:
        got = run_workers(broker, path, args.workers, args.partitions, work, {})
    result = compare(reference, got)
    result.update({"file_mode_stories": len(clusters_of([e for d in reference for e in cluster_events(d)])),
                   "worker_stories": len(clusters_of(got["events"])),
                   f"{WATCHED}_cluster": next((d["cluster_id"] for d in reference if d["id"] == WATCHED), None),
                   f"{WATCHED}_cluster_worker": next((d["cluster_id"] for d in got["dedups"] if d["id"] == WATCHED),
                                                     None)})
    print_report(result, args.out)
    return result


if __name__ == "__main__":
    main()
