"""Bytes a page file mode's story fold (`clusters.Stories`) keeps, by `tracemalloc`.

Each page's verdict line is made as file mode reads one back (`orjson.loads`: fresh strings for
its id, url, fetch time, status) and folded with `Stories.add`, as `outputs/files.py` does; what
the fold holds once the line is dropped is counted, the strings it keeps of the line included.

    python bench/fold_memory.py --pages 20000                  # unique pages, one cluster, 4-page clusters
    python bench/fold_memory.py --verdicts OUT/verdicts.jsonl  # a dedup run's verdicts
"""

from __future__ import annotations

import argparse
import gc
import tracemalloc
from collections.abc import Iterable, Iterator
from pathlib import Path

import orjson
import xxhash

from streamdedup.clusters import Stories, complete_lines, page_fields

SCENARIOS = ("unique", "cluster", "fours")


def _line(i: int, page: str, cluster: str, duplicate_of: str | None) -> bytes:
    status = "duplicate" if duplicate_of else "unique"
    return orjson.dumps({
        "id": page, "url": f"https://site{i % 5000}.example/2024/03/story-{i}",
        "fetch_time": f"2024-03-01T{i // 3600 % 24:02d}:{i // 60 % 60:02d}:{i % 60:02d}.{i % 999983:06d}Z",
        "dedup": {"id": page, "status": status, "duplicate_of": duplicate_of,
                  "similarity": 0.93 if duplicate_of else None, "method": "minhash" if duplicate_of else None,
                  "cluster_id": cluster}})


def synthetic(scenario: str, pages: int) -> Iterator[bytes]:
    """Verdict lines: every page unique (`unique`), one cluster (`cluster`), clusters of 4 (`fours`)."""
    ids = [xxhash.xxh3_128_hexdigest(str(i).encode()) for i in range(pages)]
    for i, page in enumerate(ids):
        first = {"unique": i, "cluster": 0, "fours": i - i % 4}[scenario]
        yield _line(i, page, ids[first], None if first == i else ids[first])


def _fold(lines: Iterable[bytes], stories: Stories) -> int:
    count = 0
    for line in lines:
        data = orjson.loads(line)
        if data["dedup"]["status"] != "rejected":
            stories.add(data["dedup"], *page_fields(data))
            count += 1
    return count


def fold_bytes(lines: Iterable[bytes]) -> tuple[int, int]:
    """(pages folded, bytes the fold holds after them)."""
    gc.collect()
    tracemalloc.start()
    stories = Stories()
    before = tracemalloc.get_traced_memory()[0]
    count = _fold(lines, stories)
    gc.collect()
    held = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert len(stories.stories()) > 0
    return count, held


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--pages", type=int, default=20000)
    parser.add_argument("--scenario", choices=SCENARIOS, action="append")
    parser.add_argument("--verdicts", type=Path, action="append", default=[], help="a verdicts.jsonl to fold")
    args = parser.parse_args()
    runs: list[tuple[str, Iterable[bytes]]] = [(str(path), list(complete_lines(path))) for path in args.verdicts]
    if not args.verdicts or args.scenario:
        runs += [(s, list(synthetic(s, args.pages))) for s in args.scenario or SCENARIOS]
    for name, lines in runs:
        count, held = fold_bytes(lines)
        print(f"{name}: {count} pages, {held / count:.0f} bytes a page ({held / 2**20:.1f} MiB)")


if __name__ == "__main__":
    main()
