"""How much of an article's own text sits outside its article block, and what a copy lacking it is judged.

    python bench/outside_own_text.py --traf ../shared/data/trafilatura-test-pages.tar.gz \
        --readability ../shared/data/readability-test-pages.tar.gz [--split dev] [--pairs] [--pairs-out F]
    python bench/outside_own_text.py --pairs-in F  # the same pairs, judged by the code as it is now

The article-block marks (`clean/article_block.py`) tell the lines of a page's main text inside its
article's block from those outside. A rule that excused the lines outside as a new host's (on the
recall side: a copy on another site whose new text is all outside its block is a duplicate) is
safe only if an article's own text rarely sits outside. Measured on real pages, split as the
labelled sets split them (`evaluate.sets.split_of`: by site; `--split dev` by default):

- each page cleaned as the pipeline cleans it (`clean_page`, default `CleaningConfig`) and marked
  (`article_lines`); each marked line (12+ words) labelled the article's own or its host's:
  trafilatura's pages by their annotation (a line holding a snippet to keep / to drop; the rest
  unlabelled), readability's by the article Readability.js extracts (half or more of the line's
  word 3-grams in it). Words in, outside and not located, per label; pages with own text outside.
- `--pairs`: for each page with own lines of 12+ words outside its block, an earlier copy on
  another site (its main text as plain text, less those lines), then the page itself; both
  through one `Deduplicator` (file mode, defaults). A page found a duplicate of a copy that
  lacks its own lines is an edge a crawler acting on would lose them by (counted apart where one
  of them has 20 words or more, a paragraph the verdicts count). Any recall-side use of the marks
  should be run on these pairs (the dev sets hold no such copy); a rule that moves the marks
  themselves, on the pairs of the code before it (`--pairs-out`, then `--pairs-in`).

JSON on stdout. Pure CPU: ~1 min for the 555 dev pages, ~20 s more with `--pairs`.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from streamdedup.clean import article_block
from streamdedup.clean.normalize import normalize_text
from streamdedup.clean.pipeline import CleaningConfig, clean_page
from streamdedup.evaluate.pages import (
    SourcePage,
    _host,
    decode_html,
    load_test_pages,
    load_trafilatura_pages,
    trafilatura_files,
)
from streamdedup.evaluate.sets import split_of
from streamdedup.record.page import page_from_record
from streamdedup.record.rejection import Rejected

_SPACES = re.compile(r"\s+")
OWN_SHINGLES = 0.5  # a readability line is the article's when half its word 3-grams are in the extracted article
PARAGRAPH = 20  # a new paragraph the verdicts count (`NewTextTolerance.min_paragraph_words`)


def _norm(text: str) -> str:
    return _SPACES.sub(" ", normalize_text(text)).strip()


def _shingles(text: str) -> set[tuple[str, ...]]:
    words = text.split()
    return {tuple(words[i:i + 3]) for i in range(max(1, len(words) - 2))}


def pages_of(traf: Path | None, readability: Path | None) -> list[dict[str, Any]]:
    """The annotated pages: url, html, site, keep/drop snippets (normalised), the article's 3-grams or None."""
    out: list[dict[str, Any]] = []
    if traf is not None:
        sources, expected = trafilatura_files(traf)
        located = {p.name.removeprefix("traf:"): p for p in load_trafilatura_pages(traf)}
        for name, note in sorted(expected.items()):
            if name not in sources:
                continue
            url = note.get("url") or ""
            found = located.get(name)
            out.append({"corpus": "trafilatura", "name": name, "html": decode_html(sources[name]),
                        "url": url if url.startswith("http") else f"https://{name}.example/",
                        "site": (_host(url) if url.startswith("http") else "") or name,
                        "keep": [s for s in map(_norm, note.get("with", [])) if s],
                        "drop": [s for s in map(_norm, note.get("without", [])) if s],
                        "article": _shingles(_norm(" ".join(found.paragraphs))) if found else None})
    if readability is not None:
        for page in load_test_pages(readability):
            out.append({"corpus": "readability", "name": page.name, "html": page.source,
                        "url": f"https://{page.site_key}.example/{page.name}", "site": page.site_key,
                        "keep": [], "drop": [], "article": _shingles(_norm(" ".join(page.paragraphs)))})
    return out


def label(page: dict[str, Any], line: str) -> str:
    """'own', 'host' or 'unlabelled': by the snippets (trafilatura), else by the extracted article."""
    if any(s in line or (len(line) > 30 and line in s) for s in page["keep"]):
        return "own"
    if any(s in line or (len(line) > 30 and line in s) for s in page["drop"]):
        return "host"
    if page["corpus"] == "trafilatura" or page["article"] is None:
        return "unlabelled"
    shingles = _shingles(line)
    return "own" if len(shingles & page["article"]) >= OWN_SHINGLES * len(shingles) else "host"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--traf", type=Path)
    parser.add_argument("--readability", type=Path)
    parser.add_argument("--split", default="dev", choices=("dev", "test", "all"))
    parser.add_argument("--pairs", action="store_true", help="judge a copy lacking each page's own outside lines")
    parser.add_argument("--pairs-out", type=Path, help="write the pairs (JSON Lines) to judge them again")
    parser.add_argument("--pairs-in", type=Path, help="judge these pairs (from --pairs-out) only: a rule changed since")
    args = parser.parse_args()
    if args.pairs_in is not None:
        saved = [json.loads(line) for line in args.pairs_in.open(encoding="utf-8")]
        json.dump(judged_pairs([r["record"] for r in saved], {r["record"]["id"]: r["lost"] for r in saved if r["lost"]}),
                  sys.stdout, indent=1, ensure_ascii=False)
        print()
        return
    if args.traf is None and args.readability is None:
        parser.error("give --traf and/or --readability (the shared pages' archives)")
    words: Counter[str] = Counter()
    pages: Counter[str] = Counter()
    per_page: list[dict[str, Any]] = []
    records: list[dict[str, Any]] = []
    lost: dict[str, list[int]] = {}
    for page in pages_of(args.traf, args.readability):
        site_page = SourcePage(page["name"], "", (), "", None, page["site"])
        if args.split != "all" and split_of(site_page) != args.split:
            continue
        try:
            record = page_from_record({"url": page["url"], "content": page["html"]}, max_content_bytes=1 << 27)
            text = clean_page(record, CleaningConfig())
        except Rejected:
            continue
        lines = [line for line in text.split("\n") if line]
        marks = article_block.article_lines(article_block.page_html(record), text)
        corpus = page["corpus"]
        pages[f"{corpus} pages"] += 1
        counts: Counter[str] = Counter()
        own_outside: list[int] = []
        for i, (line, mark) in enumerate(zip(lines, marks.tolist(), strict=True)):
            if article_block._words(line) < article_block.PARAGRAPH_WORDS:
                continue
            where = {article_block.INSIDE: "inside", article_block.OUTSIDE: "outside"}.get(mark, "not located")
            kind = label(page, line)
            counts[f"{where} {kind}"] += article_block._words(line)
            if where == "outside" and kind == "own":
                own_outside.append(i)
        if own_outside:
            pages[f"{corpus} pages with own text outside"] += 1
        # a line whose text the rest of the page holds too (a standfirst repeated in the body) is not lost
        rest = _shingles(" ".join(x for i, x in enumerate(lines) if i not in set(own_outside)))
        own_outside = [i for i in own_outside if len(_shingles(lines[i]) & rest) < OWN_SHINGLES * len(_shingles(lines[i]))]
        words.update({f"{corpus} {key}": value for key, value in counts.items()})
        if counts["inside own"] + counts["inside host"] + counts["inside unlabelled"]:
            pages[f"{corpus} pages with a block"] += 1
        if own_outside:
            pages[f"{corpus} pages with own text outside, not elsewhere"] += 1
        if counts["outside host"]:
            pages[f"{corpus} pages with host text outside"] += 1
        if counts["outside own"] or counts["outside host"]:
            per_page.append({"page": page["name"], "corpus": corpus, **{k: v for k, v in counts.items() if v}})
        if (args.pairs or args.pairs_out) and own_outside:
            n = len(lost) + 1
            dropped = set(own_outside)
            records.append({"id": f"copy-{n}", "url": f"https://copy-{n}.example/a", "content_type": "text/plain",
                            "content": "\n\n".join(x for i, x in enumerate(lines) if i not in dropped),
                            "fetched_at": "2026-01-01T00:00:00Z"})
            records.append({"id": f"page-{n}", "url": page["url"], "content": page["html"],
                            "fetched_at": "2026-01-02T00:00:00Z"})
            lost[f"page-{n}"] = [article_block._words(lines[i]) for i in own_outside]
    out: dict[str, Any] = {"split": args.split, "pages": dict(pages), "words of 12+-word lines": dict(words),
                           "pages with text outside": per_page}
    if args.pairs:
        out["pairs"] = judged_pairs(records, lost)
    if args.pairs_out is not None:
        with args.pairs_out.open("w", encoding="utf-8") as file:
            for pair_record in records:
                file.write(json.dumps({"record": pair_record, "lost": lost.get(pair_record["id"])},
                                      ensure_ascii=False) + "\n")
    json.dump(out, sys.stdout, indent=1, ensure_ascii=False)
    print()


def judged_pairs(records: list[dict[str, Any]], lost: dict[str, list[int]]) -> dict[str, Any]:
    """Each page after a copy lacking its own outside lines: how many are its duplicates, and losing what."""
    from streamdedup import Deduplicator

    with Deduplicator() as dedup:
        results = dedup.add_many(records)
    status: Counter[str] = Counter()
    duplicates = []
    for record, result in zip(records, results, strict=True):
        if not record["id"].startswith("page-"):
            continue
        status[result.status] += 1
        if result.status == "duplicate":
            duplicates.append({"page": record["url"], "own_lines_lost_words": lost[record["id"]],
                               "new_share": result.new_share})
    return {"pairs": len(lost), "status": dict(status),
            "duplicates losing a 20+-word line": sum(max(d["own_lines_lost_words"]) >= PARAGRAPH for d in duplicates),
            "duplicates": duplicates}


if __name__ == "__main__":
    main()
