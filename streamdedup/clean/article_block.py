"""Which lines of a page's main text sit in its article's block: the element holding most of its words.

An extractor leaks a host's lines into the main text (breadcrumbs, a petition form, a newsletter
box, teasers of other stories), and at a copy's edges they read as new text like a paragraph an
editor added. The two differ in where they sit: an article's paragraphs, and one an editor adds,
are in the article's element; a host's lines are in other elements (nav, aside, footer, forms,
teaser boxes) even when the extractor keeps them. The article's block is the deepest element whose
text holds at least half of the words of the main text's paragraphs (`HOLDING`); a line is in it
when the element it was read from is inside that block (`verdict/new_text.py` reads the mark), or
when it is the article's lead: a standfirst between the title and the block (`_leads`).
File mode asks where a mark decides (`LazyInside`); the global topology's fingerprint step asks
of every page, and the marks travel in its encoded word-pairs signature (`inside_marks`).
"""

from __future__ import annotations

import functools
import itertools
import re
from typing import Any

import numpy as np

from streamdedup.clean.decode import charset_from_content_type, decode_bytes
from streamdedup.clean.extract import is_html
from streamdedup.clean.normalize import normalize_text
from streamdedup.clean.template import line_hashes
from streamdedup.record.page import Page
from streamdedup.record.readers import DEFAULT_MAX_CONTENT_BYTES
from streamdedup.record.rejection import Rejected

# the article's block holds at least this share of the words of the main text's located paragraphs
HOLDING = 0.5
# lines of at least this many words decide where the article's block is (the paragraph sketch's floor)
PARAGRAPH_WORDS = 12
# a page's HTML longer than this is not parsed again (a bound on the work; its lines' places are not known)
MAX_HTML_CHARS = 2_000_000
_SPACES = re.compile(r"\s+")
_WIDE_CHARS = r"[\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u0f00-\u0fff\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]"
_HAN_RUNS = r"[\u3400-\u9fff]{2,}"


@functools.cache
def _pattern(source: str) -> re.Pattern[str]:
    """One of this module's wide character classes, compiled at its first use.

    Compiling their ranges is ~2.6 ms (`_WIDE_CHARS`) and ~0.9 ms (`_HAN_RUNS`) of a process's
    start-up; only HTML pages' article blocks ask them, and a run over plain text never does."""
    return re.compile(source)

UNKNOWN, INSIDE, OUTSIDE = -1, 1, 0


def inside_marks(page: Page, text: str, hashes: np.ndarray, found: np.ndarray | None = None) -> np.ndarray:
    """Of the lines of `text` whose hashes (`clean.template.line_hashes`) are `hashes`: in the article's block or not.

    bool per hash: True where the line is `INSIDE` (`article_lines`); False where it is outside,
    not asked or not found, and for every line of a page whose content cannot be decoded, is not
    HTML or is longer than `MAX_HTML_CHARS` (the old rule: `verdict.line_places.counted_new`). File mode
    asks where they decide (`LazyInside`); the global topology's fingerprint step of every page,
    and they travel in its encoded word-pairs signature (`fingerprints.wordpairs`): both read the
    same marks. `found`: the hashes of all of `text`'s lines, if the caller has them (made here if not)."""
    none = np.zeros(len(hashes), dtype=np.bool_)
    if not len(hashes):
        return none
    html = page_html(page)
    if not html:
        return none
    found, marks = line_hashes(text) if found is None else found, article_lines(html, text)
    if len(found) != len(marks) or not (marks == INSIDE).any():
        return none
    order = np.argsort(found, kind="stable")
    found, inside = found[order], marks[order] == INSIDE
    at = np.clip(np.searchsorted(found, hashes), 0, len(found) - 1)
    return (found[at] == hashes) & inside[at]


class LazyInside:
    """`inside_marks` of a page's kept paragraphs, found when first called (then the page is let go).

    File mode's way (`own_text`): only a page whose new line at a copy's edge is excused without
    them asks (`verdict.new_text`), a few of a crawl's pages (web and multilingual dev: 3.6 %). The
    global topology's fingerprint step calls it for every page (`own_text.placed_now`): its index
    step judges a page from its encoded signature, which carries the marks."""

    __slots__ = ("_found", "_hashes", "_marks", "_page", "_text")

    def __init__(self, page: Page, text: str, hashes: np.ndarray, found: np.ndarray | None = None) -> None:
        self._page: Page | None = page
        self._text, self._hashes, self._found = text, hashes, found
        self._marks: np.ndarray | None = None

    def __call__(self) -> np.ndarray:
        """The page's article-block marks, found at the first call and kept (all False without a page)."""
        if self._marks is None:
            page, self._page = self._page, None
            self._marks = (inside_marks(page, self._text, self._hashes, self._found) if page is not None
                           else np.zeros(len(self._hashes), dtype=np.bool_))
        return self._marks


def page_html(page: Page) -> str:
    """The page's HTML, decoded as `clean.pipeline` decodes it ("" where it cannot be, or is no HTML)."""
    content = page.content
    if isinstance(content, bytes):
        try:
            content = decode_bytes(content, charset_from_content_type(page.content_type),
                                   max_bytes=DEFAULT_MAX_CONTENT_BYTES)
        except Rejected:
            return ""
    return content if len(content) <= MAX_HTML_CHARS and is_html(page.content_type, content) else ""


_FULL_HTML = re.compile(r"^\s*<(?:html|!doctype)", re.I)  # `lxml.html.fromstring`'s test of a whole document


def _parsed(html: str) -> Any | None:
    """The page's tree as `lxml.html.fromstring` makes it (None: an empty document).

    A whole document is the same parse (libxml2's, the same options) with lxml's plain elements:
    `lxml.html`'s are made by a Python lookup, each element once a walk reaches it (web dev: the
    marks cost 5.2 CPU ms a page against 6.1, the same marks on web, multilingual and site dev).
    A fragment is `lxml.html.fromstring`'s: it returns an element of the body, or the body renamed."""
    import lxml.etree
    import lxml.html

    if _FULL_HTML.match(html):
        return lxml.etree.fromstring(html, _plain_parser())
    return lxml.html.fromstring(html)


@functools.cache
def _plain_parser() -> Any:
    """libxml2's HTML parser with `lxml.html`'s options (its defaults), making plain elements."""
    import lxml.etree

    return lxml.etree.HTMLParser()


def _words(line: str) -> int:
    """A line's words: its spaced tokens, or half its letters in scripts written without spaces."""
    wide = len(_pattern(_WIDE_CHARS).findall(line))
    return max(len(line.split()), wide // 2) if wide else len(line.split())


def article_lines(html: str, text: str) -> np.ndarray:
    """Of each non-empty line of `text` (the page's normalised main text): in the article's block or not.

    int8 per line: `INSIDE` (in the block, or the article's lead: `_leads`), `OUTSIDE`, or
    `UNKNOWN`: a line under `PARAGRAPH_WORDS` words (not asked), one not found in the page (a
    rescue's text, a line the extractor joined), or a page where no element inside its body holds
    half the words (every line would be in the block). A line is found by a run of text of one
    element (`_runs`): its element's nearest block (not an inline element) is where it sits."""
    lines = [line for line in text.split("\n") if line]
    out = np.full(len(lines), UNKNOWN, dtype=np.int8)
    asked = [i for i, line in enumerate(lines) if _words(line) >= PARAGRAPH_WORDS]
    if not asked or "<" not in html:
        return out
    import lxml.etree

    try:
        tree = _parsed(html)
    except (ValueError, TypeError, lxml.etree.ParserError):
        return out
    if tree is None:
        return out
    runs, alike = _runs(tree)
    where: dict[int, Any] = {}
    texts: dict[Any, str] = {}  # the blocks' texts `_holding` read, each read once
    for i in asked:
        element = _found(lines[i], runs, alike, texts)
        if element is not None:
            where[i] = element
    weights: dict[Any, int] = {}
    total = 0
    for i, element in where.items():
        words = _words(lines[i])
        total += words
        node = element.getparent()  # the paragraphs' parent and up: a long paragraph is no block of its own
        while node is not None:
            weights[node] = weights.get(node, 0) + words
            node = node.getparent()
    holding = [node for node, words in weights.items() if words >= HOLDING * total]
    if not holding:
        return out
    # the deepest: the holding ones form a chain up to the root
    block = max(holding, key=lambda node: sum(1 for _ in node.iterancestors()))
    if block.tag in _WHOLE:
        return out
    for i, element in where.items():
        out[i] = INSIDE if any(a is block for a in element.iterancestors()) else OUTSIDE
    outside = {i: element for i, element in where.items() if out[i] == OUTSIDE}
    for i in _leads(tree, block, outside, lines):
        out[i] = INSIDE
    return out


# a word of the title at least this long (letters), shared with a line, says the line speaks of its story
TITLE_WORD_CHARS = 4
_WORD = re.compile(r"\w+")


def _leads(tree: Any, block: Any, outside: dict[int, Any], lines: list[str]) -> list[int]:
    """Of the lines outside the article's block (`outside`: index -> element), those that are its lead.

    A standfirst (a deck, an intro, a teaser of the article itself) sits between the article's
    title and its body, often in a box of its own beside the block; it is the article's own text.
    A lead: a line after the page's first `<h1>` before the block, and before the block in document
    order, that shares a word (`_title_words`) with the last `<h1>` before it. A host's lines at a
    page's start (a cookie notice, a banner) sit before the title; a template's leftover lead of
    another story (the labelled sets' syndicated copies keep their host page's deck, epigraph or
    subtitle under the copied title) shares no word with it. Real pages (`bench/outside_own_text.py
    --pairs`, dev split): 14 of the 21 copies losing a line of 20+ words were duplicates for want
    of it; of the other 7 standfirsts, 6 share no word with their title and 1 sits straight in the
    block's element (read as outside it)."""
    if not outside:
        return []
    around = set(block.iterancestors())
    position: dict[Any, int] = {}
    titles: list[tuple[int, Any]] = []
    for k, node in enumerate(tree.iter()):
        if node is block:
            break
        position[node] = k
        if node.tag == "h1":
            titles.append((k, node))
    if not titles:
        return []
    leads = []
    for i, element in outside.items():
        at = position.get(element)
        # a line owned by an ancestor of the block may be text after it (a tail): not known to be before
        if at is None or at <= titles[0][0] or element in around:
            continue
        title = next(node for k, node in reversed(titles) if k < at)
        if _title_words(normalize_text(" ".join(title.itertext()))) & _title_words(lines[i]):
            leads.append(i)
    return leads


def _title_words(text: str) -> set[str]:
    """A text's words of `TITLE_WORD_CHARS`+ letters (not numbers), and its pairs of Chinese characters.

    Chinese is written without spaces, and two characters are about a word. Not in the other
    scripts without spaces (kana, Thai, Khmer, ...), where a pair is part of a word or an ending
    most lines share: a line there counts only by a whole run of 4+ letters, which lines seldom
    share (the old rule)."""
    words = {w for w in _WORD.findall(text) if len(w) >= TITLE_WORD_CHARS and not w.isdigit()}
    for run in _pattern(_HAN_RUNS).findall(text):
        words.update(run[k:k + 2] for k in range(len(run) - 1))
    return words


# elements that sit inside a line of text: a line found in one is in its nearest other ancestor
_INLINE = frozenset({"a", "abbr", "b", "bdi", "bdo", "cite", "code", "data", "dfn", "em", "font", "i", "kbd", "mark",
                     "q", "s", "samp", "small", "span", "strong", "sub", "sup", "time", "u", "var", "wbr", "br",
                     "label", "big", "tt", "strike", "ins", "del", "nobr"})
_SKIPPED = frozenset({"script", "style", "noscript", "template", "head", "title", "meta", "link"})
_WHOLE = frozenset({"html", "body"})  # a block no narrower than the page: every line would be in it
RUN_CHARS = 24  # a run of an element's text this long (normalised) finds the line that holds it


def _runs(tree: Any) -> tuple[dict[str, Any], dict[str, list[Any]]]:
    """Each run of text's first `RUN_CHARS` characters (normalised) -> its element; and the keys of several.

    A run: an element's text before its first child, or the text after a child (its tail), which
    belongs to the child's parent. Each is normalised from its first `_PREFIX_CHARS` characters,
    all of them in one `normalize_text` call (one call a run cost 3 of a page's 5 CPU ms, web dev).
    The first element of each key, and for a key several runs start with (a title made of its
    lead's opening words, a box repeating them), every one of its elements in document order:
    `_found` tells which holds the line."""
    raws: list[str] = []
    owners: list[Any] = []
    for element in tree.iter():
        if not isinstance(element.tag, str):
            continue
        for raw, owner in ((element.text, element), (element.tail, element.getparent())):
            if owner is None or owner.tag in _SKIPPED or not raw or len(raw) < RUN_CHARS:
                continue
            raws.append(raw)
            owners.append(owner)
    runs: dict[str, Any] = {}
    alike: dict[str, list[Any]] = {}
    for key, owner in zip(_run_keys(raws), owners, strict=True):
        if not key:
            continue
        first = runs.setdefault(key, owner)
        if first is not owner:
            alike.setdefault(key, [first]).append(owner)
    return runs, alike


_PREFIX_CHARS = 64  # of a run's text (spaces tidied) normalised for its key: NFKC and case folding move few


def _run_keys(raws: list[str]) -> list[str]:
    """Each raw run's key: the first `RUN_CHARS` characters of it normalised ("" where it has fewer)."""
    heads = [_SPACES.sub(" ", raw[:2 * _PREFIX_CHARS]).strip()[:_PREFIX_CHARS] for raw in raws]
    asked = [i for i, head in enumerate(heads) if len(head) >= RUN_CHARS]
    keys = [""] * len(raws)
    if not asked:
        return keys
    # one line each (their spaces are tidied: no newline left); a head NFKC or the tidying empties
    # would shift the lines: then one call each
    normalised = normalize_text("\n".join(heads[i] for i in asked)).split("\n")
    if len(normalised) != len(asked):
        normalised = [normalize_text(heads[i]) for i in asked]
    for i, run in zip(asked, normalised, strict=True):
        run = _SPACES.sub(" ", run).strip()
        if len(run) >= RUN_CHARS:
            keys[i] = run[:RUN_CHARS]
    return keys


def _found(line: str, runs: dict[str, Any], alike: dict[str, list[Any]], texts: dict[Any, str]) -> Any | None:
    """The block element one of the line's runs of text was found in, or None.

    Tried from each word's start (each character's where the line has no spaces), first found; the
    starts are found as tried (most lines are found from their first word). Where several runs
    start alike (`alike`), the line is in the block whose text holds it (`_holding`; `texts`: theirs
    read)."""
    starts = itertools.chain((0,), (m.end() for m in _SPACES.finditer(line))) if " " in line else range(len(line))
    for start in starts:
        if start + RUN_CHARS > len(line):
            break
        key = line[start:start + RUN_CHARS]
        element = runs.get(key)
        if element is not None:
            if key not in alike:
                return _block_of(element)
            return _holding(line[start:], [_block_of(e) for e in alike[key]], texts)
    return None


def _block_of(element: Any) -> Any:
    """The element a run of text sits in: itself, or its nearest ancestor that is not an inline element."""
    while element.tag in _INLINE and element.getparent() is not None:
        element = element.getparent()
    return element


def _holding(line: str, blocks: list[Any], texts: dict[Any, str]) -> Any:
    """Of the blocks whose text has a run starting as `line` does (in document order), the one whose text is the line's.

    The block whose text goes on as the line does the furthest from where the run starts (a title of
    the lead's first 60 characters stops there; the lead's paragraph holds it all, its links read
    through); of those going as far, the one whose text is nearest the line's length (a box
    repeating the lead's opening words is that line, not the lead); of those holding it alike, the
    first, as before rules version 24: a line the page holds twice is either's (a title repeated in
    the block, a title that is the whole lead: reading it in the block if either is put titles there
    on 40 web dev pages and cost multilingual dev 4 true pairs with merges). `texts`: the blocks'
    normalised texts read so far (added to)."""
    key = line[:RUN_CHARS]

    def fit(block: Any) -> tuple[int, int]:
        text = texts.get(block)
        if text is None:
            text = texts[block] = _SPACES.sub(" ", normalize_text(" ".join(block.itertext()))).strip()
        at = max(text.find(key), 0)
        return _common_prefix(text, at, line), -abs(len(text) - at - len(line))

    return max(blocks, key=fit)  # the first of those that fit best


def _common_prefix(text: str, at: int, line: str) -> int:
    """How many characters of `text` from `at` are `line`'s first ones (by halves: a few slices compared)."""
    low, high = 0, min(len(text) - at, len(line))
    while low < high:
        middle = (low + high + 1) // 2
        if text[at:at + middle] == line[:middle]:
            low = middle
        else:
            high = middle - 1
    return low
