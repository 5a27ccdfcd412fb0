"""Per-page time of the whole `streamdedup dedup` on homogeneous pages, beside a minimal rensa pass.

    python bench/homogeneous.py                          # 2k, 10k, 20k, 100k pages; median of 3 (1 at 100k)
    python bench/homogeneous.py --sizes 2000 20000 --repeat 3
    python bench/homogeneous.py --smoke                  # seconds: 100 and 200 pages, once

Homogeneous pages: every page draws `--words` (600) words from one Zipf distribution (exponent
1.1) over one vocabulary (the 5,000 most frequent English words of wordfreq), seeded, so every
page looks like every other to bag-of-words signatures (boilerplate-heavy sites, listings, forum
pages). Pages come from 100 sites, plain text, one fetch time each a second apart.

Each size runs the real command line, `streamdedup dedup FILE --out DIR --fresh -q`, as a
subprocess; start-up (imports, kernels, an empty store) is measured by the same command on
`--startup-pages` (10) pages and taken off, so `ms_per_page_net` = (wall - start-up) / pages. The
floor the issue sets: per-page time flat (within 1.5x) from the smallest size to the largest.
The command first runs once on the smallest size untimed, as a user's install has run it before:
on a fresh checkout that run compiles numba's kernels into its cache (~20 s) and writes the
bytecode (`user_environment`); before 2026-11-29 a run's median absorbed it.

Beside it, in the same run and on the same file: a minimal in-memory MinHash-LSH pass with rensa
(read the JSON lines, lowercase word 5-shingles, RMinHash of 128 permutations, query an
RMinHashLSH, verify the candidates by Jaccard >= 0.5, insert the page). `rensa_ratio` is rensa's
time over the whole command's (net of start-up): 1.0 = as fast as the minimal pass, with four
methods, a store on disk and every output file to its one; `rensa_ratio_whole` is the same with
the command's start-up left in (a fixed ~0.7 CPU-s in a core-only install: imports and numba's
compiled kernels loaded from its cache), which weighs on small files; `_paired`: the median of
each run's ratio to the rensa pass and start-up run beside it, which a host whose speed drifts
between runs moves less than the ratio of the medians. Every figure is given in wall time and in
CPU time (`_cpu`: the command's user + system seconds, rensa's process time), which a busy
neighbour on a shared machine moves less.

Prints and writes JSON: per size the runs, their medians, the work per page from summary.json
(candidates found and verified), and the ratios of the per-page times to the smallest size's.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import orjson

ROOT = Path(__file__).resolve().parents[1]
_WORD = re.compile(r"\w+")


def vocabulary(size: int) -> list[str]:
    from wordfreq import top_n_list

    return top_n_list("en", size)


def generate(path: Path, pages: int, words: int = 600, vocab_size: int = 5000, exponent: float = 1.1,
             seed: int = 14) -> Path:
    """`pages` homogeneous pages as JSON lines (same seed, same file)."""
    vocab = np.array(vocabulary(vocab_size), dtype=object)
    weights = 1.0 / np.arange(1, len(vocab) + 1) ** exponent
    weights /= weights.sum()
    rng = np.random.default_rng(seed)
    start = 1_700_000_000
    with open(path, "wb") as out:
        for first in range(0, pages, 1000):
            n = min(1000, pages - first)
            drawn = rng.choice(len(vocab), size=(n, words), p=weights)
            for row, i in zip(drawn, range(first, first + n), strict=True):
                url = f"https://forum{i % 100}.example/t/{i}"
                fetched = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(start + i))
                out.write(orjson.dumps({"url": url, "content": " ".join(vocab[row]), "content_type": "text/plain",
                                        "fetched_at": fetched}))
                out.write(b"\n")
    return path


def user_environment() -> dict[str, str]:
    """This environment without PYTHONDONTWRITEBYTECODE, which the machines here set: the command
    would compile its ~75 modules from source at every start (its imports: 1.00 CPU-s against 0.83
    with their bytecode, medians of 10 on 2026-11-29), where a user's `pip install` writes it once."""
    return {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}


def run_dedup(path: Path, work: Path, *options: str, python: str = sys.executable) -> dict[str, Any]:
    """The whole command on one file (with `options`, run by `python`), a fresh store: wall and CPU
    seconds (its own and its helper processes') and its summary.json."""
    out = work / "out"
    shutil.rmtree(out, ignore_errors=True)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run([python, "-m", "streamdedup", "dedup", str(path), "--out", str(out), "--fresh", "-q", *options], cwd=ROOT,
                          capture_output=True, text=True, env=user_environment())
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    if done.returncode != 0:
        raise RuntimeError(f"streamdedup dedup failed ({done.returncode}): {done.stderr[-2000:]}")
    summary = json.loads((out / "summary.json").read_text())
    return {"wall_s": round(wall, 3), "cpu_s": round(cpu, 3), "records": summary.get("records"), "unique": summary.get("unique"),
            "duplicates": summary.get("duplicates"), "work_per_page": summary.get("work_per_page")}


def shingles(text: str, k: int = 5) -> list[str]:
    tokens = _WORD.findall(text.lower())
    return [" ".join(tokens[i: i + k]) for i in range(max(1, len(tokens) - k + 1))]


def run_rensa(path: Path, threshold: float = 0.5, num_perm: int = 128, num_bands: int = 32) -> dict[str, Any]:
    """The minimal in-memory pass: every page is queried, verified against its candidates, inserted."""
    from rensa import RMinHash, RMinHashLSH

    started, cpu = time.perf_counter(), time.process_time()
    lsh = RMinHashLSH(threshold=threshold, num_perm=num_perm, num_bands=num_bands)
    kept: dict[int, Any] = {}
    duplicates = candidates = 0
    with open(path, "rb") as lines:
        for i, line in enumerate(lines):
            m = RMinHash(num_perm=num_perm, seed=42)
            m.update(shingles(orjson.loads(line)["content"]))
            found = lsh.query(m)
            candidates += len(found)
            if any(m.jaccard(kept[j]) >= threshold for j in found):
                duplicates += 1
            lsh.insert(i, m)
            kept[i] = m
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    return {"wall_s": round(wall, 3), "cpu_s": round(cpu, 3), "duplicates": duplicates, "candidates_mean": round(candidates / max(1, i + 1), 2)}


def paired_ratio(rensas: list[dict[str, Any]], runs: list[dict[str, Any]], startups: list[dict[str, Any]] | None,
                 clock: str) -> float | None:
    """The median over runs of rensa's time over the command's (less its start-up run beside it, if
    `startups`); None if a run's start-up outweighed it."""
    ratios = []
    for number, (rensa, run) in enumerate(zip(rensas, runs, strict=True)):
        command = run[clock] - (startups[number][clock] if startups else 0.0)
        if command <= 0:
            return None
        ratios.append(rensa[clock] / command)
    return round(statistics.median(ratios), 3)


def measure(sizes: list[int], repeat: int, repeat_large: int, large: int, startup_pages: int, words: int,
            work: Path, python: str = sys.executable) -> dict[str, Any]:
    startup_file = generate(work / "startup.jsonl", startup_pages, words)
    results: dict[str, Any] = {}
    for number, size in enumerate(sizes):
        path = generate(work / f"pages-{size}.jsonl", size, words)
        if number == 0:  # untimed: a fresh checkout compiles numba's kernels into its cache once (~20 s)
            run_dedup(path, work, python=python)
        runs, startups, rensas = [], [], []
        for _ in range(repeat if size < large else repeat_large):
            # start-up and rensa beside each run, so a busy neighbour slows all three alike
            startups.append(run_dedup(startup_file, work, python=python))
            runs.append(run_dedup(path, work, python=python))
            rensas.append(run_rensa(path))
            print(f"{size}: dedup {runs[-1]['wall_s']} s ({runs[-1]['cpu_s']} CPU s), start-up "
                  f"{startups[-1]['wall_s']} s ({startups[-1]['cpu_s']}), rensa {rensas[-1]['wall_s']} s "
                  f"({rensas[-1]['cpu_s']})", file=sys.stderr, flush=True)
        row: dict[str, Any] = {"pages": size, "runs": runs, "startups": startups, "rensa": rensas,
                               "work_per_page": runs[-1]["work_per_page"]}
        for clock, suffix in (("wall_s", ""), ("cpu_s", "_cpu")):
            whole = statistics.median(r[clock] for r in runs)
            net = whole - statistics.median(r[clock] for r in startups)
            rensa = statistics.median(r[clock] for r in rensas)
            measurable = net * 1000 / size >= 0.001  # else start-up's noise outweighed the run: no figure
            row.update({f"ms_per_page_net{suffix}": round(net / size * 1000, 3) if measurable else None,
                        f"ms_per_page_gross{suffix}": round(whole / size * 1000, 3),
                        f"rensa_ms_per_page{suffix}": round(rensa / size * 1000, 3),
                        f"rensa_ratio{suffix}": round(rensa / net, 3) if measurable else None,
                        # the same with the command's start-up in (imports, compiled kernels loaded
                        # from numba's cache, the store opened: ~0.7 CPU-s), as a user timing it sees it
                        f"rensa_ratio_whole{suffix}": round(rensa / whole, 3),
                        # each run against its own start-up and rensa pass, run beside it, then the
                        # median: steadier than the ratio of medians when the host's speed drifts
                        f"rensa_ratio_paired{suffix}": paired_ratio(rensas, runs, startups, clock),
                        f"rensa_ratio_whole_paired{suffix}": paired_ratio(rensas, runs, None, clock)})
        results[str(size)] = row
    for suffix in ("", "_cpu"):
        first = results[str(sizes[0])][f"ms_per_page_net{suffix}"]
        for row in results.values():  # None: start-up outweighed the run (tiny sizes on a loaded machine)
            value = row[f"ms_per_page_net{suffix}"]
            row[f"per_page_over_smallest{suffix}"] = round(value / first, 2) if first and value else None
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[2_000, 10_000, 20_000, 100_000])
    parser.add_argument("--repeat", type=int, default=3, help="runs per size below --large (median)")
    parser.add_argument("--repeat-large", type=int, default=1, help="runs per size from --large on")
    parser.add_argument("--large", type=int, default=100_000)
    parser.add_argument("--words", type=int, default=600)
    parser.add_argument("--startup-pages", type=int, default=10)
    parser.add_argument("--smoke", action="store_true", help="100 and 200 pages, once: runs in seconds")
    parser.add_argument("--out", type=Path, default=Path("bench/homogeneous.json"))
    parser.add_argument("--python", type=Path, default=Path(sys.executable),
                        help="the interpreter that runs `streamdedup dedup` (default: this one). A venv with the "
                             "core alone installed times the command as a user's install runs it: this bench's own "
                             "venv holds the peers' dependencies too (datasketch's scipy, which numba imports at "
                             "start-up for its BLAS check, ~0.3-0.4 CPU-s)")
    args = parser.parse_args()
    scipy = subprocess.run([str(args.python), "-c", "import importlib.util as u; print(u.find_spec('scipy') is not None)"],
                           capture_output=True, text=True).stdout.strip() == "True"
    if args.smoke:
        args.sizes, args.repeat, args.repeat_large = [100, 200], 1, 1
    work = Path(tempfile.mkdtemp(prefix="homogeneous-bench-"))
    try:
        results = measure(args.sizes, args.repeat, args.repeat_large, args.large, args.startup_pages, args.words, work,
                          str(args.python))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    report = {"created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "words_per_page": args.words,
              "vocabulary": "wordfreq en top 5000, Zipf exponent 1.1", "sizes": args.sizes,
              "command_python": str(args.python), "scipy_beside_the_command": scipy, "results": results}
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps({size: {k: row[k] for k in ("ms_per_page_net", "per_page_over_smallest", "rensa_ratio",
                                                 "ms_per_page_net_cpu", "per_page_over_smallest_cpu",
                                                 "rensa_ratio_cpu", "rensa_ratio_whole_cpu",
                                                 "rensa_ratio_whole_paired_cpu", "work_per_page")}
                      for size, row in results.items()}))


if __name__ == "__main__":
    main()
