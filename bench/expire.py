"""Expiry throughput: pages a second that `SignatureStore.expire` removes, in bulk (the store's way
since 2026-11-28) and record by record (the way before, `_remove`, which deleting one page by id
still uses), side by side on the same store.

    python bench/expire.py                     # 200,000 pages stored, 3 runs
    python bench/expire.py --pages 1000000
    python bench/expire.py --smoke             # seconds: 8,000 pages, one run

Why it matters: retention may change freely, so a store that grew without it (or an archive's
pages followed by a live crawl's) expires a backlog in the first batch after the change; a worker
does not poll Kafka meanwhile. Each run fills a fresh store (`bench/store.py`'s bulk fill: random
signatures of the four default methods, page i filed at event time i ms), then expires quarters
of it alternately each way (bulk, each, bulk, each; the next run starts with the other), so both
ways meet a store of the same sizes. Prints and writes JSON: pages a second and a CPU-second per
way and run, their medians and the ratio of the medians. Then `drain`: a fresh store of the same
size expired whole as batches' commits expire a backlog (`budget_s`, since 2026-12-01): the calls
it took, how long each held its caller (median, max) and the pages each removed. Then `steady`:
a store with retention in steady state, each commit expiring a batch's worth of pages, half the
store in all, each scan of the oldest time entries from where the last removal ended (the store's
way since 2026-12-01) and from the first time key (the way before), each on a fresh store of the
same size.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
from rocksdict import WriteBatch
from store import bulk_fill, pages  # bench/store.py

from streamdedup.config import DetectorConfig
from streamdedup.detector import Detector
from streamdedup.store import layout, retention
from streamdedup.store.signature_store import SignatureStore

CHUNK = 4096  # pages a WriteBatch, as `expire` takes them
BATCH = 256  # pages a batch, as the worker's


def expire_each(store: SignatureStore, before_ms: int) -> int:
    """`expire` as it was before 2026-11-28: each chunk's records read and decoded, each
    record's keys named one by one (`_remove`)."""
    bound, removed = layout.time_bound(before_ms), 0
    while expired := store._expired_time_keys(bound, CHUNK):
        docs = store.docs([seq for _, seq in expired])
        wb = WriteBatch(raw_mode=True)
        for key, seq in expired:
            if docs[seq] is None:
                wb.delete(key)
        store._remove([d for d in docs.values() if d is not None], wb)
        removed += len(expired)
    return removed


@contextmanager
def filled_store(pages_stored: int, seed: int) -> Iterator[Detector]:
    """A fresh store in /tmp with `pages_stored` pages (`bench/store.py`'s bulk fill: page i
    filed at event time i ms), removed afterwards."""
    rng, np_rng = random.Random(seed), np.random.default_rng(seed)
    with tempfile.TemporaryDirectory(dir="/tmp", prefix="expire-bench-") as state, \
            Detector(DetectorConfig(batch_size=BATCH), state) as detector:
        for start in range(0, pages_stored, 20_000):
            bulk_fill(detector, pages(start, min(start + 20_000, pages_stored), rng, np_rng), start)
        yield detector


def run(pages_stored: int, first: str, seed: int) -> dict[str, list[dict[str, float]]]:
    ways = {"bulk": lambda store, before: store.expire(before), "each": expire_each}
    order = [first, "each" if first == "bulk" else "bulk"] * 2
    out: dict[str, list[dict[str, float]]] = {"bulk": [], "each": []}
    with filled_store(pages_stored, seed) as detector:
        quarter = pages_stored // 4
        for i, way in enumerate(order):
            wall, cpu = time.perf_counter(), time.process_time()
            removed = ways[way](detector.store, (i + 1) * quarter)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            out[way].append({"stored_before": pages_stored - i * quarter, "removed": removed,
                             "pages_per_s": round(removed / wall), "pages_per_cpu_s": round(removed / cpu)})
            print(json.dumps({"way": way, **out[way][-1]}), file=sys.stderr, flush=True)
    return out


def drain(pages_stored: int, seed: int) -> dict[str, Any]:
    """The whole store as a backlog, expired as a batch's commit expires (`budget_s` =
    `retention.EXPIRY_BUDGET_S`) call after call until none is left: how long each call held the
    caller (a worker does not poll meanwhile) and how many pages each removed."""
    calls: list[tuple[float, int]] = []
    with filled_store(pages_stored, seed) as detector:
        while True:
            wall = time.perf_counter()
            removed = detector.store.expire(pages_stored, budget_s=retention.EXPIRY_BUDGET_S)
            if not removed:
                break
            calls.append((time.perf_counter() - wall, removed))
    seconds = [c[0] for c in calls]
    report = {"budget_s": retention.EXPIRY_BUDGET_S, "calls": len(calls), "removed": sum(c[1] for c in calls),
              "call_s_median": round(statistics.median(seconds), 3), "call_s_max": round(max(seconds), 3),
              "pages_per_call_median": round(statistics.median(c[1] for c in calls)),
              "pages_per_call": [c[1] for c in calls]}  # in order: tombstones left by earlier calls slow later ones?
    print(json.dumps({"way": "drain", **report}), file=sys.stderr, flush=True)
    return report


def steady(pages_stored: int, way: str, seed: int) -> dict[str, Any]:
    """A store with retention in steady state: call after call, `expire` removes one batch's
    worth of the oldest pages (256), as each commit of a full store does; `way` "resumed" is the
    store's own scan, "from_first" the one before (each call's scan from the first time key, over
    the tombstone of every entry removed since the last compaction). Milliseconds a call,
    median over all and over the first and the last tenth of the calls: flat, or growing with
    the tombstones earlier calls left?"""
    seconds: list[float] = []
    with filled_store(pages_stored, seed) as detector:
        store = detector.store
        cpu = time.process_time()
        for call in range(1, pages_stored // 2 // BATCH + 1):
            if way == "from_first":  # (a call here is one chunk: as each chunk's scan was)
                store._time_scan_from = layout.TIME
            wall = time.perf_counter()
            store.expire(call * BATCH, budget_s=retention.EXPIRY_BUDGET_S)
            seconds.append(time.perf_counter() - wall)
        cpu = time.process_time() - cpu
    tenth = max(1, len(seconds) // 10)
    report = {"way": way, "calls": len(seconds), "pages_per_call": BATCH,
              "ms_per_call_median": round(1e3 * statistics.median(seconds), 2),
              "ms_per_call_first_tenth": round(1e3 * statistics.median(seconds[:tenth]), 2),
              "ms_per_call_last_tenth": round(1e3 * statistics.median(seconds[-tenth:]), 2),
              "pages_per_cpu_s": round(len(seconds) * BATCH / cpu)}
    print(json.dumps({"part": "steady", **report}), file=sys.stderr, flush=True)
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=200_000, help="pages stored before each run's expiries")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--smoke", action="store_true", help="8,000 pages, one run: seconds")
    parser.add_argument("--out", type=Path, default=Path("bench/expire.json"))
    args = parser.parse_args()
    if args.smoke:
        args.pages, args.runs = 8_000, 1
    runs = [run(args.pages, "bulk" if r % 2 == 0 else "each", seed=r) for r in range(args.runs)]
    report: dict[str, Any] = {"pages_stored": args.pages, "runs": runs, "drain": drain(args.pages, seed=args.runs),
                              "steady": [steady(args.pages, way, seed=args.runs) for way in ("from_first", "resumed")]}
    for way in ("bulk", "each"):
        for clock in ("pages_per_s", "pages_per_cpu_s"):
            report[f"{way}_{clock}_median"] = round(statistics.median(m[clock] for r in runs for m in r[way]))
    report["bulk_over_each_cpu"] = round(report["bulk_pages_per_cpu_s_median"] / report["each_pages_per_cpu_s_median"], 2)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps({k: v for k, v in report.items() if k != "runs"}))


if __name__ == "__main__":
    main()
