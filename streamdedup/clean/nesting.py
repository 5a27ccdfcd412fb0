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
`flatten_nesting` runs the same estimate compiled (numba) over the page's UTF-8 bytes, visiting
only its '<'s.
"""

from __future__ import annotations

import re
import secrets
from typing import NamedTuple

import numpy as np

from streamdedup.jit import numba

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
    kept = _spliced(data, starts, ends, separators).tobytes()
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


# the names the scan tells apart, each with what it is (bit flags)
_NOT_NESTING_NAME, _BREAKOUT_NAME, _SVG_HTML_NAME, _MATH_HTML_NAME = 1, 2, 4, 8
_SVG_NAME, _MATH_NAME, _RAW_NAME, _BLOCK_NAME, _INLINE_NAME = 16, 32, 64, 128, 256


def _known_names() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The names the scan tells apart: their keys (sorted), bytes (zero-padded), lengths and flags."""
    flags: dict[str, int] = {}
    for names, flag in ((_NOT_NESTING, _NOT_NESTING_NAME), (_BREAKOUT, _BREAKOUT_NAME),
                        (_HTML_INSIDE[_SVG], _SVG_HTML_NAME), (_HTML_INSIDE[_MATH], _MATH_HTML_NAME),
                        (("svg",), _SVG_NAME), (("math",), _MATH_NAME), (_RAW_TEXT, _RAW_NAME),
                        (_BLOCK, _BLOCK_NAME), (_INLINE, _INLINE_NAME)):
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
    return bytes(_spliced(data, starts, ends, separators).tobytes())


def _tags(raw: bytes) -> tuple[np.ndarray, np.ndarray]:
    """The page's bytes and where every '<' is, found at numpy's vector speed: the scan visits only these."""
    data = np.frombuffer(raw, dtype=np.uint8)
    return data, np.flatnonzero(data == 60)


def _scan(data: np.ndarray, opens: np.ndarray, limit: int,
          flatten: bool) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
    """The deepest nesting (stopping above `limit` unless `flatten`), and the spans to drop with their separators."""
    deepest, starts, ends, separators, count = _depth(data, opens, limit, flatten, _KNOWN_KEYS, _KNOWN_NAMES,
                                                      _KNOWN_LENGTHS, _KNOWN_FLAGS, np.uint64(_FNV_BASIS), _MIXER)
    return int(deepest), starts[:count], ends[:count], separators[:count]


@numba.njit(cache=True)
def _spliced(data: np.ndarray, starts: np.ndarray, ends: np.ndarray, separators: np.ndarray) -> np.ndarray:
    """`data` with each span [starts, ends) (in order, apart) replaced by its separator (`_SEPARATORS`)."""
    size = len(data)
    for span in range(len(starts)):
        size += (0, 1, 4)[separators[span]] - (ends[span] - starts[span])
    kept = np.empty(size, dtype=np.uint8)
    kept_from = 0
    at = 0
    for span in range(len(starts)):
        piece = starts[span] - kept_from
        kept[at:at + piece] = data[kept_from:starts[span]]
        at += piece
        if separators[span] == 1:
            kept[at] = 32  # ' '
            at += 1
        elif separators[span] == 2:
            kept[at], kept[at + 1], kept[at + 2], kept[at + 3] = 60, 98, 114, 62  # '<br>'
            at += 4
        kept_from = ends[span]
    kept[at:] = data[kept_from:]
    return kept


@numba.njit(cache=True, inline="always")
def _lower(byte: int) -> int:
    return byte + 32 if 65 <= byte <= 90 else byte


@numba.njit(cache=True, inline="always")
def _is_letter(byte: int) -> bool:
    return 97 <= _lower(byte) <= 122


@numba.njit(cache=True, inline="always")
def _is_space(byte: int) -> bool:  # the standard's ASCII white space: \t \n \f \r and ' '
    return byte == 32 or byte == 9 or byte == 10 or byte == 12 or byte == 13


@numba.njit(cache=True)
def _starts_with_name(data: np.ndarray, at: int, names: np.ndarray, lengths: np.ndarray, row: int) -> bool:
    """data[at:] starts with known name `row`, any case."""
    size = lengths[row]
    if at + size > len(data):
        return False
    for k in range(size):
        if _lower(data[at + k]) != names[row, k]:
            return False
    return True


@numba.njit(cache=True, inline="always")
def _same_name(data: np.ndarray, first: int, second: int, length: int) -> bool:
    """The names of `length` bytes at `first` and at `second` are the same, any case."""
    for k in range(length):
        if _lower(data[first + k]) != _lower(data[second + k]):
            return False
    return True


@numba.njit(cache=True)
def _known_row(data: np.ndarray, start: int, length: int, key: np.uint64, known_keys: np.ndarray,
               known_names: np.ndarray, known_lengths: np.ndarray) -> int:
    """The row of the name at data[start:start+length] among the known names, else -1."""
    row = int(np.searchsorted(known_keys, key))
    if (row < len(known_keys) and known_keys[row] == key and known_lengths[row] == length
            and _starts_with_name(data, start, known_names, known_lengths, row)):
        return row
    return -1


# the name table's columns, a row a name the page holds: where its first occurrence starts in the
# page and its length (the name itself), its row among the known names (-1: none), how many
# elements of that name are open
_START, _LENGTH, _ROW, _OPEN = 0, 1, 2, 3


@numba.njit(cache=True, inline="always")
def _find_name(data: np.ndarray, start: int, length: int, key: np.uint64, places: np.ndarray, keys: np.ndarray,
               names: np.ndarray, mixer: np.uint64) -> int:
    """The row of the name at data[start:start+length] in the page's name table, else -1 - its free place.

    The table: `names` (its columns above) and `keys`, a row a name; `places`, open addressing from
    a name's key to its row (-1: free), never more than half full."""
    mask = len(places) - 1
    place = np.int64((key * mixer) >> np.uint64(32)) & mask
    while places[place] >= 0:
        row = places[place]
        if keys[row] == key and names[row, _LENGTH] == length and _same_name(data, names[row, _START], start, length):
            return int(row)
        place = (place + 1) & mask
    return -1 - int(place)


@numba.njit(cache=True)
def _places(keys: np.ndarray, count: int, size: int, mixer: np.uint64) -> np.ndarray:
    """The name table's places of its first `count` rows, in a table of `size` places."""
    places = np.full(size, -1, dtype=np.int32)
    mask = size - 1
    for row in range(count):
        place = np.int64((keys[row] * mixer) >> np.uint64(32)) & mask
        while places[place] >= 0:
            place = (place + 1) & mask
        places[place] = row
    return places


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
def _opening_before(data: np.ndarray, start: int, at: int) -> bool:
    """data[start:at] ends with what could start a tag or comment (`_OPENINGS`)."""
    if at - 1 >= start and data[at - 1] == 60:
        return True
    if at - 2 >= start and data[at - 2] == 60 and (data[at - 1] == 47 or data[at - 1] == 33):
        return True
    return at - 3 >= start and data[at - 3] == 60 and data[at - 2] == 33 and data[at - 1] == 45


# what the scan keeps between its rounds (`_scan_tags`), in one array
_AT, _POSITION, _TOP, _DEEPEST, _SPANS, _NAMES, _DROPPED_TO, _DONE = range(8)


@numba.njit(cache=True)
def _depth(data: np.ndarray, opens: np.ndarray, limit: int, flatten: bool, known_keys: np.ndarray,
           known_names: np.ndarray, known_lengths: np.ndarray, known_flags: np.ndarray, basis: np.uint64,
           mixer: np.uint64) -> tuple[int, np.ndarray, np.ndarray, np.ndarray, int]:
    """The deepest nesting, and the spans to drop (starts, ends, separators, how many).

    Its arrays grow as the page needs (doubled), between rounds of `_scan_tags`, which stops
    where one is full: an array the scan's loop replaced would cost it ~3x (numba's reference
    counting of it at each tag)."""
    # the open elements (their rows in the name table), what their content is, whether dropped:
    # at most limit + 1 deep unless the page is flattened, whose dropped elements stay open too
    stack = np.empty(limit + 2, dtype=np.int32)
    inside = np.empty(limit + 2, dtype=np.int8)
    dropped = np.empty(limit + 2, dtype=np.bool_)
    # the page's names, added as they appear (`_find_name`), each with how many of its elements
    # are open: an end tag whose name is not open closes nothing, known without searching the
    # stack, and one that is open is found as deep as it closes (the stack of a flattened page
    # grows with it: a page of stray end tags or nested divs stays linear)
    places = np.full(16, -1, dtype=np.int32)
    keys = np.empty(8, dtype=np.uint64)
    names = np.empty((8, 4), dtype=np.int64)
    starts = np.empty(16, dtype=np.int64)  # the spans to drop
    ends = np.empty(16, dtype=np.int64)
    separators = np.empty(16, dtype=np.int8)
    state = np.zeros(8, dtype=np.int64)
    while True:
        _scan_tags(data, opens, limit, flatten, state, stack, inside, dropped, places, keys, names, starts, ends,
                   separators, known_keys, known_names, known_lengths, known_flags, basis, mixer)
        if state[_DONE]:
            return state[_DEEPEST], starts, ends, separators, state[_SPANS]
        if state[_TOP] == len(stack):
            stack = np.concatenate((stack, np.empty_like(stack)))
            inside = np.concatenate((inside, np.empty_like(inside)))
            dropped = np.concatenate((dropped, np.empty_like(dropped)))
        if state[_NAMES] == len(keys):
            keys = np.concatenate((keys, np.empty_like(keys)))
            names = np.concatenate((names, np.empty_like(names)))
        if 2 * (state[_NAMES] + 1) > len(places):  # never more than half full
            places = _places(keys, state[_NAMES], 2 * len(places), mixer)
        if state[_SPANS] == len(starts):
            starts = np.concatenate((starts, np.empty_like(starts)))
            ends = np.concatenate((ends, np.empty_like(ends)))
            separators = np.concatenate((separators, np.empty_like(separators)))


@numba.njit(cache=True)
def _scan_tags(data: np.ndarray, opens: np.ndarray, limit: int, flatten: bool, state: np.ndarray, stack: np.ndarray,
               inside: np.ndarray, dropped: np.ndarray, places: np.ndarray, keys: np.ndarray, names: np.ndarray,
               starts: np.ndarray, ends: np.ndarray, separators: np.ndarray, known_keys: np.ndarray,
               known_names: np.ndarray, known_lengths: np.ndarray, known_flags: np.ndarray, basis: np.uint64,
               mixer: np.uint64) -> None:
    """`_depth`'s scan from `state`, to the page's end (state[_DONE]) or to a tag one of its arrays has no room for."""
    n = len(data)
    at, i, top, deepest = state[_AT], state[_POSITION], state[_TOP], state[_DEEPEST]
    count, count_names, dropped_to = state[_SPANS], state[_NAMES], state[_DROPPED_TO]
    done = True
    while at < len(opens):
        if (top == len(stack) or count_names == len(keys) or 2 * (count_names + 1) > len(places)
                or count == len(starts)):  # a tag takes at most one more of each
            done = False
            break
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
        name_start = j
        key = basis
        while j < n and not _is_space(data[j]) and data[j] != 47 and data[j] != 62:
            key = (key ^ np.uint64(_lower(data[j]))) * np.uint64(0x100000001B3)
            j += 1
        after, self_closing = _tag_end(data, j)
        name = _find_name(data, name_start, j - name_start, key, places, keys, names, mixer)
        if name < 0:  # a new name
            places[-1 - name] = count_names
            name = count_names
            count_names += 1
            keys[name] = key
            names[name, _START] = name_start
            names[name, _LENGTH] = j - name_start
            names[name, _ROW] = _known_row(data, name_start, j - name_start, key, known_keys, known_names,
                                           known_lengths)
            names[name, _OPEN] = 0
        row = names[name, _ROW]
        flags = known_flags[row] if row >= 0 else 0
        drop = False
        content = inside[top - 1] if top > 0 else 0
        if end_mark:
            if names[name, _OPEN] > 0:  # closes it and everything opened inside it
                k = top - 1
                while stack[k] != name:
                    k -= 1
                drop = dropped[k]
                content = inside[k]
                while top > k:
                    top -= 1
                    names[stack[top], _OPEN] -= 1
        elif content == 0 and flags & _RAW_NAME:  # its text, to the end tag: at one of the next '<'s
            close = n
            for later in range(at, len(opens)):
                k = opens[later]
                if (k >= after and k + 1 < n and data[k + 1] == 47
                        and _starts_with_name(data, k + 2, known_names, known_lengths, row)):
                    close = k
                    break
            after = close
        else:
            if content != 0 and flags & _BREAKOUT_NAME:
                while top > 0 and inside[top - 1] != 0:
                    top -= 1
                    names[stack[top], _OPEN] -= 1
                content = 0
            if content != 0:
                nests = not self_closing
            else:
                nests = not flags & _NOT_NESTING_NAME and not (self_closing and flags & (_SVG_NAME | _MATH_NAME))
            if nests:
                drop = flatten and top >= limit
                inner = content  # a dropped element is not in the flattened page: its parent's kind
                if not drop:
                    if content == 0:
                        inner = 1 if flags & _SVG_NAME else 2 if flags & _MATH_NAME else 0
                    elif flags & (_SVG_HTML_NAME if content == 1 else _MATH_HTML_NAME):
                        inner = 0
                stack[top] = name
                inside[top] = inner
                dropped[top] = drop
                names[name, _OPEN] += 1
                top += 1
                if top > deepest:
                    deepest = top
                    if deepest > limit and not flatten:
                        break
        if drop:  # what it leaves (`_separator`); beside the last span, one span, the stronger separator
            if content == 0 and flags & _BLOCK_NAME:
                separator = 2
            elif flags & _INLINE_NAME and not _opening_before(data, max(dropped_to, i - 3), i):
                separator = 0
            else:
                separator = 1
            if count > 0 and ends[count - 1] == i:
                ends[count - 1] = after
                separators[count - 1] = max(separators[count - 1], separator)
            else:
                starts[count] = i
                ends[count] = after
                separators[count] = separator
                count += 1
            dropped_to = after
        i = after
    state[_AT], state[_POSITION], state[_TOP], state[_DEEPEST] = at, i, top, deepest
    state[_SPANS], state[_NAMES], state[_DROPPED_TO], state[_DONE] = count, count_names, dropped_to, done
