"""What the engine may assume of index keys: a method that says its keys find every match
(`keys_find_every_match`) has no match that shares none of its keys, and `max_index_keys` bounds
the keys of every signature (`signature_store.place_bounds` places a page's keys by it)."""

import random

import pytest
from conftest import make_article

from streamdedup.fingerprints.registry import METHODS, create_method
from streamdedup.fingerprints.simhash import SimHashMethod, SimHashParams
from streamdedup.tokens.document import Document


def _variants(seed: int) -> list[Document]:
    """An article and copies a crawl holds: words changed, a sentence dropped or added, paragraphs
    swapped, a teaser; near-duplicates of it by some methods and not by others."""
    rng = random.Random(seed)
    article = make_article(seed, paragraphs=rng.randint(2, 8), sentences=rng.randint(2, 6))
    words = " ".join(article).split()
    texts = ["\n".join(article), "  ".join(article).replace(".", ";")]  # the same words (exact)
    for changed in (1, 3, 8, 20):
        edited = list(words)
        for i in rng.sample(range(len(edited)), changed):
            edited[i] = rng.choice(words)
        texts.append(" ".join(edited))
    texts.append("\n".join(article[:-1]) + "\n" + article[-1].rsplit(". ", 1)[0] + ".")
    texts.append("\n".join(article) + "\nUpdated: a correction was added at noon.")
    texts.append("\n".join(article[1:] + article[:1]))
    texts.append("\n".join(article[: max(1, len(article) // 2)]))
    return [Document.from_text(text) for text in texts]


DOCS = [doc for seed in range(12) for doc in _variants(seed)]
COMPLETE = sorted(name for name, cls in METHODS.items() if cls.keys_find_every_match)


def test_the_methods_that_say_their_keys_find_every_match():
    assert COMPLETE == ["a12", "exact", "simhash"]  # not MinHash: LSH bands miss some pairs above their threshold


@pytest.mark.parametrize("name", COMPLETE)
def test_every_match_shares_an_index_key(name):
    method = create_method(name)
    signatures = [s for s in (method.signature(doc) for doc in DOCS) if s is not None]
    keys = [set(method.index_keys(s)) for s in signatures]
    matches = 0
    for i in range(len(signatures)):
        for j in range(i + 1, len(signatures)):
            if method.similarity(signatures[i], signatures[j]) is not None:
                matches += 1
                assert keys[i] & keys[j], (name, i, j)
    assert 12 <= matches < len(signatures) * (len(signatures) - 1) // 2


@pytest.mark.parametrize("params", [SimHashParams(), SimHashParams(max_distance=4, blocks=7),
                                    SimHashParams(max_distance=0, blocks=1)])
def test_simhash_fingerprints_within_its_distance_share_a_table(params):
    method, rng = SimHashMethod(params), random.Random(5)
    for _ in range(500):
        mine = rng.getrandbits(64)
        other = mine
        for bit in rng.sample(range(64), rng.randint(0, params.max_distance)):
            other ^= 1 << bit
        assert method.similarity(mine, other) is not None
        assert set(method.index_keys(mine)) & set(method.index_keys(other))


@pytest.mark.parametrize("name", sorted(METHODS))
def test_max_index_keys_bounds_every_signatures_keys(name):
    try:
        method = create_method(name)
    except (ValueError, OSError) as err:  # a method that needs a lexicon given to it
        pytest.skip(f"{name}: {err}")
    bound = method.max_index_keys
    if bound is None:
        return
    counts = [len(method.index_keys(s)) for s in (method.signature(doc) for doc in DOCS) if s is not None]
    assert counts and max(counts) <= bound
