"""`clean.link_cards` and account forms: a cold host's listings and log-in pop-ups are not the page's text; an article's are."""

import pytest

from streamdedup.clean.fast_extract import extract_fast
from streamdedup.clean.link_cards import CARD_ATTRIBUTE, cards_marked, link_cards

ARTICLE = [f"Paragraph {i} of the story tells what the council decided about the harbour bridge and why "
           f"the vote took so long, with quotes from both sides of the debate number {i}." for i in range(6)]

TEASERS = ["Oleander plants are among the most versatile shrubs, with dozens of uses in southern gardens.",
           "Can bamboo grow in zone 8? When you think of bamboo you may think of pandas in a far forest.",
           "African violets are very popular flowering plants: small, easy to care for and attractive."]


def page(inside: str, after: str = "", container: str = "entry-content") -> str:
    """An article in a container of class `container` with `inside` after its paragraphs, `after` after it."""
    paragraphs = "".join(f"<p>{p}</p>" for p in ARTICLE)
    return (f'<html><body><div class="{container}"><h1>The harbour bridge vote</h1>{paragraphs}{inside}</div>'
            f"{after}</body></html>")


def cards(template: str) -> str:
    """A "more news" row of cards, each made from `template` with {i} (its number) and {teaser}."""
    return '<div class="row">' + "".join(template.format(i=i, teaser=t) for i, t in enumerate(TEASERS)) + "</div>"


# a card per kind of template: a title link then its teaser; a thumbnail link and a title link to one page;
# a card that is itself a link holding blocks
CARDS = {
    "title then teaser": '<div class="col-sm-4"><div class="one-title"><a href="/plants-{i}">Plant care tips {i}</a>'
                         '</div><div class="one-text">{teaser}</div></div>',
    "thumbnail and title": '<article class="card"><a href="/p/{i}"><img src="/i/{i}.jpg"></a><div><a href="/p/{i}">'
                           'Plant care tips {i}</a></div><p>{teaser}</p></article>',
    "a link that holds blocks": '<a class="teaser" href="/story/{i}"><div class="badge">Garden</div>'
                                '<span>{teaser}</span></a>',
    # cards of one row with a state class each ("has--video", "has--gallery"): of one kind by their first class
    "a state class on each card": '<a class="inline-article has--media{i}" href="/story/{i}"><div class="badge">Garden'
                                  '</div><span>{teaser}</span></a>',
    # a date line `fast` leaves out (`HOST_LINES`) before the title: the card still opens with its link
    "a date line, then the title": '<div class="news kachel"><a href="/n/{i}"><img src="/i/{i}.jpg"></a>'
                                   '<div class="field field--name-node-post-date">26.9.2022</div>'
                                   '<div><a href="/n/{i}">Ruling on leave {i}</a></div><div class="trimmed"><p>{teaser}'
                                   '</p></div></div>',
}


@pytest.mark.parametrize("kind", sorted(CARDS))
def test_a_row_of_link_cards_inside_the_container_is_left_out(kind):
    text = extract_fast(page(cards(CARDS[kind])))
    assert all(p in text for p in ARTICLE), kind
    assert not any(t in text for t in TEASERS), kind


@pytest.mark.parametrize("kind", sorted(CARDS))
def test_a_row_of_link_cards_on_a_page_without_a_container_is_left_out(kind):
    text = extract_fast(page("", cards(CARDS[kind]), container="txt"))
    assert all(p in text for p in ARTICLE), kind
    assert not any(t in text for t in TEASERS), kind


# an article's own blocks that look a little like cards, and must be read
OWN = {
    # a roundup: each paragraph opens with a linked title (paragraphs, not cards)
    "linked paragraphs": '<p><a href="/a-{i}">Plant care tips {i}</a> {teaser}</p>',
    # sections that open with text and link in their middle
    "sections linking inside": '<div class="section"><p>{teaser} See <a href="/plants-{i}">the guide {i}</a>.</p></div>',
    # blocks that each link to several pages
    "blocks of several links": '<div class="box"><a href="/x-{i}">Plant care tips {i}</a> {teaser} '
                               '<a href="/y-{i}">more</a></div>',
    # inline links side by side
    "inline links": '<a href="/w-{i}">{teaser}</a> ',
}


@pytest.mark.parametrize("kind", sorted(OWN))
def test_an_articles_own_blocks_with_links_are_read(kind):
    text = extract_fast(page(cards(OWN[kind])))
    assert all(p in text for p in ARTICLE), kind
    assert all(t in " ".join(text.split()) for t in TEASERS), kind


def test_a_block_opening_with_its_own_words_before_a_link_is_read():
    """Only what `fast` leaves out anyway may stand before a card's title: a kicker of the article's own is read."""
    kicker = '<div class="item"><span class="label">Update {i}</span><a href="/k/{i}">Plant care tips {i}</a> {teaser}</div>'
    text = extract_fast(page(cards(kicker)))
    assert all(t in " ".join(text.split()) for t in TEASERS)


def test_blocks_all_linking_to_one_page_are_read():
    """A run of blocks that all link to one page is that page's own (a gallery's parts, a form's steps)."""
    same = '<div class="step"><a href="/guide">Step {i}</a> {teaser}</div>'
    text = extract_fast(page(cards(same)))
    assert all(t in text for t in TEASERS)


def test_a_single_card_is_read():
    text = extract_fast(page(CARDS["title then teaser"].format(i=0, teaser=TEASERS[0])))
    assert TEASERS[0] in text


def test_cards_are_unmarked_after_the_text_is_read():
    from resiliparse.parse.html import HTMLTree

    tree = HTMLTree.parse(page(cards(CARDS["title then teaser"])))
    assert len(link_cards(tree.body)) == 3
    with cards_marked(tree.body) as marked:
        assert marked == 3
        assert len(tree.body.query_selector_all(f"[{CARD_ATTRIBUTE}]")) == 3
    assert len(tree.body.query_selector_all(f"[{CARD_ATTRIBUTE}]")) == 0


LOGIN = ('<div id="popup-connexion"><form class="w-40"><p>Identifiant :</p><input type="email" name="login">'
         "<p>Il s'agit de votre première connexion sur votre profil. Un lien vous permettant de créer votre mot "
         'de passe vous a été envoyé.</p><input type="password" name="pass"><div>Mot de passe oublié</div></form></div>')


def test_an_account_form_is_left_out():
    for html in (page(LOGIN), page("", LOGIN, container="txt")):
        text = extract_fast(html)
        assert all(p in text for p in ARTICLE)
        assert "première connexion" not in text and "Mot de passe oublié" not in text


def test_a_form_without_a_password_is_read():
    """A page builder's form can hold the whole article; a search or order form is not an account form."""
    html = page("").replace('<div class="entry-content">', '<form action="/"><div class="entry-content">')
    html = html.replace("</div></body>", '<input type="text" name="q"></div></form></body>')
    text = extract_fast(html)
    assert all(p in text for p in ARTICLE)


def test_only_markup_with_two_links_may_hold_cards():
    from resiliparse.parse.html import HTMLTree

    from streamdedup.clean.link_cards import may_hold_cards

    one = HTMLTree.parse(page("<p>See <A HREF='/a'>the vote</A>.</p>")).body.inner_html
    assert not may_hold_cards(one)
    assert may_hold_cards(HTMLTree.parse(page(cards(CARDS["title then teaser"]))).body.inner_html)


def test_a_block_with_under_two_links_is_not_searched_and_reads_the_same(monkeypatch):
    from streamdedup.clean import fast_extract
    from streamdedup.clean import link_cards as module

    html = page("<p>See <a href='/a'>the vote</a>.</p>")
    expected = extract_fast(html)
    searched: list[object] = []
    real = module.link_cards
    monkeypatch.setattr(module, "link_cards", lambda *args: searched.append(args) or real(*args))
    assert extract_fast(html) == expected
    assert not searched
    assert fast_extract.extract_fast(page(cards(CARDS["title then teaser"]))) == extract_fast(page(""))
    assert searched
