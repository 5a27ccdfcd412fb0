"""Extraction learned per site: where a site's article lives, as a selector, and the text from it.

A crawl visits the same sites again and again. `fast` (fast_extract.py) answers, for every page,
"where is the article on a page I have never seen": trafilatura's container rules in lexbor, and
for a page they miss (a brief, a container named like boilerplate) trafilatura's whole rescue,
about 12 ms a page. A site's pages share one template, so its earlier pages say where the article
is; a later page is then read from that container in one parse (docs/template-model.md, "the
learned layout").

Pure parts, no state kept here:

- `observe` (`selector_for`, `holding_element`): from a page `fast` read, the container its text
  came from, as a selector a later page runs in lexbor: the element `_containers` chose, or, where
  trafilatura rescued the page, the deepest container (div, article, section, main, td) holding
  the rescued text's longest lines. Tag, stable id, stable classes (no digits: "post-123" is one
  page's), qualified by its parent's when that alone does not find the same element first; ""
  where no such selector finds it.
- `learned_texts`: a page's `Texts` read from a learned selector, or `fast`'s when the learned
  container is missing or implausible (`plausible`), with what the page showed (`Texts.layout`);
  `fast`'s with its reading of a `<noscript>` never closed (`clean.noscript`).
- `SiteLayout`: a site's learned selector and its counters, as its template record keeps it: warm
  after `WARM_AFTER` consecutive pages agreed on it, dropped (the site learns again) after
  `RELEARN_AFTER` consecutive pages it failed.
- The brief container: a second selector a site, learned only from the pages trafilatura rescued
  whose container's text has nearly the rescued words (`agrees`), read where the learned container
  fails on a warm site before `fast` is.

The request and the observation travel as short strings (through the helper process, whose
protocol carries strings): a request is "" (plain `fast`), `OBSERVE` (`fast`, and say which
container), or "<share>|<selector>" (read from the selector), followed by "\n<share>|<selector>" of
the brief container where it is warm; an observation is "fast:<share>|<selector>", "held",
"brief:miss" / "brief:lost" (read from the brief container), or "miss:<share>|<selector>" /
"lost:<share>|<selector>" (the learned container's text was implausible / it was not on the page;
`fast` read the page and saw that), each of the `fast` ones followed, where trafilatura rescued
the page, by "\n" and the selector again if its text agreed with the rescued text.
"""

from __future__ import annotations

import functools
import re
import struct
from dataclasses import dataclass
from typing import Any

from streamdedup.clean.fast_extract import (
    MIN_CONTAINER_CHARS,
    NOSCRIPTS,
    _containers,
    blocks_beside,
    container_text,
    discarded_text,
    fast_read,
    reads_opened,
)
from streamdedup.clean.noscript import noscript_sources
from streamdedup.clean.page_text import (
    SMALL_EXTRACTION_CHARS,
    SMALL_EXTRACTION_SHARE,
    Texts,
    covers_little,
    extract_all_text,
)

OBSERVE = "?"  # a request: read the page with `fast` and say which container held its text
# an observation's kinds: read from the learned container; read by `fast` (the site is cold); the
# learned container's text was implausible, or it was not on the page, and `fast` read the page
HELD, FAST, MISS, LOST = "held", "fast:", "miss:", "lost:"
# read from the site's brief container after its learned container failed (it was implausible, or
# it was not on the page: `BRIEF + "lost"`)
BRIEF = "brief:"
# A page trafilatura rescued teaches the brief container when the text `fast` reads from the
# container holding the rescued text has nearly the rescued text's words (word sets, Jaccard): at
# 0.9, at most a tenth of their distinct words differ (a dateline, a caption); a container that adds
# an author box or a list of links to a brief of a hundred words is well below it
BRIEF_AGREES = 0.9

# Pages in a row whose `fast` text came from the same selector before a site's layout is used.
# One page can be a listing or a special page whose container is its own; two in a row could be two
# pages of one kind (two galleries); three in a row of the same container, on a site's first pages,
# is the template's article container. Each page of a site still cold costs a `fast` read and the
# observation (~0.5 ms), so it is kept small.
WARM_AFTER = 3
# Pages in a row the learned container failed on before the site drops it and learns again from
# `fast`: one or two can be listings or error pages of the same site; a redesign fails on every
# page, so after three the site is read by `fast` again from its 4th page on. A page fails it when
# the container is not on it, or when its text is implausible and `fast` took the page's text from
# another container; not when `fast` found its text in the same one or in none it could name (a
# brief, which trafilatura rescues: a site of long articles shows briefs in any number in a row).
RELEARN_AFTER = 3
MAX_SELECTOR_BYTES = 512  # a longer selector is not learned (bounded per site)
# A learned container's text is plausible when it does not "cover little" of the page by the bound
# `fast` applies to its own container (trafilatura's: 3,000 characters or a fifth of the page's
# visible text), or, for a site whose learning pages were all below it (briefs, learned from where
# trafilatura's rescue found their text), is at least half the least share they showed. A site that
# learned from pages above it is held to it: a page whose container covers less is one `fast` would
# rescue (web dev: a short update whose container also held a "latest posts" list)
SHARE_SLACK = 2
_COVERS = int(1000 * SMALL_EXTRACTION_SHARE)
# A learned read inside `fast`'s own container (or holding it) stands unless that container holds
# more than this many times its text (`fast_would_read_it`): on site dev+test `fast`'s container held at most
# 1.06 times the learned text where it covered enough (2,162 against 2,298 characters: a heading),
# a lead box or a newsletter box in an article holds a third or less of it
FAST_HOLDS_MORE = 1.5
_CONTAINER_TAGS = frozenset({"article", "div", "main", "section", "td"})
_NAMED_BY_TAG = frozenset({"article", "main"})  # a bare tag that names the article's container on its own
_STABLE = re.compile(r"[A-Za-z_-]{1,64}")  # a class or id of the template, not of one page ("post-123")
_KEY_LINES = 3  # the rescued text's longest lines that must all be in the container found for it
# ... by their first and their last this many characters (whitespace as lexbor's `text` may hold it
# aside): not the first alone, which a brief's headline that is its first words also holds
_KEY_CHARS = 40


def _simple(node: Any) -> str:
    """The element as a selector by its own tag, stable id and stable classes."""
    parts = [node.tag]
    ident = node.getattr("id")
    if ident and _STABLE.fullmatch(ident):
        parts.append(f'[id="{ident}"]')
    parts += [f'[class~="{name}"]' for name in (node.getattr("class") or "").split() if _STABLE.fullmatch(name)]
    return "".join(parts)


def containers(tree: Any, selector: str) -> list[Any]:
    """The elements a learned selector takes from a page.

    Its first match holding `MIN_CONTAINER_CHARS` (as `_containers`; else its longest match, for a
    site of briefs), with the matches beside it under the same parent (an article written as
    blocks: `fast_extract.blocks_beside`)."""
    if tree.body is None:
        return []
    try:
        matches = tree.body.query_selector_all(selector).values()
    except Exception:  # noqa: BLE001 - a selector lexbor refuses (a damaged record) finds nothing
        return []
    if not matches:
        return []
    first = next((i for i, node in enumerate(matches) if len(node.text) >= MIN_CONTAINER_CHARS), None)
    if first is None:
        return [max(matches, key=lambda node: len(node.text))]
    matched = set(matches)
    return blocks_beside(matches, first, lambda node: node in matched)


def selector_for(tree: Any, node: Any) -> tuple[str, list[Any]]:
    """A selector whose `containers` on this page start with `node`, and those; ("", []) if none of the two tried does.

    The element's own (`_simple`), else under its parent's. Not a bare "div" or "section" (under
    another bare one): the template's article is named, or is the page's <article> or <main>."""
    own = _simple(node)
    tried = [own] if own != node.tag or own in _NAMED_BY_TAG else []
    parent = node.parent
    if parent is not None and parent.tag not in ("html", "#document"):
        above = _simple(parent)
        if tried or above != parent.tag or above in _NAMED_BY_TAG:
            tried.append(f"{above} > {own}")
    for selector in tried:
        if len(selector.encode()) > MAX_SELECTOR_BYTES:
            break
        found = containers(tree, selector)
        if found and found[0] == node:
            return selector, found
    return "", []


def _key_lines(text: str) -> list[str]:
    """The rescued text's longest lines, cut to their start and their end, that its container must hold.

    Both ends: a site whose headline is its brief's first words (a box holding the headline and a
    standfirst) holds each line's start, not the brief's end."""
    lines = sorted((" ".join(line.split()) for line in text.split("\n")), key=len, reverse=True)
    return [cut for line in lines[:_KEY_LINES] if len(line) >= _KEY_CHARS
            for cut in dict.fromkeys((line[:_KEY_CHARS], line[-_KEY_CHARS:]))]


def holding_element(tree: Any, text: str, near: Any = None) -> Any:
    """The deepest container element whose text holds the text's longest lines; None if none.

    Found from `near` (the element `fast` tried first, if any) up to the first element that holds
    them all, then down, one level at a time, into the child container that holds them all: a text
    computed per element on the way, not per element of the page (each element handed to Python
    costs a node object: descending from the body through every child cost ~2 ms a page)."""
    keys = _key_lines(text)
    body = tree.body
    if not keys or body is None:
        return None

    def holds(node: Any) -> bool:
        found = " ".join(node.text.split())
        return all(key in found for key in keys)

    node = near if near is not None else body
    while not holds(node):
        node = node.parent
        if node is None or node.tag in ("html", "#document"):
            return None
    while True:
        inner = next((child for child in node.children.values() if child.tag in _CONTAINER_TAGS and holds(child)),
                     None)
        if inner is None:
            return None if node.tag not in _CONTAINER_TAGS else node
        node = inner


def share_of(text: str, page_text: str) -> int:
    """The text's share of the page's visible text, per mille."""
    return min(1000, len(text) * 1000 // max(1, len(page_text)))


def plausible(text: str, page_text: str, share: int) -> bool:
    """Whether a learned container's text is the page's article, as far as one page can tell.

    Not empty, and not much smaller a part of the page's visible text than on the pages the site
    learned it from (a listing, a gallery or an error page whose element of that name holds a
    caption), unless it is long on its own (trafilatura's bound of a text that covers enough)."""
    if not text.strip():
        return False
    floor = _COVERS if share >= _COVERS else share // SHARE_SLACK
    return len(text) >= SMALL_EXTRACTION_CHARS or share_of(text, page_text) >= floor


def fast_would_read_it(text: str, tree: Any, page_text: Any, read: list[Any] | None = None) -> bool:
    """Whether `fast` would not read more of this page, or other text, than a learned read of it (`text`) holds.

    Held to `fast`'s container search on every page: the site's own pages teach it `fast`'s
    container, so on them the two are the same element; the pages an attacker publishes on the
    host can teach it any box he names, and the host's articles were then read from the box of that
    name they hold: a lead, a newsletter box every article shows (part of the article), or a reader
    discussion box of 3,000 characters or more (other text: the article was judged on its comments,
    a duplicate of the text pasted there). So a learned read stands where `fast`'s container search
    finds the same elements; or one of the two holds the other (`_all_nested`) and `fast`'s container
    holds no more than `FAST_HOLDS_MORE` times the learned text (a read that covers little must not
    stand against one that does not); or `fast`'s container covers little, where `fast` would
    rescue the page and the learned container stands in for the rescue (a site's briefs: the
    rescued text is anywhere on the page).

    `read`: the elements `text` was read from (`container_text`), if the caller has them: where
    `fast`'s container search finds those same elements, `fast` would read `text` itself, and the
    answer is yes without a main-text pass over them (~0.25 ms)."""
    blocks = _containers(tree.body)  # (~0.1-0.3 ms; their main text, ~0.25 ms more, only where the tests below ask)
    if read and len(blocks) == len(read) and all(a == b for a, b in zip(blocks, read, strict=True)):
        return True
    # each element read is `fast`'s container, holds one of its elements or is inside one: a read
    # whose first element is nested so but whose others are beside it elsewhere (the comments after
    # the article) is not what `fast` would read
    nested = not read or not blocks or _all_nested(read, blocks)
    if nested and blocks and sum(len(block.text) for block in blocks) <= FAST_HOLDS_MORE * len(text):
        return True
    steered = container_text(blocks) if blocks else discarded_text(tree.body, tree)
    if covers_little(steered, page_text):
        return True
    return nested and not covers_little(text, page_text) and len(steered) <= FAST_HOLDS_MORE * len(text)


def _all_nested(read: list[Any], blocks: list[Any]) -> bool:
    """Whether each element of `read` is one of `blocks`, holds one or is inside one.

    By the blocks' ancestors, in sets (resiliparse's nodes hash as they compare): a pair-by-pair
    test costs reads x blocks x depth, seconds on a page of thousands of sibling matches."""
    holding, kept = set(), set(blocks)
    for block in blocks:
        holding.update(_lineage(block))
    return all(one in holding or not kept.isdisjoint(_lineage(one)) for one in read)


def _lineage(node: Any) -> list[Any]:
    """The element and its ancestors."""
    found = []
    while node is not None:
        found.append(node)
        node = node.parent
    return found


def observe(tree: Any, page_text: str, main: str, blocks: list[Any], rescued: str) -> str:
    """What a page `fast` read says of its site's layout: "<share>|<selector>", or "" (nothing to learn).

    The selector of the element `fast` took its text from (`blocks`, `_containers`' choice: `main`
    is their text), or, if trafilatura rescued the page (`rescued`), of the element that holds that
    text; and the share of the page that the selector's text is, which later pages are compared
    with (`plausible`). Where trafilatura rescued the page, what it says of the brief container
    follows after a newline: the same "<share>|<selector>" if the selector's text has the rescued
    text's words (`BRIEF_AGREES`), else nothing."""
    if rescued:
        node = holding_element(tree, rescued, blocks[0] if blocks else None)
    else:
        node = blocks[0] if blocks else None
    selector, found = ("", []) if node is None else selector_for(tree, node)
    brief = "\n" if rescued else ""
    if not selector:
        return brief
    text = main if not rescued and found == blocks else container_text(found)
    if rescued:  # the selector's text must hold what trafilatura found, or it is not where the article is
        held = " ".join(text.split())
        if not all(key in held for key in _key_lines(rescued)):
            return brief
    seen = f"{share_of(text, page_text)}|{selector}"
    if rescued and agrees(text, rescued):
        brief += seen
    return seen + brief


def agrees(text: str, rescued: str) -> bool:
    """Whether a container's text has nearly the words trafilatura rescued (`BRIEF_AGREES`)."""
    words, wanted = set(text.split()), set(rescued.split())
    return len(words & wanted) >= BRIEF_AGREES * max(1, len(words | wanted))


def learned_texts(html: str, request: str, visible: bool) -> Texts:
    """The page's `Texts` read as `request` asks (module docstring); `Texts.layout` says what it saw."""
    from resiliparse.parse.html import HTMLTree

    sources = noscript_sources(html)
    tree = HTMLTree.parse(sources.scripting_on)  # as `fast_texts` reads it
    page_text = functools.cache(lambda: extract_all_text(tree, NOSCRIPTS))
    kind = FAST
    if request != OBSERVE:
        request, _, brief = request.partition("\n")
        share, _, selector = request.partition("|")
        blocks = containers(tree, selector)
        if blocks:
            text = container_text(blocks)
            if plausible(text, page_text(), int(share or 0)) and fast_would_read_it(text, tree, page_text, blocks):
                return Texts(text, page_text() if visible else "", "", HELD)
        kind = MISS if blocks else LOST
        if brief:  # the site's brief container, learned from the pages trafilatura rescued
            share, _, selector = brief.partition("|")
            found = containers(tree, selector)
            if found:
                text = container_text(found)
                if plausible(text, page_text(), int(share or 0)) and fast_would_read_it(text, tree, page_text, found):
                    return Texts(text, page_text() if visible else "", "", BRIEF + kind[:-1])
    texts, read, rescued = fast_read(html, visible, tree, page_text)
    if reads_opened(sources, texts.main):  # as `fast_texts` reads it
        opened = HTMLTree.parse(sources.opened)
        opened_text = functools.cache(lambda: extract_all_text(opened, NOSCRIPTS))
        texts, read, rescued = fast_read(html, visible, opened, opened_text)
        return texts._replace(layout=kind + observe(opened, opened_text(), texts.main, read, rescued))
    return texts._replace(layout=kind + observe(tree, page_text(), texts.main, read, rescued))


_RECORD = struct.Struct("<BHIIIHIHHH")  # version, share, streak, held, missed, the brief container's
# share, streak and misses, the two selectors' bytes; then the selectors
_VERSION = 2  # 1: no brief container


@dataclass
class SiteLayout:
    """A site's learned container and how it fared, as the site's template record keeps it.

    `selector` with `share` (per mille of the page's visible text, the least of the pages that
    taught it); `streak`: pages in a row whose `fast` text came from it while the site is cold; `warm`
    once the streak reaches `WARM_AFTER`; `held` pages read from it since; `missed` pages in a row it
    failed on. The brief container likewise (`brief`, `brief_share`, `brief_streak`,
    `brief_missed`), learned from the pages trafilatura rescued only, and read where the learned
    container failed on a warm site."""

    selector: str = ""
    share: int = 0
    streak: int = 0
    held: int = 0
    missed: int = 0
    brief: str = ""
    brief_share: int = 0
    brief_streak: int = 0
    brief_missed: int = 0

    @property
    def warm(self) -> bool:
        """Whether the site's article selector has held long enough to read its pages by it."""
        return bool(self.selector) and self.streak >= WARM_AFTER

    @property
    def brief_warm(self) -> bool:
        """Whether the site's brief selector (short pages) has held long enough to read its pages by it."""
        return bool(self.brief) and self.brief_streak >= WARM_AFTER

    def request(self) -> str:
        """How this site's next page is to be read (the module docstring's request)."""
        if not self.warm:
            return OBSERVE
        brief = f"\n{self.brief_share}|{self.brief}" if self.brief_warm else ""
        return f"{self.share}|{self.selector}{brief}"

    def observe(self, observation: str) -> str:
        """Learn from one page, in order; returns how the page was read: learned, brief, fast, fallback or relearned.

        "relearned": the page's fallback was the last the learned container could miss ("brief
        relearned": the page was read from the brief container)."""
        asked_brief = self.warm and self.brief_warm
        observation, rescued, brief = observation.partition("\n")
        if observation.startswith(BRIEF):
            self.brief_missed = 0
            if observation.endswith("lost"):  # the learned container was not on the page: it counts
                self.missed += 1
                if self.missed >= RELEARN_AFTER:  # the site learns again from its next pages
                    self.selector, self.share, self.streak, self.held, self.missed = "", 0, 0, 0, 0
                    return "brief relearned"
            return "brief"
        self._brief_seen(brief, rescued, asked_brief and observation != HELD)
        return self._observe_main(observation)

    def _brief_seen(self, brief: str, rescued: str, failed: bool) -> None:
        """The brief container learns what `fast` saw of a page: `failed` on it, or agreed with its rescue.

        `brief`: the container holding what trafilatura rescued ("<share>|<selector>", "" if none
        agreed), `rescued` non-empty if it rescued the page. Where the brief container failed on the
        page (`fast` read it), or another container held the rescued text, it counts a failure:
        dropped after `RELEARN_AFTER` in a row, then learned again."""
        agreed = brief.partition("|")[2]
        if self.brief_warm and agreed != self.brief and (failed or agreed):
            if not self._brief_failed():
                agreed = ""
        if rescued and agreed:
            self._saw_brief(brief)

    def hollow(self, read: str, seen: str) -> str:
        """Learn from a page whose learned read left it without text of its own; returns how it was read.

        `read`: how it was read (`HELD`, or a brief observation); `seen`: what `fast`, asked
        `OBSERVE`, saw of the page read again ("" if it found no text either). The container read
        failed on the page: it counts towards `RELEARN_AFTER` as if it was not on the page (the
        learned container; a brief read counts against it only where the learned one was lost, as
        a brief read does), and what `fast` saw teaches the brief container as on any page it reads.
        "fallback", or "relearned" where the learned container is dropped (the site learns again
        from what `fast` saw)."""
        observation, rescued, brief = seen.partition("\n")
        found = observation[len(FAST):] if observation.startswith(FAST) else ""
        from_brief = read.startswith(BRIEF)
        self._brief_seen(brief, rescued, from_brief)
        if from_brief and not read.endswith("lost"):
            return "fallback"
        self.missed += 1
        return self._after_miss(found)

    def _observe_main(self, observation: str) -> str:
        """`observe` for the learned container."""
        if observation == HELD:
            self.held += 1
            self.missed = 0
            return "learned"
        if observation.startswith((MISS, LOST)):
            found = observation[len(MISS):]
            elsewhere = found.partition("|")[2] not in ("", self.selector)
            if observation.startswith(LOST) or elsewhere:
                self.missed += 1
            return self._after_miss(found)
        self._saw(observation[len(FAST):] if observation.startswith(FAST) else "")
        return "fast"

    def _after_miss(self, found: str) -> str:
        """How a page the learned container failed on was read: a fallback, or relearned after `RELEARN_AFTER` in a row.

        Relearned: the container is dropped, and the site learns again from `found`, where `fast`
        read the page."""
        if self.missed < RELEARN_AFTER:
            return "fallback"
        self.selector, self.share, self.streak, self.held, self.missed = "", 0, 0, 0, 0
        self._saw(found)
        return "relearned"

    def _saw(self, found: str) -> None:
        """A page read by `fast` whose text came from `found` ("<share>|<selector>", or "")."""
        share, _, selector = found.partition("|")
        if not selector:
            self.selector, self.share, self.streak = "", 0, 0
        elif selector == self.selector:
            self.streak += 1
            self.share = min(self.share, int(share))
        else:
            self.selector, self.share, self.streak = selector, int(share), 1
        self.held = self.missed = 0

    def _saw_brief(self, found: str) -> None:
        """A page trafilatura rescued whose text the container `found` ("<share>|<selector>") agreed with.

        Three such pages agreeing on one selector, none agreeing on another between them, warm it
        (a rescued page no container agreed with, an author box beside a brief, counts neither way)."""
        share, _, selector = found.partition("|")
        if selector != self.brief:
            self.brief, self.brief_share, self.brief_streak = selector, int(share), 1
        elif not self.brief_warm:
            self.brief_streak += 1
            self.brief_share = min(self.brief_share, int(share))
        self.brief_missed = 0

    def _brief_failed(self) -> bool:
        """The warm brief container failed on a page; whether it is dropped (`RELEARN_AFTER` in a row)."""
        self.brief_missed += 1
        if self.brief_missed < RELEARN_AFTER:
            return False
        self.brief, self.brief_share, self.brief_streak, self.brief_missed = "", 0, 0, 0
        return True

    def encode(self) -> bytes:
        """The layout as the bytes the store keeps."""
        selector, brief = self.selector.encode(), self.brief.encode()
        return _RECORD.pack(_VERSION, self.share, self.streak, self.held, self.missed, self.brief_share,
                            self.brief_streak, self.brief_missed, len(selector), len(brief)) + selector + brief

    @classmethod
    def decode(cls, data: bytes) -> SiteLayout:
        """The layout `encode` wrote; an unreadable one (another version) is learned again from empty."""
        if not data or data[0] != _VERSION or len(data) < _RECORD.size:
            return cls()  # a layout this version cannot read: learned again
        (_, share, streak, held, missed, brief_share, brief_streak, brief_missed,
         size, brief_size) = _RECORD.unpack_from(data)
        selector = data[_RECORD.size: _RECORD.size + size].decode()
        brief = data[_RECORD.size + size: _RECORD.size + size + brief_size].decode()
        return cls(selector, share, streak, held, missed, brief, brief_share, brief_streak, brief_missed)
