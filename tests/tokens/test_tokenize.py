import numpy as np
import pytest

from streamdedup.clean.normalize import normalize_text
from streamdedup.hash_arrays import HashSet, distinct, distinct_counts, in_sorted, mix64
from streamdedup.tokens.document import Document
from streamdedup.tokens.hashing import hash_tokens, shingle_hashes
from streamdedup.tokens.tokenize import BREAK, is_cjk, split_sentences, split_words, words_and_breaks


@pytest.mark.parametrize("text, words", [
    ("The quick brown fox, 2024!", ["The", "quick", "brown", "fox", "2024"]),
    ("Съешь же ещё этих булок", ["Съешь", "же", "ещё", "этих", "булок"]),
    ("Tiếng Việt có dấu thanh", ["Tiếng", "Việt", "có", "dấu", "thanh"]),
    ("中文网页。", ["中", "文", "网", "页"]),
    ("東京タワーへ", ["東", "京", "タ", "ワ", "ー", "へ"]),
    ("བོད་ཀྱི་སྐད་ཡིག།", ["བོད", "ཀྱི", "སྐད", "ཡིག"]),
    ("नमस्ते दुनिया", ["नमस्ते", "दुनिया"]),
])
def test_words_in_many_scripts(text, words):
    assert split_words(text) == words


def test_vietnamese_decomposed_tones_survive_normalisation():
    decomposed = "Tie\u0302\u0301ng Vie\u0323\u0302t"
    assert split_words(normalize_text(decomposed)) == ["tiếng", "việt"]


@pytest.mark.parametrize("text, count", [
    ("One sentence here. Another one! A third? Yes.", 4),
    ("Paragraph one\nParagraph two", 2),
    ("第一句。第二句！第三句？", 3),
    ("བོད་ཀྱི་སྐད། ཡིག་ཆ། གསུམ་པ།", 3),
    ("Первое предложение. Второе предложение.", 2),
])
def test_sentences(text, count):
    assert len(split_sentences(text)) == count


def test_document_sentence_bounds_index_tokens():
    doc = Document.from_text("a b c. d e.\nf")
    assert doc.tokens == ["a", "b", "c", "d", "e", "f"]
    assert doc.sentence_spans() == [(0, 3), (3, 5), (5, 6)]


def test_shingle_hashes_depend_on_order_and_window():
    doc = Document.from_text("a b c d")
    h = doc.token_hashes
    three = shingle_hashes(h, 3)
    assert len(three) == 2
    assert len(set(three.tolist())) == 2
    assert not np.array_equal(shingle_hashes(h[::-1], 3), three[::-1])
    assert len(shingle_hashes(h[:2], 5)) == 1  # short text: one shingle of all tokens
    assert len(shingle_hashes(h[:0], 5)) == 0


@pytest.mark.parametrize("text", [
    "One sentence here. Another one! A third? Yes.\nNew para 3.5 kg.",
    "第一句。第二句！mixed 中文 text. 第三句？",
    "བོད་ཀྱི་སྐད། ཡིག་ཆ། གསུམ་པ།",
    "Tiếng Việt có dấu. Câu thứ hai!\n\nĐoạn mới",
    "stray \\x00 byte. and_underscores stay apart.",
])
def test_one_pass_tokenisation_equals_sentence_by_sentence(text):
    doc = Document.from_text(text)
    expected_tokens, expected_bounds = [], [0]
    for sentence in split_sentences(text):
        words = split_words(sentence)
        if words:
            expected_tokens.extend(words)
            expected_bounds.append(len(expected_tokens))
    assert doc.tokens == expected_tokens
    assert doc.sentence_bounds.tolist() == expected_bounds


def _regex_tokens_and_bounds(text):
    tokens, bounds = [], [0]
    for token in words_and_breaks(text):
        if token != BREAK:
            tokens.append(token)
        elif len(tokens) > bounds[-1]:
            bounds.append(len(tokens))
    if len(tokens) > bounds[-1]:
        bounds.append(len(tokens))
    return tokens, bounds


@pytest.mark.parametrize("text", [
    "One sentence here. Another one! A third? Yes.\nNew para 3.5 kg.",
    "第一句。第二句！mixed 中文 text. 第三句？",
    "东京タワーへ 〇 x. \"Quoted.\" (paren.) a.) b?' c… d",
    "བོད་ཀྱི་སྐད། ཡིག་ཆ། གསུམ་པ།",
    "नमस्ते दुनिया। दूसरा॥ तीसरा",
    "Tiếng Việt có dấu. Câu thứ hai!\n\nĐoạn mới",
    "stray \x00 byte. and_underscores stay apart. x_y ①② ﹏ a‿b",
    "", "   ", ". ! ?",
    # Thai, Lao, Khmer runs cut by ICU; a Thai vowel sign before Latin letters in one run
    "ข้อ ๑. มนุษย์ทั้งหลาย! เกิดมา\nabc ສະບາຍດີ ທ່ານ. ការទទួលស្គាល់ 中文。ไทย", "\u0e34abc ไทย",
])
def test_compiled_scan_equals_the_regex_tokeniser(text):
    doc = Document.from_text(text)
    tokens, bounds = _regex_tokens_and_bounds(text)
    assert doc.tokens == tokens
    assert doc.sentence_bounds.tolist() == bounds
    assert doc.token_is_cjk.tolist() == [is_cjk(t) for t in tokens]


def test_token_hashes_depend_only_on_the_token():
    doc = Document.from_text("the cat. The cat and the dog")
    h = doc.token_hashes.tolist()
    assert h[0] == h[5] and h[1] == h[3] and len(set(h)) == 5
    assert hash_tokens(doc.tokens).tolist() == h
    assert hash_tokens([]).dtype == np.uint64


def test_distinct_counts_equal_numpy_unique():
    rng = np.random.default_rng(3)
    values = rng.integers(0, 50, size=500).astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    distinct, counts = distinct_counts(values)
    expected, expected_counts = np.unique(values, return_counts=True)
    assert distinct.tolist() == expected.tolist() and counts.tolist() == expected_counts.tolist()
    assert distinct_counts(values[:0])[0].dtype == np.uint64


def test_shingle_hashes_chain_token_hashes_then_mix():
    h = np.array([3, 5, 7, 11], dtype=np.uint64)
    m = np.uint64(0x9E3779B97F4A7C15)
    assert shingle_hashes(h, 2).tolist() == mix64(h[:3] * m + h[1:]).tolist()
    assert shingle_hashes(h, 1).tolist() == mix64(h).tolist()


@pytest.mark.parametrize("size", [0, 1, 7, 960, 5000])
def test_hash_set_is_sorted_membership(size):
    rng = np.random.default_rng(size)
    members = rng.integers(0, 2**64, size=size, dtype=np.uint64, endpoint=False)
    # unmixed values too (small, clustered in a few slots): the table spreads any uint64
    members = np.concatenate([members, np.arange(size // 4, dtype=np.uint64), np.zeros(size % 2, dtype=np.uint64)])
    asked = np.concatenate([members, rng.integers(0, 2**64, size=3 * size + 5, dtype=np.uint64),
                            np.arange(size, dtype=np.uint64), members + np.uint64(1)])
    rng.shuffle(asked)
    expected = in_sorted(np.unique(members), asked) if len(members) else np.zeros(len(asked), dtype=bool)
    assert HashSet(members).contains(asked).tolist() == expected.tolist()


@pytest.mark.parametrize("size", [0, 1, 2, 50, 700])
def test_distinct_is_unique_without_counts(size):
    values = np.random.default_rng(size).integers(0, 7 + size // 3, size=size).astype(np.uint64)  # many repeats
    expected = np.unique(values)
    assert distinct(values).tolist() == expected.tolist() == distinct_counts(values)[0].tolist()
    assert distinct(values).dtype == np.uint64
