"""Where an HTML page's CPU goes outside its extractor: the per-stage profile of `dedup_files`.

    taskset -c 1 python bench/fixed_costs.py PAGES.jsonl [--repeat 3]

Runs file mode in this process (one page first, so imports, numba's kernels and the extraction
helper's start are left out), with each stage below wrapped in a CPU timer that charges a call's
own time (less the wrapped stages it calls) to its stage; the extraction helper's CPU is read from
/proc. Prints CPU ms a page, the median of the repeats: the parent process's stages, the rest of
the parent, and the helper (extraction and its side of the round trip). docs/benchmarks.md, "The
fixed per-page costs", holds its figures.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from streamdedup.api.file_mode import dedup_files
from streamdedup.config import DetectorConfig

_spent: dict[str, float] = defaultdict(float)
_inside: list[float] = []  # the CPU time of wrapped calls made by the call being timed, per level


def _timed(stage: str, func: Callable[..., Any]) -> Callable[..., Any]:
    def timed(*args: Any, **kwargs: Any) -> Any:
        _inside.append(0.0)
        start = time.process_time()
        try:
            return func(*args, **kwargs)
        finally:
            took = time.process_time() - start
            children = _inside.pop()
            _spent[stage] += took - children
            if _inside:
                _inside[-1] += took

    return timed


def _wrap() -> None:
    """Charge the stages' functions to their names (module attributes, looked up where they are called)."""
    from streamdedup import detector, fingerprinter
    from streamdedup.clean import isolated, nesting, pipeline
    from streamdedup.outputs import files, job
    from streamdedup.record import readers

    targets: list[tuple[Any, str, str]] = [
        (readers._Source, "line", "read input line"),
        (fingerprinter.Fingerprinter, "_decode", "decode JSON"),
        (fingerprinter, "page_from_record", "page fields"),
        (nesting, "flatten_nesting", "nesting pre-check"),
        (isolated.IsolatedExtractor, "extract", "helper round trip (parent side)"),
        (pipeline, "normalize_text", "normalise (3 texts)"),
        (fingerprinter, "fingerprint_text", "tokenise + fingerprint"),
        (detector.Detector, "decide_staged", "store + verdict"),
        (detector.Detector, "commit", "store commit"),
        (files.FileSink, "write", "output lines"),
        (files.FileSink, "sync", "output sync"),
        (job.FileJob, "stage", "job ledger"),
    ]
    for owner, name, stage in targets:
        func = owner.__dict__[name]
        if isinstance(func, staticmethod):
            setattr(owner, name, staticmethod(_timed(stage, func.__func__)))
        else:
            setattr(owner, name, _timed(stage, func))
    # extract_texts' own time: the UTF-8 encode the nesting check shares with the helper's pipe
    pipeline.extract_texts = _timed("UTF-8 encode (shared by both)", pipeline.extract_texts)


def _helper_cpu() -> float:
    from streamdedup.clean.isolated import helper

    process = helper()._process
    if process is None:
        return 0.0
    fields = Path(f"/proc/{process.pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run(pages: Path, repeat: int) -> dict[str, float]:
    """CPU ms a page by stage, the median of `repeat` runs."""
    _wrap()
    config = DetectorConfig(prepare_threads=1)
    count = sum(1 for line in pages.open("rb") if line.strip())
    rows: dict[str, list[float]] = defaultdict(list)
    with tempfile.TemporaryDirectory() as work:
        first = Path(work) / "one.jsonl"
        with pages.open("rb") as source:
            first.write_bytes(source.readline())
        for number in range(repeat):
            dedup_files([first], Path(work) / f"warm{number}", config, fresh=True)  # start-up, left out
            _spent.clear()
            helper_before, before = _helper_cpu(), time.process_time()
            dedup_files([pages], Path(work) / f"out{number}", config, fresh=True)
            parent, helper = time.process_time() - before, _helper_cpu() - helper_before
            for stage, seconds in _spent.items():
                rows[stage].append(seconds * 1000 / count)
            rows["rest of the parent"].append((parent - sum(_spent.values())) * 1000 / count)
            rows["parent, all"].append(parent * 1000 / count)
            rows["helper process (extraction, visible text, its side of the pipe)"].append(helper * 1000 / count)
            rows["both"].append((parent + helper) * 1000 / count)
    return {stage: statistics.median(values) for stage, values in rows.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pages", type=Path)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    figures = run(args.pages, args.repeat)
    print(f"{args.pages}: CPU ms a page (median of {args.repeat})")
    for stage, ms in figures.items():
        print(f"  {stage:66s} {ms:7.3f}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
