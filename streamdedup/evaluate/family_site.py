"""The 'site' family: a crawl of a few sites seen many times, so each site's template can be learned from the stream.

Per host (one real page's template): many different articles in it (hard negatives of each other,
'same_host_article'), some re-crawled at the same URL with changed boilerplate ('site_recrawl') or
lightly edited at a new URL ('site_light_edit': 2-5 % of words) or at the same URL
('site_minor_edit': 1-8 words and an update line), and short pages: 10-60 words of real text each,
on the same template, every one a different brief ('short_page' negatives)."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

from streamdedup.evaluate.pages import SourcePage
from streamdedup.evaluate.sets import LabelledSet, article_units, same_language_first, slug
from streamdedup.evaluate.surgery import (
    in_template,
    light_edit_kept,
    recrawl_html,
    short_body,
    update_line,
    words_changed,
)

EDITS = ("site_recrawl", "site_light_edit", "site_minor_edit")


def build_site(pool: list[SourcePage], templates: list[SourcePage], rng: random.Random, out: LabelledSet,
               hosts: int = 5, articles: tuple[int, int] = (15, 20), shorts: tuple[int, int] = (12, 14),
               edited: float = 0.4) -> None:
    """`hosts` template donors (fewer if the pool cannot fill them).

    On each, articles[0..1] stories and shorts[0..1] short pages."""
    hosts = min(hosts, len(templates), len(pool) // (1 + articles[1] + shorts[1]))
    donors = rng.sample(sorted(templates, key=lambda t: t.name), hosts)
    rest = [p for p in pool if p not in donors]
    stories, briefs = [], []  # a brief is one short text of a story shown nowhere else
    for donor in donors:
        ordered = same_language_first(rest, donor.lang, rng)
        count = rng.randint(*articles)
        stories.append(ordered[:count])
        briefs.append(ordered[count: count + rng.randint(*shorts)])
        rest = ordered[len(stories[-1]) + len(briefs[-1]):]
    base = datetime(2024, 3, 1, tzinfo=UTC)
    span = timedelta(days=10)
    titles = [p.title for p in pool]
    for donor, own, own_briefs in zip(donors, stories, briefs, strict=True):
        host = f"www.{slug(donor.site_key)}.example"
        for page in own:
            cluster, url = f"site-{page.name}", f"https://{host}/article/{slug(page.name)}"
            t0 = base + span * rng.random()
            html = in_template(donor, page.paragraphs, page.title)
            if html is None:
                continue
            units = article_units(page)
            out.emit(cluster, "original", page.name, html, url, t0, page.lang, negative="same_host_article",
                     template=donor.name, units=units)
            if rng.random() >= edited:
                continue
            kind = rng.choice(EDITS)
            when = t0 + timedelta(hours=rng.uniform(1, 72))
            if kind == "site_recrawl":
                edit: str | None = recrawl_html(html, rng, titles, when)
                where = f"{url}?ref=home&ts={rng.randint(1, 10**6)}"
            elif kind == "site_light_edit":
                changed, kept = light_edit_kept(list(page.paragraphs), rng)
                edit, units = in_template(donor, changed, page.title), article_units(page, kept)
                where = f"{url}-{rng.randint(2, 9)}"
            else:
                edit = in_template(donor, [update_line(page, when), *words_changed(list(page.paragraphs), rng)],
                                   page.title)
                where = url
            if edit is not None:
                out.emit(cluster, kind, page.name, edit, where, when, page.lang, negative="same_host_article",
                         template=donor.name, units=units)
        for number, source in enumerate(own_briefs):
            body = short_body(source, rng)
            title = " ".join(body[0].split()[:6])
            html = in_template(donor, body, title)
            if html is not None:
                out.emit(f"short-{host}-{number}", "short_page", source.name, html,
                         f"https://{host}/brief/{number}-{slug(title)[:30]}", base + span * rng.random(),
                         source.lang, negative="short_page", template=donor.name,
                         units=[f"short-{host}-{number}:0"])
