"""What every labelled set shares: the split, the page pools of each family, and the record format.

Splits are by *site*: a publisher's pages (every readability page of 'nytimes-N', every trafilatura
page of one host) are all 'dev' or all 'test', and a page is only ever used (as an article, a
template, or a source of short texts) inside its own split, so the held-out test set shares no
article and no template with dev. Within a split, trafilatura's pages are dealt to the families by
a hash of their name, so the families of one split can be merged into one crawl without unlabelled
duplicates between them.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from typing import Any

import xxhash

from streamdedup.evaluate.pages import MIN_WORDS, NEWSPAPER_CORPUS, SourcePage

FAMILIES = ("web", "feed", "site")  # built from the shared pages ('all')
# not part of 'all': built from the multilingual sources (evaluate/multilingual.py), or ('cold', 'reuse')
# from every page of the split, so not to be merged with the others
OTHER_FAMILIES = ("multilingual", "cold", "reuse", "story")
# the share of trafilatura's pages (of one split) each family draws from; readability's and newspaper4k's go to 'web'
_FAMILY_SHARE = (("web", 0.25), ("feed", 0.25), ("site", 0.5))


def bucket(name: str, salt: str) -> float:
    """A stable number in [0, 1) for a name: the same page lands in the same split on every run."""
    return xxhash.xxh3_64_intdigest(f"{salt}:{name}".encode()) / 2**64


def split_of(page: SourcePage) -> str:
    """Whether a page's site goes to the dev or the test split (stable, by a hash of the site)."""
    return "dev" if bucket(page.site_key, "split") < 0.5 else "test"


def family_of(page: SourcePage) -> str:
    """The family a source page is built into (multilingual, web, or by a stable hash of its name)."""
    if page.corpus == "multilingual":
        return "multilingual"
    if page.corpus in ("readability", NEWSPAPER_CORPUS):  # news articles, a few per site: the cross-site crawl
        return "web"
    point, edge = bucket(page.name, "family"), 0.0
    for family, share in _FAMILY_SHARE:
        edge += share
        if point < edge:
            return family
    return _FAMILY_SHARE[-1][0]


def slug(name: str) -> str:
    """A page name as a short host label: lower case letters, digits and dashes."""
    name = name.removeprefix("traf:").removesuffix(".html")
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:60] or "site"


def same_language_first(pages: list[SourcePage], lang: str | None, rng: random.Random) -> list[SourcePage]:
    """The pages in `lang` first, then the others, each group shuffled.

    One publisher writes in one language as far as the pool allows."""
    same = [p for p in pages if p.lang == lang]
    other = [p for p in pages if p.lang != lang]
    rng.shuffle(same)
    rng.shuffle(other)
    return same + other


def one_donor_per_site(templates: list[SourcePage], rng: random.Random) -> list[SourcePage]:
    """One template page per real site, in a seeded random order: the hosts a family builds."""
    donors: list[SourcePage] = []
    for template in sorted(templates, key=lambda t: t.name):
        if template.site_key not in {d.site_key for d in donors}:
            donors.append(template)
    rng.shuffle(donors)
    return donors


def host_of(page: SourcePage) -> str:
    """The page's own site, as a host of the reserved .example domain (its registrable domain)."""
    return f"{slug(page.site_key)}.example"


def _shingles(page: SourcePage) -> set[int]:
    words = [w.strip() for p in page.paragraphs for w in page.segmenter.split(p.lower())]
    return {xxhash.xxh3_64_intdigest(" ".join(words[i:i + 3]).encode()) for i in range(max(1, len(words) - 2))}


def distinct_articles(pages: list[SourcePage], max_overlap: float = 0.3) -> list[SourcePage]:
    """Long enough articles, each kept once.

    Several test pages are variants of one text (Mozilla's lorem-ipsum cases, trafilatura's pages
    saved twice) and would be unlabelled near-duplicates."""
    kept: list[SourcePage] = []
    sizes: list[int] = []
    index: dict[int, list[int]] = {}
    for page in pages:
        if page.words < MIN_WORDS:
            continue
        shingles = _shingles(page)
        shared = Counter(k for s in shingles for k in index.get(s, ()))
        if any(n / (len(shingles) + sizes[k] - n) >= max_overlap for k, n in shared.items()):
            continue
        for s in shingles:
            index.setdefault(s, []).append(len(kept))
        kept.append(page)
        sizes.append(len(shingles))
    return kept


def article_units(page: SourcePage, indices: Iterable[int] | None = None) -> list[str]:
    """Gold content units of an article's paragraphs (all, or those at `indices`).

    One id per source paragraph, '<page name>:<index>'; a lightly edited paragraph keeps its id.
    A page holding a paragraph holds too the units of the article's paragraphs that repeat it
    (`repeats`): a standfirst the article shows again, a pull quote of one of its sentences. A
    page lacking only such a paragraph loses no text, so its copy without it is no content loss
    (story dev: two of its three content-loss edges were a copy adding or swapping in a repeat)."""
    chosen = list(range(len(page.paragraphs)) if indices is None else indices)
    held = set(chosen)
    repeated = sorted({i for j in chosen for i in _repeated_by(page.paragraphs)[j] if i not in held})
    return [f"{page.name}:{i}" for i in (*chosen, *repeated)]


# a word for `repeats`: a run of letters and digits, split at punctuation and underscores
_WORD = re.compile(r"[^\W_]+")


def _words(text: str) -> str:
    """The text's words that hold a letter, lowercased, each between spaces (a figure alone is left out)."""
    return "".join(f" {word}" for word in _WORD.findall(text.lower()) if not word.isdigit()) + " "


# a line this many words long repeats a longer paragraph it is a run of (`repeats`); a shorter one only
# a line of the same words: a heading or a name a paragraph mentions is still a line of its own
# (the paragraph sketch's floor: lines under 12 words are no paragraphs to it either)
REPEAT_WORDS = 12


def repeats(paragraph: str, other: str) -> bool:
    """Whether `paragraph` says nothing `other` does not: its words are `other`'s, or, from 12 words, a run of them.

    Words that hold a letter, lowercased ("x86" and "multiboot2" are words): a figure on its own
    is left out, as a source's pull quote may have lost it (readability's bug-1255978 quotes "for
    every $1000 invested" as "for every 00 invested"). A paragraph without words repeats nothing;
    one under `REPEAT_WORDS` words only a line of the same words (a heading shown twice)."""
    words, theirs = _words(paragraph), _words(other)
    if words == " ":
        return False
    return words == theirs or (words.count(" ") - 1 >= REPEAT_WORDS and words in theirs)


@lru_cache(maxsize=64)
def _repeated_by(paragraphs: tuple[str, ...]) -> tuple[tuple[int, ...], ...]:
    """Of each paragraph, the other paragraphs of its article that repeat it (`repeats`)."""
    return tuple(tuple(i for i, short in enumerate(paragraphs) if i != j and repeats(short, long))
                 for j, long in enumerate(paragraphs))


def text_unit(text: str) -> str:
    """The unit of a paragraph that is no article's in the set (a new paragraph of a revision)."""
    return f"text:{xxhash.xxh3_64_hexdigest(text.encode())}"


def fetch_order(record: dict[str, Any]) -> tuple[str, str]:
    """Where a record sits in the crawl: its fetch time, or (undated re-crawls) its arrival."""
    return (record.get("fetched_at") or record["arrived_at"], record.get("id") or record.get("label_id", ""))


@dataclass
class LabelledSet:
    """Records in the making; `emit` writes every label a page carries."""

    family: str
    split: str
    records: list[dict[str, Any]] = field(default_factory=list)

    def emit(self, cluster: str, variant: str, source: str, html: str, url: str, when: datetime,
             lang: str | None, *, negative: str | None = None, template: str | None = None,
             undated: bool = False, **extra: Any) -> None:
        """One page.

        variant: how it was made (a negative's variant is its negative kind); negative: the
        hard-negative class it stands for against other clusters (or None); extra: more labels, e.g.
        `units` (the gold content units it holds). An `undated` page carries neither `id` nor
        `fetched_at` (a crawler that sends none): its place in the crawl is `arrived_at`, its name
        `label_id`."""
        host = re.sub(r"^https?://([^/?#]+).*$", r"\1", url)
        name = f"{self.family}-{self.split}-{variant}-{len(self.records):05d}"
        stamp = when.isoformat().replace("+00:00", "Z")
        identity = {"label_id": name} if undated else {"id": name}
        timing = {"arrived_at": stamp} if undated else {"fetched_at": stamp}
        self.records.append({
            **identity, "url": url, "content": html, "content_type": "text/html", **timing, "lang": lang,
            "cluster": cluster, "variant": variant, "negative": negative, "host": host, "family": self.family,
            "split": self.split, "source_page": source, "template": template, **extra})

    def in_fetch_order(self) -> list[dict[str, Any]]:
        """The set's records in crawl order (`fetch_order`)."""
        return sorted(self.records, key=fetch_order)
