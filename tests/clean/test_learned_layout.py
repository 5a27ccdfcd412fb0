"""Extraction learned per site (clean/learned_layout.py): a site warms on its container, reads later
pages from it with `fast`'s text, and learns again after a redesign; briefs do not make it relearn."""

from streamdedup.clean.fast_extract import fast_texts
from streamdedup.clean.learned_layout import (
    HELD,
    LOST,
    MISS,
    RELEARN_AFTER,
    WARM_AFTER,
    SiteLayout,
    containers,
    learned_texts,
)
from streamdedup.testing import headlined_brief, make_article, wrap_in_template


def _redesigned(paragraphs: list[str], site: str) -> str:
    """The same site after a redesign: the article in a named div, no <article> any more."""
    body = "".join(f"<p>{p}</p>" for p in paragraphs)
    return (f"<html><body><div class='top-bar'><a href='/'>{site} home</a></div>"
            f"<div class='layout'><div class='post-content'><h1>Story</h1>{body}</div>"
            f"<div class='side-col'><p>Most read on {site} this week and more</p></div></div></body></html>")


def _read(layout: SiteLayout, html: str) -> tuple[str, str]:
    texts = learned_texts(html, layout.request(), visible=True)
    return layout.observe(texts.layout), texts.main


def test_a_site_warms_reads_its_container_and_relearns_after_a_redesign():
    layout, events = SiteLayout(), []
    for seed in range(8):
        html = wrap_in_template(make_article(seed), "news.example")
        event, text = _read(layout, html)
        events.append(event)
        if event == "learned":  # the container `fast` would take: the same text
            assert text == fast_texts(html, visible=False).main
    assert events == ["fast"] * WARM_AFTER + ["learned"] * (8 - WARM_AFTER)
    assert "article" in layout.selector and layout.held == 8 - WARM_AFTER
    events = [_read(layout, _redesigned(make_article(100 + seed), "news.example"))[0] for seed in range(8)]
    # the old container is gone: fallbacks, then the site drops it and warms on the new one
    assert events[:RELEARN_AFTER] == ["fallback"] * (RELEARN_AFTER - 1) + ["relearned"]
    assert events[RELEARN_AFTER:] == ["fast"] * (WARM_AFTER - 1) + ["learned"] * (8 - RELEARN_AFTER - WARM_AFTER + 1)
    assert "post-content" in layout.selector
    assert SiteLayout.decode(layout.encode()) == layout


def test_briefs_and_listings_of_a_warm_site_fall_back_without_dropping_its_container():
    layout = SiteLayout('div[class~="story"]', 400, WARM_AFTER)
    same, other = f"{MISS}60|{layout.selector}", f"{MISS}500|div[class~=\"other\"]"
    # a brief whose container holds little (fast found its text in the same one, or in none it could name)
    for observation in [same, f"{MISS}", same, f"{MISS}"] * 3:
        assert layout.observe(observation) == "fallback"
    assert layout.warm and layout.missed == 0
    assert layout.observe(HELD) == "learned"
    # pages whose text `fast` found elsewhere, or without the container at all, count: a redesign
    assert [layout.observe(o) for o in (other, f"{LOST}", other)] == ["fallback", "fallback", "relearned"]
    assert not layout.warm and layout.selector == 'div[class~="other"]' and layout.streak == 1


_CAPTION = " ".join(["The photograph above shows the harbour at dawn, taken by the agency for this site."] * 4)


def _brief(seed: int, site: str) -> str:
    """A brief of the site: its article element holds a caption, the brief's text is in a div after it."""
    body = "".join(f"<p>{p}</p>" for p in make_article(seed, paragraphs=3, sentences=4))
    page = wrap_in_template([_CAPTION], site, title=f"Brief {seed}")
    return page.replace("</main>", f"</main><div class='brief-body'>{body}</div>")


def test_briefs_warm_the_brief_container_and_are_read_from_it_with_the_rescued_words():
    layout = SiteLayout()
    for seed in range(WARM_AFTER):
        _read(layout, wrap_in_template(make_article(seed), "news.example"))
    events = []
    for seed in range(10, 10 + WARM_AFTER + 2):  # briefs between long articles, as a news site shows them
        html = _brief(seed, "news.example")
        event, text = _read(layout, html)
        events.append(event)
        if event == "brief":  # trafilatura's rescue (what `fast` reads) finds the same words
            assert set(text.split()) == set(fast_texts(html, visible=False).main.split())
        events.append(_read(layout, wrap_in_template(make_article(seed), "news.example"))[0])
    assert events == ["fallback", "learned"] * WARM_AFTER + ["brief", "learned"] * 2
    assert layout.brief == 'div[class~="brief-body"]' and layout.selector == "article"
    assert SiteLayout.decode(layout.encode()) == layout


def _boxed_story(seed: int) -> str:
    """A story under 3,000 characters whose <article> also holds a related-stories box (raw text
    `fast` leaves out), beside a long sidebar: its learned read is held to `fast`'s container search."""
    body = "".join(f"<p>{p}</p>" for p in make_article(seed, paragraphs=3, sentences=3))
    related = "".join(f"<li>Another story of the day, number {n}, with a long enough headline</li>" for n in range(15))
    side = "".join(f"<p>Sidebar note {n} about the site's other sections and offers.</p>" for n in range(10))
    return (f"<html><body><article><h1>Story {seed}</h1>{body}<div id='related'><ul>{related}</ul></div></article>"
            f"<div class='rail'>{side}</div></body></html>")


def test_a_learned_read_that_is_fasts_own_container_is_not_read_twice(monkeypatch):
    """Where `fast`'s container search finds the very elements the learned container read, the text
    stands without a second main-text pass over them (`fast_would_read_it`'s `read`); the same text."""
    from streamdedup.clean import learned_layout

    html = _boxed_story(3)
    expected = fast_texts(html, visible=False).main
    layout = SiteLayout("article", 100, WARM_AFTER)
    passes = []
    real = learned_layout.container_text
    monkeypatch.setattr(learned_layout, "container_text", lambda blocks: passes.append(1) or real(blocks))
    texts = learned_texts(html, layout.request(), visible=True)
    assert texts.layout == HELD and texts.main == expected
    assert len(texts.main) < 3000 and 1.5 * len(texts.main) < len(texts.visible)  # the search ran
    assert len(passes) == 1


def test_a_learned_selector_reads_the_short_blocks_beside_its_long_one():
    """As `fast` does (`blocks_beside`): a later page read by the learned selector keeps a short
    first section of the article, not only the blocks of MIN_CONTAINER_CHARS."""
    from resiliparse.parse.html import HTMLTree

    long = " ".join(make_article(5, paragraphs=3))
    html = (f"<html><body><main><section class='part'><p>A short opening part.</p></section>"
            f"<section class='part'><p>{long}</p></section></main></body></html>")
    found = containers(HTMLTree.parse(html), "section.part")
    assert [" ".join(node.text.split()) for node in found] == ["A short opening part.", " ".join(long.split())]


def test_a_read_that_left_the_page_without_its_own_text_counts_as_a_failure_of_the_container():
    """`SiteLayout.hollow`: a learned read the template model found hollow (own_text.py) fails the
    container read; 3 in a row drop it and the site learns again from what `fast` saw. A brief read
    counts against the learned container only where that was lost (as a brief read does)."""
    box = 'div[class~="summary"]'
    layout = SiteLayout(box, 59, WARM_AFTER, brief=box, brief_share=59, brief_streak=WARM_AFTER)
    assert layout.hollow(HELD, "") == "fallback" and layout.missed == 1
    assert layout.observe(HELD) == "learned" and layout.missed == 0  # not in a row
    assert layout.hollow("brief:miss", "fast:150|article\n150|article") == "fallback"
    assert layout.missed == 0 and layout.brief_missed == 1  # the brief container failed, not the learned one
    events = [layout.hollow(HELD, "fast:150|article\n150|article") for _ in range(RELEARN_AFTER)]
    assert events == ["fallback"] * (RELEARN_AFTER - 1) + ["relearned"]
    assert layout.selector == "article" and layout.streak == 1 and not layout.warm
    assert layout.brief == "article" and not layout.brief_warm  # the box dropped, the rescues teach anew


def test_a_learned_read_holding_the_article_and_a_box_beside_it_does_not_stand():
    """A selector an attacker taught (`div.box`) whose first match holds the article's container and
    whose second, beside it, holds the comments: the read held `fast`'s text and more, so it stood
    (`fast`'s container holds less than 1.5 times it), and the page was judged on its comments too.
    Now every element read must be `fast`'s, hold one of its, or be inside one."""
    from resiliparse.parse.html import HTMLTree

    from streamdedup.clean.learned_layout import container_text, fast_would_read_it
    from streamdedup.clean.page_text import extract_all_text

    article = "".join(f"<p>{p}</p>" for p in make_article(3, 3))
    comments = "".join(f"<p>{p}</p>" for p in make_article(4, 3))
    html = (f"<html><body><div id='page'><div class='box'><h1>T</h1><div class='article-body'>{article}</div></div>"
            f"<div class='box'><h3>Comments</h3>{comments}</div></div></body></html>")
    tree = HTMLTree.parse(html)
    read = containers(tree, 'div[class~="box"]')
    assert len(read) == 2
    assert not fast_would_read_it(container_text(read), tree, lambda: extract_all_text(tree), read)
    assert fast_would_read_it(container_text(read[:1]), tree, lambda: extract_all_text(tree), read[:1])


def test_a_headline_that_is_the_briefs_first_words_does_not_teach_its_box():
    """The rescued text's longest lines were found by their first 40 characters, which a headline
    box holds where the headline is the brief's first words: a real template (katholisch.at) warmed
    on `div.headerInfo` (the headline and a standfirst), and its briefs were judged on their
    headline. Now a line's last 40 characters must be there too: every read holds the body."""
    layout = SiteLayout()
    for seed in range(WARM_AFTER + 3):
        body = " ".join(make_article(seed, 1, 3))
        texts = learned_texts(headlined_brief(seed, body), layout.request(), visible=True)
        layout.observe(texts.layout)
        assert body in texts.main, (seed, texts.layout)
    assert "headerInfo" not in layout.selector
