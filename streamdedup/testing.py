"""An in-memory source and sink for tests and notebooks: a pipeline test in a few lines.

    outcomes = run_records([{"url": ..., "content": ...}, b"not json"], tmp_path)
    assert [o.status for o in outcomes] == ["unique", "rejected"]
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import orjson

from streamdedup.config import DetectorConfig
from streamdedup.detector import Detector, Outcome
from streamdedup.record.readers import RawRecord

# -- synthetic pages: articles of pseudo-words inside a news-site template ---------------
_SYLLABLES = ["ka", "ro", "mi", "ten", "lu", "sa", "vor", "pe", "na", "dri", "ok", "ul", "zan",
              "fe", "bi", "tor", "gla", "ne", "shu", "wi", "qua", "res", "pol", "am", "it"]


def make_words(rng: random.Random, n: int) -> list[str]:
    """Pseudo-English words of 1-4 syllables, drawn from `rng`."""
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


def wrap_in_template(paragraphs: list[str], site: str, title: str = "Story", boxes: Sequence[str] = (),
                     lead: str = "") -> str:
    """A news-site page: navigation, sidebar, footer boilerplate around the article.

    `boxes`: the host's lines after the article's text, each in a box of its own inside the article
    element (a newsletter blurb, an author's box: the extractor keeps them), the text in a block of
    its own before them. `lead`: a line in a box of its own between the title and the text (a
    standfirst, or a host's line there), the text in a block of its own after it."""
    nav = "".join(f'<li><a href="/{s}">{site} {s} section</a></li>'
                  for s in ("world", "politics", "business", "sport", "culture", "science"))
    side = "".join(f'<li><a href="/more/{i}">Most read on {site}: headline number {i}</a></li>' for i in range(8))
    body = "".join(f"<p>{p}</p>" for p in paragraphs)
    if boxes or lead:
        body = f'<div class="story-text">{body}</div>' + "".join(f'<div class="promo"><p>{box}</p></div>'
                                                                for box in boxes)
    if lead:
        body = f'<div class="deck"><p>{lead}</p></div>{body}'
    return (f"<!doctype html><html><head><title>{title} | {site}</title><meta charset='utf-8'></head><body>"
            f"<header><nav><ul>{nav}</ul></nav></header>"
            f"<main><article><h1>{title}</h1>{body}</article></main>"
            f"<aside><h2>Most read</h2><ul>{side}</ul></aside>"
            f"<footer><p>Copyright 2024 {site} Media Group. All rights reserved. Terms of use. "
            f"Privacy policy. Cookie settings. Contact us.</p></footer></body></html>")



_STANDFIRST = ("The diocese's platform for single parents on children's rights day: care hours beyond the "
               "kindergarten and school day must be secured, it asks today")


def headlined_brief(seed: int, body: str = "") -> str:
    """A brief (`fast` rescues it) whose headline is its first 9 words, its body in a div after the headline's box.

    The box holds a standfirst every page of the site shows beside the headline (a real
    template's: katholisch.at)."""
    body = body or " ".join(make_article(seed, 1, 3))
    head = " ".join(body.split()[:9])
    links = "".join(f"<li><a href='/more/{k}'>{' '.join(make_words(random.Random(70 + k), 7))}</a></li>"
                    for k in range(60))
    return (f"<html><head><title>{head}</title></head><body><nav><ul>{links}</ul></nav>"
            f"<div class='content'><div class='hasHeaderImage'><div class='headerInfo'><h1>{head}</h1>"
            f"<div class='teaser'><p>{_STANDFIRST}</p></div></div><div class='pubdate'>19.11.2021</div>"
            f"<div class='modBody'><p>{body}</p></div></div></div>"
            "<footer><p>Copyright 2024 the diocese. All rights reserved. Imprint. Privacy.</p></footer></body></html>")


def raw_records(records: Iterable[Any]) -> list[RawRecord]:
    """dicts become JSON lines, bytes are taken as they are (to test bad input)."""
    return [RawRecord(origin=f"memory:{i}", data=r if isinstance(r, bytes) else orjson.dumps(r))
            for i, r in enumerate(records, start=1)]


def run_records(records: Iterable[Any], state_dir: str | Path, config: DetectorConfig | None = None,
                **overrides: Any) -> list[Outcome]:
    """The outcomes of running records through a fresh detector on `state_dir`, in order."""
    config = (config or DetectorConfig()).with_overrides(**overrides)
    with Detector(config, state_dir) as detector:
        return list(detector.run(raw_records(records)))
