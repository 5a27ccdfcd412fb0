"""`wordpair_kernels.edited_in_place` gives what the numpy reading of `new_text._edited_in_place` gave, bit for bit."""

from __future__ import annotations

from dataclasses import replace
from struct import error as struct_error

import numpy as np

from streamdedup.fingerprints.paragraph_rows import (
    LENGTH_SHIFT,
    MAX_PARAGRAPH_WORDS,
    SHOWN_BIT,
    paragraph_values,
    paragraph_words,
    shown_before,
)
from streamdedup.fingerprints.wordpair_kernels import _outside_held, edited_in_place
from streamdedup.verdict.new_text import AGREEING_VALUES, EDITED_NEW, IN_PLACE_VALUES


def _numpy_reading(values: np.ndarray, words: np.ndarray, blocks: np.ndarray, shown: np.ndarray, own: float,
                   theirs: list[np.ndarray], their_blocks: list[np.ndarray], out: np.ndarray) -> np.ndarray:
    """The per-candidate numpy calls the kernel replaced (`_equal_values`, `_sole_slot`, then the bound)."""
    out = out.copy()
    for r, (sketch, other_blocks) in enumerate(zip(theirs, their_blocks, strict=True)):
        if not len(sketch) or not np.isfinite(out[r]):
            continue
        equal = (values[:, None, :] == paragraph_values(sketch)[None, :, :]).sum(axis=2)
        held = ((equal >= AGREEING_VALUES) & (blocks[:, None] == other_blocks[None, :])).any(axis=1)
        mine_rows, their_rows = np.flatnonzero(~blocks), np.flatnonzero(~other_blocks)
        if not len(mine_rows) or not len(their_rows):
            continue
        inner = equal[mine_rows][:, their_rows]
        agreed = inner >= AGREEING_VALUES
        counterpart = np.where(agreed.any(axis=1), np.argmax(np.where(agreed, inner, -1), axis=1), -1)
        before = np.maximum.accumulate(np.concatenate([[-1], counterpart[:-1]]))
        later = np.where(counterpart >= 0, counterpart, inner.shape[1])
        after = np.minimum.accumulate(np.concatenate([later[1:], [inner.shape[1]]])[::-1])[::-1]
        slot = np.where((counterpart < 0) & (after - before == 2), before + 1, -1)
        slot = np.where((slot >= 0) & ~agreed.any(axis=0)[np.maximum(slot, 0)], slot, -1)
        at = np.maximum(slot, 0)
        their_words = paragraph_words(sketch)[their_rows]
        edited = ((slot >= 0) & ~held[mine_rows] & (inner[np.arange(len(mine_rows)), at] >= IN_PLACE_VALUES)
                  & (words[mine_rows] == their_words[at]) & (words[mine_rows] < MAX_PARAGRAPH_WORDS))
        if not edited.any():
            continue
        counted = np.where(blocks & ~held, 0, words - 1).astype(np.int64)
        unheld = ~(held | shown)
        outside = float(_outside_held(counted, unheld, own))
        unheld[mine_rows[edited]] = False
        inside = float(_outside_held(counted, unheld, own))
        out[r] = min(float(out[r]), inside + EDITED_NEW * (outside - inside))
    return out


def _sketch(values: np.ndarray, words: np.ndarray, shown: np.ndarray) -> np.ndarray:
    rows = sum(values[:, k].astype(np.uint64) << np.uint64(10 * k) for k in range(4))
    return rows | (words.astype(np.uint64) << np.uint64(LENGTH_SHIFT)) | np.where(shown, SHOWN_BIT, np.uint64(0))


def test_the_kernel_reads_edits_in_place_as_the_numpy_calls_did() -> None:
    rng = np.random.default_rng(60)
    lowered = 0
    for _ in range(400):
        n = int(rng.integers(1, 12))
        values = rng.integers(0, 1024, (n, 4))
        words = rng.integers(2, 128, n)
        shown = rng.random(n) < 0.1
        blocks = rng.random(n) < 0.15
        for i in range(1, n):  # a paragraph sharing 2 values and its length with the one before (a list's items)
            if rng.random() < 0.2:
                values[i, :2], words[i] = values[i - 1, :2], words[i - 1]
        page = _sketch(values, words, shown)
        theirs, their_blocks = [], []
        for _ in range(int(rng.integers(1, 6))):
            # the page's paragraphs, some kept, some edited (2 or 3 values kept), some dropped, some new
            rows = []
            for i in range(n):
                pick = rng.random()
                if pick < 0.15:
                    continue
                if pick > 0.95 and rows:  # in its place, the one before shown again: agreed with, not its own
                    rows.append(rows[-1])
                    continue
                kept = values[i].copy()
                if pick < 0.75:  # 2 values changed (edited, if in its place), or 1 (still held)
                    for k in rng.choice(4, size=2 if pick < 0.55 else 1, replace=False):
                        kept[k] = rng.integers(0, 1024)
                rows.append((kept, words[i] if rng.random() < 0.8 else rng.integers(2, 128)))
                if rng.random() < 0.05:  # a new paragraph
                    rows.append((rng.integers(0, 1024, 4), rng.integers(2, 128)))
                if rng.random() < 0.05:  # one shown twice: two counterparts agreeing as much
                    rows.append(rows[-1])
            if len(rows) > 2 and rng.random() < 0.4:  # two paragraphs moved: counterparts out of order
                a, b = rng.choice(len(rows), size=2, replace=False)
                rows[a], rows[b] = rows[b], rows[a]
            if rows:
                sketch = _sketch(np.array([v for v, _ in rows]), np.array([w for _, w in rows]), np.zeros(len(rows), bool))
            else:
                sketch = np.zeros(0, dtype=np.uint64)
            theirs.append(sketch)
            their_blocks.append(rng.random(len(sketch)) < 0.15)
        own = float(rng.integers(0, 2000)) if rng.random() < 0.95 else 0.0
        out = rng.random(len(theirs)) * 2 * own  # the page's pairs outside what each candidate holds
        out[rng.random(len(theirs)) < 0.1] = np.nan
        expected = _numpy_reading(paragraph_values(page), paragraph_words(page), blocks, shown_before(page), own,
                                  theirs, their_blocks, out)
        offsets = np.concatenate([[0], np.cumsum([len(s) for s in theirs])]).astype(np.int64)
        every = np.concatenate(theirs).astype(np.uint64)
        got = edited_in_place(paragraph_values(page), paragraph_words(page), blocks, shown_before(page), own,
                              paragraph_values(every), paragraph_words(every), np.concatenate(their_blocks),
                              offsets, out, AGREEING_VALUES, IN_PLACE_VALUES, MAX_PARAGRAPH_WORDS, EDITED_NEW)
        np.testing.assert_array_equal(got, expected)  # NaN where NaN, every other value the same float64
        lowered += int(np.sum(expected != out) - np.sum(np.isnan(out)))
    assert lowered > 50  # the cases lower many bounds: the edits' path is compared, not only the bounds kept


def test_paragraphs_of_reads_what_decode_reads_in_every_record_layout() -> None:
    """`WordPairsMethod.paragraphs_of` (read without the rest of the signature) against `decode`'s fields:
    records of every version (rows alone, with numbers, with marks), without a sketch, and cut short."""
    from streamdedup.fingerprints.wordpairs import WordPairsMethod
    from streamdedup.testing import make_article
    from streamdedup.tokens.document import Document

    method = WordPairsMethod()
    width = method._record.itemsize
    records = []
    for seed in range(6):
        signature = method.signature(Document.from_text("\n".join(make_article(seed, paragraphs=9)), "en"))
        inside = np.arange(len(signature.paragraphs)) % 2 == seed % 2  # article-block marks: written after the numbers
        data = method.encode(replace(signature, inside=inside))
        count = data[width] & 0x7F
        rows_end = width + 1 + 6 * count
        records += [data, data[:rows_end], data[:rows_end + count], data[:width], data[:width + 1 + 6],
                    data[:rows_end + count + 1], data[:3]]
    assert any(len(data) > width + 1 + 7 * (data[width] & 0x7F) for data in records[::7])  # marks among them
    for data in records:
        try:
            signature = method.decode(data)
        except (ValueError, IndexError, struct_error) as err:
            try:
                method.paragraphs_of(data)
            except type(err):
                continue
            raise AssertionError("paragraphs_of read a record decode refuses") from err
        paragraphs, capped, numbers = method.paragraphs_of(data)
        assert capped == signature.capped
        for got, expected in ((paragraphs, signature.paragraphs), (numbers, signature.numbers)):
            assert got.dtype == expected.dtype
            np.testing.assert_array_equal(got, expected)


def test_record_sketches_reads_what_paragraphs_of_reads_of_each_record() -> None:
    """`paragraph_rows.record_sketches` (every record's sketch in one pass over their bytes) against
    `paragraphs_of` record by record, read by `paragraph_values`, `paragraph_words` and `blocks_of`:
    records of every version, blocks among their numbers, and one cut short said not whole."""
    from streamdedup.fingerprints.paragraph_rows import BLOCKS_BELOW, blocks_of, record_sketches
    from streamdedup.fingerprints.wordpairs import WordPairsMethod
    from streamdedup.testing import make_article
    from streamdedup.tokens.document import Document

    method = WordPairsMethod()
    width = method.record_width
    rng = np.random.default_rng(5)
    records = []
    for seed in range(6):
        data = method.encode(method.signature(Document.from_text("\n".join(make_article(seed, paragraphs=9)), "en")))
        count = data[width] & 0x7F
        rows_end = width + 1 + 6 * count
        numbers = rng.integers(0, 256, count).astype(np.uint8)
        numbers[rng.random(count) < 0.4] = rng.integers(1, BLOCKS_BELOW)  # blocks of short lines
        marks = bytes((count + 7) // 8)
        records += [data, data[:rows_end], data[:rows_end] + numbers.tobytes(),
                    data[:rows_end] + numbers.tobytes() + marks, data[:width], data[:rows_end] + numbers[:1].tobytes()]
    lengths = np.array([len(data) for data in records], dtype=np.int64)
    ends = np.cumsum(lengths)
    values, words, blocks, offsets, whole = record_sketches(np.frombuffer(b"".join(records), dtype=np.uint8),
                                                            ends - lengths, ends, width, BLOCKS_BELOW)
    assert whole
    assert blocks.any() and not blocks.all()
    for r, data in enumerate(records):
        paragraphs, _, numbers_read = method.paragraphs_of(data)
        rows = slice(offsets[r], offsets[r + 1])
        np.testing.assert_array_equal(values[rows], paragraph_values(paragraphs))
        np.testing.assert_array_equal(words[rows], paragraph_words(paragraphs))
        np.testing.assert_array_equal(blocks[rows], blocks_of(numbers_read, len(paragraphs)))
    cut = records[0][: width + 4]  # its count says more rows than it holds: `paragraphs_of` refuses it
    assert not record_sketches(np.frombuffer(cut, dtype=np.uint8), np.zeros(1, dtype=np.int64),
                               np.array([len(cut)], dtype=np.int64), width, BLOCKS_BELOW)[4]
