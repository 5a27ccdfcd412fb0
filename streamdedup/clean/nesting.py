"""How deep a page's markup nests, before any parser sees it: deep nesting is refused in linear time.

resiliparse's main-content pass costs about elements x depth (50,000 nested divs: 31 s inside C,
where no alarm reaches), and lxml drops everything below depth 255. So a page nested deeper than
MAX_NESTING elements is rejected (`too_deep`) before extraction. The depth is estimated as an HTML
parser builds the tree (`nesting_depth`, the readable reference): an end tag closes the nearest open
element of its name (a stray one is ignored); p, li, td and the like do not count (the next one
closes them), nor void elements, comments and script or style text. `check_nesting` runs the same
estimate compiled (numba) over the page's UTF-8 bytes: ~10x cheaper than the numpy bound and regex
scan it replaces, and exact, so no page needs a second pass.
"""

from __future__ import annotations

import re

import numpy as np

from streamdedup.jit import numba
from streamdedup.record.rejection import Reason, Rejected

# Measured: 1,292 real pages (trafilatura's and Readability's test pages) are at most 42 elements deep
# (68 by `nesting_depth`'s estimate); Chrome stops nesting at 512; lxml (trafilatura) silently drops
# what is deeper than 255
MAX_NESTING = 512

# comments and raw text are skipped whole (a match always runs to its end or to the end of the
# page, so the scan stays linear); then start and end tags (ASCII rules, as a parser's: a tag name
# starts with an ASCII letter)
_RAW_TEXT = ("script", "style", "textarea", "title", "xmp", "iframe", "noembed", "noframes")
_TOKEN = re.compile(r"<!--.*?(?:-->|\Z)|<(" + "|".join(_RAW_TEXT) + r")\b.*?(?:</\1|\Z)"
                    r"|<(/?)([a-zA-Z][a-zA-Z0-9-]*)", re.DOTALL | re.IGNORECASE | re.ASCII)
# elements that never hold others (void) or that the next of their kind closes (p, li, td...)
_NOT_NESTING = frozenset("area base br col embed hr img image input link meta param source track wbr keygen frame "
                         "basefont bgsound p li dt dd option optgroup tr td th rb rt rp rtc thead tbody tfoot "
                         "colgroup caption html head body".split())


def check_nesting(html: str, limit: int = MAX_NESTING, utf8: bytes | None = None) -> None:
    """Refuse markup nested deeper than `limit` elements (`utf8`: the page's UTF-8 bytes, if the caller has them)."""
    data, opens = _tags(html.encode("utf-8", "surrogatepass") if utf8 is None else utf8)
    # fewer tags than the limit cannot nest deeper: most pages are not scanned
    if len(opens) > limit and _scan(data, opens, limit) > limit:
        raise Rejected(Reason.TOO_DEEP, f"the markup is nested more than {limit} elements deep (pages deeper than "
                                        f"{limit} are not parsed; real pages stay under 100)")


def nesting_depth(html: str, stop_above: int | None = None) -> int:
    """The deepest element nesting, estimated as an HTML parser builds it (see the module's docstring).

    Stops as soon as the depth exceeds `stop_above`. The reference `compiled_depth` is tested
    against."""
    stack: list[str] = []
    deepest = 0
    limit = len(html) if stop_above is None else stop_above
    for match in _TOKEN.finditer(html):  # lazily: a deep page stops early
        _, end, name = match.groups()
        if not name:
            continue
        name = name.lower()
        if end:
            if stack and stack[-1] == name:
                stack.pop()
            elif name in stack:
                del stack[len(stack) - 1 - stack[::-1].index(name):]
        elif name not in _NOT_NESTING:
            stack.append(name)
            if len(stack) > deepest:
                deepest = len(stack)
                if deepest > limit:
                    break
    return deepest


# -- the compiled scan ---------------------------------------------------------------------------
# A tag name is keyed by a 64-bit FNV-1a hash of its lower-case ASCII bytes (two names that collide
# would close each other: at worst a page is judged shallower and meets the extraction helper's hard
# time limit instead). The raw-text names are matched by their bytes.
_FNV_OFFSET = np.uint64(0xCBF29CE484222325)
_FNV_PRIME = np.uint64(0x100000001B3)


def _fnv(name: str) -> int:
    value = int(_FNV_OFFSET)
    for byte in name.encode():
        value = ((value ^ byte) * int(_FNV_PRIME)) & 0xFFFFFFFFFFFFFFFF
    return value


_NOT_NESTING_KEYS = np.array(sorted({_fnv(name) for name in _NOT_NESTING}), dtype=np.uint64)
_RAW_NAMES = np.zeros((len(_RAW_TEXT), 8), dtype=np.uint8)  # zero-padded
_RAW_LENGTHS = np.array([len(name) for name in _RAW_TEXT], dtype=np.int64)
for _row, _name in enumerate(_RAW_TEXT):
    _RAW_NAMES[_row, : len(_name)] = np.frombuffer(_name.encode(), dtype=np.uint8)


def compiled_depth(raw: bytes, stop_above: int) -> int:
    """`nesting_depth` of a page's UTF-8 bytes, compiled; stops above `stop_above`."""
    return _scan(*_tags(raw), stop_above)


def _tags(raw: bytes) -> tuple[np.ndarray, np.ndarray]:
    """The page's bytes and where every '<' is, found at numpy's vector speed: the scan visits only these."""
    data = np.frombuffer(raw, dtype=np.uint8)
    return data, np.flatnonzero(data == 60)


def _scan(data: np.ndarray, opens: np.ndarray, stop_above: int) -> int:
    return int(_depth(data, opens, stop_above, _NOT_NESTING_KEYS, _RAW_NAMES, _RAW_LENGTHS))


@numba.njit(cache=True, inline="always")
def _lower(byte: int) -> int:
    return byte + 32 if 65 <= byte <= 90 else byte


@numba.njit(cache=True, inline="always")
def _is_letter(byte: int) -> bool:
    return 97 <= _lower(byte) <= 122


@numba.njit(cache=True, inline="always")
def _is_word(byte: int) -> bool:  # regex \w under re.ASCII
    return _is_letter(byte) or 48 <= byte <= 57 or byte == 95


@numba.njit(cache=True, inline="always")
def _is_name(byte: int) -> bool:  # [a-zA-Z0-9-]
    return _is_letter(byte) or 48 <= byte <= 57 or byte == 45


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
def _depth(data: np.ndarray, opens: np.ndarray, stop_above: int, not_nesting: np.ndarray, names: np.ndarray,
           lengths: np.ndarray) -> int:
    n = len(data)
    stack = np.empty(stop_above + 2, dtype=np.uint64)
    # open elements by the low 12 bits of their key: an end tag whose slot is empty closes nothing,
    # known without searching the stack (a page of stray end tags stays linear)
    open_by_slot = np.zeros(4096, dtype=np.int32)
    top = 0
    deepest = 0
    i = 0  # where the scan is: '<'s before it were inside a comment, raw text or a tag name
    for at in range(len(opens)):
        i_at = opens[at]
        if i_at < i:
            continue
        i = i_at
        # a comment
        if i + 3 < n and data[i + 1] == 33 and data[i + 2] == 45 and data[i + 3] == 45:
            i = _find_comment_end(data, i + 4)
            continue
        # raw text: '<' name '\b' ... '</' name (the end is at one of the next '<'s)
        raw = -1
        for row in range(len(lengths)):
            if _starts_with_name(data, i + 1, names, lengths, row):
                after = i + 1 + lengths[row]
                if after >= n or not _is_word(data[after]):
                    raw = row
                    break
        if raw >= 0:
            start = i + 1 + lengths[raw]
            i = n
            for later in range(at + 1, len(opens)):
                k = opens[later]
                if (k >= start and k + 1 < n and data[k + 1] == 47
                        and _starts_with_name(data, k + 2, names, lengths, raw)):
                    i = k + 2 + lengths[raw]
                    break
            continue
        # a start or end tag
        j = i + 1
        end = j < n and data[j] == 47  # '/'
        if end:
            j += 1
        if j >= n or not _is_letter(data[j]):
            i += 1
            continue  # not a tag: the next '<' may be one
        key = np.uint64(0xCBF29CE484222325)
        while j < n and _is_name(data[j]):
            key = (key ^ np.uint64(_lower(data[j]))) * np.uint64(0x100000001B3)
            j += 1
        i = j
        if end:
            if open_by_slot[key & np.uint64(4095)] == 0:
                continue
            k = top - 1
            while k >= 0 and stack[k] != key:
                k -= 1
            if k >= 0:  # closes it and everything opened inside it
                while top > k:
                    top -= 1
                    open_by_slot[stack[top] & np.uint64(4095)] -= 1
            continue
        slot = np.searchsorted(not_nesting, key)
        if slot < len(not_nesting) and not_nesting[slot] == key:
            continue
        stack[top] = key
        open_by_slot[key & np.uint64(4095)] += 1
        top += 1
        if top > deepest:
            deepest = top
            if deepest > stop_above:
                break
    return deepest
