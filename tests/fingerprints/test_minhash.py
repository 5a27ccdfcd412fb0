import numpy as np
import pytest
from conftest import make_article

from streamdedup.fingerprints.lsh import SEARCHED, candidate_probability, optimal_bands, searched_bands
from streamdedup.fingerprints.minhash import VALUE_TYPES, MinHashMethod, MinHashParams, MinHashSignature
from streamdedup.tokens.document import Document


def _sets_with_jaccard(rng, size, jaccard):
    """Two sets of 64-bit hashes with exactly the given Jaccard similarity."""
    shared = int(round(2 * size * jaccard / (1 + jaccard)))
    pool = rng.integers(0, 2**63, size=shared + 2 * (size - shared), dtype=np.uint64)
    common, rest = pool[:shared], pool[shared:]
    return np.concatenate([common, rest[: size - shared]]), np.concatenate([common, rest[size - shared:]])


@pytest.mark.parametrize("jaccard", [0.2, 0.5, 0.8, 0.95])
def test_jaccard_estimate_within_expected_error(jaccard):
    """Estimate error is binomial: sd = sqrt(J(1-J)/n); allow 4 sd over 20 trials' mean and 5 sd each."""
    method = MinHashMethod(MinHashParams(num_perm=256))
    rng = np.random.default_rng(7)
    estimates = []
    for _ in range(20):
        a, b = _sets_with_jaccard(rng, 2000, jaccard)
        estimates.append(float(np.mean(method.hash_values(np.unique(a)) == method.hash_values(np.unique(b)))))
    sd = np.sqrt(jaccard * (1 - jaccard) / 256)
    assert abs(np.mean(estimates) - jaccard) < 4 * sd / np.sqrt(20) + 0.005
    assert max(abs(e - jaccard) for e in estimates) < 5 * sd


def test_bands_are_derived_from_threshold():
    bands, rows = optimal_bands(0.5, 128)
    assert bands * rows <= 128
    # the S-curve crosses ~0.5 near the threshold, low far below, high far above
    assert candidate_probability(0.2, bands, rows) < 0.15
    assert candidate_probability(0.8, bands, rows) > 0.99
    high_bands, high_rows = optimal_bands(0.9, 128)
    assert high_rows > rows


def test_the_bands_looked_up_are_the_searched_ones():
    for (threshold, num_perm, fp_weight, fn_weight), bands_rows in SEARCHED.items():
        assert searched_bands(threshold, num_perm, fp_weight, fn_weight) == bands_rows
    default = MinHashParams()
    assert (default.banding_threshold, default.num_perm, 0.5, 0.5) in SEARCHED  # the default start-up searches none


def test_bad_threshold_names_the_mistake():
    with pytest.raises(ValueError, match="Jaccard"):
        MinHashParams(threshold=80)


def test_near_duplicate_documents_share_a_band_and_verify():
    text = "\n".join(make_article(3))
    edited = text.replace(text.split()[40], "CHANGED", 1).replace(text.split()[90], "EDITED", 1)
    method = MinHashMethod()
    a, b = method.signature(Document.from_text(text)), method.signature(Document.from_text(edited))
    assert set(method.index_keys(a)) & set(method.index_keys(b))
    assert method.similarity(a, b) > 0.8
    other = method.signature(Document.from_text("\n".join(make_article(4))))
    assert not set(method.index_keys(a)) & set(method.index_keys(other))
    assert method.similarity(a, other) is None


def test_encode_roundtrip_and_huge_document_in_chunks():
    method = MinHashMethod()
    shingles = np.arange(1, 20_000, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    values = method.hash_values(shingles)
    chunked_free = ((method._a * shingles[None, :] + method._b) >> np.uint64(32)).min(axis=1).astype(np.uint32)
    assert np.array_equal(values, chunked_free)
    sig = method.signature(Document.from_text("one two three four five six"))
    assert np.array_equal(method.decode(method.encode(sig)).values, sig.values)


@pytest.mark.parametrize("bits", [8, 16, 32])
def test_b_bit_signatures_estimate_jaccard_after_the_collision_correction(bits):
    """Keeping b bits of each minimum adds chance collisions (2^-b); the estimate removes them.
    At 8 bits an uncorrected estimate of two unrelated sets would be ~0.004 above zero."""
    method = MinHashMethod(MinHashParams(num_perm=256, value_bits=bits))
    rng = np.random.default_rng(11)
    for jaccard in (0.0, 0.5, 0.9):
        estimates = []
        for _ in range(20):
            a, b = _sets_with_jaccard(rng, 2000, jaccard)
            kept = VALUE_TYPES[bits]
            sig_a = MinHashSignature(method.hash_values(np.unique(a)).astype(kept), len(a))
            sig_b = MinHashSignature(method.hash_values(np.unique(b)).astype(kept), len(b))
            estimates.append(method.jaccard(sig_a, sig_b))
        sd = np.sqrt(max(jaccard * (1 - jaccard), 2.0 ** -bits) / 256)
        assert abs(np.mean(estimates) - jaccard) < 4 * sd / np.sqrt(20) + 0.002, (bits, jaccard, np.mean(estimates))
    # exactly the chance rate of equal values (2^-b of them) is an estimate of 0, all equal is 1
    chance = MinHashSignature(np.arange(256).astype(VALUE_TYPES[bits]), 100)
    others = np.arange(256, 512).astype(VALUE_TYPES[bits]) if bits > 8 else (np.arange(256) + 1).astype(np.uint8)
    if bits == 8:
        assert method.jaccard(chance, MinHashSignature(np.where(np.arange(256) == 0, 0, others), 100)) == pytest.approx(0.0)
    assert method.jaccard(chance, MinHashSignature(others, 100)) == 0.0
    assert method.jaccard(chance, chance) == 1.0
    sig = method.signature(Document.from_text(" ".join(f"w{i}" for i in range(50))))
    assert sig.values.dtype.itemsize * 8 == bits and len(method.encode(sig)) == 4 + 256 * bits // 8 + method.bands
    back = method.decode(method.encode(sig))
    assert np.array_equal(back.values, sig.values) and np.array_equal(back.checks, sig.checks) and len(sig.checks) == method.bands


def test_value_bits_names_the_choices():
    with pytest.raises(ValueError, match="value_bits"):
        MinHashParams(value_bits=12)


def test_a_signature_of_other_value_bits_is_refused_when_encoded():
    """Its bytes would decode as other values, silently (a bench made 16-bit values under the 8-bit
    default and got signatures of 256 one-byte values)."""
    method = MinHashMethod(MinHashParams(value_bits=8))
    other = MinHashMethod(MinHashParams(value_bits=16)).signature(Document.from_text(" ".join(f"w{i}" for i in range(50))))
    with pytest.raises(ValueError, match="another value_bits"):
        method.encode(other)


def _splitmix_band_keys(values, bands: int, rows: int) -> bytes:
    """`kernels.band_keys` without checks in plain Python: the keys every store built before band
    checks holds (its index snapshot and its rebuilt index) must stay these."""
    mask = (1 << 64) - 1
    out = b""
    for band in range(bands):
        h = 0x243F6A8885A308D3 ^ band
        for r in range(band * rows, (band + 1) * rows):
            z = ((h ^ int(values[r])) * 0x9E3779B97F4A7C15) & mask
            z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
            z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
            h = z ^ (z >> 31)
        out += bytes([band]) + h.to_bytes(8, "little")
    return out


def test_without_checks_the_band_keys_are_those_of_before():
    method = MinHashMethod(MinHashParams(value_bits=16, band_check_bits=0))
    sig = method.signature(Document.from_text(" ".join(f"w{i}" for i in range(80))))
    assert len(sig.checks) == 0
    assert b"".join(method.index_keys(sig)) == _splitmix_band_keys(sig.values, method.bands, method.rows)
    rows, counts = method.index_key_rows([method.encode(sig)])  # a rebuild's keys: the same
    assert rows.tobytes() == _splitmix_band_keys(sig.values, method.bands, method.rows) and list(counts) == [method.bands]


def test_band_checks_keep_a_chance_8_bit_band_match_apart_and_a_true_one_together():
    """A band of 4 rows of 8-bit values is a 32-bit key: pages whose minima differ but whose low
    bytes agree share it by chance. The check (8 bits of a hash of the whole minima) tells them
    apart; pages whose minima are equal keep equal checks, so a true band match is still found."""
    method = MinHashMethod()
    assert method.params.value_bits == 8 and method.params.band_check_bits == 8
    rng = np.random.default_rng(5)
    minima = rng.integers(0, 2**32, size=method.params.num_perm, dtype=np.uint64).astype(np.uint32)
    same_low_bytes = minima ^ np.uint32(0x100)  # every minimum differs, its low 8 bits do not
    from streamdedup.fingerprints.kernels import band_checks

    def signed(whole: np.ndarray) -> MinHashSignature:
        return MinHashSignature(whole.astype(np.uint8), 500, band_checks(whole, method.bands, method.rows))

    mine, chance, copy = signed(minima), signed(same_low_bytes), signed(minima.copy())
    assert np.array_equal(mine.values, chance.values)
    shared_by_chance = set(method.index_keys(mine)) & set(method.index_keys(chance))
    assert len(shared_by_chance) <= 2  # each band's check differs with probability 255/256
    assert method.index_keys(mine) == method.index_keys(copy)
    # the rebuild's many-at-once keys are the same keys, checks included
    rows, counts = method.index_key_rows([method.encode(mine), method.encode(chance)])
    assert [bytes(r) for r in rows[:method.bands]] == method.index_keys(mine)
    assert [bytes(r) for r in rows[method.bands:]] == method.index_keys(chance)
    assert list(counts) == [method.bands, method.bands]


def test_a_signature_without_its_band_checks_is_refused_when_encoded():
    method = MinHashMethod()
    sig = method.signature(Document.from_text(" ".join(f"w{i}" for i in range(50))))
    with pytest.raises(ValueError, match="another band_check_bits"):
        method.encode(MinHashSignature(sig.values, sig.set_size))
    with pytest.raises(ValueError, match="band_check_bits is 0 or 8"):
        MinHashParams(band_check_bits=4)


def test_a_description_from_before_band_checks_means_none():
    """A store built before 2026-12-02 recorded its MinHash without band_check_bits: that is 0,
    so it compares equal to a run asking value_bits=16 and band_check_bits=0, and not to the default."""
    from streamdedup.fingerprints.registry import method_from_description, pinned_description

    before = ("minhash(num_perm=128,shingle_size=5,threshold=0.5,lsh_threshold=0.4,containment=0.85,"
              "containment_min_shingles=100,seed=1,min_shingles=1,value_bits=16)")
    assert method_from_description(before).params == MinHashParams(value_bits=16, band_check_bits=0)
    kept = MinHashMethod(MinHashParams(value_bits=16, band_check_bits=0)).describe()
    assert pinned_description(before) == pinned_description(kept)
    assert pinned_description(before) != pinned_description(MinHashMethod().describe())


def test_a_signature_encoded_with_other_params_is_not_comparable_rather_than_an_error():
    """The global topology's internal topics may hold records encoded before a parameter change
    (16-bit values without band checks) that a store rebuilt from them replays: such a candidate
    decodes to another number of values, and is no match, where it raised a broadcast error."""
    before = MinHashMethod(MinHashParams(value_bits=16, band_check_bits=0))
    now = MinHashMethod()
    doc = Document.from_text(" ".join(f"w{i}" for i in range(300)))
    stored = before.encode(before.signature(doc))
    assert np.isnan(now.similarities(now.signature(doc), [stored])).all()
    assert now.similarity(now.signature(doc), now.decode(stored)) is None
