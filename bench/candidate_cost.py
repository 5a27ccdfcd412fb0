"""CPU a page by step of `streamdedup dedup` on one file, and what its candidates cost.

    python bench/candidate_cost.py FILE                        # CPU a page by step, 3 runs (medians)
    python bench/candidate_cost.py FILE --keys-off simhash     # beside: the same with SimHash's keys off
    python bench/candidate_cost.py --kind prose --pages 6000 --keys-off simhash   # bench/homogeneous.py's pages

Each run is the command in a fresh process (start-up in, as a user runs it), with the main thread's
CPU time (thread time) read around each step: the stateful stage's steps (summary.json's
`store_us_per_page`, read by CPU instead of wall), the pure stages (`prepare`: JSON, cleaning,
tokens, signatures) and the outputs; the rest of the process's CPU (imports, kernels, the store
opened, lines read, the sync thread) is `rest`. CPU, not wall: a busy neighbour on a shared box
moves it less.

`--keys-off METHOD` runs the same file with that method's index keys off (it files and finds
nothing), alternated with the default runs: the difference is what the candidates its keys find
cost the whole command. A measure, not a setting: verdicts may differ with it (the JSON says
whether they did), so it is no speed-up to ship. On homogeneous text nearly every candidate is
SimHash's (shared vocabulary makes its word-level keys frequent) and the candidate filter rules
nearly all out (docs/limitations.md, the rensa floor).
"""

from __future__ import annotations

import argparse
import filecmp
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def child(path: str, out: str, keys_off: str | None) -> None:
    """One run in this process: the command on `path` into `out`, CPU by step as JSON on stdout."""
    started = time.process_time()
    import collections
    import types

    import numpy as np

    spent: collections.Counter[str] = collections.Counter()

    def timed(owner: Any, name: str, label: str) -> None:
        function = getattr(owner, name)

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            begun = time.thread_time_ns()
            try:
                return function(*args, **kwargs)
            finally:
                spent[label] += time.thread_time_ns() - begun

        setattr(owner, name, wrapper)

    import streamdedup.__main__ as command
    from streamdedup import detector
    from streamdedup.fingerprinter import Fingerprinter
    from streamdedup.fingerprints.registry import METHODS
    from streamdedup.outputs import files, job

    if keys_off is not None:
        method = METHODS[keys_off]
        method.index_keys = lambda self, signature: []  # type: ignore[method-assign]
        method.index_key_rows = lambda self, encoded: (  # type: ignore[method-assign]
            np.zeros((0, 9), dtype=np.uint8), np.zeros(len(encoded), dtype=np.int64))
    # the stateful stage's own step clock, read as CPU
    detector.time = types.SimpleNamespace(perf_counter_ns=time.thread_time_ns, time=time.time)  # type: ignore[assignment]
    timed(Fingerprinter, "prepare_many", "prepare")
    timed(files.FileSink, "write", "outputs")
    timed(files.FileSink, "write_clusters", "clusters")
    timed(job.FileJob, "stage", "ledger")
    timed(detector.Detector, "__init__", "detector opened")
    made: list[Any] = []
    decide = detector.Detector.decide_staged

    def kept(self: Any, items: Any) -> Any:
        if not made:
            made.append(self)
        return decide(self, items)

    detector.Detector.decide_staged = kept  # type: ignore[method-assign]
    sys.argv = ["streamdedup", "dedup", path, "--out", out, "--fresh", "-q"]
    code = command.main()
    total = time.process_time() - started
    found = made[0]
    pages = max(1, found.work["pages"])
    steps = {f"stateful {step}": found.step_ns[step] for step in found.STEPS}
    steps.update(spent)
    us = {step: round(ns / 1000 / pages, 1) for step, ns in steps.items()}
    us["rest"] = round((total * 1e9 - sum(steps.values())) / 1000 / pages, 1)
    print(json.dumps({"code": code, "cpu_s": round(total, 3), "pages": found.work["pages"], "us_per_page": us,
                      "work_per_page": found.work_per_page()}))


def run(path: Path, out: Path, keys_off: str | None) -> dict[str, Any]:
    """`child` in a fresh process (the interpreter's own start not counted)."""
    options = ["--keys-off", keys_off] if keys_off else []
    done = subprocess.run([sys.executable, __file__, "--child", str(path), "--child-out", str(out), *options],
                          cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-2000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def medians(runs: list[dict[str, Any]]) -> dict[str, Any]:
    steps = runs[0]["us_per_page"]
    return {"cpu_s": statistics.median(r["cpu_s"] for r in runs),
            "us_per_page": {step: statistics.median(r["us_per_page"][step] for r in runs) for step in steps},
            "work_per_page": runs[-1]["work_per_page"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file", nargs="?", type=Path, help="JSON lines (or --kind)")
    parser.add_argument("--kind", help="bench/homogeneous.py's pages of this kind instead of a file (zipf, prose, ...)")
    parser.add_argument("--pages", type=int, default=6000)
    parser.add_argument("--keys-off", help="a method whose index keys are off in the runs beside (e.g. simhash)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", type=Path, help="write the JSON here too")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--child-out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.child_out, args.keys_off)
        return
    with tempfile.TemporaryDirectory(prefix="candidate-cost-") as work:
        if args.kind:
            sys.path.insert(0, str(ROOT / "bench"))
            from homogeneous import generate

            path = generate(Path(work) / f"{args.kind}.jsonl", args.pages, kind=args.kind)
        elif args.file is not None:
            path = args.file.resolve()
        else:
            parser.error("give a FILE or --kind")
        variants = [None, args.keys_off] if args.keys_off else [None]
        runs: dict[str, list[dict[str, Any]]] = {str(v): [] for v in variants}
        for _ in range(args.repeat):  # alternated: a neighbour's load falls on both alike
            for variant in variants:
                runs[str(variant)].append(run(path, Path(work) / f"out-{variant}", variant))
        report: dict[str, Any] = {"file": str(args.file or args.kind), "pages": runs["None"][0]["pages"],
                                  "runs": runs, "default": medians(runs["None"])}
        if args.keys_off:
            report[f"{args.keys_off}_keys_off"] = medians(runs[args.keys_off])
            report["same_verdicts"] = all(filecmp.cmp(Path(work) / "out-None" / name,
                                                      Path(work) / f"out-{args.keys_off}" / name, shallow=False)
                                          for name in ("verdicts.jsonl", "clusters.jsonl"))
    text = json.dumps({k: v for k, v in report.items() if k != "runs"}, indent=1)
    print(text)
    if args.out:
        args.out.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
