"""trafilatura as an extractor, and as `fast`'s rescue of a page it reads too little of.

Its main extractor first, its whole cascade only where that text covers little of the page; both
passes share one parse where trafilatura's steps allow (`trafilatura_once`). trafilatura is
imported where a page first needs it (~0.2 s).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

from streamdedup.clean.page_text import covers_little, extract_all_text


def _trafilatura(html: str, fast: bool) -> str:
    import trafilatura

    text = trafilatura.extract(
        html, output_format="txt", include_comments=False, include_tables=True,
        include_images=False, include_links=False, deduplicate=False, favor_precision=True,
        with_metadata=False, fast=fast,
    )
    return text or ""


def extract_trafilatura(html: str, page_text: Callable[[], str] | None = None, prune: Sequence[str] = ()) -> str:
    """Trafilatura's main extractor first; its whole cascade only when that text is implausibly small.

    trafilatura's main extractor alone first (fast: without the readability and justext
    comparison, which doubles its cost and, on a page the main extractor reads well, only swaps in
    a longer text with more sidebar); its whole cascade only when that text is implausibly small
    for the page (shorter than trafilatura's own 'covers little of the page' bounds), the case the
    comparison exists to rescue (text in <br>-separated divs, a cookie banner taken for the page).
    Measured on the dev split's 488 annotated trafilatura pages: the same share of kept snippets
    (0.914 against 0.915 with the cascade always on) and of dropped ones leaked (0.083, 0.084).
    `page_text`: the page's whole text, when the caller has it (or can make it from its own parse).
    `prune`: XPaths of elements removed before trafilatura reads the page (`fast`'s rescue: its
    teaser cards). Both passes share one parse where trafilatura's steps allow
    (clean/trafilatura_once.py)."""
    from streamdedup.clean.trafilatura_once import STEPS_AVAILABLE, extract_once  # imports trafilatura

    whole = page_text or (lambda: extract_all_text(html))
    if STEPS_AVAILABLE:
        once = extract_once(html, lambda text: covers_little(text, whole), _compiled(tuple(prune)))
        if once is not None:
            return once
    return trafilatura_two_calls(_pruned(html, prune) if prune else html, whole)


@lru_cache(maxsize=8)
def _compiled(paths: tuple[str, ...]) -> list[Any]:
    """The lxml XPaths, compiled once.

    lxml XPaths, compiled once (the rescue prunes the same ones from every page it reads; so
    trafilatura keeps its own, compiled at import)."""
    from lxml.etree import XPath

    return [XPath(path) for path in paths]


def _pruned(html: str, prune: Sequence[str]) -> str:
    """The `html` without the elements `prune` selects (their tail text kept).

    `html` without the elements `prune` selects (their tail text kept), for trafilatura's public
    API where its steps cannot be called one by one; as it is where lxml cannot parse it alone
    (empty, or a str that declares its encoding), which trafilatura's loader handles its own way."""
    import lxml.etree
    import lxml.html

    try:
        tree = lxml.html.fromstring(html)
    except (ValueError, lxml.etree.ParserError):
        return html
    for path in prune:
        for element in tree.xpath(path):
            element.drop_tree()
    return lxml.html.tostring(tree, encoding="unicode")


def trafilatura_two_calls(html: str, page_text: Callable[[], str] | None = None) -> str:
    """`extract_trafilatura` through trafilatura's public API.

    `trafilatura.extract` in fast mode, and again in full mode where that text covers little of the
    page (two parses; bench/e2e.py's baseline before the parse was shared)."""
    text = _trafilatura(html, fast=True)
    if not covers_little(text, page_text or (lambda: extract_all_text(html))):
        return text
    return _trafilatura(html, fast=False) or text
