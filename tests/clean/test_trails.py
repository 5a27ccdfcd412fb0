"""`clean.trails`: a cold host's breadcrumb and rows of links are not the page's text; an article's links are."""

import pytest

from streamdedup.clean.fast_extract import extract_fast
from streamdedup.clean.link_cards import CARD_ATTRIBUTE
from streamdedup.clean.trails import is_trail, link_trails, trails_marked

ARTICLE = [f"Paragraph {i} of the story tells what the council decided about the harbour bridge and why "
           f"the vote took so long, with quotes from both sides of the debate number {i}." for i in range(6)]


def page(inside: str, container: str = "entry-content") -> str:
    """An article in a container of class `container`, with `inside` before its title."""
    paragraphs = "".join(f"<p>{p}</p>" for p in ARTICLE)
    return (f'<html><body><div class="{container}">{inside}<h1>The harbour bridge vote</h1>{paragraphs}</div>'
            "</body></html>")


def parsed(markup: str):
    from resiliparse.parse.html import HTMLTree

    return HTMLTree.parse(markup).body


# breadcrumb trails no class name says (SPIP's "arbo", "ariane", "fil", "path"), in several languages
TRAILS = {
    "arrows, current page in <strong>": '<p class="arbo"><a href="/">Accueil</a> &gt; <a href="/r4">Actualités et '
                                        'humeurs</a> &gt; <strong class="on">Décisions de l\'AG du mardi 10 '
                                        'septembre</strong></p>',
    "guillemets, current page as text": '<div class="ariane"><a href="/">Startseite</a> » <a href="/news">Nachrichten'
                                        '</a> » <a href="/news/politik">Politik</a> » Streit um die Hafenbrücke</div>',
    "slashes, links only": '<div class="path"><a href="/">Noticias Guatemala</a> / <a href="/n">Noticias</a> / '
                           '<a href="/n/s">Seguridad y justicia</a></div>',
    "bars, a footer's row": '<p><a href="/k">Kontakt</a> | <a href="/d">Datenschutz</a> | <a href="/i">Impressum</a></p>',
    "chevrons, spaced": '<div class="fil">\n <a href="/">Главная</a>\n › \n <a href="/w">Мир</a>\n › '
                                 '\n <span>Споры о мосте в гавани</span>\n</div>',
}


@pytest.mark.parametrize("kind", sorted(TRAILS))
def test_a_trail_of_links_is_left_out_of_the_text(kind):
    text = extract_fast(page(TRAILS[kind]))
    assert all(p in text for p in ARTICLE), kind
    assert not any(word in text for word in ("Accueil", "Startseite", "Noticias", "Kontakt", "Главная")), kind


# an article's own lines with links that are not a trail, and must be read
OWN = {
    "prose between links": '<p>The <a href="/council">council</a> met the <a href="/mayor">mayor</a> on Monday and '
                           'agreed to rebuild the bridge by 2027.</p>',
    "a slash inside a sentence": '<p>Read the <a href="/a">report</a> and/or the <a href="/b">minutes</a> / the '
                                 'annex before voting on the harbour bridge plan.</p>',
    "a label before the links": '<p>Sources: <a href="/a">Harbour authority</a> / <a href="/b">City council</a></p>',
    "one link, then text": '<p><a href="/a">Harbour authority</a> &gt; it rejected the plan on Monday evening.</p>',
    "two items after the last arrow": '<p><a href="/a">Harbour</a> &gt; <a href="/b">Bridge</a> &gt; <b>Vote</b> '
                                      '<i>postponed until the spring session</i></p>',
    "links side by side without separators": '<p><a href="/a">Harbour authority</a> <a href="/b">City council</a></p>',
    # a template that puts its breadcrumb's links straight into the article's box, the article after them
    "an article after a trail's last separator": '<div class="box"><a href="/">Home</a> &gt; <a href="/n">News</a> &gt; '
                                                 '<div class="story"><p>The harbour master said the bridge will '
                                                 'reopen next week after repairs to its deck.</p></div></div>',
    # alternatives in an article's list (readability's page 002: "Blob/ File", each a link)
    "two links joined by a slash in a list item": ('<ul><li><a href="/a">ArrayBufferView</a> (Uint8Array and friends, typed arrays '
                                                   'of any kind)</li><li><a href="/b">Blob</a>/ <a href="/c">File</a>'
                                                   '</li><li>string, sent as UTF-8 text</li></ul>'),
    "two links joined by a slash": '<p><a href="/a">Harbour authority</a> / <a href="/b">City council</a></p>',
}
OWN_WORDS = {"prose between links": "agreed to rebuild", "a slash inside a sentence": "the annex before voting",
             "a label before the links": "Harbour authority", "one link, then text": "rejected the plan",
             "two items after the last arrow": "postponed until",
             "an article after a trail's last separator": "harbour master said", "links side by side without separators": "City council",
             "two links joined by a slash in a list item": "Blob/ File", "two links joined by a slash": "City council"}


@pytest.mark.parametrize("kind", sorted(OWN))
def test_an_articles_own_lines_with_links_are_read(kind):
    text = extract_fast(page(OWN[kind]))
    assert all(p in text for p in ARTICLE), kind
    assert OWN_WORDS[kind] in " ".join(text.split()), kind


def test_a_trail_needs_three_steps_two_of_them_links_and_a_separator_between_each():
    assert is_trail(parsed('<p><a href="/a">A</a> &gt; <a href="/b">B</a> &gt; C</p>').query_selector("p"))
    assert is_trail(parsed('<p><a href="/a">A</a> | <a href="/b">B</a> | <a href="/c">C</a></p>').query_selector("p"))
    assert not is_trail(parsed('<p><a href="/a">A</a> &gt; <a href="/b">B</a></p>').query_selector("p"))  # two steps
    assert not is_trail(parsed('<p><a href="/a">A</a> &gt; B &gt; C</p>').query_selector("p"))  # one link
    assert not is_trail(parsed('<p><a href="/a">A</a> &gt;&gt; <a href="/b">B</a> &gt;</p>').query_selector("p"))
    assert not is_trail(parsed('<p><a href="#a">A</a> | <a href="#b">B</a></p>').query_selector("p"))  # this page's
    assert not is_trail(parsed('<p>&gt; <a href="/a">A</a> &gt; <a href="/b">B</a></p>').query_selector("p"))


def test_trails_are_marked_while_read_and_unmarked_after():
    body = parsed(page(TRAILS["arrows, current page in <strong>"]))
    assert len(link_trails(body)) == 1
    with trails_marked(body) as marked:
        assert marked == 1 and body.query_selector(f"[{CARD_ATTRIBUTE}]") is not None
    assert body.query_selector(f"[{CARD_ATTRIBUTE}]") is None
