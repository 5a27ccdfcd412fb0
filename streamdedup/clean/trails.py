"""Link trails: a run of links joined only by separator glyphs ("Home > News > Politics").

A breadcrumb trail, a row of section links ("News | Sport | Weather") or of tags ("a / b / c") is
made the same way on every template and in every language: links, each followed by a separator
glyph (`SEPARATORS`) and nothing else, maybe ending with the current page's name unlinked. It is
the host's navigation, never the article's text: prose puts words between its links, and a
list of an article's sources is items, not links joined by ">". trafilatura knows a trail only by
its class name ("breadcrumb"); many templates name it otherwise (SPIP's "arbo", "path",
"ariane", "fil"), and on a host's first pages no template has taught it either, so it read as
the page's new text (docs/limitations.md, the cold host).

Marked, not removed, as `clean.link_cards` marks its cards (`CARD_ATTRIBUTE`, which `fast`'s skip
list matches), and unmarked after the text is read.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

from resiliparse.parse.html import NodeType

from streamdedup.clean.link_cards import marked, parents_of

# the glyphs a trail puts between its links (hierarchy arrows and chevrons, slashes, bars, bullets)
SEPARATORS = frozenset(">»›/\\|→⟶❯❱▸►▶⟩〉≫·•")
# a trail has at least this many links, and this many steps (its links and the current page's name): two
# links joined by a slash are as often alternatives in an article's list ("Blob / File", readability's
# page 002) as a trail
MIN_LINKS = 2
MIN_STEPS = 3
# elements that hold a trail's links as their own children (an inline element's are a sentence's; a list
# item's two links are alternatives: a trail of list items puts one link in each)
_HOLDERS = frozenset({"p", "div", "nav", "span", "header", "section", "small", "td"})


def _split(text: str) -> tuple[bool, bool]:
    """Of a text node's text (not blank): whether it opens with a separator glyph, and whether words follow it.

    " > " is a separator alone; " » Streit um die Brücke" a separator, then the current page's name."""
    stripped = text.strip()
    glyphs = len(stripped) - len(stripped.lstrip("".join(SEPARATORS) + " \t\n\r\f\v\xa0"))
    return glyphs > 0, glyphs < len(stripped)


def _is_link(node: Any) -> bool:
    """Whether an element is a link to another page with text of its own."""
    if node.tag != "a":
        return False
    href = (node.getattr("href") or "").strip()
    return bool(href) and not href.startswith("#") and bool(node.text.strip())


# what a trail's unlinked last step (the current page's name) never is nor holds: a block of text
_BLOCKS = ("p, div, section, article, main, aside, h1, h2, h3, h4, h5, h6, ul, ol, dl, table, blockquote, pre, "
           "figure, form")
_BLOCK_TAGS = frozenset(_BLOCKS.split(", "))


def _is_name(node: Any) -> bool:
    """Whether an element can be a trail's last step: an inline element holding no block (a name, not an article)."""
    return node.tag not in _BLOCK_TAGS and node.query_selector(_BLOCKS) is None


def is_trail(holder: Any) -> bool:
    """Whether an element's children are a trail: link (separator link)+, then maybe a separator and one item.

    At least `MIN_LINKS` links and `MIN_STEPS` steps (links and the item).
    Whitespace and comments between them do not count; anything else (a word, another element
    between two links, a second item after the last separator) makes it no trail. The one item
    after the last separator is the current page's name (unlinked: text, or an inline element holding
    no block, `_is_name`: an article after a trail's last separator is not its step)."""
    links = 0
    expect_link = True
    after_last = 0  # items after a separator that follows the last link
    node = holder.first_child
    while node is not None:
        kind = node.type
        if kind == NodeType.TEXT and node.text.strip():
            separator, words = _split(node.text)
            if separator:
                if expect_link or after_last:
                    return False
                expect_link = True
            if words:
                if not expect_link or after_last:
                    return False
                after_last += 1  # the current page's name, after a separator
        elif kind == NodeType.ELEMENT:
            if not expect_link or after_last:
                return False
            if _is_link(node):
                links += 1
                expect_link = False
            elif links >= MIN_LINKS - 1 and node.text.strip() and _is_name(node):
                after_last += 1
            else:
                return False
        node = node.next
    return links >= MIN_LINKS and links + after_last >= MIN_STEPS and (not expect_link or after_last == 1)


def link_trails(root: Any) -> list[Any]:
    """The elements under `root` (a parsed tree's body or element) whose children are a trail (`is_trail`)."""
    return [holder for holder in parents_of(root, "a[href] + a[href], a[href] ~ a[href]")
            if holder.tag in _HOLDERS and is_trail(holder)]


def trails_marked(root: Any) -> AbstractContextManager[int]:
    """`root`'s link trails marked `CARD_ATTRIBUTE` while the block runs (yields how many), unmarked after."""
    return marked(link_trails(root) if root is not None else [])
