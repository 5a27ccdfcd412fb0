"""The extraction helper's CPU by what each page was read as: its requests recorded from a run, replayed back to back.

    taskset -c 1 python bench/helper_replay.py record PAGES.jsonl REQUESTS.pkl   # the whole command's requests
    taskset -c 1 python bench/helper_replay.py replay REQUESTS.pkl [--repeat 3]  # CPU ms by kind, and a held page's parts

`record` runs file mode in this process (one prepare thread, the helper on) and keeps every request
the parent sends the helper (the extractor with its learned-layout request, the page, whether its
visible text is asked). `replay` makes them again in this process, in order, with `page_texts` as
the helper does (its pipe and the switches between the two processes left out), and prints the CPU
ms each by the request and what the page was read as (`learned:held`, `learned:miss`, `observe:fast`...),
with the median of the repeats; then the CPU of each step a page read from its learned container
takes (`learned_layout.learned_texts`), each step made apart on the same pages; then what each kind
of resiliparse call those steps make costs on a one-paragraph document (its set-up, paid once a
call whatever the page: a new document, a selector parsed, the main-content pass's rules). A
pickle: load only the files this writes.
"""

from __future__ import annotations

import argparse
import pickle
import statistics
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

Request = tuple[str, str, bool]  # the extractor (with its learned-layout request after a newline), the page, visible


def record(pages: Path, out: Path) -> int:
    """Run the command's file mode on `pages` and write the helper's requests to `out`; how many."""
    from streamdedup.api.file_mode import dedup_files
    from streamdedup.clean import isolated
    from streamdedup.config import DetectorConfig

    requests: list[Request] = []
    extract = isolated.IsolatedExtractor.extract

    def recorded(self: Any, extractor: str, html: str, seconds: float, visible: bool = False,
                 utf8: bytes | None = None) -> Any:
        requests.append((extractor, html, visible))
        return extract(self, extractor, html, seconds, visible, utf8)

    isolated.IsolatedExtractor.extract = recorded  # type: ignore[method-assign]
    with tempfile.TemporaryDirectory() as work:
        dedup_files([pages], Path(work) / "out", DetectorConfig(prepare_threads=1), fresh=True)
    out.write_bytes(pickle.dumps(requests))
    return len(requests)


def _asked(extractor: str) -> str:
    layout = extractor.partition("\n")[2]
    return "plain" if not layout else "observe" if layout == "?" else "learned"


def replay(requests: list[Request], repeat: int) -> dict[str, tuple[int, float]]:
    """CPU ms each by kind of request and reading: (pages, the median of `repeat` replays)."""
    from streamdedup.clean.extract import page_texts

    for extractor, html, visible in requests[:20]:  # imports and caches
        page_texts(html, extractor, visible)
    runs: dict[str, list[float]] = defaultdict(list)
    pages: Counter[str] = Counter()
    for _ in range(repeat):
        spent: dict[str, float] = defaultdict(float)
        pages.clear()
        for extractor, html, visible in requests:
            start = time.process_time()
            layout = page_texts(html, extractor, visible).layout
            kind = f"{_asked(extractor)}:{layout.partition(':')[0].partition(chr(10))[0]}"
            spent[kind] += time.process_time() - start
            pages[kind] += 1
        for kind, seconds in spent.items():
            runs[kind].append(seconds * 1000 / pages[kind])
        runs["all"].append(sum(spent.values()) * 1000 / len(requests))
    pages["all"] = len(requests)
    return {kind: (pages[kind], statistics.median(values)) for kind, values in sorted(runs.items())}


def held_steps(requests: list[Request], repeat: int) -> dict[str, float]:
    """CPU ms a page of each step of a learned read (`learned_texts`), on the pages whose learned container is found."""
    from resiliparse.parse.html import HTMLTree

    from streamdedup.clean import learned_layout
    from streamdedup.clean.fast_extract import NOSCRIPTS, _containers, container_text
    from streamdedup.clean.noscript import noscript_sources
    from streamdedup.clean.page_text import extract_all_text

    learned = [(extractor.partition("\n")[2].partition("\n")[0].partition("|")[2], html)
               for extractor, html, _ in requests if _asked(extractor) == "learned"]
    runs: dict[str, list[float]] = defaultdict(list)
    for _ in range(repeat):
        spent: dict[str, float] = defaultdict(float)
        found = 0
        for selector, html in learned:
            steps: list[tuple[str, float]] = [("", time.process_time())]

            def step(name: str, steps: list[tuple[str, float]] = steps) -> None:
                steps.append((name, time.process_time()))

            source = noscript_sources(html).scripting_on
            step("noscript renaming")
            tree = HTMLTree.parse(source)
            step("parse")
            blocks = learned_layout.containers(tree, selector)
            step("learned selector")
            if not blocks:
                continue
            container_text(blocks)
            step("container's main text")
            extract_all_text(tree, NOSCRIPTS)
            step("page's visible text")
            _containers(tree.body)
            step("fast's container search (the attack check)")
            found += 1
            for (_, before), (name, after) in zip(steps, steps[1:], strict=False):
                spent[name] += after - before
        for name, seconds in spent.items():
            runs[name].append(seconds * 1000 / max(1, found))
    return {name: statistics.median(values) for name, values in runs.items()}


def call_overheads(calls: int = 2000, repeat: int = 5) -> dict[str, float]:
    """CPU µs a call of each resiliparse call a held page makes, on a one-paragraph document (the median of `repeat`)."""
    from resiliparse.parse.html import HTMLTree

    from streamdedup.clean import fast_extract
    from streamdedup.clean.fast_extract import DISCARD_SELECTORS, NOSCRIPTS, main_content_text
    from streamdedup.clean.page_text import extract_all_text

    markup = "<div><p>One short paragraph.</p></div>"
    tree = HTMLTree.parse(markup)
    body, div = tree.body, tree.body.query_selector("div")
    outside = fast_extract._OUTSIDE_CLEANED  # what `_kept` tests on each container that could be taken
    made: dict[str, Any] = {
        "parse (a new document)": lambda: HTMLTree.parse(markup),
        "visible text (main_content off, the noscript skip)": lambda: extract_all_text(tree, NOSCRIPTS),
        "main-content text, no skip list": lambda: main_content_text(tree),
        "main-content text, DISCARD_SELECTORS": lambda: main_content_text(tree, DISCARD_SELECTORS),
        "query, a short selector ('ul')": lambda: body.query_selector_all("ul"),
        **{f"query, container selector {number} ({len(query)} chars)": (lambda query=query: body.query_selector_all(query))
           for number, query in enumerate(fast_extract._CONTAINER_QUERIES)},
        f"matches(_OUTSIDE_CLEANED) ({len(outside)} chars)": lambda: div.matches(outside),
    }
    figures = {}
    for name, call in made.items():
        runs = []
        for _ in range(repeat):
            start = time.process_time()
            for _ in range(calls):
                call()
            runs.append((time.process_time() - start) * 1e6 / calls)
        figures[name] = statistics.median(runs)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    recording = commands.add_parser("record")
    recording.add_argument("pages", type=Path)
    recording.add_argument("requests", type=Path)
    replaying = commands.add_parser("replay")
    replaying.add_argument("requests", type=Path)
    replaying.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    if args.command == "record":
        print(f"{record(args.pages, args.requests)} requests written to {args.requests}")
        return
    requests = pickle.loads(args.requests.read_bytes())
    pages = sum(1 for extractor, _, _ in requests if extractor)
    print(f"{args.requests}: {pages} requests; CPU ms each (median of {args.repeat}), and a crawl page's share")
    for kind, (count, ms) in replay(requests, args.repeat).items():
        print(f"  {kind:24s} {count:6d} pages {ms:8.3f} ms each {ms * count / pages:7.3f} ms a page")
    print("a page read from its learned container, by step (CPU ms a page):")
    for name, ms in held_steps(requests, args.repeat).items():
        print(f"  {name:44s} {ms:6.3f}")
    print("resiliparse's set-up a call, on a one-paragraph document (CPU µs a call):")
    for name, us in call_overheads().items():
        print(f"  {name:58s} {us:6.1f}")


if __name__ == "__main__":
    main()
