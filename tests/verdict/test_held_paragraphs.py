"""What the paragraph sketches show held bounds a share of new text (`new_text.outside_held_paragraphs`): pure logic."""

from __future__ import annotations

import random

import numpy as np
import pytest

from streamdedup.fingerprints.paragraph_rows import (
    BLOCK_NUMBERED,
    BLOCK_NUMBERS,
    BLOCKS_BELOW,
    blocks_of,
    paragraph_values,
    paragraph_words,
)
from streamdedup.fingerprints.wordpairs import WordPairsMethod
from streamdedup.testing import make_article
from streamdedup.tokens.document import Document
from streamdedup.verdict.columns import SignatureColumns
from streamdedup.verdict.new_text import EDITED_NEW, held_in_paragraphs, outside_held_paragraphs
from streamdedup.verdict.relations import HELD_ERRORS, _bounded_by_held_paragraphs

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


def _spec_list(seed: int, lines: int = 8) -> list[str]:
    """A list of short lines (4-7 words each: a block of the sketch, `WordPairsParams.line_blocks`)."""
    words = make_article(seed, paragraphs=1, sentences=8)[0].replace(".", "").lower().split()
    return [" ".join(words[i * 7: i * 7 + 4 + i % 4]) for i in range(lines)]


def test_a_block_of_short_lines_the_other_holds_is_held_text() -> None:
    """A list the other page holds line for line is held like a paragraph: a teaser's bound is its new line.

    Before, a block was read as short lines outside every paragraph: a teaser of an article with a
    list read the list as possibly new, and its share estimate, one error over the tolerance, stood
    (multilingual dev: a teaser with a "continue reading" line, 0.011 new, read 0.110)."""
    article, spec = make_article(41, paragraphs=10), _spec_list(42)
    page = [*article[:3], *spec, *article[3:5], CONTINUE]
    signature = _signature(page)
    blocks = blocks_of(signature.numbers, len(signature.paragraphs))
    # the list: one block (12+ words); the short line after it a short unit (`WordPairsParams.short_lines`)
    assert (blocks & (paragraph_words(signature.paragraphs) >= 12)).sum() == 1 and blocks.sum() == 2
    out, their_out, own, size = _outside(page, [*article[:3], *spec, *article[3:]])
    assert out <= 10 + 8  # the short line's pairs and the lines' joins, not the list's ~40 pairs
    # the other side: the article's list is held by the teaser, its 5 other paragraphs are not
    held = paragraph_words(_signature(article[5:]).paragraphs).sum() - 5
    assert their_out <= held + 12


def test_a_block_the_other_lacks_is_outside_as_before() -> None:
    """A list the other page does not hold (another list in its place, an update stamp and a title)
    stays outside the held text: a block counts only where held, never more than its short lines did."""
    article, spec, other_spec = make_article(43, paragraphs=8), _spec_list(44), _spec_list(45)
    page = [*article[:4], *spec, *article[4:]]
    out, _, own, _ = _outside(page, [*article[:4], *other_spec, *article[4:]])
    listed = sum(len(line.split()) - 1 for line in spec)  # the list's pairs inside its lines
    assert out >= listed
    stamp = ["Updated Monday 18 March 2024 04:00 GMT", "Story title here", *article]
    out, _, own, _ = _outside(stamp, article)
    assert out >= 6 + 2  # the stamp's and the title's pairs


def test_a_shares_error_grows_as_the_pages_sizes_part() -> None:
    alike, teaser = METHOD.new_share_errors(np.array([0.05, 0.05]), np.array([600.0, 400.0]),
                                            np.array([600.0, 1200.0]))
    assert 0.01 < alike < teaser < 0.1


def _reference(page, others: list[bytes], own: int, sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The numpy reading `kernels.paragraphs_held` replaced: each sketch decoded, its values compared."""
    from streamdedup.fingerprints.paragraph_rows import paragraph_values, shown_before

    def outside(pairs, unheld, distinct):
        total = max(distinct, float(pairs.sum()))
        if total <= 0:
            return 0.0
        return (total - float(pairs.sum()) + float(pairs[unheld].sum())) * distinct / total

    count = len(others)
    mine_out, their_out, held_in = np.full(count, np.nan), np.full(count, np.nan), np.zeros(count)
    paragraphs = page.paragraphs
    values, pairs, shown = paragraph_values(paragraphs), paragraph_words(paragraphs) - 1, shown_before(paragraphs)
    blocks = blocks_of(page.numbers, len(paragraphs))
    for i, data in enumerate(others):
        theirs, _, numbers = METHOD.paragraphs_of(data)
        if not len(theirs) or not len(paragraphs):
            continue
        their_blocks = blocks_of(numbers, len(theirs))
        kind = blocks[:, None] == their_blocks[None, :]  # a paragraph held by a paragraph, a block by a block
        held = ((values[:, None, :] == paragraph_values(theirs)[None, :, :]).sum(axis=2) >= 3) & kind
        rows, cols = held.any(axis=1), held.any(axis=0)
        counted = np.where(blocks & ~rows, 0, pairs)  # a block not held: outside paragraphs, as short lines
        their_counted = np.where(their_blocks & ~cols, 0, paragraph_words(theirs) - 1)
        mine_out[i] = outside(counted, ~(rows | shown), float(own))
        their_out[i] = outside(their_counted, ~cols, float(sizes[i]))
        held_in[i] = float(own) - outside(counted, ~rows | shown, float(own))
    return mine_out, their_out, held_in


def test_the_compiled_held_paragraphs_read_as_the_sketches_decoded():
    """`outside_held_paragraphs` and `held_in_paragraphs` (one compiled pass) equal the sketches decoded and compared.

    On random sketches whose values often agree in 2, 3 or 4 places, some lines shown before, some
    candidates without a sketch."""
    from dataclasses import replace

    rng = np.random.default_rng(17)

    def sketch(n: int, base: np.ndarray) -> np.ndarray:
        picked = base[rng.integers(0, len(base), n)] if len(base) else rng.integers(0, 1 << 40, n, dtype=np.uint64)
        noise = rng.integers(0, 1 << 40, n, dtype=np.uint64)
        keep = rng.integers(0, 16, n).astype(np.uint64)  # which of the 4 values each keeps
        mask = np.zeros(n, dtype=np.uint64)
        for k in range(4):
            mask |= np.where((keep >> np.uint64(k)) & np.uint64(1), np.uint64(1023 << (10 * k)), np.uint64(0))
        words = rng.integers(0, 128, n).astype(np.uint64) << np.uint64(40)
        shown = np.where(rng.random(n) < 0.2, np.uint64(1 << 47), np.uint64(0))
        return ((picked & mask) | (noise & ~mask & np.uint64((1 << 40) - 1))) | words | shown

    def numbers(n: int) -> np.ndarray:  # some paragraphs blocks of short lines (`blocks_of`), some stating numbers
        return rng.choice(np.array([0, BLOCK_NUMBERS, BLOCK_NUMBERED + 5, BLOCKS_BELOW + 3], dtype=np.uint8), n)

    page = _signature(make_article(3))
    seen = []
    for _ in range(30):
        mine = sketch(int(rng.integers(1, 12)), np.zeros(0, dtype=np.uint64))
        page = replace(page, paragraphs=mine, numbers=numbers(len(mine)))
        others = []
        for _ in range(int(rng.integers(1, 9))):
            theirs = sketch(int(rng.integers(0, 12)), mine)
            other = replace(page, paragraphs=theirs, numbers=numbers(len(theirs)), set_size=int(rng.integers(1, 500)))
            others.append(METHOD.encode(other))
        own = int(rng.integers(1, 500))
        sizes = rng.integers(1, 500, len(others)).astype(np.float64)
        columns = SignatureColumns([{TAG: data} for data in others] + [{}])  # the last has no word pairs
        rows = np.arange(len(others) + 1)
        sizes_all = np.append(sizes, 7.0)
        want = _reference(page, others, own, sizes)
        mine_out, their_out = outside_held_paragraphs(columns, METHODS, {TAG: page}, own, sizes_all, rows)
        held = held_in_paragraphs(columns, METHODS, {TAG: page}, own, rows)
        np.testing.assert_array_equal(mine_out[:-1], want[0])
        np.testing.assert_array_equal(their_out[:-1], want[1])
        np.testing.assert_array_equal(held[:-1], want[2])
        assert np.isnan(mine_out[-1]) and np.isnan(their_out[-1]) and held[-1] == 0
        seen.extend(want[2][~np.isnan(want[0])].tolist())
    assert min(seen) <= 0 < max(seen) and any(0 < h < max(seen) for h in seen)  # none, some and more held


def test_a_record_cut_short_in_its_paragraph_sketch_reads_as_no_sketch() -> None:
    """A malformed record (its sketch's count says more paragraphs than its bytes hold) is not read past its end."""
    article = make_article(33, paragraphs=6)
    page, other = _signature(article), _signature(article)
    whole = METHOD.encode(other)
    sketch = whole[: len(whole) - len(other.paragraphs)]  # without its paragraphs' numbers, which follow the sketch
    for cut in (sketch[:-3], sketch[:-6]):
        columns = SignatureColumns([{TAG: cut}])
        out, their_out = outside_held_paragraphs(columns, METHODS, {TAG: page}, page.set_size,
                                                 np.array([float(other.set_size)]), np.array([0]))
        assert np.isnan(out[0]) and np.isnan(their_out[0])


def _edited_to_share(paragraph: str, values: int, seed: int) -> str:
    """`paragraph` with words changed until its sketch shares exactly `values` of its 4 values with it, as long."""
    rng = random.Random(seed)
    original = paragraph_values(_signature([paragraph]).paragraphs)[0]
    for _ in range(2000):
        words = paragraph.split()
        for _ in range(rng.randint(2, 6)):
            words[rng.randrange(len(words))] = f"edit{rng.randrange(1000)}"
        edited = " ".join(words)
        if int((paragraph_values(_signature([edited]).paragraphs)[0] == original).sum()) == values:
            return edited
    raise AssertionError("no edit found")


def test_a_paragraph_edited_in_place_is_held_text() -> None:
    """A light edit of a few words in a 30-40-word paragraph keeps 2 of its 4 values as often as 3.

    In its place (the only paragraph of the other's between its neighbours' counterparts) and as
    long, sharing 2 values, it is that paragraph edited, as `numbers_changed` reads it: held text
    but for the third of its pairs 2 values say new, not outside whole (web dev: an edited extract whose 39-word opening kept 2 values read 0.11 outside
    the held paragraphs, 0.056 of its pairs new; its share stood over the tolerance). A paragraph
    of other text there, or one sharing 2 values out of its place, is outside as before."""
    article = make_article(71, paragraphs=8)
    edited = _edited_to_share(article[0], 2, 72)
    short = 10 + 7  # the short line's pairs (its 9-11 tokens) and the lines' joins
    out, _, _, _ = _outside([edited, *article[1:4], CONTINUE], article)
    # held but for the third of its pairs its 2 shared values say new (`EDITED_NEW`)
    assert out <= short + EDITED_NEW * (len(edited.split()) - 1) + 1
    assert out < len(edited.split()) - 1
    # other text in the paragraph's place, as long: outside
    other = " ".join(make_article(73, paragraphs=1)[0].split()[: len(article[0].split())])
    out, _, _, _ = _outside([other, *article[1:4], CONTINUE], article)
    assert out >= len(other.split()) - 1
    # the edit moved out of its place (after the next paragraph, whose counterpart bounds its place): outside
    out, _, _, _ = _outside([article[1], edited, *article[2:4], CONTINUE], [article[0], article[1], *article[2:]])
    assert out >= len(edited.split()) - 1
