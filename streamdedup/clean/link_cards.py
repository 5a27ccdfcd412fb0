"""Link cards: sibling blocks that each link to one other page and open with that link's text.

A listing of other pages ("more news", "recommended", a footer's row of linked boxes) is a run of
sibling blocks of one kind, each a card: a link to one page (its thumbnail, its title and its
"read more" all point there), whose text starts with the linked title, then maybe its teaser
(before the title, only what the text walk skips anyway: a date line of `HOST_LINES`). No
class name says so on many templates ("col-sm-4", "one-text", "ct-link"), and the cards hold no
heading, so `fast_extract.TEASER_CARDS` (a link that holds a heading) misses them; on a host's first
pages no template has taught them either, and their teasers read as the page's new text
(docs/limitations.md, the cold host). An article's own text is not such a run: its paragraphs and
sections link to several pages or to none, and do not each open with a link (a roundup's linked
paragraphs are `<p>`s, not cards: only `<div>`, `<article>`, `<section>`, and an `<a>` that holds a
block, are taken as cards).

Marked, not removed: the cards get `CARD_ATTRIBUTE`, which `fast`'s skip list (`CARDS`) matches in
resiliparse's own text walk, and lose it after the text is read (`cards_marked`): the tree others
read (the layout model's selectors) is as it was.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

CARD_ATTRIBUTE = "data-streamdedup-card"
# the selector `fast`'s skip list holds
CARDS = f"[{CARD_ATTRIBUTE}]"
# the elements a card can be: a block, or a link that holds one (an inline link is a sentence's)
_CARD_TAGS = frozenset({"div", "article", "section", "a"})
_BLOCK_IN_LINK = "div, p, h1, h2, h3, h4, h5, h6"
# where a run of cards can be: two blocks that can be cards side by side, each holding a link (a
# CSS test in lexbor, so that only their parents are walked in Python: a walk of every element
# cost ~2 ms a page, this ~0.1)
_MAYBE_CARD = (":is(div:has(a[href]), article:has(a[href]), section:has(a[href]), "
               f"a[href]:has({_BLOCK_IN_LINK}))")
_TWO_SIDE_BY_SIDE = f"{_MAYBE_CARD} + {_MAYBE_CARD}"
# a run of cards has at least two
MIN_CARDS = 2


def _opens_with(node: Any, text: str, title: str, skipped: str) -> bool:
    """Whether `text` opens with `title`, once what `skipped` matches in `node` is left out before it.

    `skipped`: the selector of what the text walk leaves out (a card's date line: "26.9.2022", then
    its linked title); its matches are queried only where something stands before the title."""
    at = text.find(title)
    if at < 0:
        return False
    before = text[:at]
    if not before.strip():
        return True
    if not skipped:
        return False
    found = node.query_selector_all(skipped)
    for index in range(len(found)):
        before = before.replace(found.item(index).text, " ", 1)
    return not before.strip()


def _target(node: Any, skipped: str = "") -> str | None:
    """The one page a card links to, or None where `node` is not a card.

    A card: its text opens with the text of its first link that has text (`_opens_with`), and each of
    its links (itself, if a link) points to that page, which is not a place on this page (`#...`) nor
    a script. A card opening with a few words of its own (a kicker) is not taken: allowing 3 let a
    recipe's nutrition and ingredient blocks go on trafilatura's pages."""
    links = node.query_selector_all("a[href]")
    title = href = ""
    if node.tag == "a":
        title, href = node.text.strip(), node.getattr("href") or ""
    else:
        for index in range(len(links)):
            link = links.item(index)
            title = link.text.strip()
            if title:
                href = link.getattr("href") or ""
                break
    href = href.strip()
    if not title or not href or href.startswith("#") or href.lower().startswith("javascript:"):
        return None
    # one page: a link elsewhere in the card to another page makes it a block of text with links
    # (tested before the card's text, which costs its whole subtree)
    for index in range(len(links)):
        if (links.item(index).getattr("href") or "").strip() != href:
            return None
    return href if _opens_with(node, node.text.strip(), title, skipped) else None


def _kind(node: Any) -> tuple[str, str | None]:
    """A block's kind among its siblings: its tag and its first class.

    Not its whole class: the cards of one row carry state classes beside their own ("teaser
    has--video", "teaser has--gallery"; "card card--featured"), and by their whole class a row of
    three was three kinds of one card each, none a run."""
    classes = (node.getattr("class") or "").split()
    return node.tag, classes[0] if classes else None


def _could_be_card(node: Any) -> bool:
    return node.tag in _CARD_TAGS and (node.tag != "a" or node.query_selector(_BLOCK_IN_LINK) is not None)


def parents_of(root: Any, selector: str) -> Iterator[Any]:
    """The parents of the elements under `root` that `selector` matches, each once, in document order."""
    found = root.query_selector_all(selector)
    seen: set[Any] = set()  # (resiliparse's nodes hash as they compare)
    for index in range(len(found)):
        parent = found.item(index).parent
        if parent is not None and parent not in seen:
            seen.add(parent)
            yield parent


def link_cards(root: Any, skipped: str = "") -> list[Any]:
    """The cards under `root` (a parsed tree's body or element): runs of `MIN_CARDS` or more siblings.

    `skipped`: what the text walk leaves out, which may stand before a card's title (`_opens_with`).

    A run: the children of one parent with one tag and one class, each a card (`_target`), linking
    to pages that differ (a run of blocks all linking to one page is that page's own: a gallery, a
    form's steps)."""
    cards: list[Any] = []
    for parent in parents_of(root, _TWO_SIDE_BY_SIDE):
        kinds: dict[tuple[str, str | None], list[Any]] = {}
        child = parent.first_element_child
        while child is not None:
            if _could_be_card(child):
                kinds.setdefault(_kind(child), []).append(child)
            child = child.next_element
        for members in kinds.values():
            if len(members) < MIN_CARDS:
                continue
            targets: set[str] = set()
            for member in members:  # most runs fail at their first block: the others are not read
                target = _target(member, skipped)
                if target is None or target in targets:
                    break
                targets.add(target)
            else:
                cards.extend(members)
    return cards


def may_hold_cards(markup: str) -> bool:
    """Whether the tree parsed from `markup` (as lexbor writes it) may hold a run of cards: two links.

    A run holds `MIN_CARDS` cards, each a link or holding one, and lexbor writes a link with its href
    as "<a " (a "<a " in a script's text only makes it answer yes). Where it says no, the search
    (~0.05 ms a block of a crawl's containers, two in three of which hold fewer than two links) is
    not made."""
    first = markup.find("<a ")
    return first >= 0 and markup.find("<a ", first + 3) >= 0


@contextmanager
def marked(nodes: list[Any]) -> Iterator[int]:
    """`nodes` marked `CARD_ATTRIBUTE` while the block runs (yields how many), unmarked after."""
    for node in nodes:
        node.setattr(CARD_ATTRIBUTE, "")
    try:
        yield len(nodes)
    finally:
        for node in nodes:
            node.delattr(CARD_ATTRIBUTE)


def cards_marked(root: Any, skipped: str = "") -> AbstractContextManager[int]:
    """`root`'s link cards marked `CARD_ATTRIBUTE` while the block runs (yields how many), unmarked after."""
    return marked(link_cards(root, skipped) if root is not None else [])
