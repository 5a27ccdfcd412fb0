"""A container read as trafilatura reads it in precision mode: by its paragraphs, not its bare `<div>` text.

trafilatura turns its container into text element by element (`main_extractor._extract`,
`handle_textelem`): a paragraph, a heading, a list, a quote, a table, a formatting element (b, i,
strong, em: `hi`) with the text after it, and the text after a `<br>` (an `lb`'s tail) or after a
list, table, quote or code block (`REBUILT_BLOCKS`) each become a paragraph; a `<div>`'s own text goes
through `handle_other_elements`, which drops it unless "div" is among the tags it reads, and "div"
joins them only where the page's `<p>` text is under `min_extracted_size` (250 characters; precision
mode's factor 1). Links and spans are stripped into their parent first (`convert_tags`, links off;
`prune_unwanted_sections`), so their text is the parent's. On a page written in paragraphs the text
held directly in a `<div>` is a teaser's summary, a link list's titles, a petition's counter, a form's
labels: the host's lines that a syndicated copy carries and its original does not (dev:
multilingual-dev-light_edit-00345 and -00485, 252 words of "Vorherige Artikel" / "Empfohlen" teasers
each, found with it). resiliparse reads every text node; here the container's markup loses the
text trafilatura would drop before lexbor parses it.

The container's own `<p>` text stands in for the page's (trafilatura tests the whole cleaned page):
the container's is never more, so the rule applies on fewer pages than trafilatura's, never more.
"""

from __future__ import annotations

import re

# Elements whose own text trafilatura drops on such a page (its `handle_other_elements`); "" is the
# container itself, whose inside the markup is
HOLDERS = frozenset({"", "div", "section", "article", "main", "center", "details", "header", "form", "body"})
# ... unless they sit in an element whose whole text it reads, a <div> inside included: a paragraph,
# a list item, a table cell, a quote, a code block, a heading
READ_WHOLE = frozenset({"p", "li", "dt", "dd", "td", "th", "caption", "blockquote", "pre", "code",
                        "h1", "h2", "h3", "h4", "h5", "h6"})
# Inline elements trafilatura strips into their parent before reading (links off, spans): their text
# is their parent's own
STRIPPED_INLINE = frozenset({"a", "span", "font", "small", "abbr", "time", "label", "big"})
# Elements whose tail (the text right after them) trafilatura reads as a paragraph: an `lb` (<br>,
# <hr>), a rebuilt block (list, table, quote, code) and a formatting element (`hi`, its tail kept
# with it by `handle_formatting`)
TAIL_KEEPERS = frozenset({"br", "hr", "ul", "ol", "dl", "table", "blockquote", "pre", "code", "q", "b", "strong", "i",
                          "em", "u", "kbd", "samp", "tt", "var", "sub", "sup"})
_VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "keygen", "link", "meta", "param",
                   "source", "track", "wbr"})
# Elements whose inside lexbor writes as raw text (a "<" in a script is no tag)
_RAW = frozenset({"script", "style", "textarea", "title", "xmp", "iframe", "noembed", "noframes", "plaintext"})
# a comment, a tag (lexbor quotes every attribute value with '"', which may hold a '>'), or text
_TOKEN = re.compile(r'<!--.*?-->|<(/?)([a-zA-Z][^\s/>]*)[^>"]*(?:"[^"]*"[^>"]*)*>|[^<]+|<', re.DOTALL)


class _Open:
    """An open element: its tag, the element whose text its text is, and whether its next run is a read tail."""

    __slots__ = ("holder", "tag", "tail_next")

    def __init__(self, tag: str, parent: _Open | None) -> None:
        self.tag = tag
        # trafilatura strips a link or a span into its parent: their text is the parent's (kept
        # here, not looked up the stack each run: 10,000 nested spans were quadratic)
        self.holder: _Open = parent.holder if parent is not None and tag in STRIPPED_INLINE else self
        self.tail_next = False


def paragraphs_only(markup: str, min_paragraph_chars: int) -> str:
    """`markup` without the text runs trafilatura leaves out, where its `<p>` text reaches `min_paragraph_chars`.

    `markup`: lexbor's serialization of a container's inside (every element closed but the void
    ones, attribute values in double quotes, text escaped), read token by token, without a node
    object per element (walking lexbor's nodes from Python made `fast` 2-3x slower). A run is left
    out where its nearest element that is not a `STRIPPED_INLINE` one is a `HOLDERS` element outside
    every `READ_WHOLE` one, and it is not the first run after a `TAIL_KEEPERS` element there."""
    if "<p" not in markup:  # lexbor writes tags in lower case
        return markup
    stack = [_Open("", None)]
    whole = paragraph = paragraph_chars = 0  # READ_WHOLE and <p> elements open; <p> text
    drops: list[tuple[int, int]] = []
    raw_until = -1
    for token in _TOKEN.finditer(markup):
        start = token.start()
        if start < raw_until:
            continue  # inside a script or a style
        tag = token.group(2)
        if tag is None:
            text = token.group(0)
            if text.startswith("<!--") or not text.strip():
                continue
            paragraph_chars += paragraph and len(text.strip())
            if not whole:
                holder = stack[-1].holder
                if holder.tag in HOLDERS:
                    if holder.tail_next:
                        holder.tail_next = False
                    else:
                        drops.append((start, token.end()))
            continue
        if token.group(1):  # a closing tag: pop to its element (lexbor closes each, in order)
            for index in range(len(stack) - 1, 0, -1):
                if stack[index].tag == tag:
                    for entry in stack[index:]:
                        whole -= entry.tag in READ_WHOLE
                        paragraph -= entry.tag == "p"
                    del stack[index:]
                    if tag in TAIL_KEEPERS:
                        stack[-1].holder.tail_next = True
                    break
            continue
        if tag not in STRIPPED_INLINE:
            stack[-1].holder.tail_next = tag in TAIL_KEEPERS and tag in _VOID  # a <br>: its tail is read
        if tag in _VOID:
            continue
        if tag in _RAW:
            close = markup.find(f"</{tag}", token.end())
            raw_until = len(markup) if close < 0 else close
        stack.append(_Open(tag, stack[-1]))
        whole += tag in READ_WHOLE
        paragraph += tag == "p"
    if paragraph_chars < min_paragraph_chars or not drops:
        return markup
    pieces, kept_from = [], 0
    for begin, stop in drops:
        pieces.append(markup[kept_from:begin])
        kept_from = stop
    pieces.append(markup[kept_from:])
    return "".join(pieces)
