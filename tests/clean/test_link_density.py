"""`fast` leaves out its container's link-dense blocks as trafilatura's link-density passes do (fast@9)."""

from resiliparse.parse.html import HTMLTree

from streamdedup.clean import link_density
from streamdedup.clean.fast_extract import extract_fast
from streamdedup.clean.link_density import MARK, drop_link_dense

ARTICLE = [f"Paragraph {i} of the report says how the council voted on the new bridge and why the vote "
           f"was delayed twice this spring, with the mayor's own account of meeting number {i}." for i in range(6)]
TEASERS = ["Council approves the budget for the harbour", "Schools reopen after the storm",
           "New bus lines from May", "The mayor answers readers"]


def page(inside: str) -> str:
    first, rest = "".join(f"<p>{p}</p>" for p in ARTICLE[:3]), "".join(f"<p>{p}</p>" for p in ARTICLE[3:])
    return f'<html><body><article class="post"><h1>Bridge</h1>{first}{inside}{rest}</article></body></html>'


def test_a_block_of_teaser_links_inside_the_container_is_dropped():
    # no class names it: a <div> of links to other stories, as a host's "more from the city" box
    teasers = "".join(f'<div><a href="/s{i}">{title}</a></div>' for i, title in enumerate(TEASERS))
    text = extract_fast(page(f"<div>{teasers}</div>"))
    assert all(p in text for p in ARTICLE)
    assert not any(title in text for title in TEASERS)


def test_a_paragraph_that_is_one_link_is_dropped():
    # "Read also: <link>" as a paragraph of its own: a lone link that is (nearly) all of its block
    text = extract_fast(page('<p><a href="/other">Read also: the harbour budget and what it means for you</a></p>'))
    assert "harbour budget" not in text and all(p in text for p in ARTICLE)


def test_an_article_paragraph_with_three_inline_links_stays():
    linked = ('The <a href="/c">council</a> met on Tuesday with the <a href="/m">mayor</a> and the '
              '<a href="/e">engineers</a> to settle the cost of the bridge, which rose by a fifth since the spring.')
    text = extract_fast(page(f"<p>{linked}</p>"))
    assert "which rose by a fifth since the spring" in text and "met on Tuesday with the mayor" in text


def test_a_list_of_article_bullets_with_one_link_each_stays():
    bullets = ["the bridge opens in <a href='/a'>October</a>, three months late",
               "its cost rose to <a href='/b'>forty million</a> after the redesign",
               "the old ferry keeps running until the <a href='/c'>opening day</a> at least"]
    text = extract_fast(page("<ul>" + "".join(f"<li>{b}</li>" for b in bullets) + "</ul>"))
    assert "three months late" in text and "after the redesign" in text and "at least" in text


def test_links_in_what_trafilatura_cleans_away_do_not_count():
    # an image's link in a <figure> (trafilatura's tree cleaning deletes it) beside its caption: the caption stays
    caption = "The bridge seen from the harbour at dawn, before the last span was lifted into place (photo: city)"
    figure = f'<div><div><figure><a href="/big.jpg"><img src="/b.jpg"></a></figure></div><div><h6>{caption}</h6></div></div>'
    assert caption in extract_fast(page(figure))


def test_the_work_is_bounded_and_past_it_nothing_is_dropped(monkeypatch):
    html = "<div>" + "".join(f'<div><a href="/s{i}">{title}</a></div>' for i, title in enumerate(TEASERS)) + "</div>"
    tree = HTMLTree.parse(html)
    assert drop_link_dense(tree, len(html)) > 0 and tree.body.query_selector(f"[{MARK}]") is not None
    monkeypatch.setattr(link_density, "WORK_STEPS", 0)
    monkeypatch.setattr(link_density, "WORK_CHARS", 0)
    # a budget of nothing (64 steps, 4,096 characters: a page of deep nesting spends it): the page as before
    deep = "<div>" * 200 + html + "</div>" * 200
    tree = HTMLTree.parse(deep)
    assert drop_link_dense(tree, len(deep)) == 0 and tree.body.query_selector(f"[{MARK}]") is None
