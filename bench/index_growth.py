"""Peak memory and CPU of the in-memory index growing to N postings (a store's pages x ~47).

    python bench/index_growth.py                      # 47 M postings: a 1 M-page store's index
    python bench/index_growth.py --postings 4700000   # seconds
    python bench/index_growth.py --segment-growth     # how long one segment's growth stops a commit
    python bench/index_growth.py --stalls --pages 2000000   # which commits of a growing store wait for growths

Random 48-bit names, seqs 0..N-1, inserted in batches of 1 M as a store's writes add them; the
table grows as it fills. Prints JSON: postings, the table's bytes, the process's peak RSS (run it
in a fresh process: the peak is the process's own) and CPU seconds.

`--segment-growth`: the wall and CPU seconds one segment of the table takes to grow (rehash its
postings into a table at half load) at 1 M to 30 M postings: a 10 M-page store (476 M postings)
holds ~7.4 M a segment in its 64 segments (~30 M in the 16 it had before 2026-12-02): the commit
that grows one waits that long (the segments of a store grew at about the same size, one batch
after another, until each was given its own load to grow to: `--stalls`).

`--stalls`: a store's commits as they fill the table (batches of 256 pages of 47 random postings,
from an empty table to `--pages` pages; `--from-pages`: a store of that many pages first, its table sized for them
as a store reopened after a crash reserves it): for each commit that grows a segment (in place, or
beginning a growth beside the batches, or putting its new table in place), its batch number and
seconds. Prints JSON: the commits that grew any, the longest run of consecutive batches that did,
the seconds of those commits in the worst 64 consecutive batches (what a consumer sees as its
stall) and in all, the slowest commit and the median one, the table's bytes a posting,
averaged over the batches (what spreading growths costs in memory) and at the end, the most
segments growing beside the batches at once (bounded by `MAX_BESIDE_GROWTHS` since 2026-12-03)
and the process's peak RSS. `--alike`: the store's segments sized alike first (as a snapshot
written before each segment had its own load keeps them), so that they reach their limit together.
"""

from __future__ import annotations

import argparse
import json
import resource
import time
from typing import Any

import numpy as np

from streamdedup.store import index_kernels, memory_index
from streamdedup.store.memory_index import MemoryIndex


def segment_growth(postings: int) -> dict[str, float]:
    """One segment holding `postings` random postings, grown as `MemoryIndex.insert_ints` grows it."""
    segment = memory_index._Segment.empty(memory_index.slots_for(postings))
    names = np.random.default_rng(1).integers(0, 1 << 48, size=postings, dtype=np.uint64)
    index_kernels._insert(segment.words, segment.low, names, np.arange(postings, dtype=np.uint64))
    segment.postings = postings
    del names
    wall, cpu = time.perf_counter(), time.process_time()
    segment.rehashed(memory_index.slots_for(postings + 1))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {"postings": postings, "grow_wall_s": round(wall, 2), "grow_cpu_s": round(cpu, 2),
            "ns_per_posting": round(wall / postings * 1e9, 1)}


def stalls(pages: int, from_pages: int, per_page: int = 47, batch: int = 256, window: int = 64,
           alike: bool = False) -> dict[str, Any]:
    """Growths met by the commits of a store filling from `from_pages` to `pages` pages (see the module doc)."""
    rng = np.random.default_rng(1)
    if alike:  # every segment at the mean load, not its own (`grown_load`)
        index = MemoryIndex()
        index._allocate(memory_index.slots_for(from_pages * per_page // memory_index.SEGMENTS))
    else:
        index = MemoryIndex(from_pages * per_page)
    seq = 0
    for start in range(0, from_pages * per_page, 1 << 20):  # the pages the store holds already, untimed
        count = min(1 << 20, from_pages * per_page - start)
        index.insert_ints(rng.integers(1, 1 << 47, size=count, dtype=np.uint64),
                          np.arange(seq, seq + count, dtype=np.uint64))
        seq += count
    grown: list[tuple[int, float]] = []  # (batch number, seconds of its commit)
    bytes_per_posting: list[float] = []
    took_all: list[float] = []
    most_growing = 0
    for number, start in enumerate(range(from_pages, pages, batch)):
        count = min(batch, pages - start) * per_page
        slots = [len(segment.words) for segment in index.segments]
        growing = set(index._growing)
        names = rng.integers(1, 1 << 47, size=count, dtype=np.uint64)
        started = time.perf_counter()
        index.insert_ints(names, np.arange(seq, seq + count, dtype=np.uint64))
        took = time.perf_counter() - started
        took_all.append(took)
        most_growing = max(most_growing, len(index._growing))
        seq += count
        # a commit that grew a segment, began a growth beside the batches or put its table in place
        if set(index._growing) != growing or any(
                len(segment.words) != before for segment, before in zip(index.segments, slots, strict=True)):
            grown.append((number, took))
        bytes_per_posting.append(index.size_bytes / max(1, index.postings))
    numbers = [number for number, _ in grown]
    longest = run = 0
    for previous, number in zip([-2, *numbers], numbers, strict=False):
        run = run + 1 if number == previous + 1 else 1
        longest = max(longest, run)
    worst = 0.0
    for i, (number, _) in enumerate(grown):  # the window of `window` batches starting at each growth
        worst = max(worst, sum(took for other, took in grown[i:] if other < number + window))
    return {"pages": pages, "from_pages": from_pages, "batches": len(bytes_per_posting),
            "commits_growing": len(grown), "longest_run_of_growing_commits": longest,
            f"most_growth_s_in_{window}_batches": round(worst, 3),
            "growth_s": round(sum(took for _, took in grown), 3),
            "growing_batches_first_last": [numbers[0], numbers[-1]] if numbers else [],
            "slowest_commit_s": round(max(took_all), 4), "median_commit_s": round(float(np.median(took_all)), 5),
            "table_bytes_per_posting_mean": round(float(np.mean(bytes_per_posting)), 2),
            "table_bytes_per_posting_end": round(bytes_per_posting[-1], 2),
            "alike": alike, "most_growing_beside_at_once": most_growing,
            "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--postings", type=int, default=47_000_000)
    parser.add_argument("--batch", type=int, default=1_000_000)
    parser.add_argument("--segment-growth", action="store_true", help="time one segment's growth, 1 M to 30 M postings")
    parser.add_argument("--stalls", action="store_true", help="the growths a filling store's commits meet")
    parser.add_argument("--pages", type=int, default=2_000_000, help="--stalls: pages at the end")
    parser.add_argument("--from-pages", type=int, default=0, help="--stalls: pages the store holds first (its table sized for them)")
    parser.add_argument("--alike", action="store_true", help="--stalls: the segments sized alike first (an old snapshot's)")
    args = parser.parse_args()
    if args.stalls:
        print(json.dumps(stalls(args.pages, args.from_pages, alike=args.alike)), flush=True)
        return
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
