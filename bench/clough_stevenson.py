"""Graded sanity check on a human-labelled text-reuse corpus (Clough & Stevenson, Sheffield).

Each short answer is compared with the Wikipedia source it was written from; humans labelled
the reuse as cut (near copy), light or heavy revision, or none. A near-duplicate detector should
flag cut and most light answers, some heavy ones, and no 'non' answer.

    python bench/clough_stevenson.py --corpus ../shared/data/clough_stevenson_short_answer_plagiarism/data
"""

from __future__ import annotations

import argparse
import csv
import json
import tempfile
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

from streamdedup.config import DetectorConfig
from streamdedup.detector import Detector, Fingerprinted
from streamdedup.fingerprints.registry import METHODS
from streamdedup.testing import raw_records

CATEGORIES = ("cut", "light", "heavy", "non")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, required=True, help="folder with file_information.csv")
    parser.add_argument("--out", type=Path, default=Path("bench/clough_stevenson.json"))
    args = parser.parse_args()
    rows = list(csv.DictReader(open(args.corpus / "file_information.csv")))
    texts = {r["File"]: (args.corpus / r["File"]).read_text(encoding="utf-8", errors="replace") for r in rows}
    sources = {r["Task"]: r["File"] for r in rows if r["Category"] == "orig"}
    base = DetectorConfig()
    scenarios = {"default": base, **{m: replace(base, methods=(m,), policy=m, same_site_policy=m) for m in METHODS
                                     if METHODS[m].can_match}}
    flagged: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    with tempfile.TemporaryDirectory() as tmp:
        # every method's signature, so each scenario's detector finds its own (it reads only its methods')
        with Detector(replace(base, methods=tuple(METHODS)), Path(tmp) / "prepare") as preparer:
            def prepare(name: str, site: str) -> Fingerprinted:
                [item] = [preparer.prepare(r) for r in raw_records(
                    [{"url": f"https://{site}.example/{name}", "content": texts[name], "content_type": "text/plain"}])]
                assert isinstance(item, Fingerprinted), item
                return item
            prepared = {name: prepare(name, "answers") for name in texts if name not in sources.values()}
            originals = {task: prepare(name, "wikipedia") for task, name in sources.items()}
        for i, row in enumerate(r for r in rows if r["Category"] != "orig"):
            for scenario, config in scenarios.items():
                with Detector(config, Path(tmp) / f"{scenario}-{i}") as detector:
                    outcome = detector.decide_batch([originals[row["Task"]], prepared[row["File"]]])[1]
                flagged[scenario][row["Category"]].append(int(outcome.status == "duplicate"))
    table = {s: {c: round(sum(v[c]) / len(v[c]), 3) for c in CATEGORIES} for s, v in flagged.items()}
    counts = {c: len(flagged["default"][c]) for c in CATEGORIES}
    args.out.write_text(json.dumps({"answers": counts, "flagged_fraction": table}, indent=2))
    print("| method | " + " | ".join(f"{c} (n={counts[c]})" for c in CATEGORIES) + " |")
    print("| --- |" + " --- |" * len(CATEGORIES))
    for scenario, row in table.items():
        print(f"| {scenario} | " + " | ".join(f"{row[c]:.2f}" for c in CATEGORIES) + " |")


if __name__ == "__main__":
    main()
