"""What the paragraph sketches show held bounds a share of new text (`new_text.outside_held_paragraphs`): pure logic."""

from __future__ import annotations

import numpy as np
import pytest

from streamdedup.fingerprints.wordpairs import WordPairsMethod, paragraph_words
from streamdedup.testing import make_article
from streamdedup.tokens.document import Document
from streamdedup.verdict.columns import SignatureColumns
from streamdedup.verdict.engine import HELD_ERRORS, _bounded_by_held_paragraphs
from streamdedup.verdict.new_text import held_in_paragraphs, outside_held_paragraphs

TAG = 7
METHOD = WordPairsMethod()
METHODS = {"wordpairs": (TAG, METHOD)}
CONTINUE = "Continue reading the full story on our partner's site."


def _signature(paragraphs: list[str]):
    signature = METHOD.signature(Document.from_text("\n".join(paragraphs), "en"))
    assert signature is not None
    return signature


def _outside(mine: list[str], theirs: list[str]) -> tuple[float, float, int, int]:
    page, other = _signature(mine), _signature(theirs)
    columns = SignatureColumns([{TAG: METHOD.encode(other)}])
    sizes = np.array([float(other.set_size)])
    out, their_out = outside_held_paragraphs(columns, METHODS, {TAG: page}, page.set_size, sizes, np.array([0]))
    return float(out[0]), float(their_out[0]), page.set_size, other.set_size


def test_a_teasers_text_outside_the_paragraphs_its_article_holds_is_its_short_lines() -> None:
    article = make_article(31, paragraphs=12)
    out, their_out, own, size = _outside([*article[:6], CONTINUE], article)
    assert out <= 10 + 7  # the short line's pairs (its 9-11 tokens) and the 7 lines' joins
    held = paragraph_words(_signature(article[:6]).paragraphs).sum() - 6
    assert their_out >= size - held - 12  # the article's other six paragraphs
    # a replaced paragraph of another article is outside
    replaced = [*article[:3], make_article(32, paragraphs=1)[0], *article[4:6]]
    out, _, own, _ = _outside(replaced, article)
    assert out >= paragraph_words(_signature(replaced).paragraphs)[3] - 1


def test_a_page_repeating_its_paragraphs_is_measured_as_shares_of_its_paragraphs() -> None:
    """Its paragraphs hold more pairs than its distinct ones: what lies outside the held paragraphs,
    and what they hold, are shares of its paragraphs' pairs, made shares of its distinct pairs."""
    article, new = make_article(33, paragraphs=6), make_article(35, paragraphs=1)[0]
    page = [*article, *article, new]
    out, _, own, _ = _outside(page, article)
    pairs = paragraph_words(_signature(page).paragraphs) - 1
    assert pairs.sum() > own
    assert out == pytest.approx(pairs[-1] / pairs.sum() * own)
    columns = SignatureColumns([{TAG: METHOD.encode(_signature(article))}])
    held = held_in_paragraphs(columns, METHODS, {TAG: _signature(page)}, own, np.array([0]))
    assert held[0] == pytest.approx(own - out)
    once = [*article, new]  # its paragraphs fit in its distinct pairs: the held ones' pairs
    held = held_in_paragraphs(columns, METHODS, {TAG: _signature(once)}, _signature(once).set_size, np.array([0]))
    assert held[0] == paragraph_words(_signature(article).paragraphs).sum() - len(article)


def test_a_share_moves_down_to_the_bound_by_at_most_its_error() -> None:
    article = make_article(34, paragraphs=12)
    page, other = _signature([*article[:7], CONTINUE]), _signature(article)
    columns = SignatureColumns([{TAG: METHOD.encode(other)}] * 3)
    own, size = float(page.set_size), float(other.set_size)
    shares = np.array([0.117, 0.30, 0.05])  # an estimate off by its error, one far off, one within tolerance
    their = np.array([0.40, 0.40, 0.05])
    owns, sizes = np.full(3, own), np.full(3, size)
    before = shares.copy()
    _bounded_by_held_paragraphs(columns, METHODS, {TAG: page}, shares, their, int(own), owns, sizes,
                                np.arange(3), 0.10)
    error = METHOD.new_share_errors(before, owns, sizes)
    assert shares[0] < 0.10 <= before[0]  # the teaser's short line is ~2 % of it
    assert shares[1] == np.float64(before[1] - HELD_ERRORS * error[1])  # no further than its error
    assert shares[2] == before[2]  # within tolerance both ways: not asked


def test_a_shares_error_grows_as_the_pages_sizes_part() -> None:
    alike, teaser = METHOD.new_share_errors(np.array([0.05, 0.05]), np.array([600.0, 400.0]),
                                            np.array([600.0, 1200.0]))
    assert 0.01 < alike < teaser < 0.1
