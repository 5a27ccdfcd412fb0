"""The judge step alone (`verdict.relations.judged`), replayed: the calls a homogeneous run makes.

    python bench/judge.py                    # 6,000 homogeneous pages; the calls of pages 2,000-4,000
    python bench/judge.py --smoke            # seconds: 400 pages, the calls of pages 100-300

On homogeneous pages (bench/homogeneous.py's: one Zipf vocabulary) every page has ~30 candidates
and each is verified, so the judge step is the largest part of the decide path there (~17 % of
the whole command's CPU on 2026-12-02, told by replacing it with a stub). This bench runs the
file through the Detector once, capturing the arguments of each call of pages `--first` to
`--last` as the Detector makes them (the candidates' records read then, so a replay reads no
store), then replays all captured calls `--repeat` times in one process: µs a call (median and
least over the replays), candidates a call, and the matches the calls found (the same on every
replay, so a change that alters what the engine says shows here as well as in the evaluation).
The calls are captured with the candidate filter off (`verdict.prefilter`: on these pages it rules
out nearly every candidate before `judged`), so the replay is the judge step on every candidate, as
before the filter; `--filtered` captures them as the Detector makes them today.

Prints and writes JSON."""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import homogeneous  # noqa: E402 - bench/homogeneous.py: the same pages

import streamdedup.detector as detector_module  # noqa: E402
from streamdedup.config import DetectorConfig  # noqa: E402
from streamdedup.detector import Detector  # noqa: E402
from streamdedup.testing import raw_records  # noqa: E402
from streamdedup.verdict.columns import Measured  # noqa: E402
from streamdedup.verdict.found_by import FoundBy  # noqa: E402
from streamdedup.verdict.relations import judged  # noqa: E402


def capture(path: Path, first: int, last: int, filtered: bool = False) -> list[tuple[Any, ...]]:
    """The arguments of the judge calls of pages first..last-1 (in the order the Detector asks)
    of one run of the Detector over the file (`filtered`: with the candidate filter on)."""
    calls: list[tuple[Any, ...]] = []
    seen = 0

    def spy(seqs: Any, docs_of: Any, policy: Any, methods: Any, page: Any, mine: Any, template_known: bool,
            oldest_ms: int | None, found_by: FoundBy | None = None, tests: Counter[str] | None = None,
            measured: Measured | None = None) -> Any:
        nonlocal seen
        if first <= seen < last:
            records = dict(zip(seqs, docs_of(seqs), strict=True))
            kept = None if found_by is None else FoundBy({tag: set(s) for tag, s in found_by.seqs.items()},
                                                         dict(found_by.unfiled_bounds))
            calls.append((list(seqs), lambda asked, records=records: [records[s] for s in asked], policy, methods,
                          page, mine, template_known, oldest_ms, kept, measured))  # (what the filter measured last)
        seen += 1
        return judged(seqs, docs_of, policy, methods, page, mine, template_known, oldest_ms, found_by, tests, measured)

    raws = raw_records(path.read_bytes().splitlines())
    detector_module.judged = spy
    try:
        with (tempfile.TemporaryDirectory() as state,
              Detector(DetectorConfig(), Path(state), candidate_filter=filtered) as detector):
            for _ in detector.run(raws):  # in the Detector's batches, as `streamdedup dedup` sends them
                pass
    finally:
        detector_module.judged = judged
    return calls


def replay(calls: list[tuple[Any, ...]], repeat: int) -> dict[str, Any]:
    times, matches, digest = [], 0, ""
    for _ in range(repeat):
        started = time.perf_counter()
        found = [list(judged(*call[:-1], tests=Counter(), measured=call[-1])) for call in calls]
        times.append(time.perf_counter() - started)
        matches = sum(map(len, found))
        digest = hashlib.sha1(repr([(seq, rule) for page in found for seq, _, rule, *_ in page]).encode()).hexdigest()
    per_call = [t / max(1, len(calls)) * 1e6 for t in times]
    return {"calls": len(calls), "candidates_per_call": round(statistics.mean(len(c[0]) for c in calls), 2) if calls else 0,
            "us_per_call_median": round(statistics.median(per_call), 2), "us_per_call_least": round(min(per_call), 2),
            "matches": matches, "matches_sha1": digest, "replays": repeat}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=6000)
    parser.add_argument("--kind", choices=sorted(homogeneous.KINDS), default="zipf", help="bench/homogeneous.py's kind of pages")
    parser.add_argument("--first", type=int, default=2000, help="the first page whose judge call is captured")
    parser.add_argument("--last", type=int, default=4000, help="the page after the last one captured")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--filtered", action="store_true", help="capture with the candidate filter on, as the Detector runs")
    parser.add_argument("--smoke", action="store_true", help="400 pages, the calls of pages 100-300, 3 replays")
    parser.add_argument("--out", type=Path, default=Path("bench/judge.json"))
    args = parser.parse_args()
    if args.smoke:
        args.pages, args.first, args.last, args.repeat = 400, 100, 300, 3
    with tempfile.TemporaryDirectory() as work:
        path = homogeneous.generate(Path(work) / "pages.jsonl", args.pages, kind=args.kind)
        calls = capture(path, args.first, args.last, args.filtered)
    report = {"kind": args.kind, "pages": args.pages, "first": args.first, "last": args.last, "filtered": args.filtered,
              **replay(calls, args.repeat)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report))


if __name__ == "__main__":
    main()
