"""Page surgery for the labelled sets.

An article moved into another real page's template, and the edits a crawl really sees (re-crawls,
light edits, teasers, revisions with update lines, corrections, appended paragraphs, new headlines).
Pure functions of their inputs and a seeded random generator.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

import lxml.html

from streamdedup.evaluate.pages import BLOCKS, SourcePage, leaf_blocks, normalise
from streamdedup.evaluate.units import SPACES, Segmenter

_NAMES = ["Alder", "Brook", "Cedar", "Dune", "Elm", "Fern", "Grove", "Heath", "Iris", "Juniper", "Kestrel"]
_SHORT_TOPICS = ["Photo gallery", "Event notice", "Page moved", "Correction", "Weather alert", "Road closure",
                 "Obituary", "Opening hours", "Market update", "Match result"]
_SHORT_WORDS = ("community hall library council river bridge festival concert meeting volunteers museum "
                "harbour station garden school clinic parade market museum theatre tickets schedule "
                "residents visitors weekend evening morning annual summer winter spring autumn north "
                "south east west central county district village town city square park").split()
# A publisher's own words for its revisions, in the languages of the pages (English otherwise).
UPDATED = {"en": "Updated: {:%d %B %Y, %H:%M} GMT", "de": "Aktualisiert am {:%d.%m.%Y, %H:%M} Uhr",
           "es": "Actualizado: {:%d/%m/%Y %H:%M}", "fr": "Mis à jour le {:%d/%m/%Y à %H:%M}",
           "pl": "Aktualizacja: {:%d.%m.%Y, %H:%M}"}
CORRECTION = {"en": "Correction: an earlier version of this article misstated “{}”. It has been corrected.",
              "de": "Korrektur: In einer früheren Version dieses Artikels hieß es fälschlich „{}“. Wir haben "
                    "den Fehler korrigiert.",
              "es": "Corrección: una versión anterior de este artículo decía erróneamente «{}». Ha sido corregida.",
              "fr": "Rectificatif : une version précédente de cet article indiquait par erreur « {} ». "
                    "L'erreur a été corrigée.",
              "pl": "Sprostowanie: we wcześniejszej wersji artykułu błędnie podano „{}”. Błąd poprawiono."}


# -- an article inside another page's template ----------------------------------------------------
def article_node(tree: Any, page: SourcePage) -> Any | None:
    """The element of the page's source that holds its article.

    The lowest common ancestor of the source paragraphs whose text is one of the article's blocks."""
    wanted = {p for p in page.paragraphs if page.segmenter.count(p) >= 6}
    hits = [el for el in tree.iter("p") if normalise(el.text_content()) in wanted]
    if len(hits) < 3:
        return None
    return _common_ancestor(hits)


def _common_ancestor(elements: list[Any]) -> Any | None:
    """The lowest element holding all `elements` (None if that is the page's html or body)."""
    paths = [list(el.iterancestors())[::-1] + [el] for el in elements]
    common = None
    for level in zip(*paths, strict=False):  # down to the shortest path
        if all(node is level[0] for node in level):
            common = level[0]
        else:
            break
    return None if common is None or common.tag in ("html", "body") else common


def own_article_node(tree: Any, page: SourcePage) -> Any | None:
    """The element of a page's own source holding its located article, found leniently.

    A template's is found by `article_node`, which wants three long paragraphs. This one is the lowest common
    ancestor of every leaf block whose text is one of the article's blocks, or the parent of the only one."""
    wanted = set(page.paragraphs)
    hits = [el for el in leaf_blocks(tree) if normalise(el.text_content()) in wanted]
    if not hits:
        return None
    if len(hits) == 1:
        parent = hits[0].getparent()
        return None if parent is None or parent.tag in ("html", "body") else parent
    return _common_ancestor(hits)


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
    """The template's own headline, standfirst and byline live outside the article node.

    A real page would show the new article's, so they are removed (headlines get the new title)."""
    own = set(template.paragraphs)
    inside = set(node.iter())
    for element in list(tree.iter()):
        if element in inside or not isinstance(element.tag, str) or element.getparent() is None:
            continue
        if element.tag == "h1":
            for child in list(element):
                element.remove(child)
            element.text = title
        elif element.tag in BLOCKS and normalise(element.text_content()) in own:
            element.drop_tree()


def _paragraph_nodes(paragraphs: Iterable[str]) -> list[Any]:
    nodes = []
    for text in paragraphs:
        node = lxml.html.Element("p")
        node.text = text
        nodes.append(node)
    return nodes


def in_template(template: SourcePage, paragraphs: Iterable[str], title: str,
                locate: Callable[[Any, SourcePage], Any | None] = article_node) -> str | None:
    """Another site's real page with its article replaced by `paragraphs` (all boilerplate kept)."""
    tree = lxml.html.fromstring(template.source)
    node = locate(tree, template)
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


def own_page(page: SourcePage) -> str:
    """The page as its own site shows the article its copies carry.

    Its article element holding exactly the located paragraphs. The located article is often only
    part of what the page shows (trafilatura's snippets need not cover its first or last paragraphs,
    a letters page holds other letters), and a copy elsewhere carries only the located part, so the
    real page was a superset of its 'syndicated' copies, not a near-duplicate of them. Pages whose
    article element cannot be found are kept as they are."""
    return in_template(page, page.paragraphs, page.title, own_article_node) or page.source


def usable_template(page: SourcePage, max_words: int = 1000) -> bool:
    """Whether the page's article swaps out cleanly and what stays is a template.

    The page's article can be swapped out cleanly (none of its long blocks is left behind) and
    what stays is a template, not a second article: at most `max_words` words of text (about 80 %
    of the test pages; the rest keep comment threads or the unannotated rest of their article)."""
    html = in_template(page, ["probe"], "probe")
    if html is None:
        return False
    tree = lxml.html.fromstring(html)
    for junk in tree.xpath("//script|//style|//noscript|//template"):
        junk.drop_tree()
    count = page.segmenter.count
    if count(tree.text_content()) > max_words:
        return False
    left = " ".join(normalise(el.text_content()) for el in tree.iter() if isinstance(el.tag, str) and len(el) == 0)
    return not any(p in left for p in page.paragraphs if count(p) >= 8)


def stray_article_text(page: SourcePage, words: int = 45) -> bool:
    """Whether the template still shows a long unlabelled paragraph of the article it was taken from.

    The template still shows a long unlabelled paragraph of the article it was taken from
    (a plain <p> of at least `words` words once its located article is swapped out): its
    article went on in a second container, or the located part was only its start, so a copy
    in it would carry half of another article."""
    html = in_template(page, ["probe"], "probe")
    if html is None:
        return True
    tree = lxml.html.fromstring(html)
    count = page.segmenter.count
    return any(not p.get("class") and count(normalise(p.text_content())) >= words for p in tree.iter("p"))


# -- what a crawl sees of one article ---------------------------------------------------------------
def recrawl_html(html: str, rng: random.Random, titles: list[str], when: datetime) -> str:
    """The same page fetched again, boilerplate changed: a timestamp, an ad slot, related stories."""
    tree = lxml.html.fromstring(html)
    body = tree.find("body") if tree.find("body") is not None else tree
    stamp = lxml.html.fromstring(f"<div class='updated'>Updated {when:%A %d %B %Y %H:%M} GMT</div>")
    related = lxml.html.fromstring(
        "<aside class='related'><h3>Related stories</h3><ul>"
        + "".join(f"<li><a href='/r/{i}'>{_escape(t)}</a></li>" for i, t in enumerate(rng.sample(titles, 4)))
        + "</ul></aside>")
    ad = lxml.html.fromstring(f"<div class='ad-slot' id='ad-{rng.randint(1000, 9999)}'>Advertisement</div>")
    body.insert(0, stamp)
    body.insert(1, ad)
    body.append(related)
    return lxml.html.tostring(tree, encoding="unicode", doctype="<!DOCTYPE html>")


def recrawl(page: SourcePage, rng: random.Random, others: list[SourcePage], when: datetime) -> str:
    """The page fetched again, its boilerplate changed (`recrawl_html`)."""
    return recrawl_html(own_page(page), rng, [o.title for o in others], when)


def print_version(page: SourcePage, paragraphs: Iterable[str]) -> str:
    """A print version of the page: its title and these paragraphs, no template."""
    body = "".join(f"<p>{_escape(p)}</p>" for p in paragraphs)
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{_escape(page.title)}</title></head>"
            f"<body><h1>{_escape(page.title)}</h1>{body}</body></html>")


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def light_edit(paragraphs: list[str], rng: random.Random, seg: Segmenter = SPACES) -> list[str]:
    """2-5 % of words substituted, deleted or duplicated; one paragraph dropped from long articles."""
    return light_edit_kept(paragraphs, rng, seg)[0]


def light_edit_kept(paragraphs: list[str], rng: random.Random,
                    seg: Segmenter = SPACES) -> tuple[list[str], list[int]]:
    """`light_edit`'s paragraphs and the indices (into `paragraphs`) of those it kept, for the gold units.

    The same random draws as `light_edit`."""
    paras = list(paragraphs)
    kept = list(range(len(paras)))
    if len(paras) >= 8:
        dropped = rng.randrange(1, len(paras))
        del paras[dropped]
        del kept[dropped]
    words = [seg.split(p) for p in paras]
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
    return [seg.join(ws) for ws in words if ws], [k for k, ws in zip(kept, words, strict=True) if ws]


def words_changed(paragraphs: list[str], rng: random.Random, low: int = 1, high: int = 8,
                  seg: Segmenter = SPACES) -> list[str]:
    """A copy-editor's pass: low..high words replaced by other words of the article."""
    words = [seg.split(p) for p in paragraphs]
    vocabulary = [w for ws in words for w in ws]
    for _ in range(rng.randint(low, high)):
        para = rng.choice([i for i, ws in enumerate(words) if ws])
        words[para][rng.randrange(len(words[para]))] = rng.choice(vocabulary)
    return [seg.join(ws) for ws in words]


def teaser(paragraphs: list[str], rng: random.Random, seg: Segmenter = SPACES,
           more: str = "Continue reading the full story on our partner's site.") -> list[str]:
    """The first 50-65 % of the article (at least 150 words), then 'continue reading'."""
    target = max(150, int(sum(seg.count(p) for p in paragraphs) * rng.uniform(0.5, 0.65)))
    out, count = [], 0
    for p in paragraphs:
        out.append(p)
        count += seg.count(p)
        if count >= target:
            break
    return out + [more]


def short_text(rng: random.Random) -> tuple[str, list[str]]:
    """A generated notice of 20-40 words (the web family's short pages)."""
    topic = rng.choice(_SHORT_TOPICS)
    words = rng.sample(_SHORT_WORDS, rng.randint(14, 30))
    sentence = (f"{topic}: {rng.choice(_NAMES)} {' '.join(words[:len(words) // 2])} on "
                f"{rng.randint(1, 28)} {rng.choice(['March', 'May', 'June', 'October'])} at "
                f"{rng.randint(1, 12)}pm. {' '.join(words[len(words) // 2:]).capitalize()}, "
                f"call {rng.randint(100, 999)} {rng.randint(1000, 9999)}.")
    return f"{topic} {rng.randint(1, 999)}", [sentence]


def short_body(page: SourcePage, rng: random.Random, low: int = 10, high: int = 60) -> list[str]:
    """A real brief: low..high words of one of the page's paragraphs (from its start)."""
    seg = page.segmenter
    long_enough = [p for p in page.paragraphs if seg.count(p) >= low] or [" ".join(page.paragraphs)]
    words = seg.split(rng.choice(long_enough))
    return [seg.join(words[: rng.randint(low, min(high, len(words)))])]


def language(page: SourcePage) -> str:
    """The page's language among those the update lines are written in, else English."""
    lang = (page.lang or "en")[:2].lower()
    return lang if lang in UPDATED else "en"


def headline_changed(title: str, paragraphs: list[str], rng: random.Random) -> str:
    """A rewritten headline: some of its words swapped for words of the article, or cut short."""
    words = title.split()
    vocabulary = [w for p in paragraphs for w in p.split() if len(w) > 3] or words
    if len(words) >= 6 and rng.random() < 0.3:
        return " ".join(words[: len(words) * 2 // 3])
    for _ in range(max(1, len(words) // 3)):
        words[rng.randrange(len(words))] = rng.choice(vocabulary)
    return " ".join(words) if words != title.split() else title + " (update)"


def correction_note(page: SourcePage, paragraphs: list[str], rng: random.Random) -> str:
    """A correction note in the page's language quoting three of its words."""
    words = rng.choice([p for p in paragraphs if p.split()]).split()
    start = rng.randrange(max(1, len(words) - 3))
    return CORRECTION[language(page)].format(" ".join(words[start: start + 3]))


def update_line(page: SourcePage, when: datetime) -> str:
    """An "Updated" line in the page's language with the time `when`."""
    return UPDATED[language(page)].format(when)
