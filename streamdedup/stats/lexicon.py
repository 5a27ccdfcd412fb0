"""Frozen, versioned collection statistics for the global methods.

The global methods are TF*IDF, RIDF, OptFreq, I-Match, LexRand, DescrWords, HeavySent and the Tibetan
pipeline.

A stream never has a finished collection, and a signature computed with yesterday's statistics
must match today's, so statistics are frozen: either built once from a corpus
(`streamdedup lexicon build`, a JSON file whose version is the hash of its content) or, by
default, derived from the `wordfreq` library's multilingual word frequencies. With wordfreq,
df is modelled from a word's frequency f as N·(1 − exp(−f·L)) for documents of L = 500 words.
Languages wordfreq lacks (Tibetan among them) get no statistics: every word is treated as rare
(IDF at its maximum) until a lexicon is built from a corpus in that language.
"""

from __future__ import annotations

import gzip
import json
import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import xxhash

NOMINAL_DOCS = 10_000_000
NOMINAL_LENGTH = 500


@dataclass
class Lexicon:
    """df and cf per (language, word) and the collection size N."""

    version: str
    n_docs: float
    avg_length: float
    df_table: dict[str, dict[str, float]] = field(default_factory=dict)  # lang -> word -> df
    cf_table: dict[str, dict[str, float]] = field(default_factory=dict)
    source: str = "corpus"

    def df(self, word: str, lang: str) -> float:
        """In how many documents of the corpus the word appears (0.0: never)."""
        return self.df_table.get(lang, {}).get(word, 0.0)

    def cf(self, word: str, lang: str) -> float:
        """How many times the word appears in the corpus (0.0: never)."""
        return self.cf_table.get(lang, {}).get(word, 0.0)

    def idf(self, word: str, lang: str) -> float:
        """-log(df/N) with df floored at 1 (an unseen word is as rare as a word can be)."""
        return -math.log(max(self.df(word, lang), 1.0) / self.n_docs)

    def knows(self, lang: str) -> bool:
        """Whether the lexicon has statistics for the language."""
        return bool(self.df_table.get(lang))

    # -- persistence ------------------------------------------------------------------------
    def save(self, path: Path) -> None:
        """Write the lexicon as JSON (gzipped where the name ends in .gz)."""
        data = {"version": self.version, "n_docs": self.n_docs, "avg_length": self.avg_length,
                "df": self.df_table, "cf": self.cf_table}
        raw = json.dumps(data, ensure_ascii=False, sort_keys=True).encode()
        path.write_bytes(gzip.compress(raw, mtime=0) if path.suffix == ".gz" else raw)

    @classmethod
    def load(cls, path: Path) -> Lexicon:
        """The lexicon a file holds; a file that is not one is refused in one line naming the fix."""
        raw = path.read_bytes()
        try:
            data = json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)
            return cls(data["version"], data["n_docs"], data["avg_length"], data["df"], data["cf"], str(path))
        except (ValueError, KeyError, TypeError, EOFError, OSError) as err:  # not JSON, not gzip, not a lexicon's keys
            raise ValueError(f"lexicon {str(path)!r} is not a lexicon file ({type(err).__name__}: {err}): a lexicon "
                             "holds the word statistics `streamdedup lexicon build` writes (JSON, .gz ok); give "
                             "'wordfreq' or such a file") from None


def build_lexicon(documents: Iterable[tuple[str, list[str]]], min_df: int = 2) -> Lexicon:
    """Count df and cf over (language, tokens) documents.

    Words seen in < min_df documents are dropped (they would only be noise and size)."""
    df: dict[str, Counter[str]] = {}
    cf: dict[str, Counter[str]] = {}
    n_docs, total = 0, 0
    for lang, tokens in documents:
        n_docs += 1
        total += len(tokens)
        counts = Counter(tokens)
        cf.setdefault(lang, Counter()).update(counts)
        df.setdefault(lang, Counter()).update(counts.keys())
    df_table = {lang: {w: float(c) for w, c in counter.items() if c >= min_df} for lang, counter in df.items()}
    cf_table = {lang: {w: float(cf[lang][w]) for w in words} for lang, words in df_table.items()}
    canonical = json.dumps([n_docs, df_table, cf_table], sort_keys=True, ensure_ascii=False).encode()
    version = "corpus-" + xxhash.xxh3_64_hexdigest(canonical)
    return Lexicon(version, float(max(n_docs, 1)), total / max(n_docs, 1), df_table, cf_table)


class WordfreqLexicon(Lexicon):
    """The default: statistics modelled from wordfreq's frequencies, loaded per language on use."""

    def __init__(self) -> None:
        import wordfreq

        version = getattr(wordfreq, "__version__", None)
        if version is None:
            from importlib.metadata import version as package_version

            version = package_version("wordfreq")
        super().__init__(f"wordfreq-{version}", NOMINAL_DOCS, NOMINAL_LENGTH, source="wordfreq")
        self._languages = set(wordfreq.available_languages())

    def _table(self, lang: str) -> dict[str, float]:
        if lang not in self.df_table:
            self.df_table[lang] = _wordfreq_frequencies(lang) if lang in self._languages else {}
        return self.df_table[lang]

    def df(self, word: str, lang: str) -> float:
        """The word's document frequency, estimated from its wordfreq frequency and the average length."""
        frequency = self._table(lang).get(word, 0.0)
        return self.n_docs * -math.expm1(-frequency * self.avg_length)

    def cf(self, word: str, lang: str) -> float:
        """The word's collection frequency, estimated from its wordfreq frequency."""
        return self._table(lang).get(word, 0.0) * self.n_docs * self.avg_length

    def knows(self, lang: str) -> bool:
        """Whether wordfreq has frequencies for the language."""
        return bool(self._table(lang))


@lru_cache(maxsize=16)
def _wordfreq_frequencies(lang: str) -> dict[str, float]:
    import wordfreq

    return dict(wordfreq.get_frequency_dict(lang))


@lru_cache(maxsize=8)
def load_lexicon(spec: str) -> Lexicon:
    """'wordfreq' (the default) or the path of a lexicon built with `streamdedup lexicon build`."""
    if spec == "wordfreq":
        return WordfreqLexicon()
    path = Path(spec)
    if not path.exists():
        raise ValueError(f"lexicon {spec!r} not found: give 'wordfreq' or a file made by "
                         "`streamdedup lexicon build`")
    return Lexicon.load(path)
