"""Extraction learned per site in the detector: the same pages in the same order give the same
verdicts and the same reads however batched, across a restart, and through a redesign."""

from collections import Counter
from dataclasses import replace

from streamdedup.config import DetectorConfig
from streamdedup.detector import Detector
from streamdedup.testing import make_article, raw_records, wrap_in_template


def _redesigned(paragraphs: list[str]) -> str:
    body = "".join(f"<p>{p}</p>" for p in paragraphs)
    return ("<html><body><div class='top-bar'><a href='/'>a.example home</a></div>"
            f"<div class='layout'><div class='post-content'><h1>Story</h1>{body}</div></div></body></html>")


def _pages() -> list[dict[str, str]]:
    """Site a: 12 stories, a re-crawl, a redesign, 10 more stories and a re-crawl; site b beside it."""
    pages = []
    for n in range(24):
        seed = n if n != 7 else 2  # story 2 crawled again at another time, same URL
        html = wrap_in_template(make_article(seed), "a.example") if n < 13 else _redesigned(make_article(seed))
        if n == 20:  # a re-crawl after the redesign
            seed, html = 15, _redesigned(make_article(15))
        pages.append({"id": f"a{n}", "url": f"https://a.example/story/{seed}", "content": html})
        if n % 4 == 0:
            pages.append({"id": f"b{n}", "url": f"https://b.example/p/{n}",
                          "content": wrap_in_template(make_article(1000 + n), "b.example")})
    return pages


def _run(state, records, config):
    with Detector(config, state) as detector:
        outcomes = [outcome.dedup for outcome in detector.run(records)]
        return outcomes, Counter(detector.extraction())


def test_verdicts_and_reads_do_not_depend_on_batching_nor_a_restart(tmp_path):
    records = raw_records(_pages())
    config = replace(DetectorConfig(), prepare_threads=1)
    runs = {size: _run(tmp_path / f"b{size}", records, replace(config, batch_size=size)) for size in (1, 256)}
    first, reads = _run(tmp_path / "restart", records[:11], replace(config, batch_size=4))
    second, more = _run(tmp_path / "restart", records[11:], replace(config, batch_size=4))
    runs["restart"] = (first + second, reads + more)
    runs["threads"] = _run(tmp_path / "threads", records, replace(config, batch_size=8, prepare_threads=2))
    outcomes, reads = runs[1]
    for name, run in runs.items():
        assert run == (outcomes, reads), name
    assert reads["relearned"] == 1 and reads["learned"] >= 12 and reads["fallback"] == 3
    assert sum(reads.values()) - reads["relearned"] == len(records)
    assert [o["status"] for o in outcomes].count("duplicate") == 2  # both re-crawls found, nothing else
    with Detector(replace(config, learned_extraction=False), tmp_path / "off") as detector:
        assert [o.dedup["status"] for o in detector.run(records)] == [o["status"] for o in outcomes]
        assert detector.extraction()["learned"] == 0


def test_a_store_without_layouts_opens_and_its_sites_learn_one(tmp_path):
    """A store of 0.3.0 has template records and no layout records: it opens, its sites learn one."""
    records = raw_records(_pages())
    config = replace(DetectorConfig(), prepare_threads=1)
    before, reads = _run(tmp_path / "s", records[:8], replace(config, learned_extraction=False))
    assert sum(reads.values()) == 0
    after, reads = _run(tmp_path / "s", records[8:], config)
    assert reads["learned"] >= 8 and [o["status"] for o in before + after].count("duplicate") == 2


def test_a_listing_of_many_matches_of_the_learned_container_is_judged_not_timed_out(tmp_path):
    """A site's articles live in `<article class="post">`; a listing page of 2,000 teasers holds 2,000
    such elements. Read item by item, resiliparse's node list rebuilt itself at every item (the
    square of the matches: ~60 s of CPU), past the extraction helper's limit: the page was rejected
    `timeout`. Read whole, the page is judged."""
    def story(n: int) -> str:
        body = "".join(f"<p>{p}</p>" for p in make_article(300 + n))
        return (f"<html><body><nav><a href='/'>c.example home</a></nav><main><article class='post'>"
                f"<h1>Story {n}</h1>{body}</article></main><footer>(c) c.example</footer></body></html>")

    teasers = "".join(f"<article class='post'><p>Teaser {i} of the listing, read more</p></article>"
                      for i in range(2000))
    listing = f"<html><body><nav><a href='/'>c.example home</a></nav><main>{teasers}</main></body></html>"
    pages = [{"id": f"c{n}", "url": f"https://c.example/story/{n}", "content": story(n)} for n in range(5)]
    pages.append({"id": "listing", "url": "https://c.example/all", "content": listing})
    outcomes, reads = _run(tmp_path, raw_records(pages), replace(DetectorConfig(), prepare_threads=1))
    assert reads["learned"] >= 1  # the site's container was learned and read from
    assert len(outcomes) == len(pages) and outcomes[-1].get("status") == "unique", outcomes[-1]
    assert outcomes[-1]["id"] == "listing"
