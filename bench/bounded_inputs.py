"""Per-page CPU, peak RSS and store bytes of `streamdedup dedup` on inputs an attacker or an odd crawl picks.

    python bench/bounded_inputs.py --scenario spam --sizes 5000 20000 80000
    python bench/bounded_inputs.py --scenario all --sizes 2000 8000     # every scenario, smaller

Each scenario writes N synthetic pages (plain text with a url, or HTML where the template model
is the point) to a JSON Lines file and runs `python -m streamdedup dedup FILE --out DIR` in a
fresh process, measuring its CPU (user + sys), peak RSS (`resource.getrusage` of the child) and the
store's and outputs' bytes. The marginal CPU a page between two sizes, (cpu2 - cpu1) / (n2 - n1),
is start-up free: flat means it does not rise with the size.

Scenarios (the standard: per-page work and memory stay flat as the store grows, whatever the input):
- `spam`: one 40-word paragraph on every page, each page of another site, its other text its own;
- `spam-short`: the same paragraph with one 14-word sentence of the page's own (the pages near
  one another: unique, each related to earlier ones);
- `story`: one story copied N times on N sites, each copy with one word changed (duplicates: one
  cluster of N members);
- `related`: one story on N sites, each copy adding a 30-word paragraph of its own (unique pages
  related to the earlier copies);
- `hosts`: N hosts of one page each (HTML in a news template);
- `recrawl`: one URL fetched N times, its text new each time;
- `recrawl-same`: one URL fetched N times, the same text each time;
- `host`: one host with N pages (HTML in one template).
Prints one JSON line a run and, at the end, the marginal CPU a page between sizes.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from streamdedup.testing import make_words, wrap_in_template

SCENARIOS = ("spam", "spam-short", "story", "related", "hosts", "recrawl", "recrawl-same", "host")
_VOCABULARY = make_words(random.Random(5), 20000)
_SPAM = ("Buy the miracle supplement now and lose weight fast with our secret formula that doctors do not "
         "want you to know about because it works better than anything else sold in stores today")


def _text(rng: random.Random, paragraphs: int = 3, words: int = 45) -> list[str]:
    return [" ".join(rng.choices(_VOCABULARY, k=words)).capitalize() + "." for _ in range(paragraphs)]


def _stamp(i: int) -> str:
    return f"2026-01-{1 + i // 86400 % 28:02d}T{i // 3600 % 24:02d}:{i // 60 % 60:02d}:{i % 60:02d}Z"


def pages(scenario: str, n: int) -> Iterator[dict[str, Any]]:
    """The scenario's N page records, deterministic."""
    story = _text(random.Random(7), 4, 50)
    for i in range(n):
        rng = random.Random(1000 + i)
        fetched = _stamp(i)
        if scenario == "spam":
            text = "\n\n".join([*_text(rng, 2), _SPAM])
            yield {"url": f"https://site{i}.example/p", "content": text, "fetched_at": fetched}
        elif scenario == "spam-short":
            own = " ".join(rng.choices(_VOCABULARY, k=14)).capitalize() + "."
            yield {"url": f"https://site{i}.example/p", "content": f"{own}\n\n{_SPAM}", "fetched_at": fetched}
        elif scenario == "story":
            copy = [p for p in story]
            words = copy[1].split()
            words[i % len(words)] = rng.choice(_VOCABULARY)
            copy[1] = " ".join(words)
            yield {"url": f"https://site{i}.example/story", "content": "\n\n".join(copy), "fetched_at": fetched}
        elif scenario == "related":
            own = " ".join(rng.choices(_VOCABULARY, k=30)).capitalize() + "."
            yield {"url": f"https://site{i}.example/story", "content": "\n\n".join([*story, own]),
                   "fetched_at": fetched}
        elif scenario == "hosts":
            yield {"url": f"https://h{i}.example/a/{i}", "content": wrap_in_template(_text(rng, 4), f"h{i}"),
                   "fetched_at": fetched}
        elif scenario == "recrawl":
            yield {"url": "https://one.example/live", "content": "\n\n".join(_text(rng, 3)), "fetched_at": fetched}
        elif scenario == "recrawl-same":
            yield {"url": "https://one.example/live", "content": "\n\n".join(story), "fetched_at": fetched}
        elif scenario == "host":
            yield {"url": f"https://big.example/a/{i}", "content": wrap_in_template(_text(rng, 4), "big"),
                   "fetched_at": fetched}
        else:
            raise SystemExit(f"unknown scenario {scenario!r}: one of {', '.join(SCENARIOS)}")


def _bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def _write_pages(scenario: str, n: int, work: Path) -> Path:
    """The scenario's N pages as a JSON Lines file in `work`."""
    source = work / f"{scenario}-{n}.jsonl"
    with source.open("wb") as out:
        for page in pages(scenario, n):
            out.write(json.dumps(page).encode() + b"\n")
    return source


_LIBRARY = """
import json, resource, sys, orjson
from streamdedup import Deduplicator
with open(sys.argv[1], "rb") as lines, Deduplicator(state=sys.argv[2]) as dedup:
    chunk = []
    for line in lines:
        chunk.append(orjson.loads(line))
        if len(chunk) == 2048:
            dedup.add_many(chunk)
            chunk = []
    dedup.add_many(chunk)
    stories = len(dedup.stories())
usage = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"cpu_s": round(usage.ru_utime + usage.ru_stime, 2), "peak_rss_mib": round(usage.ru_maxrss / 1024, 1),
                  "stories": stories}))
"""


def run_library(scenario: str, n: int, work: Path) -> dict[str, Any]:
    """One fresh process filing the scenario's N pages with `Deduplicator.add_many`: its CPU, peak RSS, store bytes."""
    source = _write_pages(scenario, n, work)
    target = work / f"lib-{scenario}-{n}"
    shutil.rmtree(target, ignore_errors=True)
    child = subprocess.Popen([sys.executable, "-c", _LIBRARY, str(source), str(target)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = child.communicate()
    if child.returncode != 0:
        raise SystemExit(f"library run failed: {err[-2000:].decode(errors='replace')}")
    result = json.loads(out.splitlines()[-1])
    result = {"scenario": scenario, "mode": "library", "pages": n, **result,
              "ms_a_page": round(result["cpu_s"] / n * 1000, 3), "store_bytes": _bytes(target)}
    source.unlink()
    shutil.rmtree(target, ignore_errors=True)
    return result


def run(scenario: str, n: int, work: Path, extra: list[str]) -> dict[str, Any]:
    """One fresh `dedup` process on the scenario's N pages: its CPU, peak RSS and bytes."""
    source = _write_pages(scenario, n, work)
    target = work / f"out-{scenario}-{n}"
    shutil.rmtree(target, ignore_errors=True)
    wall = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-m", "streamdedup", "dedup", str(source), "--out", str(target), *extra],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert child.stderr is not None
    stderr = child.stderr.read()  # the child's own rusage (wait4): its peak RSS, not the largest child's so far
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = code = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait again
    wall = time.perf_counter() - wall
    if code != 0:
        raise SystemExit(f"dedup failed ({code}): {stderr[-2000:].decode(errors='replace')}")
    cpu = usage.ru_utime + usage.ru_stime
    summary = json.loads((target / "summary.json").read_text())
    counts = {k: summary[k] for k in ("unique", "duplicates", "rejected", "clusters")}
    counted = summary["work_per_page"]
    counts |= {"verified_mean": counted["candidates_verified_mean"], "found_max": counted["candidates_found_max"],
               "verdicts_us": summary["store_us_per_page"]["verdicts"],
               "template_us": summary["store_us_per_page"]["template"]}
    longest = max((len(line) for line in (target / "clusters.jsonl").open("rb")), default=0)
    verdict_longest = max((len(line) for line in (target / "verdicts.jsonl").open("rb")), default=0)
    result = {"scenario": scenario, "pages": n, "cpu_s": round(cpu, 2), "wall_s": round(wall, 2),
              "ms_a_page": round(cpu / n * 1000, 3), "peak_rss_mib": round(usage.ru_maxrss / 1024, 1),
              "store_bytes": _bytes(target / "state"), "store_bytes_a_page": round(_bytes(target / "state") / n),
              "clusters_bytes": (target / "clusters.jsonl").stat().st_size,
              "longest_cluster_line": longest, "longest_verdict_line": verdict_longest, **counts}
    source.unlink()
    shutil.rmtree(target, ignore_errors=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenario", default="all", choices=(*SCENARIOS, "all"))
    parser.add_argument("--sizes", type=int, nargs="+", default=[5000, 20000, 80000])
    parser.add_argument("--work", type=Path, default=None, help="folder for the inputs and stores (default: a temp one)")
    parser.add_argument("--library", action="store_true", help="file with Deduplicator.add_many instead of `dedup`")
    parser.add_argument("dedup_args", nargs="*", help="more `dedup` arguments, after --")
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="bounded-"))
    work.mkdir(parents=True, exist_ok=True)
    for scenario in SCENARIOS if args.scenario == "all" else (args.scenario,):
        runs = []
        for n in args.sizes:
            runs.append(run_library(scenario, n, work) if args.library else run(scenario, n, work, args.dedup_args))
            print(json.dumps(runs[-1]), flush=True)
        slopes = [round((b["cpu_s"] - a["cpu_s"]) / (b["pages"] - a["pages"]) * 1000, 3)
                  for a, b in zip(runs, runs[1:], strict=False)]
        print(json.dumps({"scenario": scenario, "marginal_ms_a_page": slopes}), flush=True)
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)
    os.sync()


if __name__ == "__main__":
    main()
