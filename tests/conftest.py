"""Shared fixtures: synthetic articles and site templates, generated, never read from ../shared."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any, Callable

import orjson
import pytest

_SYLLABLES = ["ka", "ro", "mi", "ten", "lu", "sa", "vor", "pe", "na", "dri", "ok", "ul", "zan",
              "fe", "bi", "tor", "gla", "ne", "shu", "wi", "qua", "res", "pol", "am", "it"]


def make_words(rng: random.Random, n: int) -> list[str]:
    return ["".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(1, 4))) for _ in range(n)]


def make_article(seed: int, paragraphs: int = 6, sentences: int = 5) -> list[str]:
    """Paragraphs of pseudo-English sentences; the same seed gives the same article."""
    rng = random.Random(seed)
    vocabulary = make_words(rng, 3000)
    paras = []
    for _ in range(paragraphs):
        sents = []
        for _ in range(sentences):
            words = rng.choices(vocabulary, k=rng.randint(8, 24))
            sents.append(" ".join(words).capitalize() + ".")
        paras.append(" ".join(sents))
    return paras


def wrap_in_template(paragraphs: list[str], site: str, title: str = "Story") -> str:
    """A news-site page: navigation, sidebar, footer boilerplate around the article."""
    nav = "".join(f'<li><a href="/{s}">{site} {s} section</a></li>'
                  for s in ("world", "politics", "business", "sport", "culture", "science"))
    side = "".join(f'<li><a href="/more/{i}">Most read on {site}: headline number {i}</a></li>' for i in range(8))
    body = "".join(f"<p>{p}</p>" for p in paragraphs)
    return (f"<!doctype html><html><head><title>{title} | {site}</title><meta charset='utf-8'></head><body>"
            f"<header><nav><ul>{nav}</ul></nav></header>"
            f"<main><article><h1>{title}</h1>{body}</article></main>"
            f"<aside><h2>Most read</h2><ul>{side}</ul></aside>"
            f"<footer><p>Copyright 2024 {site} Media Group. All rights reserved. Terms of use. "
            f"Privacy policy. Cookie settings. Contact us.</p></footer></body></html>")


def page(url: str, content: str, fetched_at: str = "2024-03-01T12:00:00Z", **extra: Any) -> dict[str, Any]:
    return {"url": url, "content": content, "fetched_at": fetched_at, **extra}


def write_jsonl(path: Path, records: list[Any]) -> Path:
    with open(path, "wb") as handle:
        for record in records:
            handle.write(record if isinstance(record, bytes) else orjson.dumps(record))
            handle.write(b"\n")
    return path


@pytest.fixture
def article() -> Callable[..., list[str]]:
    return make_article
