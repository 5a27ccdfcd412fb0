"""The most frequent words of any language, whose pairs say nothing of which paragraph they are in.

Two unrelated paragraphs of one language share pairs of its commonest words ("of the", "in der",
"и в"), and through them a MinHash value of the one can be the other's, which the paragraph
sketch (`fingerprints/wordpairs.py`) would take for a counterpart. It skips such pairs, so a
paragraph's values come from the pairs that say what it is about (a pair with one common word,
"the minister", stays). On the story dev set and its seeds 1 and 2, 2 / 1 / 1 content-loss edges
without it, 1 / 1 / 1 with it (docs/notes/results.md).

The list is language-agnostic on purpose: a page's declared or guessed language varies between
copies of one article, and a sketch must be the same for both. It is the union of the 30 most
frequent words of each of wordfreq's 42 languages and Tibetan's particles (`stop_words`), numbers
left out: `data/common_words-1.txt`, made by `python -m streamdedup.stats.common_words` (the
version in its name changes with its content: the sketch's layout names it).
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources

import numpy as np

from streamdedup.hash_arrays import HashSet
from streamdedup.tokens.scan import scan

COMMON_WORDS_FILE = "common_words-1.txt"
TOP_WORDS = 30  # of each language


@lru_cache(maxsize=1)
def common_word_hashes() -> np.ndarray:
    """The token hashes of the common words (sorted uint64), as the tokeniser hashes them."""
    text = resources.files("streamdedup").joinpath("data", COMMON_WORDS_FILE).read_text(encoding="utf-8")
    return np.unique(scan(text).hashes)


@lru_cache(maxsize=1)
def _common_word_set() -> HashSet:
    """`common_word_hashes` as a table asked of every token of every page."""
    return HashSet(common_word_hashes())


def common_word_table() -> tuple[np.ndarray, int, int, bool]:
    """The common words' table (`HashSet.table`), for a compiled loop that asks `hash_arrays.in_table` itself."""
    return _common_word_set().table


def make_list() -> list[str]:
    """The list from wordfreq (a dependency): its languages' most frequent words and Tibetan's particles."""
    import wordfreq

    from streamdedup.stats.stopwords import TIBETAN_PARTICLES

    words = set(TIBETAN_PARTICLES)
    for lang in sorted(wordfreq.available_languages()):
        words.update(wordfreq.top_n_list(lang, TOP_WORDS))
    return sorted(word for word in words if word.strip() and not word.isdigit())


if __name__ == "__main__":
    print("\n".join(make_list()))
