"""A page's `<noscript>` elements as a browser with scripting on reads them, before lexbor parses it.

lexbor (resiliparse's parser) parses as a browser with scripting off: a `<noscript>`'s inside is
markup, and the extractors then leave the element out, as a browser with scripting on hides it.
The two views disagree where the inside leaves an element open: `<noscript><div id="nojs"></noscript>`
(a "JavaScript is off" banner opened in one noscript and closed in another at the page's end) makes
the scripting-off parser ignore `</noscript>` (a `<div>` is open), so the whole page after it is
inside the noscript, and nothing is read (trafilatura test page parcoabruzzo.it.58354: rejected
`no_text`). A browser with scripting on reads a noscript's inside as raw text up to the first
`</noscript>`, hides it, and shows the page after it. Here each noscript is named `template`
(`NOSCRIPT_ELEMENT`), whose end tag closes whatever its inside left open (the parser pops up to the
template) and whose inside goes to a fragment of its own: never shown, left out of every text
pass and of its ancestors' text (which `fast`'s container sizes read), in the head as in the
body (a `<noscript><img>` in the head no longer ends the head, so the title stays out of the
text). What sat inside stays out of the text, as today; what follows is read. Renamed, not cut
out of the source by a pattern: the tokenizer itself decides where a tag is one (not in a
script's string, a comment or an attribute). One difference from raw text: a `</noscript>` inside a
comment or a script within the noscript does not end it, so such a page hides more of its own text,
never text of another; a page cannot add text with it.

A `<noscript>` that no `</noscript>` follows holds the rest of the document: with scripting on
nothing of it shows, with scripting off all of it does (trafilatura, whose parser reads it as markup,
reads it). `opened` is that view: such a start tag named `span`, an ordinary element. The extractor
takes it only where the scripting-on view holds almost no main text (`fast_extract.fast_texts`, and
`learned_layout.learned_texts` where it falls back to `fast`): a page whose visible text is
something else does not get text that a browser with scripting on hides added to it.

One substitution of a regular expression over the page (in C): linear, once a page (twice where a
noscript is never closed); at most one more parse, where `opened` is read.
"""

from __future__ import annotations

import re
from typing import NamedTuple

# What a noscript is named: an element whose inside is never shown (module docstring)
NOSCRIPT_ELEMENT = "template"
# A tag is named by what follows "<" or "</" up to white space, "/" or ">" (the tokenizer's tag name state)
_NOSCRIPT_TAG = re.compile(r"<(/?)noscript(?=[\s/>])", re.IGNORECASE)


class Sources(NamedTuple):
    """A page's HTML as a browser with scripting on parses its noscripts, and the scripting-off view of an open one.

    `opened` is "" when no `<noscript>` start tag lacks a `</noscript>` after it."""

    scripting_on: str
    opened: str = ""


def noscript_sources(html: str) -> Sources:
    """The page with each noscript named `template`, and `opened` (module docstring)."""
    tags: list[tuple[int, str]] = []  # (where, "/" for an end tag)

    def rename(tag: re.Match[str]) -> str:
        tags.append((tag.start(), tag.group(1)))
        return f"<{tag.group(1)}{NOSCRIPT_ELEMENT}"

    on = _NOSCRIPT_TAG.sub(rename, html)  # the substitution in C: the common page has a few noscripts
    if not tags:
        return Sources(html)
    last_end = max((where for where, end in tags if end), default=-1)
    if tags[-1][1]:  # the last is an end tag: every start tag has one after it
        return Sources(on)

    def opened(tag: re.Match[str]) -> str:
        name = "span" if not tag.group(1) and tag.start() > last_end else NOSCRIPT_ELEMENT
        return f"<{tag.group(1)}{name}"

    return Sources(on, _NOSCRIPT_TAG.sub(opened, html))
