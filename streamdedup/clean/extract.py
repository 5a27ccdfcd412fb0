"""Main-content extraction: keep the article, drop navigation, ads, footers, comments.

Boilerplate is the enemy of near-duplicate precision: two different articles on one site share
their template, and a fingerprint of the whole page sees mostly template. The extractor is a
field library (see docs/extraction-comparison.md for the measurement behind the default).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

Extractor = Literal["trafilatura", "resiliparse", "none"]
EXTRACTORS: tuple[str, ...] = ("trafilatura", "resiliparse", "none")


def is_html(content_type: str, text: str) -> bool:
    """Trust the type, but sniff plain-text types too: crawlers mislabel."""
    if "<" not in text[:65536]:
        return False
    kind = content_type.split(";", 1)[0].strip().lower()
    if kind in ("text/html", "application/xhtml+xml", "application/xml", "text/xml", ""):
        return True
    head = text[:1024].lstrip().lower()
    return head.startswith(("<!doctype html", "<html")) or "<body" in head


def extract_trafilatura(html: str) -> str:
    import trafilatura

    text = trafilatura.extract(
        html, output_format="txt", include_comments=False, include_tables=True,
        include_images=False, include_links=False, deduplicate=False, favor_precision=True,
        with_metadata=False, fast=False,
    )
    return text or ""


def extract_resiliparse(html: str) -> str:
    from resiliparse.extract.html2text import extract_plain_text
    from resiliparse.parse.html import HTMLTree

    return extract_plain_text(HTMLTree.parse(html), main_content=True, alt_texts=False,
                              links=False, list_bullets=False, noscript=False)


def extract_all_text(html: str) -> str:
    """No boilerplate removal: every visible text node (the 'whole page' baseline)."""
    from resiliparse.extract.html2text import extract_plain_text
    from resiliparse.parse.html import HTMLTree

    return extract_plain_text(HTMLTree.parse(html), main_content=False, alt_texts=False,
                              links=False, list_bullets=False)


_BACKENDS: dict[str, Callable[[str], str]] = {
    "trafilatura": extract_trafilatura,
    "resiliparse": extract_resiliparse,
    "none": extract_all_text,
}


def extract_main_text(html: str, extractor: str) -> str:
    try:
        backend = _BACKENDS[extractor]
    except KeyError:
        raise ValueError(f"unknown extractor {extractor!r}; choose one of {', '.join(EXTRACTORS)}") from None
    return backend(html)
