"""Main-content extraction: keep the article, drop navigation, ads, footers, comments.

Boilerplate is the enemy of near-duplicate precision: two different articles on one site share
their template, and a fingerprint of the whole page sees mostly template. The extractor is a
field library (see docs/extraction-comparison.md for the measurement behind the default).
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache
from typing import Literal

from streamdedup.clean.errors import CleaningStackMissing
from streamdedup.clean.fast_extract import extract_fast, fast_texts, main_content_text
from streamdedup.clean.learned_layout import learned_texts

# the names marked F401 are imported from here too (the pipeline, the fingerprinter, tests, benches)
from streamdedup.clean.page_text import (
    SMALL_EXTRACTION_CHARS,  # noqa: F401
    SMALL_EXTRACTION_SHARE,  # noqa: F401
    Texts,
    covers_little,  # noqa: F401
    extract_all_text,
)
from streamdedup.clean.trafilatura_extract import (
    _trafilatura,  # noqa: F401
    extract_trafilatura,
    trafilatura_two_calls,  # noqa: F401
)
from streamdedup.record.rejection import Reason, Rejected

Extractor = Literal["trafilatura", "fast", "resiliparse", "none"]
EXTRACTORS: tuple[str, ...] = ("trafilatura", "fast", "resiliparse", "none")

# trafilatura and the libraries under it log at ERROR or WARNING every page they cannot read ("empty
# HTML tree", "discarding data"): the page's rejection already says why, so they stay out of our log
for _name in ("trafilatura", "htmldate", "courlan", "justext"):
    logging.getLogger(_name).setLevel(logging.CRITICAL)

# what each extractor imports before its first HTML page (resiliparse's bindings, ~10 ms), and what it
# only finds then: trafilatura (~0.2 s to import) is imported where a page first needs it, in the
# helper process for `fast` (its rescue) or in this one; lxml.html.clean is what it imports that
# pip before 23.3 drops (lxml_html_clean), so that one is imported with the others
_LIGHT = ("resiliparse.extract.html2text", "resiliparse.parse.html")
_STACK = {"trafilatura": ("lxml.html.clean", *_LIGHT), "fast": ("lxml.html.clean", *_LIGHT),
          "resiliparse": _LIGHT, "none": _LIGHT}
_FOUND = {"trafilatura": ("trafilatura",), "fast": ("trafilatura",)}


def check_extractor(extractor: str, at_first_page: bool = False) -> None:
    """Import or find what `extractor` runs on, before the first page.

    A broken install (pip before 23.3 drops lxml_html_clean, which trafilatura needs since lxml 5.2)
    must stop a run, not reject every HTML page as a processing_error. `at_first_page`: the
    libraries are imported at the first HTML page instead (`import_stack`, which `clean_page_texts`
    calls before extracting one), so a run of plain text never imports lxml (~0.025 CPU-s); what is
    only found is found now either way."""
    if not at_first_page:
        import_stack(extractor)
    for module in _FOUND.get(extractor, ()):
        if importlib.util.find_spec(module) is None:
            raise missing_stack(extractor, ModuleNotFoundError(f"No module named {module!r}", name=module), module)


@cache
def import_stack(extractor: str) -> None:
    """Import the libraries `extractor` runs on, once a process: `CleaningStackMissing`, naming the fix, if not."""
    for module in _STACK.get(extractor, ()):
        try:
            importlib.import_module(module)
        except ImportError as err:
            raise missing_stack(extractor, err, module) from None


def missing_stack(extractor: str, err: ImportError, module: str | None = None) -> CleaningStackMissing:
    """The one line for an extractor whose libraries cannot load, naming the fix."""
    problem = str(err).splitlines()[0] if str(err) else type(err).__name__
    what = module or err.name or "its libraries"
    whose = "trafilatura's " if what == "lxml.html.clean" else ""
    return CleaningStackMissing(f"the {extractor} extractor cannot load {whose}{what} ({problem}): {_fix(err)}")


def _fix(err: ImportError) -> str:
    if err.name == "lxml_html_clean" or "lxml_html_clean" in str(err):
        return "pip install lxml_html_clean"
    if isinstance(err, ModuleNotFoundError) and err.name:
        return f"pip install {err.name.split('.')[0]}"
    return "reinstall streamdedup (pip install --force-reinstall -c constraints.txt . in its checkout)"


def is_html(content_type: str, text: str) -> bool:
    """Trust the type, but sniff plain-text types too: crawlers mislabel."""
    if "<" not in text[:65536]:
        return False
    kind = content_type.split(";", 1)[0].strip().lower()
    if kind in ("text/html", "application/xhtml+xml", "application/xml", "text/xml", ""):
        return True
    head = text[:1024].lstrip().lower()
    return head.startswith(("<!doctype html", "<html")) or "<body" in head


def extract_resiliparse(html: str) -> str:
    """The main text resiliparse extracts from an HTML page."""
    return resiliparse_texts(html, visible=False)[0]


def resiliparse_texts(html: str, visible: bool) -> Texts:
    """resiliparse's main-content text and, if `visible`, the page's whole text, from one parse."""
    from resiliparse.parse.html import HTMLTree

    tree = HTMLTree.parse(html)
    return Texts(main_content_text(tree), extract_all_text(tree) if visible else "")


_BACKENDS: dict[str, Callable[[str], str]] = {
    "trafilatura": extract_trafilatura,
    "fast": extract_fast,
    "resiliparse": extract_resiliparse,
    "none": extract_all_text,
}
# C code an alarm cannot stop: run in the helper process (clean/isolated.py)
C_EXTRACTORS = frozenset({"fast", "resiliparse", "none"})


def page_texts(html: str, extractor: str, visible: bool) -> Texts:
    """The page's `Texts` by `extractor` (the visible text only if `visible`).

    `extractor` may carry, after a newline, how `fast` is to use its site's learned layout
    (`learned_layout`'s request: the helper process gets it so). A library that cannot be imported
    (trafilatura, on the first page that needs it) is `CleaningStackMissing`: the run stops,
    naming the fix."""
    extractor, _, layout = extractor.partition("\n")
    try:
        if extractor == "fast":
            return learned_texts(html, layout, visible) if layout else fast_texts(html, visible)
        if extractor == "resiliparse":
            return resiliparse_texts(html, visible)
        main = _BACKENDS[extractor](html)
    except ImportError as err:
        raise missing_stack(extractor, err) from None
    if not visible:
        return Texts(main)
    return Texts(main, main if extractor == "none" else extract_all_text(html))


def extract_texts(html: str, extractor: str, max_seconds: float = 0.0, visible: bool = False,
                  layout: str = "") -> Texts:
    """The page's `Texts`, from one parse where the extractor allows, within a time bound.

    The page's `Texts` (all its visible text only if `visible`), in one pass where the
    extractor allows (one parse, one round trip to the helper). Markup nested deeper than
    MAX_NESTING is flattened first (`clean.nesting`); `max_seconds` bounds the rest: the C
    extractors run in a helper process that is killed on overrun, the others under an alarm (0: no
    bound). `layout`: how `fast` uses the page's site's learned layout (`learned_layout`'s request;
    "": not at all)."""
    if extractor not in _BACKENDS:
        raise ValueError(f"unknown extractor {extractor!r}; choose one of {', '.join(EXTRACTORS)}")
    # here, not at the top: the helper process imports this module for `page_texts`, and the
    # nesting check's compiled scan would cost it numba's import (~0.3 s a helper) for nothing
    from streamdedup.clean.nesting import flatten_nesting

    # the nesting check reads the UTF-8 bytes, and so does the helper's pipe
    html, utf8 = flatten_nesting(html, html.encode("utf-8", "surrogatepass"))
    # SIGALRM reaches only the main thread: elsewhere (prepare_many's threads) every extractor runs
    # in the helper, whose kill bounds trafilatura as it bounds C
    asked = f"{extractor}\n{layout}" if layout and extractor == "fast" else extractor
    if max_seconds > 0 and (extractor in C_EXTRACTORS or threading.current_thread() is not threading.main_thread()):
        from streamdedup.clean.isolated import helper

        return helper().extract(asked, html, max_seconds, visible, utf8=utf8)
    with time_limit(max_seconds):
        return page_texts(html, asked, visible)


def extract_main_text(html: str, extractor: str, max_seconds: float = 0.0) -> str:
    """The page's main text (see extract_texts)."""
    return extract_texts(html, extractor, max_seconds)[0]


class _Timeout(Exception):
    pass


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Abort a parse that runs too long.

    SIGALRM: only in the main thread, which is where the worker and the CLI parse, and only between Python
    bytecodes, hence the helper process for C."""
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
