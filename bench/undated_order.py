"""Stories listing undated pages out of the order they were judged (the news feed's story order).

    python bench/undated_order.py OUT_DIR [--no-ids]

story-dev + feed-dev (/work/sets) as one crawl in time order (`fetched_at`, else the set's
`arrived_at`), the undated records given their `label_id` as `id` (`--no-ids`: the reader makes
their ids), through `streamdedup dedup`; then each story of 2+ pages holding an undated page is
checked against `verdicts.jsonl`'s order: one whose pages of one url, or whose undated pages, are
listed otherwise than they were judged counts. Prints one line.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import orjson

SETS = Path("/work/sets")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--no-ids", action="store_true", help="leave undated records without an id")
    args = parser.parse_args()
    rows = [orjson.loads(line) for name in ("story-dev", "feed-dev") for line in (SETS / f"{name}.jsonl").open("rb")]
    rows.sort(key=lambda r: r.get("fetched_at") or r.get("arrived_at"))
    if not args.no_ids:
        rows = [{**r, "id": r["label_id"]} if not r.get("fetched_at") else r for r in rows]
    args.out.mkdir(parents=True, exist_ok=True)
    crawl = args.out / "crawl.jsonl"
    crawl.write_bytes(b"".join(orjson.dumps(r, option=orjson.OPT_APPEND_NEWLINE) for r in rows))
    out = args.out / "out"
    subprocess.run([sys.executable, "-m", "streamdedup", "dedup", str(crawl), "--out", str(out), "--fresh", "-q"],
                   check=True)
    judged = {orjson.loads(line)["id"]: n for n, line in enumerate((out / "verdicts.jsonl").read_bytes().splitlines())}
    stories = [orjson.loads(line) for line in (out / "clusters.jsonl").read_bytes().splitlines()]
    holding = [s for s in stories if s["size"] >= 2 and any(p["fetch_time"] is None for p in s["pages"])]
    wrong = []
    for story in holding:
        by_url: dict[str, list[int]] = {}
        for page in story["pages"]:
            by_url.setdefault(page["url"], []).append(judged[page["id"]])
        undated = [judged[p["id"]] for p in story["pages"] if p["fetch_time"] is None]
        if undated != sorted(undated) or any(places != sorted(places) for places in by_url.values()):
            wrong.append(story["cluster_id"])
    print(f"{len(stories)} stories; {len(holding)} of 2+ pages hold an undated page; {len(wrong)} list pages out of "
          f"judging order: {wrong}")


if __name__ == "__main__":
    main()
