"""Which rule kept each directional miss from being a duplicate: its link to the page it repeats, as the engine judged it.

    python bench/missed_causes.py SET.jsonl --out DIR [--json F]   (SET: a labelled set, `streamdedup devset`)

Runs `streamdedup eval` (defaults, `--methods minhash`) in this process, noting each link the
engine yields in the default scenario (`verdict.relations.judged`) and the new text it measured each
way (`NewText`, as `relations.relation` was asked). For each directional miss (errors.json
`default.directional.missed_redundant`), the link to the page it repeats (`redundant_after`; else
its closest link) and the rule of `NewTextTolerance.exceeded_by` that made the page's text new, in
its order:

- `no candidate`: no earlier page linked (no key found it, or nothing shared enough);
- `no rule matched`: linked as related only (MinHash under its threshold: `_related`);
- `numbers`: a paragraph states other numbers than its counterpart;
- `paragraph`: a new paragraph counted (20+ words, or one that took a place, or one inserted inside
  the copy: `replaced`, `inserted`), with its words;
- `share`: the share of new word pairs over `max_share` with more than `max_pairs` pairs.

With the page's relation to the candidate (`supersedes`: the candidate's text is all in the page;
`related`: neither), and its place among its host's pages in the set (`host page` 1: the host's
first, whose lines no template can know yet). Read the page's new lines with `bench/host_earlier_pages.py`. Pure CPU: ~1.5 min for web dev on 2 shared cores.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import streamdedup.detector as detector
import streamdedup.evaluate.run as run
import streamdedup.verdict.relations as relations
from streamdedup.verdict.policy import NewText, NewTextTolerance


def judged_links(kept: Callable[[], bool] = lambda: True) -> dict[str, list[dict[str, Any]]]:
    """Hook the detector: each page's links (while `kept()`), with the new text measured each way and its cause.

    The link's rule and relations, its shares, and the cause (`cause`) of the new text
    `relations.relation` was asked about where a rule matched it ("no rule matched" where none did)."""
    links: dict[str, list[dict[str, Any]]] = {}
    asked: list[tuple[NewText, NewText, NewTextTolerance]] = []
    relation, judged = relations.relation, relations.judged

    def related(matched: bool, new: NewText, their_new: NewText, tolerance: NewTextTolerance) -> str:
        asked.append((new, their_new, tolerance))
        return relation(matched, new, their_new, tolerance)

    def judging(*args: Any, **kwargs: Any) -> Any:
        page = args[4]
        for link in judged(*args, **kwargs):
            measured = asked[0] if link.rule and asked else None
            asked.clear()
            if kept():
                links.setdefault(page.page_id, []).append({
                    "other": link.doc.page_id, "rule": link.rule, "relation": link.relation,
                    "their_relation": link.their_relation, "new_share": round(link.new_share, 3),
                    "their_new_share": round(link.their_new_share, 3), "same_site": link.doc.site == page.site,
                    "cause": cause(measured) if measured else "no rule matched",
                    "new": measured[0]._asdict() if measured else None})
            yield link

    relations.relation = related  # type: ignore[assignment]
    detector.judged = judging  # type: ignore[assignment]
    return links


def capture() -> dict[str, list[dict[str, Any]]]:
    """Hook the eval: each page's links in the first (default) scenario (`judged_links`)."""
    scenario = [0]
    decide_all = run.decide_all

    def decided(*args: Any, **kwargs: Any) -> Any:
        scenario[0] += 1
        return decide_all(*args, **kwargs)

    run.decide_all = decided  # type: ignore[assignment]
    return judged_links(lambda: scenario[0] == 1)


def cause(measured: tuple[NewText, NewText, NewTextTolerance]) -> str:
    """The first rule of `NewTextTolerance.exceeded_by` that the page's new text meets ("" if none: a duplicate)."""
    new, _, tolerance = measured
    if new.numbers_changed:
        return "numbers"
    if tolerance.min_paragraph_words and new.paragraph:
        if new.paragraph >= tolerance.min_paragraph_words:
            return f"paragraph ({new.paragraph} words)"
        if new.replaced or new.inserted:
            return f"paragraph ({new.paragraph} words, {'replaced' if new.replaced else 'inserted'})"
    if new.share > tolerance.max_share and new.pairs > tolerance.max_pairs:
        return f"share ({new.share:.3f}, {new.pairs:.0f} pairs)"
    return ""


def main(argv: list[str] | None = None) -> int:
    from eval_in_process import eval_arguments, eval_errors  # bench/; here: tests load this file without it

    parser = eval_arguments(__doc__.splitlines()[0], "write the rows (with every link of each miss) here")
    args = parser.parse_args(argv)
    links = capture()
    errors = eval_errors(args.dataset, args.out)
    places = host_places(args.dataset)
    rows = []
    for miss in errors["default"]["directional"]["missed_redundant"]:
        pid, rid = str(miss["page"].get("id")), str(miss["redundant_after"].get("id"))
        mine = links.get(pid, [])
        link = next((x for x in mine if x["other"] == rid), None) or min(
            mine, key=lambda x: x["new_share"], default=None)
        rows.append({"id": pid, "variant": miss["page"].get("variant"), "repeats": rid, "host_page": places.get(pid),
                     "link": link, "cause": link["cause"] if link else "no candidate", "links": mine})
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1, ensure_ascii=False))
    print(f"{'page':40} {'variant':14} {'host page':>9} {'to':7} {'relation':10} {'new':>5} {'theirs':>6}  cause")
    for row in rows:
        link = row["link"] or {}
        to = "-" if not link else "it" if link["other"] == row["repeats"] else "another"
        place = "-" if row["host_page"] is None else "{} of {}".format(*row["host_page"])
        print(f"{row['id']:40} {row['variant']:14} {place:>9} {to:7} {link.get('relation', '-'):10} "
              f"{link.get('new_share', float('nan')):5.3f} {link.get('their_new_share', float('nan')):6.3f}  "
              f"{row['cause']}")
    print(dict(Counter(str(row["cause"]).split(" (")[0] for row in rows)))
    print("host page:", dict(sorted(Counter(row["host_page"][0] for row in rows if row["host_page"]).items())))
    return 0


def host_places(dataset: Path) -> dict[str, tuple[int, int]]:
    """Each page's place among its host's pages in the set's order (1: the first) and their number, by id."""
    hosts = []
    with dataset.open() as lines:
        for line in lines:
            record = json.loads(line)
            hosts.append((str(record.get("id")), urlsplit(str(record.get("url", ""))).hostname or ""))
    seen: Counter[str] = Counter()
    places = []
    for _, host in hosts:
        seen[host] += 1
        places.append(seen[host])
    return {page: (place, seen[host]) for (page, host), place in zip(hosts, places, strict=True)}


if __name__ == "__main__":
    sys.exit(main())
