"""trafilatura's link-density passes, run on `fast`'s container before resiliparse reads it (fast@9).

trafilatura (2.3.1, `main_extractor.prune_unwanted_sections`) deletes, inside its article's
container, the blocks made mostly of links: other stories' teasers, lists of links, "related"
blocks, tag lists, a paragraph that is one link. resiliparse's main-content pass keeps them, and on
a host seen once they read as new text beside a syndicated copy (docs/limitations.md, "Edge
recall"). This is trafilatura's code (`htmlprocessing.py`: `delete_by_link_density`,
`link_density_test`, `link_density_test_tables`) with the options streamdedup runs trafilatura
with (`favor_precision=True`, tables and no images, `trafilatura_extract._trafilatura`), on
lexbor's tree of the container (`fast_extract.container_text`), in trafilatura's order: divs (with
its "backtracking": a short div holding a link), lists, paragraphs, twice; then tables and quotes
(not headings: `drop_link_dense`). Its thresholds and the reasons its comments give are kept as they are.

What differs, and why: the blocks are marked (`MARK`) and skipped in resiliparse's walk, not taken
out, as its main-content pass weighs each element against the rest (`_Tree`); links in what
trafilatura's tree cleaning deletes (a <figure>'s image link, a <nav>) are not counted, but their
text is (its discard lists are not taken out first: lexbor's selector query and resiliparse's skip
disagree on some of them, and a page lost its article so); inline tags are looked through to find
a link's parent (`is_paragraph_listing`); a next sibling skips what the cleaning deletes. The work
is bounded by the container's markup (`WORK_STEPS`, `WORK_CHARS`): past it, nothing is dropped.
"""

from __future__ import annotations

from typing import Any

# trafilatura's utils.LINK_FARM_RATIO: a block of many links whose link text is this share of its text
LINK_FARM_RATIO = 0.9
# favor_precision's thresholds (`delete_by_link_density`, `link_density_test`): a div with a link under
# this many characters goes ("backtracking"), and a lone link longer than this that is 90 % of its block
BACKTRACK_CHARS = 200
LONE_LINK_CHARS = 10
# `link_density_test`'s size gate: under this many characters a block is judged by its share of link
# text (0.8) or of short links; a paragraph's bounds, then any other block's, with or without a next sibling
P_LIMIT, P_LIMIT_LAST, BLOCK_LIMIT, BLOCK_LIMIT_LAST = 30, 60, 100, 300
SHORT_LINK_CHARS = 10  # `collect_link_info`: a link text under this is short
# `link_density_test_tables`: a table under 200 characters stays; up to 1,000 it goes at 80 % link text, past at 50 %
TABLE_MIN_CHARS, TABLE_LONG_CHARS = 200, 1_000
# bounds on the work, against the container's markup length: steps up from a link to its blocks, and
# characters of the blocks' text read (lexbor's C); past either the passes stop and what is left stays
WORK_STEPS, WORK_CHARS = 1, 32

# what trafilatura strips before it tests a link's parent (MANUALLY_STRIPPED, REND_TAG_MAPPING, span)
_STRIPPED = frozenset({
    "abbr", "acronym", "address", "bdi", "bdo", "big", "cite", "data", "dfn", "font", "hgroup", "img", "ins",
    "mark", "meta", "nobr", "ruby", "small", "em", "i", "b", "strong", "u", "kbd", "samp", "tt", "var", "sub",
    "sup", "span"})
# what trafilatura's tree cleaning deletes (MANUALLY_CLEANED): no element's next sibling
_CLEANED = frozenset({
    "aside", "embed", "footer", "head", "iframe", "menu", "object", "script", "applet", "audio", "canvas", "map",
    "picture", "svg", "video", "area", "blink", "button", "datalist", "dialog", "frame", "frameset", "fieldset",
    "link", "input", "label", "legend", "marquee", "math", "menuitem", "nav", "noindex", "noscript", "optgroup",
    "option", "output", "param", "progress", "rp", "rt", "rtc", "select", "source", "style", "track",
    "textarea", "time", "use", "form", "template"})
_LIST_ITEMS = frozenset({"li", "dd", "dt", "td", "th"})  # trafilatura's item, td, th: a paragraph there stays
_DIV, _LIST, _P = frozenset({"div"}), frozenset({"ul", "ol", "dl"}), frozenset({"p"})
_TABLE, _QUOTE = frozenset({"table"}), frozenset({"blockquote"})


def trim_len(text: str) -> int:
    """The length of trafilatura's `trim(text)`: its runs of spaces made one, its ends stripped."""
    return len(" ".join(text.split()))


MARK = "data-link-dense"  # the attribute a dropped block is given
SKIP = f"[{MARK}]"  # ... and the selector resiliparse's walk skips it by


class _Tree:
    """The container's tree as trafilatura's passes see it: the blocks marked so far taken out.

    The blocks are marked, not taken out of lexbor's tree: resiliparse's main-content pass weighs
    each element against the page around it, and a tree with its link-dense blocks gone read more of
    the rest (a Yahoo page's teaser rail: precision 0.72 -> 0.28). A marked block's links are not
    counted (`_blocks`), and its text is taken off its ancestors' (`removed`). What is left of the
    work the container may cost: `steps`, `chars` (`WORK_STEPS`, `WORK_CHARS`)."""

    def __init__(self, body: Any, markup_chars: int) -> None:
        self.body = body
        self.marked: set[Any] = set()
        self.removed: dict[Any, int] = {}
        self.steps, self.chars = WORK_STEPS * markup_chars + 64, WORK_CHARS * markup_chars + 4_096
        self.links = _links(body, self)

    def spent(self) -> bool:
        return self.steps < 0 or self.chars < 0

    def text(self, node: Any) -> int:
        """The length of the node's trimmed text (`trim(text_content())`) without what is marked in it."""
        raw = node.text
        self.chars -= len(raw)
        return max(0, trim_len(raw) - self.removed.get(node, 0))

    def mark(self, node: Any) -> None:
        """Take the node out as trafilatura deletes it: its text off its ancestors', its links uncounted."""
        if node in self.marked:
            return
        gone = self.text(node)
        self.marked.add(node)
        above = node.parent
        # up to the body or a block marked before, whose own text taken off its ancestors' held this one's
        while above is not None and above != self.body and above not in self.marked:
            self.steps -= 1
            self.removed[above] = self.removed.get(above, 0) + gone
            above = above.parent
class _Block:
    """A block's links as `collect_link_info` counts them: how many, with text, their text and the short ones."""

    __slots__ = ("links", "named", "short", "text", "unlisted")

    def __init__(self) -> None:
        self.links = self.named = self.text = self.short = 0
        self.unlisted = False  # a link not alone in a paragraph of its own (`is_paragraph_listing`)


def _links(body: Any, tree: _Tree) -> list[tuple[int, list[tuple[Any, str]], Any]]:
    """Each link's text length, the elements above it to `body` with their tags, and its parent as trafilatura tests it.

    Walked once (each pass filters the same chains): resiliparse makes a Python object of each node
    reached. Links in what trafilatura's tree cleaning deleted (an image's link in a <figure>, a
    <nav>, a <form>...) are left out, as its passes never see them. The parent: the nearest element
    above the link that trafilatura's inline stripping leaves (`is_paragraph_listing`)."""
    found = body.query_selector_all("a")
    links = []
    for index in range(len(found)):
        link = found.item(index)
        length = trim_len(link.text)
        tree.chars -= length
        chain: list[tuple[Any, str]] = []
        node, cleaned, parent = link.parent, False, None
        while node is not None and node != body:
            tree.steps -= 1
            tag = node.tag
            chain.append((node, tag))
            if parent is None and tag not in _STRIPPED:
                parent = node
            if tag in _CLEANED or (tag == "figure" and node.query_selector("table") is None):
                cleaned = True
            node = node.parent
        if tree.spent():
            return []
        if not cleaned:
            links.append((length, chain, parent))
    return links


def _blocks(tree: _Tree, tags: frozenset[str]) -> dict[Any, _Block]:
    """The elements of `tags` in the tree holding a link, with their links (`collect_link_info`)."""
    marked = tree.marked
    found: list[tuple[int, list[Any], Any]] = []
    paragraphs: dict[Any, int] = {}
    for length, chain, parent in tree.links:
        tree.steps -= len(chain)
        if any(node in marked for node, _ in chain):
            continue  # in a block a pass deleted
        for node, tag in chain:
            if tag == "p":
                paragraphs[node] = paragraphs.get(node, 0) + 1
        found.append((length, [node for node, tag in chain if tag in tags], parent))
    blocks: dict[Any, _Block] = {}
    for length, above, parent in found:
        # not every link alone in a paragraph of its own (`is_paragraph_listing`)
        unlisted = parent is None or parent.tag != "p" or paragraphs.get(parent, 0) > 1
        for node in above:
            block = blocks.setdefault(node, _Block())
            block.links += 1
            if length:
                block.named += 1
                block.text += length
                block.short += length < SHORT_LINK_CHARS
            block.unlisted |= unlisted
    return blocks


def _next(node: Any, marked: set[Any]) -> Any | None:
    """The element after `node` in trafilatura's tree (`getnext()`): what its cleaning or a pass deleted skipped."""
    after = node.next_element
    while after is not None and (after.tag in _CLEANED or after in marked):
        after = after.next_element
    return after


def link_density_test(node: Any, block: _Block, text: int, marked: set[Any]) -> tuple[bool, bool]:
    """trafilatura's `link_density_test` (favor_precision): whether the block is boilerplate; whether short, with links.

    `text`: the length of its trimmed text; `marked`: the blocks dropped so far (not its next sibling)."""
    if block.links == 1 and block.text > LONE_LINK_CHARS and block.text > text * 0.9:
        return True, False  # one link that is (nearly) the whole block
    last = _next(node, marked) is None
    if node.tag == "p":
        limit = P_LIMIT_LAST if last else P_LIMIT
    else:
        limit = BLOCK_LIMIT_LAST if last else BLOCK_LIMIT
    if text < limit:
        if block.named == 0:
            return True, False
        return block.text > text * 0.8 or (block.named > 1 and block.short / block.named > 0.8), True
    # large near-total link farms at or above the gate; a handful of long sentence-links is editorial,
    # links averaging 100+ characters a listing of cards, each link alone in its paragraph a document listing
    if block.links > 4 and block.text > text * LINK_FARM_RATIO and block.text < 100 * block.named and block.unlisted:
        return True, False
    return False, False


def _table_test(block: _Block, text: int) -> bool:
    """trafilatura's `link_density_test_tables`: a table of mostly link text."""
    if text < TABLE_MIN_CHARS:
        return False
    return block.text > 0.8 * text if text < TABLE_LONG_CHARS else block.text > 0.5 * text


def _pass(tree: _Tree, tags: frozenset[str], backtracking: bool = False) -> int:
    """One of trafilatura's `delete_by_link_density` passes over the elements of `tags`; how many it marked.

    Each element is tested on the tree as the pass found it, then the doomed are marked, as trafilatura
    collects its deletions before it deletes."""
    doomed = []
    for node, block in _blocks(tree, tags).items():
        if node in tree.marked:
            continue
        text = tree.text(node)
        if tree.spent():
            return 0
        if tags is _TABLE:
            if _table_test(block, text):
                doomed.append(node)
            continue
        result, short_with_links = link_density_test(node, block, text, tree.marked)
        # favor_precision's backtracking: a div holding a link (so a child) under BACKTRACK_CHARS
        if result or (backtracking and short_with_links and text < BACKTRACK_CHARS):
            parent = node.parent
            # a paragraph holding a list item's (or a cell's) text stays: its list is judged whole (GH #788)
            if tags is _P and parent is not None and parent.tag in _LIST_ITEMS:
                continue
            doomed.append(node)
    for node in doomed:
        tree.mark(node)
    return len(doomed)


def drop_link_dense(html_tree: Any, markup_chars: int) -> int:
    """Mark the container's link-dense blocks (`MARK`) as trafilatura's passes delete them; how many.

    `html_tree`: lexbor's parse of the container's inside, read after with `SKIP` among the skipped
    selectors; `markup_chars`: the length of the container's markup, the measure of the work allowed
    (`WORK_STEPS`, `WORK_CHARS`): past it, what is left is kept."""
    body = html_tree.body
    if body is None or body.query_selector("a") is None:
        return 0
    tree = _Tree(body, markup_chars)
    unseen = body.query_selector_all("script, style")  # trafilatura's cleaning deletes them, text and all
    for index in range(len(unseen)):
        tree.mark(unseen.item(index))
    tree.marked.clear()  # not marked as dropped: resiliparse never reads them
    dropped: list[Any] = []
    for _ in range(2):
        for tags in (_DIV, _LIST, _P):
            _pass(tree, tags, backtracking=tags is _DIV)
    # not favor_precision's pass over headings: it drops an article's own title written as a link (a lone link
    # that is its whole block), which `fast` keeps (tests/clean/test_fast_extract.py, teaser cards)
    for tags in (_TABLE, _QUOTE):
        _pass(tree, tags)
    if tree.spent():
        return 0
    for node in tree.marked:
        node.set_attribute(MARK, "")
        dropped.append(node)
    return len(dropped)
