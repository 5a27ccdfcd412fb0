"""The Faust app's kernels compiled or loaded before it joins its group: pages judged on a store of their own.

Why: Faust judges a record on its event loop, and the loop also runs the group's rebalance callbacks and
its commit timer. numba compiles a kernel at its first call when its disk cache has none (a fresh install
or container): the cold app's first page held the loop 8 s (18 s with two apps and a CI run on 2 cores),
so a rebalance meanwhile outlasted the 10 s rebalance timeout and both apps fell out of their generation.
`Fingerprinter`'s own warm-up loads only the fingerprinting kernels; the store's, the verdicts' and the
markup check's wait for the first page that needs them. So the app judges these pages first, through
its own path (`JournalKeeper.outputs`), on a temporary store: pages of three sites sharing a template,
stories repeated and corrected across them, text in other scripts, markup nested past the nesting
check's limit, and enough pages that the index grows once. From numba's cache this takes ~1.7 s at every
start; cold, the compiles the first pages would have done (16-31 s on 2 busy cores), before the app joins.
Every kernel the pages of five dev sets (crawl, en, feed, multilingual, web) reached was ready then. A page
still holds the loop while it is judged, one record a call: after the warm-up at most 6-310 ms a page of
each of those sets, 0.18 s for a 1.7 MB page.
"""

from __future__ import annotations

import random
import tempfile
import time

from streamdedup.config import DetectorConfig
from streamdedup.detector import Detector
from streamdedup.fingerprinter import fingerprint_text
from streamdedup.runtime.faust_journal import JournalKeeper

SITES = ("alpha", "beta", "gamma", "delta", "epsilon", "zeta")
STORIES = 90  # stories on 1-4 sites each: pages enough that the index grows past its first size (its `_rehash`)
_SYLLABLES = ("ka", "ro", "mi", "ten", "lu", "sa", "vor", "pe", "na", "dri", "ok", "ul", "zan", "fe", "bi", "tor",
              "gla", "ne", "shu", "wi", "qua", "res", "pol", "am", "it")
_OTHER_SCRIPTS = ("東京の新しい駅は来年の春に開業する予定です。", "Die Wörter über Straßen und Flüsse wurden geändert.",
                  "བོད་ཀྱི་སྐད་ཡིག་ནི་གལ་ཆེན་པོ་ཡིན།", "Новый мост через реку откроют весной следующего года.")
_NESTED = 600  # elements nested in a page, past the nesting check's limit
# letters of scripts written without spaces between words (read as code points, Chinese by its characters)
_HAN = "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过子说产种面而方后多"
_THAI = "กขคงจฉชซญดตถทธนบปผพฟภมยรลวศษสหอะาิีึืุูเแโใไ่้๊๋"


def _story(seed: int) -> list[str]:
    """Four paragraphs of pseudo-words, five sentences each; the same seed, the same story."""
    rng = random.Random(seed)
    words = ["".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(1, 4))) for _ in range(3000)]
    return [" ".join(" ".join(rng.choices(words, k=rng.randint(8, 24))).capitalize() + "." for _ in range(5))
            for _ in range(4)]


def _unspaced(seed: int, letters: str) -> list[str]:
    """Four paragraphs in a script without spaces between words: sentences of `letters`."""
    rng = random.Random(seed)
    return ["".join("".join(rng.choices(letters, k=rng.randint(12, 40))) + "。" for _ in range(5)) for _ in range(4)]


def _page(site: str, title: str, paragraphs: list[str]) -> str:
    """A news page of `site`: its navigation, sidebar and footer around the story."""
    nav = "".join(f'<li><a href="/{s}">{site} {s} section</a></li>' for s in ("world", "politics", "sport", "culture"))
    side = "".join(f'<li><a href="/more/{i}">Most read on {site}: headline number {i}</a></li>' for i in range(6))
    body = "".join(f"<p>{p}</p>" for p in paragraphs)
    return (f"<html><head><title>{title} | {site}</title></head><body><header><nav><ul>{nav}</ul></nav></header>"
            f"<main><article><h1>{title}</h1>{body}</article></main><aside><ul>{side}</ul></aside>"
            f"<footer><p>Copyright {site} Media. All rights reserved. Privacy policy.</p></footer></body></html>")


def warm_up_pages() -> list[bytes]:
    """The warm-up's input records (JSON pages), the same every time.

    Each story on 1-4 sites: the same text on the first two, corrected on the others; some stories in
    Chinese or Thai letters, some also syndicated in a longer page and teased by their first paragraph."""
    import orjson

    rng = random.Random(7)
    pages: list[bytes] = []
    for i in range(STORIES):
        story = _unspaced(i, _HAN) if i % 10 == 4 else _unspaced(i, _THAI) if i % 10 == 9 else _story(5000 + i)
        if i % 10 == 3:
            story.append(" ".join(_OTHER_SCRIPTS) * 3)
        if i % 10 in (4, 6) and i >= 10:  # syndicated inside another site's longer page, and teased
            site = SITES[i % len(SITES)]
            pages.append(orjson.dumps({"url": f"https://{site}.example/s{i}",
                                       "content": _page(site, f"Story {i}", [*_story(i), *story, *_story(i + 1)])}))
            pages.append(orjson.dumps({"url": f"https://{site}.example/t{i}",
                                       "content": _page(site, f"Story {i}", story[:1])}))
        for j, site in enumerate(rng.sample(SITES, 1 + i % 4)):
            text = story if j < 2 else [*story[:-1], story[-1] + " Updated with a correction."]
            html = _page(site, f"Story {i}", text)
            if i % 10 == 7 and j == 0:
                html = html.replace("<main>", "<main>" + "<div>" * _NESTED, 1).replace(
                    "</main>", "</div>" * _NESTED + "</main>", 1)
            pages.append(orjson.dumps({"url": f"https://{site}.example/{i}", "content": html}))
    return pages


def warm_up_kernels(config: DetectorConfig) -> float:
    """Judge `warm_up_pages` as the app judges a record, on a temporary store; returns the seconds taken."""
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="streamdedup-warm-up-") as folder, Detector(config, folder) as detector:
        keeper = JournalKeeper(detector, "warm-up", 0)
        for offset, value in enumerate(warm_up_pages()):
            keeper.outputs(offset, None, value, 1_700_000_000_000 + offset * 60_000)
        # each method's comparison of stored signatures, which only some pairs of pages ask (A12's: a page
        # that shares its longest sentences with another, and that neither exact nor MinHash decided)
        text = " ".join(_story(1))
        signatures = fingerprint_text(text, None, detector.methods, 0)
        for method in detector.methods:
            signature = signatures[method.name]
            if signature is not None:
                method.similarities(signature, [method.encode(signature)] * 2)
    return time.monotonic() - started
