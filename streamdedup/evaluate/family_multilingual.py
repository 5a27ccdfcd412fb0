"""The 'multilingual' family.

A crawl in Chinese, Russian, Vietnamese and Tibetan, and in Thai, Lao, Khmer and Myanmar (from the
declaration alone: few articles each), built from real text in those languages
(`evaluate/multilingual.py`) as the web and site families are built from the shared pages. Per
language, on hosts of that language only:

- positives, one gold cluster per article: the original (its own real page, or a page of the
  language's 'home' host in that host's template), a re-crawl (boilerplate changed), copies inside
  other real pages' templates ('syndicated'), light edits (2-5 % of the words, or of the characters
  and syllables in Chinese and Tibetan), a teaser (the first 50-65 %), two paragraphs swapped
  ('paragraph_swap') and a bare print page;
- follow-ups of about a sixth of the articles: the first 55-75 % of its paragraphs, then another
  article's, in another site's template ('followup': its own cluster, a negative);
- hard negatives: another article in a template that also carries a cluster ('same_template'),
  the home host's many different articles ('same_host_article'), and short pages of 10-60 words of
  real text shown nowhere else, on the home host ('short_page') or in other templates ('short').
"""

from __future__ import annotations

import math
import random
from datetime import UTC, datetime, timedelta

from streamdedup.evaluate.multilingual import LANGUAGES  # built in this order: th, lo, km, my came later
from streamdedup.evaluate.pages import SourcePage
from streamdedup.evaluate.sets import LabelledSet, article_units, slug
from streamdedup.evaluate.sets import host_of as shared_host
from streamdedup.evaluate.surgery import (
    in_template,
    light_edit_kept,
    own_page,
    print_version,
    recrawl_html,
    short_body,
    teaser,
)

VARIANTS = ("recrawl", "syndicated", "syndicated2", "light_edit", "print", "teaser", "paragraph_swap")
MORE = {"zh": "阅读全文请访问合作网站。", "ru": "Продолжение читайте на сайте нашего партнёра.",
        "vi": "Đọc tiếp toàn bộ bài viết trên trang của đối tác.", "bo": "ལྷག་མ་རོགས་ཚོགས་ཀྱི་དྲ་ཚིགས་སུ་ཀློག་རོགས།",
        "th": "อ่านต่อได้ที่เว็บไซต์ของพันธมิตรของเรา", "lo": "ອ່ານຕໍ່ໄດ້ທີ່ເວັບໄຊຂອງຄູ່ຮ່ວມງານຂອງພວກເຮົາ",
        "km": "អានបន្តនៅលើគេហទំព័ររបស់ដៃគូយើង", "my": "ကျန်ရှိသည်ကို ကျွန်ုပ်တို့၏ မိတ်ဖက် ဝက်ဘ်ဆိုက်တွင် ဆက်ဖတ်ပါ"}


def host_of(page: SourcePage) -> str:
    """A page's own site; for these sources one per language (translations are different sites)."""
    return f"{slug(f'{page.lang}-{page.site_key}')}.example" if page.corpus == "multilingual" else shared_host(page)


def paragraph_swap(paragraphs: list[str], rng: random.Random) -> list[str]:
    """Two neighbouring paragraphs in the other order."""
    out = list(paragraphs)
    if len(out) >= 2:
        i = rng.randrange(len(out) - 1)
        out[i], out[i + 1] = out[i + 1], out[i]
    return out


def build_multilingual(pool: list[SourcePage], templates: list[SourcePage], rng: random.Random,
                       out: LabelledSet) -> None:
    """Build the 'multilingual' family from the split's articles and templates.

    pool: the split's distinct articles in the four languages; templates: pages of the split
    usable as a template (any language)."""
    base = datetime(2024, 3, 1, tzinfo=UTC)
    for number, lang in enumerate(LANGUAGES):
        pages = [p for p in pool if p.lang == lang]
        if len(pages) < 4:
            continue
        _build_language(lang, pages, templates, rng, out, base + timedelta(days=20 * number))
    _followups(pool, templates, rng, out)  # after every language: the pages drawn before stay as they were


def _followups(pool: list[SourcePage], templates: list[SourcePage], rng: random.Random, out: LabelledSet,
               share: float = 1 / 6) -> None:
    """Follow-ups in another site's template for about `share` of each language's clusters.

    For about `share` of each language's clusters (articles of >= 4 paragraphs): a follow-up in
    another site's template, reusing the first 55-75 % of the article's paragraphs and going on
    with another article's of the language (`followup`, its own cluster: not a duplicate)."""
    by_name = {p.name: p for p in pool}
    originals = sorted((r for r in out.records if r["variant"] == "original"), key=lambda r: r["id"])
    for lang in LANGUAGES:
        shown = [r for r in originals if r["lang"] == lang and len(by_name[r["source_page"]].paragraphs) >= 4]
        others = sorted((p for p in pool if p.lang == lang), key=lambda p: p.name)
        for record in rng.sample(shown, round(len(shown) * share)):
            page = by_name[record["source_page"]]
            n = len(page.paragraphs)
            reused = rng.randint(math.ceil(0.55 * n), min(n - 1, math.floor(0.75 * n)))
            rest = [p for p in others if p is not page]
            templates_there = [t for t in templates if t.site_key != page.site_key]
            if not rest or not templates_there or reused < 1:
                continue
            other, template = rng.choice(rest), rng.choice(templates_there)
            seg = page.segmenter
            target = sum(seg.count(p) for p in page.paragraphs[:reused]) * rng.uniform(0.5, 1.0)
            count, added = 0, 0
            while count < len(other.paragraphs) and added < target:
                added, count = added + seg.count(other.paragraphs[count]), count + 1
            html = in_template(template, [*page.paragraphs[:reused], *other.paragraphs[:count]], page.title)
            if html is None:
                continue
            when = datetime.fromisoformat(record["fetched_at"].replace("Z", "+00:00")) + timedelta(
                hours=rng.uniform(2, 72))
            out.emit(f"ml-followup-{page.name}", "followup", page.name, html,
                     f"https://{host_of(template)}/followup/{slug(page.name)}", when, lang, negative="followup",
                     template=template.name,
                     units=[*article_units(page, range(reused)), *article_units(other, range(count))])


def _build_language(lang: str, pages: list[SourcePage], templates: list[SourcePage], rng: random.Random,
                    out: LabelledSet, base: datetime) -> None:
    pages = list(pages)
    rng.shuffle(pages)
    own_language = [t for t in templates if t.lang == lang and t in pages]
    home = own_language[0] if own_language else None  # the language's one big site, in this page's template
    if home is not None:
        pages.remove(home)
    donors = pages[: len(pages) // 8]  # articles shown once, in a template that carries a cluster
    briefs = pages[len(donors): len(donors) + max(1, len(pages) // 5)]  # each the source of one short page
    articles = pages[len(donors) + len(briefs):]
    home_host = f"www.{lang}-{slug(home.site_key)}.example" if home is not None else None
    span = timedelta(hours=6 * max(1, len(articles)))
    used: list[SourcePage] = []  # templates that carry a cluster's page
    for index, page in enumerate(articles):
        seg = page.segmenter
        cluster = f"ml-{page.name}"
        t0 = base + timedelta(hours=6 * index)
        paragraphs = list(page.paragraphs)
        if home is not None and index % 3 == 0:  # an article of the home host
            html = in_template(home, paragraphs, page.title)
            story = f"https://{home_host}/article/{slug(page.name)}"
            where: tuple[str, str | None, str | None] = (home_host or "", home.name, "same_host_article")
        else:
            html = own_page(page)
            story = f"https://{host_of(page)}/story/{slug(page.name)}"
            where = (host_of(page), None, None)
        if html is None:
            continue
        host, template_name, article_negative = where
        units = article_units(page)
        out.emit(cluster, "original", page.name, html, story, t0, lang, negative=article_negative,
                 template=template_name, units=units)
        others = [t for t in templates if t.site_key != page.site_key and t is not home]
        if len(others) < 4:
            continue
        for variant in rng.sample(VARIANTS, rng.randint(2, 4)):
            when = t0 + timedelta(hours=rng.uniform(-8, 240))
            template = rng.choice(others)
            copy_url = f"https://{host_of(template)}/{variant}/{slug(page.name)}"
            carrier: SourcePage | None = template
            held = units  # the gold units this copy holds
            if variant == "recrawl":
                variant_html: str | None = recrawl_html(html, rng, [t.title for t in others], when)
                copy_url, carrier = f"{story}?utm_source=feed&ts={rng.randint(1, 10**6)}", None
            elif variant.startswith("syndicated"):
                variant_html = in_template(template, paragraphs, page.title)
            elif variant == "light_edit":
                edited, kept = light_edit_kept(paragraphs, rng, seg)
                variant_html, held = in_template(template, edited, page.title), article_units(page, kept)
            elif variant == "paragraph_swap":
                if len(paragraphs) < 3:
                    continue
                variant_html = in_template(template, paragraph_swap(paragraphs, rng), page.title)
            elif variant == "print":
                variant_html = print_version(page, paragraphs)
                copy_url, carrier = f"https://{host}/print/{slug(page.name)}", None
            else:
                if page.words < 300:
                    continue
                opening = teaser(paragraphs, rng, seg, MORE[lang])
                variant_html, held = in_template(template, opening, page.title), units[: len(opening) - 1]
            if variant_html is not None:
                out.emit(cluster, variant.rstrip("2"), page.name, variant_html, copy_url, when, lang,
                         negative=article_negative if carrier is None else None,
                         template=carrier.name if carrier is not None else template_name, units=held)
                if carrier is not None:
                    used.append(carrier)
    used = sorted(set(used), key=lambda t: t.name) or [t for t in templates if t is not home]
    if not used:
        return
    count = 0

    def negative(kind: str, source: SourcePage, template: SourcePage, paragraphs: list[str], title: str,
                 url: str, units: list[str] | None = None) -> None:
        nonlocal count
        html = in_template(template, paragraphs, title)
        if html is not None:
            cluster = f"neg-{out.split}-{lang}-{count}"
            out.emit(cluster, kind, source.name, html, url, base + span * rng.random(),
                     lang, negative=kind, template=template.name, units=units or [f"{cluster}:0"])
            count += 1

    for donor in donors:
        template = rng.choice([t for t in used if t.site_key != donor.site_key] or used)
        negative("same_template", donor, template, list(donor.paragraphs), donor.title,
                 f"https://{host_of(template)}/other/{slug(donor.name)}", article_units(donor))
    for number, source in enumerate(briefs):  # half on the home host, half in templates carrying a cluster
        body = short_body(source, rng)
        title = source.segmenter.join(source.segmenter.split(body[0])[:6])
        if home is not None and number % 2 == 0:
            negative("short_page", source, home, body, title, f"https://{home_host}/brief/{number}")
        else:
            template = rng.choice(used)
            negative("short", source, template, body, title, f"https://{host_of(template)}/brief/{number}")
