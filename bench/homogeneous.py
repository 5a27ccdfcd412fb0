"""Per-page time of the whole `streamdedup dedup` on homogeneous pages, beside a minimal rensa pass.

    python bench/homogeneous.py                          # 2k, 10k, 20k, 100k pages; median of 3 (1 at 100k)
    python bench/homogeneous.py --sizes 2000 20000 --repeat 3
    python bench/homogeneous.py --smoke                  # seconds: 100 and 200 pages, once
    python bench/homogeneous.py --sizes 6000 --kinds zipf prose recombined template

Kinds of pages (`--kinds`, default zipf; `KINDS`): `zipf` as below; `prose`, sentences of stock
phrases and Zipf words of a 2,000-word vocabulary; `recombined`, the sentences of the
Clough-Stevenson corpus (../shared/data) recombined by topic; `template`, boilerplate-heavy sites
(each its own menu, sidebar and footer lines) around Zipf articles. Each reports, beside the
times, the candidates verified a page, the pages at the candidate limit and the verdict step's µs
a page (median of the runs). Results: {kind: {size: row}}.

Zipf pages: every page draws `--words` (600) words from one Zipf distribution (exponent
1.1) over one vocabulary (the 5,000 most frequent English words of wordfreq), seeded, so every
page looks like every other to bag-of-words signatures (boilerplate-heavy sites, listings, forum
pages). Pages come from 100 sites, plain text, one fetch time each a second apart.

Each size runs the real command line, `streamdedup dedup FILE --out DIR --fresh -q`, as a
subprocess; start-up (imports, kernels, an empty store) is measured by the same command on
`--startup-pages` (10) pages and taken off, so `ms_per_page_net` = (wall - start-up) / pages. The
floor the issue sets: per-page time flat (within 1.5x) from the smallest size to the largest.
The command first runs once on the smallest size untimed, as a user's install has run it before:
on a fresh checkout that run compiles numba's kernels into its cache (~20 s) and writes the
bytecode (`user_environment`); before 2026-11-29 a run's median absorbed it.

Beside it, in the same run and on the same file: a minimal in-memory MinHash-LSH pass with rensa
(read the JSON lines, lowercase word 5-shingles, RMinHash of 128 permutations, query an
RMinHashLSH, verify the candidates by Jaccard >= 0.5, insert the page). `rensa_ratio` is rensa's
time over the whole command's (net of start-up): 1.0 = as fast as the minimal pass, with four
methods, a store on disk and every output file to its one; `rensa_ratio_whole` is the same with
the command's start-up left in (a fixed ~0.7 CPU-s in a core-only install: imports and numba's
compiled kernels loaded from its cache), which weighs on small files; `_paired`: the median of
each run's ratio to the rensa pass and start-up run beside it, which a host whose speed drifts
between runs moves less than the ratio of the medians. Every figure is given in wall time and in
CPU time (`_cpu`: the command's user + system seconds, rensa's process time), which a busy
neighbour on a shared machine moves less.

Prints and writes JSON: per size the runs, their medians, the work per page from summary.json
(candidates found and verified), and the ratios of the per-page times to the smallest size's.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import orjson

ROOT = Path(__file__).resolve().parents[1]
_WORD = re.compile(r"\w+")


def vocabulary(size: int) -> list[str]:
    from wordfreq import top_n_list

    return top_n_list("en", size)


def _write_pages(path: Path, texts: Iterable[str]) -> Path:
    """Pages as JSON lines: plain text from 100 sites, one fetch time each a second apart."""
    start = 1_700_000_000
    with open(path, "wb") as out:
        for i, text in enumerate(texts):
            url = f"https://forum{i % 100}.example/t/{i}"
            fetched = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(start + i))
            out.write(orjson.dumps({"url": url, "content": text, "content_type": "text/plain", "fetched_at": fetched}))
            out.write(b"\n")
    return path


def _zipf_weights(size: int, exponent: float) -> np.ndarray:
    weights = 1.0 / np.arange(1, size + 1) ** exponent
    return weights / weights.sum()


def zipf_texts(pages: int, words: int, seed: int, vocab_size: int = 5000, exponent: float = 1.1) -> Iterator[str]:
    """`zipf`: each page `words` words drawn from one Zipf distribution over one vocabulary, one line."""
    vocab = np.array(vocabulary(vocab_size), dtype=object)
    weights = _zipf_weights(len(vocab), exponent)
    rng = np.random.default_rng(seed)
    for first in range(0, pages, 1000):
        for row in rng.choice(len(vocab), size=(min(1000, pages - first), words), p=weights):
            yield " ".join(vocab[row])


def prose_texts(pages: int, words: int, seed: int, vocab_size: int = 2000, phrases: int = 400) -> Iterator[str]:
    """`prose`: sentences of stock phrases (a bank of `phrases` of 3-8 words, drawn Zipf) and Zipf
    words from a small vocabulary, in paragraphs: pages share many 5-word shingles, none is a copy."""
    vocab = np.array(vocabulary(vocab_size), dtype=object)
    weights = _zipf_weights(len(vocab), 1.0)
    rng = np.random.default_rng(seed)
    bank = [" ".join(vocab[rng.choice(len(vocab), size=int(rng.integers(3, 9)), p=weights)]) for _ in range(phrases)]
    phrase_weights = _zipf_weights(phrases, 0.9)
    for _ in range(pages):
        sentences, count = [], 0
        while count < words:
            parts = [bank[j] for j in rng.choice(phrases, size=int(rng.integers(1, 4)), p=phrase_weights)]
            parts.append(" ".join(vocab[rng.choice(len(vocab), size=int(rng.integers(2, 7)), p=weights)]))
            rng.shuffle(parts)
            sentence = " ".join(parts)
            count += sentence.count(" ") + 1
            sentences.append(sentence[0].upper() + sentence[1:] + ".")
        yield "\n".join(" ".join(sentences[i: i + 5]) for i in range(0, len(sentences), 5))


_CLOUGH = ROOT.parent / "shared" / "data" / "clough_stevenson_short_answer_plagiarism" / "data"  # ../shared/data
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def recombined_texts(pages: int, words: int, seed: int, data: Path = _CLOUGH) -> Iterator[str]:
    """`recombined`: real sentences (the Clough-Stevenson corpus: 100 answers and 5 Wikipedia
    articles on 5 topics) cut and recombined, each page ~`words` words of one topic's sentences in a
    random order: pages of a topic share much vocabulary and some sentences, none is a copy."""
    topics: dict[str, list[str]] = {}
    for file in sorted(data.glob("*_task?.txt")):
        text = " ".join(file.read_text(encoding="utf-8", errors="replace").split())
        topics.setdefault(file.stem[-1], []).extend(s for s in _SENTENCE_END.split(text) if len(s.split()) >= 4)
    if not topics:
        raise SystemExit(f"recombined pages need the Clough-Stevenson corpus in {data} (--kinds zipf prose template)")
    names = sorted(topics)
    rng = np.random.default_rng(seed)
    for _ in range(pages):
        pool = topics[names[int(rng.integers(len(names)))]]
        chosen, count = [], 0
        for j in rng.permutation(len(pool)):
            chosen.append(pool[j])
            count += pool[j].count(" ") + 1
            if count >= words:
                break
        yield "\n".join(" ".join(chosen[i: i + 4]) for i in range(0, len(chosen), 4))


def template_texts(pages: int, words: int, seed: int, sites: int = 100) -> Iterator[str]:
    """`template`: boilerplate-heavy pages: each site's own menu, sidebar and footer lines (~200
    words, from the shared vocabulary, plus a cookie notice every site carries) around an article of
    `words` / 2 Zipf words in paragraphs."""
    vocab = np.array(vocabulary(5000), dtype=object)
    weights = _zipf_weights(len(vocab), 1.1)
    rng = np.random.default_rng(seed)

    def line(n: int) -> str:
        return " ".join(vocab[rng.choice(len(vocab), size=n, p=weights)])

    cookie = "We use cookies to improve your experience on our site. By continuing you agree to our cookie policy."
    frames = [([line(6), line(12)], [line(15), line(15), line(12)], [line(20), line(20), line(14), cookie])
              for _ in range(sites)]
    for i in range(pages):
        head, side, foot = frames[i % sites]
        body = [line(int(rng.integers(30, 70))) for _ in range(max(1, words // 2 // 50))]
        yield "\n".join([*head, *body, *side, *foot])


KINDS: dict[str, Callable[[int, int, int], Iterator[str]]] = {
    "zipf": zipf_texts, "prose": prose_texts, "recombined": recombined_texts, "template": template_texts}


def generate(path: Path, pages: int, words: int = 600, kind: str = "zipf", seed: int = 14) -> Path:
    """`pages` homogeneous pages of `kind` (`KINDS`) as JSON lines (same seed, same file)."""
    return _write_pages(path, KINDS[kind](pages, words, seed))


def user_environment() -> dict[str, str]:
    """This environment without PYTHONDONTWRITEBYTECODE, which the machines here set: the command
    would compile its ~75 modules from source at every start (its imports: 1.00 CPU-s against 0.83
    with their bytecode, medians of 10 on 2026-11-29), where a user's `pip install` writes it once."""
    return {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}


def run_dedup(path: Path, work: Path, *options: str, python: str = sys.executable) -> dict[str, Any]:
    """The whole command on one file (with `options`, run by `python`), a fresh store: wall and CPU
    seconds (its own and its helper processes') and its summary.json."""
    out = work / "out"
    shutil.rmtree(out, ignore_errors=True)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run([python, "-m", "streamdedup", "dedup", str(path), "--out", str(out), "--fresh", "-q", *options], cwd=ROOT,
                          capture_output=True, text=True, env=user_environment())
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    if done.returncode != 0:
        raise RuntimeError(f"streamdedup dedup failed ({done.returncode}): {done.stderr[-2000:]}")
    summary = json.loads((out / "summary.json").read_text())
    return {"wall_s": round(wall, 3), "cpu_s": round(cpu, 3), "records": summary.get("records"), "unique": summary.get("unique"),
            "duplicates": summary.get("duplicates"), "work_per_page": summary.get("work_per_page"),
            "store_us_per_page": summary.get("store_us_per_page")}


def shingles(text: str, k: int = 5) -> list[str]:
    tokens = _WORD.findall(text.lower())
    return [" ".join(tokens[i: i + k]) for i in range(max(1, len(tokens) - k + 1))]


def run_rensa(path: Path, threshold: float = 0.5, num_perm: int = 128, num_bands: int = 32) -> dict[str, Any]:
    """The minimal in-memory pass: every page is queried, verified against its candidates, inserted."""
    from rensa import RMinHash, RMinHashLSH

    started, cpu = time.perf_counter(), time.process_time()
    lsh = RMinHashLSH(threshold=threshold, num_perm=num_perm, num_bands=num_bands)
    kept: dict[int, Any] = {}
    duplicates = candidates = 0
    with open(path, "rb") as lines:
        for i, line in enumerate(lines):
            m = RMinHash(num_perm=num_perm, seed=42)
            m.update(shingles(orjson.loads(line)["content"]))
            found = lsh.query(m)
            candidates += len(found)
            if any(m.jaccard(kept[j]) >= threshold for j in found):
                duplicates += 1
            lsh.insert(i, m)
            kept[i] = m
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    return {"wall_s": round(wall, 3), "cpu_s": round(cpu, 3), "duplicates": duplicates, "candidates_mean": round(candidates / max(1, i + 1), 2)}


def paired_ratio(rensas: list[dict[str, Any]], runs: list[dict[str, Any]], startups: list[dict[str, Any]] | None,
                 clock: str) -> float | None:
    """The median over runs of rensa's time over the command's (less its start-up run beside it, if
    `startups`); None if a run's start-up outweighed it."""
    ratios = []
    for number, (rensa, run) in enumerate(zip(rensas, runs, strict=True)):
        command = run[clock] - (startups[number][clock] if startups else 0.0)
        if command <= 0:
            return None
        ratios.append(rensa[clock] / command)
    return round(statistics.median(ratios), 3)


def measure(kind: str, sizes: list[int], repeat: int, repeat_large: int, large: int, startup_pages: int, words: int,
            work: Path, python: str = sys.executable, warm: bool = True) -> dict[str, Any]:
    """Each size of one kind of pages: the runs of the command, its start-up and rensa, side by side."""
    startup_file = generate(work / "startup.jsonl", startup_pages, words, kind)
    results: dict[str, Any] = {}
    for number, size in enumerate(sizes):
        path = generate(work / f"{kind}-{size}.jsonl", size, words, kind)
        if number == 0 and warm:  # untimed: a fresh checkout compiles numba's kernels into its cache once (~20 s)
            run_dedup(path, work, python=python)
        runs, startups, rensas = [], [], []
        for _ in range(repeat if size < large else repeat_large):
            # start-up and rensa beside each run, so a busy neighbour slows all three alike
            startups.append(run_dedup(startup_file, work, python=python))
            runs.append(run_dedup(path, work, python=python))
            rensas.append(run_rensa(path))
            print(f"{kind} {size}: dedup {runs[-1]['wall_s']} s ({runs[-1]['cpu_s']} CPU s), start-up "
                  f"{startups[-1]['wall_s']} s ({startups[-1]['cpu_s']}), rensa {rensas[-1]['wall_s']} s "
                  f"({rensas[-1]['cpu_s']})", file=sys.stderr, flush=True)
        work_per_page = runs[-1]["work_per_page"] or {}
        steps = [r["store_us_per_page"] or {} for r in runs]
        row: dict[str, Any] = {"pages": size, "runs": runs, "startups": startups, "rensa": rensas,
                               "work_per_page": work_per_page,
                               # what the issue asks of each kind: the candidates verified a page, the
                               # pages whose candidates were cut at the limit, the verdict step's time
                               "candidates_verified_mean": work_per_page.get("candidates_verified_mean"),
                               "pages_over_candidate_limit": work_per_page.get("pages_over_candidate_limit"),
                               "verdict_us_per_page": round(statistics.median(s.get("verdicts", 0.0) for s in steps), 1),
                               "duplicates": runs[-1]["duplicates"], "rensa_duplicates": rensas[-1]["duplicates"],
                               "rensa_candidates_mean": rensas[-1]["candidates_mean"]}
        for clock, suffix in (("wall_s", ""), ("cpu_s", "_cpu")):
            whole = statistics.median(r[clock] for r in runs)
            net = whole - statistics.median(r[clock] for r in startups)
            rensa = statistics.median(r[clock] for r in rensas)
            measurable = net * 1000 / size >= 0.001  # else start-up's noise outweighed the run: no figure
            row.update({f"ms_per_page_net{suffix}": round(net / size * 1000, 3) if measurable else None,
                        f"ms_per_page_gross{suffix}": round(whole / size * 1000, 3),
                        f"rensa_ms_per_page{suffix}": round(rensa / size * 1000, 3),
                        f"rensa_ratio{suffix}": round(rensa / net, 3) if measurable else None,
                        # the same with the command's start-up in (imports, compiled kernels loaded
                        # from numba's cache, the store opened: ~0.7 CPU-s), as a user timing it sees it
                        f"rensa_ratio_whole{suffix}": round(rensa / whole, 3),
                        # each run against its own start-up and rensa pass, run beside it, then the
                        # median: steadier than the ratio of medians when the host's speed drifts
                        f"rensa_ratio_paired{suffix}": paired_ratio(rensas, runs, startups, clock),
                        f"rensa_ratio_whole_paired{suffix}": paired_ratio(rensas, runs, None, clock)})
        results[str(size)] = row
    for suffix in ("", "_cpu"):
        first = results[str(sizes[0])][f"ms_per_page_net{suffix}"]
        for row in results.values():  # None: start-up outweighed the run (tiny sizes on a loaded machine)
            value = row[f"ms_per_page_net{suffix}"]
            row[f"per_page_over_smallest{suffix}"] = round(value / first, 2) if first and value else None
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[2_000, 10_000, 20_000, 100_000])
    parser.add_argument("--repeat", type=int, default=3, help="runs per size below --large (median)")
    parser.add_argument("--repeat-large", type=int, default=1, help="runs per size from --large on")
    parser.add_argument("--large", type=int, default=100_000)
    parser.add_argument("--words", type=int, default=600)
    parser.add_argument("--kinds", nargs="+", choices=sorted(KINDS), default=["zipf"],
                        help="kinds of homogeneous pages (default zipf; the issue's four: zipf prose recombined template)")
    parser.add_argument("--startup-pages", type=int, default=10)
    parser.add_argument("--smoke", action="store_true", help="100 and 200 pages, once: runs in seconds")
    parser.add_argument("--out", type=Path, default=Path("bench/homogeneous.json"))
    parser.add_argument("--python", type=Path, default=Path(sys.executable),
                        help="the interpreter that runs `streamdedup dedup` (default: this one). A venv with the "
                             "core alone installed times the command as a user's install runs it: this bench's own "
                             "venv holds the peers' dependencies too (datasketch's scipy, which numba imports at "
                             "start-up for its BLAS check, ~0.3-0.4 CPU-s)")
    args = parser.parse_args()
    from peers import require  # bench/

    require("bench/homogeneous.py", "rensa")
    scipy = subprocess.run([str(args.python), "-c", "import importlib.util as u; print(u.find_spec('scipy') is not None)"],
                           capture_output=True, text=True).stdout.strip() == "True"
    if args.smoke:
        args.sizes, args.repeat, args.repeat_large = [100, 200], 1, 1
    work = Path(tempfile.mkdtemp(prefix="homogeneous-bench-"))
    try:
        results = {kind: measure(kind, args.sizes, args.repeat, args.repeat_large, args.large, args.startup_pages,
                                 args.words, work, str(args.python), warm=number == 0)
                   for number, kind in enumerate(args.kinds)}
    finally:
        shutil.rmtree(work, ignore_errors=True)
    report = {"created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "words_per_page": args.words,
              "kinds": args.kinds, "sizes": args.sizes,
              "command_python": str(args.python), "scipy_beside_the_command": scipy, "results": results}
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps({kind: {size: {k: row[k] for k in ("ms_per_page_net", "rensa_ratio", "rensa_ratio_whole",
                                                        "rensa_ratio_whole_paired", "rensa_ratio_cpu",
                                                        "rensa_ratio_whole_cpu", "candidates_verified_mean",
                                                        "pages_over_candidate_limit", "verdict_us_per_page",
                                                        "duplicates", "rensa_duplicates")}
                             for size, row in rows.items()} for kind, rows in results.items()}, indent=1))


if __name__ == "__main__":
    main()
