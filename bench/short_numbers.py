"""What a rule "a short line's numbers changed in place is new text" would cost: the found duplicates it would lose.

    python bench/short_numbers.py /work/sets/web-dev.jsonl --out /tmp/e [--json F] [-v]

Runs `streamdedup eval` (defaults, `--methods minhash`) in this process, noting each judged page's
own text (`own_text`'s page, as its signature was made) and the default scenario's verdicts. For
each page found a duplicate on a safe edge (not in errors.json's `unsafe_edges`), its lines and
those of the page it names (`duplicate_of`) are aligned (difflib, on the lines with each number
read as `#`), and the short lines (under `SHORT` words) of one page that stand in the place of one
of the other's with the same words and other numbers are counted: `same count` (as many numbers,
other values: what a count-and-hash byte tells) or `other count`. Each such line is read as a
kind (`kind_of`: a date or time, a counter, a price, a score, other) and as inside the page's
article block or not (`clean.article_block.article_lines`, the marks the verdict reads).
Pure CPU: ~1.5 min for web dev on 2 shared cores.
"""

from __future__ import annotations

import difflib
import json
import re
import sys
from collections import Counter
from typing import Any

from eval_in_process import eval_arguments, eval_errors  # bench/eval_in_process.py

import streamdedup.detector as detector
import streamdedup.evaluate.run as run
from streamdedup.clean.article_block import INSIDE, article_lines, page_html
from streamdedup.fingerprints.paragraph_rows import letter_units
from streamdedup.tokens.document import Document

SHORT = 12  # the paragraph sketch's floor: a shorter line is no paragraph
_NUMBER = re.compile(r"\d+(?:[.,:/'’-]\d+)*")
_TIME = re.compile(r"\b\d{1,2}[:h.]\d{2}\b|\b\d{4}-\d{2}-\d{2}|\b\d{1,2}[./-]\d{1,2}[./-]\d{2,4}\b|\b(19|20)\d\d\b")
_DATE_WORDS = re.compile(
    r"(?i)\b(ago|updated?|aktualisiert|published|posted|veröffentlicht|mis à jour|publié|actualizad|"
    r"jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec|januar|februar|märz|mai|juni|juli|oktober|dezember|"
    r"janvier|février|mars|avril|juin|juillet|août|septembre|octobre|novembre|décembre|enero|febrero|marzo|"
    r"abril|mayo|junio|julio|agosto|septiembre|octubre|noviembre|diciembre|uhr|gmt|utc|cet|cest|min|minutes?|"
    r"hours?|stunden?|days?|tage?n?|heures?|horas?|monday|tuesday|wednesday|thursday|friday|saturday|sunday|"
    r"montag|dienstag|mittwoch|donnerstag|freitag|samstag|sonntag)\b|[年月日時分]|\bг\.|"
    r"(января|февраля|марта|апреля|мая|июня|июля|августа|сентября|октября|ноября|декабря)|tháng|ngày")
_COUNTER_WORDS = re.compile(
    r"(?i)(comments?|kommentare?|commentaires?|comentarios?|views?|aufrufe|reads?|shares?|likes?|votes?|"
    r"replies|antworten|réponses|respuestas|answers?|followers?|abonnenten|subscribers?|posts?|beiträge|"
    r"pages?|seite|results?|ergebnisse|articles?|artikel|items?|photos?|bilder|fotos|ответ|коммент|просмотр|"
    r"评论|阅读|浏览|bình luận|lượt xem)")
_PRICE = re.compile(r"(?i)[€$£¥₽₹]|\b(eur|usd|chf|gbp|euro|dollars?|preis|price|prix|precio)\b")
_SCORE = re.compile(r"\b\d{1,2}\s?[:-]\s?\d{1,2}\b")


def kind_of(line: str) -> str:
    """A short line with numbers read as: `date/time`, `counter`, `price`, `score` or `other` (first that fits)."""
    if _PRICE.search(line):
        return "price"
    if _COUNTER_WORDS.search(line):
        return "counter"
    if _TIME.search(line) or _DATE_WORDS.search(line):
        return "date/time"
    if _SCORE.search(line):
        return "score"
    return "other"


def words(line: str) -> int:
    """The line's length as the sketch counts it: the larger of its tokens and its word-equivalents."""
    doc = Document.from_text(line, None)
    return max(doc.num_tokens, int(letter_units(doc).sum()) // 60)


def capture() -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    """Hook the eval: each judged page's own text (first pass), and the default scenario's verdicts."""
    texts: dict[str, dict[str, Any]] = {}
    verdicts: dict[str, dict[str, Any]] = {}
    own, decide_all = detector.own_text, run.decide_all

    def owned(item: Any, *args: Any, **kwargs: Any) -> Any:
        out = own(item, *args, **kwargs)
        rid = str(item.page.id)
        text = getattr(out, "text", None)
        if rid not in texts and text:
            texts[rid] = {"page": out.page, "text": text, "variant": item.record.get("variant")}
        return out

    def decided(scenario: Any, items: Any, path: Any) -> Any:
        outcomes = decide_all(scenario, items, path)
        if not verdicts:
            verdicts.update({str(o.dedup.get("id")): {**o.dedup, "label": o.record.get("id") or o.record.get("label_id")}
                             for o in outcomes})
        return outcomes

    detector.own_text = owned  # type: ignore[assignment]
    run.decide_all = decided  # type: ignore[assignment]
    return texts, verdicts


def _marks(entry: dict[str, Any]) -> list[bool]:
    """Whether each line of the page's text sits inside its article block (all False where not known)."""
    if "marks" not in entry:
        lines = [line for line in entry["text"].split("\n") if line]
        html = page_html(entry["page"])
        marks = article_lines(html, entry["text"]) if html else None
        entry["marks"] = ([bool(m == INSIDE) for m in marks] if marks is not None and len(marks) == len(lines)
                          else [False] * len(lines))
    return list(entry["marks"])


def changed_lines(page: dict[str, Any], other: dict[str, Any]) -> list[dict[str, Any]]:
    """The page's short lines in the place of one of `other`'s with the same words and other numbers."""
    mine = [line for line in page["text"].split("\n") if line]
    theirs = [line for line in other["text"].split("\n") if line]
    masked = [_NUMBER.sub("#", line) for line in mine]
    their_masked = [_NUMBER.sub("#", line) for line in theirs]
    rows = []
    matcher = difflib.SequenceMatcher(None, masked, their_masked, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            continue
        for i, j in zip(range(i1, i2), range(j1, j2), strict=True):
            a, b = mine[i], theirs[j]
            if a == b or not _NUMBER.search(a):
                continue
            n = words(a)
            if n >= SHORT:
                continue
            mine_numbers, their_numbers = _NUMBER.findall(a), _NUMBER.findall(b)
            rows.append({"line": a, "was": b, "words": n, "kind": kind_of(a),
                         "same_count": len(mine_numbers) == len(their_numbers),
                         "inside": _marks(page)[i], "at": i, "of": len(mine)})
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = eval_arguments(__doc__.splitlines()[0], "write each page's changed lines here")
    parser.add_argument("-v", "--verbose", action="store_true", help="print each changed line")
    args = parser.parse_args(argv)
    texts, verdicts = capture()
    errors = eval_errors(args.dataset, args.out)
    unsafe = {str(e["page"].get("id") or e["page"].get("label_id"))
              for e in errors["default"]["directional"].get("unsafe_edges", [])}
    found = pages = missing = 0
    kinds: Counter[str] = Counter()
    kinds_same: Counter[str] = Counter()
    kinds_inside: Counter[str] = Counter()
    hit: Counter[str] = Counter()
    rows = []
    for rid, dedup in verdicts.items():
        if dedup.get("status") != "duplicate" or str(dedup["label"]) in unsafe:
            continue
        page, other = texts.get(rid), texts.get(str(dedup.get("duplicate_of")))
        if page is None or other is None:
            missing += 1
            continue
        found += 1
        lines = changed_lines(page, other)
        if not lines:
            continue
        pages += 1
        same = [x for x in lines if x["same_count"]]
        inside = [x for x in same if x["inside"]]
        hit["same count"] += bool(same)
        hit["same count, inside"] += bool(inside)
        hit["same count, inside, no date/time"] += any(x["kind"] != "date/time" for x in inside)
        hit["same count, no date/time"] += any(x["kind"] != "date/time" for x in same)
        same_site = page["page"].url.split("/")[2] == other["page"].url.split("/")[2]
        hit["same count, same site"] += bool(same) and same_site
        for x in lines:
            kinds[x["kind"]] += 1
            kinds_same[x["kind"]] += x["same_count"]
            kinds_inside[x["kind"]] += x["same_count"] and x["inside"]
        rows.append({"id": rid, "of": dedup.get("duplicate_of"), "variant": page["variant"], "same_site": same_site,
                     "lines": lines})
        if args.verbose:
            for x in lines:
                print(f"{rid:40} {x['kind']:9} {'=' if x['same_count'] else '≠'} {'in ' if x['inside'] else 'out'} "
                      f"{x['words']:2}w {x['was'][:60]!r} -> {x['line'][:60]!r}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1, ensure_ascii=False))
    print(json.dumps({"set": args.dataset.name, "found duplicates (safe edges)": found, "not read": missing,
                      "with a short line's numbers changed in place": pages, **dict(hit),
                      "lines by kind": dict(kinds), "same count, by kind": dict(kinds_same),
                      "same count inside, by kind": dict(kinds_inside)}, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
