"""Fingerprinting throughput, streamdedup beside its peers, on the same documents in one run.

    python bench/fingerprint.py [--docs 2000] [--repeat 5] [--out bench/fingerprint.json]

Corpus: ~5 KB English documents built from synthetic pseudo-English (deterministic, no download;
the same generator as the tests). Each contender tokenises the raw text itself:
- streamdedup: exact + 64-bit SimHash + MinHash 128 with LSH band keys, 5-word shingles
  (Document.from_text + the three methods' signature() and index_keys()),
- datasketch MinHash (128 permutations) over 5-word shingles (its documented usage),
- rensa RMinHash (128 permutations) over 5-word shingles,
- "text-dedup style": the usual pure-Python tokenise + shingle + xxh3 + numpy permutations.
Prints a table and writes JSON with the median docs/s of `repeat` runs and ratios.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Callable

import numpy as np
import xxhash

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from streamdedup.clean.normalize import normalize_text  # noqa: E402
from streamdedup.fingerprints.exact import ExactMethod  # noqa: E402
from streamdedup.fingerprints.minhash import MinHashMethod  # noqa: E402
from streamdedup.fingerprints.simhash import SimHashMethod  # noqa: E402
from streamdedup.testing import make_article  # noqa: E402
from streamdedup.tokens.document import Document  # noqa: E402


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
    exact, simhash, minhash = ExactMethod(), SimHashMethod(), MinHashMethod()

    def one(text: str) -> object:
        doc = Document.from_text(normalize_text(text))
        sig = minhash.signature(doc)
        return exact.signature(doc), simhash.signature(doc), minhash.index_keys(sig)
    return one


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


CONTENDERS = {"streamdedup (exact+simhash+minhash128+LSH keys)": run_streamdedup,
              "rensa RMinHash 128": run_rensa, "datasketch MinHash 128": run_datasketch,
              "text-dedup style (python + numpy)": run_text_dedup_style}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--out", type=Path, default=Path("bench/fingerprint.json"))
    args = parser.parse_args()
    docs = corpus(args.docs)
    results = {}
    for name, factory in CONTENDERS.items():
        one = factory()
        one(docs[0])  # warm-up: imports, tables
        rates = []
        for _ in range(args.repeat):
            started = time.perf_counter()
            for text in docs:
                one(text)
            rates.append(len(docs) / (time.perf_counter() - started))
        results[name] = {"docs_per_s_median": round(statistics.median(rates), 1),
                         "docs_per_s_runs": [round(r, 1) for r in rates]}
    ours = results[next(iter(CONTENDERS))]["docs_per_s_median"]
    for name, row in results.items():
        row["streamdedup_ratio"] = round(ours / row["docs_per_s_median"], 2)
    report = {"machine": {"cpus": __import__("os").cpu_count(), "python": platform.python_version()},
              "docs": len(docs), "avg_doc_bytes": round(sum(map(len, docs)) / len(docs)), "repeat": args.repeat,
              "results": results}
    args.out.write_text(json.dumps(report, indent=2))
    print(f"| contender | docs/s (median of {args.repeat}) | streamdedup ÷ contender |")
    print("| --- | --- | --- |")
    for name, row in results.items():
        print(f"| {name} | {row['docs_per_s_median']} | {row['streamdedup_ratio']} |")


if __name__ == "__main__":
    main()
