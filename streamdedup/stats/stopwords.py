"""Stop words per language.

The most frequent words of the language according to wordfreq (a maintained, multilingual source),
and for Tibetan, which wordfreq lacks, its grammatical particles (case markers, connectives, the
nominaliser), which play the same role."""

from __future__ import annotations

from functools import lru_cache

TIBETAN_PARTICLES = frozenset({
    "གི", "ཀྱི", "གྱི", "འི", "ཡི", "གིས", "ཀྱིས", "གྱིས", "འིས", "ཡིས", "ལ", "ན", "དུ", "ཏུ", "རུ", "སུ",
    "ར", "ནས", "ལས", "དང", "ཡང", "ཀྱང", "འང", "ནི", "པ", "བ", "མ", "དེ", "འདི", "ཞིང", "ཅིང", "ཤིང",
    "སྟེ", "ཏེ", "དེ་", "བྱས", "ཡིན", "རེད", "ཡོད", "འདུག", "གོ", "ངོ", "དོ", "ནོ", "བོ", "མོ", "འོ", "རོ", "ལོ", "སོ", "ཏོ"})


@lru_cache(maxsize=32)
def stop_words(lang: str, n: int = 100) -> frozenset[str]:
    """The language's `n` commonest words (wordfreq's), Tibetan's particles; none for a language it lacks."""
    if lang == "bo":
        return TIBETAN_PARTICLES
    import wordfreq

    if lang not in wordfreq.available_languages():
        return frozenset()
    return frozenset(wordfreq.top_n_list(lang, n))
