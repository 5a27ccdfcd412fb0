"""A labelled near-duplicate set built *by construction* from real web pages.

Source: Mozilla's readability test pages (real pages from many sites and languages, each with
the article Readability.js extracts). Every article becomes a gold cluster of pages a crawl
would really see: the original, a re-crawl with changed boilerplate, syndicated copies inside
*other sites' real templates*, light edits, a print/AMP version and a teaser. Hard negatives are
singletons: another article inside a template that also carries a cluster's article, and very
short pages on shared templates. Articles are split into 'dev' (for tuning) and 'test' (held
out) by a hash of their name, so no article or donor is in both.

    python -m streamdedup.evaluate.construct --pages readability-test-pages.tar.gz --split dev --out dev.jsonl
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import re
import tarfile
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import lxml.html
import xxhash

BLOCKS = {"p", "li", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "blockquote", "td", "dd", "dt", "figcaption"}
MIN_WORDS = 80
_SPACE = re.compile(r"\s+")
_NAMES = ["Alder", "Brook", "Cedar", "Dune", "Elm", "Fern", "Grove", "Heath", "Iris", "Juniper", "Kestrel"]
_SHORT_TOPICS = ["Photo gallery", "Event notice", "Page moved", "Correction", "Weather alert", "Road closure",
                 "Obituary", "Opening hours", "Market update", "Match result"]
_SHORT_WORDS = ("community hall library council river bridge festival concert meeting volunteers museum "
                "harbour station garden school clinic parade market museum theatre tickets schedule "
                "residents visitors weekend evening morning annual summer winter spring autumn north "
                "south east west central county district village town city square park").split()


@dataclass(frozen=True)
class SourcePage:
    name: str
    source: str  # raw page HTML
    paragraphs: tuple[str, ...]  # the article's text blocks, from Readability's output
    title: str
    lang: str | None

    @property
    def words(self) -> int:
        return sum(len(p.split()) for p in self.paragraphs)


# -- loading ----------------------------------------------------------------------------------
def _text_blocks(html: str) -> list[str]:
    """Leaf text blocks (paragraphs, list items, headings) in document order."""
    tree = lxml.html.fromstring(html)
    blocks = []
    for element in tree.iter():
        if not isinstance(element.tag, str) or element.tag not in BLOCKS:
            continue
        if any(isinstance(d.tag, str) and d.tag in BLOCKS for d in element.iterdescendants()):
            continue
        text = _SPACE.sub(" ", element.text_content()).strip()
        if text:
            blocks.append(text)
    return blocks


def _page_from_files(name: str, source: bytes, expected: bytes, metadata: bytes | None) -> SourcePage:
    meta = json.loads(metadata) if metadata else {}
    return SourcePage(name, source.decode("utf-8", "replace"),
                    tuple(_text_blocks(expected.decode("utf-8", "replace"))),
                    meta.get("title") or name, meta.get("lang"))


def load_test_pages(path: Path) -> list[SourcePage]:
    """Read the readability test pages from the .tar.gz or an unpacked folder."""
    files: dict[str, dict[str, bytes]] = {}
    if path.is_dir():
        for source in sorted(path.rglob("source.html")):
            folder = source.parent
            files[folder.name] = {f.name: f.read_bytes() for f in folder.iterdir() if f.is_file()}
    else:
        with tarfile.open(path) as archive:
            for member in archive.getmembers():
                parts = Path(member.name).parts
                if member.isfile() and len(parts) >= 2 and "test-pages" in parts:
                    handle = archive.extractfile(member)
                    if handle is not None:
                        files.setdefault(parts[-2], {})[parts[-1]] = handle.read()
    pages = []
    for name, content in sorted(files.items()):
        if "source.html" in content and "expected.html" in content:
            pages.append(_page_from_files(name, content["source.html"], content["expected.html"],
                                          content.get("expected-metadata.json")))
    return pages


def distinct_articles(pages: list[SourcePage], max_overlap: float = 0.3) -> list[SourcePage]:
    """Long enough articles, each kept once: several test pages are variants of one text (Mozilla's
    lorem-ipsum cases) and would be unlabelled near-duplicates of each other."""
    kept: list[tuple[SourcePage, set[str]]] = []
    for page in pages:
        if page.words < MIN_WORDS:
            continue
        words = " ".join(page.paragraphs).lower().split()
        shingles = {" ".join(words[i:i + 3]) for i in range(max(1, len(words) - 2))}
        if all(len(shingles & other) / len(shingles | other) < max_overlap for _, other in kept):
            kept.append((page, shingles))
    return [page for page, _ in kept]


# -- page surgery --------------------------------------------------------------------------
def _article_node(tree: Any, page: SourcePage) -> Any | None:
    """The element of the page's source that holds its article: the lowest common ancestor of
    the source paragraphs whose text is one of the article's blocks."""
    wanted = {p for p in page.paragraphs if len(p.split()) >= 6}
    hits = [el for el in tree.iter("p")
            if _SPACE.sub(" ", el.text_content()).strip() in wanted]
    if len(hits) < 3:
        return None
    paths = [list(el.iterancestors())[::-1] + [el] for el in hits]
    common = None
    for level in zip(*paths, strict=False):  # down to the shortest path
        if all(node is level[0] for node in level):
            common = level[0]
        else:
            break
    return None if common is None or common.tag in ("html", "body") and len(hits) < 3 else common


def _strip_page_metadata(tree: Any, title: str) -> None:
    """Remove what would still describe the template's own article (JSON-LD, descriptions)."""
    for script in tree.xpath('//script[@type="application/ld+json"]'):
        script.drop_tree()
    for meta in tree.xpath('//meta[@name="description" or @property="og:description" or '
                           '@property="og:title" or @name="twitter:description"]'):
        meta.drop_tree()
    for node in tree.xpath("//title"):
        node.text = title


def _drop_template_article_remnants(tree: Any, node: Any, template: SourcePage, title: str) -> None:
    """The template's own headline, standfirst and byline live outside the article node: a real
    page would show the new article's, so they are removed (headlines get the new title)."""
    own = set(template.paragraphs)
    inside = set(node.iter())
    for element in list(tree.iter()):
        if element in inside or not isinstance(element.tag, str) or element.getparent() is None:
            continue
        if element.tag == "h1":
            for child in list(element):
                element.remove(child)
            element.text = title
        elif element.tag in BLOCKS and _SPACE.sub(" ", element.text_content()).strip() in own:
            element.drop_tree()


def _paragraph_nodes(paragraphs: Iterable[str]) -> list[Any]:
    nodes = []
    for text in paragraphs:
        node = lxml.html.Element("p")
        node.text = text
        nodes.append(node)
    return nodes


def in_template(template: SourcePage, paragraphs: Iterable[str], title: str) -> str | None:
    """Another site's real page with its article replaced by `paragraphs` (all boilerplate kept)."""
    tree = lxml.html.fromstring(template.source)
    node = _article_node(tree, template)
    if node is None:
        return None
    for child in list(node):
        node.remove(child)
    node.text = None
    heading = lxml.html.Element("h1")
    heading.text = title
    node.append(heading)
    for p in _paragraph_nodes(paragraphs):
        node.append(p)
    _drop_template_article_remnants(tree, node, template, title)
    _strip_page_metadata(tree, title)
    return lxml.html.tostring(tree, encoding="unicode", doctype="<!DOCTYPE html>")


def recrawl(page: SourcePage, rng: random.Random, others: list[SourcePage], when: datetime) -> str:
    """Same page, boilerplate changed: a timestamp, a related-stories block, an ad slot."""
    tree = lxml.html.fromstring(page.source)
    body = tree.find("body") if tree.find("body") is not None else tree
    stamp = lxml.html.fromstring(f"<div class='updated'>Updated {when:%A %d %B %Y %H:%M} GMT</div>")
    related = lxml.html.fromstring(
        "<aside class='related'><h3>Related stories</h3><ul>"
        + "".join(f"<li><a href='/r/{i}'>{o.title}</a></li>" for i, o in enumerate(rng.sample(others, 4)))
        + "</ul></aside>")
    ad = lxml.html.fromstring(f"<div class='ad-slot' id='ad-{rng.randint(1000, 9999)}'>Advertisement</div>")
    body.insert(0, stamp)
    body.insert(1, ad)
    body.append(related)
    return lxml.html.tostring(tree, encoding="unicode", doctype="<!DOCTYPE html>")


def print_version(page: SourcePage, paragraphs: Iterable[str]) -> str:
    body = "".join(f"<p>{_escape(p)}</p>" for p in paragraphs)
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{_escape(page.title)}</title></head>"
            f"<body><h1>{_escape(page.title)}</h1>{body}</body></html>")


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def light_edit(paragraphs: list[str], rng: random.Random) -> list[str]:
    """2-5 % of words substituted, deleted or duplicated; one paragraph dropped from long articles."""
    paras = list(paragraphs)
    if len(paras) >= 8:
        del paras[rng.randrange(1, len(paras))]
    words = [p.split() for p in paras]
    total = sum(len(w) for w in words)
    vocabulary = [w for ws in words for w in ws]
    for _ in range(max(1, int(total * rng.uniform(0.02, 0.05)))):
        para = rng.choice([i for i, ws in enumerate(words) if ws])
        i = rng.randrange(len(words[para]))
        action = rng.random()
        if action < 0.5:
            words[para][i] = rng.choice(vocabulary)
        elif action < 0.8 and len(words[para]) > 1:
            del words[para][i]
        else:
            words[para].insert(i, rng.choice(vocabulary))
    return [" ".join(ws) for ws in words if ws]


def teaser(paragraphs: list[str], rng: random.Random) -> list[str]:
    """The first 50-65 % of the article (at least 150 words), then 'continue reading'."""
    target = max(150, int(sum(len(p.split()) for p in paragraphs) * rng.uniform(0.5, 0.65)))
    out, count = [], 0
    for p in paragraphs:
        out.append(p)
        count += len(p.split())
        if count >= target:
            break
    return out + ["Continue reading the full story on our partner's site."]


def short_text(rng: random.Random) -> tuple[str, list[str]]:
    topic = rng.choice(_SHORT_TOPICS)
    words = rng.sample(_SHORT_WORDS, rng.randint(14, 30))
    sentence = (f"{topic}: {rng.choice(_NAMES)} {' '.join(words[:len(words) // 2])} on "
                f"{rng.randint(1, 28)} {rng.choice(['March', 'May', 'June', 'October'])} at "
                f"{rng.randint(1, 12)}pm. {' '.join(words[len(words) // 2:]).capitalize()}, "
                f"call {rng.randint(100, 999)} {rng.randint(1000, 9999)}.")
    return f"{topic} {rng.randint(1, 999)}", [sentence]


# -- the set -----------------------------------------------------------------------------------
def _bucket(name: str, salt: str) -> float:
    return xxhash.xxh3_64_intdigest(f"{salt}:{name}".encode()) / 2**64


def _site(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "site"


def build_devset(pages: list[SourcePage], seed: int, split: str) -> list[dict[str, Any]]:
    """Labelled pages in fetch order (see module doc). split: 'dev', 'test' or 'all'."""
    rng = random.Random(f"{seed}:{split}")
    articles = distinct_articles(pages)
    templates = [p for p in articles if _article_node(lxml.html.fromstring(p.source), p) is not None]
    if split != "all":
        articles = [p for p in articles if (_bucket(p.name, "split") < 0.5) == (split == "dev")]
    donors = [p for p in articles if _bucket(p.name, "donor") < 0.2]
    articles = [p for p in articles if p not in donors]
    base = datetime(2024, 3, 1, tzinfo=UTC)
    records: list[dict[str, Any]] = []

    def emit(cluster: str, variant: str, source: str, html: str, url: str, when: datetime,
             lang: str | None) -> None:
        records.append({"id": f"{variant}-{len(records):05d}", "url": url, "content": html,
                        "content_type": "text/html", "fetched_at": when.isoformat().replace("+00:00", "Z"),
                        "lang": lang, "cluster": cluster, "variant": variant, "source_page": source})

    for index, page in enumerate(articles):
        cluster, site = f"c-{page.name}", _site(page.name)
        t0 = base + timedelta(hours=6 * index)
        emit(cluster, "original", page.name, page.source, f"https://{site}.example/story", t0, page.lang)
        if rng.random() < 0.15:
            continue
        others = [t for t in templates if t.name != page.name]
        variants = rng.sample(["recrawl", "syndicated", "syndicated2", "light_edit", "print", "teaser"],
                              rng.randint(2, 4))
        paragraphs = list(page.paragraphs)
        for variant in variants:
            when = t0 + timedelta(hours=rng.uniform(-8, 240))
            template = rng.choice(others)
            host = _site(template.name)
            if variant == "recrawl":
                html: str | None = recrawl(page, rng, others, when)
                url = f"https://{site}.example/story?utm_source=feed&ts={rng.randint(1, 10**6)}"
            elif variant.startswith("syndicated"):
                html = in_template(template, paragraphs, page.title)
                url = f"https://{host}.example/wire/{site}"
            elif variant == "light_edit":
                html = in_template(template, light_edit(paragraphs, rng), page.title + " (updated)")
                url = f"https://{host}.example/news/{site}-edited"
            elif variant == "print":
                html = print_version(page, paragraphs)
                url = f"https://{site}.example/amp/story"
            else:
                if page.words < 300:
                    continue
                html = in_template(template, teaser(paragraphs, rng), page.title)
                url = f"https://{host}.example/teaser/{site}"
            if html is not None:
                emit(cluster, variant.rstrip("2"), page.name, html, url, when, page.lang)

    negatives = 0
    for donor in donors:  # another article inside a template that also carries a cluster
        template = rng.choice(templates)
        html = in_template(template, list(donor.paragraphs), donor.title)
        if html is not None:
            emit(f"neg-{negatives}", "same_template", donor.name, html,
                 f"https://{_site(template.name)}.example/other/{_site(donor.name)}",
                 base + timedelta(hours=rng.uniform(0, 6 * len(articles))), donor.lang)
            negatives += 1
    short_templates = min(4, len(templates), max(1, len(articles) // 8))
    for template in rng.sample(templates, short_templates):  # very short pages, 4 per template
        for _ in range(4):
            title, text = short_text(rng)
            html = in_template(template, text, title)
            if html is not None:
                emit(f"neg-{negatives}", "short", template.name, html,
                     f"https://{_site(template.name)}.example/brief/{negatives}",
                     base + timedelta(hours=rng.uniform(0, 6 * len(articles))), template.lang)
                negatives += 1
    records.sort(key=lambda r: (r["fetched_at"], r["id"]))
    return records


# Appended to the sample crawl so a newcomer sees the rejected output at work.
BAD_LINES = (b'{"url": "https://broken.example/1", "content": "<p>cut off',
             b'{"content": "<p>a page without a url</p>", "fetched_at": "2024-03-02T00:00:00Z"}',
             b'{"url": "https://empty.example/", "content": "", "fetched_at": "2024-03-02T00:00:00Z"}')


def write_jsonl(records: Iterable[dict[str, Any]], path: Path, extra_lines: Iterable[bytes] = ()) -> None:
    data = b"".join(json.dumps(r, ensure_ascii=False).encode() + b"\n" for r in records)
    data += b"".join(line + b"\n" for line in extra_lines)
    path.write_bytes(gzip.compress(data, mtime=0) if path.suffix == ".gz" else data)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="streamdedup devset", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=Path, required=True, help="readability-test-pages.tar.gz or folder")
    parser.add_argument("--split", choices=("dev", "test", "all"), default="dev")
    parser.add_argument("--seed", type=int, default=2024)
    parser.add_argument("--limit", type=int, help="use only the first N distinct articles (sample crawls)")
    parser.add_argument("--with-bad-records", action="store_true",
                        help="append three malformed records (for the sample crawl's demo)")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    pages = load_test_pages(args.pages)
    if args.limit:
        keep = {p.name for p in distinct_articles(pages)[: args.limit]}
        pages = [p for p in pages if p.name in keep]
    records = build_devset(pages, args.seed, args.split)
    write_jsonl(records, args.out, BAD_LINES if args.with_bad_records else ())
    variants = Counter(r["variant"] for r in records)
    sizes = Counter(Counter(r["cluster"] for r in records).values())
    print(json.dumps({"pages": len(records), "clusters": len({r['cluster'] for r in records}),
                      "variants": variants, "cluster_sizes": dict(sorted(sizes.items()))}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
