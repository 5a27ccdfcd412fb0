import random

import numpy as np
import pytest
from conftest import make_article

from streamdedup.fingerprints.simhash import SimHashMethod, SimHashParams, hamming, simhash64
from streamdedup.tokens.document import Document


def test_known_edits_move_few_bits_and_new_text_many():
    text = "\n".join(make_article(5, paragraphs=10))
    words = text.split(" ")
    edited = " ".join("EDIT" if i in (50, 150, 250) else w for i, w in enumerate(words))
    method = SimHashMethod()
    a = method.signature(Document.from_text(text))
    b = method.signature(Document.from_text(edited))
    unrelated = [hamming(a, method.signature(Document.from_text("\n".join(make_article(i, paragraphs=10)))))
                 for i in range(6, 26)]
    assert hamming(a, b) <= 3
    # unrelated texts: many bits differ (fewer than half: the generator's articles share their
    # frequent words, which dominate a tf-weighted vote); one pair alone is too noisy to bound
    assert min(unrelated) > method.params.max_distance
    assert 12 <= float(np.median(unrelated)) <= 44


def test_vote_is_the_sign_of_the_weighted_bit_sum():
    features = np.array([0b1011, 0b0011, 0b1000], dtype=np.uint64)
    assert simhash64(features) == 0b1011
    assert simhash64(features, np.array([1, 3, 1])) == 0b0011


@pytest.mark.parametrize("k, blocks", [(3, 5), (3, 6), (2, 4), (0, 1)])
def test_block_tables_find_every_fingerprint_within_k(k, blocks):
    """The permuted-table guarantee: distance <= k implies a shared key; checked against brute force."""
    method = SimHashMethod(SimHashParams(max_distance=k, blocks=blocks))
    rng = random.Random(k * 10 + blocks)
    for _ in range(300):
        a = rng.getrandbits(64)
        flips = rng.sample(range(64), rng.randint(0, k))
        b = a
        for bit in flips:
            b ^= 1 << bit
        assert set(method.index_keys(a)) & set(method.index_keys(b))
        assert method.similarity(a, b) == 1 - len(flips) / 64
    assert len(method.index_keys(0)) == len(set(method.index_keys(12345)))


def test_far_fingerprint_is_not_similar():
    method = SimHashMethod()
    assert method.similarity(0, (1 << 4) - 1) is None


def test_params_are_checked():
    with pytest.raises(ValueError, match="B - k blocks"):
        SimHashParams(max_distance=4, blocks=4)


def test_unweighted_simhash_is_the_weighted_vote_with_every_weight_one():
    """`simhash64` without weights takes a 32-bit counting kernel (`sign_bits`): the same bits as
    `weighted_sign_bits` with weights of 1, ties included (an even count, half the features)."""
    import numpy as np

    from streamdedup.fingerprints.kernels import sign_bits, weighted_sign_bits

    rng = np.random.default_rng(14)
    cases = [rng.integers(0, 2**64 - 1, size=n, dtype=np.uint64, endpoint=True) for n in (1, 2, 3, 64, 600, 5000)]
    cases += [np.array([0, 2**64 - 1] * 7, dtype=np.uint64), np.zeros(0, dtype=np.uint64),
              rng.integers(0, 4, size=999, dtype=np.uint64)]  # ties on every bit, none, low bits only
    for features in cases:
        assert sign_bits(features) == weighted_sign_bits(features, np.ones(len(features), dtype=np.int64))
