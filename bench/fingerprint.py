"""Fingerprinting throughput, streamdedup beside its peers, on the same documents in one run.

    python bench/fingerprint.py [--docs 2000] [--repeat 5] [--out bench/fingerprint.json]
    python bench/fingerprint.py --smoke   # a few seconds: 200 docs, 3 repeats, no JSON written

Corpus: ~5 KB English documents built from synthetic pseudo-English (deterministic, no download;
the same generator as the tests). Each contender tokenises the raw text itself:
- streamdedup: the Detector's own path from extracted text to signatures (normalize_text, then
  detector.fingerprint_text with the default methods: exact, MinHash 128 with 5-word shingles,
  64-bit SimHash, A12) and every method's index keys (LSH band keys for MinHash),
- datasketch MinHash (128 permutations) over 5-word shingles (its documented usage),
- rensa RMinHash (128 permutations) over 5-word shingles,
- "text-dedup style": the usual pure-Python tokenise + shingle + xxh3 + numpy permutations.
Prints a table and writes JSON with the median docs/s of `repeat` runs and ratios, and where
streamdedup's time goes per document (median µs per stage). The compiled kernels (numba) are
compiled or loaded from their on-disk cache before timing; that one-off cost is reported.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import xxhash

from streamdedup.clean.normalize import normalize_text
from streamdedup.config import DEFAULT_METHODS
from streamdedup.fingerprinter import fingerprint_text
from streamdedup.fingerprints.registry import create_method
from streamdedup.testing import make_article
from streamdedup.tokens.document import Document

MIN_WORDS = 5  # CleaningConfig.min_words
CHUNK = 50  # documents per contender turn


def corpus(n: int) -> list[str]:
    docs = []
    for i in range(n):
        text = "\n\n".join(make_article(i, paragraphs=8, sentences=5))
        docs.append(text[:5000])
    return docs


def words(text: str) -> list[str]:
    return text.lower().split()


def shingles(tokens: list[str], k: int = 5) -> list[str]:
    return [" ".join(tokens[i:i + k]) for i in range(max(1, len(tokens) - k + 1))]


def run_streamdedup() -> Callable[[str], object]:
    methods = [create_method(name) for name in DEFAULT_METHODS]

    def one(text: str) -> object:
        signatures = fingerprint_text(normalize_text(text), None, methods, MIN_WORDS)
        return [m.index_keys(sig) for m in methods if (sig := signatures[m.name]) is not None]
    return one


def _fresh_shingles(doc: Document) -> None:
    """What the default methods ask a Document for, computed anew: MinHash's distinct 5-word
    shingles and SimHash's word hashes."""
    doc._shingles.clear()
    doc._all_shingles.clear()
    doc.shingles(5)
    doc.all_shingles(1)


def stage_breakdown(docs: list[str], repeat: int) -> dict[str, float]:
    """Median µs per document of each of streamdedup's stages, timed separately."""
    methods = {name: create_method(name) for name in DEFAULT_METHODS}
    texts = [normalize_text(t) for t in docs]
    built = [Document.from_text(t) for t in texts]
    signatures = [{n: m.signature(d) for n, m in methods.items()} for d in built]
    stages: dict[str, Callable[[int], object]] = {
        "normalise": lambda i: normalize_text(docs[i]),
        "tokenise + hash + sentences (compiled scan)": lambda i: Document.from_text(texts[i]),
        "shingle hashes (5-word distinct, words)": lambda i: _fresh_shingles(built[i]),
    }
    stages.update({f"{name} signature": (lambda i, m=m: m.signature(built[i])) for name, m in methods.items()})
    stages.update({f"{n} index keys": (lambda i, n=n, m=m: m.index_keys(signatures[i][n]))
                   for n, m in methods.items()})
    result = {}
    for name, stage in stages.items():
        if name.endswith("signature"):
            for doc in built:  # signatures read cached shingles, as in the detector
                _fresh_shingles(doc)
        runs = []
        for _ in range(repeat):
            started = time.perf_counter()
            for i in range(len(docs)):
                stage(i)
            runs.append((time.perf_counter() - started) / len(docs) * 1e6)
        result[name] = round(statistics.median(runs), 1)
    return result


def run_datasketch() -> Callable[[str], object]:
    from datasketch import MinHash

    def one(text: str) -> object:
        m = MinHash(num_perm=128)
        m.update_batch([s.encode() for s in shingles(words(text))])
        return m.digest()
    return one


def run_rensa() -> Callable[[str], object]:
    from rensa import RMinHash

    def one(text: str) -> object:
        m = RMinHash(num_perm=128, seed=42)
        m.update(shingles(words(text)))
        return m.digest()
    return one


def run_text_dedup_style() -> Callable[[str], object]:
    rng = np.random.default_rng(1)
    a = rng.integers(1, 2**61 - 1, size=128, dtype=np.uint64)
    b = rng.integers(0, 2**61 - 1, size=128, dtype=np.uint64)
    mersenne = np.uint64((1 << 61) - 1)

    def one(text: str) -> object:
        hashes = np.array([xxhash.xxh32_intdigest(s.encode()) for s in shingles(words(text))], dtype=np.uint64)
        permuted = (hashes[:, None] * a + b) % mersenne & np.uint64(0xFFFFFFFF)
        return permuted.min(axis=0)
    return one


CONTENDERS = {"streamdedup (exact + MinHash 128 + LSH keys + SimHash 64 + A12)": run_streamdedup,
              "rensa RMinHash 128": run_rensa, "datasketch MinHash 128": run_datasketch,
              "text-dedup style (python + numpy)": run_text_dedup_style}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--out", type=Path, default=Path("bench/fingerprint.json"))
    parser.add_argument("--smoke", action="store_true", help="200 docs, 3 repeats, no JSON: a quick check")
    args = parser.parse_args()
    from peers import require  # bench/

    require("bench/fingerprint.py", "datasketch", "rensa")
    if args.smoke:
        args.docs, args.repeat, args.out = 200, 3, None
    docs = corpus(args.docs)
    runners, warmups = {}, {}
    for name, factory in CONTENDERS.items():
        started = time.perf_counter()
        runners[name] = factory()
        runners[name](docs[0])  # warm-up: imports, tables, compiled kernels (disk-cached after the first run)
        warmups[name] = time.perf_counter() - started
    chunks = [docs[i:i + CHUNK] for i in range(0, len(docs), CHUNK)]
    rates: dict[str, list[float]] = {name: [] for name in CONTENDERS}
    cpu_rates: dict[str, list[float]] = {name: [] for name in CONTENDERS}
    for _ in range(args.repeat):
        wall, cpu = dict.fromkeys(CONTENDERS, 0.0), dict.fromkeys(CONTENDERS, 0.0)
        for chunk in chunks:  # round robin in small chunks: a busy neighbour slows every contender alike
            for name, one in runners.items():
                started, started_cpu = time.perf_counter(), time.process_time()
                for text in chunk:
                    one(text)
                wall[name] += time.perf_counter() - started
                cpu[name] += time.process_time() - started_cpu
        for name in CONTENDERS:
            rates[name].append(len(docs) / wall[name])
            cpu_rates[name].append(len(docs) / cpu[name])
    results = {name: {"docs_per_s_median": round(statistics.median(runs), 1),
                      "docs_per_s_runs": [round(r, 1) for r in runs],
                      "docs_per_cpu_s_median": round(statistics.median(cpu_rates[name]), 1),
                      "warmup_s": round(warmups[name], 3)}
               for name, runs in rates.items()}
    ours = results[next(iter(CONTENDERS))]["docs_per_s_median"]
    ours_cpu = results[next(iter(CONTENDERS))]["docs_per_cpu_s_median"]
    for row in results.values():
        row["streamdedup_ratio"] = round(ours / row["docs_per_s_median"], 2)
        row["streamdedup_ratio_cpu"] = round(ours_cpu / row["docs_per_cpu_s_median"], 2)
    stages = stage_breakdown(docs, args.repeat)
    tokens = sum(Document.from_text(normalize_text(t)).num_tokens for t in docs) / len(docs)
    report = {"machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                          "processor": platform.processor() or platform.machine()},
              "docs": len(docs), "avg_doc_bytes": round(sum(map(len, docs)) / len(docs)),
              "avg_tokens": round(tokens, 1), "repeat": args.repeat, "results": results,
              "streamdedup_stages_us_per_doc": stages}
    if args.out is not None:
        args.out.write_text(json.dumps(report, indent=2))
    print(f"| contender | docs/s (median of {args.repeat}) | streamdedup ÷ contender | same, by CPU time |")
    print("| --- | --- | --- | --- |")
    for name, row in results.items():
        print(f"| {name} | {row['docs_per_s_median']} | {row['streamdedup_ratio']} | {row['streamdedup_ratio_cpu']} |")
    print(f"\nstreamdedup per document ({tokens:.0f} tokens), median µs of {args.repeat}:")
    for name, us in stages.items():
        print(f"  {name:45s} {us:8.1f}")
    print(f"  {'sum of stages':45s} {sum(stages.values()):8.1f}")
    print(f"\none-off warm-up of streamdedup (imports, character table, compiled kernels): "
          f"{results[next(iter(CONTENDERS))]['warmup_s']} s")


if __name__ == "__main__":
    main()
