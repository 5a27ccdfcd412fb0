import pytest
from conftest import make_article

from streamdedup.fingerprints.a12 import A12Method
from streamdedup.fingerprints.exact import ExactMethod
from streamdedup.fingerprints.registry import METHODS, create_method
from streamdedup.tokens.document import Document


def _doc(paragraphs):
    return Document.from_text("\n".join(paragraphs))


def test_exact_ignores_case_and_punctuation_but_not_words():
    method = ExactMethod()
    a = method.signature(Document.from_text("hello, world. again"))
    assert a == method.signature(Document.from_text("hello world again"))
    assert method.similarity(a, method.signature(Document.from_text("hello world again!"))) == 1.0
    assert method.similarity(a, method.signature(Document.from_text("hello world, hi"))) is None


def test_a12_matches_copy_with_edits_outside_longest_sentences():
    article = make_article(8, paragraphs=8)
    method = A12Method()
    original = method.signature(_doc(article))
    # a word changed in a short sentence; a sentence appended
    sentences = article[2].split(". ")
    shortest = min(range(len(sentences)), key=lambda i: len(sentences[i]))
    sentences[shortest] = "Changed " + sentences[shortest]
    copy = article[:2] + [". ".join(sentences)] + article[3:] + ["Updated at noon."]
    assert method.similarity(original, method.signature(_doc(copy))) is not None
    assert set(method.index_keys(original)) & set(method.index_keys(method.signature(_doc(copy))))


def test_a12_rejects_length_change_beyond_ratio():
    article = make_article(9, paragraphs=8)
    method = A12Method()
    teaser = method.signature(_doc(article[:4]))
    assert method.similarity(method.signature(_doc(article)), teaser) is None


def test_a12_rejects_a_different_page_sharing_one_long_sentence():
    a = make_article(10, paragraphs=6)
    b = make_article(11, paragraphs=6)
    method = A12Method()
    sig_a = method.signature(_doc(a))
    longest = max((s for p in a for s in p.split(". ")), key=lambda s: len(s.split()))
    sig_b = method.signature(_doc(b + [longest]))
    assert method.similarity(sig_a, sig_b) is None  # word signatures and lengths disagree


def test_a12_roundtrip():
    method = A12Method()
    sig = method.signature(_doc(make_article(12)))
    assert method.decode(method.encode(sig)) == sig


def test_a12_keeps_32_bits_of_each_word_signature_and_judges_as_with_64():
    """A record is 20 bytes shorter; the 64-bit layout is byte for byte that of before 2026-12-02;
    the verdicts of both agree (pages from make_article, pairs of every kind)."""
    import struct

    from streamdedup.fingerprints.a12 import A12Params

    narrow, wide = A12Method(), A12Method(A12Params(word_bits=64))
    article = make_article(12)
    full = wide.signature(_doc(article))
    kept = narrow.signature(_doc(article))
    assert kept.ss == full.ss and kept.ws == tuple(w & 0xFFFFFFFF for w in full.ws)
    assert len(narrow.encode(kept)) == len(wide.encode(full)) - 4 * len(full.ws) == 10 + 8 * len(full.ss) + 4 * len(full.ws)
    assert wide.encode(full) == struct.pack(f"<IIBB{len(full.ss)}Q{len(full.ws)}Q", full.length, full.sentences,
                                            len(full.ss), len(full.ws), *full.ss, *full.ws)  # as before
    assert narrow.decode(narrow.encode(kept)) == kept
    assert narrow.decode(narrow.encode(full)) == kept  # a 64-bit signature is kept as a record keeps it
    pages = [make_article(seed, paragraphs=6) for seed in range(20, 26)]
    pages += [page[:-1] for page in pages] + [page + ["One more line was added at noon today."] for page in pages]
    verdicts = []
    for method in (narrow, wide):
        signatures = [method.signature(_doc(page)) for page in pages]
        encoded = [method.encode(signature) for signature in signatures]
        one_by_one = [[method.similarity(a, b) for b in signatures] for a in signatures]
        assert [[None if x != x else x for x in method.similarities(a, encoded).tolist()] for a in signatures] == one_by_one
        verdicts.append(one_by_one)
    assert verdicts[0] == verdicts[1]
    assert sum(v is not None for row in verdicts[0] for v in row) > len(pages)  # copies matched, not only selves
    with pytest.raises(ValueError, match="word_bits is 32 or 64"):
        A12Params(word_bits=16)


def test_an_a12_description_from_before_word_bits_means_64():
    from streamdedup.fingerprints.registry import parse_description

    name, params, _ = parse_description("a12(length_ratio=1.15,count_ratio=1.2,min_word_matches=2,min_word_letters=3)")
    assert name == "a12" and params["word_bits"] == "64"
    assert A12Method().params.word_bits == 32


def test_registry_creates_and_explains():
    assert set(METHODS) >= {"exact", "minhash", "simhash", "a12"}
    assert create_method("minhash", threshold=0.7).params.threshold == 0.7
    with pytest.raises(ValueError, match="unknown fingerprint method 'simhsh'"):
        create_method("simhsh")
    with pytest.raises(ValueError, match="minhash has no parameter .perms.; its parameters: num_perm"):
        create_method("minhash", perms=5)


def test_each_registered_name_is_its_methods_and_its_modules():
    """The registry's names, in its order, are each its class's `name` and its module's."""
    assert list(METHODS)[:5] == ["exact", "minhash", "simhash", "a12", "wordpairs"] and len(METHODS) == 22
    for name in METHODS:
        assert METHODS[name].name == name and METHODS[name].__module__ == f"streamdedup.fingerprints.{name}"
    assert "simhsh" not in METHODS and METHODS.get("simhsh") is None


def test_a_run_of_the_default_methods_imports_no_other_methods_module(tmp_path):
    """The seventeen other methods' modules (~35 ms of a command's start-up) load only when named."""
    import json
    import subprocess
    import sys

    data = tmp_path / "a.jsonl"
    data.write_text('{"url": "https://a.example/1", "content": "one short page of plain text words"}\n')
    probe = ("import json, sys; from streamdedup.api import dedup_files; "
             f"dedup_files([{str(data)!r}], {str(tmp_path / 'out')!r}); "
             "print(json.dumps(sorted(m.rsplit('.', 1)[1] for m in sys.modules if m.startswith('streamdedup.fingerprints.'))))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert json.loads(done.stdout) == ["a12", "base", "exact", "kernels", "lsh", "minhash", "one_page_lines", "paragraph_rows",
                                       "registry", "simhash", "wordpair_kernels", "wordpairs"]


def test_longest_words_and_sentences_rank_like_a_full_sort():
    """The pruned rankings equal sorting every (length, hash) pair, also with many repeats."""
    import numpy as np

    from streamdedup.fingerprints.a12 import _longest_sentences
    from streamdedup.fingerprints.kernels import words_and_longest
    from streamdedup.hash_arrays import combine

    texts = ["\n".join(make_article(i)) for i in range(5)] + [
        "aaaaaaaaaa aaaaaaaaaa aaaaaaaaaa bb cc dd ee ff gg hh. x y z. zz yy",
        "one. two three. four five six. seven eight nine ten. a b c d. e f g h."]
    for text in texts:
        doc = Document.from_text(text)
        words = sorted({(len(t), int(h)) for t, h in zip(doc.tokens, doc.token_hashes.tolist(), strict=True)},
                       key=lambda item: (-item[0], item[1]))
        length, longest = words_and_longest(doc.token_starts, doc.token_ends, doc.token_hashes, doc.token_is_cjk, 3, 5)
        assert longest.tolist() == [h for _, h in words[:5]]
        assert length == np.count_nonzero((doc.token_lengths >= 3) | doc.token_is_cjk)
        sentences = sorted(((end - start, combine(doc.token_hashes[start:end])) for start, end in doc.sentence_spans()),
                           key=lambda item: (-item[0], item[1]))
        assert _longest_sentences(doc, 3) == tuple(s for _, s in sentences[:3])


def test_longest_distinct_equals_sorting_all_pairs():
    import numpy as np

    from streamdedup.fingerprints.kernels import longest_distinct

    rng = np.random.default_rng(11)
    for size in (0, 1, 3, 7, 50, 400):
        lengths = rng.integers(1, 6, size=size).astype(np.int64)
        hashes = (lengths * 7 + rng.integers(0, 3, size=size)).astype(np.uint64)  # many repeats
        expected = sorted(set(zip((-lengths).tolist(), hashes.tolist(), strict=True)))[:5]
        assert longest_distinct(lengths, hashes, 5).tolist() == [h for _, h in expected]


def test_a_signature_laid_out_by_other_params_is_told_by_its_size():
    """What an index partition checks of a request that names no maker (`laid_out_as_mine`)."""
    from streamdedup.fingerprints.a12 import A12Params
    from streamdedup.fingerprints.minhash import MinHashMethod, MinHashParams

    doc = _doc(make_article(12))
    narrow, wide = A12Method(), A12Method(A12Params(word_bits=64))
    assert narrow.laid_out_as_mine(narrow.encode(narrow.signature(doc)))
    assert not narrow.laid_out_as_mine(wide.encode(wide.signature(doc)))
    assert not wide.laid_out_as_mine(narrow.encode(narrow.signature(doc))) and not narrow.laid_out_as_mine(b"\x01")
    default, before = MinHashMethod(), MinHashMethod(MinHashParams(value_bits=16, band_check_bits=0))
    assert default.laid_out_as_mine(default.encode(default.signature(doc)))
    assert not default.laid_out_as_mine(before.encode(before.signature(doc)))
    assert ExactMethod().laid_out_as_mine(ExactMethod().encode(ExactMethod().signature(doc)))
