"""The 'web' family: a cross-site crawl.

Per article a gold cluster of the pages a crawl would see: the original, a re-crawl with changed
boilerplate, syndicated copies inside *other sites' real templates*, light edits, a print/AMP
version and a teaser. Hard negatives are singletons: another article inside a template that also
carries a cluster's article ('same_template'), and very short generated notices four to a template
('short')."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

from streamdedup.evaluate.pages import SourcePage
from streamdedup.evaluate.sets import LabelledSet, article_units, bucket, host_of, slug
from streamdedup.evaluate.surgery import (
    in_template,
    light_edit_kept,
    own_page,
    print_version,
    recrawl,
    short_text,
    teaser,
)

VARIANTS = ("recrawl", "syndicated", "syndicated2", "light_edit", "print", "teaser")


def build_web(pool: list[SourcePage], templates: list[SourcePage], rng: random.Random,
              out: LabelledSet) -> None:
    """pool: the split's distinct articles of this family; templates: those usable as a template."""
    donors = [p for p in pool if bucket(p.name, "donor") < 0.2]
    articles = [p for p in pool if p not in donors]
    base = datetime(2024, 3, 1, tzinfo=UTC)
    for index, page in enumerate(articles):
        cluster, host = f"c-{page.name}", host_of(page)
        story = f"https://{host}/story/{slug(page.name)}"
        t0 = base + timedelta(hours=6 * index)
        units = article_units(page)
        out.emit(cluster, "original", page.name, own_page(page), story, t0, page.lang, units=units)
        others = [t for t in templates if t.name != page.name and t.site_key != page.site_key]
        if rng.random() < 0.15 or len(others) < 4:
            continue
        paragraphs = list(page.paragraphs)
        for variant in rng.sample(VARIANTS, rng.randint(2, 4)):
            when = t0 + timedelta(hours=rng.uniform(-8, 240))
            template = rng.choice(others)
            there = host_of(template)
            held = units  # the gold units this copy holds
            if variant == "recrawl":
                html: str | None = recrawl(page, rng, others, when)
                url = f"{story}?utm_source=feed&ts={rng.randint(1, 10**6)}"
            elif variant.startswith("syndicated"):
                html = in_template(template, paragraphs, page.title)
                url = f"https://{there}/wire/{slug(page.name)}"
            elif variant == "light_edit":
                edited, kept = light_edit_kept(paragraphs, rng)
                html, held = in_template(template, edited, page.title + " (updated)"), article_units(page, kept)
                url = f"https://{there}/news/{slug(page.name)}-edited"
            elif variant == "print":
                html = print_version(page, paragraphs)
                url = f"https://{host}/amp/{slug(page.name)}"
            else:
                if page.words < 300:
                    continue
                opening = teaser(paragraphs, rng)
                html, held = in_template(template, opening, page.title), units[: len(opening) - 1]
                url = f"https://{there}/teaser/{slug(page.name)}"
            if html is not None:
                out.emit(cluster, variant.rstrip("2"), page.name, html, url, when, page.lang,
                         template=template.name if url.startswith(f"https://{there}/") else None, units=held)

    span = 6 * max(1, len(articles))
    negatives: list[int] = []

    def negative(kind: str, source: SourcePage, template: SourcePage, paragraphs: list[str], title: str,
                 path: str, units: list[str] | None = None) -> None:
        """A singleton: `paragraphs` inside `template`, at a random time of the crawl.

        Its units are its article's, else one of its own."""
        html = in_template(template, paragraphs, title)
        if html is not None:
            cluster = f"neg-{out.split}-{len(negatives)}"
            out.emit(cluster, kind, source.name, html,
                     f"https://{host_of(template)}/{path}", base + timedelta(hours=rng.uniform(0, span)),
                     source.lang, negative=kind, template=template.name, units=units or [f"{cluster}:0"])
            negatives.append(1)

    for donor in donors:  # another article inside a template that also carries a cluster
        candidates = [t for t in templates if t.site_key != donor.site_key]
        if candidates:
            negative("same_template", donor, rng.choice(candidates), list(donor.paragraphs), donor.title,
                     f"other/{slug(donor.name)}", article_units(donor))
    short_templates = min(4, len(templates), max(1, len(articles) // 8))
    for template in rng.sample(templates, short_templates):  # very short pages, 4 per template
        for _ in range(4):
            title, text = short_text(rng)
            negative("short", template, template, text, title, f"brief/{len(negatives)}")
