"""The in-memory index's probe and insert alone, per name, as the table grows: what a batch's
lookups and filings cost in memory, without the rest of the store's path.

    python bench/index_kernels.py                              # 64 x 2^22 slots (3.2 GB), then 2^23 (6.4 GB)
    python bench/index_kernels.py --slots 4194304 16777216     # up to 12.9 GB: needs ~14 GB free
    python bench/index_kernels.py --slots 65536 --rounds 4     # seconds

For each size: `SEGMENTS` segments of that many slots filled to `--load` with random 48-bit names,
then `--rounds` batches of 12,288 new random names (a batch of 256 pages of ~48 names): the batch
is probed (`MemoryIndex.counts_free_ints`, as `StoreBatch.stage`), other memory is touched (64 MB
of random bytes and a sort of 4 MB, as a batch's Python and RocksDB's write touch theirs), then
filed at the slots its probe found (`MemoryIndex.insert_ints`, as the commit). Prints JSON: per
size the medians (and spread) of nanoseconds a name for the probe and the insert, the table's
bytes, and how much of the process's memory is in huge pages. The first two rounds warm up.

Run two trees at once to compare them (each with its own `PYTHONPATH`): run one after the other,
the same table size measured 87 and 173 ns a name an hour apart (2026-11-28).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np

from streamdedup.store.memory_index import SEGMENTS, MemoryIndex

BATCH_NAMES = 12_288
WARM_ROUNDS = 2


def huge_page_bytes() -> int | None:
    """The process's anonymous memory in transparent huge pages (None where /proc does not say)."""
    try:
        for line in Path("/proc/self/smaps_rollup").read_text().splitlines():
            if line.startswith("AnonHugePages:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def measure(slots: int, load: float, rounds: int, rng: np.random.Generator) -> dict[str, object]:
    index = MemoryIndex()
    index._allocate(slots)  # every segment this size, empty
    filled = int(load * slots * SEGMENTS)
    started = time.perf_counter()
    for start in range(0, filled, 1 << 22):
        count = min(filled, start + (1 << 22)) - start
        index.insert_ints(rng.integers(0, 1 << 48, size=count, dtype=np.uint64),
                          np.arange(start, start + count, dtype=np.uint64))
    fill_s = time.perf_counter() - started
    other = np.zeros(64 << 20, dtype=np.uint8)
    probe: list[float] = []
    insert: list[float] = []
    seq = filled
    for round_ in range(rounds + WARM_ROUNDS):
        names = rng.integers(0, 1 << 48, size=BATCH_NAMES, dtype=np.uint64)
        seqs = np.arange(seq, seq + BATCH_NAMES, dtype=np.uint64)
        seq += BATCH_NAMES
        other[rng.integers(0, len(other), 200_000)] += 1
        started = time.perf_counter()
        _, free, epoch = index.counts_free_ints(names)
        probed = time.perf_counter()
        other[rng.integers(0, len(other), 200_000)] += 1
        np.sort(rng.integers(0, 1 << 60, 1 << 19))
        before_insert = time.perf_counter()
        index.insert_ints(names, seqs, free, epoch)
        inserted = time.perf_counter()
        if round_ >= WARM_ROUNDS:
            probe.append((probed - started) / BATCH_NAMES * 1e9)
            insert.append((inserted - before_insert) / BATCH_NAMES * 1e9)
    return {"slots_per_segment": slots, "table_bytes": index.size_bytes, "postings": index.postings,
            "fill_s": round(fill_s, 1), "huge_page_bytes": huge_page_bytes(),
            "probe_ns_per_name": round(statistics.median(probe), 1),
            "probe_ns_range": [round(min(probe), 1), round(max(probe), 1)],
            "insert_ns_per_name": round(statistics.median(insert), 1),
            "insert_ns_range": [round(min(insert), 1), round(max(insert), 1)]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--slots", type=int, nargs="+", default=[1 << 22, 1 << 23], help="slots a segment, one size after another")
    parser.add_argument("--load", type=float, default=0.62, help="share of slots filled before the rounds")
    parser.add_argument("--rounds", type=int, default=14)
    parser.add_argument("--out", type=Path, default=Path("bench/index_kernels.json"))
    args = parser.parse_args()
    if not 0 < args.load < 0.8:
        parser.error("--load must be above 0 and below 0.8 (the table grows at 0.8)")
    rng = np.random.default_rng(1)
    sizes = []
    for slots in args.slots:
        sizes.append(measure(slots, args.load, args.rounds, rng))  # one table at a time: its memory is freed after
        print(json.dumps(sizes[-1]), flush=True)
    report = {"created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "segments": SEGMENTS,
              "batch_names": BATCH_NAMES, "load": args.load, "sizes": sizes}
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
