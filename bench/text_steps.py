"""CPU µs a page of each step of `fingerprint_text` on plain-text pages, in one process (issue 60).

    python bench/text_steps.py PAGES.jsonl [--pages 2000] [--runs 3]

Each step runs over the same pages in an in-process loop, timed by `time.process_time_ns` (CPU:
the machine is shared), `--runs` times round robin; the least of the runs is printed. A step's
Documents are made fresh each run and given what the step finds made already in the whole path
(the distinct shingles before the MinHashes and the sketch), so a step is timed alone. To compare
two checkouts, run this from each in turn, several times, and take the medians (a checkout
without `Document.shingle_set` times `Document.shingles`, what it read instead). The pages: JSON
lines with a "content" of plain text, e.g. `bench/homogeneous.py`'s `generate(path, 2000, kind="prose")`.
"""

from __future__ import annotations

import argparse
import gc
import time
from collections.abc import Callable
from typing import Any

import orjson

from streamdedup.config import DetectorConfig
from streamdedup.fingerprinter import Fingerprinter, fingerprint_text
from streamdedup.jit import start_cpu_target
from streamdedup.tokens.document import Document

# what the methods read as their shingles' set (`Document.shingles` before `shingle_set` was made)
SET: Callable[[Document, int], Any] = getattr(Document, "shingle_set", Document.shingles)


def steps(texts: list[str], fingerprinter: Fingerprinter) -> dict[str, tuple[Callable[[], list[Any]],
                                                                           Callable[[Any], Any]]]:
    """Each step's name: what makes its inputs (untimed), what it does with one."""
    methods = {m.name: m for m in fingerprinter.methods}
    pairs, minhash = methods["wordpairs"], methods["minhash"]

    def fresh() -> list[Document]:
        return [Document.from_text(text, None) for text in texts]

    def with_sets(k: int) -> Callable[[], list[Document]]:
        def made() -> list[Document]:
            docs = fresh()
            for doc in docs:
                SET(doc, k)
            return docs
        return made

    return {
        "tokenise": (lambda: texts, lambda text: Document.from_text(text, None)),
        "distinct pairs": (fresh, lambda doc: SET(doc, 2)),
        "pair minhash": (with_sets(2), lambda doc: pairs._packed_pairs(doc)),
        "paragraph sketch": (with_sets(2), lambda doc: pairs._paragraphs(doc)),
        "wordpairs whole": (fresh, lambda doc: pairs.signature(doc)),
        "distinct 5-shingles": (fresh, lambda doc: SET(doc, 5)),
        "minhash (after distinct)": (with_sets(5), lambda doc: minhash.signature(doc)),
        "a12": (fresh, lambda doc: methods["a12"].signature(doc)),
        "simhash": (fresh, lambda doc: methods["simhash"].signature(doc)),
        "fingerprint_text": (lambda: texts, lambda text: fingerprint_text(text, None, fingerprinter.methods, 0)),
    }


def main() -> None:
    """Print each step's least CPU µs a page over the runs."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pages")
    parser.add_argument("--pages", dest="count", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    start_cpu_target()
    with open(args.pages, "rb") as lines:
        texts = [orjson.loads(line)["content"] for _, line in zip(range(args.count), lines, strict=False)]
    timed = steps(texts, Fingerprinter(DetectorConfig(prepare_threads=1)))
    best: dict[str, list[float]] = {name: [] for name in timed}
    gc.disable()
    for _ in range(args.runs):
        for name, (made, step) in timed.items():
            items = made()
            start = time.process_time_ns()
            for item in items:
                step(item)
            best[name].append((time.process_time_ns() - start) / len(items) / 1000)
    for name, values in best.items():
        print(f"{name:26s} min {min(values):7.1f} µs/page")


if __name__ == "__main__":
    main()
