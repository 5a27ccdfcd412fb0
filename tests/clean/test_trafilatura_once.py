"""trafilatura's main extractor and, where its text covers little of the page, its readability/
justext comparison, from one parse: the text trafilatura.extract gives, at less cost."""

import pytest

from streamdedup.clean.extract import _trafilatura, extract_trafilatura
from streamdedup.clean.trafilatura_once import STEPS_AVAILABLE, extract_once
from streamdedup.testing import make_article, wrap_in_template

pytestmark = pytest.mark.skipif(not STEPS_AVAILABLE, reason="another trafilatura: its two calls are made")

ARTICLE = make_article(5)
TEASER = ('<div class="teaser"><p>A teaser of another story about the football club and its stadium plans '
          'for next year and beyond.</p></div>')
BR_PAGE = "<html><body><div id='x'>" + "<br><br>".join(ARTICLE) + "</div></body></html>"
WILD_PAGE = (f"<html><body><div id='x'>{TEASER}<p>{ARTICLE[0]}</p></div><div>" + "<br><br>".join(ARTICLE)
             + "</div></body></html>")
PAGES = [wrap_in_template(make_article(2), "Daily Planet"), BR_PAGE, WILD_PAGE, "", "<html></html>"]


def _count_parses(monkeypatch) -> list[int]:
    """Every lxml parse trafilatura makes of a page (its own calls and ours)."""
    import trafilatura.core

    from streamdedup.clean import trafilatura_once

    calls: list[int] = []
    real = trafilatura.core.load_html

    def spy(html, *args):
        calls.append(len(html))
        return real(html, *args)

    monkeypatch.setattr(trafilatura.core, "load_html", spy)
    monkeypatch.setattr(trafilatura_once, "load_html", spy)
    return calls


@pytest.mark.parametrize("html", PAGES)
def test_the_text_is_trafilaturas_with_and_without_its_comparison(html):
    assert extract_once(html, lambda text: False) in (_trafilatura(html, fast=True), None)
    assert extract_once(html, lambda text: True) in (_trafilatura(html, fast=False) or _trafilatura(html, fast=True), None)


def test_a_page_the_main_extractor_misses_is_parsed_once_for_both_passes(monkeypatch):
    """Text in <br>-separated runs of one div: the main extractor alone finds nothing, the
    comparison finds it; trafilatura.extract called twice parsed the page twice."""
    parses = _count_parses(monkeypatch)
    text = extract_trafilatura(BR_PAGE)
    assert ARTICLE[0][:60] in text and ARTICLE[-1][-60:] in text
    assert text == _trafilatura(BR_PAGE, fast=False)
    assert len(parses) == 1 + 1  # ours, and the reference call's


def test_the_main_extractor_runs_again_in_full_mode_where_its_recovery_read_the_mode():
    """Its wild-text recovery keeps teaser blocks in fast mode only: the one place it reads `fast`."""
    from streamdedup.clean import trafilatura_once

    reads = []
    real = trafilatura_once.extract_content

    def spy(tree, options):
        result = real(tree, options)
        reads.append(options.fast_read)
        return result

    trafilatura_once.extract_content = spy
    try:
        extract_once(WILD_PAGE, lambda text: True)
        extract_once(wrap_in_template(make_article(2), "Daily Planet"), lambda text: True)
    finally:
        trafilatura_once.extract_content = real
    # the wild page's recovery read the mode: a second, full-mode pass; the article page's did not
    assert reads == [True, True, False]
