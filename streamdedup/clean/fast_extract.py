"""`--extractor fast`, the default: resiliparse's C parser and text, steered by trafilatura's rules.

resiliparse alone is about 12x faster than trafilatura but keeps what its main-content pass does
not recognise: comment threads, "related stories", share bars, author boxes, cookie notices. Each
copy of a syndicated story carries its own site's leftovers, which dilutes the similarity of the
copies (web dev: F1 0.927 against trafilatura's 0.982). trafilatura knows these blocks by their
class and id names (its `xpaths.py`: BODY_XPATH for the article's container, the discard lists for
the rest). The same names, as CSS selectors, run inside lexbor (resiliparse's C DOM):

1. take the article's container (the first of trafilatura's container selectors, in its order,
   that holds some text; its first match in document order outside what trafilatura's tree
   cleaning deletes, as trafilatura, with the blocks of its kind beside it), else the whole page;
2. resiliparse's main-content text of its inside, skipping the elements whose class or id name a
   comment thread, a share bar, related stories, navigation, an ad, a byline or author box, a
   cookie notice or a newsletter form, and teaser cards (a link that holds a heading), matched in
   resiliparse's own walk (its `skip_elements`), with the container's bulleted lists that are text,
   not links (`content_lists`: resiliparse's pass drops every <ul>);
3. if that is implausibly small for the page (trafilatura's own rescue bounds, as in `extract.py`:
   under 3,000 characters and under a fifth of all its text: a wrapper named like boilerplate,
   "has-sidebar", skipped with the article, a lead box taken for the container, or a page with
   little text of its own), trafilatura itself reads the page, without the teaser cards.

Measured in docs/benchmarks.md (speed: step 3, trafilatura reading the page, is about a third of
the time; clean/trafilatura_once.py makes it one parse) and docs/evaluation.md (quality).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import regex

from streamdedup.clean import trafilatura_extract
from streamdedup.clean.link_cards import CARDS, cards_marked, may_hold_cards
from streamdedup.clean.noscript import NOSCRIPT_ELEMENT, Sources, noscript_sources
from streamdedup.clean.page_text import Texts, covers_little, extract_all_text
from streamdedup.clean.trails import trails_marked

# What `fast` keeps changes the signatures of the pages it reads, so it is part of what a store
# records (CleaningConfig): a store's pages are compared only with pages read by the same rules.
# 2: teaser cards (a link that holds a heading) are left out (2026-11-26).
# 3: ... and left out of what trafilatura reads when it rescues a page (step 3) (2026-11-26).
# 4: a brief page whose whole page agrees with its container is not rescued (step 3) (2026-12-03).
# 5: the short blocks of a container's kind in the run around it are read with it (`blocks_beside`).
# 6: a <noscript> holds only what it holds with scripting on (`clean.noscript`) (2026-12-06).
# 7: a container's <ul> that is content, not a list of links, is read (`content_lists`) (2026-12-06).
# 8: comment cards, cookie notices, buttons, date lines, dialogs and hidden blocks (`HOST_LINES`) (2026-12-07).
# 9: account forms (`HOST_LINES`) and runs of link cards (`clean.link_cards`) (2026-12-07).
# 10: link trails (`clean.trails`): a breadcrumb or a row of links no class name says (2026-12-07).
RULES_VERSION = 10

# (attribute, operator, value) triples after trafilatura 2.x xpaths.py: REMOVE_COMMENTS_XPATH and
# OVERALL_DISCARD_XPATH's token lists. `^=` starts with, `*=` contains, `~=` is one whole class.
# Comments and reply forms (pruned before trafilatura's container selectors run, too)
_COMMENT_TOKENS: tuple[tuple[str, str, str], ...] = (
    ("id", "^=", "comment"), ("class", "^=", "comment"), ("class", "*=", "post-comments"),
    ("class", "*=", "article-comments"), ("id", "=", "disqus_thread"), ("id", "=", "dsq-comments"),
    ("id", "=", "respond"), ("class", "*=", "comment-respond"), ("class", "~=", "commentlist"),
    ("class", "*=", "comments-area"), ("id", "*=", "reader-comments"),
)
_DISCARD_TOKENS: tuple[tuple[str, str, str], ...] = _COMMENT_TOKENS + (
    # share bars and social widgets
    ("id", "*=", "share"), ("class", "*=", "share-"), ("class", "*=", "sharedaddy"), ("class", "*=", "sociable"),
    ("class", "*=", "social"), ("id", "*=", "social"),
    # related, more, most popular, next stories
    ("id", "*=", "related"), ("class", "*=", "elated"), ("class", "*=", "-stories"),
    ("class", "*=", "most-popular"), ("class", "*=", "more-on"),
    # navigation, menus, breadcrumbs, sidebars, banners
    ("id", "*=", "nav"), ("id", "*=", "menu"), ("class", "^=", "nav"), ("class", "*=", "navbar"),
    ("class", "*=", "avigation"), ("class", "*=", "menu"), ("class", "*=", "subnav"),
    ("class", "*=", "sidebar"), ("id", "*=", "sidebar"), ("class", "*=", "breadcrumb"), ("id", "*=", "breadcrumb"),
    ("class", "*=", "banner"), ("role", "=", "navigation"), ("role", "=", "complementary"),
    # footers
    ("id", "*=", "footer"), ("class", "*=", "footer"),
    # ads and paid content
    ("id", "^=", "ad-"), ("class", "~=", "ad"), ("class", "*=", "-ad-"), ("class", "^=", "ad-"),
    ("class", "*=", "outbrain"), ("class", "*=", "taboola"), ("class", "*=", "criteo"),
    ("class", "*=", "paid-content"), ("class", "*=", "widget"),
    # bylines, author boxes, tags, ratings, newsletters, cookie and consent notices
    ("class", "*=", "byline"), ("class", "*=", "author"), ("id", "*=", "author"), ("class", "*=", "tag-list"),
    ("class", "~=", "tags"), ("class", "*=", "rating"), ("class", "*=", "newsletter"), ("id", "*=", "newsletter"),
    ("id", "^=", "cookie"), ("class", "^=", "cookie"), ("class", "*=", "consent"),
    ("style", "*=", "display:none"), ("style", "*=", "display: none"), ("aria-hidden", "=", "true"),
)

# More of what trafilatura leaves out, for a page read cold (its host's lines, where no earlier page of
# the host taught them as template: the misses of docs/limitations.md), each measured alone on
# bench/extraction.py's pages (readability's 130, trafilatura's 854): pages whose precision rose /
# whose recall fell (fast@7 -> with it). Tokens of trafilatura's that lost article text there stay out:
# "teaser" (a German site's lede: 10 pages lost text), "meta" (fact boxes, 9), "header" (titles and
# standfirsts, 32), " hide" as a substring (Bootstrap's "hidden-xs" hides on phones only), "overlay" and
# "popup" (a whole novel's page read as one), and forms under half the page's text (trafilatura's
# `_handle_forms`: 8 pages lost text, no dev copy more found).
HOST_LINES: tuple[str, ...] = (
    # trafilatura's comment section (COMMENTS_XPATH: a div or section whose class says comment, what it
    # reads as comments; include_comments=False drops them): a "mo-comment-card" in a "mo-comments-list"
    # (11 pages up, 1 down by 0.002); a commentary is an article ("commentary" excepted, as trafilatura does)
    ':is(div, section)[class*="comment" i]:not([class*="commentary" i])',
    # cookie notices named anywhere in a class or id, not only at its start (OVERALL_DISCARD_XPATH's
    # 'cookie' test is a substring: "m159-cookies-policy"); 5 up, 0 down
    '[class*="cookie" i]', '[id*="cookie" i]',
    # buttons (OVERALL_DISCARD_XPATH's "button", class and id): "Jetzt kostenlos TEILNEHMEN", "Sign
    # with another email"; 50 up, 3 down (button labels the annotators kept: "Zum Produktfilter")
    '[class*="button" i]', '[id*="button" i]',
    # a post's date line (AUTHOR_DISCARD_XPATHS' class "date" and "meta-date"; Drupal's "post-date"
    # field): "20.12.2022" under each teaser; 34 up, 2 down (by 0.002 and 0.004, the date lines)
    '[class~="date"]', '[class*="meta-date" i]', '[class*="post-date" i]',
    # dialogs (OVERALL_DISCARD_XPATH's "modal-content", any part of a modal: "oxy-modal-backdrop",
    # "ct-modal" newsletter pop-ups); 4 up, 0 down
    '[class*="modal" i]', '[id*="modal" i]',
    # what the page does not show: a class "hidden" or "hide" (trafilatura's " hidden", " hide" as
    # whole classes), Bootstrap's "d-none" (display:none, which trafilatura tests in a style) and the
    # hidden attribute; 7 up, 1 down (by 0.002)
    '[class~="hidden"]', '[class~="hide"]', '[class~="d-none"]', '[hidden]',
    # an account form: a <form> that asks for a password (log in, sign up, reset), never the page's own
    # text; a cold host's login pop-up read as 120 of a copy's words (multilingual and web dev). Forms
    # in general stay (a page builder's <form> can hold the whole page: trafilatura's `_handle_forms`
    # lost article text on 8 pages); 2 pages up, 1 down by 0.002 (a sign-up form's password rule line)
    'form:has(input[type="password" i])',
)

# trafilatura's BODY_XPATH, in its order: the article's container.
_CONTAINERS: tuple[str, ...] = (
    "[itemprop=articleBody], [id=articleContent], [class=post], [class=entry]",
    "[class*=entry-content i], [class*=article-content i], [class*=post-content i], [class*=post_content i], "
    "[class*=post-body i], [class*=post-text i], [class*=post-entry i], [class*=postcontent i], "
    "[class*=article-body i], [class*=articlebody i], [class*=article__body i], [class*=article__content i], "
    "[class*=article-text i], [class*=body-text i], [id*=article-body i], [id*=articlebody i], "
    "[id*=entry-content i], [id*=article-content i]",
    "article",
    "[role=article], [id=article], [id=story], [class*=story-body i], [class*=story-content i], "
    "[class*=single-content i], [class*=blog-content i], [class*=single-post i], [class*=field-body i], "
    "[class*=fulltext i]",
    "[id=content], [class=content], [class*=content-main i], [class*=content-body i], [class*=main-content i], "
    "[id*=main-content i], [class*=page-content i]",
    "main, [role=main]",
)

_CONTAINER_TAGS = frozenset({"article", "div", "main", "section"})  # BODY_XPATH's self:: tests
# What trafilatura's tree cleaning deletes, subtree and all, before its container selectors run
# (2.3.1's MANUALLY_CLEANED under favor_precision; "form" is handled apart, a page builder's form
# can hold the whole page; a "figure" goes unless it holds a table): a match inside one of these
# is not trafilatura's container. Menus full of teaser <article>s in a <nav> came first in
# document order and were taken for the article.
_CLEANED_FIRST = ", ".join((
    "aside", "embed", "fencedframe", "footer", "head", "iframe", "menu", "object", "script", "applet", "audio",
    "canvas", "map", "picture", "svg", "video", "area", "blink", "button", "datalist", "dialog", "frame", "frameset",
    "fieldset", "link", "input", "label", "legend", "marquee", "math", "menuitem", "nav", "noindex", "noscript",
    "optgroup", "option", "output", "param", "progress", "rp", "rt", "rtc", "select", "source", "style", "track",
    "textarea", "time", "use"))


# A container counts when it holds at least this much text (trafilatura's MIN_EXTRACTED_SIZE, the
# size below which it too distrusts what its container selectors found).
MIN_CONTAINER_CHARS = 250


# Tokens that also name an article's own container on a common kind of site: Elementor (the most
# used WordPress page builder) wraps every text block in "elementor-widget-container" inside
# "elementor-widget-text-editor", so "widget" alone dropped the whole article of such pages (6 of
# the 76 dev pages handed to trafilatura; dev split, bag-of-words recall 0.957 -> 0.959 without it,
# precision equal).
_UNLESS: dict[tuple[str, str, str], str] = {("class", "*=", "widget"): '[class*="elementor" i]'}


def _selector(attribute: str, operator: str, value: str) -> str:
    flag = " i" if operator in ("^=", "*=") else ""
    unless = _UNLESS.get((attribute, operator, value))
    return f'[{attribute}{operator}"{value}"{flag}]' + (f":not({unless})" if unless else "")


# Skipped inside resiliparse's own text pass (its `skip_elements`): matched while it walks the tree,
# at no measurable cost (a separate lexbor selector pass over the tree costs 4x the extraction).
# A link that holds a heading is a teaser card of a listing ("latest posts", "more from the
# section"): the heading is the title of the page it links to, and an article's own text does not
# sit inside a link. No class name says so on many templates ("postlist-item media").
TEASER_CARDS = "a:has(h1, h2, h3, h4, h5, h6)"
# The same for trafilatura's lxml tree when it rescues a page (step 3): a listing of teaser cards
# beside a short story (a "latest posts" box) is what its rescue otherwise keeps with the story.
TEASER_CARDS_XPATH = "//a[.//h1 or .//h2 or .//h3 or .//h4 or .//h5 or .//h6]"
# One selector list, not one string per selector: resiliparse matches each string it is given
# against every element on its own; as one list lexbor tests an element once (a held page's
# container text: 0.137 -> 0.127 ms, the same text)
# A noscript, renamed as `clean.noscript` reads it, is never shown: skipped in the same walk (as
# resiliparse skips a template anyway: said, not left to its defaults)
NOSCRIPTS = [NOSCRIPT_ELEMENT]
# a selector that tests an attribute first (after a tag test): [class*="x" i], :is(div, p)[id="y"]
_LEADING_ATTRIBUTE = regex.compile(r"(?::is\([a-z0-9, ]*\))?\[([A-Za-z-]+)(?:[~^$*|]?=|\])")


def _one_compound(selector: str) -> bool:
    """Whether a selector is one element's tests: no comma or combinator outside its brackets and parentheses."""
    depth = 0
    for char in selector:
        if char in "([":
            depth += 1
        elif char in ")]":
            depth -= 1
        elif depth == 0 and char in ", >+~":
            return False
    return True


def grouped_by_attribute(selectors: list[str]) -> str:
    """The selectors as one list, in which those testing the same attribute first sit behind one test that it is there.

    `[class]:is([class*="share-" i], [class*="social" i], ...)` matches what its members match
    (each needs the attribute), and lexbor tests an element without the attribute once, not once a
    member: most of an article's elements (<p>, <a>, <em>) have no class and no id. A held page's
    container text 0.160 -> 0.143 CPU ms and a whole page's discarded text 0.63 -> 0.56 on the
    site crawl, the same texts. Attributes tested by one selector only, and selectors of more than
    one element (a combinator), stay as they are."""
    groups: dict[str, list[str]] = {}
    rest = []
    for selector in selectors:
        found = _LEADING_ATTRIBUTE.match(selector)
        if found and _one_compound(selector):
            groups.setdefault(found.group(1), []).append(selector)
        else:
            rest.append(selector)
    kept = [f"[{name}]:is({', '.join(members)})" if len(members) > 1 else members[0]
            for name, members in groups.items()]
    return ", ".join(kept + rest)


# Link cards without a heading (`clean.link_cards`) and link trails (`clean.trails`), marked before the walk: `CARDS`
DISCARD_SELECTORS = [grouped_by_attribute([*(_selector(*token) for token in _DISCARD_TOKENS), *HOST_LINES, TEASER_CARDS,
                                           CARDS, NOSCRIPT_ELEMENT])]
_COMMENT_SECTIONS = ", ".join(_selector(*token) for token in _COMMENT_TOKENS)


# The container selectors as trafilatura runs them: BODY_XPATH's self::article, div, main or
# section, on its cleaned tree: not inside what its tree cleaning deletes first (_CLEANED_FIRST) nor,
# comments off, in or inside its comment sections (REMOVE_COMMENTS_XPATH, pruned before: a reader
# comment is an <article class="comment-body"> on many blogs): `_OUTSIDE_CLEANED`. One `:is` list
# before the descendant test, not a descendant test each (lexbor parses it at each test: 26 -> 22 µs)
_OUTSIDE_CLEANED = f":not(:is({_CLEANED_FIRST}, {_COMMENT_SECTIONS}) *):not({_COMMENT_SECTIONS})"
_CONTAINER_ELEMENT = ":is(" + ", ".join(sorted(_CONTAINER_TAGS)) + ")"


def _container_query(selector: str) -> str:
    """A group of container selectors as lexbor runs it: without `_OUTSIDE_CLEANED` (`_containers` tests it).

    lexbor parses a selector each time it runs one, and `_OUTSIDE_CLEANED`'s ~1,000 characters cost
    ~15 µs a query, ~4 queries a search: it is tested apart, on the few matches that count (`_kept`),
    each of them a node object more than the filtered query handed over (a search 0.245 -> 0.182 ms
    of CPU; the same containers on 8,980 pages: the crawls, every labelled set and the readability
    and trafilatura test pages). A group with substring tests (`*=`) keeps the tag test
    in front of them (it spares them on every other element); on the others lexbor's tag test costs
    more than it saves (`article`: ~10 µs of ~25), and `_containers` makes it on the matches."""
    return f"{_CONTAINER_ELEMENT}:is({selector})" if "*=" in selector else selector


_CONTAINER_QUERIES: tuple[str, ...] = tuple(_container_query(selector) for selector in _CONTAINERS)


def _outside_figure(node: Any) -> bool:
    """trafilatura's tree cleaning deletes a <figure> unless it holds a table."""
    figure = node.closest("figure")
    return figure is None or figure.query_selector("table") is not None


def _kept(node: Any) -> bool:
    """Whether trafilatura's tree cleaning leaves the element for its container selectors (`_OUTSIDE_CLEANED`)."""
    return bool(node.matches(_OUTSIDE_CLEANED))


def _containers(body: Any) -> list[Any]:
    """The article's element.

    The first match, in document order, of the first of trafilatura's container selectors, in its
    order, that holds some text (trafilatura's BODY_XPATH takes a selector's first match too: the
    longest match is as often a card of the listing under the story); with the blocks of its kind
    beside it (`blocks_beside`: same parent, tag and class), for an article written as blocks (one
    <article> per section). Neighbours of another class (cards, teasers) stay out. Matches inside
    what trafilatura's tree cleaning deletes first (a <nav>, an <aside>, a <footer>...) do not
    count, as they do not for trafilatura (`_kept`, tested last: `_container_query`)."""
    for query in _CONTAINER_QUERIES:
        # the <figure> test (a `closest` walk up from each) only on the match that could be taken: as
        # a filter of the list before, it ran on every match (a listing's teaser <article>s). The
        # neighbours `blocks_beside` takes share its parent and its tag (not "figure"), so the same
        # figure holds them or none does: they pass it as it does, and the same ones come back
        matches = [node for node in body.query_selector_all(query).values() if node.tag in _CONTAINER_TAGS]
        for index, first in enumerate(matches):
            if len(first.text) < MIN_CONTAINER_CHARS or not _outside_figure(first) or not _kept(first):
                continue
            kind = (first.tag, first.getattr("class"))

            def same_kind(node: Any, kind: tuple[str, str | None] = kind) -> bool:
                return (node.tag, node.getattr("class")) == kind

            return blocks_beside(matches, index, same_kind, _kept)
    return []


def blocks_beside(matches: list[Any], index: int, same_kind: Callable[[Any], bool],
                  kept: Callable[[Any], bool] | None = None) -> list[Any]:
    """The container `matches[index]` with the matches beside it that are blocks of one article.

    In document order: the matches of its kind (`same_kind`) under its parent that are in the
    unbroken run of such elements around it (no other element between them) and hold some text,
    whatever their length: a charter's short article, a section of two lines, before or after the
    long one; and, further away, those after it holding `MIN_CONTAINER_CHARS` (an article's blocks
    with a figure or an ad slot between them). A short block in the run was left out when each
    block had to hold that much: the declaration's page of two articles (dev: th, lo, km, my, vi,
    bo) lost its first, shorter one on the original and kept it on the print page, and each copy
    read 25-45 % new against its original.

    `kept`: a test a match other than the container must pass too, made last (where `matches` holds
    more than the selector's: `_containers`' matches before `_kept`)."""
    first = matches[index]
    parent = first.parent
    if parent is None:
        return [first]
    # a set: a page of thousands of such siblings was quadratic (resiliparse's nodes hash as they compare)
    run = {first}
    for step in ("prev_element", "next_element"):
        node = getattr(first, step)
        while node is not None and same_kind(node):
            run.add(node)
            node = getattr(node, step)
    return [node for number, node in enumerate(matches)
            if node == first or (node.parent == parent and same_kind(node) and node.text.strip()
                                 and (node in run or (number > index and len(node.text) >= MIN_CONTAINER_CHARS))
                                 and (kept is None or kept(node)))]


def main_content_text(source: Any, skip: list[str] | None = None) -> str:
    """Resiliparse's main-content text of a tree or HTML, without the `skip` selectors.

    resiliparse's main-content text of a tree or HTML, skipping the `skip` selectors (the
    options every resiliparse extraction here uses)."""
    from resiliparse.extract.html2text import extract_plain_text

    return extract_plain_text(source, main_content=True, alt_texts=False, links=False, list_bullets=False,
                              noscript=False, skip_elements=skip)


# A <ul> is the article's own when at most this share of its text is link text: resiliparse's
# main-content pass drops every <ul> (and keeps every <ol>), an article's bulleted list with the menus.
CONTENT_LIST_LINK_SHARE = 0.5
# ... and its items hold this many words on average (a run of letters; a character of a script
# written without spaces counts as one): not a row of buttons ("Facebook", "Print", "Email").
CONTENT_LIST_ITEM_WORDS = 2
# ... and it sits inside at most this many other <ul>s (resiliparse reads a deeper one inside the <ol> made
# above it). Each list made an <ol> copies its markup, so lists nested N deep would copy it N times (a
# crafted 350 kB page of 240-deep lists: 2.3 s CPU against 10 ms for resiliparse's pass; 4 levels: 89 ms)
MAX_LIST_NESTING = 3
_LIST_WORD = regex.compile(r"[\p{Han}\p{Hiragana}\p{Katakana}\p{Thai}\p{Lao}\p{Khmer}\p{Myanmar}\p{Tibetan}]|\w+")


def _opens_with_link(item: Any) -> bool:
    """Whether a list item's text starts with the text of its first link that has text (a linked title).

    An image link before it (a teaser's thumbnail) has no text of its own and does not count."""
    links = item.query_selector_all("a[href]")
    for index in range(len(links)):
        title = links.item(index).text.strip()
        if title:
            return bool(item.text.strip().startswith(title))
    return False


def is_content_list(ul: Any) -> bool:
    """Whether a <ul> is text of the article: mostly not link text, items of a few words each.

    Menus, tag lists, share bars, "related" and pagination lists are links (or single words), and
    a listing of other pages opens every item with a link, whatever its teaser's length; a list of
    facts, steps or ingredients is text. Measured on the list's own text, nested lists
    included (a list of links with a sub-list of links is links)."""
    text = ul.text
    length = len(text.strip())
    if not length:
        return False
    links, most = 0, CONTENT_LIST_LINK_SHARE * length
    found = ul.query_selector_all("a")
    for index in range(len(found)):  # one link object at a time (iterating or indexing makes them all)
        links += len(found.item(index).text.strip())
        if links > most:
            return False
    items = ul.query_selector_all("li")
    if len(items) > 1 and all(_opens_with_link(items.item(index)) for index in range(len(items))):
        return False  # a listing of other pages: each item a linked title, then its teaser
    return len(_LIST_WORD.findall(text)) >= CONTENT_LIST_ITEM_WORDS * max(1, len(items))


def content_lists(tree: Any) -> int:
    """Make each content <ul> of a parsed container an <ol>, which resiliparse reads; how many it made.

    The <ol> has the list's attributes (the skip selectors match it as they matched the list, and its
    ancestors as before: a list in a share bar stays out) and its markup, re-parsed by lexbor (moving
    the items one by one makes a Python object of each node: 3 ms for a list of 500 items, 0.5 ms so).
    Last list first: a nested list is decided, and made an <ol>, before the list that holds it is copied."""
    if tree.body is None:
        return 0
    made = 0
    found = tree.body.query_selector_all("ul")
    deep = tree.body.query_selector_all("ul " * (MAX_LIST_NESTING + 1) + "ul")
    too_deep = {deep.item(index) for index in range(len(deep))}
    for index in reversed(range(len(found))):
        ul = found.item(index)
        if ul in too_deep or not is_content_list(ul):
            continue
        ol = tree.create_element("ol")
        for name in ul.attrs:
            ol.set_attribute(name, ul.get_attribute(name) or "")
        ol.inner_html = ul.inner_html
        ul.replace_with(ol)
        made += 1
    return made


def container_text(blocks: list[Any], lists: bool = True) -> str:
    """The blocks' main text as `steered_text` makes it: each block's inside, without what trafilatura discards.

    Each block's inside is parsed apart (its own class may name what the skip list drops:
    "l-sidebar-fixed l-article-body"); `lists`: its content lists read (`content_lists`)."""
    return _container_read(blocks, lists)[0]


def _container_read(blocks: list[Any], lists: bool = True) -> tuple[str, int]:
    """`container_text`, and how many content lists it read (none: the text `lists=False` makes)."""
    from resiliparse.parse.html import HTMLTree

    texts = []
    made = 0
    for block in blocks:
        markup = block.inner_html
        inside = HTMLTree.parse(markup)
        # lexbor writes each <ul> it holds as "<ul": where none is, no list to read (~0.02 ms of queries spared)
        if lists and "<ul" in markup:
            made += content_lists(inside)
        texts.append(discarded_text(inside.body, inside, may_hold_cards(markup)))
    return "\n".join(texts), made


def discarded_text(root: Any, source: Any, cards: bool = True) -> str:
    """Resiliparse's main text of `source` (a tree, or `root` itself) without `DISCARD_SELECTORS`.

    The link cards under `root` (`clean.link_cards`) and its link trails (`clean.trails`: a breadcrumb
    no class names) are marked for the walk, and unmarked after; what
    the walk skips may stand before a card's title (a date line). `cards` False: `root` holds none
    (`link_cards.may_hold_cards`; nor a trail, which has two links too), and none is looked for."""
    if not cards:
        return main_content_text(source, DISCARD_SELECTORS)
    with cards_marked(root, DISCARD_SELECTORS[0]), trails_marked(root):
        return main_content_text(source, DISCARD_SELECTORS)


def steered_text(tree: Any) -> str:
    """Steps 1 and 2: the article element's main text without the elements trafilatura discards."""
    return steered_blocks(tree)[0]


def steered_blocks(tree: Any) -> tuple[str, list[Any]]:
    """`steered_text`, and the elements it read (none: the whole page)."""
    return _steered(tree)[:2]


def _steered(tree: Any) -> tuple[str, list[Any], int]:
    """`steered_blocks`, and how many content lists its text read (`_container_read`)."""
    if tree.body is None:
        return main_content_text(tree, NOSCRIPTS), [], 0
    blocks = _containers(tree.body)
    if not blocks:
        return discarded_text(tree.body, tree), [], 0
    text, made = _container_read(blocks)
    return text, blocks, made


# How far resiliparse's main-content text of the whole page (the same discards, no container) may
# differ in length from the container's for the two to agree that the page holds no more (step 3).
WHOLE_PAGE_AGREEMENT = 0.1


def whole_page_agrees(text: str, tree: Any) -> bool:
    """Whether the whole page's main-content text is the container's text, give or take `WHOLE_PAGE_AGREEMENT`.

    resiliparse's main-content pass over the whole page, without the container and with the same
    discards, finds as much text as the container holds (within WHOLE_PAGE_AGREEMENT of its
    length): the page has no main content outside its container, so the container's short text is
    the page's, not a lead box or a wrapper that missed the article. A text under
    MIN_CONTAINER_CHARS never agrees: trafilatura distrusts so little text too."""
    if len(text) < MIN_CONTAINER_CHARS:  # too little to say anything (trafilatura's MIN_EXTRACTED_SIZE)
        return False
    whole = main_content_text(tree, DISCARD_SELECTORS)
    return abs(len(whole) - len(text)) <= WHOLE_PAGE_AGREEMENT * len(text)


def fast_texts(html: str, visible: bool) -> Texts:
    """The page's main text and, if `visible`, all its visible text, from one parse.

    One parse, because the template model learns from the visible text: a second pass parsed each page twice.
    The whole text is also what the rescue bounds compare with, so it is made at most once. Where
    trafilatura's rescue replaces the article element's text, that text is kept beside it (`Texts.steered`)."""
    from resiliparse.parse.html import HTMLTree

    def read(source: str) -> Texts:
        tree = HTMLTree.parse(source)
        return fast_read(html, visible, tree, functools.cache(lambda: extract_all_text(tree, NOSCRIPTS)))[0]

    sources = noscript_sources(html)  # noscripts as a browser with scripting on reads them
    texts = read(sources.scripting_on)
    return read(sources.opened) if reads_opened(sources, texts.main) else texts


def reads_opened(sources: Sources, main: str) -> bool:
    """Whether a page is read as a browser with scripting off shows it: a `<noscript>` never closed, and no main text.

    Under `MIN_CONTAINER_CHARS` of main text without it, the page is (nearly) all in that noscript;
    a page showing text of its own gets nothing a browser with scripting on hides added to it."""
    return bool(sources.opened) and len(main.strip()) < MIN_CONTAINER_CHARS


def fast_read(html: str, visible: bool, tree: Any, page_text: Callable[[], str]) -> tuple[Texts, list[Any], str]:
    """`fast_texts` of a page parsed (`tree`, its whole text `page_text`), with where its text came from.

    The elements of the page it read (`steered_blocks`; none: the whole page), and trafilatura's
    text where it rescued the page (else "", and the elements' text is not the page's main text):
    what `learned_layout` learns from."""
    text, blocks, made = _steered(tree)
    steered = rescued = ""
    # the container's text without its content lists: its text itself where it read none (~0.06 ms a
    # crawl page spared: a second parse, card search and walk of each block)
    if covers_little(text, page_text) and blocks and whole_page_agrees(
            container_text(blocks, lists=False) if made else text, tree):
        # a brief page: its container holds all the main content the whole page has (step 3's
        # agreement); its text stands, as trafilatura's rescue would have
        return Texts(text, page_text() if visible else "", text), blocks, text
    if covers_little(text, page_text):
        # a wrapper named like boilerplate ("has-sidebar") skipped with the article, a lead box
        # taken for the container, or a page whose own text is short: trafilatura, whose rescue
        # rule this is
        steered = text
        rescued = trafilatura_extract.extract_trafilatura(html, page_text, [TEASER_CARDS_XPATH])
        text = rescued or main_content_text(tree, NOSCRIPTS)
    return Texts(text, page_text() if visible else "", steered), blocks, rescued


def extract_fast(html: str) -> str:
    """The main text the `fast` extractor finds in an HTML page."""
    return fast_texts(html, visible=False)[0]
