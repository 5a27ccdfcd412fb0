"""The 'feed' family: one publisher's news feed.

Every page is on one host, in one real page's template: many different articles (hard negatives of
each other, 'feed_article'), and revisions of some of them, re-published at the SAME URL or at a NEW
one, as newsrooms do: an "Updated:" line, a correction note appended, a paragraph appended, a
changed headline, 1-8 words changed. Each article and its revisions are one gold cluster."""

from __future__ import annotations

import random
from collections import Counter
from datetime import UTC, datetime, timedelta

from streamdedup.evaluate.pages import SourcePage
from streamdedup.evaluate.sets import LabelledSet, article_units, same_language_first, slug, text_unit
from streamdedup.evaluate.surgery import correction_note, headline_changed, in_template, update_line, words_changed

REVISIONS = ("update_line", "correction", "paragraph_appended", "headline_changed", "words_changed")
MIN_ARTICLES = 30
# a paragraph a revision appends has at least this many words: a shorter line is a heading or a
# note, not new content a crawler would keep the page for
APPENDED_WORDS = 20


def revise(kind: str, page: SourcePage, title: str, paragraphs: list[str], when: datetime,
              spare: list[str], rng: random.Random) -> tuple[str, list[str]]:
    """A story's title and paragraphs after a revision of `kind` (an update line, a correction, ...)."""
    if kind == "update_line":
        return title, [update_line(page, when), *paragraphs]
    if kind == "correction":
        return title, [*paragraphs, correction_note(page, paragraphs, rng)]
    if kind == "paragraph_appended":
        return title, [*paragraphs, spare.pop() if spare else paragraphs[0]]
    if kind == "headline_changed":
        return headline_changed(title, paragraphs, rng), paragraphs
    return title, words_changed(paragraphs, rng)


def revised_units(kind: str, units: list[str], before: list[str], after: list[str]) -> list[str]:
    """The gold units of a `kind` revision made by `revise` from `before` (holding `units`).

    An update line, a correction note, a headline or changed words add none; an appended paragraph
    adds its own unit, unless it repeats one the page holds."""
    if kind == "paragraph_appended" and after[-1] not in before:
        return [*units, text_unit(after[-1])]
    return list(units)


def build_feed(pool: list[SourcePage], templates: list[SourcePage], rng: random.Random, out: LabelledSet,
               articles: int = 40, revised: float = 0.5) -> None:
    """One template donor with `articles` different stories, about `revised` of them revised.

    One template donor (one whose language has more than `articles` pages in the pool if any),
    `articles` different stories in it, about `revised` of them revised 1-2 times."""
    if not templates:
        return
    languages = Counter(p.lang for p in pool)
    fitting = [t for t in templates if languages[t.lang] > articles] or templates
    donor = rng.choice(sorted(fitting, key=lambda t: t.name))
    ordered = same_language_first([p for p in pool if p is not donor], donor.lang, rng)
    chosen = ordered[:articles]
    # paragraphs a later revision appends come from stories the feed never shows otherwise
    spare = [p for page in ordered[articles:] if page.lang == donor.lang
             for p in page.paragraphs if len(p.split()) >= APPENDED_WORDS]
    rng.shuffle(spare)
    host = f"news.{slug(donor.site_key)}.example"
    base = datetime(2024, 3, 1, 6, tzinfo=UTC)
    for index, page in enumerate(chosen):
        cluster, path = f"feed-{page.name}", f"/{2024}/{slug(page.name)}"
        t0 = base + timedelta(hours=4 * index + rng.uniform(0, 3))
        url = f"https://{host}{path}"
        title, paragraphs = page.title, list(page.paragraphs)
        html = in_template(donor, paragraphs, title)
        if html is None:
            continue
        units = article_units(page)
        out.emit(cluster, "original", page.name, html, url, t0, page.lang, negative="feed_article",
                 template=donor.name, same_url=None, units=units)
        if rng.random() >= revised:
            continue
        when = t0
        for number in range(rng.choice((1, 1, 2))):  # each revision builds on the one before
            when = when + timedelta(minutes=rng.uniform(20, 3 * 24 * 60))
            kind = rng.choice(REVISIONS)
            before = paragraphs
            title, paragraphs = revise(kind, page, title, paragraphs, when, spare, rng)
            units = revised_units(kind, units, before, paragraphs)
            same = rng.random() < 0.5
            where = url if same else f"https://{host}{path}-{kind.replace('_', '-')}-{number + 2}"
            html = in_template(donor, paragraphs, title)
            if html is not None:
                out.emit(cluster, kind, page.name, html, where, when, page.lang, negative="feed_article",
                         template=donor.name, same_url=same, units=units)
