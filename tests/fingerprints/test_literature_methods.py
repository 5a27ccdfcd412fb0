"""Each method of the literature pinned to the behaviour its source describes."""


import numpy as np
import pytest
from conftest import make_article
from fixtures.multilingual import TEXTS

from streamdedup.clean.normalize import normalize_text
from streamdedup.fingerprints.decomposition import DecompositionMethod
from streamdedup.fingerprints.imatch import IMatchMethod
from streamdedup.fingerprints.lexrand import LexRandMethod
from streamdedup.fingerprints.logshingles import LogShinglesMethod, trailing_zeros
from streamdedup.fingerprints.longsent import LongSentMethod
from streamdedup.fingerprints.megashingles import MegaShinglesMethod
from streamdedup.fingerprints.optfreq import optimal_idf
from streamdedup.fingerprints.pugh import PughMethod
from streamdedup.fingerprints.randproj import RandProjMethod
from streamdedup.fingerprints.registry import METHODS, create_method
from streamdedup.fingerprints.spotsigs import SpotSigsMethod
from streamdedup.fingerprints.supershingles import SuperShinglesMethod
from streamdedup.fingerprints.tf import TfMethod
from streamdedup.fingerprints.tibetan_summary import TibetanSummaryMethod, luhn_score
from streamdedup.fingerprints.words import bm25_weights, content_words
from streamdedup.stats.lexicon import build_lexicon
from streamdedup.stats.stopwords import stop_words
from streamdedup.tokens.document import Document


def doc(text: str) -> Document:
    return Document.from_text(normalize_text(text))


@pytest.mark.parametrize("lang", sorted(TEXTS))
@pytest.mark.parametrize("name", list(METHODS))
def test_every_method_works_in_every_language(name, lang):
    """A signature, filed under at least one key, matching itself and not the other article."""
    method = create_method(name)
    a, b = (doc(t) for t in TEXTS[lang])
    assert a.lang == lang
    sig_a, sig_b = method.signature(a), method.signature(b)
    assert sig_a is not None and sig_b is not None
    if not method.can_match:  # a measure of what others find (wordpairs): most of a is new to b
        # its keys (a paragraph's values) are no other page's
        assert not set(method.index_keys(sig_a)) & set(method.index_keys(sig_b))
        assert method.similarity(sig_a, sig_a) is None
        new, their_new, _ = method.new_shares(sig_a, [method.encode(sig_b), method.encode(sig_a)])
        assert new[0] > 0.5 and their_new[0] > 0.5 and new[1] == their_new[1] == 0.0
        return
    assert method.index_keys(sig_a), "candidates must come from a key lookup"
    assert method.similarity(sig_a, method.decode(method.encode(sig_a))) is not None
    assert method.similarity(sig_a, sig_b) is None


# -- I-Match and LexRand (000, 004) ---------------------------------------------------------
EXTRA_WORDS = ["volcano", "orchestra", "glacier", "harvest", "tunnel", "satellite", "cathedral", "pottery",
               "wrestling", "vaccine", "lighthouse", "submarine", "festival", "carpenter", "orchard",
               "telescope", "parliament", "bakery", "tornado", "museum"]


def test_lexrand_survives_one_inserted_lexicon_word_that_breaks_imatch():
    text = TEXTS["en"][0]
    imatch, lexrand = IMatchMethod(), LexRandMethod()
    base_i, base_l = imatch.signature(doc(text)), lexrand.signature(doc(text))
    survived = 0
    for word in EXTRA_WORDS:
        edited = doc(text + f" {word}.")
        assert imatch.lexicon_words(edited) - imatch.lexicon_words(doc(text)) == {word}
        assert imatch.similarity(base_i, imatch.signature(edited)) is None  # I-Match breaks
        survived += lexrand.similarity(base_l, lexrand.signature(edited)) is not None
    # 1 - (1 - p)^K = 1 - 0.67^10 = 0.98 per word: expect ~19.6 of 20
    assert survived >= 17


def test_imatch_needs_enough_lexicon_words():
    assert IMatchMethod().signature(doc("The council met on Tuesday.")) is None


# -- shingle sketches (001, 004) ------------------------------------------------------------
def _shingle_pair(rng, jaccard, size=400):
    shared = int(round(2 * size * jaccard / (1 + jaccard)))
    pool = rng.integers(1, 2**63, size=shared + 2 * (size - shared), dtype=np.uint64)
    common, rest = pool[:shared], pool[shared:]
    return np.unique(np.concatenate([common, rest[: size - shared]])), np.unique(np.concatenate([common, rest[size - shared:]]))


def _match_rate(method, jaccard, trials=60):
    rng = np.random.default_rng(int(jaccard * 1000))
    hits = 0
    for _ in range(trials):
        a, b = _shingle_pair(rng, jaccard)
        keys_a = method.supershingles_of(a)
        keys_b = method.supershingles_of(b)
        hits += method.similarity(method.combine(keys_a), method.combine(keys_b)) is not None
    return hits / trials


def test_megashingles_match_at_90_percent_and_rarely_at_50():
    method = MegaShinglesMethod()
    assert _match_rate(method, 0.9) >= 0.8  # theory: 1 - P(<2 of 6 supershingles) = 0.92
    assert _match_rate(method, 0.5) <= 0.05  # theory: ~0.004


def test_broder_supershingles_need_very_high_similarity():
    method = SuperShinglesMethod()
    assert _match_rate(method, 0.97) >= 0.8  # P(>=2 of 6 groups of 14) = 0.95
    assert _match_rate(method, 0.75) <= 0.05  # 004: ~0 recall at 0.75


def test_logshingles_sample_and_wraparound():
    values = np.array([1, 2, 4, 8, 12, 0], dtype=np.uint64)
    assert trailing_zeros(values).tolist() == [0, 1, 2, 3, 2, 64]
    text = "\n".join(make_article(51, paragraphs=10))
    method = LogShinglesMethod()
    first, rest = text.split("\n", 1)
    rotated = rest + "\n" + first  # a ring: moving the start to the end keeps the shingles
    assert method.similarity(method.signature(doc(text)), method.signature(doc(rotated))) >= 0.9


def test_decomposition_compares_only_inside_the_length_window():
    article = make_article(52, paragraphs=10)
    method = DecompositionMethod()
    full = method.signature(doc("\n".join(article)))
    assert method.similarity(full, method.signature(doc("\n".join(article[:-1])))) is not None
    assert method.similarity(full, method.signature(doc("\n".join(article[:7])))) is None  # 30 % shorter


# -- 004's word and sentence signatures ------------------------------------------------------
def test_tf_is_blind_to_word_order_but_not_to_frequency():
    method = TfMethod()
    text = TEXTS["en"][1]
    reversed_sentences = " ".join(reversed(text.split(". ")))
    assert method.similarity(method.signature(doc(text)), method.signature(doc(reversed_sentences))) == 1.0
    assert method.similarity(method.signature(doc(text)), method.signature(doc(text + " nebula" * 8))) is None


def test_longsent_ignores_short_additions_and_sees_long_ones():
    method = LongSentMethod()
    text = TEXTS["en"][0]
    base = method.signature(doc(text))
    assert method.similarity(base, method.signature(doc(text + " Updated today."))) == 1.0
    longest = "A new and much longer sentence than any other appears here, with many many words in it, " \
              "so that it becomes the longest sentence of the whole article by a wide margin indeed."
    assert method.similarity(base, method.signature(doc(text + " " + longest))) is None


def test_bm25_and_optimal_idf_formulas():
    lexicon = build_lexicon([("en", ["alpha", "beta"]), ("en", ["alpha"]), ("en", ["gamma"])], min_df=1)
    weights = bm25_weights({"alpha": 2, "beta": 1}, lexicon, "en")
    dl, avg = 3, lexicon.avg_length
    tf_alpha = 2 / (2 * (0.25 + 0.75 * dl / avg) + 2)
    assert weights["alpha"] == pytest.approx(tf_alpha * np.log((3 - 2 + 0.5) / (2 + 0.5)))
    assert optimal_idf(11.5) == 1.0 and optimal_idf(5.75) == pytest.approx(np.sqrt(0.5))
    assert optimal_idf(23.0) == 0.5


def test_content_words_drop_stop_words_and_short_words_but_not_syllables():
    assert content_words(doc("The big council approved a plan")) == ["council", "approved", "plan"]
    assert "thư" in content_words(Document.from_text("thư viện công cộng", "vi"))


# -- Pugh, random projection, SpotSigs, the Tibetan pipeline ----------------------------------
def test_pugh_one_edit_touches_one_list():
    method = PughMethod()
    text = TEXTS["en"][0]
    a, b = method.signature(doc(text)), method.signature(doc(text.replace("warehouses", "depots")))
    equal = sum(1 for x, y in zip(a, b, strict=True) if x == y and x)
    assert equal >= sum(1 for x in a if x) - 2
    assert method.similarity(a, b) is not None


def test_random_projection_estimates_cosine():
    method = RandProjMethod()
    a = method.signature(doc(TEXTS["en"][0]))
    assert method.cosine(a, a) == 1.0
    near = method.signature(doc(TEXTS["en"][0] + " The library opens next year."))
    far = method.signature(doc(TEXTS["en"][1]))
    assert method.cosine(a, near) > 0.9
    assert method.cosine(a, far) < 0.5


def test_spotsigs_spots_follow_stop_words_and_ignore_navigation():
    method = SpotSigsMethod()
    assert "the" in stop_words("en", 20)
    text = TEXTS["en"][1]
    nav = "\n".join(["Home", "World news", "Sport results", "Weather forecast", "Contact us"])
    a, b = method.signature(doc(text)), method.signature(doc(nav + "\n" + text + "\n" + nav))
    assert method.jaccard(a, b) == 1.0  # navigation has no antecedents: no spots


def test_luhn_cluster_weight():
    # feature terms at 0, 2 and 9: {0, 2} is one cluster (gap 1 <= 4): 2^2 / 3; 9 alone: 1
    flags = [True, False, True] + [False] * 6 + [True]
    assert luhn_score(flags, gap=4) == pytest.approx(4 / 3)
    assert luhn_score([False, False], gap=4) == 0.0


def test_tibetan_summary_uses_particles_as_stop_words_and_survives_a_small_edit():
    method = TibetanSummaryMethod()
    text = TEXTS["bo"][0]
    tibetan = Document.from_text(text)
    assert tibetan.lang == "bo"
    assert not method.feature_terms(tibetan) & stop_words("bo")
    edited = text.replace("གྲོང་དཔོན", "གྲོང་ཁྱེར་དཔོན་པོ", 1)
    assert method.similarity(method.signature(tibetan), method.signature(Document.from_text(edited))) is not None
