"""`bench/run --smoke`: the whole benchmark suite runs in seconds and writes its JSON (no speeds
are asserted: benchmarks are not timed tests)."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]


def load_bench_run() -> Any:
    """bench/run (a script without .py) as a module."""
    loader = importlib.machinery.SourceFileLoader("bench_run", str(ROOT / "bench" / "run"))
    spec = importlib.util.spec_from_loader("bench_run", loader)
    assert spec is not None
    bench_run = importlib.util.module_from_spec(spec)
    sys.modules["bench_run"] = bench_run  # its dataclasses look their module up
    try:
        loader.exec_module(bench_run)
    finally:
        del sys.modules["bench_run"]
    return bench_run


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory) -> tuple[subprocess.CompletedProcess, dict]:
    """`bench/run --smoke` once (its parts are the scripts' own smoke runs, e.g. `bench/expire.py
    --smoke`): the command's outcome and its latest.json, for every test that checks a part of it."""
    out = tmp_path_factory.mktemp("smoke")
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "run"), "--smoke", "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=480)
    assert done.returncode == 0, done.stderr[-3000:]
    return done, json.loads((out / "latest.json").read_text())


def test_smoke_run_writes_one_json_with_every_part(smoke_run):
    done, report = smoke_run
    assert report["smoke"] is True and report["failed"] == []
    assert set(report["parts"]) == {"fingerprint", "store", "expire", "homogeneous", "e2e", "broker"}
    homogeneous = report["parts"]["homogeneous"]["report"]["results"]  # by kind of pages, then size
    for row in (row for by_size in homogeneous.values() for row in by_size.values()):  # measured; the net figures are None when start-up's noise outweighs a smoke run
        assert row["ms_per_page_gross"] > 0 and row["rensa_ms_per_page"] > 0 and row["runs"] and row["rensa"]
        assert (row["ms_per_page_net"] is None) == (row["rensa_ratio"] is None)
        assert row["ms_per_page_net"] is None or (row["ms_per_page_net"] > 0 and row["rensa_ratio"] > 0)
        paired = statistics.median(r["cpu_s"] / c["cpu_s"] for r, c in zip(row["rensa"], row["runs"], strict=True))
        assert row["rensa_ratio_whole_paired_cpu"] == round(paired, 3)  # each run against the rensa pass beside it
    assert report["machine"]["cpus"] >= 1 and report["machine"]["libraries"]["trafilatura"]
    e2e = report["parts"]["e2e"]["report"]["results"]
    assert set(e2e) == {"trafilatura", "fast", "resiliparse"}
    for row in e2e.values():
        assert row["extractor_alone_pages_per_s"] > 0 and row["detector_pages_per_s"] > 0 and row["ratio_median"] > 0
        # a sampling profile of four pages can miss a fast stage (resiliparse takes ~1 ms a page):
        # every stage is reported, and the shares add up
        stages = row["profile"]["stages_pct"]
        assert "extraction (library)" in stages and "fingerprints (signature)" in stages
        assert 99 <= sum(stages.values()) <= 101
    whole = report["parts"]["e2e"]["report"]["whole_command"]  # the command as a user runs it, start-up in
    assert whole["pages"] > 0 and whole["trafilatura_alone_cpu_s"] > 0
    assert set(whole["extractors"]) == set(e2e)
    assert all(row["whole_command_cpu_s"] > 0 for row in whole["extractors"].values())
    broker = report["parts"]["broker"]["report"]
    assert [r["workers"] for r in broker["results"]] == [1, 2]
    assert all(r["latency_at_half_peak"]["pages"] > 0 for r in broker["results"])
    measures = [row["measure"] for row in report["table"]]
    assert any("verdict out" in m for m in measures) and any("2 workers" in m for m in measures)
    assert {r["settings"] for r in broker["results"]} == {"defaults"}
    assert "| part | measure | value |" in done.stdout


def test_only_runs_the_named_part(tmp_path):
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "run"), "--smoke", "--only", "store",
                           "--out", str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads((tmp_path / "latest.json").read_text())
    store = report["parts"]["store"]["report"]
    assert list(report["parts"]) == ["store"] and store["bytes_per_page"] > 0
    assert store["reopen_from_snapshot_s"] > 0 and store["rebuild_same_table"] is True
    # a stopped store's directory: its records and the index's snapshot, which leaves the table's free slots out
    assert 0 < store["closed_snapshot_bytes_per_page"] < store["index_memory_bytes_per_page"] + store[
        "words_memory_bytes_per_page"]
    assert store["closed_dir_bytes_per_page"] >= store["bytes_per_page"] + store["closed_snapshot_bytes_per_page"]


def test_the_store_bench_can_leave_out_the_reopening(tmp_path):
    """`bench/store.py --no-reopen`: the windows measured, the reopening times (which need the index's
    memory twice) left out and said to be (None), not made up."""
    out = tmp_path / "store.json"
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "store.py"), "--smoke", "--no-reopen", "--out", str(out)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(out.read_text())
    assert len(report["windows"]) == 3 and report["pages_per_thread_cpu_s_median"] > 0
    assert report["reopen_from_snapshot_s"] is None and report["rebuild_same_table"] is None
    huge = [report["anon_huge_pages_mib"], *(w["anon_huge_pages_mib"] for w in report["windows"])]
    assert all(h is None or 0 <= h <= report["rss_mib"] for h in huge)  # told, where the kernel tells it
    assert report["transparent_hugepage"] in (None, "always", "madvise", "never")
    assert all(w["table_probe_ns_per_name_before"] > 0 for w in report["windows"])  # the host's random reads, told
    for window in report["windows"]:  # where each window's time went, every step measured, within its time
        steps = window["us_per_page_by_step"]
        assert all(us > 0 for us in steps.values()) and sum(steps.values()) <= 1e6 / window["pages_per_s"]
    assert "reopen_rebuilding_s" not in done.stderr


def test_the_expiry_bench_measures_both_ways_on_stores_of_the_same_sizes(smoke_run):
    """`bench/expire.py --smoke` (the smoke run's expire part, whose JSON is kept whole): the bulk
    expiry and the record-by-record one, each removing its quarters of the same store (all removed,
    the sizes each met the same), and their ratio; and a store drained as batches' commits expire a
    backlog, and one kept at its retention in steady state, both ways."""
    bench_run = load_bench_run()
    assert (bench_run.PARTS["expire"].script, bench_run.PARTS["expire"].smoke) == ("expire.py", ("--smoke",))
    report = smoke_run[1]["parts"]["expire"]["report"]
    (run,) = report["runs"]
    assert [m["removed"] for m in run["bulk"] + run["each"]] == [2000] * 4
    assert sorted(m["stored_before"] for m in run["bulk"] + run["each"]) == [2000, 4000, 6000, 8000]
    assert report["bulk_over_each_cpu"] == round(report["bulk_pages_per_cpu_s_median"]
                                                 / report["each_pages_per_cpu_s_median"], 2)
    drain = report["drain"]  # the whole store expired as commits expire a backlog: all of it, in calls
    assert drain["removed"] == 8000 and drain["calls"] >= 1 and drain["call_s_max"] >= drain["call_s_median"]
    # steady state, both ways: half the store, a batch's worth a call
    assert [(w["way"], w["calls"] * w["pages_per_call"]) for w in report["steady"]] == [("from_first", 3840), ("resumed", 3840)]


@pytest.mark.skipif(not (ROOT / ".git").exists(), reason="compares git revisions: needs the git checkout")
def test_store_pair_runs_two_revisions_at_once_and_reports_their_ratio(tmp_path):
    """`bench/store_pair.py`: both revisions' own bench/store.py, run at the same time from their
    exported trees, and NEW's medians over BASE's; a revision that is not one, and a run that
    fails, are told in one line."""
    out = tmp_path / "pair.json"
    # a small store and no reopening (each exported tree compiles the numba kernels afresh: that
    # alone takes most of the run); --smoke is passed on below
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "store_pair.py"), "HEAD", "HEAD", "--pages", "2000",
                           "--out", str(out), "--", "--windows", "3", "--window", "512", "--no-reopen"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(out.read_text())
    assert report["base"]["commit"] == report["new"]["commit"] and len(report["base"]["commit"]) == 40
    assert report["arguments"] == ["--pages", "2000", "--bulk-fill", "--windows", "3", "--window", "512", "--no-reopen"]
    assert report["base"]["report"]["reopen_from_snapshot_s"] is None  # the arguments after -- reached store.py
    for role in ("base", "new"):
        assert report[role]["report"]["pages_per_thread_cpu_s_median"] > 0
    ratios = report["new_over_base"]
    assert len(ratios["windows_thread_cpu_ratio"]) == len(report["base"]["report"]["windows"]) == 3
    assert all(ratio > 0 for ratio in [ratios["pages_per_thread_cpu_s_ratio"], *ratios["windows_thread_cpu_ratio"]])
    wrong = subprocess.run([sys.executable, str(ROOT / "bench" / "store_pair.py"), "no-such-revision", "HEAD",
                            "--smoke", "--out", str(tmp_path / "wrong.json")], cwd=ROOT, capture_output=True, text=True,
                           timeout=60)
    assert wrong.returncode == 1 and not (tmp_path / "wrong.json").exists()
    assert wrong.stderr.strip().splitlines() == [
        f"'no-such-revision' is not a commit of {ROOT}: give a commit, branch or tag (as `git log` shows them)"]
    failing = subprocess.run([sys.executable, str(ROOT / "bench" / "store_pair.py"), "HEAD", "HEAD", "--smoke",
                              "--out", str(tmp_path / "failing.json"), "--", "--no-such-option"], cwd=ROOT,
                             capture_output=True, text=True, timeout=120)
    assert failing.returncode == 1 and not (tmp_path / "failing.json").exists()
    # both runs fail alike; whichever ends first is told and the other stopped, so either role may be named
    told = failing.stderr.strip().splitlines()
    assert len(told) == 1 and any(told[0] == (
        f"bench/store.py of {role} (HEAD) exited 2: store.py: error: unrecognized arguments: --no-such-option; "
        'windows done: {"base": [], "new": []}') for role in ("base", "new")), told


def test_store_pair_tells_the_windows_a_failed_run_had_finished(tmp_path):
    """A run killed after its windows (in the reopening steps) still measured them: they are told."""
    spec = importlib.util.spec_from_file_location("store_pair", ROOT / "bench" / "store_pair.py")
    assert spec and spec.loader
    store_pair = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(store_pair)
    base, new = tmp_path / "base.log", tmp_path / "new.log"
    base.write_text('{"filled": 1000000, "seconds": 140}\n{"stored_at_start": 1, "pages_per_thread_cpu_s": 15516}\n'
                    '{"stored_at_start": 2, "pages_per_thread_cpu_s": 16118}\n{"reopen_rebuilding_s": 32.1}\n')
    new.write_text('{"stored_at_start": 1, "pages_per_thread_cpu_s": 15534}\n'
                   '{"windows": [{"pages_per_thread_cpu_s": 1}], "pages_per_thread_cpu_s_median": 1}\n')
    told = store_pair.finished_windows({"base": {"log": base}, "new": {"log": new}})
    assert json.loads(told) == {"base": [15516, 16118], "new": [15534]}


def test_index_kernels_reports_the_probe_and_insert_per_name_of_each_size(tmp_path):
    """`bench/index_kernels.py`: each table size filled, probed and filed, in JSON (no speed asserted)."""
    from streamdedup.store.memory_index import SEGMENTS

    out = tmp_path / "kernels.json"
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "index_kernels.py"), "--slots", "4096", "8192",
                           "--rounds", "2", "--out", str(out)], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    sizes = json.loads(out.read_text())["sizes"]
    assert [s["slots_per_segment"] for s in sizes] == [4096, 8192]
    for size in sizes:  # filled to the load asked, and each batch's names filed
        assert size["postings"] == int(0.62 * size["slots_per_segment"] * SEGMENTS) + 4 * 12_288
        assert size["probe_ns_per_name"] > 0 and size["insert_ns_per_name"] > 0 and size["table_bytes"] > 0
    wrong = subprocess.run([sys.executable, str(ROOT / "bench" / "index_kernels.py"), "--load", "0.9"],
                           cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert wrong.returncode == 2 and "--load must be above 0 and below 0.8" in wrong.stderr


def test_index_growth_stalls_tells_which_commits_of_a_growing_store_grew_its_segments(tmp_path):
    """`bench/index_growth.py --stalls`: a store of 20,000 pages filled to 60,000 in batches, its
    segments growing on the way (each at least once: 3x is past a growth of 1.78x), in JSON (no
    speed asserted)."""
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "index_growth.py"), "--stalls", "--from-pages", "20000",
                           "--pages", "60000"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout)
    assert result["batches"] == 157 and result["from_pages"] == 20000
    first, last = result["growing_batches_first_last"]
    assert 0 < first <= last < 157 and 0 < result["commits_growing"] <= last - first + 1
    assert result["growth_s"] >= result["most_growth_s_in_64_batches"] > 0


def test_the_clough_stevenson_check_runs_every_method_on_a_small_corpus(tmp_path):
    """`bench/clough_stevenson.py` on a generated corpus in its layout: one source, a verbatim
    copy ('cut'), an unrelated answer ('non'), and a light and a heavy one. It failed with KeyError 'tf' until 2026-12-02:
    its single-method detectors found no signature of their method on pages prepared with the
    default four. Every method gets a row, and no method flags the unrelated answer."""
    import random

    rng = random.Random(3)
    words = [f"w{rng.randrange(5000)}" for _ in range(2000)]
    source = ". ".join(" ".join(words[i:i + 12]) for i in range(0, 600, 12)) + "."
    other = ". ".join(" ".join(words[i:i + 12]) for i in range(1000, 1600, 12)) + "."
    (tmp_path / "orig_taska.txt").write_text(source)
    (tmp_path / "g0pA_taska.txt").write_text(source)
    (tmp_path / "g0pB_taska.txt").write_text(other)
    (tmp_path / "g0pC_taska.txt").write_text(source.replace("w1", "v1"))  # every category the bench reports
    (tmp_path / "g0pD_taska.txt").write_text(source[: len(source) // 2])
    (tmp_path / "file_information.csv").write_text(
        "File,Task,Category\norig_taska.txt,a,orig\ng0pA_taska.txt,a,cut\ng0pB_taska.txt,a,non\n"
        "g0pC_taska.txt,a,light\ng0pD_taska.txt,a,heavy\n")
    out = tmp_path / "out.json"
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "clough_stevenson.py"), "--corpus", str(tmp_path),
                           "--out", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    from streamdedup.fingerprints.registry import METHODS

    table = json.loads(out.read_text())["flagged_fraction"]
    assert set(table) == {"default", *(m for m, cls in METHODS.items() if cls.can_match)}
    assert all(row["non"] == 0.0 for row in table.values())
    assert table["default"]["cut"] == 1.0 and table["minhash"]["cut"] == 1.0


def test_judge_replays_the_captured_calls_of_a_homogeneous_run(tmp_path):
    """`bench/judge.py --smoke`: the judge calls of pages 100-300 captured and replayed, in JSON (no
    speed asserted); every replay finds the same matches."""
    out = tmp_path / "judge.json"
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "judge.py"), "--smoke", "--out", str(out)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(out.read_text())
    assert report["calls"] == 200 and report["replays"] == 3  # every one of these pages has stored candidates
    assert report["candidates_per_call"] > 10  # homogeneous pages: every page finds many
    assert 0 < report["us_per_call_least"] <= report["us_per_call_median"]


def test_homogeneous_pages_of_every_kind_are_seeded_distinct_and_full_length(tmp_path):
    """`bench/homogeneous.py --kinds`: each kind's pages are the same bytes on every run (seeded),
    no two alike, and about `words` words long (the recombined kind needs the Clough-Stevenson
    corpus of ../shared/data: skipped without it)."""
    spec = importlib.util.spec_from_file_location("homogeneous_bench", ROOT / "bench" / "homogeneous.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    assert set(bench.KINDS) == {"zipf", "prose", "recombined", "template"}
    for kind in bench.KINDS:
        if kind == "recombined" and not bench._CLOUGH.is_dir():
            continue
        first, again = (bench.generate(tmp_path / f"{kind}-{n}.jsonl", 40, kind=kind).read_bytes() for n in (1, 2))
        assert first == again
        texts = [json.loads(line)["content"] for line in first.splitlines()]
        assert len(texts) == 40 and len(set(texts)) == 40
        assert all(250 <= len(text.split()) <= 700 for text in texts), kind


def test_a_bench_without_its_peer_library_stops_in_one_line_naming_the_fix():
    """Run without the [bench] extra (the peer library not importable), a benchmark stops before
    its runs in one line that names `make bench` (and, for the profile, `--no-profile`)."""
    for script, missing, args, fix in (("homogeneous.py", "rensa", ["--smoke"], "make bench"),
                                       ("e2e.py", "pyinstrument", ["--site-crawl"], "--no-profile")):
        code = (f"import runpy, sys; sys.modules[{missing!r}] = None; sys.path.insert(0, {str(ROOT / 'bench')!r}); "
                f"sys.argv = [{script!r}, *{args!r}]; runpy.run_path({str(ROOT / 'bench' / script)!r}, "
                "run_name='__main__')")
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
        lines = done.stderr.strip().splitlines()
        assert done.returncode == 1 and len(lines) == 1, done.stderr[-2000:]
        assert missing in lines[0] and "make bench" in lines[0] and fix in lines[0], lines


def test_a_kafka_bench_without_the_kafka_client_stops_in_one_line_naming_the_fix():
    """README's results run `python bench/crash_harness.py` and `bench/cluster_agreement.py`: in a
    venv without the [kafka] extra (a notebook user's) they ended in ModuleNotFoundError's traceback."""
    for script in ("crash_harness.py", "cluster_agreement.py"):
        code = (f"import runpy, sys; sys.modules['confluent_kafka'] = None; sys.path.insert(0, {str(ROOT / 'bench')!r}); "
                f"sys.argv = [{script!r}, '--help']; runpy.run_path({str(ROOT / 'bench' / script)!r}, run_name='__main__')")
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
        lines = done.stderr.strip().splitlines()
        assert done.returncode == 1 and len(lines) == 1, done.stderr[-2000:]
        assert lines[0].startswith(f"bench/{script}: confluent_kafka not installed: run `make run`"), lines


@pytest.mark.parametrize("argv", [["cluster_agreement.py", "--workers", "1"],
                                  ["e2e.py", "--site-crawl", "--no-profile"],
                                  ["light_edits.py", "--seeds", "1"]])
def test_a_bench_of_real_pages_without_the_archives_names_where_they_go(argv: list[str], tmp_path: Path) -> None:
    """README's `python bench/cluster_agreement.py` and `bench/e2e.py --site-crawl` read the real pages of
    ../shared/data, which a clone elsewhere lacks: they ended in FileNotFoundError's traceback."""
    bench = tmp_path / "a" / "b" / "bench"  # its ../shared/data: tmp_path/a/shared/data, not there
    bench.mkdir(parents=True)
    for script in (ROOT / "bench").glob("*.py"):
        (bench / script.name).write_bytes(script.read_bytes())
    done = subprocess.run([sys.executable, str(bench / argv[0]), *argv[1:], "--out", str(tmp_path / "out.json")],
                          capture_output=True, text=True, timeout=120, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1 and len(lines) == 1, done.stderr[-2000:]
    assert lines[0] == (f"bench/{argv[0]}: readability-test-pages.tar.gz and trafilatura-test-pages.tar.gz not found "
                        f"in {tmp_path / 'a' / 'shared' / 'data'}: the real pages it is built from are not in this "
                        "repository; build them as docs/evaluation.md says (\"The archives are not in this "
                        "repository\") and put them there")


def test_every_bench_script_names_only_what_streamdedup_still_has():
    """A bench script imports only names streamdedup still defines (a renamed rule broke one unseen)."""
    import ast
    import importlib

    missing = []
    for script in sorted((Path(__file__).resolve().parents[1] / "bench").glob("*.py")):
        for node in ast.walk(ast.parse(script.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("streamdedup"):
                module = importlib.import_module(node.module)
                missing += [f"{script.name}: {node.module}.{a.name}" for a in node.names
                            if not hasattr(module, a.name) and not (hasattr(module, "__path__")
                                                                    and importlib.util.find_spec(f"{node.module}.{a.name}"))]
    assert not missing


def test_a_hanging_part_is_stopped_at_its_limit_with_what_it_started_and_says_where_it_was(tmp_path):
    """A part that hangs (a broker group never formed: CI's smoke run sat in the broker part until the
    test's own 300 s limit killed bench/run, with no word of where, and left its workers and broker
    running) ends at the part's limit: SIGTERM to its process group, what it printed kept in the error."""
    bench_run = load_bench_run()
    child = tmp_path / "child.pid"
    script = tmp_path / "hang.py"
    script.write_text("import subprocess, sys, time\n"
                      f"pid = subprocess.Popen(['sleep', '600']).pid\nopen({str(child)!r}, 'w').write(str(pid))\n"
                      "print('waiting for the group', file=sys.stderr, flush=True)\ntime.sleep(600)\n")
    part = bench_run.Part(str(script), (), (), lambda report: [], timeout_s=600, smoke_timeout_s=2)
    started = time.monotonic()
    got = bench_run.run_part("hang", part, True, tmp_path)
    assert time.monotonic() - started < 30
    assert got["error"] == "timed out after 2 s" and "waiting for the group" in got["stderr_tail"]
    pid = int(child.read_text())
    deadline = time.monotonic() + 5
    while Path(f"/proc/{pid}").exists() and "Z" not in Path(f"/proc/{pid}/stat").read_text().split(")")[1][:3]:
        assert time.monotonic() < deadline, "the part's child outlived it"
        time.sleep(0.1)
