"""The 'story' family: one story's fetches that differ by a paragraph of the story itself.

A newsroom updates a story with text about that story: a paragraph added as events go on, one
rewritten. Such a paragraph shares the story's names and phrases ("the prime minister", "the
flooded valley") with its other paragraphs, unlike the replacements of the other families, which
come from other articles. A measure of new paragraphs that is fooled by shared phrases misses it,
and a crawler that drops the later fetch loses the update.

Built from real articles of 5+ paragraphs, each in a real page's template, one story per host
(stories are hard negatives of each other, 'story_article'). The first fetch lacks one of the
story's paragraphs of 20+ words (not its first); later fetches, at the same URL (half of them
undated: a feed polling one URL) or at a new one:
- `story_paragraph_added`: the whole story: new text, its own cluster;
- `story_paragraph_replaced`: the whole story but another of its paragraphs: new text, its own
  cluster;
- `story_paragraph_removed`: the first fetch less another paragraph: nothing new, a duplicate;
- `story_words_changed`: the first fetch with 1-4 words changed: nothing new, a duplicate.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

from streamdedup.evaluate.family_feed import APPENDED_WORDS
from streamdedup.evaluate.pages import SourcePage
from streamdedup.evaluate.sets import LabelledSet, article_units, one_donor_per_site, slug
from streamdedup.evaluate.surgery import in_template, words_changed

NEW_TEXT = ("story_paragraph_added", "story_paragraph_replaced")
NO_NEW_TEXT = ("story_paragraph_removed", "story_words_changed")
MIN_PARAGRAPHS = 5


def _held_back(page: SourcePage, rng: random.Random) -> tuple[int, int] | None:
    """Two of the story's paragraphs of `APPENDED_WORDS`+ words past its first: the one held back, another."""
    long_ones = [i for i, p in enumerate(page.paragraphs) if i and len(p.split()) >= APPENDED_WORDS]
    if len(long_ones) < 2:
        return None
    held, other = rng.sample(long_ones, 2)
    return held, other


def build_story(pool: list[SourcePage], templates: list[SourcePage], rng: random.Random, out: LabelledSet,
                stories: int = 40) -> None:
    """Up to `stories` stories, one a host (a template donor of its own site), each fetched 2-3 times."""
    donors = one_donor_per_site(templates, rng)
    sources = [p for p in sorted(pool, key=lambda p: p.name) if len(p.paragraphs) >= MIN_PARAGRAPHS]
    rng.shuffle(sources)
    # each story in the template of another site's page, one story a host
    pairs = [(donor, page) for donor, page in zip(donors, sources[1:] + sources[:1], strict=False)
             if donor.site_key != page.site_key]
    base = datetime(2024, 5, 1, tzinfo=UTC)
    for number, (donor, page) in enumerate(pairs[:stories]):
        chosen = _held_back(page, rng)
        if chosen is None:
            continue
        held, other = chosen
        host = f"www.{slug(donor.site_key)}.example"
        url = f"https://{host}/story/{slug(page.name)}"
        undated = rng.random() < 0.5
        first = [i for i in range(len(page.paragraphs)) if i != held]
        t0 = base + timedelta(hours=5 * number + rng.uniform(0, 4))
        html = in_template(donor, [page.paragraphs[i] for i in first], page.title)
        if html is None:
            continue
        cluster = f"story-{page.name}"
        out.emit(cluster, "story_first", page.name, html, url, t0, page.lang, negative="story_article",
                 template=donor.name, undated=undated, units=article_units(page, first))
        for n, kind in enumerate(rng.sample((*NEW_TEXT, *NO_NEW_TEXT), rng.randint(1, 2))):
            when = t0 + timedelta(hours=2 * (n + 1))
            where = url if undated or rng.random() < 0.5 else f"{url}-update-{n + 1}"
            own_cluster = f"story-{page.name}-{kind}"
            texts: list[str]
            if kind == "story_paragraph_added":
                kept = list(range(len(page.paragraphs)))
            elif kind == "story_paragraph_replaced":
                kept = [i for i in range(len(page.paragraphs)) if i != other]
            else:
                kept = [i for i in first if kind == "story_words_changed" or i != other]
                own_cluster = cluster
            texts = [page.paragraphs[i] for i in kept]
            if kind == "story_words_changed":
                texts = words_changed(texts, rng, 1, 4)
            edit = in_template(donor, texts, page.title)
            if edit is None:
                continue
            out.emit(own_cluster, kind, page.name, edit, where, when, page.lang,
                     negative=kind if kind in NEW_TEXT else "story_article", template=donor.name,
                     undated=undated and where == url, units=article_units(page, kept))
