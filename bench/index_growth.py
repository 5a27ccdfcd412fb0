"""Peak memory and CPU of the in-memory index growing to N postings (a store's pages x ~47).

    python bench/index_growth.py                      # 47 M postings: a 1 M-page store's index
    python bench/index_growth.py --postings 4700000   # seconds

Random 48-bit names, seqs 0..N-1, inserted in batches of 1 M as a store's writes add them; the
table grows as it fills. Prints JSON: postings, the table's bytes, the process's peak RSS (run it
in a fresh process: the peak is the process's own) and CPU seconds.
"""

from __future__ import annotations

import argparse
import json
import resource
import time

import numpy as np

from streamdedup.store.memory_index import MemoryIndex


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--postings", type=int, default=47_000_000)
    parser.add_argument("--batch", type=int, default=1_000_000)
    args = parser.parse_args()
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
