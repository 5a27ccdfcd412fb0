"""The word-pair paragraph sketch's compiled pass against a plain reference, on texts with awkward lines."""

from __future__ import annotations

import random
from functools import cache
from importlib import resources

import pytest
import xxhash

from streamdedup.fingerprints.paragraph_rows import MAX_PARAGRAPH_WORDS, PARAGRAPH_VALUE_BITS, paragraph_words
from streamdedup.fingerprints.wordpairs import TAIL, WordPairsMethod, WordPairsParams
from streamdedup.stats.common_words import COMMON_WORDS_FILE
from streamdedup.tokens.document import Document

_MASK64 = (1 << 64) - 1
# "the", "of", "der", "и" and "的" are common words: a pair of two is left out of a paragraph's values
_WORDS = ["alpha", "béta", "γάμμα", "delta", "😀x", "eps", "zeta", "東", "京", "eta", "theta", "iota",
          "the", "of", "der", "и", "的"]


@cache
def common_tokens() -> frozenset[str]:
    """The shipped list's words as tokens, read without the module's hashing."""
    text = resources.files("streamdedup").joinpath("data", COMMON_WORDS_FILE).read_text(encoding="utf-8")
    return frozenset(Document.from_text(text).tokens)


def reference(method: WordPairsMethod, doc: Document) -> tuple[list[int], bool, list[int], list[list[int]]]:
    """`_paragraphs` spelt out: lines by newline, each line's tokens, the 4 minima of its pairs, then the cap.

    A run of `line_blocks` or more lines with tokens, none a paragraph, of enough words together, is
    one (lines without tokens between them do not end it); its text runs from its first line to its
    last. Such a run that is no block, of `short_lines` tokens or more, is a short unit, kept as a block
    is (`WordPairsParams.short_lines`). The cap counts lines alone; blocks fill the places left, the longest first. Last, each
    block's non-empty lines' hashes."""
    p = method.params
    if not p.max_paragraphs or doc.num_tokens < p.paragraph_words:
        return [], False, [], []
    pairs = doc.all_shingles(2).tolist()
    common = [token in common_tokens() for token in doc.tokens]
    starts = doc.token_starts.tolist()
    found = []  # (first token, words, line text, a block or short unit) of each line of enough words, each block
    block: list[tuple[int, int, int]] = []  # the block so far: each line's first token, tokens and number
    lines = doc.text.split("\n")

    def end_block() -> None:
        words = sum(tokens for _, tokens, _ in block)
        text = "\n".join(lines[block[0][2]:block[-1][2] + 1]) if block else ""
        if p.line_blocks and len(block) >= p.line_blocks and words >= p.paragraph_words:
            found.append((block[0][0], words, text, True))
        elif p.short_lines and block and words >= max(p.short_lines, 2):
            found.append((block[0][0], words, text, True))
        block.clear()

    offset = 0
    for number, text in enumerate(lines):
        tokens = [t for t, s in enumerate(starts) if offset <= s < offset + len(text)]
        if len(tokens) >= p.paragraph_words:
            end_block()
            found.append((tokens[0], len(tokens), text, False))
        elif tokens:
            block.append((tokens[0], len(tokens), number))
        offset += len(text) + 1
    end_block()
    blocks = [i for i, (_, _, _, unit) in enumerate(found) if unit]
    lines_kept = [i for i in range(len(found)) if i not in blocks]
    capped = len(lines_kept) > p.max_paragraphs
    if capped:  # the longest (ties: the earlier) and the last TAIL, in text order; no block
        tail = min(TAIL, p.max_paragraphs)
        head = sorted(lines_kept[:len(lines_kept) - tail], key=lambda i: (-found[i][1], i))[: p.max_paragraphs - tail]
        found = [found[i] for i in sorted(head) + lines_kept[len(lines_kept) - tail:]]
    else:  # every line, and the longest blocks (ties: the earlier) in the places left
        room = p.max_paragraphs - len(lines_kept)
        taken = sorted(blocks, key=lambda i: (-found[i][1], i))[:room]
        found = [found[i] for i in sorted(lines_kept + taken)]
    sketch = []
    for first, words, _, _ in found:
        packed = min(words, MAX_PARAGRAPH_WORDS) << (4 * PARAGRAPH_VALUE_BITS)
        own = range(first, first + words - 1)
        kept = [pairs[i] for i in own if not (common[i] and common[i + 1])] or [pairs[i] for i in own]
        for k, (a, b) in enumerate(zip(method._pa.tolist(), method._pb.tolist(), strict=True)):
            lowest = min(((a * x + b) & _MASK64) >> 40 for x in kept)
            packed |= (lowest & ((1 << PARAGRAPH_VALUE_BITS) - 1)) << (k * PARAGRAPH_VALUE_BITS)
        sketch.append(packed)
    hashes = [xxhash.xxh3_64_intdigest(text.encode("utf-8", "surrogatepass")) for _, _, text, _ in found]
    blocks = [[xxhash.xxh3_64_intdigest(line.encode("utf-8", "surrogatepass")) for line in text.split("\n") if line]
              for _, _, text, _ in found if "\n" in text]
    return sketch, capped, hashes, blocks


def awkward_text(rng: random.Random) -> str:
    """Lines of 0 to 40 words (empty, one-word, blank-only), leading and trailing newlines, non-ASCII words."""
    lines = []
    for _ in range(rng.randrange(0, 30)):
        words = rng.choice([0, 1, 2, 3, 11, 12, 13, rng.randrange(4, 40), rng.randrange(120, 140)])
        vocabulary = _WORDS[-5:] if rng.random() < 0.1 else _WORDS  # some lines of common words only
        line = " ".join(rng.choice(vocabulary) for _ in range(words))
        lines.append(rng.choice(["", " ", "  ", "\t"]) + line + rng.choice(["", " ", ". "]))
    return rng.choice(["", "\n", "\n\n "]) + "\n".join(lines) + rng.choice(["", "\n", "\n\n"])


@pytest.mark.parametrize("params", [WordPairsParams(), WordPairsParams(max_paragraphs=16), WordPairsParams(max_paragraphs=1),
                                    WordPairsParams(max_paragraphs=2), WordPairsParams(max_paragraphs=3),
                                    WordPairsParams(paragraph_words=2, max_paragraphs=5),
                                    WordPairsParams(line_blocks=0), WordPairsParams(line_blocks=3, max_paragraphs=3),
                                    WordPairsParams(short_lines=0), WordPairsParams(short_lines=5, max_paragraphs=4)])
def test_the_sketch_is_the_reference_on_awkward_lines(params: WordPairsParams) -> None:
    method = WordPairsMethod(params)
    rng = random.Random(7)
    capped = kept = blocks = 0
    for _ in range(150):
        doc = Document.from_text(awkward_text(rng))
        sketch, was_capped, lines, _, block_lines = method._paragraphs(doc)
        expected = reference(method, doc)
        assert (sketch.tolist(), was_capped, lines.tolist(), [b.tolist() for _, b in block_lines]) == expected, \
            repr(doc.text)
        capped += was_capped
        kept += len(sketch)
        blocks += len(block_lines)
    assert kept and (capped or params.max_paragraphs > 30)  # the cases the kernel branches on were met (30 lines at most)
    assert blocks or not params.line_blocks or params.paragraph_words < 12  # (lines of 2 words are paragraphs)


def _sketched_words(text: str, params: WordPairsParams | None = None) -> list[int]:
    signature = WordPairsMethod(params).signature(Document.from_text(text))
    assert signature is not None
    return paragraph_words(signature.paragraphs).tolist()


def test_a_paragraphs_words_are_its_word_equivalents():
    """Its tokens where its words are short (English), its letters over 6, weighted by script, where
    they are long: the same UDHR paragraph is 27 English tokens, 16 Korean (Hangul, x2.5), 12
    Malayalam; Hebrew x1.5, Arabic x1.4, Ethiopic x2. Under `paragraph_length="tokens"`: its tokens."""
    english = ("everyone has the right to the protection of the moral and material interests resulting from "
               "any scientific, literary or artistic production of which he is the author.")
    korean = ("모든 사람은 자신이 창작한 과학적, 문학적 또는 예술적 산물로부터 발생하는 정신적, 물질적 이익을 "
              "보호받을 권리를 가진다.")
    malayalam = ("ഈ പ്രഖ്യാപനത്തില് പ്രതിപാദിച്ചിട്ടുള്ള അധികാരസ്വാതന്ത്ര്യങ്ങളെ കൈവരുത്തക്ക രീതിയിലുള്ള "
                 "സാമുദായികവും അന്തര്രാഷ്ട്രീയവുമായ ഒരു ജീവിതത്തോതിന്ന് എല്ലാവരും അര്ഹരാണ്.")
    assert _sketched_words(english) == [27]
    korean_letters = sum(len(token) for token in Document.from_text(korean).tokens)
    assert _sketched_words(korean) == [korean_letters * 25 // 60] == [20]
    malayalam_letters = sum(len(token) for token in Document.from_text(malayalam).tokens)
    assert _sketched_words(malayalam) == [malayalam_letters // 6] == [24]
    assert _sketched_words(" ".join(["אבגדה"] * 10)) == [max(10, 50 * 15 // 60)]
    assert _sketched_words(" ".join(["ابتثجح"] * 10)) == [max(10, 60 * 14 // 60)]
    assert _sketched_words(" ".join(["ሰላምሰላምሰላም"] * 10)) == [90 * 20 // 60]
    tokens = WordPairsParams(paragraph_length="tokens")
    assert [_sketched_words(text, tokens) for text in (english, korean, malayalam)] == [[27], [16], [12]]
    # a line of fewer than 12 tokens is a paragraph of the sketch once it counts 12 words (alone, a short unit else)
    six = " ".join(malayalam.split()[:6])
    assert len(_sketched_words(six)) == 1 and _sketched_words(six)[0] >= 12
    assert not _sketched_words(six, WordPairsParams(paragraph_length="tokens", short_lines=0))
    assert _sketched_words(six, tokens) == [6]
    with pytest.raises(ValueError, match="paragraph_length is one of letters, tokens"):
        WordPairsParams(paragraph_length="bytes")
