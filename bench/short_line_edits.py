"""Light edits that change words of an article's short lines (headings, list items, a byline): still duplicates?

Issue 57: a light edit that changed 1-3 words of 1-2 lines under the sketch's 12 words inside the
article was read as new text (`line_places.inserted_short`) and the pair `related`. From the dev
split's real pages (readability's, trafilatura's: `evaluate.pages.load_pages`) with a plain short
line of 5-11 words inside the article, each edit changes 1-3 words of 1-2 such lines (words of the
article put in their place), and with `--scattered` a word of a paragraph too; the original (its own
page) and the edit (another dev page's template, as the sets' light edits) run through a fresh
detector in both orders. Counted: edits that are the original's duplicate, and originals crawled
after the edit that are the edit's duplicate (each adds nothing the other lacks).

    PYTHONPATH=. python bench/short_line_edits.py ../shared/data/readability-test-pages.tar.gz \
        ../shared/data/trafilatura-test-pages.tar.gz --pages 40
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import tempfile
from pathlib import Path

from streamdedup.evaluate.pages import SourcePage, load_pages
from streamdedup.evaluate.sets import distinct_articles, split_of
from streamdedup.evaluate.surgery import in_template, own_page, usable_template
from streamdedup.testing import run_records

_NUMBER = re.compile(r"\d")


def short_lines(page: SourcePage) -> list[int]:
    """The article's lines of 5-11 words stating no number, not its first or last (inside the copy)."""
    paragraphs = page.paragraphs
    return [i for i in range(1, len(paragraphs) - 1)
            if 5 <= len(paragraphs[i].split()) < 12 and not _NUMBER.search(paragraphs[i])]


def edited(page: SourcePage, rng: random.Random, scattered: bool, words: int = 0) -> list[str]:
    """1-3 words (`words`: that many) of 1-2 short lines replaced by other words of the article.

    With `scattered`, a word of a paragraph too."""
    lines = [p.split() for p in page.paragraphs]
    vocabulary = [w for ws in lines for w in ws if not _NUMBER.search(w)]
    shorts = short_lines(page)
    for i in rng.sample(shorts, min(len(shorts), rng.randint(1, 2))):
        for at in rng.sample(range(len(lines[i])), words or rng.randint(1, 3)):
            lines[i][at] = rng.choice([w for w in vocabulary if w != lines[i][at]])
    if scattered:
        long = [i for i, ws in enumerate(lines) if len(ws) >= 20]
        if long:
            para = lines[rng.choice(long)]
            para[rng.randrange(len(para))] = rng.choice(vocabulary)
    return [" ".join(ws) for ws in lines]


def _record(page_id: str, url: str, html: str, hour: int) -> dict[str, str]:
    return {"id": page_id, "url": url, "content": html, "fetched_at": f"2026-01-01T{hour:02d}:00:00Z"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("archives", nargs="+", type=Path)
    parser.add_argument("--pages", type=int, default=40, help="articles to edit (the first of the dev split)")
    parser.add_argument("--seed", type=int, default=57)
    parser.add_argument("--scattered", action="store_true", help="and a word of a paragraph changed")
    parser.add_argument("--words", type=int, default=0, choices=(0, 1, 2, 3),
                        help="words changed in each edited line (0: 1-3 at random)")
    parser.add_argument("--edits", type=int, default=2, help="light edits of each article")
    parser.add_argument("-v", "--verbose", action="count", default=0)
    args = parser.parse_args(argv)
    pages = [p for p in distinct_articles(load_pages(args.archives))
             if split_of(p) == "dev" and not p.dense and p.lang in (None, "en", "de", "fr", "es", "pl", "it")]
    templates = [p for p in pages if usable_template(p)]
    chosen = [p for p in pages if short_lines(p) and len(p.paragraphs) >= 5][: args.pages]
    rng = random.Random(args.seed)
    pairs: list[tuple[str, dict[str, str], list[dict[str, str]]]] = []  # name, original, edits (the copy first)
    for n, page in enumerate(chosen):
        template = rng.choice([t for t in templates if t.site_key != page.site_key])
        versions = [list(page.paragraphs)] + [edited(page, rng, args.scattered, args.words) for _ in range(args.edits)]
        htmls = [in_template(template, v, page.title) for v in versions]
        if any(h is None for h in htmls):
            continue
        original = _record(f"o{n}", f"https://a{n}.example/story", own_page(page), 0)
        pairs.append((page.name, original, [_record(f"e{n}.{k}", f"https://b{n}.example/story-{k}", str(h), 1)
                                            for k, h in enumerate(htmls)]))
    # each original with each of its versions, in both orders; one detector per order and version (the
    # articles are other articles: none is another's candidate but by its template)
    counts = {"copy": [0, 0], "edit": [0, 0]}
    alike = total = 0
    with tempfile.TemporaryDirectory() as tmp:
        verdicts = {}
        for k in range(args.edits + 1):
            first = [r for _, o, es in pairs for r in (o, es[k])]
            later = [r for _, o, es in pairs for r in (es[k], {**o, "fetched_at": "2026-01-01T02:00:00Z"})]
            for order, records in (("after", first), ("before", later)):
                for out in run_records(records, Path(tmp) / f"{k}{order}"):
                    verdicts[(k, order, out.dedup["id"])] = out.dedup
        for name, original, edits in pairs:
            def dup(k: int, order: str, page: str, of: str) -> bool:
                got = verdicts[(k, order, page)]
                return bool(got["status"] == "duplicate" and got["duplicate_of"] == of)
            o, copy = original["id"], edits[0]["id"]
            if not (dup(0, "after", copy, o) and dup(0, "before", o, copy)):
                if args.verbose:
                    print(f"{name}: the copy itself is no duplicate both ways, left out", file=sys.stderr)
                continue
            alike += 1
            for k in range(1, args.edits + 1):
                e = edits[k]["id"]
                total += 1
                a, b = dup(k, "after", e, o), dup(k, "before", o, e)
                counts["edit"][0] += a
                counts["edit"][1] += b
                if args.verbose and not (a and b):
                    print(f"{name} edit {k}: {verdicts[(k, 'after', e)]}\n   {verdicts[(k, 'before', o)]}",
                          file=sys.stderr)
    print(f"{len(pairs)} articles with a short line, {alike} whose copy is a duplicate both ways; "
          f"of their {total} light edits: {counts['edit'][0]} edits the original's duplicate, "
          f"{counts['edit'][1]} originals crawled after the edit its duplicate")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
