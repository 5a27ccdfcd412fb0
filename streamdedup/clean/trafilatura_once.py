"""Trafilatura's main extractor, then its comparison where needed, from one parse.

trafilatura's main extractor, then its readability/justext comparison only where the main text
covers little of the page, from one parse (`extract_trafilatura`'s two calls, one parse and
cleaning shared).

`extract_trafilatura` called `trafilatura.extract` with `fast=True` and, on a page where that text
was implausibly small, again with `fast=False`: the second call parsed the page again, pruned the
raw tree again and ran the main extractor again before it got to the comparison, which is all it
adds with our options (`favor_precision` skips trafilatura's stages 3 and 4). On the dev split's
78 pages `fast` hands to trafilatura, 48 take the second call: load 5.9 ms, raw-tree prunes 10.9,
cleaning 9.8, main extractor 25.6, the comparison 32.2 (per page). Here the page is parsed and
cleaned once; the second pass reuses them and, where the main extractor never looked at `fast`,
its result too.

Exactly trafilatura's text (the steps of `trafilatura.core.bare_extraction`, `trafilatura_sequence`
and `determine_returnstring` for these options, in trafilatura 2.3.1; tests/clean compare with
`trafilatura.extract` on real pages). The main extractor reads `options.fast` in one place only
(its wild-text recovery keeps teaser blocks in fast mode): `_Watched` records that read, and then
the main extractor runs again in full mode on a freshly cleaned tree, as the second call did. With
another trafilatura whose private steps are missing, the two calls are made as before.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from copy import copy
from typing import Any

_Options: Any = object  # trafilatura's Extractor (its options), where it can be imported
try:
    from trafilatura.core import _forum_thread_page, _prepare_tree
    from trafilatura.external import compare_extraction
    from trafilatura.htmlprocessing import prune_unwanted_nodes
    from trafilatura.main_extractor import extract_content
    from trafilatura.settings import Extractor as _Options
    from trafilatura.utils import load_html, normalize_unicode
    from trafilatura.xml import xmltotxt
    from trafilatura.xpaths import RAW_TREE_PRUNE_XPATH, REMOVE_COMMENTS_AND_LISTS_XPATH, REMOVE_COMMENTS_XPATH

    STEPS_AVAILABLE = True
except ImportError:  # another trafilatura: extract.extract_trafilatura makes its two calls
    STEPS_AVAILABLE = False


class _Watched(_Options):
    """trafilatura's options, recording whether anything read `fast`."""

    fast_read = False

    @property
    def fast(self) -> bool:
        self.fast_read = True
        return self._fast

    @fast.setter
    def fast(self, value: bool) -> None:
        self._fast = value


def _options(fast: bool) -> Any:
    # what trafilatura.extract builds from extract_trafilatura's arguments
    return _Watched(output_format="txt", fast=fast, precision=True, comments=False, formatting=None, links=False,
                    images=False, tables=True, dedup=False, lang=None, url=None, with_metadata=False,
                    only_with_metadata=False)


def _cleaned(tree: Any, options: Any, is_forum: bool) -> tuple[Any, Any]:
    cleaned, backup = _prepare_tree(tree, options, None)
    if not is_forum:  # favor_precision, comments off (trafilatura_sequence)
        cleaned = prune_unwanted_nodes(cleaned, REMOVE_COMMENTS_XPATH)
    return cleaned, backup


def _text(body: Any, raw_text: str) -> str:
    """What trafilatura.extract returns for this body.

    bare_extraction's size check, then determine_returnstring's txt (the empty comments body it
    appends adds a newline, stripped)."""
    if not raw_text:
        return ""
    return normalize_unicode(xmltotxt(body, False).strip())


def extract_once(html: str, covers_little: Callable[[str], bool], prune: Sequence[Any] = ()) -> str | None:
    """trafilatura's text of `html`.

    The main extractor's; where `covers_little` says it is implausibly small, the full cascade's (or
    the main extractor's if that is empty). None where trafilatura discarded the page in the main
    extractor's pass (the caller makes its two calls). `prune`: lxml XPaths of elements removed
    first (the `fast` extractor's teaser cards)."""
    try:
        options = _options(True)
        tree = load_html(html, options.max_file_size)
        if tree is None:
            return None
        if prune:
            tree = prune_unwanted_nodes(tree, list(prune))
        is_forum = _forum_thread_page(tree)
        tree = prune_unwanted_nodes(tree, RAW_TREE_PRUNE_XPATH)
        tree = prune_unwanted_nodes(tree, REMOVE_COMMENTS_AND_LISTS_XPATH)
        cleaned, backup = _cleaned(tree, options, is_forum)
        options.fast_read = False
        body, raw_text = extract_content(cleaned, options)
        text = _text(body, raw_text)
    except (TypeError, ValueError):  # bare_extraction's "discarding data"
        return None
    if not covers_little(text):
        return text
    try:
        full = _options(False)
        if options.fast_read:  # the main extractor's result may depend on the mode: run it again
            cleaned, backup = _cleaned(tree, full, is_forum)
            body, raw_text = extract_content(cleaned, full)
        body, raw_text = compare_extraction(backup, copy(tree), body, raw_text, full)
        return _text(body, raw_text) or text
    except (TypeError, ValueError):  # the second call discarded the page: the first call's text
        return text
