"""How deep a page's markup nests, before any parser sees it: deeper nesting is flattened in linear time.

resiliparse's main-content pass costs about elements x depth (50,000 nested divs: 31 s inside C,
where no alarm reaches), and lxml ends the document where it meets depth 256. So markup nested
deeper than MAX_NESTING elements is flattened before extraction, as a browser does past 512: the
tags that would open an element deeper than the limit are dropped, with the end tags that close
them, and all the text stays. A page is never rejected for its depth (a reader's comment of nested
quotes must not take the article it sits on with it). Pages within the limit (nearly all) are
neither copied nor changed.

The depth is estimated as an HTML parser builds the tree (`nesting_depth`, the readable reference;
`flattened_markup`, the reference of the flattening): a tag runs to its '>' and quoted attribute
values hold no markup; an end tag closes the nearest open element of its name (a stray one is
ignored); p, li, td and the like do not count (the next one closes them), nor void elements,
comments and script or style text. Inside svg or math (foreign content) every element nests, `/>`
closes it at once, there is no raw text, and an HTML tag such as div or p ends the foreign content
(the HTML standard's "breakout"); foreignObject, desc, title, mi, mo, mn, ms and mtext hold HTML.
`flatten_nesting` runs the same estimate compiled (numba) over the page's UTF-8 bytes, visiting
only its '<'s.
"""

from __future__ import annotations

import re
import secrets
from typing import NamedTuple

import numpy as np

from streamdedup.jit import numba

# Measured: 1,292 real pages (trafilatura's and Readability's test pages) are at most 42 elements deep
# (68 by `nesting_depth`'s estimate); Chrome stops nesting at 512; lxml (trafilatura, `fast`'s rescue)
# ends the whole document where it meets depth 256, and the estimate leaves out html and body: 250
# keeps the flattened page's text whole for every extractor (512 left trafilatura no text at all)
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
# what a dropped tag must not leave behind, joined to the text after it: the start of a tag or
# comment (`<` + `<b>` + `i>` would become `<i>`); such a tag leaves one space instead
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
    _, starts, ends, spaced = _scan(data, opens, limit, True)
    kept = _without(data, starts, ends, spaced).tobytes()
    return kept.decode("utf-8", "surrogatepass"), kept


def nesting_depth(html: str, stop_above: int | None = None) -> int:
    """The deepest element nesting, estimated as an HTML parser builds it (see the module's docstring).

    Stops as soon as the depth exceeds `stop_above`. The reference `compiled_depth` is tested
    against."""
    return _walk(html, stop_above, flatten=False)[0]


def flattened_markup(html: str, limit: int = MAX_NESTING) -> str:
    """`html` without the tags that open elements deeper than `limit`, nor their end tags.

    The reference `flatten_nesting` is tested against. A dropped tag right after what could start
    a tag or comment (`_OPENINGS`) leaves a space."""
    pieces, kept_from = [], 0
    for start, end, spaced in _walk(html, limit, flatten=True)[1]:
        pieces += [html[kept_from:start], " " if spaced else ""]
        kept_from = end
    return "".join(pieces) + html[kept_from:]


def _walk(html: str, limit: int | None, flatten: bool) -> tuple[int, list[tuple[int, int, bool]]]:
    """The deepest nesting and, if `flatten`, the tags to drop: (start, end, leaves a space)."""
    stack: list[_Open] = []
    deepest, drops, dropped_to = 0, [], 0
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
                drop = stack[nearest].dropped
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
        if drop:
            drops.append((at, after, html[max(dropped_to, at - 3):at].endswith(_OPENINGS)))
            dropped_to = after
        at = html.find("<", after)
    return deepest, drops


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
# A tag name is keyed by a 64-bit FNV-1a hash of its ASCII-lower-cased UTF-8 bytes (two names that
# collide would close each other: at worst a page is judged shallower and meets the extraction
# helper's hard time limit instead). The raw-text names are matched by their bytes too.
_FNV_OFFSET = np.uint64(0xCBF29CE484222325)
_FNV_PRIME = np.uint64(0x100000001B3)


def _fnv(name: str) -> int:
    value = int(_FNV_OFFSET)
    for byte in name.encode():
        value = ((value ^ byte) * int(_FNV_PRIME)) & 0xFFFFFFFFFFFFFFFF
    return value


def _keys(names: frozenset[str] | tuple[str, ...]) -> np.ndarray:
    return np.array(sorted({_fnv(name) for name in names}), dtype=np.uint64)


_NOT_NESTING_KEYS = _keys(_NOT_NESTING)
_BREAKOUT_KEYS = _keys(_BREAKOUT)
_SVG_HTML_KEYS = _keys(_HTML_INSIDE[_SVG])
_MATH_HTML_KEYS = _keys(_HTML_INSIDE[_MATH])
_SVG_KEY, _MATH_KEY = _fnv("svg"), _fnv("math")
# the name table's hash multiplies the key by a number drawn for each process: a page cannot be
# written whose names all fall in one place of the table (that would make its scan quadratic)
_MIXER = np.uint64(secrets.randbits(64) | 1)
_RAW_KEYS = np.array([_fnv(name) for name in _RAW_TEXT], dtype=np.uint64)
_RAW_NAMES = np.zeros((len(_RAW_TEXT), 8), dtype=np.uint8)  # zero-padded
_RAW_LENGTHS = np.array([len(name) for name in _RAW_TEXT], dtype=np.int64)
for _row, _name in enumerate(_RAW_TEXT):
    _RAW_NAMES[_row, : len(_name)] = np.frombuffer(_name.encode(), dtype=np.uint8)


def compiled_depth(raw: bytes, stop_above: int) -> int:
    """`nesting_depth` of a page's UTF-8 bytes, compiled; stops above `stop_above`."""
    return _scan(*_tags(raw), stop_above, False)[0]


def compiled_flattening(raw: bytes, limit: int) -> bytes:
    """`flattened_markup` of a page's UTF-8 bytes, compiled (whether or not it is deeper)."""
    data, opens = _tags(raw)
    _, starts, ends, spaced = _scan(data, opens, limit, True)
    return bytes(_without(data, starts, ends, spaced).tobytes())


def _tags(raw: bytes) -> tuple[np.ndarray, np.ndarray]:
    """The page's bytes and where every '<' is, found at numpy's vector speed: the scan visits only these."""
    data = np.frombuffer(raw, dtype=np.uint8)
    return data, np.flatnonzero(data == 60)


def _scan(data: np.ndarray, opens: np.ndarray, limit: int,
          flatten: bool) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
    """The deepest nesting (stopping above `limit` unless `flatten`), and the tags to drop."""
    starts = np.empty(len(opens) if flatten else 0, dtype=np.int64)
    ends, spaced = np.empty_like(starts), np.empty(len(starts), dtype=np.bool_)
    deepest, count = _depth(data, opens, limit, flatten, starts, ends, spaced, _NOT_NESTING_KEYS, _BREAKOUT_KEYS,
                            _SVG_HTML_KEYS, _MATH_HTML_KEYS, np.uint64(_SVG_KEY), np.uint64(_MATH_KEY), _RAW_KEYS,
                            _RAW_NAMES, _RAW_LENGTHS, _MIXER)
    return int(deepest), starts[:count], ends[:count], spaced[:count]


def _without(data: np.ndarray, starts: np.ndarray, ends: np.ndarray, spaced: np.ndarray) -> np.ndarray:
    """`data` without the byte spans [starts, ends) (in order, apart); a `spaced` one leaves a space."""
    kept = data.copy()
    kept[starts[spaced]] = 32
    cut = np.zeros(len(data) + 1, dtype=np.int32)
    cut[starts + spaced] += 1  # a spaced span keeps its first byte, now the space
    cut[ends] -= 1  # (each index once: the spans are apart)
    return kept[np.cumsum(cut[:-1]) == 0]


@numba.njit(cache=True, inline="always")
def _lower(byte: int) -> int:
    return byte + 32 if 65 <= byte <= 90 else byte


@numba.njit(cache=True, inline="always")
def _is_letter(byte: int) -> bool:
    return 97 <= _lower(byte) <= 122


@numba.njit(cache=True, inline="always")
def _is_space(byte: int) -> bool:  # the standard's ASCII white space: \t \n \f \r and ' '
    return byte == 32 or byte == 9 or byte == 10 or byte == 12 or byte == 13


@numba.njit(cache=True, inline="always")
def _has(keys: np.ndarray, key: np.uint64) -> bool:
    slot = np.searchsorted(keys, key)
    return bool(slot < len(keys) and keys[slot] == key)


@numba.njit(cache=True)
def _starts_with_name(data: np.ndarray, at: int, names: np.ndarray, lengths: np.ndarray, row: int) -> bool:
    """data[at:] starts with raw-text name `row`, any case."""
    size = lengths[row]
    if at + size > len(data):
        return False
    for k in range(size):
        if _lower(data[at + k]) != names[row, k]:
            return False
    return True


@numba.njit(cache=True)
def _find_comment_end(data: np.ndarray, start: int) -> int:
    """Where the comment whose text starts at `start` ends (after its '-->'), else the page's end."""
    n = len(data)
    for i in range(start, n - 2):
        if data[i] == 45 and data[i + 1] == 45 and data[i + 2] == 62:
            return i + 3
    return n


@numba.njit(cache=True)
def _tag_end(data: np.ndarray, j: int) -> tuple[int, bool]:
    """Where the tag whose attributes start at `j` ends (after its '>'), and whether it ends in `/>` (`_TAG`)."""
    n = len(data)
    while j < n:
        byte = data[j]
        if byte == 62:  # '>'
            return j + 1, False
        if _is_space(byte):
            j += 1
            continue
        if byte == 47:  # '/'
            if j + 1 < n and data[j + 1] == 62:
                return j + 2, True
            j += 1
            continue
        j += 1  # an attribute's name (its first byte may be '='), then maybe '=' and its value
        while j < n and not _is_space(data[j]) and data[j] != 47 and data[j] != 61 and data[j] != 62:
            j += 1
        k = j
        while k < n and _is_space(data[k]):
            k += 1
        if k < n and data[k] == 61:  # '='
            k += 1
            while k < n and _is_space(data[k]):
                k += 1
            if k < n and (data[k] == 34 or data[k] == 39):  # a quoted value: to its closing quote
                quote = data[k]
                k += 1
                while k < n and data[k] != quote:
                    k += 1
                j = min(k + 1, n)
            else:
                while k < n and not _is_space(data[k]) and data[k] != 62:
                    k += 1
                j = k
    return n, False


@numba.njit(cache=True)
def _slot(names_seen: np.ndarray, seen: np.ndarray, key: np.uint64, mixer: np.uint64) -> int:
    """Where name `key` is in the table of names (open addressing, placed there if new)."""
    mask = np.int64(len(names_seen) - 1)
    slot = np.int64((key * mixer) >> np.uint64(32)) & mask
    while seen[slot] and names_seen[slot] != key:
        slot = (slot + np.int64(1)) & mask
    seen[slot] = True
    names_seen[slot] = key
    return int(slot)


@numba.njit(cache=True)
def _opening_before(data: np.ndarray, start: int, at: int) -> bool:
    """data[start:at] ends with what could start a tag or comment (`_OPENINGS`)."""
    if at - 1 >= start and data[at - 1] == 60:
        return True
    if at - 2 >= start and data[at - 2] == 60 and (data[at - 1] == 47 or data[at - 1] == 33):
        return True
    return at - 3 >= start and data[at - 3] == 60 and data[at - 2] == 33 and data[at - 1] == 45


@numba.njit(cache=True)
def _depth(data: np.ndarray, opens: np.ndarray, limit: int, flatten: bool, starts: np.ndarray, ends: np.ndarray,
           spaced: np.ndarray, not_nesting: np.ndarray, breakout: np.ndarray, svg_html: np.ndarray,
           math_html: np.ndarray, svg: np.uint64, math: np.uint64, raw_keys: np.ndarray, names: np.ndarray,
           lengths: np.ndarray, mixer: np.uint64) -> tuple[int, int]:
    n = len(data)
    size = len(opens) + 2 if flatten else limit + 2  # each element opened takes one '<'
    stack = np.empty(size, dtype=np.uint64)
    inside = np.empty(size, dtype=np.int8)
    dropped = np.empty(size, dtype=np.bool_)
    # how many elements of each name are open, by name (a table of the page's names, each '<' at
    # most one): an end tag whose name is not open closes nothing, known without searching the
    # stack, and one that is open is found as deep as it closes (the stack of a flattened page
    # grows with it: a page of stray end tags or nested divs stays linear)
    table_size = 16
    while table_size < 2 * len(opens) + 2:
        table_size *= 2
    names_seen = np.zeros(table_size, dtype=np.uint64)
    seen = np.zeros(table_size, dtype=np.bool_)
    open_count = np.zeros(table_size, dtype=np.int32)
    slots = np.empty(size, dtype=np.int64)  # each open element's place in the table
    top = 0
    deepest = 0
    count = 0
    dropped_to = 0
    i = 0  # where the scan is: '<'s before it were inside a comment, raw text or a tag
    at = 0
    while at < len(opens):
        i_at = opens[at]
        at += 1
        if i_at < i:
            continue
        i = i_at
        if i + 3 < n and data[i + 1] == 33 and data[i + 2] == 45 and data[i + 3] == 45:  # a comment
            i = _find_comment_end(data, i + 4)
            continue
        j = i + 1
        end_mark = j < n and data[j] == 47  # '/'
        if end_mark:
            j += 1
        if j >= n or not _is_letter(data[j]):
            i += 1
            continue  # not a tag: the next '<' may be one
        key = np.uint64(0xCBF29CE484222325)
        while j < n and not _is_space(data[j]) and data[j] != 47 and data[j] != 62:
            key = (key ^ np.uint64(_lower(data[j]))) * np.uint64(0x100000001B3)
            j += 1
        after, self_closing = _tag_end(data, j)
        drop = False
        content = inside[top - 1] if top > 0 else 0
        if end_mark:
            if open_count[_slot(names_seen, seen, key, mixer)] > 0:
                k = top - 1
                while k >= 0 and stack[k] != key:
                    k -= 1
                if k >= 0:  # closes it and everything opened inside it
                    drop = dropped[k]
                    while top > k:
                        top -= 1
                        open_count[slots[top]] -= 1
        else:
            raw = -1
            if content == 0:
                for row in range(len(raw_keys)):
                    if raw_keys[row] == key:
                        raw = row
            if raw >= 0:  # its text, to the end tag: at one of the next '<'s
                close = n
                for later in range(at, len(opens)):
                    k = opens[later]
                    if (k >= after and k + 1 < n and data[k + 1] == 47
                            and _starts_with_name(data, k + 2, names, lengths, raw)):
                        close = k
                        break
                after = close
            else:
                if content != 0 and _has(breakout, key):
                    while top > 0 and inside[top - 1] != 0:
                        top -= 1
                        open_count[slots[top]] -= 1
                    content = 0
                if content != 0:
                    nests = not self_closing
                else:
                    nests = not _has(not_nesting, key) and not (self_closing and (key == svg or key == math))
                if nests:
                    drop = flatten and top >= limit
                    inner = content
                    if not drop:
                        if content == 0:
                            inner = 1 if key == svg else 2 if key == math else 0
                        elif _has(svg_html if content == 1 else math_html, key):
                            inner = 0
                    stack[top] = key
                    inside[top] = inner
                    dropped[top] = drop
                    slots[top] = _slot(names_seen, seen, key, mixer)
                    open_count[slots[top]] += 1
                    top += 1
                    if top > deepest:
                        deepest = top
                        if deepest > limit and not flatten:
                            break
        if drop:
            starts[count] = i
            ends[count] = after
            spaced[count] = _opening_before(data, max(dropped_to, i - 3), i)
            count += 1
            dropped_to = after
        i = after
    return deepest, count
