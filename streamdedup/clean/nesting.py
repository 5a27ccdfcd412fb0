"""How deep a page's markup nests, before any parser sees it: deeper nesting is flattened in linear time.

resiliparse's main-content pass costs about elements x depth (50,000 nested divs: 31 s inside C,
where no alarm reaches), and lxml ends the document where it meets depth 256. So markup nested
deeper than MAX_NESTING elements is flattened before extraction: the tags that would open an
element deeper than the limit are dropped, with the end tags that close them, and all the text
stays. A dropped tag leaves a separator, so that the text on either side of it stays apart: a
`<br>` (void: it nests nothing) for a block's name (div, section, table, h1...), nothing for an inline
one (span, b, a...), a space for any other; a run of dropped tags side by side leaves one, the
strongest. (A browser stops nesting past 512 too, but keeps the tags: it attaches them higher up.)
A page is never rejected for its depth (a reader's comment of nested quotes must not take the
article it sits on with it). Pages within the limit (nearly all) are neither copied nor changed.

The depth is estimated as an HTML parser builds the tree (`nesting_depth`, the readable reference;
`flattened_markup`, the reference of the flattening): a tag runs to its '>' and quoted attribute
values hold no markup; an end tag closes the nearest open element of its name (a stray one is
ignored); p, li, td and the like do not count (the next one closes them), nor void elements,
comments and script or style text. Inside svg or math (foreign content) every element nests, `/>`
closes it at once, there is no raw text, and an HTML tag such as div or p ends the foreign content
(the HTML standard's "breakout"); foreignObject, desc, title, mi, mo, mn, ms and mtext hold HTML.
`flatten_nesting` runs the same estimate compiled (numba, `nesting_kernels`) over the page's UTF-8 bytes, visiting
only its '<'s.
"""

from __future__ import annotations

import re
import secrets
from typing import NamedTuple

import numpy as np

from streamdedup.clean.nesting_kernels import (
    BLOCK_NAME,
    BREAKOUT_NAME,
    INLINE_NAME,
    MATH_HTML_NAME,
    MATH_NAME,
    NOT_NESTING_NAME,
    RAW_NAME,
    SVG_HTML_NAME,
    SVG_NAME,
    scan_nesting,
    spliced,
)

# Measured: 1,292 real pages (trafilatura's and Readability's test pages) are at most 40 elements deep
# by `nesting_depth`'s estimate, 43 as lxml builds them. lxml (trafilatura, `fast`'s rescue) ends the
# whole document where it meets depth 256 (a page flattened to 512, Chrome's limit, left trafilatura
# no text at all). 250 keeps the flattened page's text whole for every extractor where tables and
# lists do not nest deep: the estimate leaves out html and body, and the parts of tables and lists
# (tbody, tr, td, li, dd...) that lxml nests, up to three a table, one a list; so an article holding
# `<table><tr><td>` x 100 (estimate 101, ~300 in lxml) or `<ul><li>` x 200 still loses the text
# after it with trafilatura (a page of 43 in lxml was 15 by the estimate: no real page comes near)
MAX_NESTING = 250

_RAW_TEXT = ("script", "style", "textarea", "title", "xmp", "iframe", "noembed", "noframes")
# elements that never hold others (void) or that the next of their kind closes (p, li, td...)
_NOT_NESTING = frozenset("area base br col embed hr img image input link meta param source track wbr keygen frame "
                         "basefont bgsound p li dt dd option optgroup tr td th rb rt rp rtc thead tbody tfoot "
                         "colgroup caption html head body".split())
# HTML start tags that end foreign content (font only with some attributes: always here, which
# can only count deeper)
_BREAKOUT = frozenset("b big blockquote body br center code dd div dl dt em embed h1 h2 h3 h4 h5 h6 head hr i img "
                      "li listing menu meta nobr ol p pre ruby s small span strong strike sub sup table tt u ul var "
                      "font".split())
# what an element's content is: HTML, svg or math (foreign); the integration points hold HTML again
_HTML, _SVG, _MATH = 0, 1, 2
_HTML_INSIDE = {_SVG: frozenset({"foreignobject", "desc", "title"}),
                _MATH: frozenset({"mi", "mo", "mn", "ms", "mtext"})}

# a start or end tag, as the standard's tokenizer reads it: a name up to white space, '/' or '>',
# then attributes whose quoted values may hold '<' and '>'; `/>` marks it self-closing (not after
# an unquoted value, which takes the '/'). An unclosed tag or quote runs to the page's end.
_TAG = re.compile(r"<(/?)([a-zA-Z][^\t\n\f\r />]*)"
                  r"(?:[\t\n\f\r ]+|/(?!>)|[^\t\n\f\r />][^\t\n\f\r /=>]*"
                  r"""(?:[\t\n\f\r ]*=[\t\n\f\r ]*(?:"[^"]*(?:"|\Z)|'[^']*(?:'|\Z)|[^\t\n\f\r >]*))?)*+"""
                  r"(/?)(?:>|\Z)")
_RAW_END = {name: re.compile("</" + name, re.IGNORECASE | re.ASCII) for name in _RAW_TEXT}
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
# what a dropped tag leaves: a line break for a block (the text on either side stays apart, as
# separate lines), nothing for an inline element (`<b>w</b>ord` is one word), a space for any other
_BLOCK = frozenset("address article aside blockquote caption center dd details dialog dir div dl dt fieldset "
                   "figcaption figure footer form h1 h2 h3 h4 h5 h6 header hgroup li listing main menu nav ol p "
                   "pre section summary table tbody td tfoot th thead tr ul".split())
_INLINE = frozenset("a abbr b bdi bdo big cite code data del dfn em font i ins kbd mark nobr q s samp small span "
                    "strike strong sub sup time tt u var".split())
_NOTHING, _SPACE, _LINE_BREAK = 0, 1, 2  # the separators, weakest first
_SEPARATORS = ("", " ", "<br>")
# what a dropped tag must not leave behind, joined to the text after it: the start of a tag or
# comment (`<` + `<b>` + `i>` would become `<i>`); such a tag leaves one space instead of nothing
_OPENINGS = ("<", "</", "<!", "<!-")


class _Open(NamedTuple):
    name: str
    inside: int  # what its content is: _HTML, _SVG or _MATH
    dropped: bool  # opened beyond the limit: the flattened page leaves its tag out


def flatten_nesting(html: str, utf8: bytes | None = None, limit: int = MAX_NESTING) -> tuple[str, bytes]:
    """The page, and its UTF-8 bytes, nested at most `limit` elements deep: the same objects if it is.

    `utf8`: the page's UTF-8 bytes, if the caller has them. Deeper markup loses the tags that
    open elements beyond the limit and their end tags (`flattened_markup`); its text stays."""
    raw = html.encode("utf-8", "surrogatepass") if utf8 is None else utf8
    data, opens = _tags(raw)
    # fewer tags than the limit cannot nest deeper: most pages are not scanned
    if len(opens) <= limit or _scan(data, opens, limit, False)[0] <= limit:
        return html, raw
    _, starts, ends, separators = _scan(data, opens, limit, True)
    kept = spliced(data, starts, ends, separators).tobytes()
    return kept.decode("utf-8", "surrogatepass"), kept


def nesting_depth(html: str, stop_above: int | None = None) -> int:
    """The deepest element nesting, estimated as an HTML parser builds it (see the module's docstring).

    Stops as soon as the depth exceeds `stop_above`. The reference `compiled_depth` is tested
    against."""
    return _walk(html, stop_above, flatten=False)[0]


def flattened_markup(html: str, limit: int = MAX_NESTING) -> str:
    """`html` without the tags that open elements deeper than `limit`, nor their end tags.

    The reference `flatten_nesting` is tested against. A dropped tag leaves its separator (see the
    module's docstring; dropped tags side by side, the strongest of theirs), and a space at least
    right after what could start a tag or comment (`_OPENINGS`)."""
    pieces, kept_from = [], 0
    for start, end, separator in _walk(html, limit, flatten=True)[1]:
        pieces += [html[kept_from:start], _SEPARATORS[separator]]
        kept_from = end
    return "".join(pieces) + html[kept_from:]


def _walk(html: str, limit: int | None, flatten: bool) -> tuple[int, list[list[int]]]:
    """The deepest nesting and, if `flatten`, the spans of tags to drop: [start, end, separator]."""
    stack: list[_Open] = []
    drops: list[list[int]] = []
    deepest, dropped_to = 0, 0
    at = html.find("<")
    while at >= 0:
        if html.startswith("<!--", at):  # a comment, to its end or the page's
            comment_end = html.find("-->", at + 4)
            at = html.find("<", comment_end + 3) if comment_end >= 0 else -1
            continue
        tag = _TAG.match(html, at)
        if tag is None:
            at = html.find("<", at + 1)
            continue
        end_mark, name, self_closing = tag[1], tag[2].translate(_ASCII_LOWER), tag[3]
        after, drop = tag.end(), False
        inside = stack[-1].inside if stack else _HTML
        if end_mark:
            nearest = next((k for k in range(len(stack) - 1, -1, -1) if stack[k].name == name), -1)
            if nearest >= 0:  # closes it and everything opened inside it
                drop, inside = stack[nearest].dropped, stack[nearest].inside
                del stack[nearest:]
        elif inside == _HTML and name in _RAW_TEXT:  # its text, to the end tag
            close = _RAW_END[name].search(html, after)
            after = close.start() if close else len(html)
        else:
            if inside != _HTML and name in _BREAKOUT:
                while stack and stack[-1].inside != _HTML:
                    stack.pop()
                inside = _HTML
            if _nests(name, inside, bool(self_closing)):
                drop = flatten and limit is not None and len(stack) >= limit
                # a dropped element is not in the flattened page: its content is its parent's kind
                stack.append(_Open(name, inside if drop else _content(name, inside), drop))
                deepest = max(deepest, len(stack))
                if not flatten and limit is not None and deepest > limit:
                    break
        if drop:  # (a dropped element's content is its parent's: `inside` is where its tag was)
            separator = _separator(name, inside, html[max(dropped_to, at - 3):at].endswith(_OPENINGS))
            if drops and drops[-1][1] == at:  # beside the last: one span, the stronger separator
                drops[-1][1:] = [after, max(drops[-1][2], separator)]
            else:
                drops.append([at, after, separator])
            dropped_to = after
        at = html.find("<", after)
    return deepest, drops


def _separator(name: str, inside: int, after_opening: bool) -> int:
    """What a dropped tag of element `name` leaves, in content `inside` (`<br>` breaks out of svg or math)."""
    if inside == _HTML and name in _BLOCK:
        return _LINE_BREAK
    return _NOTHING if name in _INLINE and not after_opening else _SPACE


def _nests(name: str, inside: int, self_closing: bool) -> bool:
    if inside != _HTML:
        return not self_closing
    return name not in _NOT_NESTING and not (self_closing and name in ("svg", "math"))


def _content(name: str, inside: int) -> int:
    """What the content of element `name` opened in content `inside` is."""
    if inside == _HTML:
        return _SVG if name == "svg" else _MATH if name == "math" else _HTML
    return _HTML if name in _HTML_INSIDE[inside] else inside


# -- the compiled scan ---------------------------------------------------------------------------
# A tag name is keyed by a 64-bit FNV-1a hash of its ASCII-lower-cased UTF-8 bytes, from a basis
# drawn for each process (a page cannot be written in advance whose names share one key: that would make the
# name table's search quadratic). The key finds a name in the table of the page's names, and the
# name's bytes decide: two names are the same only if their bytes are, whatever their keys.
_FNV_PRIME = 0x100000001B3
_FNV_BASIS = secrets.randbits(64)  # (an argument of the kernels: numba's cache would keep a global's value)
# the name table's place of a key multiplies it by a number drawn for each process too: a page
# cannot be written whose names all fall in one place of the table
_MIXER = np.uint64(secrets.randbits(64) | 1)


def _fnv(name: str) -> int:
    value = _FNV_BASIS
    for byte in name.encode():
        value = ((value ^ byte) * _FNV_PRIME) & 0xFFFFFFFFFFFFFFFF
    return value




def _known_names() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The names the scan tells apart: their keys (sorted), bytes (zero-padded), lengths and flags."""
    flags: dict[str, int] = {}
    for names, flag in ((_NOT_NESTING, NOT_NESTING_NAME), (_BREAKOUT, BREAKOUT_NAME),
                        (_HTML_INSIDE[_SVG], SVG_HTML_NAME), (_HTML_INSIDE[_MATH], MATH_HTML_NAME),
                        (("svg",), SVG_NAME), (("math",), MATH_NAME), (_RAW_TEXT, RAW_NAME),
                        (_BLOCK, BLOCK_NAME), (_INLINE, INLINE_NAME)):
        for name in names:
            flags[name] = flags.get(name, 0) | flag
    ordered = sorted(flags, key=_fnv)
    keys = np.array([_fnv(name) for name in ordered], dtype=np.uint64)
    if len(set(keys.tolist())) < len(keys):  # (odds 2^-57) the search below finds one name a key
        raise RuntimeError("two known tag names share a key: draw another basis")
    padded = np.zeros((len(ordered), max(map(len, ordered))), dtype=np.uint8)
    for row, name in enumerate(ordered):
        padded[row, : len(name)] = np.frombuffer(name.encode(), dtype=np.uint8)
    return (keys, padded, np.array([len(name) for name in ordered], dtype=np.int64),
            np.array([flags[name] for name in ordered], dtype=np.int64))


_KNOWN_KEYS, _KNOWN_NAMES, _KNOWN_LENGTHS, _KNOWN_FLAGS = _known_names()


def compiled_depth(raw: bytes, stop_above: int) -> int:
    """`nesting_depth` of a page's UTF-8 bytes, compiled; stops above `stop_above`."""
    return _scan(*_tags(raw), stop_above, False)[0]


def compiled_flattening(raw: bytes, limit: int) -> bytes:
    """`flattened_markup` of a page's UTF-8 bytes, compiled (whether or not it is deeper)."""
    data, opens = _tags(raw)
    _, starts, ends, separators = _scan(data, opens, limit, True)
    return bytes(spliced(data, starts, ends, separators).tobytes())


def _tags(raw: bytes) -> tuple[np.ndarray, np.ndarray]:
    """The page's bytes and where every '<' is, found at numpy's vector speed: the scan visits only these."""
    data = np.frombuffer(raw, dtype=np.uint8)
    return data, np.flatnonzero(data == 60)


def _scan(data: np.ndarray, opens: np.ndarray, limit: int,
          flatten: bool) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
    """The deepest nesting (stopping above `limit` unless `flatten`), and the spans to drop with their separators."""
    deepest, starts, ends, separators, count = scan_nesting(data, opens, limit, flatten, _KNOWN_KEYS, _KNOWN_NAMES,
                                                      _KNOWN_LENGTHS, _KNOWN_FLAGS, np.uint64(_FNV_BASIS), _MIXER)
    return int(deepest), starts[:count], ends[:count], separators[:count]
