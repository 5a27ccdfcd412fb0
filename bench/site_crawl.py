"""The crawls `bench/e2e.py --site-crawl` times: sites a crawl keeps visiting, and sites seen a few times.

Site crawl (`build_site_crawl`): `sites` real page templates (one real page of each of that many
sites of ../shared/data, its article swapped out as the 'site' family does), each hosting a number
of pages that follows a Zipf law over the sites' ranks (`zipf_sizes`: from `largest` down to
`smallest`, `pages` in all). Every page carries a different article: the articles are the main
texts of readability's and trafilatura's test pages, cut into runs of consecutive paragraphs of
about `words` words (`article_parts`: one source article of 1,200 words gives four), so no two
share a paragraph. One page in ten is a re-crawl: the same URL and the same article, fetched 1 to
72 hours later, half of them with changed boilerplate (a time stamp, an ad slot, related stories:
`surgery.recrawl_html`), half byte for byte the same page. The biggest site is redesigned halfway:
its pages from the middle of its crawl on (re-crawls included) are in another real site's
template. Fetch times are spread over ten days, so the sites interleave as in a crawl. Same
`seed`, same crawl, byte for byte.

Cross-site crawl (`build_cross_site`): the labelled 'web' family (`streamdevset --family web`):
articles seen a few times on their own site and in other sites' templates.

Every record carries its gold: `cluster` (the article: pages of one cluster are duplicates,
pages of two clusters never are) and `variant` ('original', 'recrawl', or the web family's kinds),
and a re-crawl its `recrawl_of` (the id of the page it fetches again). `score` reads the command's
verdicts.jsonl against it.
"""

from __future__ import annotations

import math
import random
import sys
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
ARCHIVES = (SHARED / "readability-test-pages.tar.gz", SHARED / "trafilatura-test-pages.tar.gz")


def zipf_sizes(sites: int, pages: int, largest: int, smallest: int) -> list[int]:
    """Pages per site by rank, size(k) = A / (k + q) ** s (Zipf-Mandelbrot), with size(1) =
    `largest`, size(sites) = `smallest` and about `pages` in all (q found by bisection; q = 0 is
    the plain Zipf law, taken when even it gives more than `pages`)."""
    def sizes(q: float) -> list[float]:
        s = math.log(largest / smallest) / math.log((sites + q) / (1 + q))
        return [largest * ((1 + q) / (k + q)) ** s for k in range(1, sites + 1)]

    low, high = 0.0, 1000.0
    if sum(sizes(low)) < pages:
        for _ in range(60):
            mid = (low + high) / 2
            low, high = (mid, high) if sum(sizes(mid)) < pages else (low, mid)
    return [max(1, round(size)) for size in sizes(low)]


def article_parts(source: Any, words: int) -> list[tuple[str, tuple[str, ...]]]:
    """(title, paragraphs) of the runs of consecutive paragraphs of one article, about `words`
    words each (at least one run; the title of a later run is its own first words)."""
    count = source.segmenter.count
    total = sum(count(p) for p in source.paragraphs)
    runs = max(1, total // words)
    cut = total / runs
    parts: list[list[str]] = [[]]
    held = 0
    for paragraph in source.paragraphs:
        if held >= cut * len(parts) and len(parts) < runs:
            parts.append([])
        parts[-1].append(paragraph)
        held += count(paragraph)
    titled = [(source.title, tuple(parts[0]))]
    for part in parts[1:]:
        titled.append((" ".join(part[0].split()[:8]).rstrip(".,;:"), tuple(part)))
    return titled


def _templates(pages: list[Any], rng: random.Random, wanted: int) -> list[Any]:
    """`wanted` template donors of as many sites, checked lazily (the check parses each page)."""
    from streamdedup.evaluate.sets import one_donor_per_site
    from streamdedup.evaluate.surgery import stray_article_text, usable_template

    found = []
    for page in one_donor_per_site(pages, rng):
        if usable_template(page) and not stray_article_text(page):
            found.append(page)
            if len(found) == wanted:
                return found
    raise ValueError(f"only {len(found)} usable templates in the pages given, {wanted} wanted: fewer --sites")


def load_sources(archives: Iterable[Path] = ARCHIVES) -> list[Any]:
    """The distinct articles of the archives given (streamdedup.evaluate's loader)."""
    from peers import archives as existing  # bench/

    from streamdedup.evaluate.pages import load_pages
    from streamdedup.evaluate.sets import distinct_articles

    return distinct_articles(load_pages(existing(f"bench/{Path(sys.argv[0]).name}", list(archives))))


def build_site_crawl(sources: list[Any], seed: int = 60, sites: int = 40, pages: int = 1800, largest: int = 370,
                     smallest: int = 8, recrawl_share: float = 0.1, words: int = 250) -> list[dict[str, Any]]:
    """The site crawl (module docstring), in fetch order."""
    from streamdedup.evaluate.sets import slug
    from streamdedup.evaluate.surgery import in_template, recrawl_html

    rng = random.Random(f"site-crawl:{seed}")
    donors = _templates(sources, rng, sites + 1)
    donors, redesign = donors[:sites], donors[sites]
    sizes = zipf_sizes(sites, pages, largest, smallest)
    pool = [(f"{source.name}#{n}", title, body, source.lang)
            for source in sorted(sources, key=lambda s: s.name) for n, (title, body) in
            enumerate(article_parts(source, words))]
    recrawls = [max(1, round(size * recrawl_share)) for size in sizes]
    if sum(sizes) - sum(recrawls) > len(pool):
        raise ValueError(f"{len(pool)} articles for {sum(sizes) - sum(recrawls)} pages: fewer --pages or smaller parts")
    rng.shuffle(pool)
    base, span = datetime(2024, 3, 1, tzinfo=UTC), timedelta(days=10)
    titles = [title for _, title, _, _ in pool]
    records: list[dict[str, Any]] = []
    for rank, (donor, size, again) in enumerate(zip(donors, sizes, recrawls, strict=True), start=1):
        host = f"www.{slug(donor.site_key)}.example"
        by_lang: dict[str | None, list[int]] = {}
        for index, (_, _, _, lang) in enumerate(pool):
            by_lang.setdefault(lang, []).append(index)
        own = by_lang.get(donor.lang, [])[: size - again]  # one publisher, one language, as far as the pool allows
        if len(own) < size - again:
            chosen = set(own)
            own += [i for i in range(len(pool)) if i not in chosen][: size - again - len(own)]
        taken, chosen = [pool[i] for i in own], set(own)
        pool = [article for i, article in enumerate(pool) if i not in chosen]
        times = sorted(base + span * rng.random() for _ in taken)
        switch = times[len(times) // 2] if rank == 1 else None  # the biggest site is redesigned halfway

        def template_at(when: datetime, switch: datetime | None = switch, donor: Any = donor) -> Any:
            return redesign if switch is not None and when >= switch else donor

        site: list[dict[str, Any]] = []
        for (article, title, body, lang), when in zip(taken, times, strict=True):
            template = template_at(when)
            html = in_template(template, body, title)
            if html is None:
                raise ValueError(f"template {template.name} lost its article container")
            site.append({"id": f"site{rank:02d}-{len(site):04d}", "url": f"https://{host}/news/{slug(title)[:50]}-{len(site)}",
                         "content": html, "content_type": "text/html", "fetched_at": when, "lang": lang,
                         "cluster": article, "variant": "original", "host": host, "site_rank": rank,
                         "template": template.name, "redesigned": template is redesign})
        for number, first in enumerate(rng.sample(site, again)):
            when = first["fetched_at"] + timedelta(hours=rng.uniform(1, 72))
            template = template_at(when)
            html = first["content"]
            if template is not donor and not first["redesigned"]:  # fetched again after the redesign
                _, again_title, again_body, _ = next(a for a in taken if a[0] == first["cluster"])
                html = in_template(template, again_body, again_title) or html
            changed = number % 2 == 0
            if changed:
                html = recrawl_html(html, rng, rng.sample(titles, 8), when)
            site.append({**first, "id": f"site{rank:02d}-r{number:03d}", "content": html, "fetched_at": when,
                         "variant": "recrawl", "recrawl_of": first["id"], "boilerplate_changed": changed,
                         "template": template.name, "redesigned": template is redesign})
        records.extend(site)
    records.sort(key=lambda r: (r["fetched_at"], r["id"]))
    for record in records:
        record["fetched_at"] = record["fetched_at"].isoformat().replace("+00:00", "Z")
    return records


def build_cross_site(sources: list[Any], seed: int = 2024, split: str = "dev") -> list[dict[str, Any]]:
    """The 'web' family of the labelled sets (`streamdedup devset --family web`): sites seen a
    few times; with the default seed and split, /work/sets/web-dev.jsonl's pages."""
    from streamdedup.evaluate.construct import build_family

    records = build_family(sources, seed, split, "web", distinct=sources)
    originals = {r["cluster"]: r["id"] for r in records if r["variant"] == "original"}
    for record in records:
        if record["variant"] == "recrawl" and record["cluster"] in originals:
            record["recrawl_of"] = originals[record["cluster"]]
    return records


def write_crawl(records: list[dict[str, Any]], path: Path) -> None:
    """JSON Lines, gold in every record (the command passes unknown keys through)."""
    with open(path, "wb") as out:
        for record in records:
            out.write(orjson.dumps(record) + b"\n")


def read_crawl(path: Path) -> list[dict[str, Any]]:
    with open(path, "rb") as lines:
        return [orjson.loads(line) for line in lines if line.strip()]


def score(records: list[dict[str, Any]], verdicts_path: Path) -> dict[str, Any]:
    """The command's verdicts against the gold: false pairs (a page judged a duplicate of a page
    of another article), re-crawls found (judged into the cluster of the page they fetch again),
    and the pages of each variant judged duplicates."""
    gold = {r["id"]: r for r in records}
    verdicts = {}
    with open(verdicts_path, "rb") as lines:
        for line in lines:
            verdict = orjson.loads(line)
            verdicts[verdict["id"]] = verdict["dedup"]
    false_pairs = []
    duplicates_by_variant: dict[str, int] = {}
    pages_by_variant: dict[str, int] = {}
    for page_id, record in gold.items():
        pages_by_variant[record["variant"]] = pages_by_variant.get(record["variant"], 0) + 1
        verdict = verdicts.get(page_id) or {}
        target = verdict.get("duplicate_of")
        if verdict.get("status") != "duplicate" or target is None:
            continue
        duplicates_by_variant[record["variant"]] = duplicates_by_variant.get(record["variant"], 0) + 1
        if target in gold and gold[target]["cluster"] != record["cluster"]:
            false_pairs.append({"page": page_id, "duplicate_of": target, "variant": record["variant"],
                                "url": record["url"], "duplicate_of_url": gold[target]["url"]})
    recrawls = [r for r in records if r.get("recrawl_of")]
    found = [r for r in recrawls if (verdicts.get(r["id"]) or {}).get("cluster_id") is not None and
             verdicts[r["id"]]["cluster_id"] == (verdicts.get(r["recrawl_of"]) or {}).get("cluster_id")]
    missed = [r["id"] for r in recrawls if r not in found]
    return {"pages": len(records), "verdicts": len(verdicts), "false_pairs": len(false_pairs),
            "false_pair_examples": false_pairs[:10], "recrawls": len(recrawls), "recrawls_found": len(found),
            "recrawls_missed_examples": missed[:10], "duplicates_by_variant": dict(sorted(duplicates_by_variant.items())),
            "pages_by_variant": dict(sorted(pages_by_variant.items()))}


def describe(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Sites, pages per site, re-crawls, the redesign: what the crawl holds."""
    per_site: dict[str, int] = {}
    for record in records:
        per_site[record["host"]] = per_site.get(record["host"], 0) + 1
    sizes = sorted(per_site.values(), reverse=True)
    return {"pages": len(records), "sites": len(per_site), "pages_per_site_max": sizes[0] if sizes else 0,
            "pages_per_site_min": sizes[-1] if sizes else 0, "articles": len({r["cluster"] for r in records}),
            "recrawls": sum(1 for r in records if r.get("recrawl_of")),
            "recrawls_boilerplate_changed": sum(1 for r in records if r.get("boilerplate_changed")),
            "redesigned_pages": sum(1 for r in records if r.get("redesigned")),
            "avg_html_bytes": round(sum(len(r["content"]) for r in records) / max(1, len(records)))}
