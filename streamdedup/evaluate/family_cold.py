"""The 'cold' family: sites seen only two or three times, so no site's template is ever known.

A crawl of many sites has few pages of most of them: a site's first pages are judged before its
template can be learned (the template model's cold start, docs/template-model.md). Per host (one
real page's template, one host per donor site), its only pages, in fetch order:

- 'briefs' hosts: three short pages of 10-60 words of real text, each a different brief
  ('cold_short' negatives: the leaked template is most of each page's text);
- 'articles' hosts: two different stories in the template ('cold_article' negatives);
- 'revision' hosts: a story, then one revision of it as the feed family makes them (an update line,
  a correction, a paragraph appended, a changed headline, 1-8 words changed: `cold_<kind>`), at a
  new URL or the same one, and for some a bare print page (`cold_print`).

Not part of 'all': it reuses the split's pages, so merged with the other families it would add
unlabelled duplicates. Its pool is every distinct article of the split.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

from streamdedup.evaluate.family_feed import APPENDED_WORDS, REVISIONS, revise, revised_units
from streamdedup.evaluate.pages import SourcePage
from streamdedup.evaluate.sets import LabelledSet, article_units, one_donor_per_site, slug
from streamdedup.evaluate.surgery import in_template, print_version, short_body

HOST_KINDS = ("briefs", "articles", "revision", "revision")  # revisions twice: the positives


def build_cold(pool: list[SourcePage], templates: list[SourcePage], rng: random.Random, out: LabelledSet,
               hosts: int = 80) -> None:
    """Add the 'cold' family to `out`: `hosts` hosts of two or three pages each, in a donor's template."""
    donors = one_donor_per_site(templates, rng)
    sources = sorted(pool, key=lambda p: p.name)
    rng.shuffle(sources)
    base = datetime(2024, 6, 1, tzinfo=UTC)

    def take(donor: SourcePage, words: tuple[int, int] = (0, 10**9)) -> SourcePage | None:
        """A source shown nowhere else, from another site, in the donor's language if any is left."""
        fits = [i for i, p in enumerate(sources) if p.site_key != donor.site_key and words[0] <= p.words <= words[1]]
        same = [i for i in fits if sources[i].lang == donor.lang]
        return sources.pop((same or fits)[0]) if fits else None

    for number, donor in enumerate(donors[:hosts]):
        kind = HOST_KINDS[number % len(HOST_KINDS)]
        host = f"www.{slug(donor.site_key)}.example"
        when = base + timedelta(hours=6 * number)
        if kind == "briefs":
            for n in range(3):
                source = take(donor)
                if source is None:
                    return
                body = short_body(source, rng)
                title = " ".join(body[0].split()[:6])
                html = in_template(donor, body, title)
                if html is not None:
                    brief = f"cold-brief-{out.split}-{number}-{n}"
                    out.emit(brief, "cold_short", source.name, html,
                             f"https://{host}/brief/{n}-{slug(title)[:30]}", when + timedelta(minutes=10 * n),
                             source.lang, negative="cold_short", template=donor.name, units=[f"{brief}:0"])
            continue
        if kind == "articles":
            for n in range(2):
                source = take(donor, (70, 1500))
                if source is None:
                    return
                html = in_template(donor, source.paragraphs, source.title)
                if html is not None:
                    out.emit(f"cold-article-{source.name}", "cold_article", source.name, html,
                             f"https://{host}/article/{slug(source.name)}", when + timedelta(minutes=10 * n),
                             source.lang, negative="cold_article", template=donor.name,
                             units=article_units(source))
            continue
        source = take(donor, (70, 1500))
        if source is None:
            return
        cluster, url = f"cold-{source.name}", f"https://{host}/article/{slug(source.name)}"
        paragraphs = list(source.paragraphs)
        html = in_template(donor, paragraphs, source.title)
        if html is None:
            continue
        units = article_units(source)
        out.emit(cluster, "original", source.name, html, url, when, source.lang, template=donor.name, units=units)
        revision = rng.choice(REVISIONS)
        later = when + timedelta(hours=rng.uniform(1, 48))
        # an appended paragraph is a paragraph: another story's first of 20 words or more, as in the
        # feed (a first line at any length was a heading, "Highlights", labelled new content)
        spare = [_first_paragraph(take(donor) or source)]
        title, revised = revise(revision, source, source.title, paragraphs, later, spare, rng)
        edited = in_template(donor, revised, title)
        if edited is not None:
            where = url if rng.random() < 0.5 else f"{url}-{rng.randint(2, 9)}"
            out.emit(cluster, f"cold_{revision}", source.name, edited, where, later, source.lang,
                     template=donor.name, units=revised_units(revision, units, paragraphs, revised))
        if rng.random() < 0.3:
            out.emit(cluster, "cold_print", source.name, print_version(source, paragraphs),
                     f"https://{host}/print/{slug(source.name)}", later + timedelta(minutes=5), source.lang,
                     units=units)


def _first_paragraph(page: SourcePage) -> str:
    """The page's first paragraph of `APPENDED_WORDS` words or more (else its longest): what a revision appends."""
    longest = max(page.paragraphs, key=lambda p: len(p.split()), default="")
    return next((p for p in page.paragraphs if len(p.split()) >= APPENDED_WORDS), longest)
