"""A deployment's own word-pair seed (`[params.wordpairs] seed`): a replacement paragraph an
attacker searched for against the public default does not hide the article from it."""

from __future__ import annotations

import random

from streamdedup import Deduplicator, DetectorConfig

_WORDS = [f"{a}{b}{c}" for a in "bcdfgklmnprstv" for b in "aeiou" for c in "lmnrst"]  # 420 words


def _paragraph(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(words)).capitalize() + "."


def _hides(dedup: Deduplicator, article: list[str], replacement: str, index: int) -> bool:
    """Whether the article is the duplicate of an advance copy that has `replacement` for one paragraph."""
    copy = [*article[:index], replacement, *article[index + 1:]]
    verdicts = dedup.query_many([{"url": "https://copies.example/a", "content": "\n\n".join(copy)},
                                 {"url": "https://news.example/a", "content": "\n\n".join(article)}])
    return verdicts[1].status == "duplicate"


def test_a_replacement_found_against_the_default_seed_does_not_hide_the_article_from_a_secret_one():
    """The attack of docs/limitations.md ("an advance copy that lacks a paragraph"): an attacker
    runs streamdedup himself and tries replacement paragraphs until one's sketch values meet the
    left-out paragraph's in its place (~1 in 1,000 tries here): the article is then the duplicate
    of his copy and is dropped. The values come from the word-pair MinHash's seed: against a
    deployment's own seed the found replacement is a try like any other."""
    rng = random.Random(7)
    article = [_paragraph(rng, 50) for _ in range(6)]
    with Deduplicator() as public:
        found = next((r for r in (_paragraph(rng, 34) for _ in range(6000)) if _hides(public, article, r, 3)), None)
    assert found is not None  # the search succeeds against the public default
    secret = DetectorConfig(method_params={"wordpairs": {"seed": 8142396750123456789}})
    with Deduplicator(secret) as deployed:
        assert not _hides(deployed, article, found, 3)
        # (and the attack as such still needs the paragraph: an unrelated replacement does not hide it)
        assert not _hides(deployed, article, _paragraph(random.Random(1), 34), 3)


def test_a_number_picked_to_collide_under_the_default_seed_does_not_hide_the_article_from_a_secret_one():
    """A falsified advance copy (one number changed) hides the article when the changed paragraph's
    byte of numbers (`paragraph_rows.numbers_bytes`, a 5-bit hash) equals the true one's: 1 in 32 numbers,
    which anyone can find with the public default ("135" for "120" here). With a deployment's own
    seed the hash's multiplier is its own, and the picked number is a try like any other."""
    from streamdedup.clean.normalize import normalize_text
    from streamdedup.fingerprints.paragraph_rows import numbers_byte

    article = ["The regional council met on Tuesday evening to discuss the flooding that hit the valley towns last "
               "week and the repairs that residents have been waiting for since the river burst its banks.",
               "Officials said the old footbridge near the mill collapsed under the weight of debris on the night "
               "of the storm, and that 120 homes along the lower road are still without drinking water.",
               "The council will vote next month on a plan to rebuild the bridge with a wider span and to raise "
               "the embankment along the northern bank before the autumn storms arrive in the region."]
    true_byte = numbers_byte(normalize_text(article[1]))
    picked = next(str(n) for n in range(121, 2000)
                  if numbers_byte(normalize_text(article[1].replace("120", str(n)))) == true_byte)
    falsified = article[1].replace("120", picked)
    with Deduplicator() as public:
        assert _hides(public, article, falsified, 1)  # the picked number passes for the true one
        assert not _hides(public, article, article[1].replace("120", "130"), 1)  # another does not
    secret = DetectorConfig(method_params={"wordpairs": {"seed": 8142396750123456789}})
    with Deduplicator(secret) as deployed:
        assert not _hides(deployed, article, falsified, 1)
