"""Extraction's results and helpers: `Texts`, a page's whole visible text, `covers_little`.

What extraction gives of a page (`Texts`), the page's whole visible text, and when a main text
covers too little of it (trafilatura's bounds, which start its rescue).

The lowest layer of the extractors: `extract`, `fast_extract`, `trafilatura_extract` and the
helper process (`isolated`) all build on it, none of them on each other in a circle.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple


class Texts(NamedTuple):
    """What extraction gives of a page.

    Its main text; all its visible text, if asked for (else ""); and, where `fast`'s rescue replaced
    the article element's own text by trafilatura's (the element's text covered little of the page),
    that element's text (else ""). A rescue may take a site's boxes (an author's note, other
    stories) for a short page's article; the element's own text says what the page itself holds
    (`verdict/relations.py`, own-site candidates). And what the page showed of its site's layout, where
    a learned layout was asked about (`learned_layout`'s observation; else ""). `main_cut`: the main
    text was longer than `max_text_chars` and is its first characters only (`clean.pipeline`);
    `main_hash`: then, the hash of the whole main text (`WHOLE_TEXT_SEED`), its exact signature."""

    main: str
    visible: str = ""
    steered: str = ""
    layout: str = ""
    main_cut: bool = False
    main_hash: bytes = b""


# trafilatura's own bounds for an extraction that "covers little of the page" (core.py's
# ESCALATION_MAX_LENGTH and ESCALATION_PAGE_SHARE in 2.3.1, where they start its recall retry)
SMALL_EXTRACTION_CHARS = 3000
SMALL_EXTRACTION_SHARE = 0.2


def covers_little(text: str, page_text: Callable[[], str]) -> bool:
    """Whether an extraction is implausibly small for its page, by trafilatura's bounds.

    The page's whole text is only made when the extraction is short."""
    return len(text) < SMALL_EXTRACTION_CHARS and len(text) < SMALL_EXTRACTION_SHARE * len(page_text())


def extract_all_text(html: str | Any, skip: list[str] | None = None) -> str:
    """No boilerplate removal: every visible text node (the 'whole page' baseline).

    Takes the HTML or a tree resiliparse has parsed already; `skip`: selectors of elements left out."""
    from resiliparse.extract.html2text import extract_plain_text
    from resiliparse.parse.html import HTMLTree

    return extract_plain_text(HTMLTree.parse(html) if isinstance(html, str) else html, main_content=False,
                              alt_texts=False, links=False, list_bullets=False, skip_elements=skip)
