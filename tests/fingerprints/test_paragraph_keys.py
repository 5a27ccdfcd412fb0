"""`wordpairs`' paragraph keys: a page is filed under its longest paragraphs, ordered by their content alone."""

from __future__ import annotations

import random

import pytest

from streamdedup.fingerprints.wordpairs import WordPairsMethod, WordPairsParams
from streamdedup.testing import make_article
from streamdedup.tokens.document import Document


def _keys(method: WordPairsMethod, paragraphs: list[str]) -> list[bytes]:
    signature = method.signature(Document.from_text("\n".join(paragraphs)))
    assert signature is not None
    return method.index_keys(signature)


def test_a_page_is_filed_under_its_longest_paragraphs_whatever_their_place():
    """The keys are the 16 longest paragraphs of 20 words or more, the same however the paragraphs are ordered."""
    method = WordPairsMethod()
    article = make_article(5, paragraphs=24)
    keys = _keys(method, article)
    assert len(keys) == 16 and len(set(keys)) == 16 and all(len(key) == 8 and key[5:] == bytes(3) for key in keys)
    shuffled = article[:]
    random.Random(1).shuffle(shuffled)
    assert set(_keys(method, shuffled)) == set(keys)
    assert method.max_index_keys == 16


@pytest.mark.parametrize("sentences", [5, 10])
def test_a_smaller_page_holding_one_of_the_longest_paragraphs_shares_its_key(sentences):
    """A part holding one of its article's 16 longest paragraphs is filed under that paragraph's key too,
    wherever the part's paragraphs come from: the order is of their content, so no part ranks it lower.
    With 10 sentences most paragraphs read the sketch's 127 words: the values, not the place, order them."""
    method = WordPairsMethod()
    shared = 0
    for seed in range(20):
        article = make_article(40 + seed, paragraphs=32, sentences=sentences)
        keys = set(_keys(method, article))
        for start in range(0, 32, 8):
            part = article[start:start + 8]
            # which of the part's paragraphs are among the article's longest: by their own keys
            held = {key for paragraph in part for key in _keys(method, [paragraph])} & keys
            assert held <= set(_keys(method, part)), (seed, start)
            shared += bool(held)
    assert shared >= 78  # of 80 parts (a part of 8 of 32 paragraphs misses all 16 longest 1 time in 800; 8: 1 in 10)


def test_short_lines_are_no_keys_and_keys_can_be_off():
    method = WordPairsMethod()
    short = ["word " * 15 + f"line {i}" for i in range(6)]  # 17 words each: sketched, not keyed
    assert _keys(method, short) == []
    off = WordPairsMethod(WordPairsParams(paragraph_keys=0))
    assert _keys(off, make_article(3, paragraphs=10)) == [] and off.max_index_keys == 0
    assert WordPairsMethod(WordPairsParams(max_paragraphs=3)).max_index_keys == 3
    with pytest.raises(ValueError, match="paragraph_keys is a number of paragraphs"):
        WordPairsParams(paragraph_keys=-1)


@pytest.mark.parametrize("params", [WordPairsParams(), WordPairsParams(paragraph_keys=0), WordPairsParams(paragraph_keys=2),
                                    WordPairsParams(max_paragraphs=3, key_words=12)])
def test_a_rebuilds_keys_are_the_pages_keys(params):
    """The keys made at once from encoded signatures (the store's filing and its rebuild) are each page's own."""
    method = WordPairsMethod(params)
    texts = [make_article(seed, paragraphs=seed % 20, sentences=1 + seed % 9) for seed in range(60)]
    texts += [[make_article(1)[0]] * 5 + make_article(2, paragraphs=3), ["short line of words"] * 3]  # repeats, none
    signatures = [s for s in (method.signature(Document.from_text("\n".join(t))) for t in texts) if s is not None]
    rows, counts = method.index_key_rows([method.encode(s) for s in signatures])
    assert rows.dtype == "uint8" and rows.shape[1] == 8
    flat = [bytes(row) for row in rows]
    expected = [method.index_keys(method.decode(method.encode(s))) for s in signatures]
    assert counts.tolist() == [len(keys) for keys in expected]
    assert flat == [key for keys in expected for key in keys]
    assert (sum(counts) > 0) == (params.paragraph_keys > 0)
