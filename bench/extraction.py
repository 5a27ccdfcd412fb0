"""Main-content extractors compared on real pages: quality against each page's article and pages/s.

    python bench/extraction.py --pages ../shared/data/readability-test-pages.tar.gz --out bench/extraction.json
    python bench/extraction.py --pages newspaper4k-0.9.6.tar.gz --out np.json    # a third source (evaluation.md)

Quality is bag-of-words precision / recall / F1 of each extractor's text against the page's
article (readability's: the text Readability.js extracts, expected.html; newspaper4k's: its
tests' expected text; trafilatura's: the annotated article, evaluate/pages.py); for text written
without spaces (Chinese, Japanese, Thai, Burmese, Tibetan: `SourcePage.dense`) the bag is of
characters, as a whole sentence would be one word. 1 - precision is the template text that leaks
into the fingerprint. Speed is one core, extraction alone, median of 3 runs. Several --pages
archives are scored together, and each one apart (`by_corpus`).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import regex

from streamdedup.clean.extract import extract_all_text, extract_resiliparse, extract_trafilatura
from streamdedup.clean.fast_extract import extract_fast
from streamdedup.evaluate.pages import load_pages

WORD = regex.compile(r"\w+")
CHARACTER = regex.compile(r"\S")


def trafilatura_defaults(html: str) -> str:
    import trafilatura

    return trafilatura.extract(html) or ""


EXTRACTORS: dict[str, Callable[[str], str]] = {
    "fast (the default)": extract_fast,
    "trafilatura (favor_precision, --extractor trafilatura)": extract_trafilatura,
    "trafilatura (defaults)": trafilatura_defaults,
    "resiliparse (main_content=True)": extract_resiliparse,
    "resiliparse (whole page, no extraction)": extract_all_text,
}


def bag_scores(extracted: str, reference: str, dense: bool = False) -> tuple[float, float, float]:
    unit = CHARACTER if dense else WORD
    got, want = Counter(unit.findall(extracted.lower())), Counter(unit.findall(reference.lower()))
    overlap = sum((got & want).values())
    precision = overlap / sum(got.values()) if got else 0.0
    recall = overlap / sum(want.values()) if want else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=Path, action="append", required=True,
                        help="readability's, trafilatura's or newspaper4k's archive; repeat for several")
    parser.add_argument("--out", type=Path, default=Path("bench/extraction.json"))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", help="the extractors whose name starts so (\"fast\"), not all")
    args = parser.parse_args()
    pages = load_pages(args.pages)
    results = {}
    for name, extract in EXTRACTORS.items():
        if args.only and not name.startswith(args.only):
            continue
        texts, failures = [], 0
        for page in pages:
            try:
                texts.append(extract(page.source))
            except Exception:  # noqa: BLE001 - a failure is a result here
                texts.append("")
                failures += 1
        scores = [bag_scores(t, "\n".join(p.paragraphs), p.dense) for t, p in zip(texts, pages, strict=True)]
        timings = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            for page in pages:
                try:
                    extract(page.source)
                except Exception:  # noqa: BLE001
                    pass
            timings.append(time.perf_counter() - start)
        seconds = statistics.median(timings)
        results[name] = {
            "precision_mean": round(statistics.mean(s[0] for s in scores), 3),
            "recall_mean": round(statistics.mean(s[1] for s in scores), 3),
            "f1_mean": round(statistics.mean(s[2] for s in scores), 3),
            "f1_median": round(statistics.median(s[2] for s in scores), 3),
            "empty": sum(1 for t in texts if not t.strip()),
            "exceptions": failures,
            "pages_per_s": round(len(pages) / seconds, 1),
            "ms_per_page": round(1000 * seconds / len(pages), 2),
            "by_corpus": {corpus: {"pages": len(mine), "precision_mean": round(statistics.mean(s[0] for s in mine), 3),
                                   "recall_mean": round(statistics.mean(s[1] for s in mine), 3)}
                          for corpus in sorted({p.corpus for p in pages})
                          if (mine := [s for s, p in zip(scores, pages, strict=True) if p.corpus == corpus])},
        }
    report = {"pages": len(pages), "repeat": args.repeat, "extractors": results}
    args.out.write_text(json.dumps(report, indent=2))
    print("| extractor | precision | recall | F1 mean | F1 median | empty | pages/s |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, r in results.items():
        print(f"| {name} | {r['precision_mean']} | {r['recall_mean']} | {r['f1_mean']} | {r['f1_median']} "
              f"| {r['empty']} | {r['pages_per_s']} |")


if __name__ == "__main__":
    main()
