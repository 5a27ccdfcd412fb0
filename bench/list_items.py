"""List items of the expected article that an extractor's text lacks, on readability's and trafilatura's pages.

    python bench/list_items.py --pages ../shared/data/readability-test-pages.tar.gz \
        --pages ../shared/data/trafilatura-test-pages.tar.gz --out lists.json

readability's pages: every list item of expected.html (the article Readability.js extracts) of 3
words or more. trafilatura's pages: every snippet of expected.json that sits in a list item of the
page (`with`: to keep, `without`: to drop). An item is in the text when its words, spaces removed,
are a substring of the text's (spaces removed). Counted apart for <ul> and <ol> (the item's nearest list).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lxml.html
import regex

from streamdedup.clean.extract import extract_trafilatura
from streamdedup.clean.fast_extract import extract_fast
from streamdedup.evaluate.pages import _members, annotated_trafilatura_pages, leaf_blocks, load_test_pages, normalise

SPACE = regex.compile(r"\s+")
EXTRACTORS: dict[str, Callable[[str], str]] = {"fast": extract_fast, "trafilatura": extract_trafilatura}


def squeeze(text: str) -> str:
    return SPACE.sub("", text).lower()


def list_kind(element: Any) -> str | None:
    """'ul' or 'ol': the nearest list an element is an item of, None outside a list item."""
    item = next((el for el in [element, *element.iterancestors()] if el.tag == "li"), None)
    if item is None:
        return None
    return next((el.tag for el in item.iterancestors() if el.tag in ("ul", "ol", "menu")), "ul")


def readability_items(path: Path) -> list[tuple[str, str, list[tuple[str, str, bool]]]]:
    """(page, source, [(kind, item text, keep)]) for readability's pages."""
    expected = {parts[-2]: data for parts, data in _members(path) if parts[-1] == "expected.html"}
    found = []
    for page in load_test_pages(path):
        tree = lxml.html.fromstring(expected[page.name].decode("utf-8", "replace"))
        items = [(kind, text, True) for el in leaf_blocks(tree) if (kind := list_kind(el))
                 and len((text := normalise(el.text_content())).split()) >= 3]
        found.append((page.name, page.source, items))
    return found


def trafilatura_items(path: Path) -> list[tuple[str, str, list[tuple[str, str, bool]]]]:
    """(page, source, [(kind, snippet, keep)]) for trafilatura's pages: the snippets inside list items."""
    found = []
    for name, source, note in annotated_trafilatura_pages(path):
        try:
            tree = lxml.html.fromstring(source)
        except (ValueError, lxml.etree.ParserError):
            continue
        for junk in tree.xpath("//script|//style|//noscript|//template"):
            junk.drop_tree()
        blocks = [(el, normalise(el.text_content())) for el in leaf_blocks(tree)]
        items = []
        for key, keep in (("with", True), ("without", False)):
            for snippet in map(normalise, note.get(key, [])):
                hit = next((el for el, text in blocks if snippet and snippet in text), None)
                if hit is not None and (kind := list_kind(hit)):
                    items.append((kind, snippet, keep))
        found.append((f"{name} {note.get('url', '')}", source, items))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=Path, action="append", required=True)
    parser.add_argument("--extractor", choices=sorted(EXTRACTORS), default="fast")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    extract = EXTRACTORS[args.extractor]
    report: dict[str, Any] = {}
    for path in args.pages:
        pages = trafilatura_items(path) if "trafilatura" in path.name else readability_items(path)
        counts = {f"{kind}_{what}": 0 for kind in ("ul", "ol") for what in
                  ("pages_with_kept_items", "pages_missing_kept", "kept_items", "kept_missing",
                   "dropped_items", "dropped_leaked")}
        examples = []
        for name, source, items in pages:
            if not items:
                continue
            text = squeeze(extract(source))
            for kind in ("ul", "ol"):
                kept = [t for k, t, keep in items if k == kind and keep]
                missing = [t for t in kept if squeeze(t) not in text]
                dropped = [t for k, t, keep in items if k == kind and not keep]
                counts[f"{kind}_pages_with_kept_items"] += bool(kept)
                counts[f"{kind}_pages_missing_kept"] += bool(missing)
                counts[f"{kind}_kept_items"] += len(kept)
                counts[f"{kind}_kept_missing"] += len(missing)
                counts[f"{kind}_dropped_items"] += len(dropped)
                counts[f"{kind}_dropped_leaked"] += sum(squeeze(t) in text for t in dropped)
                if missing:
                    examples.append({"page": name, "kind": kind, "missing": len(missing), "of": len(kept),
                                     "first": missing[0][:100]})
        report[path.name] = {"pages": len(pages), **counts, "examples": examples}
        print(path.name, json.dumps(counts))
    args.out.write_text(json.dumps(report, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
