"""The compiled nesting scan (numba): the kernels `nesting.flatten_nesting` runs over a page's UTF-8 bytes.

They estimate the depth as `nesting.nesting_depth` does and find the spans of tags to drop with
their separators (`scan_nesting`), visiting only the page's '<'s, then splice the kept bytes
(`spliced`). A tag name is found in a table of the page's names by its 64-bit key (an FNV-1a hash
from a basis drawn for each process, `nesting._fnv`) and told apart by its bytes; a known name
(`nesting._known_names`) carries the flags below, which say what HTML makes of it.
"""

from __future__ import annotations

import numpy as np

from streamdedup.jit import numba

# the names the scan tells apart, each with what it is (bit flags)
NOT_NESTING_NAME, BREAKOUT_NAME, SVG_HTML_NAME, MATH_HTML_NAME = 1, 2, 4, 8
SVG_NAME, MATH_NAME, RAW_NAME, BLOCK_NAME, INLINE_NAME = 16, 32, 64, 128, 256

@numba.njit(cache=True)
def spliced(data: np.ndarray, starts: np.ndarray, ends: np.ndarray, separators: np.ndarray) -> np.ndarray:
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
def scan_nesting(data: np.ndarray, opens: np.ndarray, limit: int, flatten: bool, known_keys: np.ndarray,
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
    """`scan_nesting`'s scan from `state`, to the page's end (state[_DONE]) or a tag an array has no room for."""
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
        elif content == 0 and flags & RAW_NAME:  # its text, to the end tag: at one of the next '<'s
            close = n
            for later in range(at, len(opens)):
                k = opens[later]
                if (k >= after and k + 1 < n and data[k + 1] == 47
                        and _starts_with_name(data, k + 2, known_names, known_lengths, row)):
                    close = k
                    break
            after = close
        else:
            if content != 0 and flags & BREAKOUT_NAME:
                while top > 0 and inside[top - 1] != 0:
                    top -= 1
                    names[stack[top], _OPEN] -= 1
                content = 0
            if content != 0:
                nests = not self_closing
            else:
                nests = not flags & NOT_NESTING_NAME and not (self_closing and flags & (SVG_NAME | MATH_NAME))
            if nests:
                drop = flatten and top >= limit
                inner = content  # a dropped element is not in the flattened page: its parent's kind
                if not drop:
                    if content == 0:
                        inner = 1 if flags & SVG_NAME else 2 if flags & MATH_NAME else 0
                    elif flags & (SVG_HTML_NAME if content == 1 else MATH_HTML_NAME):
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
            if content == 0 and flags & BLOCK_NAME:
                separator = 2
            elif flags & INLINE_NAME and not _opening_before(data, max(dropped_to, i - 3), i):
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
