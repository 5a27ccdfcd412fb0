"""The template model under attack and in odd sites (issue 56): no single other page of a domain
can make a real article `template_only`, a host's boilerplate is learned on its own host however
many pages the domain's other hosts have, and pages quoting a long story before the site's own
copy do not get it rejected."""

from __future__ import annotations

import random

from conftest import page

from streamdedup.config import STRICT_SAME_SITE_POLICY, DetectorConfig
from streamdedup.detector import Detector
from streamdedup.testing import (
    headlined_brief,
    make_article,
    make_words,
    raw_records,
    run_records,
    wrap_in_template,
)


def html_page(url: str, main: list[str], aside: list[str], hour: int) -> dict:
    body = "".join(f"<p>{p}</p>" for p in main)
    side = "".join(f"<li>{p}</li>" for p in aside)
    html = (f"<html><head><title>Page {hour}</title></head><body><nav><a href='/'>Home</a></nav>"
            f"<article>{body}</article><aside><ul>{side}</ul></aside><footer>(c) the paper</footer></body></html>")
    return page(url, html, f"2024-03-01T{hour:02d}:00:00Z", content_type="text/html")


def test_one_earlier_page_showing_a_short_articles_text_does_not_reject_it(tmp_path):
    """The site's listing page (fetched first) or one forum page shows a 40-word brief; the brief's
    own page shows it as its main text, with a byline and related links never seen before. Before:
    `template_only` ("missed content") on one earlier page, in 10 of 10 briefs. Under the stricter
    own-site policy: with the one policy the earlier page holds all of the brief's text, and the
    brief is its duplicate (docs/limitations.md)."""
    for n, first in enumerate(("https://www.brief.example/", "https://forum.brief.example/t/1")):
        statuses = []
        for i in range(3):
            brief = " ".join(make_words(random.Random(1000 * n + i), 40))
            teasers = [" ".join(make_words(random.Random(50 + 10 * i + k), 12)) for k in range(3)]
            byline = [f"By {' '.join(make_words(random.Random(80 + i), 14))}"]
            pages = [html_page(first, [brief, *teasers], [], 0),
                     html_page(f"https://www.brief.example/news/{i}", [brief], byline, 1)]
            outcomes = run_records(pages, tmp_path / f"{n}-{i}", DetectorConfig(same_site_policy=STRICT_SAME_SITE_POLICY))
            statuses.append(outcomes[1].status)
        assert statuses == ["unique"] * 3, (first, [o.dedup for o in outcomes])


NEWS = [" ".join(make_words(random.Random(300 + i), 14)) for i in range(5)]  # the news host's template
FORUM = [" ".join(make_words(random.Random(400 + i), 14)) for i in range(5)]  # the forum's


def test_a_small_hosts_template_is_learned_beside_a_host_with_three_times_its_pages(tmp_path):
    """A forum with three pages for each of the news host's: the news template is on a quarter of
    the domain's pages, under `min_share`, so short news pages matched each other on it. Keyed by
    host, the news host's model is its own."""
    pages, hour = [], 0
    for i in range(16):
        for k in range(3):
            body = " ".join(make_words(random.Random(5000 + 3 * i + k), 30))
            pages.append(page(f"https://forum.mixed.example/t/{i}-{k}", "\n".join([*FORUM[:2], body, *FORUM[2:]]),
                              f"2024-03-01T{hour // 60:02d}:{hour % 60:02d}:00Z", content_type="text/plain"))
            hour += 1
        body = " ".join(make_words(random.Random(6000 + i), 24))
        pages.append(page(f"https://news.mixed.example/a/{i}", "\n".join([*NEWS[:2], body, *NEWS[2:]]),
                          f"2024-03-01T{hour // 60:02d}:{hour % 60:02d}:00Z", content_type="text/plain"))
        hour += 1
    config = DetectorConfig(same_site_policy=DetectorConfig().policy)  # one policy for every candidate
    outcomes = run_records(pages, tmp_path, config)
    news = [o for o, p in zip(outcomes, pages, strict=True) if "news." in p["url"]]
    assert [o.status for o in news[8:]] == ["unique"] * 8, [o.dedup for o in news[8:]]


def test_pages_quoting_a_long_story_before_the_sites_own_copy_do_not_reject_it(tmp_path):
    """10 articles of a site, then 6 pages quoting a story in full with a line of their own (over
    0.43 times the site's pages: the story's lines are on 0.3 of them), then the site's own copy of
    the story, its re-crawl and its print page. Before: all three `template_only`."""
    site = "quoted.example"
    pages = [page(f"https://{site}/a/{i}", wrap_in_template(make_article(700 + i, 4, 4), site), f"2024-03-01T{i:02d}:00:00Z")
             for i in range(10)]
    story = make_article(42, 4, 4)
    pages += [page(f"https://{site}/forum/{k}", wrap_in_template([*story, " ".join(make_words(random.Random(k), 20))],
                                                                 site), f"2024-03-01T{10 + k:02d}:00:00Z")
              for k in range(6)]
    own = wrap_in_template(story, site)
    pages += [page(f"https://{site}/story", own, "2024-03-01T17:00:00Z"),
              page(f"https://{site}/story?ref=rss", own, "2024-03-01T18:00:00Z"),
              page(f"https://{site}/print/story", "<html><body><h1>Story</h1>" + "".join(f"<p>{p}</p>" for p in story)
                   + "</body></html>", "2024-03-01T19:00:00Z")]
    outcomes = run_records(pages, tmp_path)
    assert [o.status for o in outcomes[-3:]] != ["rejected"] * 3
    assert all(o.dedup.get("reason") != "template_only" for o in outcomes[-3:]), [o.dedup for o in outcomes[-3:]]
    assert outcomes[-2].status == "duplicate"  # the re-crawl joins the site's copy (or what it joined)


def test_the_eval_report_measures_the_pages_an_attacker_needs():
    """`streamdedup eval`'s attack measurement (evaluate/attack.py): one crafted page rejected a
    short article before (1 in every case; 9 for a long one); now it takes two on its host, none
    on another host of its domain, and no number up to 40 rejects a long article."""
    from streamdedup.evaluate.attack import attack_pages_needed

    rows = {row["case"]: row for row in attack_pages_needed()}
    assert all(row["reject"] is None or row["reject"] >= 2 for row in rows.values()), rows
    assert rows["short article, known host, crafted pages on another host of its domain"]["hide_or_reject"] is None
    assert rows["long article, known host, crafted pages on its host"]["hide_or_reject"] is None


_NEWSLETTER = ("Subscribe to the morning briefing from the paper: the day's stories, our reporters' picks and the "
               "puzzles, in your inbox before seven, free for readers.")


def _real_article(seed: int, site: str, box: str) -> str:
    """The host's article, with a `div.summary` in it: its lead paragraph, or a newsletter box every article shows."""
    paragraphs = make_article(seed)
    html = wrap_in_template(paragraphs, site)
    if box == "lead":
        return html.replace(f"<p>{paragraphs[0]}</p>", f"<div class='summary'><p>{paragraphs[0]}</p></div>")
    return html.replace("<h1>Story</h1>", f"<h1>Story</h1><div class='summary'><p>{_NEWSLETTER}</p></div>")


def _crafted_page(i: int) -> str:
    """A user's page on the host: its text in a `div.summary` beside 300 links (no container `fast` names:
    trafilatura rescues it from the div: 59 per mille of the page)."""
    text = "".join(f"<p>{p}</p>" for p in make_article(900 + i, 2, 4))
    links = "".join(f"<li><a href='/u/{k}'>{' '.join(make_words(random.Random(k), 6))}</a></li>" for k in range(300))
    return f"<html><head><title>User page {i}</title></head><body><ul>{links}</ul><div class='summary'>{text}</div></body></html>"


def test_crafted_pages_on_the_host_do_not_teach_it_to_read_its_articles_from_a_box(tmp_path):
    """Three pages a user publishes on a news host, rescued from a `div.summary` of 59 per mille
    of each, warmed the host's learned layout on that box with a floor of 29. Before: the
    host's articles were read from the box of that name they hold: the lead (444 of 3,371
    characters), or a newsletter box every article shows (6 of 8 articles `template_only`), and
    the box held on every article, so the host never relearned. Now a learned read below `fast`'s
    own bound stands only where `fast` would rescue the page too (the site relearns after 3)."""
    from streamdedup.clean.fast_extract import fast_texts
    from streamdedup.clean.learned_layout import SiteLayout, learned_texts

    site = "news.example"
    layout = SiteLayout()
    for i in range(3):
        layout.observe(learned_texts(_crafted_page(i), layout.request(), visible=True).layout)
    assert layout.warm and "summary" in layout.selector  # the attack warms the host (it still can)
    for seed in range(3):
        html = _real_article(seed, site, "lead")
        assert learned_texts(html, layout.request(), visible=True).main == fast_texts(html, visible=False).main
    pages = [page(f"https://{site}/users/mallory/{i}", _crafted_page(i), f"2024-03-01T00:{i:02d}:00Z",
                  content_type="text/html") for i in range(3)]
    pages += [page(f"https://{site}/news/{seed}", _real_article(seed, site, "box"), f"2024-03-01T01:{seed:02d}:00Z",
                   content_type="text/html") for seed in range(8)]
    outcomes = run_records(pages, tmp_path)
    assert [o.status for o in outcomes[3:]] == ["unique"] * 8, [o.dedup for o in outcomes[3:]]


def _crafted_page_with_a_decoy(i: int) -> str:
    """A user's page on the host: a decoy `div.article-body` of 45 words (`fast`'s container, covering
    little), its text in a `div.summary` that trafilatura rescues: four fifths of the page."""
    decoy = " ".join(make_words(random.Random(i), 45))
    text = "".join(f"<p>{p}</p>" for p in make_article(900 + i, 3, 4))
    return (f"<html><head><title>User page {i}</title></head><body><div class='article-body'><p>{decoy}</p></div>"
            f"<div class='summary'>{text}</div></body></html>")


def test_crafted_pages_on_the_host_do_not_cut_its_short_articles_to_their_lead():
    """As above, with the box four fifths of the crafted pages: the host's short articles (2 or 3
    paragraphs, the first in its `div.summary` lead box, a fifth of the page or more) were read
    from the lead, 33-53% of their text, on 8 of 12 articles, and the lead held, so the host did
    not relearn. Now a learned read under 3,000 characters stands only if `fast`'s own container
    holds at most 1.5 times its text, or covers little too."""
    from streamdedup.clean.fast_extract import fast_texts
    from streamdedup.clean.learned_layout import SiteLayout, learned_texts

    for paragraphs in (2, 3):
        layout = SiteLayout()
        for i in range(3):
            layout.observe(learned_texts(_crafted_page_with_a_decoy(i), layout.request(), visible=True).layout)
        if not (layout.warm and "summary" in layout.selector):
            # `fast` no longer takes the crafted pages' box (fast@4 reads them from the decoy): the
            # host as if another crafting had taught it the box at the crafted pages' share
            layout = SiteLayout(selector='div[class~="summary"]', share=813, streak=3)
        assert layout.warm and "summary" in layout.selector and layout.share >= 200
        for seed in range(6):
            lead, *rest = make_article(seed, paragraphs, 4)
            html = wrap_in_template([lead, *rest], "news.example").replace(
                f"<p>{lead}</p>", f"<div class='summary'><p>{lead}</p></div>")
            texts = learned_texts(html, layout.request(), visible=True)
            layout.observe(texts.layout)
            assert texts.main == fast_texts(html, visible=False).main, (paragraphs, seed, texts.layout)


_MORE_LINKS = "".join(f"<li><a href='/more/{k}'>{' '.join(make_words(random.Random(50 + k), 8))}</a></li>"
                      for k in range(40))


def _real_brief(seed: int, site: str) -> str:
    """A brief of the host (one paragraph: `fast` hands it to trafilatura's rescue) under the
    newsletter `div.summary` every page of the host shows."""
    html = wrap_in_template(make_article(seed, 1, 3), site, title=f"Brief {seed}")
    html = html.replace("</aside>", f"<ul>{_MORE_LINKS}</ul></aside>")
    return html.replace(f"<h1>Brief {seed}</h1>", f"<h1>Brief {seed}</h1><div class='summary'><p>{_NEWSLETTER}</p></div>")


def test_crafted_pages_on_the_host_do_not_teach_it_to_read_its_briefs_from_a_box(tmp_path):
    """As above, on a host of briefs (`fast` would rescue them, so the learned container stands in
    for the rescue): a new host (3 crafted pages), and one whose own 10 articles came first (5:
    3 drop its container), or whose articles show the box too. Before: the briefs were read from the
    newsletter box; 6 of 8 `template_only` on the first two, and on the known host the second a
    duplicate of the first (both judged on the box); 8 of 8 on the third. Now a learned read that leaves a page without text of its own is not its text:
    `fast` reads it again, and the host drops the box after 3 such pages; the same however batched."""
    from dataclasses import replace

    from streamdedup.clean.learned_layout import RELEARN_AFTER

    site = "briefs.example"
    for known, box in ((False, False), (True, False), (True, True)):
        own = [page(f"https://{site}/a/{i}", _real_article(700 + i, site, "box") if box else
                    wrap_in_template(make_article(700 + i, 4, 4), site),
                    f"2024-03-01T00:{i:02d}:00Z", content_type="text/html") for i in range(10 if known else 0)]
        crafted = [page(f"https://{site}/users/mallory/{i}", _crafted_page(i), f"2024-03-01T01:{i:02d}:00Z",
                        content_type="text/html") for i in range(5 if known else 3)]
        briefs = [page(f"https://{site}/news/{seed}", _real_brief(seed, site), f"2024-03-01T02:{seed:02d}:00Z",
                       content_type="text/html") for seed in range(8)]
        runs = []
        for batch, threads in ((1, 1), (256, 1), (4, 2)):
            config = replace(DetectorConfig(), batch_size=batch, prepare_threads=threads)
            with Detector(config, tmp_path / f"{known}-{box}-{batch}") as detector:
                outcomes = [o.dedup for o in detector.run(raw_records([*own, *crafted, *briefs]))][-8:]
                runs.append((outcomes, detector.extraction()))
        outcomes, counts = runs[0]
        assert all(run == runs[0] for run in runs), (known, box)
        assert all(o.get("reason") != "template_only" for o in outcomes), (known, outcomes)
        assert [o["status"] for o in outcomes] == ["unique"] * 8, (known, outcomes)  # no brief a duplicate of another
        assert counts["relearned"] >= 1 and counts["fallback"] >= RELEARN_AFTER, (known, counts)


def _discussion_page(title: str, body: str, comments: list[str], attrs: str = "") -> str:
    """A page of the host: its article in `div.article-body`, then a reader discussion box."""
    cards = "".join(f"<div class='c'><b>reader{i}</b><p>{p}</p></div>" for i, p in enumerate(comments))
    return (f"<html><head><title>{title}</title></head><body><header><nav><a href='/world'>world</a> "
            f"<a href='/sport'>sport</a></nav></header><div id='page'><h1>{title}</h1>{body}"
            f"<div class='discussion'{attrs}><h3>Reader discussion</h3>{cards}</div></div>"
            f"<footer><p>Copyright News Example.</p></footer></body></html>")


def test_crafted_pages_on_the_host_do_not_teach_it_to_read_its_articles_from_their_comments(tmp_path):
    """Five pages a user publishes on a news host, each his text in the host's reader discussion box
    marked `role=article` (which `fast` takes), warm the host's learned layout on
    `div.discussion` (the attribute that made `fast` take it is not in the selector). Before: a
    learned read of 3,000 characters or more stood without `fast`'s container search, so the host's
    articles whose comments were that long were read from their comments: an unrelated old story
    pasted there made two real articles its duplicates, in its cluster, and their copies on
    another site were not found. Now a learned read stands only where `fast`'s container is the
    same, or holds it or is inside it (a fallback otherwise), however long the read."""
    from streamdedup.clean.fast_extract import fast_texts
    from streamdedup.clean.learned_layout import SiteLayout, learned_texts

    site, old = "news.example", make_article(500, 6)

    def article(seed: int, comments: list[str]) -> str:
        body = "<div class='article-body'>" + "".join(f"<p>{p}</p>" for p in make_article(seed, 6)) + "</div>"
        return _discussion_page(f"Story {seed}", body, comments)

    crafted = [_discussion_page(f"mallory {k}", "", make_article(700 + k, 4), " role='article'") for k in range(5)]
    layout = SiteLayout()
    for html in [article(100 + s, ["Great piece, thanks."]) for s in range(4)] + crafted:
        layout.observe(learned_texts(html, layout.request(), visible=True).layout)
    assert layout.warm and "discussion" in layout.selector  # the attack warms the host (it still can)
    victim = article(200, old)
    assert len("".join(old)) >= 3000  # a read `fast`'s own bound would have let stand
    assert learned_texts(victim, layout.request(), visible=True).main == fast_texts(victim, visible=False).main

    html = [*(article(100 + s, ["Great piece, thanks."]) for s in range(4)), wrap_in_template(old, "other.example"),
            *crafted, victim, article(203, old), wrap_in_template(make_article(200, 6), "wire.example")]
    urls = [*(f"https://{site}/2024/story-{s}" for s in range(4)), "https://other.example/x",
            *(f"https://{site}/user/mallory/{k}" for k in range(5)), f"https://{site}/2024/victim1",
            f"https://{site}/2024/victim2", "https://wire.example/victim1"]
    pages = [page(url, h, f"2024-03-01T00:{i:02d}:00Z", content_type="text/html")
             for i, (url, h) in enumerate(zip(urls, html, strict=True))]
    outcomes = [o.dedup for o in run_records(pages, tmp_path)]
    assert [o["status"] for o in outcomes[-3:-1]] == ["unique", "unique"], outcomes[-3:-1]
    assert outcomes[-1]["status"] == "duplicate" and outcomes[-1]["duplicate_of"] == outcomes[-3]["id"], outcomes[-1]


def _crafted_headline_box(i: int) -> str:
    """A user's page on the host whose text is in a `div.headerInfo` beside 300 links (rescued from it)."""
    return _crafted_page(i).replace("<div class='summary'>", "<div class='headerInfo'>")


def test_a_learned_box_holding_a_briefs_headline_does_not_judge_it_without_its_body(tmp_path):
    """A box that holds a brief's headline (new on every page) and a standfirst every page shows,
    its body after it: learned (pages on the host taught it, or a headline that is the brief's first
    words did: tests/clean/test_learned_layout.py), the briefs were judged on their headline, and a
    re-fetch of the URL with another body under the same headline was an `exact` duplicate of its
    first fetch (the missed-content test skips the URL's own earlier lines). Now a short learned
    read holding fewer new words than the page shows outside it is not the page's: `fast` reads it
    again, and the host drops the box after 3 such pages."""
    from streamdedup.clean.learned_layout import RELEARN_AFTER

    site = "https://diocese.example"
    crafted = [page(f"{site}/users/mallory/{i}", _crafted_headline_box(i), f"2024-03-01T01:{i:02d}:00Z",
                    content_type="text/html") for i in range(3)]
    briefs = [page(f"{site}/news/{seed}", headlined_brief(seed), f"2024-03-01T02:{seed:02d}:00Z",
                   content_type="text/html") for seed in range(6)]
    first_body = " ".join(make_article(5, 1, 3)).split()
    other = " ".join(first_body[:9] + " ".join(make_article(50, 1, 3)).split())  # the same headline
    refetch = page(f"{site}/news/5", headlined_brief(5, other), "2024-03-05T10:00:00Z", content_type="text/html")
    with Detector(DetectorConfig(), tmp_path) as detector:
        outcomes = [o.dedup for o in detector.run(raw_records([*crafted, *briefs, refetch]))]
        counts = detector.extraction()
    assert [o["status"] for o in outcomes[3:]] == ["unique"] * 7, outcomes[3:]
    assert counts["relearned"] >= 1 and counts["fallback"] >= RELEARN_AFTER - 1, counts
