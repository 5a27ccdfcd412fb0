"""Two revisions of the code through `bench/store.py` at the same time: a paired comparison.

    python bench/store_pair.py BASE NEW                        # git revisions, 1 M pages, --bulk-fill
    python bench/store_pair.py HEAD~1 HEAD --pages 2000000 -- --windows 7
    python bench/store_pair.py HEAD HEAD --smoke               # seconds: both in --smoke

The machine is shared: from one hour to the next another tenant moved the same code's rate at
2 M pages from 14,547 to 16,888 pages a thread CPU-second (docs/benchmarks.md, "The store"), more
than most changes to the store's path are worth. Run one after the other, two revisions compare
the hours as much as the code; run at once, one a core, both meet the same neighbours. Each
revision is exported with `git archive` into a temporary directory and that revision's own
`bench/store.py` runs from it (`PYTHONPATH` set to it: the package installed in the venv is not
used), with the same arguments. The two share the memory bus and the last-level cache, so each
slows the other, alike; and memory: two 10 M-page stores do not fit in 24 GB (1 M: ~1.5 GB
each, 2 M: ~3 GB), and after its windows each run rebuilds its table twice beside the first (the
crash rebuild, then the per-record one): at 3 M and at 5 M pages one run was killed there for
memory on a 24 GB machine (2026-11-28): past 2 M there, pass `-- --no-reopen` (the windows only;
both revisions' bench/store.py must know it, as those after 2026-11-28 do). If one run fails, the other
is stopped and the failure told in one line, with the windows each run had finished.

Prints and writes JSON (`--out`): each revision's commit and its bench/store.py report, and
NEW's medians over BASE's (pages a thread CPU-second, a CPU-second and a wall-clock second),
with the ratio window by window. Nothing here asserts a speed.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
MEDIANS = ("pages_per_thread_cpu_s_median", "pages_per_cpu_s_median", "pages_per_s_median")


def export(revision: str, into: Path) -> str:
    """The revision's tree into `into`; returns its commit."""
    found = subprocess.run(["git", "rev-parse", "--verify", "--quiet", f"{revision}^{{commit}}"], cwd=ROOT,
                           capture_output=True, text=True)
    if found.returncode:
        sys.exit(f"{revision!r} is not a commit of {ROOT}: give a commit, branch or tag (as `git log` shows them)")
    commit = found.stdout.strip()
    archive = subprocess.run(["git", "archive", "--format=tar", commit], cwd=ROOT, check=True, capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:  # our own tree; the filter where Python has it (3.11.4+)
        tar.extractall(into, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
    return commit


def ratios(base: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """NEW's medians over BASE's, and window by window (pages a thread CPU-second)."""
    out: dict[str, Any] = {key.removesuffix("_median") + "_ratio": round(new[key] / base[key], 3) for key in MEDIANS}
    out["windows_thread_cpu_ratio"] = [round(n["pages_per_thread_cpu_s"] / b["pages_per_thread_cpu_s"], 3)
                                       for b, n in zip(base["windows"], new["windows"], strict=True)]
    return out


def wait(runs: dict[str, Any]) -> None:
    """Until both runs end; if one fails, the other is stopped and the failure told in one line."""
    processes = [run["process"] for run in runs.values()]
    # while one still runs and none has failed (poll(): None while running, then the exit code)
    while any(process.poll() is None for process in processes) and not any(process.poll() for process in processes):
        time.sleep(1)
    stopped = [process for process in processes if process.poll() is None]
    for process in stopped:
        process.terminate()
        process.wait()
    for role, run in runs.items():
        code = run["process"].returncode
        if code and run["process"] not in stopped:
            lines = run["log"].read_text(errors="replace").strip().splitlines()
            killed = " (SIGKILL: on Linux most likely the out-of-memory killer; pair fewer --pages)" if code == -9 else ""
            sys.exit(f"bench/store.py of {role} ({run['revision']}) exited {code}{killed}: "
                     f"{lines[-1] if lines else 'no message'}; windows done: {finished_windows(runs)}")


def finished_windows(runs: dict[str, Any]) -> str:
    """Each run's windows that finished (pages a thread CPU-second), from its progress lines: what a
    run stopped after its windows (in the reopening steps) still measured."""
    done = {}
    for role, run in runs.items():
        lines = run["log"].read_text(errors="replace").splitlines()
        done[role] = [json.loads(line)["pages_per_thread_cpu_s"] for line in lines
                      if line.startswith("{") and '"pages_per_thread_cpu_s"' in line and '"windows"' not in line]
    return json.dumps(done)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     epilog="Arguments after -- go to bench/store.py as they are (e.g. -- --windows 7).")
    parser.add_argument("base", help="a git revision: the one compared against")
    parser.add_argument("new", help="a git revision: the one measured")
    parser.add_argument("--pages", type=int, default=1_000_000, help="pages stored before the windows (bench/store.py)")
    parser.add_argument("--smoke", action="store_true", help="both runs as bench/store.py --smoke (seconds)")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "store_pair.json")
    argv = sys.argv[1:]
    cut = argv.index("--") if "--" in argv else len(argv)
    args, store_args = parser.parse_args(argv[:cut]), argv[cut + 1:]
    passed = ["--smoke"] if args.smoke else ["--pages", str(args.pages), "--bulk-fill"]
    with tempfile.TemporaryDirectory(prefix="store-pair-") as work:
        runs: dict[str, Any] = {}
        for role, revision in (("base", args.base), ("new", args.new)):
            tree = Path(work) / role
            commit = export(revision, tree)
            out = tree / "store.json"
            command = [sys.executable, str(tree / "bench" / "store.py"), *passed, *store_args, "--out", str(out)]
            log = tree / "stderr.log"  # its progress lines, and a failure's message
            with open(log, "w") as errors:
                process = subprocess.Popen(command, cwd=tree, env={**os.environ, "PYTHONPATH": str(tree)},
                                           stdout=subprocess.DEVNULL, stderr=errors)
            runs[role] = {"revision": revision, "commit": commit, "out": out, "log": log, "process": process}
        wait(runs)
        reports = {role: json.loads(run["out"].read_text()) for role, run in runs.items()}
    report = {"arguments": [*passed, *store_args],
              **{role: {"revision": run["revision"], "commit": run["commit"], "report": reports[role]}
                 for role, run in runs.items()},
              "new_over_base": ratios(reports["base"], reports["new"])}
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps({"base": runs["base"]["commit"][:12], "new": runs["new"]["commit"][:12],
                      **{f"{role}_{key}": reports[role][key] for role in runs for key in MEDIANS},
                      **report["new_over_base"]}))


if __name__ == "__main__":
    main()
