"""A worker's memory as the partitions it owns grow: one Detector (store) a partition, in one process.

    python bench/partition_memory.py                                # 1, 6, 12, 24 partitions of 6,000 pages
    python bench/partition_memory.py --partitions 24 --pages 6000
    python bench/partition_memory.py --smoke                        # seconds: 1 and 3 partitions of 200 pages

A worker opens one store per input partition it owns. This bench does what such a worker's
process does, without a broker: for each count of partitions it opens that many Detectors in one
fresh process (`--one`), sends each the same `--pages` homogeneous prose pages (bench/homogeneous.py's
`prose`: every page a candidate of many, so records are read and kept decoded), keeps them all
open, and reports the process's resident memory (VmRSS, and VmHWM, its peak) beside what the
stores keep: page records decoded, site templates decoded (bytes), RocksDB's memtables (the
write buffer manager's usage, when the code has one) and block cache. Each count runs in its own
process, so the figures do not carry over. Prints and writes JSON.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import homogeneous  # noqa: E402 - bench/homogeneous.py: the same pages


def _status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def one(partitions: int, pages: Path) -> dict[str, Any]:
    """Open `partitions` Detectors in this process, send each the pages, and measure with all open."""
    from streamdedup.config import DetectorConfig
    from streamdedup.detector import Detector
    from streamdedup.store import opening
    from streamdedup.testing import raw_records

    lines = pages.read_bytes().splitlines()
    started = time.process_time()
    with tempfile.TemporaryDirectory() as state:
        detectors = [Detector(DetectorConfig(), Path(state) / f"p{k}") for k in range(partitions)]
        for detector in detectors:
            detector.__enter__()
            for _ in detector.run(raw_records(lines)):
                pass
        stores = [d.store for d in detectors]
        row: dict[str, Any] = {
            "partitions": partitions, "pages_per_partition": len(lines),
            "rss_mib": round(_status_kib("VmRSS") / 1024, 1), "peak_rss_mib": round(_status_kib("VmHWM") / 1024, 1),
            "records_decoded": sum(len(s._doc_cache) for s in stores),
            "template_bytes_decoded": sum(s.templates._size for s in stores),
            "cpu_s": round(time.process_time() - started, 2),
        }
        try:
            from streamdedup.store import process_memory
            row["memtable_mib"] = round(process_memory.write_buffer_manager().get_usage() / 2**20, 1)
            row["block_cache_mib"] = round(process_memory.block_cache().get_usage() / 2**20, 1)
        except ImportError:  # the code before the process's budget: one block cache, no manager
            cache = getattr(opening, "_block_cache", None)
            row["block_cache_mib"] = None if cache is None else round(cache.get_usage() / 2**20, 1)
        for detector in detectors:
            detector.__exit__(None, None, None)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--partitions", type=int, nargs="+", default=[1, 6, 12, 24])
    parser.add_argument("--pages", type=int, default=6000, help="pages sent to each partition's store")
    parser.add_argument("--smoke", action="store_true", help="1 and 3 partitions of 200 pages")
    parser.add_argument("--out", type=Path, default=Path("bench/partition_memory.json"))
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # internal: one count, in this process
    parser.add_argument("--file", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one is not None:
        print(json.dumps(one(args.one, args.file)))
        return
    if args.smoke:
        args.partitions, args.pages = [1, 3], 200
    rows = []
    with tempfile.TemporaryDirectory() as work:
        pages = homogeneous.generate(Path(work) / "pages.jsonl", args.pages, kind="prose")
        for count in args.partitions:
            done = subprocess.run([sys.executable, __file__, "--one", str(count), "--file", str(pages)],
                                  check=True, capture_output=True, text=True)
            rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
            print(json.dumps(rows[-1]), flush=True)
    args.out.write_text(json.dumps({"kind": "prose", "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
