"""Peak memory and CPU of the in-memory index growing to N postings (a store's pages x ~47).

    python bench/index_growth.py                      # 47 M postings: a 1 M-page store's index
    python bench/index_growth.py --postings 4700000   # seconds
    python bench/index_growth.py --segment-growth     # how long one segment's growth stops a commit

Random 48-bit names, seqs 0..N-1, inserted in batches of 1 M as a store's writes add them; the
table grows as it fills. Prints JSON: postings, the table's bytes, the process's peak RSS (run it
in a fresh process: the peak is the process's own) and CPU seconds.

`--segment-growth`: the wall and CPU seconds one segment of the table takes to grow (rehash its
postings into a table at half load) at 1 M to 30 M postings: a 10 M-page store (476 M postings)
holds ~7.4 M a segment in its 64 segments (~30 M in the 16 it had before 2026-12-02): the commit
that grows one waits that long, and the segments of a store grow at about the same size, one
batch after another.
"""

from __future__ import annotations

import argparse
import json
import resource
import time

import numpy as np

from streamdedup.store import memory_index
from streamdedup.store.memory_index import MemoryIndex


def segment_growth(postings: int) -> dict[str, float]:
    """One segment holding `postings` random postings, grown as `MemoryIndex.insert_ints` grows it."""
    segment = memory_index._Segment.empty(memory_index.slots_for(postings))
    names = np.random.default_rng(1).integers(0, 1 << 48, size=postings, dtype=np.uint64)
    memory_index._insert(segment.words, segment.low, names, np.arange(postings, dtype=np.uint64))
    segment.postings = postings
    del names
    wall, cpu = time.perf_counter(), time.process_time()
    segment.rehashed(memory_index.slots_for(postings + 1))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {"postings": postings, "grow_wall_s": round(wall, 2), "grow_cpu_s": round(cpu, 2),
            "ns_per_posting": round(wall / postings * 1e9, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--postings", type=int, default=47_000_000)
    parser.add_argument("--batch", type=int, default=1_000_000)
    parser.add_argument("--segment-growth", action="store_true", help="time one segment's growth, 1 M to 30 M postings")
    args = parser.parse_args()
    if args.segment_growth:
        for postings in (1_000_000, 4_000_000, 7_400_000, 16_000_000, 30_000_000):
            print(json.dumps(segment_growth(postings)), flush=True)
        return
    rng = np.random.default_rng(1)
    index, cpu = MemoryIndex(), time.process_time()
    for start in range(0, args.postings, args.batch):
        count = min(args.batch, args.postings - start)
        index.insert_ints(rng.integers(1, 1 << 47, size=count, dtype=np.uint64),
                          np.arange(start, start + count, dtype=np.uint64))
    print(json.dumps({"postings": index.postings, "table_mib": round(index.size_bytes / 2**20),
                      "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
                      "cpu_s": round(time.process_time() - cpu, 1)}))


if __name__ == "__main__":
    main()
