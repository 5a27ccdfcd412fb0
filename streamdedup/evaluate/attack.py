"""How many crafted pages it takes to hide or reject a real article through its site's template model.

An attacker who can publish on a domain (a forum post, a comment page, a listing the crawler fetches
first) shows a real article's text on k pages before the article is crawled. The template model
then may take the article's lines for template: the article is `template_only` (rejected, never
judged) or judged on what is left of it (hidden from its copies). For each case below the smallest
such k (up to `MAX_PAGES`) is measured with the template model alone (`own_text`, the same call
every mode makes), on generated pages: a host with `KNOWN_PAGES` articles of its own (its template
known) or none (its cold start), a short article (40 words, with related links beside it) or a long one
(~240 words), the crafted pages (its headline and text, and a line of their own: a listing, a
quoting post) on the article's host or on another host of its domain. "none" means no k up to `MAX_PAGES` did it.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from streamdedup.clean.template import SiteTemplate, TemplateParams, line_hashes
from streamdedup.config import DetectorConfig
from streamdedup.fingerprinter import Fingerprinted, Fingerprinter, Outcome
from streamdedup.own_text import own_text
from streamdedup.record.readers import RawRecord
from streamdedup.testing import make_article, make_words

MAX_PAGES = 40
KNOWN_PAGES = 20


@dataclass(frozen=True)
class Case:
    """One attack: the host with or without articles before, a long article or a brief, the attacker's host."""

    name: str
    known: bool  # the host has KNOWN_PAGES articles of its own before
    long: bool  # a 240-word article, else a 40-word brief
    attacker_host: str  # where the crafted pages are


CASES = (Case("short article, known host, crafted pages on its host", True, False, "www.target.example"),
         Case("short article, known host, crafted pages on another host of its domain", True, False,
              "forum.target.example"),
         Case("short article, new host (cold start), crafted pages on its host", False, False, "www.target.example"),
         Case("long article, known host, crafted pages on its host", True, True, "www.target.example"))


def _html(title: str, main: list[str], aside: list[str]) -> str:
    nav = "".join(f"<li><a href='/{s}'>Target {s} section</a></li>" for s in ("world", "business", "sport"))
    body = "".join(f"<p>{p}</p>" for p in main)
    side = "".join(f"<li>{p}</li>" for p in aside)
    return (f"<html><head><title>{title}</title></head><body><nav><ul>{nav}</ul></nav><article><h1>{title}</h1>"
            f"{body}</article><aside><ul>{side}</ul></aside><footer><p>Copyright Target Media. All rights "
            "reserved. Terms of use. Privacy policy.</p></footer></body></html>")


def _raw(i: int, url: str, html: str) -> RawRecord:
    import orjson

    record = {"url": url, "content": html, "content_type": "text/html", "fetched_at": f"2024-03-01T00:{i % 60:02d}:00Z"}
    return RawRecord(origin=f"attack:{i}", data=orjson.dumps(record))


def _prepared(fingerprinter: Fingerprinter, raws: list[RawRecord]) -> list[Fingerprinted]:
    items = [fingerprinter.prepare(raw) for raw in raws]
    return [item for item in items if isinstance(item, Fingerprinted)]


def _effect(case: Case, k: int, own: list[Fingerprinted], crafted: list[Fingerprinted], article: Fingerprinted,
            fingerprinter: Fingerprinter, params: TemplateParams) -> str:
    """What k crafted pages do to the article.

    "rejected", "hidden" (judged on a text that keeps under half of its lines) or "" (judged on its
    text)."""
    models: dict[int, SiteTemplate] = {}
    for item in [*own, *crafted[:k]]:
        own_text(item, models.setdefault(item.template_hash, SiteTemplate()), fingerprinter, params)
    result = own_text(article, models.setdefault(article.template_hash, SiteTemplate()), fingerprinter, params)
    if isinstance(result, Outcome):
        return "rejected" if result.dedup.get("reason") == "template_only" else ""
    kept = set(line_hashes(result.text).tolist()) & set(line_hashes(article.text).tolist())
    return "hidden" if 2 * len(kept) < len(set(line_hashes(article.text).tolist())) else ""


def attack_pages_needed(config: DetectorConfig | None = None) -> list[dict[str, Any]]:
    """Per case, the fewest crafted pages that reject the article and that hide it (or reject it)."""
    config = config or DetectorConfig()
    params = config.template
    if params is None:
        return []
    fingerprinter = Fingerprinter(config)
    rows = []
    for n, case in enumerate(CASES):
        rng = random.Random(56 + n)
        paragraphs = make_article(900 + n, 4, 3) if case.long else [" ".join(make_words(rng, 40))]
        related = [" ".join(make_words(rng, 8)) for _ in range(3)]
        own_raws = [_raw(i, f"https://www.target.example/a/{i}", _html(f"Article {i}", make_article(100 + i, 3, 3),
                                                                         [" ".join(make_words(rng, 8))]))
                    for i in range(KNOWN_PAGES if case.known else 0)]
        crafted_raws = [_raw(100 + k, f"https://{case.attacker_host}/t/{k}",
                             _html("Story", [*paragraphs, " ".join(make_words(rng, 12))], []))
                        for k in range(MAX_PAGES)]
        own = _prepared(fingerprinter, own_raws)
        crafted = _prepared(fingerprinter, crafted_raws)
        article = _prepared(fingerprinter, [_raw(999, "https://www.target.example/news/story",
                                                 _html("Story", paragraphs, related))])[0]
        rejected = hidden = None
        for k in range(1, MAX_PAGES + 1):
            effect = _effect(case, k, own, crafted, article, fingerprinter, params)
            if effect and hidden is None:
                hidden = k
            if effect == "rejected":
                rejected = k
                break
        rows.append({"case": case.name, "reject": rejected, "hide_or_reject": hidden})
    return rows
