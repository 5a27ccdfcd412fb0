"""Light edits of the web family's dev articles, many per article: how many are the original's duplicate, and why not.

Issue 57: dev web holds ~56 light edits (3 missed), too few to read a cause from. From the pages
`streamdedup devset --family web --split dev` draws from (the dev split's `web` pool: readability's
pages and a share of trafilatura's, `evaluate.sets.family_of`; never the test split), each article
of the pool, once per seed: its original in its own page (`surgery.own_page`, on its own host),
then a light edit made by the devset's own function with the devset's parameters
(`surgery.light_edit_kept`: 2-5 % of words substituted, deleted or duplicated, a paragraph dropped
from articles of 8+, the title "(updated)") inside another dev page's template (from another site,
on that template's host). Each seed's pairs run, original then edit, through one fresh detector
(`testing.run_records`, defaults). Counted: edits that are their original's duplicate; for each
miss, the cause as `bench/missed_causes.py` reads it (`no candidate`, `no rule matched`, `numbers`,
`paragraph`, `share`; `duplicate of another`: a rule matched but the verdict named another page)
on its link to the original, and its kind of change (words substituted / deleted / duplicated, a
paragraph dropped, the article's length, the lowest word-pair Jaccard of a paragraph of 20+ words
with its edit). A control tells the edit's misses from the template's: the same article unedited in
the edit's place (same draws, template, title and URL), judged in its own detectors.

    PYTHONPATH=. python bench/light_edits.py [--seeds 3] [--json F] [-v]

Pure CPU, ~35 s for 3 seeds (408 pairs and their controls) on 2 shared cores. 2026-12-07, rules
version 36: 370 of 408 edits found; of the 38 missed, 20 are missed unedited too (the template's:
all 9 `share`, 4 of 5 `no rule matched`, 7 `paragraph`), 18 are the edit's own (13 `paragraph`: a
heavily edited paragraph that kept none of its 4 sketch values or matched a shorter one in place;
4 `numbers`: the edit deleted or replaced a figure; 1 other). docs/evaluation.md, "Light edits".
"""

from __future__ import annotations

import argparse
import difflib
import json
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent))

from missed_causes import judged_links  # noqa: E402
from peers import archives  # noqa: E402

from streamdedup.evaluate.pages import SourcePage, load_pages  # noqa: E402
from streamdedup.evaluate.sets import distinct_articles, family_of, host_of, slug, split_of  # noqa: E402
from streamdedup.evaluate.surgery import in_template, light_edit_kept, own_page, usable_template  # noqa: E402
from streamdedup.testing import run_records  # noqa: E402

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"  # ../shared/data beside the checkout
ARCHIVES = [SHARED / "readability-test-pages.tar.gz", SHARED / "trafilatura-test-pages.tar.gz"]


def change(original: list[str], edited: list[str], kept: list[int]) -> dict[str, Any]:
    """The edit's kind of change: words substituted, deleted, inserted (word diff of kept paragraphs), a paragraph dropped."""
    counts: Counter[str] = Counter()
    worst = 1.0  # the lowest word-pair Jaccard of a paragraph of 20+ words with its edit
    for k, text in zip(kept, edited, strict=True):
        a, b = original[k].split(), text.split()
        if len(a) >= 20:
            pa, pb = set(zip(a, a[1:], strict=False)), set(zip(b, b[1:], strict=False))
            worst = min(worst, len(pa & pb) / max(1, len(pa | pb)))
        for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
            if op == "replace":
                counts["substituted"] += max(i2 - i1, j2 - j1)
            elif op == "delete":
                counts["deleted"] += i2 - i1
            elif op == "insert":
                counts["inserted"] += j2 - j1
    dropped = [k for k in range(len(original)) if k not in kept]
    return {**counts, "dropped": [len(original[k].split()) for k in dropped],
            "words": sum(len(p.split()) for p in original), "paragraphs": len(original),
            "worst_paragraph": round(worst, 3)}


def kind(row: dict[str, Any]) -> str:
    """A short name of the edit's change."""
    c = row["change"]
    parts = [f"{c.get(k, 0)} {k[:3]}" for k in ("substituted", "deleted", "inserted") if c.get(k)]
    if c["dropped"]:
        parts.append(f"dropped {c['dropped'][0]}w")
    return ", ".join(parts) + f" of {c['words']}w/{c['paragraphs']}p, worst paragraph J {c['worst_paragraph']:.2f}"


def pairs_of(pool: list[SourcePage], templates: list[SourcePage], seed: int,
             control: bool = False) -> list[dict[str, Any]]:
    """One seed's pairs: each article's original record, its light edit's, and the edit's change.

    `control`: the article unedited in the edit's place (same draws, template, title and URL)."""
    rng = random.Random(f"light-edits:{seed}")
    out = []
    for n, page in enumerate(pool):
        others = [t for t in templates if t.name != page.name and t.site_key != page.site_key]
        if not others:
            continue
        paragraphs = list(page.paragraphs)
        edited, kept = light_edit_kept(paragraphs, rng)
        template = rng.choice(others)
        html = in_template(template, paragraphs if control else edited, page.title + " (updated)")
        if html is None:
            continue
        host, there = host_of(page), host_of(template)
        original = {"id": f"s{seed}-o{n}", "url": f"https://{host}/story/{slug(page.name)}",
                    "content": own_page(page), "fetched_at": f"2026-01-01T{n // 60:02d}:{n % 60:02d}:00Z"}
        edit = {"id": f"s{seed}-e{n}", "url": f"https://{there}/news/{slug(page.name)}-edited",
                "content": html, "fetched_at": f"2026-01-01T{n // 60:02d}:{n % 60:02d}:30Z"}
        out.append({"page": page.name, "original": original, "edit": edit, "template": template.name,
                    "change": change(paragraphs, edited, kept)})
    return out


def judge_controls(pool: list[SourcePage], templates: list[SourcePage], seeds: int) -> dict[str, bool]:
    """Whether each edit's control (`pairs_of(control=True)`) is its original's duplicate, by the edit's id."""
    found = {}
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(seeds):
            pairs = pairs_of(pool, templates, seed, control=True)
            records = [r for pair in pairs for r in (pair["original"], pair["edit"])]
            verdicts = {o.dedup["id"]: o.dedup for o in run_records(records, Path(tmp) / str(seed))}
            for pair in pairs:
                got = verdicts[pair["edit"]["id"]]
                found[pair["edit"]["id"]] = got["status"] == "duplicate" and got.get("duplicate_of") == pair["original"]["id"]
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=Path, action="append", help="archives (default: readability's, trafilatura's)")
    parser.add_argument("--seeds", type=int, default=3, help="light edits of each article (one detector per seed)")
    parser.add_argument("--json", "--out", type=Path, help="write every pair's verdict, links and change here")
    parser.add_argument("-v", "--verbose", action="store_true", help="print each miss")
    args = parser.parse_args(argv)
    pages = distinct_articles(load_pages(args.pages or archives("bench/light_edits.py", ARCHIVES)))
    pool = [p for p in pages if split_of(p) == "dev" and family_of(p) == "web"]
    templates = [p for p in pool if usable_template(p)]
    links = judged_links()
    rows: list[dict[str, Any]] = []
    cpu = time.process_time()
    controls = judge_controls(pool, templates, args.seeds)
    links.clear()  # the controls' (their ids are the edits')
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(args.seeds):
            pairs = pairs_of(pool, templates, seed)
            records = [r for pair in pairs for r in (pair["original"], pair["edit"])]
            verdicts = {o.dedup["id"]: o.dedup for o in run_records(records, Path(tmp) / str(seed))}
            hosts: set[str] = set()
            for pair in pairs:
                seen = urlsplit(pair["edit"]["url"]).hostname in hosts  # the edit's host showed a page before
                hosts.update(urlsplit(pair[k]["url"]).hostname or "" for k in ("original", "edit"))
                oid, eid = pair["original"]["id"], pair["edit"]["id"]
                got = verdicts[eid]
                found = got["status"] == "duplicate" and got.get("duplicate_of") == oid
                mine = links.get(eid, [])
                link = next((x for x in mine if x["other"] == oid), None)
                why = "" if found else (link["cause"] if link else "no candidate") or "duplicate of another"
                rows.append({"page": pair["page"], "seed": seed, "id": eid, "template": pair["template"],
                             "found": found, "status": got["status"], "host_seen": seen,
                             "copy_found": controls.get(eid, False), "cause": why, "link": link,
                             "change": pair["change"]})
    cpu = time.process_time() - cpu
    missed = [r for r in rows if not r["found"]]
    if args.verbose:
        for r in missed:
            link = r["link"] or {}
            print(f"{r['id']:10} {r['page'][:34]:34} {r['status']:9} new {link.get('new_share', float('nan')):5.3f} "
                  f"{r['cause']:40} {kind(r)}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1, ensure_ascii=False))
    print(f"{len(rows)} light edits of {len(pool)} dev web articles ({args.seeds} seeds): "
          f"{len(rows) - len(missed)} their original's duplicate, {len(missed)} missed "
          f"({cpu:.0f} s CPU to build and judge them and their controls, the pages loaded apart)")
    print("causes:", dict(Counter(str(r["cause"]).split(" (")[0] for r in missed).most_common()))
    dropped = Counter(bool(r["change"]["dropped"]) for r in missed)
    copies = Counter(r["copy_found"] for r in rows)
    print("causes of the edits missed whose control was found (the edit's own):",
          dict(Counter(str(r["cause"]).split(" (")[0] for r in missed if r["copy_found"]).most_common()))
    print(f"control (the article unedited in the edit's template, title and URL): {copies[True]}/{len(rows)} "
          f"found; of the {len(missed)} missed edits, {sum(not r['copy_found'] for r in missed)} missed unedited too")
    print(f"missed with a paragraph dropped: {dropped[True]}, without: {dropped[False]}; "
          f"short articles (< 300 words) among the missed: {sum(r['change']['words'] < 300 for r in missed)}"
          f" of {sum(r['change']['words'] < 300 for r in rows)} short edits")
    for name, low, high in (("< 300 words", 0, 300), ("300-999", 300, 1000), ("1000+", 1000, 10**9)):
        some = [r for r in rows if low <= r["change"]["words"] < high]
        lost = Counter(str(r["cause"]).split(" (")[0] for r in some if not r["found"])
        print(f"  {name:11}: {len(some) - sum(lost.values())}/{len(some)} found; missed by {dict(lost)}")
    for seen in (False, True):
        some = [r for r in rows if r["host_seen"] == seen]
        lost = Counter(str(r["cause"]).split(" (")[0] for r in some if not r["found"])
        print(f"  edit's host {'seen before' if seen else 'new':11}: {len(some) - sum(lost.values())}/{len(some)} found;"
              f" missed by {dict(lost)}")
    for least, most in ((0.0, 0.6), (0.6, 0.7), (0.7, 1.01)):
        some = [r for r in rows if least <= r["change"]["worst_paragraph"] < most]
        para = sum(str(r["cause"]).startswith("paragraph") for r in some)
        print(f"  most-edited paragraph's pair Jaccard in [{least:.1f}, {min(most, 1):.1f}): {len(some)} edits, "
              f"{para} missed as a new paragraph")
    return 0


if __name__ == "__main__":
    sys.exit(main())
