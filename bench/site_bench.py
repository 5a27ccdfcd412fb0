"""`bench/e2e.py --site-crawl`: the whole command on crawls where sites recur, against trafilatura alone.

    python bench/e2e.py --site-crawl                 # the site crawl and the cross-site crawl, 3 repeats
    python bench/e2e.py --site-crawl --crawls site --repeat 5 --no-profile

The crawls (bench/site_crawl.py) are built from ../shared/data, same seed, same bytes. On each:
the whole `streamdedup dedup FILE --out DIR --fresh -q --prepare-threads 1` in a fresh process,
on one core (this process is pinned to one CPU and the command inherits it), with its default
extractor and with `--extractor resiliparse`; its start-up (imports, numba's cached kernels, the
store, the extraction helper) is measured by the same command on the crawl's first page and
taken off. Beside it, in the same repeat, alternating, trafilatura's extraction alone
(`streamdedup.clean.extract.extract_trafilatura`, warmed up, in this process) on the same pages.
Medians of `--repeat`, in CPU seconds (the command's and its helper's user + system time) and in
wall seconds; `speedup_vs_trafilatura_alone` is the median of each repeat's (trafilatura alone) /
(command - start-up), in CPU time. Quality is scored against the gold the crawl carries (false
pairs, re-crawls found); summary.json's `extraction` counts (learned, fast, fallback, relearned)
are reported when the command writes them ('absent' before it does).

Where the time goes: pyinstrument over the whole command run in this process on each crawl
(`dedup_files`, one prepare thread, extraction helper off: max_seconds 0, so extraction runs
in this process where the profiler sees it), charged to `STAGES` (the innermost stage on a
sample's stack wins); pyinstrument samples wall time, which a busy neighbour inflates, so each
stage's share is applied to the run's CPU time: CPU ms a page, the profiler's overhead in. The
helper round trip, which that profile cannot see, is measured apart in a small fresh process:
the same pages' extraction through the helper against the same in process, CPU ms a page.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson
import site_crawl
from e2e import Clock, children_cpu_s, pin_to_one_core, time_extractor
from homogeneous import run_dedup

from streamdedup.clean.extract import extract_trafilatura

SEEDS = {"site": 60, "cross-site": 2024}  # the cross-site crawl's is the labelled sets' (web-dev.jsonl)
RUNS = {"default": (), "resiliparse": ("--extractor", "resiliparse")}
# stage -> (function names, a part of their file's path); a sample goes to the innermost stage on
# its stack, so a rescue's own parse is the rescue's and the visible text it asks for is visible text
STAGES: dict[str, tuple[tuple[str, ...], str]] = {
    "extraction: parse (HTMLTree.parse)": (("parse",), ""),
    "extraction: container search": (("_containers",), "streamdedup/clean"),
    "extraction: main text": (("steered_text", "main_content_text", "extract_resiliparse", "resiliparse_texts"),
                              "streamdedup/clean"),
    "extraction: trafilatura rescue": (("extract_trafilatura",), "streamdedup/clean"),
    "extraction: other": (("fast_texts", "page_texts"), "streamdedup/clean"),
    "visible text": (("extract_all_text",), "streamdedup/clean"),
    "helper round trip (off here)": (("extract",), "streamdedup/clean/isolated"),
    "nesting pre-check (+ UTF-8 copy)": (("extract_texts", "flatten_nesting", "scan_nesting", "compiled_depth"),
                                         "streamdedup/clean"),
    "normalise": (("normalize_text",), "streamdedup/clean"),
    "input read": (("_read_jsonl",), "streamdedup/record"),
    "JSON decode + record": (("_decode", "page_from_record"), "streamdedup"),
    "tokenise": (("from_text", "scan"), "streamdedup/tokens"),
    "fingerprints": (("fingerprint_text", "steered_signature", "minhash_min", "sign_bits", "shingle_hashes"),
                     "streamdedup"),
    "template model (own text)": (("own_text",), "streamdedup/fingerprinter"),
    "store + verdict": (("decide_batch", "decide_staged", "commit"), "streamdedup"),
    "store open + close": (("__init__", "__exit__"), "streamdedup/detector"),
    "output encoding + writing": (("write", "write_clusters", "sync", "summary"), "streamdedup/outputs/files"),
    "job ledger": (("stage", "begin", "finish"), "streamdedup/outputs/job"),
}


def build(name: str, sources: list[Any], seed: int | None) -> list[dict[str, Any]]:
    """The crawl named, from `seed` (default: its documented one, `SEEDS`)."""
    if name == "site":
        return site_crawl.build_site_crawl(sources, seed=SEEDS[name] if seed is None else seed)
    return site_crawl.build_cross_site(sources, seed=SEEDS[name] if seed is None else seed)


def measure(path: Path, records: list[dict[str, Any]], repeat: int, work: Path) -> dict[str, Any]:
    """The whole command against trafilatura alone on `path` (module docstring); its last
    run's summary and verdicts scored against the gold."""
    pages = [r["content"] for r in records]
    work.mkdir(parents=True, exist_ok=True)
    first = work / "first-page.jsonl"
    first.write_bytes(path.read_bytes().split(b"\n", 1)[0] + b"\n")
    time_extractor(extract_trafilatura, pages)  # warm-up: trafilatura's first pass is slower
    for name, options in RUNS.items():  # untimed: numba's cache, the bytecode, as a user's install has them
        run_dedup(first, work / f"start-{name}", *options, "--prepare-threads", "1")
    alone: list[tuple[float, float]] = []
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in RUNS}
    for number in range(repeat):
        clock = Clock()
        time_extractor(extract_trafilatura, pages)
        alone.append((time.process_time() + children_cpu_s() - clock.cpu, time.perf_counter() - clock.wall))
        for name, options in RUNS.items():
            start = run_dedup(first, work / f"start-{name}", *options, "--prepare-threads", "1")
            whole = run_dedup(path, work / f"whole-{name}", *options, "--prepare-threads", "1")
            runs[name].append({"cpu_s": whole["cpu_s"], "wall_s": whole["wall_s"], "startup_cpu_s": start["cpu_s"],
                               "startup_wall_s": start["wall_s"]})
            print(f"  repeat {number + 1}: {name} {whole['cpu_s']} CPU-s (start-up {start['cpu_s']}), "
                  f"trafilatura alone {alone[-1][0]:.2f}", flush=True)
    rows: dict[str, Any] = {}
    for name in RUNS:
        out = work / f"whole-{name}" / "out"
        summary = json.loads((out / "summary.json").read_text())
        net_cpu = [r["cpu_s"] - r["startup_cpu_s"] for r in runs[name]]
        net_wall = [r["wall_s"] - r["startup_wall_s"] for r in runs[name]]
        ratios = [a[0] / max(1e-9, n) for a, n in zip(alone, net_cpu, strict=True)]
        wall_ratios = [a[1] / max(1e-9, n) for a, n in zip(alone, net_wall, strict=True)]
        extraction = summary.get("extraction")
        rows[name] = {
            "cpu_ms_per_page": round(statistics.median(net_cpu) / len(pages) * 1000, 3),
            "wall_ms_per_page": round(statistics.median(net_wall) / len(pages) * 1000, 3),
            "speedup_vs_trafilatura_alone_cpu": round(statistics.median(ratios), 2),
            "speedup_vs_trafilatura_alone_wall": round(statistics.median(wall_ratios), 2),
            "ratio_runs_cpu": [round(r, 2) for r in ratios], "runs": runs[name],
            "quality": site_crawl.score(records, out / "verdicts.jsonl"),
            "extraction": extraction if extraction is not None else "absent",
            **extraction_shares(extraction, len(pages)),
            "duplicates_by_method": summary.get("duplicates_by_method"), "config": summary.get("config")}
    return {"pages": len(pages), "trafilatura_alone_cpu_ms_per_page":
            round(statistics.median(a[0] for a in alone) / len(pages) * 1000, 3),
            "trafilatura_alone_wall_ms_per_page": round(statistics.median(a[1] for a in alone) / len(pages) * 1000, 3),
            "trafilatura_alone_cpu_s_runs": [round(a[0], 3) for a in alone], "runs": rows}


def extraction_shares(extraction: Any, pages: int) -> dict[str, Any]:
    """The share of pages extracted by a learned container, and the fallbacks, from summary.json's
    `extraction` counts (None where the command does not report them)."""
    if not isinstance(extraction, dict):
        return {"learned_share": None, "fallbacks": None}
    return {"learned_share": round(extraction.get("learned", 0) / max(1, pages), 3),
            "fallbacks": extraction.get("fallback")}


def profile(path: Path, pages: int, work: Path, out_dir: Path, label: str) -> dict[str, Any]:
    """pyinstrument over the whole command in this process (extraction helper off), by stage."""
    from pyinstrument import Profiler

    from streamdedup.api.file_mode import dedup_files
    from streamdedup.config import DetectorConfig

    config = DetectorConfig()
    config = config.with_overrides(cleaning=replace(config.cleaning, max_seconds=0.0), prepare_threads=1)
    dedup_files([str(path)], work / "profile-warm", config, fresh=True)  # imports, kernels, first-use costs
    profiler = Profiler(interval=0.0005)
    profiler.start()
    dedup_files([str(path)], work / "profile", config, fresh=True)
    profiler.stop()
    name = f"e2e-{label}-profile.txt"
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / name).write_text(profiler.output_text(unicode=True, show_all=False))
    session = profiler.last_session
    root = session.root_frame() if session else None
    times = stage_times(root) if root is not None else {}
    total = sum(times.values())
    # pyinstrument samples wall time, which a busy neighbour inflates: each stage's share of it is
    # applied to the session's CPU time (this process's), so the ms a page are CPU ms
    cpu = session.cpu_time if session else 0.0
    return {"helper": "off (max_seconds 0): extraction in this process", "pages": pages,
            "cpu_ms_per_page": round(cpu / pages * 1000, 3), "wall_ms_per_page": round(total / pages * 1000, 3),
            "ms_per_page": {stage: round(t / max(1e-9, total) * cpu / pages * 1000, 3) for stage, t in times.items()},
            "share_pct": {stage: round(100 * t / max(1e-9, total), 1) for stage, t in times.items()}, "file": name}


def stage_times(root: Any) -> dict[str, float]:
    """Seconds of each of `STAGES` (every one, 0.0 where no sample fell) and 'other', each
    sample charged to the innermost stage on its stack."""
    times = dict.fromkeys([*STAGES, "other"], 0.0)

    def stage_of(frame: Any, current: str) -> str:
        function = frame.function or ""
        names = {function, function.rsplit(".", 1)[-1]}
        for stage, (functions, where) in STAGES.items():
            if names & set(functions) and where in (frame.file_path or ""):
                return stage
        return current

    def walk(frame: Any, current: str) -> None:
        stage = stage_of(frame, current)
        times[stage] += max(0.0, frame.time - sum(child.time for child in frame.children))
        for child in frame.children:
            walk(child, stage)

    walk(root, "other")
    return times


def helper_round_trip(pages: list[str], repeat: int = 3) -> dict[str, Any]:
    """CPU ms a page of `fast` extraction (with the visible text, as the detector asks) through the
    helper process and in this process, on the same pages, after a pass of each over them all
    (first-use costs: trafilatura's import for a rescue), alternating, medians of `repeat`: the
    difference is the round trip (the page sent as UTF-8, the texts sent back and decoded, two
    process switches a page). Run it in a small fresh process (`round_trip_apart`): in the bench's
    own (the archives, both crawls, the profile's leftovers) the in-process side came out slower
    than the helper on the cross-site crawl, -0.27 and -0.47 ms a page."""
    from streamdedup.clean.extract import page_texts
    from streamdedup.clean.isolated import helper

    def through_helper() -> float:
        started = time.process_time() + children_cpu_s()
        for html in pages:
            helper().extract("fast", html, 30.0, True, utf8=html.encode("utf-8", "surrogatepass"))
        return time.process_time() + children_cpu_s() - started

    def in_process() -> float:
        started = time.process_time()
        for html in pages:
            page_texts(html, "fast", True)
        return time.process_time() - started

    through_helper(), in_process()  # warm-up
    try:
        pairs = [(through_helper(), in_process()) for _ in range(repeat)]
    finally:
        helper().stop()
    per_page = 1000 / len(pages)
    return {"pages": len(pages), "repeat": repeat,
            "through_helper_cpu_ms_per_page": round(statistics.median(h for h, _ in pairs) * per_page, 3),
            "in_process_cpu_ms_per_page": round(statistics.median(p for _, p in pairs) * per_page, 3),
            "round_trip_cpu_ms_per_page": round(statistics.median(h - p for h, p in pairs) * per_page, 3),
            "round_trip_runs": [round((h - p) * per_page, 3) for h, p in pairs]}


def round_trip_apart(path: Path, pages: int) -> dict[str, Any]:
    """`helper_round_trip` of the first `pages` pages of the crawl at `path`, in a fresh process."""
    done = subprocess.run([sys.executable, str(Path(__file__)), "--round-trip", str(path), str(pages)],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"the round-trip measure failed: {done.stderr[-2000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def report_lines(name: str, result: dict[str, Any]) -> list[str]:
    """The short text table of one crawl."""
    crawl = result["crawl"]
    lines = [f"{name}: {crawl['pages']} pages, {crawl['sites']} sites ({crawl['pages_per_site_min']} to "
             f"{crawl['pages_per_site_max']} pages a site), {crawl['recrawls']} re-crawls; trafilatura alone "
             f"{result['measure']['trafilatura_alone_cpu_ms_per_page']} CPU ms a page",
             "| run | CPU ms a page | x trafilatura alone (CPU) | wall ms a page | false pairs | re-crawls found "
             "| learned share | fallbacks |", "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for run, row in result["measure"]["runs"].items():
        quality = row["quality"]
        learned = "absent" if row["learned_share"] is None else row["learned_share"]
        lines.append(f"| {run} | {row['cpu_ms_per_page']} | **{row['speedup_vs_trafilatura_alone_cpu']}** | "
                     f"{row['wall_ms_per_page']} | {quality['false_pairs']} | {quality['recrawls_found']} of "
                     f"{quality['recrawls']} | {learned} | {row['fallbacks'] if row['fallbacks'] is not None else 'absent'} |")
    if "profile" in result:
        prof = result["profile"]
        lines.append(f"where the time goes (default run, in-process, helper off; {prof['cpu_ms_per_page']} CPU ms a "
                     f"page under the profiler, {prof['wall_ms_per_page']} wall; each stage's share of the samples "
                     "applied to the CPU time):")
        lines += [f"  {ms:7.3f} ms  {prof['share_pct'][stage]:5.1f} %  {stage}" for stage, ms in
                  sorted(prof["ms_per_page"].items(), key=lambda kv: -kv[1]) if ms > 0]
    if "helper_round_trip" in result:
        trip = result["helper_round_trip"]
        lines.append(f"  helper round trip, measured apart: {trip['round_trip_cpu_ms_per_page']} CPU ms a page "
                     f"({trip['through_helper_cpu_ms_per_page']} through the helper, "
                     f"{trip['in_process_cpu_ms_per_page']} in process, {trip['pages']} pages)")
    return lines


def main(crawls: list[str], repeat: int, seed: int | None, out_dir: Path, with_profile: bool,
         keep: Path | None = None) -> int:
    """Each crawl built, measured (and profiled): e2e-<crawl>-crawl.json and .txt in `out_dir`."""
    cpu = pin_to_one_core()
    sources = site_crawl.load_sources()
    with tempfile.TemporaryDirectory(prefix="site-bench-") as tmp:
        work = Path(tmp)
        for name in crawls:
            records = build(name, sources, seed)
            path = (keep or work) / f"{name}-crawl.jsonl"
            path.parent.mkdir(parents=True, exist_ok=True)
            site_crawl.write_crawl(records, path)
            result: dict[str, Any] = {"crawl": {**site_crawl.describe(records), "seed": SEEDS[name] if seed is None else seed,
                                                "file": str(path) if keep else None},
                                      "pinned_cpu": cpu, "repeat": repeat}
            print(f"{name}: {json.dumps(result['crawl'])}", flush=True)
            result["measure"] = measure(path, records, repeat, work / name)
            if with_profile:
                result["profile"] = profile(path, len(records), work / name, out_dir, f"{name}-crawl")
                result["helper_round_trip"] = round_trip_apart(path, 300)
            out_dir.mkdir(parents=True, exist_ok=True)
            target = out_dir / f"e2e-{name}-crawl.json"
            target.write_bytes(orjson.dumps(result, option=orjson.OPT_INDENT_2) + b"\n")
            text = "\n".join(report_lines(name, result))
            target.with_suffix(".txt").write_text(text + "\n")
            print(text)
            print(f"written: {target} and {target.with_suffix('.txt').name}", flush=True)
    return 0


if __name__ == "__main__":  # the round trip apart: python bench/site_bench.py --round-trip CRAWL.jsonl PAGES
    if sys.argv[1:2] == ["--round-trip"]:
        print(json.dumps(helper_round_trip([r["content"] for r in site_crawl.read_crawl(Path(sys.argv[2]))
                                            [: int(sys.argv[3])]])))
