"""Real pages for the labelled sets.

Mozilla's readability test pages, trafilatura's test pages and newspaper4k's test pages.

Each page becomes a `SourcePage`: its raw HTML, the article's text blocks, a title, a language
and a site. Readability's pages carry the article itself (expected.html); trafilatura's carry
snippets that a good extraction keeps and drops (expected.json), from which the article is found
as the smallest element of the page that holds every kept snippet; newspaper4k's (its source
distribution, `pip download --no-binary :all: --no-deps newspaper4k==0.9.6`: news pages in eight
languages) carry the article's text (tests/data/txt) and its URL and language (tests/data/metadata).
Each is read from its .tar.gz as shipped, or from an unpacked folder.
"""

from __future__ import annotations

import gzip
import json
import lzma
import re
import tarfile
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import lxml.html

from streamdedup.evaluate.units import DENSE_LANGS, SPACES, UNITS, Segmenter

BLOCKS = {"p", "li", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "blockquote", "td", "dd", "dt", "figcaption"}
MIN_WORDS = 80
SPACE = re.compile(r"\s+")
_CHARSET = re.compile(rb"""charset\s*=\s*["']?([A-Za-z0-9_.:-]+)""", re.I)
_SITE_NUMBER = re.compile(r"-\d+$")


@dataclass(frozen=True)
class SourcePage:
    """A real page the sets are built from: its HTML, article paragraphs, title, language and site."""

    name: str
    source: str  # raw page HTML
    paragraphs: tuple[str, ...]  # the article's text blocks
    title: str
    lang: str | None
    site: str = ""  # who published it (the split keeps a site's pages together); defaults to the name
    corpus: str = "readability"
    dense: bool = False  # written without spaces between words (zh, bo): counted and edited by unit

    @property
    def segmenter(self) -> Segmenter:
        """How the page's text is cut into words: by spaces, or units of a dense script."""
        return UNITS if self.dense else SPACES

    @property
    def words(self) -> int:
        """The article's length in words (units of a dense script)."""
        count = self.segmenter.count
        return sum(count(p) for p in self.paragraphs)

    @property
    def site_key(self) -> str:
        """The page's site, or its name where the site is not known."""
        return self.site or self.name


def normalise(text: str) -> str:
    """The text with every run of white space one space, stripped."""
    return SPACE.sub(" ", text).strip()


def leaf_blocks(root: Any) -> list[Any]:
    """Leaf block elements (paragraphs, list items, headings) under root, in document order."""
    return [el for el in root.iter() if isinstance(el.tag, str) and el.tag in BLOCKS
            and not any(isinstance(d.tag, str) and d.tag in BLOCKS for d in el.iterdescendants())]


def _text_blocks(html: str) -> list[str]:
    """Leaf text blocks (paragraphs, list items, headings) in document order."""
    blocks = (normalise(el.text_content()) for el in leaf_blocks(lxml.html.fromstring(html)))
    return [b for b in blocks if b]


def readability_site(name: str) -> str:
    """'nytimes-3' and 'nytimes-4' are one publisher."""
    return _SITE_NUMBER.sub("", name)


def _page_from_files(name: str, source: bytes, expected: bytes, metadata: bytes | None) -> SourcePage:
    meta = json.loads(metadata) if metadata else {}
    return SourcePage(name, source.decode("utf-8", "replace"),
                      tuple(_text_blocks(expected.decode("utf-8", "replace"))),
                      meta.get("title") or name, meta.get("lang"), readability_site(name))


def _members(path: Path) -> Iterable[tuple[tuple[str, ...], bytes]]:
    """(path parts, bytes) of every file of an archive or folder."""
    if path.is_dir():
        for file in sorted(path.rglob("*")):
            if file.is_file():
                yield file.relative_to(path).parts, file.read_bytes()
        return
    with tarfile.open(path) as archive:
        for member in archive.getmembers():
            handle = archive.extractfile(member) if member.isfile() else None
            if handle is not None:
                yield Path(member.name).parts, handle.read()


def load_test_pages(path: Path) -> list[SourcePage]:
    """Read the readability test pages from the .tar.gz or an unpacked folder."""
    files: dict[str, dict[str, bytes]] = {}
    for parts, data in _members(path):
        if len(parts) >= 2 and ("test-pages" in parts or path.is_dir()):
            files.setdefault(parts[-2], {})[parts[-1]] = data
    pages = []
    for name, content in sorted(files.items()):
        if "source.html" in content and "expected.html" in content:
            pages.append(_page_from_files(name, content["source.html"], content["expected.html"],
                                          content.get("expected-metadata.json")))
    return pages


# -- trafilatura's pages: the article located by the annotation's snippets ------------------------
def decode_html(data: bytes) -> str:
    """Bytes as the page declares them (27 of trafilatura's pages are not UTF-8)."""
    match = _CHARSET.search(data[:4096])
    if match:
        try:
            return data.decode(match.group(1).decode("ascii"), "replace")
        except LookupError:
            pass
    return data.decode("utf-8", "replace")


def _lowest_common_ancestor(elements: list[Any]) -> Any | None:
    paths = [list(el.iterancestors())[::-1] + [el] for el in elements]
    common = None
    for level in zip(*paths, strict=False):
        if all(node is level[0] for node in level):
            common = level[0]
        else:
            break
    return common


def _title(tree: Any, fallback: str) -> str:
    for xpath in ("//h1", "//title"):
        for node in tree.xpath(xpath):
            text = normalise(node.text_content())
            if 2 <= len(text.split()) <= 30:
                return text
    return fallback


def article_from_snippets(source: str, keep: list[str], drop: list[str]) -> tuple[tuple[str, ...], str] | None:
    """The article's blocks and title.

    Every leaf block under the smallest element holding all the blocks that contain a kept snippet,
    minus blocks holding a dropped one. None if a kept snippet is not inside a block, or the element
    is the whole page."""
    try:
        tree = lxml.html.fromstring(source)
    except (ValueError, lxml.etree.ParserError):
        return None
    for junk in tree.xpath("//script|//style|//noscript|//template"):
        junk.drop_tree()
    blocks = [(el, normalise(el.text_content())) for el in leaf_blocks(tree)]
    wanted = [normalise(s) for s in keep if normalise(s)]
    hits = []
    for snippet in wanted:
        found = [el for el, text in blocks if snippet in text]
        if not found:
            return None
        hits.append(found[0])
    if len(wanted) < 2:
        return None
    root = _lowest_common_ancestor(hits)
    if root is None or root.tag in ("html", "body"):
        return None
    unwanted = [normalise(s) for s in drop if normalise(s)]
    under = set(root.iter())
    inside = [i for i, (el, _) in enumerate(blocks) if el in under]
    positions = {id(el): i for i, (el, _) in enumerate(blocks)}
    first, last = min(positions[id(h)] for h in hits), max(positions[id(h)] for h in hits)
    # the snippets mark the article's beginning and end: breadcrumbs before, comments after, go
    paragraphs = tuple(blocks[i][1] for i in inside
                       if first <= i <= last and blocks[i][1] and not any(s in blocks[i][1] for s in unwanted))
    return paragraphs, _title(tree, "")


def _html_lang(source: str) -> str | None:
    match = re.search(r"<html[^>]*\blang\s*=\s*[\"']?([A-Za-z]{2,3})", source[:5000], re.I)
    return match.group(1).lower() if match else None


def _host(url: str) -> str:
    host = (urlsplit(url).hostname or "").lower()
    if host == "web.archive.org":  # a Wayback capture: the archived site
        inner = re.search(r"/web/\d+[a-z_]*/(https?://[^\s]+)", url)
        host = (urlsplit(inner.group(1)).hostname or "").lower() if inner else host
    return re.sub(r"^(www\d?|m)\.", "", host)


def trafilatura_files(path: Path) -> tuple[dict[str, bytes], dict[str, Any]]:
    """trafilatura's test archive (or folder): its pages' bytes and its `expected.json` notes, by file name."""
    sources: dict[str, bytes] = {}
    expected: dict[str, Any] = {}
    for parts, data in _members(path):
        if parts[-1] == "expected.json":
            expected = json.loads(data)
        elif len(parts) >= 2 and parts[-2] == "pages":
            sources[parts[-1]] = data
    return sources, expected


def annotated_trafilatura_pages(path: Path) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """trafilatura's test pages that come with a note, by name: (name, decoded HTML, note: url, with, without)."""
    sources, expected = trafilatura_files(path)
    for name in sorted(sources):
        note = expected.get(name)
        if note:
            yield name, decode_html(sources[name]), note


def load_trafilatura_pages(path: Path) -> list[SourcePage]:
    """trafilatura's annotated pages whose article the snippets locate (see article_from_snippets)."""
    pages = []
    for name, source, note in annotated_trafilatura_pages(path):
        found = article_from_snippets(source, note.get("with", []), note.get("without", []))
        if found is None:
            continue
        paragraphs, title = found
        url = note.get("url") or ""
        site = _host(url) if url.startswith("http") else name
        pages.append(SourcePage(f"traf:{name}", source, paragraphs, title or name, _html_lang(source),
                                site or name, "trafilatura"))
    return pages


# -- newspaper4k's pages: the article's text as its tests expect it ------------------------------
NEWSPAPER_CORPUS = "newspaper4k"
_DENSE_TEXT = re.compile(r"[\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u4e00-\u9fff\u0f00-\u0fff]")


def load_newspaper_pages(path: Path) -> list[SourcePage]:
    """newspaper4k's test pages that come with the article's text.

    Tests/data/html/NAME.html, tests/data/txt/NAME.txt (a paragraph a line) and, for most,
    tests/data/metadata/NAME.json (the page's URL, which names its site, and language; else the
    page's own `lang`, and the name)."""
    files: dict[str, dict[str, bytes]] = {}
    for parts, data in _members(path):
        if len(parts) >= 3 and parts[-3] == "data" and parts[-2] in ("html", "txt", "metadata"):
            files.setdefault(Path(parts[-1]).stem, {})[parts[-2]] = data
    pages = []
    for name, found in sorted(files.items()):
        if "html" not in found or "txt" not in found:
            continue
        meta = json.loads(found["metadata"]) if "metadata" in found else {}
        source = decode_html(found["html"])
        paragraphs = tuple(normalise(line) for line in found["txt"].decode("utf-8", "replace").splitlines()
                           if normalise(line))
        url = str(meta.get("url") or meta.get("canonical_link") or "")
        lang = str(meta.get("language") or meta.get("meta_lang") or "") or _html_lang(source)
        text = "".join(paragraphs)
        dense = lang in DENSE_LANGS or len(_DENSE_TEXT.findall(text)) > len(text) / 4
        site = _host(url) if url.startswith("http") else name
        pages.append(SourcePage(f"np:{name}", source, paragraphs, str(meta.get("title") or "") or name, lang,
                                site or name, NEWSPAPER_CORPUS, dense))
    return pages


def load_pages(paths: Iterable[Path]) -> list[SourcePage]:
    """Pages of every archive given.

    Trafilatura's (it has expected.json), newspaper4k's (its tests/data/txt) or readability's."""
    pages: list[SourcePage] = []
    for path in paths:
        try:
            names = _members_names(path)
            if "expected.json" in names:
                pages.extend(load_trafilatura_pages(path))
            elif "newspaper" in names:
                pages.extend(load_newspaper_pages(path))
            else:
                pages.extend(load_test_pages(path))
        except (tarfile.TarError, EOFError, gzip.BadGzipFile, zlib.error, lzma.LZMAError) as err:
            raise ValueError(f"{path} is not a whole tar archive ({_archive_problem(path, err)}): --pages takes "
                             "readability's, trafilatura's or newspaper4k's test pages as shipped (.tar.gz) or "
                             "unpacked into a folder") from None
    return pages


def _archive_problem(path: Path, err: Exception) -> str:
    """What is wrong with a file tarfile cannot read, in a few words (tarfile's own message runs over lines)."""
    with open(path, "rb") as handle:
        head = handle.read(512)
    if isinstance(err, EOFError) or head[257:262] == b"ustar":  # a compressed stream or a tar that stops short
        return "it ends early: a download cut short?"
    return "another kind of file"


def _members_names(path: Path) -> set[str]:
    """What tells the archives apart.

    'expected.json' (trafilatura's), 'newspaper' (newspaper4k's package, by its top folder of code)."""
    if path.is_dir():
        found = {"expected.json"} if next(path.rglob("expected.json"), None) is not None else set()
        return found | ({"newspaper"} if next(path.rglob("newspaper/__init__.py"), None) is not None else set())
    found = set()
    with tarfile.open(path) as archive:
        for member in archive.getmembers():
            parts = Path(member.name).parts
            if parts[-1] == "expected.json":
                found.add("expected.json")
            elif parts[-2:] == ("newspaper", "__init__.py"):
                found.add("newspaper")
    return found
