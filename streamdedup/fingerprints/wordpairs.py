"""How much of a page is new to a match: a MinHash of its word pairs, for `new_share`.

A page judged a near-duplicate of an earlier one is only safe to drop if its own text is (nearly)
all in that page. The detectors' 5-word shingles cannot say so: one changed word removes five of
them, so three scattered edits of a 100-word brief look like 15 % new text, as much as a replaced
paragraph. Word pairs (2-shingles) move half as much under scattered edits (a changed word makes
two new pairs) and as much as the words themselves under a new paragraph (nearly every pair of new
text is new), so the share of a page's pairs absent from its match tells light edits (an "Updated"
line, a correction, a few words) from new text (a replaced fifth of an article).

The share is estimated from a b-bit MinHash of the pairs (Li & König 2010): 256 permutations, of
each minimum only its lowest 2 bits, packed four to a byte: 64 bytes and the set size (68 bytes a
page in the store). With m the share of equal 2-bit values, the Jaccard estimate is
J = (m - 1/4) / (3/4); then |A∩B| = J(|A|+|B|)/(1+J), and the page's new share is 1 - |A∩B|/|A|.
For the same bytes, 256 values of 2 bits estimate J with ~0.4x the variance of 64 values of 8 bits
(measured error of the new share, paragraphs of another article replacing a quarter: 0.033 sd
against 0.050). Its own test matches nothing: it is a measure the engine asks of the candidates
found (`relations.judged`).

**Paragraphs.** A share cannot tell a new paragraph of 5 % of a long article from scattered edits:
the estimate's error (~0.03 of the page) is as large. So the signature also keeps a sketch of the
page's paragraphs (lines of at least `paragraph_words` words), in text order: of each, 4 MinHash
values of its own word pairs (10 bits each), its length in words (7 bits; word-equivalents, so that
a paragraph of Korean or Malayalam counts as long as its text: `paragraph_rows.letter_units`) and whether its site
showed the line before (`mark_shown`), 6 bytes a paragraph, at most `max_paragraphs` (127) of them
(past that, the longest: an edit moves a paragraph's length by a word or two, so near-identical
pages keep alike ones; and the last two, where revisions add a paragraph). Pairs of two of the
commonest words of any language ("of the", "in der") are left out of a paragraph's values: unrelated
paragraphs share them (`stats/common_words.py`).
`new_text.new_paragraphs` tells which paragraphs of a page are absent from the other's (a lightly
edited paragraph keeps most of its values, one of new text none but by chance), and
`NewTextTolerance.min_paragraph_words` judges them.

**Blocks of short lines.** A list or a table's rows added to an article (lines under 12 words each,
42-70 words in all) is no paragraph, and only the share saw it, within its error. So a run of
`line_blocks` (2) or more consecutive lines none of which is a paragraph, with `paragraph_words`
together, is sketched as one paragraph, a block: its values of all its tokens' pairs, its words
their sum; its numbers byte is a count of 0 with a hash of its numbers (`paragraph_rows.block_numbers`:
dates and times left out), which is how a stored sketch tells its blocks; its line hash is the whole
block's, its lines' hashes kept beside (`block_lines`) for `mark_shown`. Blocks are judged apart,
only where one stands inside the copy with nothing of the other's in its place
(`line_places.inserted_block`), and for their numbers (`new_text.block_numbers_changed`): menus, forms and
metadata at a copy's edges, a stamp beside the title and a light edit of a list stay as before.

**Short units.** A line under 12 words between two paragraphs (a heading, a list item) that is no
block was in no row, so an article crawled after a light edit that dropped one was the edit's
duplicate (multilingual dev's last 2 content-loss edges). A run of such lines between two
paragraphs (or before the first, after the last: a line moved there from inside is found) that
makes no block, of `short_lines` (2) tokens or more, is sketched as a block is, a
short unit (its words under `paragraph_words`, which tells it from a block; its numbers byte says
whether it states a number: `paragraph_rows.SHORT_NUMBERED` or `SHORT_PLAIN`). The verdict counts one only inside a
copy where the other has nothing absent between its neighbours' counterparts
(`line_places.inserted_short`); every other rule reads it as a block.

**Paragraph keys.** A page contained in a larger one (a part after its view-all page, a teaser, a
print copy of half the story) shares few of its 5-shingles: at a Jaccard of 0.35 MinHash's bands
find the pair 38 % of the time. So the method files each page under its `paragraph_keys` (16)
longest paragraphs of at least `key_words` words, each as its 4 values (40 bits, which the index
takes as the key's name), and looks it up under the same keys. "Longest" is a total order of the
paragraphs' content alone (length in words, then the values): a paragraph among a page's 16
longest that a smaller page holds verbatim is among the smaller page's 16 longest too, unless it
adds 16 longer paragraphs of its own, so the keys meet whenever the smaller page holds one of
those 16, in either order. A page of 16 such paragraphs or fewer is filed under all of them; past
that, a part holding a share f of the paragraphs misses all 16 (1 - f)^16 of the time: a quarter
1 %, a third 0.15 % (8 keys: 10 % and 4 %; issue 57: a `?page=2` of a view-all page's shorter
paragraphs, a man page a follow-up appended after its own longer text, were no candidate). The
keys a page has are bounded (16), and so its postings and lookups. The candidates found are judged
as any other: the `paragraphs` match (`relations._held_matches`) is what proves the page held.

**Numbers.** A correction of one fact (a number in one sentence: "5 injured" -> "50 injured") keeps
a paragraph's values and adds two word pairs: word pairs read it as a typo fixed. So each sketched
paragraph also keeps a byte of the numbers it states (`paragraph_rows.numbers_bytes`: how many of its tokens start
with a digit, 3 bits, and a 5-bit hash of them in text order), stored after the paragraph rows
(one byte a paragraph; a record without them, from a store of 0.16.0 or before, reads none).
`new_text.numbers_changed` tells a paragraph whose counterpart states as many numbers, other ones.

**Article block.** Whether each kept paragraph sits in its page's article block (`inside`:
`clean.article_block.inside_marks`) is a bit a paragraph after the numbers, written where one is
set (a record without them, of 0.17.0 or before, or of a page with none inside, reads none: the
old rule). `line_places.counted_new` counts a new line at a copy's edge on another site at any length
where it is inside. The global topology's fingerprint step finds them for every page
(`own_text.placed_now`; its index step judges from the encoded signature, 2 bytes a page of 9-16
paragraphs); file mode judges in memory and finds them only where they decide (`article`).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from itertools import accumulate
from typing import ClassVar, NamedTuple, cast

import numpy as np
import xxhash

from streamdedup.fingerprints.base import FingerprintMethod, Params
from streamdedup.fingerprints.kernels import minhash_min
from streamdedup.fingerprints.paragraph_rows import (
    BLOCKS_BELOW,
    LENGTH_SHIFT,
    LETTERS_PER_WORD,
    MAX_PARAGRAPH_WORDS,
    NUMBERS_COUNT_SHIFT,
    NUMBERS_MIX,
    NUMBERS_MOST,
    PARAGRAPH_BYTES,
    PARAGRAPH_VALUE_BITS,
    PARAGRAPH_VALUES,
    SHORT_NUMBERED,
    SHORT_PLAIN,
    SHOWN_BIT,
    WEIGHT_STARTS,
    WEIGHT_TENTHS,
    WEIGHTS,
    block_numbers,
    blocks_of,
    decimal_digits,
    number_hashes,
)
from streamdedup.fingerprints.wordpair_kernels import (
    pack_two_bits,
    paragraph_keys,
    paragraph_keys_many,
    paragraph_sketch,
    two_bit_new_shares,
)
from streamdedup.hash_arrays import in_sorted
from streamdedup.stats.common_words import COMMON_WORDS_FILE, common_word_table
from streamdedup.tokens.document import Document

_VALUE_BITS = 2  # bits kept of each minimum
_PER_BYTE = 8 // _VALUE_BITS
TAIL = 2  # a capped sketch keeps its page's last paragraphs besides its longest
PARAGRAPH_LENGTHS = ("letters", "tokens")  # `WordPairsParams.paragraph_length`
_NO_WEIGHTS = np.zeros(0, dtype=np.int64)  # `paragraph_sketch`'s script weights where tokens alone count


@dataclass(frozen=True)
class WordPairsParams(Params):
    """Word pairs' parameters: permutations, pair size, seed, the paragraph sketch's and the paragraph keys'."""

    num_perm: int = 256  # a multiple of 4: four 2-bit values a byte
    shingle_size: int = 2
    seed: int = 2
    paragraph_words: int = 12  # a line of fewer words is no paragraph of the sketch
    max_paragraphs: int = 127  # 0: no paragraph sketch
    # the longest paragraphs a page is filed and looked up under (0: none; module docstring), of at least
    # `key_words` words (shorter lines: menus, notes, boilerplate); 8 up to 0.27.0, whose stores
    # are refused naming `wordpairs.paragraph_keys=8`. A description without them (a store of 0.8 or
    # before) means none (`ABSENT_MEANS`)
    paragraph_keys: int = 16
    key_words: int = 20
    # how a paragraph's words are counted: "letters", its word-equivalents (`letter_units`), or
    # "tokens", its tokens alone, as a store of 0.14.0 or before counted them (`ABSENT_MEANS`)
    paragraph_length: str = "letters"
    # at least this many consecutive lines, each too short to be a paragraph, with `paragraph_words`
    # together (a list, a table's rows) are one paragraph of the sketch, a block, which the verdict
    # judges apart (`line_places.inserted_block`). 0: none, as a store of 0.22.0 or before (`ABSENT_MEANS`)
    line_blocks: int = 2
    # a run of lines too short to be a paragraph that is no block (a lone heading or list item, under
    # `paragraph_words` words) of at least this many tokens is one unit of the sketch, a short unit, kept
    # as a block is (`line_places.inserted_short` judges it). 0: none, as a store of 0.27.0 or before
    # (`ABSENT_MEANS`)
    short_lines: int = 2

    # what a parameter added later means where a stored description does not name it
    ABSENT_MEANS: ClassVar[dict[str, str]] = {"paragraph_keys": "0", "key_words": "20", "paragraph_length": "tokens",
                                              "line_blocks": "0", "short_lines": "0"}

    def __post_init__(self) -> None:
        if self.num_perm < 4 or self.num_perm % _PER_BYTE:
            raise ValueError(f"num_perm is a multiple of {_PER_BYTE} (values packed {_PER_BYTE} a byte), "
                             f"got {self.num_perm}")
        if self.shingle_size < 1:
            raise ValueError(f"shingle_size is a number of words, got {self.shingle_size}")
        if self.paragraph_keys < 0 or self.key_words < 2:
            raise ValueError(f"paragraph_keys is a number of paragraphs (0: none) and key_words at least 2, got "
                             f"{self.paragraph_keys} and {self.key_words}")
        if self.paragraph_length not in PARAGRAPH_LENGTHS:
            raise ValueError(f"paragraph_length is one of {', '.join(PARAGRAPH_LENGTHS)}, "
                             f"got {self.paragraph_length!r}")
        if self.line_blocks < 0 or self.line_blocks == 1:
            raise ValueError(f"line_blocks is a number of lines, 2 or more (0: none), got {self.line_blocks}")
        if self.short_lines < 0 or self.short_lines == 1:
            raise ValueError(f"short_lines is a number of tokens, 2 or more (0: none), got {self.short_lines}")
        if not 0 <= self.max_paragraphs <= 127 or self.paragraph_words < 2:
            raise ValueError(f"max_paragraphs is 0 to 127 and paragraph_words at least 2, got "
                             f"{self.max_paragraphs} and {self.paragraph_words}")


class OnePageLines(NamedTuple):
    """A page's lines that one earlier page of its site showed, and which page (`fingerprints.one_page_lines`)."""

    document: int  # that page's document tag (`clean.page_urls.document_tag`)
    lines: ShownLines  # their word pairs (made when a match first asks)
    paragraphs: np.ndarray  # which kept paragraphs of the sketch are among them (bool, one a paragraph)


@dataclass(frozen=True, slots=True)
class WordPairsSignature:
    """A page's word pairs: a 2-bit MinHash of its pairs, their count, its paragraph sketch and what goes with it."""

    packed: np.ndarray  # the low 2 bits of each minimum, four a byte: uint8[num_perm / 4]
    set_size: int  # distinct word pairs
    # the paragraph sketch, in text order: one uint64 a paragraph (4 x 10-bit values, its length, shown before)
    paragraphs: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.uint64))
    capped: bool = False  # more paragraphs than max_paragraphs: the longest kept
    # each kept paragraph's line hash (`clean.template.line_hashes`), for `mark_shown`; not encoded
    line_hashes: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.uint64))
    # the pairs of the page's lines its site showed on earlier pages (`with_shown_lines`); not encoded
    shown: ShownLines | None = None
    # each kept paragraph's numbers (`paragraph_rows.numbers_bytes`; empty: not known, a record of 0.16.0 or before)
    numbers: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.uint8))
    # of each kept paragraph: whether it sits in its page's article block (`clean.article_block.inside_marks`;
    # empty: not known, a record of 0.17.0 or before, or none inside); the page's own side reads it
    # (`line_places.counted_new`)
    inside: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.bool_))
    # the marks found when first called (`clean.article_block.LazyInside`: file mode's way, where they
    # decide); None: `inside` says all that is known; not encoded
    article: Callable[[], np.ndarray] | None = None
    # of each kept paragraph that is a block of lines (`WordPairsParams.line_blocks`): its place among the
    # kept ones and its lines' hashes, which `mark_shown` asks (its `line_hashes` entry is the whole
    # block's, no line's); not encoded
    block_lines: tuple[tuple[int, np.ndarray], ...] = ()
    # the page's lines that one earlier page of its site showed, by that page (`one_page_lines`); not encoded
    one_page: tuple[OnePageLines, ...] = ()
    # the pairs of those of them another story's page showed, as the engine found (`one_page_lines`), which
    # it takes out of the page's new text as it does `shown` (`new_shares.without_shown`); not encoded
    other_stories: tuple[ShownLines, ...] = ()


class ShownLines:
    """The word pairs of a page's lines its site showed before, made when first asked.

    Only a page with a matched candidate asks (`new_shares.shown_pairs_lacked`), and the global topology's
    fingerprint step, which sends them to the index partitions; on pages of one template most have
    such lines and no match (~100 µs a page saved there)."""

    __slots__ = ("_lang", "_made", "_method", "_pairs", "_text")

    def __init__(self, text: str = "", lang: str | None = None, method: WordPairsMethod | None = None,
                 pairs: WordPairsSignature | None = None) -> None:
        self._text, self._lang, self._method = text, lang, method
        self._pairs, self._made = pairs, method is None

    @property
    def pairs(self) -> WordPairsSignature | None:
        """Their signature (None: no word pair)."""
        if not self._made:
            self._made = True
            method = cast(WordPairsMethod, self._method)
            self._pairs = method.pairs_signature(Document.from_text(self._text, self._lang))
        return self._pairs



def _mark_bytes(count: int) -> int:
    """The bytes of `count` paragraphs' article-block marks, a bit each."""
    return (count + 7) // 8


def mark_shown(signature: WordPairsSignature, shown: np.ndarray) -> WordPairsSignature:
    """The signature with the paragraphs whose line hash is in `shown` (sorted uint64) marked shown before.

    A line the page's site showed on earlier pages (a newsletter blurb, an author's note, a
    cookie notice the template model does not remove yet; `own_text` asks for two pages) is not
    the page's new text, though its match, on another site, lacks it. Only the page's own side
    reads the mark. A block of lines (`WordPairsParams.line_blocks`) is marked where each of its lines
    was shown: a heading the site shows over a new list does not make the list the site's."""
    lines = signature.line_hashes
    if not len(lines) or not len(shown):
        return signature
    was_shown = in_sorted(shown, lines)
    for place, block in signature.block_lines:
        was_shown[place] = bool(in_sorted(shown, block).all())
    return replace(signature, paragraphs=np.where(was_shown, signature.paragraphs | SHOWN_BIT, signature.paragraphs))


def lines_hashed(signature: object) -> bool:
    """Whether each of a signature's kept paragraphs has its line's hash (`line_hashes`: one a paragraph, in order).

    Then its article-block marks can be found (`clean.article_block.inside_marks`); not without
    paragraphs, nor where the hashes are not the paragraphs' lines."""
    hashes = getattr(signature, "line_hashes", ())
    return 0 < len(hashes) == len(getattr(signature, "paragraphs", ()))


def with_article(signature: WordPairsSignature, article: Callable[[], np.ndarray]) -> WordPairsSignature:
    """The signature with its paragraphs' article-block marks found when first asked (`article()`), not encoded."""
    return replace(signature, article=article)


def with_inside(signature: WordPairsSignature, inside: np.ndarray) -> WordPairsSignature:
    """The signature with whether each kept paragraph sits in its page's article block (bool, one a paragraph).

    Encoded (`WordPairsMethod.encode`); a lazy `article` is dropped: these are its marks."""
    if len(inside) != len(signature.paragraphs) or not inside.any():
        inside = np.zeros(0, dtype=np.bool_)
    return replace(signature, inside=inside, article=None)


def with_shown_lines(signature: WordPairsSignature, method: WordPairsMethod, text: str, line_hashes: np.ndarray,
                     shown: np.ndarray, lang: str | None) -> WordPairsSignature:
    """The signature with a MinHash of the pairs of the page's lines its site showed before (`shown`).

    `text`'s non-empty lines (hashes `line_hashes`, `clean.template.line_hashes`) whose hash is
    in `shown` (sorted uint64), of any length: a menu, a newsletter blurb, a disclaimer its site's
    earlier pages showed, which the template model does not remove yet. The engine takes those of
    them its match lacks out of the page's new text (`new_shares.without_shown`), as `mark_shown`
    takes such paragraphs out of its new paragraphs. Unchanged when none or every line was shown."""
    if not len(line_hashes) or not len(shown):
        return signature
    was_shown = in_sorted(shown, line_hashes)
    if not was_shown.any() or was_shown.all():
        return signature
    lines = [line for line in text.split("\n") if line]
    if len(lines) != len(line_hashes):  # not the lines hashed: nothing to say
        return signature
    shown_text = "\n".join(line for line, seen in zip(lines, was_shown.tolist(), strict=True) if seen)
    return replace(signature, shown=ShownLines(shown_text, lang, method))


class WordPairsMethod(FingerprintMethod[WordPairsSignature, WordPairsParams]):
    """A MinHash of word pairs: `new_shares` of the candidates found, and keys of the longest paragraphs."""

    name = "wordpairs"
    params_type = WordPairsParams
    can_match = False

    def __init__(self, params: WordPairsParams | None = None) -> None:
        super().__init__(params)
        p = self.params
        rng = np.random.default_rng(p.seed)
        self._a = rng.integers(1, 2**63, size=p.num_perm, dtype=np.uint64) | np.uint64(1)
        self._b = rng.integers(0, 2**63, size=p.num_perm, dtype=np.uint64)
        self._bytes = p.num_perm // _PER_BYTE
        self._record = np.dtype([("size", "<u4"), ("packed", np.uint8, (self._bytes,))])
        self._collision = 2.0 ** -_VALUE_BITS  # P[two different minima keep equal low bits]
        self._pa = rng.integers(1, 2**63, size=PARAGRAPH_VALUES, dtype=np.uint64) | np.uint64(1)
        self._pb = rng.integers(0, 2**63, size=PARAGRAPH_VALUES, dtype=np.uint64)
        # the numbers' hash multiplier: with the public default seed anyone can pick a number whose
        # paragraph byte equals the true one's (1 in 32: "135" for "120"), and a copy stating it,
        # crawled first, had the article as its duplicate; a private seed's is not known outside
        drawn = np.uint64(rng.integers(1, 2**63, dtype=np.uint64)) | np.uint64(1)
        self._mix = NUMBERS_MIX if p.seed == WordPairsParams.seed else drawn

    def describe(self) -> str:
        """The description with the paragraph sketch's layout and the common words it skips (another: refused)."""
        # the layout of the paragraph sketch and the words it skips: a store of another refuses
        return f"{super().describe()}[paragraphs {PARAGRAPH_VALUES}x{PARAGRAPH_VALUE_BITS} {COMMON_WORDS_FILE}]"

    def signature(self, doc: Document) -> WordPairsSignature | None:
        """The page's packed pair minima, pair count and paragraph sketch (None: no word pair)."""
        pairs = self._packed_pairs(doc)
        if pairs is None:
            return None
        paragraphs, capped, lines, numbers, blocks = self._paragraphs(doc)
        return WordPairsSignature(pairs[0], pairs[1], paragraphs, capped, lines, numbers=numbers, block_lines=blocks)

    def pairs_signature(self, doc: Document) -> WordPairsSignature | None:
        """The MinHash of the text's word pairs alone, without the paragraph sketch (None: no pair)."""
        pairs = self._packed_pairs(doc)
        return None if pairs is None else WordPairsSignature(*pairs)

    def _packed_pairs(self, doc: Document) -> tuple[np.ndarray, int] | None:
        """The packed 2-bit minima of the text's word pairs and how many distinct pairs (None: no pair).

        Not a signature: `signature` makes its own, with the paragraphs (a frozen dataclass with two
        default arrays costs ~1 µs to make). Over the distinct pairs in no order (`Document.shingle_set`):
        the same minima and count, no sort."""
        shingles = doc.shingle_set(self.params.shingle_size)
        if not len(shingles):
            return None
        minima = minhash_min(np.ascontiguousarray(shingles, dtype=np.uint64), self._a, self._b)
        return pack_two_bits(minima), len(shingles)

    def _paragraphs(self, doc: Document) -> tuple[np.ndarray, bool, np.ndarray, np.ndarray,
                                                  tuple[tuple[int, np.ndarray], ...]]:
        """The sketch of lines of `paragraph_words` words and of blocks, whether capped, their hashes and numbers.

        And each block's place among the kept paragraphs and its lines' hashes (`block_lines`)."""
        p = self.params
        empty = np.zeros(0, dtype=np.uint64)
        no_numbers = np.zeros(0, dtype=np.uint8)
        # a paragraph has two tokens at least; one of fewer than `paragraph_words` may count as many
        if not p.max_paragraphs or doc.num_tokens < 2:
            return empty, False, empty, no_numbers, ()
        # the kept lines' sketches, their numbers and which are short units in one compiled call over the text
        # between tokens, from the pair hashes `doc.all_shingles(2)` (the MinHash's, cached), computed for the
        # kept lines only; pairs of two common words are skipped: unrelated paragraphs share them
        # (`stats/common_words.py`)
        points = doc.code_points
        weighed = p.paragraph_length == "letters" and not doc.text.isascii()  # ASCII: every token Latin, weight 0
        out, spans, capped, numbers, short = paragraph_sketch(
            points.view(np.uint8), points.itemsize, doc.token_starts, doc.token_ends, doc.all_shingles(2),
            doc.token_hashes, common_word_table(), WEIGHT_STARTS, WEIGHTS if weighed else _NO_WEIGHTS,
            LETTERS_PER_WORD * WEIGHT_TENTHS, self._pa, self._pb, p.paragraph_words, p.max_paragraphs, TAIL,
            PARAGRAPH_VALUE_BITS, MAX_PARAGRAPH_WORDS, p.line_blocks, p.short_lines, number_hashes(doc),
            decimal_digits(), NUMBERS_COUNT_SHIFT, NUMBERS_MOST, self._mix, SHORT_NUMBERED, SHORT_PLAIN)
        if not len(out):
            return empty, False, empty, no_numbers, ()
        text = doc.text
        if text.isascii():  # a character a byte: the lines' bytes are slices of the text's, encoded once
            data = text.encode("ascii")
            parts = [data[start:end] for start, end in spans.tolist()]
        else:
            parts = [text[start:end].encode("utf-8", "surrogatepass") for start, end in spans.tolist()]
        lines = np.fromiter(map(xxhash.xxh3_64_intdigest, parts), dtype=np.uint64, count=len(parts))
        # a block's lines, hashed as the site's lines are (`clean.template.line_hashes`: its non-empty ones)
        blocks = tuple((place, np.fromiter((xxhash.xxh3_64_intdigest(line) for line in part.split(b"\n") if line),
                                           dtype=np.uint64))
                       for place, part in enumerate(parts) if b"\n" in part)
        if blocks:  # a count of 0 with a hash: which are blocks, for the verdict (`paragraph_rows.blocks_of`)
            places = np.array([place for place, _ in blocks if not short[place]], dtype=np.int64)
            numbers[places] = block_numbers(doc, spans[places], self._mix)
        return out, bool(capped), lines, numbers, blocks

    def index_keys(self, signature: WordPairsSignature) -> list[bytes]:
        """The page's `paragraph_keys` longest paragraphs of `key_words` words or more: each one's 4 values.

        Each key is the 40 bits of values, little-endian in 8 bytes: random already, the index
        names it by its first 5 (`store.layout.index_names`), those bits.

        Longest by length in words (a sketch reads 127 for more), then by the values: an order of
        the paragraphs' content alone, not of their place (module docstring)."""
        p = self.params
        if not p.paragraph_keys or not len(signature.paragraphs):
            return []
        rows = signature.paragraphs
        blocks = blocks_of(signature.numbers, len(rows))
        if blocks.any():  # a block of short lines files no key: menus and forms of a site's pages share them
            rows = rows[~blocks]
        found = paragraph_keys(rows, p.paragraph_keys, p.key_words, LENGTH_SHIFT)
        return [int(value).to_bytes(8, "little") for value in found.tolist()]

    def index_key_rows(self, encoded: Sequence[bytes]) -> tuple[np.ndarray, np.ndarray] | None:
        """The paragraph keys of many encoded signatures in one compiled pass."""
        p = self.params
        data = np.frombuffer(b"".join(encoded), dtype=np.uint8)
        ends = np.cumsum(np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded)))
        keys, counts = paragraph_keys_many(data, ends, self._record.itemsize, p.paragraph_keys, p.key_words,
                                           PARAGRAPH_BYTES, LENGTH_SHIFT, BLOCKS_BELOW)
        return keys.view(np.uint8).reshape(-1, 8), counts

    @property
    def max_index_keys(self) -> int:
        """The paragraph keys a page has at most."""
        return min(self.params.paragraph_keys, self.params.max_paragraphs)

    def similarity(self, signature: WordPairsSignature, other: WordPairsSignature) -> float | None:
        """None: word pairs match nothing alone; the engine asks their `new_shares` of candidates found."""
        return None

    def similarities(self, signature: WordPairsSignature, others: Sequence[bytes]) -> np.ndarray:
        """All NaN: word pairs match nothing alone (`similarity`)."""
        return np.full(len(others), np.nan)

    def new_shares(self, signature: WordPairsSignature,
                   others: Sequence[bytes]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The estimated shares of word pairs each page lacks of the other, for each signature in `others`.

        For each encoded signature in `others`: the estimated share of this page's pairs absent
        from it, the share of its pairs absent from this page (float64 in [0, 1]; NaN where not
        comparable: another num_perm), and its count of pairs."""
        count = len(others)
        if len(signature.packed) != self._bytes:  # another num_perm: none comparable
            return np.full(count, np.nan), np.full(count, np.nan), np.zeros(count)
        # the records as they are, paragraphs and all: the kernel reads each one's first bytes from
        # where the one before ends (slicing each candidate's bytes in Python cost as much as the
        # test), and tells those too short for them
        ends = np.fromiter(accumulate(map(len, others)), dtype=np.int64, count=count)
        return two_bit_new_shares(np.frombuffer(b"".join(others), dtype=np.uint8), ends, self._record.itemsize,
                                  signature.packed, signature.set_size, self.params.num_perm, self._collision)

    @property
    def record_width(self) -> int:
        """The bytes of an encoded signature before its paragraph sketch: its set size and packed values."""
        return int(self._record.itemsize)

    @property
    def collision(self) -> float:
        """The chance that two different minima keep equal low bits (`new_shares`)."""
        return self._collision

    def new_share_errors(self, shares: np.ndarray, of: np.ndarray, other: np.ndarray) -> np.ndarray:
        """The standard errors of `new_shares`' estimates: `shares` of `of` pairs absent from a page of `other`.

        The Jaccard J the shares imply; the binomial error of the share of equal values over
        `num_perm`, m = J + (1 - J) c (c: two different minima keep equal low bits); through J to the
        share, which moves with J as (|A| + |B|) / (|A| (1 + J)^2)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            common = (1.0 - shares) * of
            jaccard = np.clip(common / (of + other - common), 0.0, 1.0)
            equal = jaccard + (1.0 - jaccard) * self._collision
            error = np.sqrt(equal * (1.0 - equal) / self.params.num_perm) / (1.0 - self._collision)
            return error * (of + other) / (of * (1.0 + jaccard) ** 2)

    def encode(self, signature: WordPairsSignature) -> bytes:
        """Set size, packed values, then (if any) a paragraph count byte (high bit: capped), 6 bytes each, numbers.

        The numbers: each paragraph's byte of them (`numbers_bytes`), if known; then, after them
        and only after them, the paragraphs' article-block marks (`inside`), a bit each (little
        bit order), if any is set. Which of these a record holds is told by its length (`decode`)."""
        head = struct.pack("<I", signature.set_size) + signature.packed.tobytes()
        count = len(signature.paragraphs)
        if not count:
            return head
        rows = signature.paragraphs.astype("<u8").view(np.uint8).reshape(count, 8)[:, :PARAGRAPH_BYTES]
        numbers = signature.numbers.tobytes() if len(signature.numbers) == count else b""
        inside = (np.packbits(signature.inside, bitorder="little").tobytes()
                  if numbers and len(signature.inside) == count and signature.inside.any() else b"")
        return head + bytes([count | (0x80 if signature.capped else 0)]) + rows.tobytes() + numbers + inside

    def decode(self, data: bytes) -> WordPairsSignature:
        """The signature `encode` wrote: pairs, then paragraph rows, their numbers and marks where present."""
        (size,) = struct.unpack_from("<I", data)
        width = self._record.itemsize
        if len(data) <= width:
            return WordPairsSignature(np.frombuffer(data, dtype=np.uint8, offset=4), size)
        count, capped, paragraphs, numbers = self._paragraph_rows(data)
        numbers_at = width + 1 + count * PARAGRAPH_BYTES
        inside = (np.unpackbits(np.frombuffer(data, dtype=np.uint8, offset=numbers_at + count), count=count,
                                bitorder="little").astype(np.bool_)
                  if len(data) == numbers_at + count + _mark_bytes(count) else np.zeros(0, dtype=np.bool_))
        return WordPairsSignature(np.frombuffer(data, dtype=np.uint8, offset=4, count=width - 4), size,
                                  paragraphs, capped, numbers=numbers, inside=inside)

    def _paragraph_rows(self, data: bytes) -> tuple[int, bool, np.ndarray, np.ndarray]:
        """Of an encoded signature with a paragraph sketch: how many rows, whether capped, the rows, their numbers."""
        width = self._record.itemsize
        count, capped = data[width] & 0x7F, bool(data[width] & 0x80)
        rows = np.zeros((count, 8), dtype=np.uint8)
        rows[:, :PARAGRAPH_BYTES] = np.frombuffer(data, dtype=np.uint8, offset=width + 1,
                                                  count=count * PARAGRAPH_BYTES).reshape(count, PARAGRAPH_BYTES)
        numbers_at = width + 1 + count * PARAGRAPH_BYTES
        # after the rows: nothing (0.16.0 and before), the numbers (0.17.0), or them and the marks
        numbers = (np.frombuffer(data, dtype=np.uint8, offset=numbers_at, count=count).copy()
                   if len(data) in (numbers_at + count, numbers_at + count + _mark_bytes(count))
                   else np.zeros(0, dtype=np.uint8))
        return count, capped, rows.view("<u8").ravel().astype(np.uint64), numbers

    def paragraphs_of(self, data: bytes) -> tuple[np.ndarray, bool, np.ndarray]:
        """An encoded signature's paragraph sketch, whether it was capped, its paragraphs' numbers (empty: none).

        As `decode` reads them, without the rest of the signature (the verdict asks it of every matched candidate)."""
        struct.unpack_from("<I", data)  # (a record too short for its size raises as `decode` does)
        if len(data) <= self._record.itemsize:
            return np.zeros(0, dtype=np.uint64), False, np.zeros(0, dtype=np.uint8)
        _, capped, paragraphs, numbers = self._paragraph_rows(data)
        return paragraphs, capped, numbers

    def laid_out_as_mine(self, data: bytes) -> bool:
        """Whether the encoded signature's parts have the sizes this method's parameters give them."""
        width = self._record.itemsize
        # the paragraphs' numbers after their rows and their marks after those, or (0.16.0 and before) neither
        if len(data) <= width:
            return len(data) == width
        count = data[width] & 0x7F
        return len(data) - width - 1 in (count * PARAGRAPH_BYTES, count * (PARAGRAPH_BYTES + 1),
                                         count * (PARAGRAPH_BYTES + 1) + _mark_bytes(count))
