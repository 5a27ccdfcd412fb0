"""Candidate lookup + insert throughput of the RocksDB store, and bytes stored per page.

    python bench/store.py --pages 200000 [--batch 256]

Signatures are synthetic (random, so every page is unique and every lookup misses: the common
case in a crawl) for the four default methods, so the store is measured alone; pages go through
Detector.decide_batch exactly as in the worker (lookups for every index key, verification of
candidates, one WriteBatch per batch). Prints JSON: pages/s over the last 10 % of pages (with the
store at full size), and bytes on disk per page after a compaction.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from streamdedup.config import DetectorConfig  # noqa: E402
from streamdedup.detector import Detector, Fingerprinted  # noqa: E402
from streamdedup.fingerprints.a12 import A12Signature  # noqa: E402
from streamdedup.fingerprints.minhash import MinHashSignature  # noqa: E402
from streamdedup.record.page import Page  # noqa: E402


def synthetic(i: int, rng: random.Random, np_rng: np.random.Generator) -> Fingerprinted:
    page = Page(id=f"p{i}", url=f"https://site{i % 500}.example/{i}", content="", content_type="text/plain",
                fetched_at=None, lang="en", record={})
    signatures = {
        "exact": rng.getrandbits(128).to_bytes(16, "little"),
        "minhash": MinHashSignature(np_rng.integers(0, 2**32, size=128, dtype=np.uint32), 800),
        "simhash": rng.getrandbits(64),
        "a12": A12Signature(rng.randint(300, 900), rng.randint(10, 40), tuple(rng.getrandbits(64) for _ in range(3)),
                            tuple(rng.getrandbits(64) for _ in range(5))),
    }
    return Fingerprinted(page, {}, f"bench:{i}", signatures)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=200_000)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--out", type=Path, default=Path("bench/store.json"))
    args = parser.parse_args()
    rng, np_rng = random.Random(1), np.random.default_rng(1)
    work = Path(tempfile.mkdtemp(prefix="store-bench-"))
    tail_start = int(args.pages * 0.9)
    started = time.perf_counter()
    tail_started = None
    with Detector(DetectorConfig(batch_size=args.batch), work / "state") as detector:
        for start in range(0, args.pages, args.batch):
            if tail_started is None and start >= tail_start:
                tail_started = time.perf_counter()
            detector.decide_batch([synthetic(i, rng, np_rng) for i in range(start, min(args.pages, start + args.batch))])
        elapsed = time.perf_counter() - started
        tail = time.perf_counter() - (tail_started or started)
        detector.store.db.compact_range(None, None)
        keys = detector.store.db.property_int_value("rocksdb.estimate-num-keys")
    size = sum(f.stat().st_size for f in (work / "state").iterdir() if f.is_file() and f.suffix in (".sst", ".log"))
    report = {"pages": args.pages, "batch": args.batch, "pages_per_s_overall": round(args.pages / elapsed),
              "pages_per_s_last_10pct": round((args.pages - tail_start) / tail), "bytes_per_page": round(size / args.pages),
              "keys": keys, "note": "synthetic signature generation is included in the timing"}
    args.out.write_text(json.dumps(report, indent=2))
    print(json.dumps(report))
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
