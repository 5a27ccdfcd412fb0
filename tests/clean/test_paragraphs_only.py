"""`fast` reads a container with paragraphs by its paragraphs, as trafilatura does (fast@9): not its bare `<div>` text."""

from resiliparse.parse.html import HTMLTree

from streamdedup.clean.fast_extract import RULES_VERSION, extract_fast
from streamdedup.clean.paragraphs_only import paragraphs_only

ARTICLE = [f"Paragraph {i} of the story tells what the council decided about the harbour bridge and why "
           f"the vote took so long, with quotes from both sides of the debate number {i}." for i in range(6)]
TEASERS = ["If you do not own a forty acre homestead you are not alone, houses are built closer today",
           "Oleander plants are among the most versatile shrubs, with dozens of uses in coastal gardens"]


def page(inside: str) -> str:
    """An article written in paragraphs in trafilatura's first kind of container, `inside` after them."""
    paragraphs = "".join(f"<p>{p}</p>" for p in ARTICLE)
    return (f'<html><body><div class="entry-content"><h1>The harbour bridge vote</h1>{paragraphs}{inside}</div>'
            "</body></html>")


def teasers() -> str:
    """A host's box of other stories: a linked title and a summary, each in a bare <div>."""
    cards = "".join(f'<div class="one-title"><a href="/story-{i}">Story {i} of the garden section</a></div>'
                    f'<div class="row"><div class="col-sm-6"><div class="one-text">{teaser}</div></div></div>'
                    for i, teaser in enumerate(TEASERS))
    return f'<div style="padding: 20px"><b>Previous articles:</b>{cards}</div>'


def test_a_teaser_box_written_as_bare_divs_beside_the_paragraphs_is_left_out():
    text = extract_fast(page(teasers()))
    assert all(p in text for p in ARTICLE)
    assert not any(teaser in text for teaser in TEASERS)
    assert "Story 0 of the garden section" not in text
    assert "Previous articles:" in text  # a formatting element: trafilatura reads it as a paragraph
    assert RULES_VERSION == 9


def test_the_text_trafilatura_reads_in_a_div_stays():
    kept = ["a line after a break", "the words after the bold ones", "a cell of the table", "a list item's own div",
            "after the list"]
    inside = (f"<div>a lead without a break<br>{kept[0]}</div><div><strong>Note:</strong> {kept[1]}</div>"
              f"<table><tr><td><div>{kept[2]}</div></td></tr></table><ul><li><div>{kept[3]}</div></li>"
              f"<li>two</li></ul><div><ul><li>one item of it</li></ul>{kept[4]}</div>")
    text = extract_fast(page(inside))
    assert all(p in text for p in ARTICLE)
    assert all(line in text for line in kept), [line for line in kept if line not in text]
    assert "a lead without a break" not in text




def test_a_container_written_in_divs_is_read_whole():
    """Under 250 characters of <p> text, trafilatura reads the divs too ("div" joins its tags)."""
    lines = "".join(f"<div>{p}</div>" for p in ARTICLE)
    html = f'<html><body><div class="entry-content"><p>A short lead.</p>{lines}</div></body></html>'
    text = extract_fast(html)
    assert all(p in text for p in ARTICLE)


def inside(html: str) -> str:
    """The markup lexbor writes for the inside of `html`'s first <div>, as `fast` hands it over."""
    return HTMLTree.parse(html).body.query_selector("div").inner_html


def test_the_runs_left_out_of_a_containers_markup():
    paragraphs = "".join(f"<p>{p}</p>" for p in ARTICLE)
    markup = inside(f'<div>own text <a href="/x">a link</a><br>after a break{paragraphs} tail'
                    f'<span title="a > b">spanned</span><script>if (a < b) {{ x = "<div>"; }}</script></div>')
    kept = paragraphs_only(markup, 250)
    assert "own text" not in kept and "a link" not in kept and "tail" not in kept and "spanned" not in kept
    assert "after a break" in kept and all(p in kept for p in ARTICLE)
    assert '<span title="a &gt; b"></span>' in kept and 'x = "<div>"' in kept  # a '<' in a script is no tag
    short = inside("<div>own text<p>a short paragraph</p></div>")
    assert paragraphs_only(short, 250) == short


def test_deeply_nested_spans_are_read_in_linear_time():
    """Each run finds its holder in one step: 20,000 nested spans, each with text, are not quadratic."""
    import time

    paragraphs = "".join(f"<p>{p}</p>" for p in ARTICLE)
    markup = paragraphs + "<span>word " * 20_000 + "</span>" * 20_000
    start = time.process_time()
    kept = paragraphs_only(markup, 250)
    assert time.process_time() - start < 1.0  # quadratic: minutes
    assert "word" not in kept and all(p in kept for p in ARTICLE)
