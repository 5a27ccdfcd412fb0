"""`--extractor fast`: resiliparse steered by trafilatura's container and discard vocabulary."""

import pytest

from streamdedup.clean.extract import extract_main_text, extract_resiliparse
from streamdedup.clean.fast_extract import extract_fast

ARTICLE = [f"Paragraph {i} of the story tells what the council decided about the harbour bridge and why "
           f"the vote took so long, with quotes from both sides of the debate number {i}." for i in range(6)]
COMMENTS = ["Trockenduscher wrote: thank you, a very good summary of the whole debate so far.",
            "Oydenos wrote: are there any numbers on how large that group really is?"]
RELATED = ["Another story about the port authority and its budget for next year",
           "A third story about the football club and its new stadium plans"]


def blog_page(wrapper_class: str = "content has-sidebar", post_class: str = "post-body entry-content") -> str:
    paragraphs = "".join(f"<p>{p}</p>" for p in ARTICLE)
    comments = "".join(f'<li class="comment"><p>{c}</p></li>' for c in COMMENTS)
    related = "".join(f'<li><a href="/x{i}">{r}</a></li>' for i, r in enumerate(RELATED))
    return (f'<html><body><div class="{wrapper_class}"><div class="widget Blog">'
            f'<div class="{post_class}"><h1>The harbour bridge vote</h1>{paragraphs}'
            f'<div class="share-buttons">Share on Facebook Share on X Share by email</div></div>'
            f'<section id="comments"><h3>2 comments</h3><ol class="commentlist">{comments}</ol></section>'
            f'<div class="related-posts"><ul>{related}</ul></div></div>'
            f'<div class="sidebar"><p>About the author: a long biography of the author of this blog.</p></div>'
            f'</div></body></html>')


def test_comments_share_bars_and_related_stories_are_left_out():
    text = extract_fast(blog_page())
    assert all(p in text for p in ARTICLE)
    assert not any(c in text for c in COMMENTS) and not any(r in text for r in RELATED)
    assert "Share on Facebook" not in text and "biography" not in text


def test_resiliparse_alone_keeps_the_comment_thread():
    """Why the steering exists: the plain main-content pass keeps the comments."""
    assert any(c in extract_resiliparse(blog_page()) for c in COMMENTS)


def test_a_wrapper_named_like_boilerplate_is_not_dropped_with_the_article():
    """'widget' and 'sidebar' name blocks, but also the wrappers some themes put around the post."""
    for wrapper in ("has-sidebar", "layout social-layout", "widget-area"):
        text = extract_fast(blog_page(wrapper, post_class="txt"))  # no container: the whole page is the scope
        assert all(p in text for p in ARTICLE), wrapper


def test_a_page_without_containers_or_body_still_gives_its_text():
    assert "Just a line of text" in extract_fast("<p>Just a line of text, no article markup at all.</p>")
    assert extract_fast("") == ""


def test_fast_runs_in_the_killable_helper_like_resiliparse():
    assert all(p in extract_main_text(blog_page(), "fast", max_seconds=10) for p in ARTICLE)


def test_a_container_that_holds_a_teaser_does_not_lose_the_page_text():
    """trafilatura's container selectors can hit the wrong element (a teaser box named
    'entry-content'); an extraction implausibly small against resiliparse's own is replaced by it."""
    paragraphs = "".join(f"<p>{p} ({n})</p>" for n in range(3) for p in ARTICLE)  # ~3,000 characters
    html = (f'<html><body><div class="entry-content"><p>A teaser of another story, long enough to count as a container, '
            f'{"with some more words " * 12}.</p></div><div class="txt"><h1>The vote</h1>{paragraphs}</div></body></html>')
    text = extract_fast(html)
    assert all(p in text for p in ARTICLE)


def _count_trafilatura_calls(monkeypatch) -> list[str]:
    from streamdedup.clean import trafilatura_extract

    calls: list[str] = []
    real = trafilatura_extract.extract_trafilatura

    def spy(html: str, *args) -> str:
        calls.append(html)
        return real(html, *args)

    monkeypatch.setattr(trafilatura_extract, "extract_trafilatura", spy)
    return calls


def test_an_article_page_is_read_without_trafilatura(monkeypatch):
    calls = _count_trafilatura_calls(monkeypatch)
    long_page = blog_page().replace("</h1>", "</h1>" + "".join(f"<p>{p} (more)</p>" for p in ARTICLE * 3))
    assert all(p in extract_fast(long_page) for p in ARTICLE) and calls == []


def test_where_the_steered_text_is_implausibly_small_trafilatura_reads_the_page(monkeypatch):
    """A short post beside a long listing: what the container holds is under trafilatura's own
    bounds for an extraction that covers little of the page, so the page is trafilatura's."""
    from streamdedup.clean.extract import extract_trafilatura

    calls = _count_trafilatura_calls(monkeypatch)
    listing = "".join(f"<div class='teaser'><h2>Post {n}</h2><p>{p} {p} {p}</p></div>" for n, p in enumerate(ARTICLE))
    html = (f"<html><body><main><article class='entry-content'><h1>Short</h1><p>{COMMENTS[0]} {COMMENTS[1]} {COMMENTS[0]} {COMMENTS[1]}</p></article>"
            f"<section class='recent'>{listing}</section></main></body></html>")
    assert extract_fast(html) == extract_trafilatura(html) and len(calls) == 1  # the test's own call is not spied


def test_where_trafilatura_rescues_a_short_story_it_does_not_read_the_teaser_cards_beside_it(monkeypatch):
    """The teaser-card rule holds in the rescue too: a brief beside a "latest posts" listing of
    cards (a link holding a heading) is under the rescue bounds, and trafilatura alone keeps the
    cards with the brief (web dev: a light edit in chemietechnik.de's template missed its story, and
    two cold-start briefs there matched on the listing)."""
    from streamdedup.clean.extract import extract_trafilatura

    calls = _count_trafilatura_calls(monkeypatch)
    cards = "".join(f'<a class="postlist-item media" href="/markt/{n}"><h3>{r}</h3><p>Teaser text of story {n}: {p}'
                    f'<span>Read more...</span></p></a>' for n, (r, p) in enumerate(zip(RELATED * 3, ARTICLE, strict=True)))
    html = (f"<html><body><main><div class='story'><h1>Short</h1><p>{COMMENTS[0]} {COMMENTS[1]}</p></div>"
            f"<div class='post-list'><h2>Latest posts</h2>{cards}</div></main></body></html>")
    assert "Teaser text" in extract_trafilatura(html)  # why: trafilatura alone keeps the cards
    text = extract_fast(html)
    assert len(calls) == 1 and COMMENTS[0] in text
    assert "Teaser text" not in text and not any(r in text for r in RELATED)


def test_the_rescue_leaves_out_the_teaser_cards_with_another_trafilatura_too(monkeypatch):
    """Where trafilatura's steps cannot be called one by one (another version), the rescue prunes
    the page's HTML before its public API reads it: the same cards are left out."""
    from streamdedup.clean import trafilatura_once
    from streamdedup.clean.extract import extract_trafilatura
    from streamdedup.clean.fast_extract import TEASER_CARDS_XPATH

    cards = "".join(f'<a href="/markt/{n}"><h3>{r}</h3><p>Teaser text of story {n}: {p}</p></a>'
                    for n, (r, p) in enumerate(zip(RELATED * 3, ARTICLE, strict=True)))
    html = (f"<html><body><main><div class='story'><h1>Short</h1><p>{COMMENTS[0]} {COMMENTS[1]}</p></div>"
            f"<div class='post-list'><h2>Latest posts</h2>{cards}</div></main></body></html>")
    monkeypatch.setattr(trafilatura_once, "STEPS_AVAILABLE", False)
    assert "Teaser text" in extract_trafilatura(html)
    text = extract_trafilatura(html, None, [TEASER_CARDS_XPATH])
    assert COMMENTS[0] in text and "Teaser text" not in text
    declared = '<?xml version="1.0" encoding="utf-8"?>' + html  # lxml refuses such a str: read as it is
    assert COMMENTS[0] in extract_trafilatura(declared, None, [TEASER_CARDS_XPATH])
    assert extract_trafilatura("", None, [TEASER_CARDS_XPATH]) == ""


def test_one_call_gives_the_main_and_the_visible_text_in_the_helper_and_in_process():
    """The template model needs a page's visible text beside its main text: one parse and one round
    trip to the extraction helper give both, equal to what each extractor gives alone."""
    from streamdedup.clean.extract import Texts, extract_all_text, extract_texts

    html = blog_page()
    for extractor in ("fast", "resiliparse", "trafilatura"):
        alone = extract_main_text(html, extractor)
        assert extract_texts(html, extractor, max_seconds=10, visible=True) == Texts(alone, extract_all_text(html))
        assert extract_texts(html, extractor, max_seconds=10) == Texts(alone)


def test_where_trafilatura_rescues_a_page_the_article_elements_own_text_comes_with_it():
    """A brief whose article element holds a few lines, beside a long author box: the rescue's text
    is trafilatura's, and the element's own text comes back beside it (`Texts.steered`), in process
    and through the helper (its answer carries three texts); a page read without a rescue has none."""
    from streamdedup.clean.extract import extract_texts
    from streamdedup.clean.fast_extract import fast_texts

    listing = "".join(f"<div class='teaser'><h2>Post {n}</h2><p>{p} {p} {p}</p></div>" for n, p in enumerate(ARTICLE))
    brief = f"{COMMENTS[0]} {COMMENTS[1]} {COMMENTS[0]} {COMMENTS[1]}"
    html = (f"<html><body><main><article class='entry-content'><h1>Short</h1><p>{brief}</p></article>"
            f"<section class='recent'>{listing}</section></main></body></html>")
    texts = fast_texts(html, visible=False)
    assert texts.steered == f"Short\n\n{brief}" and texts.main != texts.steered
    assert extract_texts(html, "fast", max_seconds=10) == texts
    long_page = blog_page().replace("</h1>", "</h1>" + "".join(f"<p>{p} (more)</p>" for p in ARTICLE * 3))
    assert fast_texts(long_page, visible=False).steered == ""


def test_an_elementor_page_is_read_by_the_steered_pass_not_dropped_as_a_widget(monkeypatch):
    """Elementor wraps each text block in 'elementor-widget-container': the 'widget' discard token
    dropped the whole article, and every such page went to trafilatura (or lost its text)."""
    calls = _count_trafilatura_calls(monkeypatch)
    blocks = "".join(f'<div class="elementor-element elementor-widget elementor-widget-text-editor">'
                     f'<div class="elementor-widget-container"><p>{p} ({n})</p></div></div>'
                     for n in range(4) for p in ARTICLE)
    html = (f'<html><body><main><article class="post"><div class="elementor elementor-123">{blocks}</div></article>'
            f'<aside class="widget-area"><div class="widget widget_recent_entries">{" ".join(RELATED)}</div></aside>'
            f'</main></body></html>')
    text = extract_fast(html)
    assert all(p in text for p in ARTICLE) and calls == []
    assert not any(r in text for r in RELATED)


def test_the_first_container_is_the_article_even_when_listing_cards_below_it_are_longer():
    """trafilatura's container selectors take a selector's first match; the longest match is as
    often a card of the listing under the story (article.card, each holding several teasers)."""
    story = "".join(f"<p>{p}</p>" for p in ARTICLE)
    card = "".join(f"<h3>{r}</h3><p>{r} and more about it, read the whole story on the next page.</p>" for r in RELATED * 4)
    html = (f"<html><body><main><article class='paper story-body'><h1>The vote</h1>{story}</article>"
            f"<article class='card'>{card}</article><article class='card'>{card}</article></main></body></html>")
    text = extract_fast(html)
    assert all(p in text for p in ARTICLE) and RELATED[0] not in text


def test_an_article_written_as_blocks_of_one_kind_is_read_whole():
    """One <article> per section (a charter's articles, a live blog's entries): the first block and
    the blocks of its kind beside it, not the first alone; a neighbour of another class stays out."""
    first, second = " ".join(ARTICLE[:3]), " ".join(ARTICLE[3:])
    blocks = "".join(f"<article class='section'><p>{p} (a)</p><p>{p} (b)</p></article>" for p in (first, second))
    other = f"<article class='promo'><p>{' '.join(RELATED * 3)}</p></article>"
    html = f"<html><body><main><h1>The vote</h1>{blocks}{other}</main></body></html>"
    text = extract_fast(html)
    assert all(p in text for p in ARTICLE) and RELATED[0] not in text



def test_a_short_block_of_the_articles_kind_beside_the_long_one_is_read_with_it():
    """A charter's page of two articles (the declaration's, in the multilingual set): the first
    <article> is under MIN_CONTAINER_CHARS, the second over; both are the article, before or after
    the long one. A short card of the same kind away from the run (another element between) stays out."""
    short = "Article 15. Everyone has the right to a nationality."
    long = " ".join(ARTICLE[:3])
    html = (f"<html><body><main><h1>The declaration</h1><article class='clause'><p>{short}</p></article>"
            f"<article class='clause'><p>{long}</p></article><article class='clause'><p>Article 17. Short.</p>"
            f"</article><div class='ad-slot'>Advertisement</div><article class='clause'><p>{RELATED[0]}</p></article>"
            f"</main></body></html>")
    text = extract_fast(html)
    assert short in text and long in text and "Article 17. Short." in text
    assert RELATED[0] not in text

# Elements trafilatura deletes before its container selectors run, each holding an <article> of
# over 250 characters (so it counts as a container) ahead of the story: (the wrapper, its text).
_NAV_MENU = ("<nav class='ribbon'><ol><li><article class='story theme-summary'><h2>Elsewhere</h2>{}</article></li></ol></nav>",
             RELATED)  # its tree cleaning deletes <nav>, <aside>, <footer>...: a news site's flyout of teasers
_READER_COMMENT = ("<div class='sticky'><article id='div-comment-312' class='comment-body'>{}</article></div>",
                   COMMENTS)  # its comment sections go first too, with comments off


@pytest.mark.parametrize(("wrapper", "lines"), [_NAV_MENU, _READER_COMMENT], ids=["nav-menu", "reader-comment"])
def test_an_article_inside_what_trafilatura_deletes_first_is_not_the_container(monkeypatch, wrapper, lines):
    """Taken for the article, such a block was too small for the page, so trafilatura had to
    read it."""
    calls = _count_trafilatura_calls(monkeypatch)
    before = wrapper.format("".join(f"<p>{line} And a little more on it.</p>" for line in lines * 2))
    paragraphs = "".join(f"<p>{p} ({n})</p>" for n in range(3) for p in ARTICLE)
    html = (f"<html><body>{before}<main><div class='main-content'><h1>The vote</h1>{paragraphs}</div></main>"
            f"</body></html>")
    text = extract_fast(html)
    assert all(p in text for p in ARTICLE) and lines[1] not in text
    assert calls == []  # the steered pass read the story


def test_a_listing_of_teaser_cards_in_the_container_is_left_out():
    """A link that holds a heading is a card of a listing ("latest posts") whose class names say
    nothing (web dev: a chemietechnik.de template's "postlist-item media" cards followed every
    story inside <main>); the article's own title, a link inside its heading, stays."""
    paragraphs = "".join(f"<p>{p}</p>" for p in ARTICLE)
    cards = "".join(f'<a class="postlist-item media" href="/markt/{i}"><h3>{r}</h3><p>Teaser text of story {i} '
                    f'says what happened at the plant this week and more.<span>Read more...</span></p></a>'
                    for i, r in enumerate(RELATED))
    page = (f'<html><body><main><h1><a href="/story">The harbour bridge vote</a></h1>{paragraphs}'
            f'<div class="post-list"><h2>Latest posts</h2>{cards}</div></main></body></html>')
    text = extract_fast(page)
    assert "The harbour bridge vote" in text and all(p in text for p in ARTICLE)
    assert not any(r in text for r in RELATED) and "Teaser text" not in text


def test_a_brief_whose_page_holds_nothing_else_is_read_without_trafilatura(monkeypatch):
    """A brief in its container, the rest of the page a menu, a sidebar and a footer: the container
    covers little of the visible text, but resiliparse's pass over the whole page finds the same
    text, so it stands without trafilatura's rescue (and is its own article element's text)."""
    from streamdedup.clean.fast_extract import fast_texts

    calls = _count_trafilatura_calls(monkeypatch)
    brief = f"{COMMENTS[0]} {COMMENTS[1]} {COMMENTS[0]} {COMMENTS[1]}"
    menu = "".join(f'<li><a href="/s{n}">{r} section {n}</a></li>' for n, r in enumerate(RELATED * 12))
    about = "".join(f"<p>{p}</p>" for p in ARTICLE)
    html = (f"<html><body><nav><ul>{menu}</ul></nav><div class='sidebar'>{about}</div>"
            f"<article class='entry-content'><h1>Short</h1><p>{brief}</p></article>"
            f"<footer>{about}{about}</footer></body></html>")
    texts = fast_texts(html, visible=False)
    assert calls == [] and texts.main == f"Short\n\n{brief}" == texts.steered


def _containers_in_one_query(body):
    """`fast_extract._containers` as it was: each group's query with `_OUTSIDE_CLEANED` inside it."""
    from streamdedup.clean import fast_extract as fe

    for selector in fe._CONTAINERS:
        query = f"{fe._CONTAINER_ELEMENT}:is({selector}){fe._OUTSIDE_CLEANED}"
        matches = [node for node in body.query_selector_all(query).values() if fe._outside_figure(node)]
        for index, first in enumerate(matches):
            if len(first.text) >= fe.MIN_CONTAINER_CHARS:
                kind = (first.tag, first.getattr("class"))
                return fe.blocks_beside(matches, index, lambda node, kind=kind: (node.tag, node.getattr("class")) == kind)
    return []


def test_the_container_search_finds_what_one_filtered_query_per_group_finds():
    """`_OUTSIDE_CLEANED` tested on the matches that count, not in each query: the same elements."""
    import random

    from resiliparse.parse.html import HTMLTree

    from streamdedup.clean.fast_extract import _containers

    rng = random.Random(60)
    opens = ['<div class="entry-content">', '<article>', '<div id="content">', '<main>', '<div role="main">',
             '<section class="post">', '<div itemprop="articleBody">', '<span class="entry">', '<nav>', '<aside>',
             '<footer>', '<div id="comments">', '<div class="comment-body">', '<figure>', '<div class="story-body">',
             '<svg>', '<div class="Article-Content">', '<p>']

    def element(depth: int) -> str:
        tag = rng.choice(opens)
        name = tag[1:].split(">")[0].split()[0]
        inner = "".join(element(depth + 1) if depth < 4 and rng.random() < 0.6 else
                        f"text {rng.randrange(999)} " * rng.choice((3, 30, 80)) for _ in range(rng.randint(1, 3)))
        if name == "figure" and rng.random() < 0.5:
            inner += "<table><tr><td>cell</td></tr></table>"
        return f"{tag}{inner}</{name}>"

    for _ in range(400):
        body = HTMLTree.parse(f"<html><body>{''.join(element(0) for _ in range(rng.randint(1, 4)))}</body></html>").body
        assert _containers(body) == _containers_in_one_query(body)
