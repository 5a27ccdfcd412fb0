"""The 'reuse' family.

Pages that share text with an earlier page in one direction only, for directional scoring
(`evaluate/directional.py`): is a `duplicate_of` edge safe to drop?

A cross-site crawl of real templates (one host per donor site, most seen 2-4 times, so many
pairs meet a site's first pages), every article inside another site's template, every page
labelled with the gold content units it holds (`units`: '<article>:<paragraph>'). Kinds (the
`variant` field), each group of pages in fetch order:

- paginated: `?page=1` and `?page=2` (each 35-65 % of the paragraphs) and the view-all page, the
  parts first (`part_first` x2, then `full_after_part`) or the full page first (`full_first`, then
  `part_after_full` x2); one gold cluster;
- follow-ups: an article, then a page reusing its first 55-75 % of paragraphs and going on with
  another article's paragraphs (`followup_same_site` / `followup_other_site`: its own cluster);
- `paragraphs_replaced`: an article with 20-35 % of its paragraphs replaced by other text, on the
  same site or another (its own cluster);
- light edits that are duplicates, on the article's site, at the same or a new URL, on short
  (80-400 words) and long articles: `words_changed_*` (1-8 words), `update_line_*`,
  `correction_*`, `sentence_appended_*` (one short sentence), `*` = short or long; some before
  their original;
- undated re-crawls of one URL (no `id`, no `fetched_at`): `undated_original`, then `undated_same`
  (the same page), `undated_words_changed` (a few words: a duplicate) or
  `undated_paragraph_replaced` (one paragraph replaced: not a duplicate, its own cluster);
- negatives: `short_brief` (three briefs of 10-60 words on one host's template) and
  `template_article` (many different articles in one host's template).

Not part of 'all': like 'cold' it draws from every distinct article of the split.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from streamdedup.evaluate.pages import SourcePage
from streamdedup.evaluate.sets import LabelledSet, article_units, one_donor_per_site, slug
from streamdedup.evaluate.surgery import correction_note, in_template, short_body, update_line, words_changed

LIGHT_EDITS = ("words_changed", "update_line", "correction", "sentence_appended")
SHORT_WORDS = (80, 400)  # a short article's words (80: the shortest distinct article)
MAX_PAGES_PER_HOST = 4


@dataclass(frozen=True)
class Counts:
    """How many groups of each kind one split gets."""

    paginated: int = 10  # per order
    followups: int = 10  # per site kind
    replaced: int = 16
    light_edits: int = 6  # per edit and length
    undated: int = 16
    brief_hosts: int = 6
    template_hosts: int = 2
    template_articles: tuple[int, int] = (10, 14)


@dataclass
class _Crawl:
    """The sources not yet shown, the hosts and how many pages each carries, the clock."""

    sources: list[SourcePage]
    donors: list[SourcePage]
    rng: random.Random
    out: LabelledSet
    load: dict[str, int] = field(default_factory=dict)
    spare: list[tuple[str, str]] = field(default_factory=list)  # (paragraph, unit) of sources shown nowhere
    base: datetime = datetime(2024, 9, 1, tzinfo=UTC)
    span_hours: float = 24 * 14

    def take(self, fits: Callable[[SourcePage], bool], lang: str | None = None) -> SourcePage | None:
        """A source shown nowhere else that `fits`, in `lang` if one is left."""
        found = [i for i, p in enumerate(self.sources) if fits(p)]
        same = [i for i in found if self.sources[i].lang == lang]
        return self.sources.pop((same or found)[0]) if found else None

    def host(self, article: SourcePage, pages: int, fresh: bool = True) -> SourcePage | None:
        """A donor site to carry `pages` more pages of `article`, in its language where possible.

        A site not seen yet (`fresh`, its first pages), else one with room for them."""
        room = [d for d in self.donors if d.site_key != article.site_key
                and self.load.get(d.name, 0) + pages <= MAX_PAGES_PER_HOST
                and (self.load.get(d.name, 0) == 0) == fresh]
        if not room and fresh:
            return self.host(article, pages, fresh=False)
        if not room:
            return None
        same = [d for d in room if d.lang == article.lang]
        donor = (same or room)[0]
        self.load[donor.name] = self.load.get(donor.name, 0) + pages
        return donor

    def paragraph(self, lang: str | None, words: int = 20) -> tuple[str, str] | None:
        """Another text's paragraph of at least `words` words, with its unit (never shown whole)."""
        while True:
            for i, (text, _unit) in enumerate(self.spare):
                if len(text.split()) >= words:
                    return self.spare.pop(i)
            source = self.take(lambda p: True, lang)
            if source is None:
                return None
            self.spare.extend(zip(source.paragraphs, article_units(source), strict=True))

    def start(self) -> datetime:
        return self.base + timedelta(hours=self.rng.uniform(0, self.span_hours))

    def page(self, cluster: str, variant: str, article: SourcePage, donor: SourcePage, paragraphs: list[str],
             title: str, url: str, when: datetime, units: list[str], *, negative: str | None = None,
             undated: bool = False, **extra: object) -> bool:
        html = in_template(donor, paragraphs, title)
        if html is None:
            return False
        self.out.emit(cluster, variant, article.name, html, url, when, article.lang, negative=negative,
                      template=donor.name, undated=undated, units=list(units), **extra)
        return True


def _story_url(donor: SourcePage, article: SourcePage) -> str:
    return f"https://www.{slug(donor.site_key)}.example/article/{slug(article.name)}"


def _share(count: int, low: float, high: float, rng: random.Random) -> int | None:
    """A number of paragraphs between `low` and `high` of `count` (None: no whole number fits)."""
    options = range(max(1, math.ceil(low * count)), min(count - 1, math.floor(high * count)) + 1)
    return rng.choice(options) if options else None


def _paginated(crawl: _Crawl, parts_first: bool) -> None:
    article = crawl.take(lambda p: len(p.paragraphs) >= 4 and p.words >= 150)
    if article is None:
        return
    donor = crawl.host(article, 3)
    split = _share(len(article.paragraphs), 0.35, 0.65, crawl.rng)
    if donor is None or split is None:
        return
    paragraphs, units = list(article.paragraphs), article_units(article)
    url, cluster, t0 = _story_url(donor, article), f"reuse-{article.name}", crawl.start()
    parts = [(paragraphs[:split], units[:split]), (paragraphs[split:], units[split:])]
    full = ("full_after_part" if parts_first else "full_first", paragraphs, units, url, article.title)
    pages = [("part_first" if parts_first else "part_after_full", texts, held, f"{url}?page={n + 1}",
              f"{article.title} ({n + 1}/2)") for n, (texts, held) in enumerate(parts)]
    ordered = [*pages, full] if parts_first else [full, *pages]
    for n, (variant, texts, held, where, title) in enumerate(ordered):
        crawl.page(cluster, variant, article, donor, texts, title, where, t0 + timedelta(minutes=30 * n), held)


def _followup(crawl: _Crawl, same_site: bool) -> None:
    article = crawl.take(lambda p: len(p.paragraphs) >= 4)
    if article is None:
        return
    other = crawl.take(lambda p: p.words >= 80, article.lang)
    reused = _share(len(article.paragraphs), 0.55, 0.75, crawl.rng)
    donor = crawl.host(article, 2 if same_site else 1)
    there = donor if same_site else crawl.host(article, 1, fresh=False)
    if other is None or reused is None or donor is None or there is None:
        return
    t0 = crawl.start()
    if not crawl.page(f"reuse-{article.name}", "original", article, donor, list(article.paragraphs),
                      article.title, _story_url(donor, article), t0, article_units(article)):
        return
    reused_words = sum(len(p.split()) for p in article.paragraphs[:reused])
    target, added, count = reused_words * crawl.rng.uniform(0.5, 1.0), 0, 0
    for paragraph in other.paragraphs:  # the story goes on with other text
        if added >= target:
            break
        added, count = added + len(paragraph.split()), count + 1
    variant = "followup_same_site" if same_site else "followup_other_site"
    crawl.page(f"reuse-followup-{article.name}", variant, article, there,
               [*article.paragraphs[:reused], *other.paragraphs[:count]], f"{article.title}: what happened next",
               f"{_story_url(there, article)}-follow-up", t0 + timedelta(hours=crawl.rng.uniform(2, 48)),
               [*article_units(article)[:reused], *article_units(other)[:count]], negative="followup")


def _replaced(crawl: _Crawl, same_site: bool) -> None:
    article = crawl.take(lambda p: len(p.paragraphs) >= 3)
    if article is None:
        return
    count = _share(len(article.paragraphs), 0.2, 0.35, crawl.rng)
    donor = crawl.host(article, 2 if same_site else 1)
    there = donor if same_site else crawl.host(article, 1, fresh=False)
    if count is None or donor is None or there is None:
        return
    t0 = crawl.start()
    paragraphs, units = list(article.paragraphs), article_units(article)
    if not crawl.page(f"reuse-{article.name}", "original", article, donor, paragraphs, article.title,
                      _story_url(donor, article), t0, units):
        return
    texts, held = list(paragraphs), list(units)
    for index in sorted(crawl.rng.sample(range(len(paragraphs)), count)):
        replacement = crawl.paragraph(article.lang, 10)
        if replacement is None:
            return
        texts[index], held[index] = replacement
    crawl.page(f"reuse-replaced-{article.name}", "paragraphs_replaced", article, there, texts, article.title,
               f"{_story_url(there, article)}-rewritten", t0 + timedelta(hours=crawl.rng.uniform(1, 72)), held,
               negative="paragraphs_replaced")


def _sentence(crawl: _Crawl, lang: str | None) -> str | None:
    found = crawl.paragraph(lang, 10)
    if found is None:
        return None
    words = found[0].split()
    return " ".join(words[: crawl.rng.randint(6, min(14, len(words)))]).rstrip(".,;:") + "."


def _light_edit(crawl: _Crawl, edit: str, short: bool) -> None:
    low, high = SHORT_WORDS
    article = crawl.take(lambda p: low <= p.words <= high if short else p.words > high)
    if article is None:
        return
    donor = crawl.host(article, 2)
    if donor is None:
        return
    t0, url, rng = crawl.start(), _story_url(donor, article), crawl.rng
    paragraphs, units = list(article.paragraphs), article_units(article)
    later = t0 + timedelta(hours=rng.uniform(0.5, 48))
    if edit == "words_changed":
        edited = words_changed(paragraphs, rng)
    elif edit == "update_line":
        edited = [update_line(article, later), *paragraphs]
    elif edit == "correction":
        edited = [*paragraphs, correction_note(article, paragraphs, rng)]
    else:
        sentence = _sentence(crawl, article.lang)
        if sentence is None:
            return
        edited = [*paragraphs, sentence]
    same_url = rng.random() < 0.5
    where = url if same_url else f"{url}-{rng.randint(2, 9)}"
    edit_first = rng.random() < 0.25  # the edited page may be crawled before the original
    cluster, variant = f"reuse-{article.name}", f"{edit}_{'short' if short else 'long'}"
    crawl.page(cluster, "original", article, donor, paragraphs, article.title, url,
               later if edit_first else t0, units, same_url=None)
    crawl.page(cluster, variant, article, donor, edited, article.title, where, t0 if edit_first else later, units,
               same_url=same_url)


def _undated(crawl: _Crawl) -> None:
    article = crawl.take(lambda p: len(p.paragraphs) >= 4 and p.words >= 120)
    if article is None:
        return
    donor = crawl.host(article, 3)
    if donor is None:
        return
    rng, url, t0 = crawl.rng, _story_url(donor, article), crawl.start()
    paragraphs, units = list(article.paragraphs), article_units(article)
    cluster = f"reuse-{article.name}"
    crawl.page(cluster, "undated_original", article, donor, paragraphs, article.title, url, t0, units, undated=True)
    kinds = rng.sample(("undated_same", "undated_words_changed", "undated_paragraph_replaced"), rng.randint(1, 2))
    for n, kind in enumerate(kinds):
        when = t0 + timedelta(hours=6 * (n + 1))
        if kind == "undated_same":
            crawl.page(cluster, kind, article, donor, paragraphs, article.title, url, when, units, undated=True)
        elif kind == "undated_words_changed":
            crawl.page(cluster, kind, article, donor, words_changed(paragraphs, rng, 1, 4), article.title, url,
                       when, units, undated=True)
        else:
            long_ones = [i for i, p in enumerate(paragraphs) if len(p.split()) >= 15] or list(range(len(paragraphs)))
            index = rng.choice(long_ones)
            replacement = crawl.paragraph(article.lang, 15)
            if replacement is None:
                return
            texts, held = list(paragraphs), list(units)
            texts[index], held[index] = replacement
            crawl.page(f"reuse-undated-{article.name}-{n}", kind, article, donor, texts, article.title, url, when,
                       held, negative=kind, undated=True)


def _briefs(crawl: _Crawl, number: int) -> None:
    first = crawl.take(lambda p: True)
    if first is None:
        return
    donor = crawl.host(first, 3)
    if donor is None:
        return
    t0 = crawl.start()
    for n, source in enumerate((first, crawl.take(lambda p: True, first.lang), crawl.take(lambda p: True, first.lang))):
        if source is None:
            return
        body = short_body(source, crawl.rng)
        title = " ".join(body[0].split()[:6])
        cluster = f"reuse-brief-{crawl.out.split}-{number}-{n}"
        crawl.page(cluster, "short_brief", source, donor, body, title,
                   f"https://www.{slug(donor.site_key)}.example/brief/{n}-{slug(title)[:30]}",
                   t0 + timedelta(minutes=20 * n), [f"{cluster}:0"], negative="short_brief")


def _template_host(crawl: _Crawl, articles: int) -> None:
    first = crawl.take(lambda p: p.words >= 80)
    donors = [d for d in crawl.donors if not crawl.load.get(d.name) and first is not None
              and d.site_key != first.site_key]
    if first is None or not donors:
        return
    donor = next((d for d in donors if d.lang == first.lang), donors[0])
    crawl.load[donor.name] = articles
    source: SourcePage | None = first
    for _ in range(articles):
        if source is None:
            return
        crawl.page(f"reuse-{source.name}", "template_article", source, donor, list(source.paragraphs), source.title,
                   _story_url(donor, source), crawl.start(), article_units(source), negative="template_article")
        source = crawl.take(lambda p: p.words >= 80 and p.site_key != donor.site_key, donor.lang)


def build_reuse(pool: list[SourcePage], templates: list[SourcePage], rng: random.Random, out: LabelledSet,
                counts: Counts | None = None) -> None:
    """pool: every distinct article of the split; templates: those usable as a template."""
    counts = counts or Counts()
    donors = one_donor_per_site(templates, rng)
    sources = sorted(pool, key=lambda p: p.name)
    rng.shuffle(sources)
    crawl = _Crawl(sources, donors, rng, out)
    for _ in range(counts.template_hosts):  # first: they want many articles of one language
        _template_host(crawl, rng.randint(*counts.template_articles))
    for _ in range(counts.light_edits):
        for edit in LIGHT_EDITS:
            _light_edit(crawl, edit, short=True)
            _light_edit(crawl, edit, short=False)
    for _ in range(counts.paginated):
        _paginated(crawl, parts_first=True)
        _paginated(crawl, parts_first=False)
    for _ in range(counts.followups):
        _followup(crawl, same_site=True)
        _followup(crawl, same_site=False)
    for n in range(counts.replaced):
        _replaced(crawl, same_site=n % 2 == 0)
    for _ in range(counts.undated):
        _undated(crawl)
    for number in range(counts.brief_hosts):
        _briefs(crawl, number)
