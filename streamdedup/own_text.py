"""The page's own text, in order: read as its site's learned layout asks, its site's template taken off.

The stateful stage's first step (detector.py; the global topology's fingerprint step), run page by
page in stream order: each page sees the layout and the template its site's earlier pages left,
then teaches them (docs/template-model.md).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np

from streamdedup.clean.article_block import LazyInside
from streamdedup.clean.learned_layout import BRIEF, HELD, OBSERVE, SiteLayout
from streamdedup.clean.page_urls import document_key
from streamdedup.clean.template import NO_LINES, LineHashes, SiteTemplate, TemplateParams, without_lines
from streamdedup.fingerprinter import Fingerprinted, Fingerprinter, Outcome, fingerprint_text
from streamdedup.fingerprints.one_page_lines import with_one_page_lines
from streamdedup.fingerprints.paragraph_rows import paragraph_words
from streamdedup.fingerprints.wordpairs import (
    WordPairsMethod,
    WordPairsSignature,
    lines_hashed,
    mark_shown,
    with_article,
    with_inside,
    with_shown_lines,
)
from streamdedup.record.rejection import Reason, Rejected
from streamdedup.tokens.document import Document
from streamdedup.verdict.contract import Rejection
from streamdedup.verdict.line_places import EDGE_PARAGRAPH_WORDS
from streamdedup.verdict.page_fault import faulted

Lesson = Callable[[], None]  # what a site learns from a page once it is through (`_learn_layout`, `_learn_lines`)


def read_by_layout(item: Fingerprinted, site: SiteTemplate, fingerprinter: Fingerprinter) -> Fingerprinted | Outcome:
    """The page read as its site's layout, as the site's earlier pages left it, asks.

    `prepare` read the page by the layout it could see (`Fingerprinter.layout_hints`); where that is
    not the site's layout now (its site's first pages of a batch, a site that turned warm or
    relearned in the batch, a restart), the page is read again. So every page is read with the state
    left by its site's earlier pages, however batched (docs/template-model.md, "the learned
    layout"). The site learns from it (`_learn_layout`) once the page is judged: a read that left
    it without text of its own is not the page's (`_own_text`)."""
    layout = site.layout if site.layout is not None else SiteLayout()
    expected = layout.request()
    if item.layout_asked != expected:
        return fingerprinter.read_again(item, expected)
    return item


def _learn_layout(item: Fingerprinted, site: SiteTemplate, fingerprinter: Fingerprinter, hollow: str = "") -> None:
    """The site's layout learns from the page, in order, and counts how it was read.

    `hollow`: how the page was first read (`HELD` or a brief read) where that read left it without
    text of its own and `fast` read it again (`item`; `SiteLayout.hollow`)."""
    layout = site.layout if site.layout is not None else SiteLayout()
    before = site.layout.encode() if site.layout is not None else b""
    seen = item.layout_seen if item.rejection is None else ""
    event = layout.hollow(hollow, seen) if hollow else layout.observe(seen)
    counts = fingerprinter.extraction
    read_as = event.partition(" ")[0]
    counts["fallback" if read_as == "relearned" else read_as] += 1
    if event.endswith("relearned"):
        counts["relearned"] += 1
    if layout.encode() != before:
        site.layout, site.layout_changed = layout, True
    fingerprinter.hint(item.template_hash, layout)


def own_text(item: Fingerprinted, site: SiteTemplate, fingerprinter: Fingerprinter,
             params: TemplateParams, now: bool = False) -> Fingerprinted | Outcome:
    """The page without its site's template, fingerprinted again if anything was removed.

    The page without its site's template (as the site's earlier pages taught it), fingerprinted
    again if anything was removed; then the page is counted for its site's later pages.

    A page with too little text of its own is not judged: matching it on its template would call
    every such page of the site a duplicate of the first. In a site's cold start a page from which
    its provisional template was removed is judged on its own text like any later page; one from
    which nothing was removed meets the stricter own-site policy (`template_known` False).

    What no single other page can do (docs/template-model.md, "one page"): reject a page as
    missed content (its main-text lines must be on `missed_min_pages` earlier pages of a known
    site and not be its template; else, in the cold start or where they are the template, the
    page is judged on the text it shows for the first time), or reject a long page
    (`missed_short_words` words or more) as template only (it is judged on its whole text).

    First the page is read as its site's learned layout asks (`read_by_layout`); then the paragraphs
    of its word-pair sketch that its site showed before are marked (`now`: its article-block marks
    found at once, `placed_now`); last, its site learns from it.

    A page whose template step raises (a bug its data met) is a `processing_error` outcome, and its
    site learns nothing of it: all that runs before the site learns, which is last and outside the
    net, as the engine files a page (`verdict.page_fault`). A replay meets it in the same state."""
    # before this page is counted: the lines no single earlier page can make the site's
    # (`missed_min_pages`), which are not the page's new text
    furniture = site.lines_shown_on(params.missed_min_pages)
    lessons: list[Lesson] = []
    try:
        outcome = _own_text(item, site, fingerprinter, params, lessons)
        if not isinstance(outcome, Outcome):
            outcome = _marked_shown(_placed(outcome), furniture, site, fingerprinter)
            outcome = placed_now(outcome) if now else outcome
    except Exception as err:  # noqa: BLE001 - one page's bug must not stop its batch (at every replay)
        if (rejection := faulted(err, item.page.id, item.origin)) is None:
            raise  # the store's or the machine's: the run stops, the batch is retried
        return Outcome(item.record, rejection.as_dict(), item.origin, line=item.line)
    for lesson in lessons:
        lesson()
    return outcome


def _placed(item: Fingerprinted) -> Fingerprinted:
    """The page's word-pair signature with which of its kept paragraphs sit in its article's block, found when asked.

    `clean.article_block.LazyInside`: a parse of its HTML (web dev 4-5 CPU ms), only where a new
    line at a copy's edge would be excused without the marks (`line_places.counted_new`); `placed_now`
    finds them at once. A page whose kept paragraphs are all `EDGE_PARAGRAPH_WORDS` long needs
    none (those count wherever they sit)."""
    signature = item.signatures.get(WordPairsMethod.name)
    if not isinstance(signature, WordPairsSignature) or not lines_hashed(signature) or not item.text:
        return item
    if not (paragraph_words(signature.paragraphs) < EDGE_PARAGRAPH_WORDS).any():
        return item
    placed = with_article(signature, LazyInside(item.page, item.text, signature.line_hashes, item.text_hashes))
    return item.replaced(signatures={**item.signatures, WordPairsMethod.name: placed})


def placed_now(item: Fingerprinted | Outcome) -> Fingerprinted | Outcome:
    """The page with its article-block marks found now, in its word-pair signature to be encoded (`own_text`'s page).

    The global topology's fingerprint step: its index step judges the page, and a later one
    filed first, from their encoded signatures, so the marks go in them (a bit a kept paragraph
    after the numbers, where one is inside: `wordpairs.WordPairsMethod.encode`); file mode judges
    the page in memory and asks where they decide."""
    if not isinstance(item, Fingerprinted):
        return item
    signature = item.signatures.get(WordPairsMethod.name)
    if not isinstance(signature, WordPairsSignature) or signature.article is None:
        return item
    placed = with_inside(signature, signature.article())
    return item.replaced(signatures={**item.signatures, WordPairsMethod.name: placed})


def _marked_shown(item: Fingerprinted, furniture: np.ndarray, site: SiteTemplate,
                  fingerprinter: Fingerprinter) -> Fingerprinted:
    """The page's word-pair signature told which of its lines its site showed before.

    `furniture`: the lines at least two of its site's earlier pages showed. The paragraphs of its
    sketch among them marked (`wordpairs.mark_shown`), and a MinHash of the pairs of its lines
    (of any length) among them kept beside it (`wordpairs.with_shown_lines`): neither is its new
    text. A line of one earlier page may be that page's content (the first part of a paginated
    article, a paragraph of another story, the paragraph of a story's first fetch that its second
    dropped and its third restores): it is kept with which page showed it
    (`one_page_lines.with_one_page_lines`), and is new text unless that page is another story's. Not
    on a page whose URL its site counted (`SiteTemplate.counted`): a re-fetch, or a view-all page after
    its `?page=1` part (one page by `page_key`), which its candidates may not find."""
    signature = item.signatures.get(WordPairsMethod.name)
    if not isinstance(signature, WordPairsSignature):
        return item
    marked = signature
    method = next((m for m in fingerprinter.methods if isinstance(m, WordPairsMethod)), None)
    if len(furniture):
        marked = mark_shown(signature, furniture) if len(signature.paragraphs) else signature
        if method is not None:
            marked = with_shown_lines(marked, method, item.text, item.text_hashes, furniture, item.page.lang)
    if method is not None and len(item.text_hashes) and site.line_count and not site.counted(item.page.url):
        marked = with_one_page_lines(marked, method, item.text, item.text_hashes, site.shown_once_by(item.text_hashes),
                                     furniture, document_key(item.page.url), item.page.lang)
    if marked is signature:
        return item
    return item.replaced(signatures={**item.signatures, WordPairsMethod.name: marked})


def _own_text(item: Fingerprinted, site: SiteTemplate, fingerprinter: Fingerprinter,
              params: TemplateParams, lessons: list[Lesson]) -> Fingerprinted | Outcome:
    """`own_text` before the page's paragraphs are marked; what its site learns from it is put in `lessons`.

    A read from the site's learned (or brief) container that leaves the page without text of its
    own is not the page's text, and `fast` reads the page again: a read that is empty, or whose
    lines its site's earlier pages all showed while the page shows new text outside it (as
    "missed content", on one earlier page or more), or of which the template leaves too little.
    Such a container is a box every page of the site shows (a newsletter box, which pages an
    attacker published on the host may have taught it: docs/template-model.md, "hostile pages"),
    and counts as failed on the page (`SiteLayout.hollow`). `fast`'s read is judged as without
    a learned layout; the site's state is as its earlier pages left it either way."""
    if item.layout_asked:
        read = read_by_layout(item, site, fingerprinter)
        if isinstance(read, Outcome):
            return read
        item = read
    if item.layout_asked:
        if item.rejection is None:
            hashes = item.text_hashes
            judged = _judged(item, site, fingerprinter, params, hashes, learned=_learned_read(item.layout_seen))
            if judged is not None:
                lessons += [partial(_learn_layout, item, site, fingerprinter),
                            partial(_learn_lines, item, site, params, hashes)]
                return judged
            hollow = item.layout_seen.partition("\n")[0]
        elif item.layout_asked == OBSERVE:
            return item.rejection
        else:
            hollow = HELD  # a learned read too short to be judged (or `fast`'s, which says so again)
        again = fingerprinter.read_again(item, OBSERVE)
        if isinstance(again, Outcome):
            return again
        if item.rejection is not None and again.rejection is not None:
            return item.rejection  # no text however read: the page teaches the layout nothing, as before
        # the page's own text is judged by its site's lines, not its layout: the layout learns after
        lessons.append(partial(_learn_layout, again, site, fingerprinter, hollow))
        if again.rejection is not None:
            return again.rejection
        item = again
    elif item.rejection is not None:
        return item.rejection
    hashes = item.text_hashes
    judged = _judged(item, site, fingerprinter, params, hashes, learned=False)
    assert judged is not None  # (only a learned read is found hollow)
    lessons.append(partial(_learn_lines, item, site, params, hashes))
    return judged


def _learned_read(seen: str) -> bool:
    """Whether the page was read from its site's learned or brief container."""
    return seen == HELD or seen.startswith(BRIEF)


def _learn_lines(item: Fingerprinted, site: SiteTemplate, params: TemplateParams, hashes: np.ndarray) -> None:
    """The site counts the page's lines: of its main and visible texts (`hashes`: its text's `line_hashes`).

    A page that shows nothing its site did not show before, line for line (the same story under
    another URL of the site), counts only its lines that are template already: it is no new
    evidence of what the site's template is, and counted whole, three such copies of a story on a
    new host made the story's own lines template (its re-crawl then read as new text, a story split
    in two). It is a page of the site all the same, and its URL a known one: left out, its next
    fetch (an AMP or print copy re-crawled with an "Updated" line) counted as a new page, and the
    story's lines were template again (a hostile review: 16 of 16 canonical re-crawls split)."""
    visible = item.visible_hashes
    counted = np.concatenate((hashes, visible)) if len(hashes) and len(visible) else hashes if len(hashes) else visible
    if site.shows_every(counted):
        template = site.removed_lines(counted, params)
        counted = counted[np.asarray(template, dtype=bool)] if template is not None else counted[:0]
    site.learn(item.page.url, counted, params)


def _judged(item: Fingerprinted, site: SiteTemplate, fingerprinter: Fingerprinter, params: TemplateParams,
            hashes: np.ndarray, learned: bool) -> Fingerprinted | Outcome | None:
    """The page judged on its own text, by its site as its earlier pages left it; None: a hollow `learned` read.

    `hashes`: its text's `line_hashes`, which its site learns after (`_learn_lines`)."""
    missed, first_shown, shown = _missed_own_text(item, site, hashes, params)
    if learned and (shown or _leaves_out_own_text(item, site, hashes, params)):
        return None
    if missed:
        return Outcome(item.record, Rejection(Reason.TEMPLATE_ONLY.value, missed, item.origin).as_dict(), item.origin,
                       line=item.line)
    known = site.known(params)
    if first_shown:
        try:
            signatures = fingerprint_text(first_shown, item.page.lang, fingerprinter.methods,
                                          fingerprinter.config.cleaning.min_words)
        except Rejected:
            return item.replaced(template_known=False)
        return item.replaced(signatures=signatures, text=first_shown, template_known=False)
    template = site.removed_lines(hashes, params)
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
        if learned:
            return None
        provisional = "" if known else f" (provisional: the site has shown {site.pages} pages)"
        detail = (f"{removed} of the page's {len(lines)} lines are its site's template{provisional}; "
                  "too little own text is left")
        return Outcome(item.record, Rejection(Reason.TEMPLATE_ONLY.value, detail, item.origin).as_dict(), item.origin,
                       line=item.line)
    kept = hashes[~np.asarray(template, dtype=np.bool_)]  # the kept lines' hashes: `text`'s (`without_lines`)
    return item.replaced(signatures=signatures, text=text, text_hashes=kept, template_known=True)


def _missed_own_text(item: Fingerprinted, site: SiteTemplate, hashes: LineHashes,
                     params: TemplateParams) -> tuple[str, str, bool]:
    """Whether the page's main text is not its own (clean/template.py, "missed content").

    Why it is rejected, or the text it shows for the first time, on which it is judged instead;
    ("", "") if neither. Judged on its new text in the site's cold start, and in a known site where
    its main text is the site's template (a cookie notice every page shows, which the extraction
    took instead of a short product text: rejected from a site's third page on, before). Rejected
    where at least `missed_min_pages` earlier pages of a known site showed its main text and that
    is not the template: two pages an attacker publishes cannot make a short article judged on
    the related links beside it (the template needs `min_share` of the site's pages); a known site
    whose main text only one earlier page showed is judged on it. Third: whether its site's earlier
    pages (one or more) showed all of its short main text while it shows new text outside it (what
    makes a learned read not the page's: `_own_text`)."""
    if not site.shown_before(item.page.url, hashes):
        return "", "", False
    main_words = Document.from_text(item.text, item.page.lang).num_tokens
    if main_words >= params.missed_short_words:
        return "", "", False
    visible, visible_hashes = item.visible_lines
    new = [visible[pos] for pos in site.new_lines(visible_hashes, hashes)]
    new_words = Document.from_text("\n".join(new), item.page.lang).num_tokens if new else 0
    if new_words < params.missed_new_words:
        return "", "", False
    if not site.known(params) or all(site.removed_lines(hashes, params) or [False]):
        return "", "\n".join(new), True
    if site.shown_before(item.page.url, hashes, params.missed_min_pages):
        return (f"the page's main text ({main_words} words) is all text its site showed on at least "
                f"{params.missed_min_pages} earlier pages, while {new_words} words it shows for the first time "
                "are outside it: the extraction took the template"), "", True
    return "", "", True


def _leaves_out_own_text(item: Fingerprinted, site: SiteTemplate, hashes: np.ndarray, params: TemplateParams) -> bool:
    """Whether a short learned read holds fewer of the words its site never showed than the page shows outside it.

    A box beside the page's text (the headline and a standfirst every page shows; a box a
    brief's rescue seemed to come from, or that pages an attacker published on the host taught)
    holds a word or two the site never showed, while the page's body lies outside it: judged on
    the box, a re-fetch of the URL under the same headline with another body was its `exact`
    duplicate. So a learned read under `missed_short_words` words is not the page's where at least
    `missed_new_words` new words lie outside it and more than in it (`fast` reads the page again:
    `_own_text`). The missed-content test's (`_missed_own_text`) for a read none of whose words
    are new, at any URL (a re-fetch's own earlier lines count as shown)."""
    main_words = Document.from_text(item.text, item.page.lang).num_tokens
    if main_words >= params.missed_short_words:
        return False
    visible, visible_hashes = item.visible_lines
    outside = [visible[pos] for pos in site.new_lines(visible_hashes, hashes)]
    outside_words = Document.from_text("\n".join(outside), item.page.lang).num_tokens if outside else 0
    if outside_words < params.missed_new_words:
        return False
    lines = [line for line in item.text.split("\n") if line]
    inside = [lines[pos] for pos in site.new_lines(hashes, NO_LINES)]
    return outside_words > (Document.from_text("\n".join(inside), item.page.lang).num_tokens if inside else 0)
