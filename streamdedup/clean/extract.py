"""Main-content extraction: keep the article, drop navigation, ads, footers, comments.

Boilerplate is the enemy of near-duplicate precision: two different articles on one site share
their template, and a fingerprint of the whole page sees mostly template. The extractor is a
field library (see docs/extraction-comparison.md for the measurement behind the default).
"""

from __future__ import annotations

import importlib
import logging
import re
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Literal

import numpy as np

from streamdedup.clean.fast_extract import extract_fast, fast_texts, main_content_text
from streamdedup.clean.trafilatura_once import STEPS_AVAILABLE, extract_once
from streamdedup.record.rejection import Reason, Rejected

Extractor = Literal["trafilatura", "fast", "resiliparse", "none"]
EXTRACTORS: tuple[str, ...] = ("trafilatura", "fast", "resiliparse", "none")

# trafilatura and the libraries under it log at ERROR or WARNING every page they cannot read ("empty
# HTML tree", "discarding data"): the page's rejection already says why, so they stay out of our log
for _name in ("trafilatura", "htmldate", "courlan", "justext"):
    logging.getLogger(_name).setLevel(logging.CRITICAL)

# what each extractor imports (resiliparse also measures the whole page's text for trafilatura)
_STACK = {"trafilatura": ("trafilatura", "resiliparse.extract.html2text", "resiliparse.parse.html"),
          "fast": ("trafilatura", "resiliparse.extract.html2text", "resiliparse.parse.html"),
          "resiliparse": ("resiliparse.extract.html2text", "resiliparse.parse.html"),
          "none": ("resiliparse.extract.html2text", "resiliparse.parse.html")}


class CleaningStackMissing(RuntimeError):
    """The extractor's libraries cannot be imported: every HTML page would fail; the message
    (one line) names the fix."""


def check_extractor(extractor: str) -> None:
    """Import what `extractor` runs on, before the first page: a broken install (pip before 23.3
    drops lxml_html_clean, which trafilatura needs since lxml 5.2) must stop a run, not reject
    every HTML page as a processing_error."""
    for module in _STACK.get(extractor, ()):
        try:
            importlib.import_module(module)
        except ImportError as err:
            problem = str(err).splitlines()[0] if str(err) else type(err).__name__
            raise CleaningStackMissing(f"the {extractor} extractor cannot load ({module}: {problem}): "
                                       f"{_fix(err)}") from None


def _fix(err: ImportError) -> str:
    if err.name == "lxml_html_clean" or "lxml_html_clean" in str(err):
        return "pip install lxml_html_clean"
    if isinstance(err, ModuleNotFoundError) and err.name:
        return f"pip install {err.name.split('.')[0]}"
    return "reinstall streamdedup (pip install --force-reinstall streamdedup)"

# Deepest element nesting a page may have. Measured: 1,292 real pages (trafilatura's and
# Readability's test pages) are at most 42 elements deep (68 by `nesting_depth`'s estimate);
# Chrome stops nesting at 512; lxml (trafilatura) silently drops what is deeper than 255; and
# resiliparse's main-content pass costs about elements x depth (50 k nested divs: 31 s).
MAX_NESTING = 512


def is_html(content_type: str, text: str) -> bool:
    """Trust the type, but sniff plain-text types too: crawlers mislabel."""
    if "<" not in text[:65536]:
        return False
    kind = content_type.split(";", 1)[0].strip().lower()
    if kind in ("text/html", "application/xhtml+xml", "application/xml", "text/xml", ""):
        return True
    head = text[:1024].lstrip().lower()
    return head.startswith(("<!doctype html", "<html")) or "<body" in head


# trafilatura's own bounds for an extraction that "covers little of the page" (core.py's
# ESCALATION_MAX_LENGTH and ESCALATION_PAGE_SHARE in 2.3.1, where they start its recall retry)
SMALL_EXTRACTION_CHARS = 3000
SMALL_EXTRACTION_SHARE = 0.2


def _trafilatura(html: str, fast: bool) -> str:
    import trafilatura

    text = trafilatura.extract(
        html, output_format="txt", include_comments=False, include_tables=True,
        include_images=False, include_links=False, deduplicate=False, favor_precision=True,
        with_metadata=False, fast=fast,
    )
    return text or ""


def extract_trafilatura(html: str, page_text: Callable[[], str] | None = None) -> str:
    """trafilatura's main extractor alone first (fast: without the readability and justext
    comparison, which doubles its cost and, on a page the main extractor reads well, only swaps in
    a longer text with more sidebar); its whole cascade only when that text is implausibly small
    for the page (shorter than trafilatura's own 'covers little of the page' bounds), the case the
    comparison exists to rescue (text in <br>-separated divs, a cookie banner taken for the page).
    Measured on the dev split's 488 annotated trafilatura pages: the same share of kept snippets
    (0.914 against 0.915 with the cascade always on) and of dropped ones leaked (0.083, 0.084).
    `page_text`: the page's whole text, when the caller has it (or can make it from its own parse).
    Both passes share one parse where trafilatura's steps allow (clean/trafilatura_once.py)."""
    whole = page_text or (lambda: extract_all_text(html))
    if STEPS_AVAILABLE:
        once = extract_once(html, lambda text: covers_little(text, whole))
        if once is not None:
            return once
    return trafilatura_two_calls(html, whole)


def trafilatura_two_calls(html: str, page_text: Callable[[], str] | None = None) -> str:
    """`extract_trafilatura` through trafilatura's public API: `trafilatura.extract` in fast mode,
    and again in full mode where that text covers little of the page (two parses; bench/e2e.py's
    baseline before the parse was shared)."""
    text = _trafilatura(html, fast=True)
    if not covers_little(text, page_text or (lambda: extract_all_text(html))):
        return text
    return _trafilatura(html, fast=False) or text


def covers_little(text: str, page_text: Callable[[], str]) -> bool:
    """Whether an extraction is implausibly small for its page, by trafilatura's bounds (the page's
    whole text is only made when the extraction is short)."""
    return len(text) < SMALL_EXTRACTION_CHARS and len(text) < SMALL_EXTRACTION_SHARE * len(page_text())


def extract_resiliparse(html: str) -> str:
    return resiliparse_texts(html, visible=False)[0]


def resiliparse_texts(html: str, visible: bool) -> tuple[str, str]:
    """resiliparse's main-content text and, if `visible`, the page's whole text, from one parse."""
    from resiliparse.parse.html import HTMLTree

    tree = HTMLTree.parse(html)
    return main_content_text(tree), extract_all_text(tree) if visible else ""


def extract_all_text(html: str | Any) -> str:
    """No boilerplate removal: every visible text node (the 'whole page' baseline). Takes the HTML
    or a tree resiliparse has parsed already."""
    from resiliparse.extract.html2text import extract_plain_text
    from resiliparse.parse.html import HTMLTree

    return extract_plain_text(HTMLTree.parse(html) if isinstance(html, str) else html, main_content=False,
                              alt_texts=False, links=False, list_bullets=False)


_BACKENDS: dict[str, Callable[[str], str]] = {
    "trafilatura": extract_trafilatura,
    "fast": extract_fast,
    "resiliparse": extract_resiliparse,
    "none": extract_all_text,
}
# C code an alarm cannot stop: run in the helper process (clean/isolated.py)
C_EXTRACTORS = frozenset({"fast", "resiliparse", "none"})


def page_texts(html: str, extractor: str, visible: bool) -> tuple[str, str]:
    """The page's main text by `extractor` and, if `visible`, all its visible text (else "")."""
    if extractor == "fast":
        return fast_texts(html, visible)
    if extractor == "resiliparse":
        return resiliparse_texts(html, visible)
    main = _BACKENDS[extractor](html)
    if not visible:
        return main, ""
    return main, main if extractor == "none" else extract_all_text(html)


def extract_texts(html: str, extractor: str, max_seconds: float = 0.0, visible: bool = False) -> tuple[str, str]:
    """The page's main text and, if `visible`, all its visible text, in one pass where the
    extractor allows (one parse, one round trip to the helper). Deeper nesting than MAX_NESTING is
    refused first; `max_seconds` bounds the rest: the C extractors run in a helper process that is
    killed on overrun, the others under an alarm (0: no bound)."""
    if extractor not in _BACKENDS:
        raise ValueError(f"unknown extractor {extractor!r}; choose one of {', '.join(EXTRACTORS)}")
    utf8 = html.encode("utf-8", "surrogatepass")  # the nesting bound reads it, and so does the helper's pipe
    check_nesting(html, utf8=utf8)
    # SIGALRM reaches only the main thread: elsewhere (prepare_many's threads) every extractor runs
    # in the helper, whose kill bounds trafilatura as it bounds C
    if max_seconds > 0 and (extractor in C_EXTRACTORS or threading.current_thread() is not threading.main_thread()):
        from streamdedup.clean.isolated import helper

        return helper().extract(extractor, html, max_seconds, visible, utf8=utf8)
    with time_limit(max_seconds):
        return page_texts(html, extractor, visible)


def extract_main_text(html: str, extractor: str, max_seconds: float = 0.0) -> str:
    """The page's main text (see extract_texts)."""
    return extract_texts(html, extractor, max_seconds)[0]


class _Timeout(Exception):
    pass


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Abort a parse that runs too long (SIGALRM: only in the main thread, which is where the
    worker and the CLI parse, and only between Python bytecodes, hence the helper process for C)."""
    if seconds <= 0 or threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum: int, frame: object) -> None:
        raise _Timeout()

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    except _Timeout:
        raise Rejected(Reason.TIMEOUT, f"parsing took longer than {seconds:g} s") from None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# -- nesting ---------------------------------------------------------------------------------
# comments and raw text are skipped whole (a match always runs to its end or to the end of the
# page, so the scan stays linear); then start and end tags
# (ASCII rules, as a parser's: a tag name starts with an ASCII letter; and as _open_tags_bound's on
# the UTF-8 bytes)
_RAW_TEXT = ("script", "style", "textarea", "title", "xmp", "iframe", "noembed", "noframes")
_TOKEN = re.compile(r"<!--.*?(?:-->|\Z)|<(" + "|".join(_RAW_TEXT) + r")\b.*?(?:</\1|\Z)"
                    r"|<(/?)([a-zA-Z][a-zA-Z0-9-]*)", re.DOTALL | re.IGNORECASE | re.ASCII)
# elements that never hold others (void) or that the next of their kind closes (p, li, td...)
_NOT_NESTING = frozenset("area base br col embed hr img image input link meta param source track wbr keygen frame "
                         "basefont bgsound p li dt dd option optgroup tr td th rb rt rp rtc thead tbody tfoot "
                         "colgroup caption html head body".split())


def check_nesting(html: str, limit: int = MAX_NESTING, utf8: bytes | None = None) -> None:
    """Refuse markup nested deeper than `limit` elements, in linear time. Cheap upper bounds of
    `nesting_depth` first (the count of '<'; then `_open_tags_bound`, in numpy), so that the stack
    estimate runs only on the few pages they cannot clear (the C extractors' hard time limit
    stands behind them). `utf8`: the page's UTF-8 bytes, if the caller has them."""
    if html.count("<") <= limit or _open_tags_bound(html, utf8) <= limit:
        return
    depth = nesting_depth(html, stop_above=limit)
    if depth > limit:
        raise Rejected(Reason.TOO_DEEP, f"the markup is nested more than {limit} elements deep (pages deeper than "
                                        f"{limit} are not parsed; real pages stay under 100)")


_SKIPPED = re.compile(rb"<(?:!--|(" + "|".join(_RAW_TEXT).encode() + rb")\b)", re.IGNORECASE)
_RAW_END = {name.encode(): re.compile(b"</" + name.encode(), re.IGNORECASE) for name in _RAW_TEXT}
_MAY_SKIP = np.zeros(1 << 16, dtype=bool)  # the two bytes after a '<' that may open a comment or raw text
for _opening in ("!-", *(name[:2] for name in _RAW_TEXT)):
    for _first in {_opening[0].lower(), _opening[0].upper()}:
        for _second in {_opening[1].lower(), _opening[1].upper()}:
            _MAY_SKIP[ord(_first) << 8 | ord(_second)] = True
_ASCII_LETTER = np.zeros(256, dtype=bool)
_ASCII_LETTER[np.frombuffer(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz", dtype=np.uint8)] = True
_NAME_BYTE = _ASCII_LETTER.copy()
_NAME_BYTE[np.frombuffer(b"0123456789-", dtype=np.uint8)] = True
_LOWER = np.arange(256, dtype=np.uint8)
_LOWER[65:91] += 32
_NINE = np.arange(9)
# a name's key: its first 8 bytes, lower case, as a little-endian integer
_NOT_NESTING_KEYS = np.array(sorted(int.from_bytes(name.encode().ljust(8, b"\0"), "little")
                                    for name in _NOT_NESTING if len(name) <= 8), dtype=np.uint64)


def _skipped_spans(raw: bytes, at: np.ndarray, data: np.ndarray) -> list[tuple[int, int]]:
    """Where comments and raw text (script, style...) run, as `nesting_depth`'s scan skips them."""
    spans: list[tuple[int, int]] = []
    pos = 0
    for start in at[_MAY_SKIP[data[at + 1].astype(np.int32) << 8 | data[at + 2]]].tolist():
        if start < pos or (match := _SKIPPED.match(raw, start)) is None:
            continue
        if match.group(1) is None:
            end = raw.find(b"-->", start + 4)
            pos = len(raw) if end < 0 else end + 3
        else:
            found = _RAW_END[match.group(1).lower()].search(raw, match.end())
            pos = len(raw) if found is None else found.end()
        spans.append((start, pos))
    return spans


def _open_tags_bound(html: str, utf8: bytes | None = None) -> int:
    """An upper bound of `nesting_depth`, as numpy array operations: comments and raw text skipped
    as it skips them; each tag name counted on its own (starts +1, ends -1, never below zero: an
    end tag closes nothing when none of its name is open, `<div></b>`), and the most elements open
    at once is the largest sum of these counts over the page's prefixes. p, li, void elements and
    the like count 0, as there; a name longer than 8 characters is keyed by its first 8 and a mark,
    and its end tags close nothing here (an overcount, never an undercount)."""
    raw = html.encode("utf-8", "surrogatepass") if utf8 is None else utf8
    data = np.frombuffer(raw + bytes(10), dtype=np.uint8)
    at = np.flatnonzero(data[: len(raw)] == ord("<"))
    spans = _skipped_spans(raw, at, data)
    if spans:
        starts, ends = np.array(spans).T
        region = np.searchsorted(starts, at, side="right") - 1
        at = at[(region < 0) | (at >= ends[np.maximum(region, 0)])]
    is_end = data[at + 1] == ord("/")
    first = at + 1 + is_end
    is_tag = _ASCII_LETTER[data[first]]
    is_end, first = is_end[is_tag], first[is_tag]
    if len(first) == 0:
        return 0
    window = data[first[:, None] + _NINE]
    in_name = np.logical_and.accumulate(_NAME_BYTE[window], axis=1)
    name = _LOWER[window[:, :8]]
    name[~in_name[:, :8]] = 0
    longer = in_name[:, 8]
    name[:, 7] |= longer.view(np.uint8) << 7  # names are ASCII: the top bit marks a longer one
    keys = name.view(np.uint64).ravel()
    nearest = _NOT_NESTING_KEYS[np.minimum(np.searchsorted(_NOT_NESTING_KEYS, keys), len(_NOT_NESTING_KEYS) - 1)]
    step = np.where(is_end, np.where(longer, 0, -1), 1)
    step[nearest == keys] = 0
    # each name's running count, reflected at zero, by name (a stable sort keeps the page's order)
    order = np.argsort(keys, kind="stable")
    ordered, steps = keys[order], step[order]
    new_name = np.empty(len(ordered), dtype=bool)
    new_name[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=new_name[1:])
    group = np.cumsum(new_name)
    total = np.cumsum(steps)
    heads = np.flatnonzero(new_name)
    within = total - (total[heads] - steps[heads])[group - 1]
    offset = (len(ordered) + 1) * group  # keeps each name's running minimum to itself
    lowest = np.minimum.accumulate(within - offset) + offset
    reflected = within - np.minimum(lowest, 0)
    change = np.diff(reflected, prepend=0)
    change[new_name] = reflected[new_name]
    in_page_order = np.empty_like(change)
    in_page_order[order] = change
    return int(np.cumsum(in_page_order).max(initial=0))


def nesting_depth(html: str, stop_above: int | None = None) -> int:
    """The deepest element nesting, estimated as an HTML parser builds it: an end tag closes the
    nearest open element of its name (a stray one is ignored); p, li, td and the like do not
    count (the next one closes them), nor void elements, comments and script or style text.
    Stops as soon as the depth exceeds `stop_above`."""
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
