"""Where a directional miss's new lines were before: on its host's earlier pages, in their main or visible text.

    python bench/host_earlier_pages.py /work/sets/web-dev.jsonl --out /tmp/e [--json F]

Runs `streamdedup eval` (defaults, `--methods minhash`) in this process and notes, for every page
its host's model learns (`own_text._learn_lines`, the default scenario's pass), its main-text and
visible-text lines. For each directional miss (errors.json `default.directional.missed_redundant`):

- `nth`: which distinct page of its host (`template_site`) the missed page is (1: the host's first);
- its lines absent from the page it repeats (`redundant_after`), by words, as: `edited` (a line of
  that page within rapidfuzz ratio 70: a light edit, not a host's line), `main` (on an earlier page
  of the host, in its main text), `outside` (on an earlier page, in its visible text only), `none`
  (on no earlier page of the host);
- `share_left`: the `none` words over the page's main-text words.

A rule about a host's earlier page(s) can only help a miss whose new lines are `main` or `outside`
(issue 57: "a line becomes template only once two earlier pages of the host show it"). Pure CPU:
~1.5 min for web dev on 2 shared cores.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from eval_in_process import eval_arguments, eval_errors  # bench/eval_in_process.py
from rapidfuzz import fuzz

import streamdedup.evaluate.run as run
import streamdedup.own_text as own_text
from streamdedup.clean.page_urls import page_key
from streamdedup.clean.template import split_lines, template_site

EDITED = 70  # rapidfuzz ratio to a line of the repeated page: the same line, lightly edited


def capture() -> tuple[dict[str, dict[str, Any]], list[str], dict[str, dict[str, Any]]]:
    """Hook the eval: each learned page's lines (first pass: the default scenario), its verdicts."""
    pages: dict[str, dict[str, Any]] = {}
    order: list[str] = []
    verdicts: dict[str, dict[str, Any]] = {}
    learn_lines = own_text._learn_lines
    decide_all = run.decide_all

    def learned(item: Any, site: Any, params: Any, hashes: Any) -> None:
        rid = str(item.record.get("id"))
        if rid not in pages:
            lines, line_hashes = split_lines(item.text)
            visible = item.visible_lines[1]
            pages[rid] = {"url": item.page.url, "site": template_site(item.page.url), "pages_before": site.pages,
                          "new_url": not site._has_url(page_key(item.page.url)), "lines": lines,
                          "hashes": line_hashes, "visible": visible}
            order.append(rid)
        learn_lines(item, site, params, hashes)

    def decided(scenario: Any, items: Any, path: Any) -> Any:
        outcomes = decide_all(scenario, items, path)
        if not verdicts:
            verdicts.update({str(o.record.get("id")): o.dedup for o in outcomes})
        return outcomes

    own_text._learn_lines = learned  # type: ignore[assignment]
    run.decide_all = decided  # type: ignore[assignment]
    return pages, order, verdicts


def classify(pages: dict[str, dict[str, Any]], order: list[str], missed: list[dict[str, Any]],
             verdicts: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """One row a miss: its host page number and its new lines' words by where they were before."""
    at = {rid: i for i, rid in enumerate(order)}
    rows: list[dict[str, Any]] = []
    for miss in missed:
        pid, rid = str(miss["page"].get("id")), str(miss["redundant_after"].get("id"))
        page, repeated = pages.get(pid), pages.get(rid)
        if page is None or repeated is None:
            rows.append({"id": pid, "note": "not judged on its text (rejected)", "status": miss["status"]})
            continue
        earlier = [pages[x] for x in order[: at[pid]] if pages[x]["site"] == page["site"]]
        urls = {p["url"].split("#")[0] for p in earlier}
        main = {h for p in earlier for h in p["hashes"]}
        visible = {h for p in earlier for h in p["visible"]}
        theirs = set(repeated["hashes"])
        words = {"edited": 0, "main": 0, "outside": 0, "none": 0}
        lines = []
        for line, h in zip(page["lines"], page["hashes"], strict=True):
            if h in theirs:
                continue
            near = max((fuzz.ratio(line, other) for other in repeated["lines"]), default=0)
            kind = "edited" if near >= EDITED else "main" if h in main else "outside" if h in visible else "none"
            words[kind] += len(line.split())
            lines.append([kind, len(line.split()), line[:80]])
        total = sum(len(line.split()) for line in page["lines"])
        rows.append({"id": pid, "variant": miss["page"].get("variant"), "status": miss["status"], "site": page["site"],
                     "nth": len(urls) + 1, "words": total, **words,
                     "share_left": round(words["none"] / max(1, total), 3),
                     "verdict": {k: v for k, v in verdicts.get(pid, {}).items()
                                 if k in ("status", "supersedes", "related_to")},
                     "lines": lines})
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = eval_arguments(__doc__.splitlines()[0], "write the rows (with each new line) here")
    args = parser.parse_args(argv)
    pages, order, verdicts = capture()
    errors = eval_errors(args.dataset, args.out)
    rows = classify(pages, order, errors["default"]["directional"]["missed_redundant"], verdicts)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1, ensure_ascii=False))
    print(f"{'page':38} {'variant':14} nth words edited  main outside none share_left")
    for row in rows:
        if "note" in row:
            print(f"{row['id']:38} {row['note']}")
            continue
        print(f"{row['id']:38} {row['variant']:14} {row['nth']:3} {row['words']:5} {row['edited']:6} "
              f"{row['main']:5} {row['outside']:7} {row['none']:4} {row['share_left']:10}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
