"""The page's own text, in order: read as its site's learned layout asks, its site's template taken off.

The stateful stage's first step (detector.py; the global topology's fingerprint step), run page by
page in stream order: each page sees the layout and the template its site's earlier pages left,
then teaches them (docs/template-model.md).
"""

from __future__ import annotations

import numpy as np

from streamdedup.clean.learned_layout import SiteLayout
from streamdedup.clean.template import LineHashes, SiteTemplate, TemplateParams, line_hashes, without_lines
from streamdedup.fingerprinter import Fingerprinted, Fingerprinter, Outcome, fingerprint_text
from streamdedup.fingerprints.wordpairs import WordPairsMethod, WordPairsSignature, mark_shown, with_shown_lines
from streamdedup.record.rejection import Reason, Rejected
from streamdedup.tokens.document import Document
from streamdedup.verdict.contract import Rejection


def read_by_layout(item: Fingerprinted, site: SiteTemplate, fingerprinter: Fingerprinter) -> Fingerprinted | Outcome:
    """The page read as its site's layout, as the site's earlier pages left it, asks; then learned from.

    `prepare` read the page by the layout it could see (`Fingerprinter.layout_hints`); where that is
    not the site's layout now (its site's first pages of a batch, a site that turned warm or
    relearned in the batch, a restart), the page is read again. So every page is read with the state
    left by its site's earlier pages, however batched (docs/template-model.md, "the learned
    layout"), and the site learns from it, in order."""
    if not item.layout_asked:
        return item
    layout = site.layout if site.layout is not None else SiteLayout()
    expected = layout.request()
    if item.layout_asked != expected:
        read = fingerprinter.read_again(item, expected)
        if isinstance(read, Outcome) or not read.layout_asked:
            return read
        item = read
    if item.rejection is not None:
        return item.rejection
    before = site.layout.encode() if site.layout is not None else b""
    event = layout.observe(item.layout_seen)
    counts = fingerprinter.extraction
    read_as = event.partition(" ")[0]
    counts["fallback" if read_as == "relearned" else read_as] += 1
    if event.endswith("relearned"):
        counts["relearned"] += 1
    if layout.encode() != before:
        site.layout, site.layout_changed = layout, True
    fingerprinter.hint(item.template_hash, layout)
    return item


def own_text(item: Fingerprinted, site: SiteTemplate, fingerprinter: Fingerprinter,
             params: TemplateParams) -> Fingerprinted | Outcome:
    """The page without its site's template, fingerprinted again if anything was removed.

    The page without its site's template (as the site's earlier pages taught it), fingerprinted
    again if anything was removed; then the page is counted for its site's later pages.

    A page with too little text of its own is not judged: matching it on its template would call
    every such page of the site a duplicate of the first. In a site's cold start a page from which
    its provisional template was removed is judged on its own text like any later page; one from
    which nothing was removed meets the stricter own-site policy (`template_known` False).

    What no single other page can do (docs/template-model.md, "one page"): reject a page as
    missed content (its main-text lines must be on `missed_min_pages` earlier pages; on fewer, in the
    cold start, the page is judged on the text it shows for the first time), or reject a long page
    (`missed_short_words` words or more) as template only (it is judged on its whole text).

    First the page is read as its site's learned layout asks (`read_by_layout`); last, the paragraphs
    of its word-pair sketch that its site showed before are marked."""
    shown = site.shown_lines()  # before this page is counted: what marks its paragraphs shown before
    # and the lines no single earlier page can make the site's (`missed_min_pages`): not new text
    furniture = site.lines_shown_on(params.missed_min_pages)
    outcome = _own_text(item, site, fingerprinter, params)
    return outcome if isinstance(outcome, Outcome) else _marked_shown(outcome, shown, furniture, fingerprinter)


def _marked_shown(item: Fingerprinted, shown: np.ndarray, furniture: np.ndarray,
                  fingerprinter: Fingerprinter) -> Fingerprinted:
    """The page's word-pair signature told which of its lines its site showed before.

    The paragraphs of its sketch its site showed before marked (`wordpairs.mark_shown`), and a
    MinHash of the pairs of its lines (of any length) `furniture`, those at least two of its site's
    earlier pages showed, kept beside it (`wordpairs.with_shown_lines`): neither is its new text.
    A line of one earlier page may be that page's content (the first part of a paginated article,
    a paragraph of another story): it stays new text."""
    signature = item.signatures.get(WordPairsMethod.name)
    if not isinstance(signature, WordPairsSignature) or not len(shown):
        return item
    marked = mark_shown(signature, shown) if len(signature.paragraphs) else signature
    method = next((m for m in fingerprinter.methods if isinstance(m, WordPairsMethod)), None)
    if method is not None and len(furniture):
        marked = with_shown_lines(marked, method, item.text, line_hashes(item.text), furniture, item.page.lang)
    if marked is signature:
        return item
    return item.replaced(signatures={**item.signatures, WordPairsMethod.name: marked})


def _own_text(item: Fingerprinted, site: SiteTemplate, fingerprinter: Fingerprinter,
              params: TemplateParams) -> Fingerprinted | Outcome:
    """`own_text` before the page's paragraphs are marked."""
    if item.layout_asked:
        read = read_by_layout(item, site, fingerprinter)
        if isinstance(read, Outcome):
            return read
        item = read
    hashes = line_hashes(item.text)
    missed, first_shown = _missed_own_text(item, site, hashes, params)
    visible = item.visible_hashes  # what the site learns of the page: the lines of its main and visible texts
    counted = np.concatenate((hashes, visible)) if len(hashes) and len(visible) else hashes if len(hashes) else visible
    if missed:
        site.learn(item.page.url, counted, params)
        return Outcome(item.record, Rejection(Reason.TEMPLATE_ONLY.value, missed, item.origin).as_dict(), item.origin,
                       line=item.line)
    known = site.known(params)
    template = None if first_shown else site.removed_lines(hashes, params)  # the lines made only if needed
    pages_before = site.pages
    site.learn(item.page.url, counted, params)
    if first_shown:
        try:
            signatures = fingerprint_text(first_shown, item.page.lang, fingerprinter.methods,
                                          fingerprinter.config.cleaning.min_words)
        except Rejected:
            return item.replaced(template_known=False)
        return item.replaced(signatures=signatures, text=first_shown, template_known=False)
    if template is None:
        return item.replaced(template_known=known)
    lines = [line for line in item.text.split("\n") if line]
    text, removed = without_lines(lines, template)
    try:
        signatures = fingerprint_text(text, item.page.lang, fingerprinter.methods,
                                      fingerprinter.config.cleaning.min_words)
    except Rejected:
        if Document.from_text(item.text, item.page.lang).num_tokens >= params.missed_short_words:
            # a long text all of whose lines the site's pages showed is a story they quoted or copied,
            # not a page without text: judged on all of it, as in the cold start
            return item.replaced(template_known=False)
        provisional = "" if known else f" (provisional: the site has shown {pages_before} pages)"
        detail = (f"{removed} of the page's {len(lines)} lines are its site's template{provisional}; "
                  "too little own text is left")
        return Outcome(item.record, Rejection(Reason.TEMPLATE_ONLY.value, detail, item.origin).as_dict(), item.origin,
                       line=item.line)
    return item.replaced(signatures=signatures, text=text, template_known=True)


def _missed_own_text(item: Fingerprinted, site: SiteTemplate, hashes: LineHashes,
                     params: TemplateParams) -> tuple[str, str]:
    """Whether the page's main text is not its own (clean/template.py, "missed content").

    Why it is rejected, or (only one earlier page showed some of its lines, in the site's cold
    start) the text it shows for the first time, on which it is judged instead; ("", "") if neither."""
    if not site.shown_before(item.page.url, hashes):
        return "", ""
    main_words = Document.from_text(item.text, item.page.lang).num_tokens
    if main_words >= params.missed_short_words:
        return "", ""
    visible, visible_hashes = item.visible_lines
    new = [visible[pos] for pos in site.new_lines(visible_hashes, hashes)]
    new_words = Document.from_text("\n".join(new), item.page.lang).num_tokens if new else 0
    if new_words < params.missed_new_words:
        return "", ""
    if site.shown_before(item.page.url, hashes, params.missed_min_pages):
        return (f"the page's main text ({main_words} words) is all text its site showed on at least "
                f"{params.missed_min_pages} earlier pages, while {new_words} words it shows for the first time "
                "are outside it: the extraction took the template"), ""
    return "", ("\n".join(new) if not site.known(params) else "")
