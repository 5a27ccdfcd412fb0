"""Each site's template, learned from the stream itself.

Pure: the state is a value the caller keeps.

A crawl shows every site many times, so the stream says what its template is: a line of main
text (a paragraph after extraction and normalisation: a menu label, "Share this article", a
newsletter blurb, a copyright line) that recurs on many *distinct* pages of one site is
boilerplate, not content. Whatever the extractor leaks of the template is removed before the page
is fingerprinted and verified, so two different articles in one template stop looking alike, and
a page that is nothing but template gets a verdict of its own instead of matching its siblings.

Decisions (docs/template-model.md has the reasoning and the measurements):

- Site key: the page's host without a leading "www." (`template_site`; issue 56: a domain's hosts are
  different layouts; the registrable domain, `record.page.site_of`, before).
- Unit: a line of normalised text, hashed (xxh3-64). A page counts the lines of its main text and
  of all its visible text: the template shows in every page's visible text, while it leaks into
  the main text only where the extractor fails (a short page, whose extraction takes in the
  listing beside it), so counting the visible text learns it from every page, before it leaks.
  Counted once per distinct page of the site: a page is its URL without fragment, and without its
  query unless the path is a script or the site's root (`article.php?id=7`, `/?p=7`), where the
  query names the page less its tracking parameters and session ids (`page_key`); a URL among the
  site's recent ones (re-crawls) does not count again.
- Template: a line seen on at least `min_count` distinct pages *and* on at least `min_share` of
  the site's (decayed) pages. The share keeps a story's paragraphs, which recur only on its few
  revisions and copies, from ever counting as template on a site with many pages.
- Cold start: until the site has `min_pages` distinct pages its template is provisional: a line on
  at least `cold_min_count` of its earlier distinct pages *and* on at least `cold_min_share` of them
  (from the 4th page on, by default: a menu or footer is on every page, a story's paragraphs only
  on its few revisions at new URLs). A page from which nothing provisional was removed (a site's
  first pages) meets the stricter own-site policy, as without the model; verdicts stand.
- Missed content: a page at a URL new to its site whose main text is short (under
  `missed_short_words` words) and made only of lines the site showed before, while the page shows at
  least `missed_new_words` words for the first time outside it, is `template_only`: its extraction
  took a block of the template (a cookie notice, a welcome text, a teaser) and missed the page's own
  text (a brief the extractor dropped). Judged on that text it would be an `exact` duplicate of its
  site's other briefs; in the cold start no line is template yet, so only this rule can tell.
  The main text's lines must be on `missed_min_pages` earlier pages: one page (a listing, an
  attacker's post) cannot reject another; on one, in the cold start, the page is judged on the text
  it shows for the first time. A revision at the same URL (a re-crawl) or a long article seen
  before (a print or AMP copy on the same host, whose page shows comments or related links
  besides) is judged as before.
- One page's lines: a line only one earlier distinct page showed keeps that page's document key
  (the low 32 bits of `clean.page_urls.document_key` of its URL: `shown_once_by`), 4 bytes stored for each such line,
  so that the engine can tell a line of another story's page from one of the page's own story
  (`verdict.new_shares.with_other_stories_lines`). A line two pages showed keeps none.
- Drift: every `half_life` distinct pages all counts halve (lines that left the template fade out).
- Bounded: at most `max_lines` counted lines per site (the least seen go first, ties by hash) and
  `recent_urls` URL hashes.
- Deterministic: a page is stripped with the state left by the site's earlier pages, then counted;
  the same pages of a site in the same order give the same result in every mode, however batched.
"""

from __future__ import annotations

import struct
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import xxhash

from streamdedup.clean.learned_layout import SiteLayout
from streamdedup.clean.page_urls import document_key, document_tag, page_key
from streamdedup.hash_arrays import distinct_counts
from streamdedup.jit import numba
from streamdedup.record.page import site_of, url_host

# The model's semantics, recorded in every store with its parameters (a store refuses a run whose
# model differs): 2 since issue 56, a model per host (`template_site`) where 1 had one per
# registrable domain, and the missed-content rule backed by `missed_min_pages` pages.
# Not bumped when `page_key` changed which URLs are one page (0.14.0: the query's page parameters
# on every path; after it: on a script or the site's root only): a bump makes every store refuse to
# open, while the change only makes a store's recent keys of URLs with a query differ from their new
# keys, so such a URL re-crawled within the site's `recent_urls` counts once more, once (its lines
# counted twice: a page counted twice, not a wrong model), and the old keys age out.
TEMPLATE_MODEL = 2

_HEAD = struct.Struct("<IIII")  # pages, since_halving, lines, urls
_LEARNED = struct.Struct("<QI")  # a delta record's page: its key, how many line hashes follow
# in a delta record's count: its page's document tag (u32) follows its line hashes (`encode_learned`);
# records written before keys were kept have none, and their lines no key
_WITH_DOCUMENT = 1 << 31
_DOCUMENT = struct.Struct("<I")

# what an array takes beside its data: its header (`sys.getsizeof` of a view: 112 bytes), numba's
# record of the data block of the arrays `count_page` returns, and the allocator's header and
# rounding; and a URL key as a Python int in the URL set (a 64-bit hash: 36 bytes, 40 in pymalloc)
_ARRAY_BYTES = 112 + 96
_INT_BYTES = 40

LineHashes = list[int] | np.ndarray  # a page's line hashes in order: `split_lines`' list or `line_hashes`' array
NO_LINES = np.zeros(0, dtype=np.uint64)  # `line_hashes` of a text without lines (shared: never written to)
NO_LINES.flags.writeable = False


@dataclass(frozen=True)
class TemplateParams:
    """The template model's settings (the `[template]` table): when a line is a site's template.

    docs/reference.md, "Configuration", says what each field does; docs/template-model.md why."""

    min_pages: int = 8
    min_count: int = 4
    min_share: float = 0.3
    half_life: int = 1000
    max_lines: int = 4096
    recent_urls: int = 1024
    cold_min_count: int = 3
    cold_min_share: float = 0.5
    missed_short_words: int = 100
    missed_new_words: int = 10
    missed_min_pages: int = 2

    def __post_init__(self) -> None:
        for name, share in (("min_share", self.min_share), ("cold_min_share", self.cold_min_share)):
            if not 0.0 < share <= 1.0:
                raise ValueError(f"template {name} is a fraction of the site's pages in (0, 1], "
                                 f"got {share}")
        sizes = (self.min_pages, self.min_count, self.cold_min_count, self.half_life, self.max_lines, self.recent_urls,
                 self.missed_short_words, self.missed_new_words, self.missed_min_pages)
        if min(sizes) < 1:
            raise ValueError("template counts and sizes must be at least 1")


@lru_cache(maxsize=1 << 12)  # a page's URL is asked twice: when prepared and when its batch is judged
def template_site(url: str) -> str:
    """What a template model is kept for.

    The page's host, lowercased, without a leading "www." (www.example.com and example.com are one
    layout; forum.example.com, amp.example.com and news.example.com are each their own). A domain's
    hosts are often different layouts with different numbers of pages, and one model of them all
    kept a small host's boilerplate under `min_share` of the domain's pages, and let one page of any
    host touch another's articles. IP addresses and URLs without a host: `site_of`'s key."""
    host = url_host(url.strip())
    if not host:
        return site_of(url)
    return host[4:] if host.startswith("www.") and host.count(".") >= 2 else host


def split_lines(text: str) -> tuple[list[str], list[int]]:
    """The page's lines (paragraphs of normalised main text) and their hashes, in order."""
    return [line for line in text.split("\n") if line], list(map(xxhash.xxh3_64_intdigest, _line_bytes(text)))


def line_hashes(text: str) -> np.ndarray:
    """`split_lines`'s hashes as an array (uint64), without making the lines as strings.

    What the model is asked with (`SiteTemplate.strip`, `shown_before`, `learn` take either)."""
    if not text:
        return NO_LINES
    parts = _line_bytes(text)
    return np.fromiter(map(xxhash.xxh3_64_intdigest, parts), dtype=np.uint64, count=len(parts))


def _line_bytes(text: str) -> list[bytes]:
    """The text's non-empty lines as UTF-8, from one encoding of the whole text.

    A line's bytes are the same as when encoded alone (a newline is one byte that no other
    character's encoding holds), and hashing them is one C call a line (`map`), not an encoding and
    a call from Python."""
    parts = text.encode("utf-8", "surrogatepass").split(b"\n")
    return [part for part in parts if part] if b"" in parts else parts


# Up to this many lines a page's distinct lines are sorted in Python: a compiled call's dispatch
# and the arrays it returns (~4 µs) cost more than the sort of a few ints
_PYTHON_SORT_LINES = 64


def without_lines(lines: list[str], template: list[bool]) -> tuple[str, int]:
    """The lines but those `template` marks (`SiteTemplate.removed_lines`), as one text, and how many were removed."""
    kept = [line for line, drop in zip(lines, template, strict=True) if not drop]
    return "\n".join(kept), len(lines) - len(kept)


def distinct_lines(hashes: LineHashes) -> np.ndarray:
    """A page's distinct line hashes, ascending (uint64)."""
    if isinstance(hashes, np.ndarray):
        return distinct_counts(hashes)[0] if len(hashes) else NO_LINES
    if len(hashes) <= _PYTHON_SORT_LINES:
        return np.array(sorted(set(hashes)), dtype=np.uint64)
    return distinct_counts(np.fromiter(hashes, dtype=np.uint64, count=len(hashes)))[0]


@numba.njit(cache=True)
def count_page(lines: np.ndarray, counts: np.ndarray, once: np.ndarray, page: np.ndarray,
               document: np.uint32) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The counted lines (ascending hashes, counts, document tags) with a page's distinct hashes counted once more.

    A line there already +1 (its key 0: two pages showed it), a new one at its place with 1 and the
    page's `document` key. One binary search a page line and block copies of the counted lines
    between them (a `searchsorted` and two `np.insert`s did it in ~8 numpy calls a page); the
    model's arrays are not changed in place."""
    n, m = len(lines), len(page)
    at = np.searchsorted(lines, page)
    fresh = 0
    for j in range(m):
        if at[j] == n or lines[at[j]] != page[j]:
            fresh += 1
    out_lines = np.empty(n + fresh, dtype=np.uint64)
    out_counts = np.empty(n + fresh, dtype=np.uint32)
    out_once = np.empty(n + fresh, dtype=np.uint32)
    src = dst = 0
    for j in range(m):
        a = at[j]
        if a > src:  # the counted lines before this one, as they are
            out_lines[dst: dst + a - src] = lines[src: a]
            out_counts[dst: dst + a - src] = counts[src: a]
            out_once[dst: dst + a - src] = once[src: a]
            dst += a - src
            src = a
        if a < n and lines[a] == page[j]:
            out_lines[dst], out_counts[dst], out_once[dst] = lines[a], counts[a] + np.uint32(1), 0
            src += 1
        else:
            out_lines[dst], out_counts[dst], out_once[dst] = page[j], 1, document
        dst += 1
    out_lines[dst:] = lines[src:]
    out_counts[dst:] = counts[src:]
    out_once[dst:] = once[src:]
    return out_lines, out_counts, out_once


def _ints(hashes: LineHashes) -> list[int]:
    return hashes.tolist() if isinstance(hashes, np.ndarray) else hashes


class SiteTemplate:
    """What one site's earlier pages say about its template.

    Its counted lines are two numpy arrays, the line hashes in ascending order (uint64) and their
    counts (uint32): a page's lines are looked up in one `searchsorted`, and the store's bytes are
    the arrays' own (encoded and decoded by copying, not by a loop over thousands of Python ints,
    once per batch per site). `counts` gives them as a dict.

    Its recent page keys (`urls`, oldest first) are kept as a uint64 array with room to append at
    its end, and as a set for the one question asked of them per page (is this URL among them?),
    made when first asked: a set lookup instead of a scan of up to `recent_urls` keys, and the
    store's bytes a slice of the array. The keys are distinct (`learn` adds a key only if absent),
    so a key that leaves the array leaves the set."""

    __slots__ = ("pages", "since_halving", "_lines", "_counts", "_once", "_urls", "_start", "_end", "_seen", "learned",
                 "deltas", "delta_bytes", "layout", "layout_changed")

    def __init__(self, pages: int = 0, since_halving: int = 0, counts: dict[int, int] | None = None,
                 urls: Iterable[int] | np.ndarray = ()) -> None:
        self.pages = pages  # distinct pages counted (halved with the counts)
        self.since_halving = since_halving
        lines = np.fromiter(counts or (), dtype="<u8", count=len(counts or ()))  # line hash -> distinct pages (decayed)
        order = np.argsort(lines, kind="stable")
        self._lines = lines[order]
        self._counts = np.fromiter((counts or {}).values(), dtype="<u4", count=len(counts or ()))[order]
        # of a line one page showed: that page's document tag (0: not known, or two pages showed it)
        self._once = np.zeros(len(lines), dtype="<u4")
        keys = np.asarray(urls if isinstance(urls, np.ndarray) else list(urls), dtype="<u8")
        self._urls = np.empty(max(16, 2 * len(keys)), dtype="<u8")  # recent page keys at [_start, _end)
        self._urls[: len(keys)] = keys
        self._start, self._end = 0, len(keys)
        self._seen: set[int] | None = None  # the same keys as a set, once asked
        # What the store has of it beyond its last whole record: `deltas` records of `delta_bytes`
        # (store/template_store.py), and what it `learned` since it was last written, which the
        # store writes as its next delta: each counted page's key, line hashes and document tag, in order.
        self.learned: list[tuple[int, np.ndarray, int]] = []
        self.deltas = 0
        self.delta_bytes = 0
        # where the site's article lives, as its pages taught it (clean/learned_layout.py; None: not
        # yet), kept in a record of its own beside the model's, written when `layout_changed`
        self.layout: SiteLayout | None = None
        self.layout_changed = False

    @property
    def counts(self) -> dict[int, int]:
        """Line hash -> distinct pages (decayed), in hash order: a copy."""
        return dict(zip(self._lines.tolist(), self._counts.tolist(), strict=True))

    def shown_lines(self) -> np.ndarray:
        """The hashes of every line the site's earlier pages showed, ascending (uint64, read-only).

        A view, not a copy (a page's worth of memcpy of up to `max_lines` hashes): learning rebinds
        the model's arrays (`count_page`, the cuts) and never writes them, so it stays as it was."""
        shown = self._lines.view()
        shown.flags.writeable = False
        return shown

    def lines_shown_on(self, pages: int) -> np.ndarray:
        """The hashes of the lines at least `pages` of the site's earlier distinct pages showed, ascending (uint64)."""
        return self._lines[self._counts >= pages] if pages > 1 else self.shown_lines()

    def shown_once_by(self, hashes: LineHashes) -> np.ndarray:
        """Of each of these lines: the document tag of the one earlier page that showed it (uint32; 0: none or more).

        0 also where that page is not known (a line counted before keys were kept, or whose count
        halved to one)."""
        at, found = self._find(hashes)
        if not len(self._once):
            return np.zeros(len(at), dtype=np.uint32)
        return np.where(found & (self._counts[at] == 1), self._once[at], np.uint32(0))

    @property
    def line_count(self) -> int:
        """How many distinct lines the model counts."""
        return len(self._lines)

    @property
    def nbytes(self) -> int:
        """Memory held by the model, as `sys.getsizeof` counts its parts.

        Memory held: the object, its three arrays (their headers and data, and the allocator's
        own bookkeeping), its list of what it learned, and the URL set if made (its table
        and its ints). Counted as `sys.getsizeof` sees them, so that many small sites are not
        counted at a fraction of what they take (issue 56: ~1.5x on sites of a page or two, by
        RSS, when the arrays' data and a flat 400 bytes were counted)."""
        seen = self._seen
        held = (sys.getsizeof(self) + self._lines.nbytes + self._counts.nbytes + self._once.nbytes
                + self._urls.nbytes + 4 * _ARRAY_BYTES + sys.getsizeof(self.learned))
        return held if seen is None else held + sys.getsizeof(seen) + _INT_BYTES * len(seen)

    @property
    def urls(self) -> list[int]:
        """The recent page keys, oldest first."""
        return self._urls[self._start: self._end].tolist()

    @property
    def url_count(self) -> int:
        """How many recent URL hashes the model keeps."""
        return self._end - self._start

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SiteTemplate):
            return NotImplemented
        return (self.pages, self.since_halving) == (other.pages, other.since_halving) \
            and np.array_equal(self._lines, other._lines) and np.array_equal(self._counts, other._counts) \
            and np.array_equal(self._once_kept(), other._once_kept()) \
            and np.array_equal(self._urls[self._start: self._end], other._urls[other._start: other._end]) \
            and self.layout == other.layout

    __hash__ = None  # type: ignore[assignment]  # mutable, as the dataclass it was

    def __repr__(self) -> str:
        return (f"SiteTemplate(pages={self.pages!r}, since_halving={self.since_halving!r}, counts={self.counts!r}, "
                f"urls={self.urls!r})")

    def _find(self, hashes: LineHashes) -> tuple[np.ndarray, np.ndarray]:
        """Where each line is among the counted ones, and whether it is there."""
        lines = self._lines
        wanted = np.asarray(hashes, dtype="<u8")
        if not len(lines):
            return np.zeros(len(wanted), dtype=np.intp), np.zeros(len(wanted), dtype=bool)
        pos = np.searchsorted(lines, wanted)
        pos[pos == len(lines)] = 0
        return pos, lines[pos] == wanted

    def _url_set(self) -> set[int]:
        """The recent page keys as a set, made when first asked."""
        if self._seen is None:
            self._seen = set(self.urls)
        return self._seen

    def _has_url(self, key: int) -> bool:
        return key in self._url_set()

    def _add_url(self, key: int, keep: int) -> None:
        """Append a key (not among the recent ones) and drop the oldest beyond `keep`."""
        if self._end == len(self._urls):  # no room at the end: move the keys down, or grow
            n = self._end - self._start
            if 2 * n > len(self._urls):
                grown = np.empty(2 * len(self._urls), dtype="<u8")
                grown[:n] = self._urls[self._start: self._end]
                self._urls = grown
            else:
                self._urls[:n] = self._urls[self._start: self._end]
            self._start, self._end = 0, n
        seen = self._url_set()
        self._urls[self._end] = key
        self._end += 1
        seen.add(key)
        over = self._end - self._start - keep
        if over > 0:
            seen.difference_update(self._urls[self._start: self._start + over].tolist())
            self._start += over

    def counted(self, url: str) -> bool:
        """Whether the URL is among the site's recent pages (`page_key`: a re-fetch, or a paginated one's part)."""
        return self._has_url(page_key(url))

    def known(self, params: TemplateParams) -> bool:
        """Whether the site has shown enough distinct pages to tell its template (else: cold start)."""
        return self.pages >= params.min_pages

    def floor(self, params: TemplateParams) -> float:
        """How many of the site's (decayed) distinct pages a line must be on to be template.

        During the cold start: to be provisional template."""
        if not self.known(params):
            return max(params.cold_min_count, params.cold_min_share * self.pages)
        return max(params.min_count, params.min_share * self.pages)

    def template_lines(self, params: TemplateParams) -> set[int] | None:
        """The lines that are template now; None while the site is too new to tell."""
        if not self.known(params):
            return None
        return set(self._lines[self._counts >= self.floor(params)].tolist())

    def strip(self, lines: list[str], hashes: LineHashes, params: TemplateParams) -> tuple[str, int]:
        """The page's own text (its template lines removed) and how many lines were removed.

        One search of the site's sorted lines for all the page's lines. During the cold start the
        provisional template is removed (see the module's docstring)."""
        template = self.removed_lines(hashes, params)
        return ("\n".join(lines), 0) if template is None else without_lines(lines, template)

    def removed_lines(self, hashes: LineHashes, params: TemplateParams) -> list[bool] | None:
        """Which of the page's lines (by their hashes) `strip` removes.

        None: none, so that a caller splits the page's text into lines only when some are removed
        (most pages: none)."""
        if not len(hashes) or not len(self._lines):  # nothing is template before a line is counted
            return None
        at, found = self._find(hashes)
        template = (found & (self._counts[at] >= self.floor(params))).tolist()
        return template if any(template) else None

    def new_lines(self, hashes: LineHashes, exclude: LineHashes) -> list[int]:
        """Positions of the lines the site never showed before and not in `exclude` (first of each)."""
        skip, positions = set(_ints(exclude)), []
        for pos, (line, seen) in enumerate(zip(_ints(hashes), self._find(hashes)[1].tolist(), strict=True)):
            if line not in skip and not seen:
                skip.add(line)
                positions.append(pos)
        return positions

    def shows_every(self, hashes: LineHashes) -> bool:
        """Whether each of these lines (at least one) is among those the site's earlier pages showed."""
        # one line first: most pages show a new one there
        return self._first_line_at(hashes) is not None and bool(self._find(hashes)[1].all())

    def _first_line_at(self, hashes: LineHashes) -> int | None:
        """Where the first of these lines stands among the counted ones (None: not counted, or no line)."""
        counted = self._lines
        if not len(hashes) or not len(counted):
            return None
        line = int(hashes[0])
        first = int(counted.searchsorted(line))
        return None if first == len(counted) or int(counted[first]) != line else first

    def shown_before(self, url: str, hashes: LineHashes, pages: int = 1) -> bool:
        """Whether the URL is new and every one of these lines was on enough of the site's earlier pages.

        Whether the URL is new to the site and every one of these lines was on at least `pages`
        of its earlier distinct pages (`missed_min_pages`: so that no single page can make a
        later page's text look like what the site showed before)."""
        # the lines first: most pages fail there, before the URL is hashed and looked for
        first = self._first_line_at(hashes)  # one line first: most pages fail on it
        if first is None or int(self._counts[first]) < pages:
            return False
        at, found = self._find(hashes)
        return bool((found & (self._counts[at] >= pages)).all()) and not self._has_url(page_key(url))

    def learn(self, url: str, hashes: LineHashes, params: TemplateParams) -> bool:
        """Count a page's lines once for its site; False if the page was counted already."""
        key = page_key(url)
        if self._has_url(key):
            return False
        page = distinct_lines(hashes)
        document = document_tag(document_key(url))
        self.learned.append((key, page, document))
        self._learn(key, page, params, document)
        return True

    def _learn(self, key: int, page: np.ndarray, params: TemplateParams, document: int = 0) -> None:
        """`learn` of a page not counted yet: its key, its distinct line hashes in order, its document tag."""
        self._add_url(key, params.recent_urls)
        self.pages += 1
        if len(page):
            self._lines, self._counts, self._once = count_page(self._lines, self._counts, self._once, page,
                                                               np.uint32(document))
        if len(self._lines) > params.max_lines:  # keep the most seen (ties by hash: deterministic),
            ranked = np.lexsort((self._lines, ~self._counts))[: params.max_lines * 3 // 4]  # down to 3/4: amortised
            kept = np.sort(ranked)  # in hash order again
            self._lines, self._counts, self._once = self._lines[kept], self._counts[kept], self._once[kept]
        self.since_halving += 1
        if self.since_halving >= params.half_life:
            self.since_halving = 0
            self.pages //= 2
            kept_mask = self._counts >= 2
            # a line halved to one page's count: which page is not known
            self._lines, self._counts = self._lines[kept_mask], self._counts[kept_mask] // 2
            self._once = np.zeros(len(self._lines), dtype="<u4")

    def encode_learned(self) -> bytes:
        """What the template `learned` since it was last written, as a delta record.

        Per page its key (u64), how many lines (u32, `_WITH_DOCUMENT` set where its document key
        follows) and their hashes (u64), then its document tag (u32), little-endian."""
        parts: list[bytes] = []
        for key, page, document in self.learned:
            parts += [_LEARNED.pack(key, len(page) | _WITH_DOCUMENT), page.tobytes(), _DOCUMENT.pack(document)]
        return b"".join(parts)

    def replay(self, delta: bytes, params: TemplateParams) -> None:
        """Learn again, in order, the pages of a delta record (`encode_learned`).

        The same model as learning them the first time, as `learn` is a function of the model and
        the page."""
        pos = 0
        while pos < len(delta):
            key, n = _LEARNED.unpack_from(delta, pos)
            pos += _LEARNED.size
            with_document, n = bool(n & _WITH_DOCUMENT), n & ~_WITH_DOCUMENT
            page = np.frombuffer(delta, dtype="<u8", count=n, offset=pos).copy()  # writable: see `decode`
            pos += 8 * n
            document = 0
            if with_document:
                (document,) = _DOCUMENT.unpack_from(delta, pos)
                pos += _DOCUMENT.size
            self._learn(key, page, params, document)

    # -- bytes for the store ---------------------------------------------------------------
    # header (pages, since_halving, lines, urls), line hashes (u64), their counts (u32), URL keys
    # (u64), then the document tags of the lines counted once, in hash order (u32; records written
    # before keys were kept end before them: their lines have none), little-endian. The lines are
    # written in hash order; records written before 2026-11-25 hold them in the order they were
    # first counted, and are sorted when decoded.
    @property
    def encoded_size(self) -> int:
        """`len(self.encode())`, without encoding."""
        return _HEAD.size + 12 * len(self._lines) + 8 * self.url_count + 4 * int((self._counts == 1).sum())

    def _once_kept(self) -> np.ndarray:
        """The document tags of the lines counted once, in hash order: what `encode` keeps of them."""
        return self._once[self._counts == 1]

    def encode(self) -> bytes:
        """The model as the bytes the store keeps: its counters, line hashes and counts, recent URLs."""
        urls = self._urls[self._start: self._end]
        return b"".join((_HEAD.pack(self.pages, self.since_halving, len(self._lines), len(urls)),
                         self._lines.tobytes(), self._counts.tobytes(), urls.tobytes(), self._once_kept().tobytes()))

    @classmethod
    def decode(cls, data: bytes) -> SiteTemplate:
        """The model `encode` wrote."""
        pages, since, n_lines, n_urls = _HEAD.unpack_from(data)
        pos = _HEAD.size
        # copies, writable: `count_page` is compiled for writable arrays only (a read-only one is a
        # second specialisation, compiled on a fresh install and loaded in every process: ~0.3 s)
        lines = np.frombuffer(data, dtype="<u8", count=n_lines, offset=pos).copy()
        pos += 8 * n_lines
        counts = np.frombuffer(data, dtype="<u4", count=n_lines, offset=pos).copy()
        pos += 4 * n_lines
        urls = np.frombuffer(data, dtype="<u8", count=n_urls, offset=pos)
        pos += 8 * n_urls
        template = cls(pages, since, None, urls)
        once = np.zeros(n_lines, dtype="<u4")
        single = counts == 1
        if len(data) - pos >= 4 * int(single.sum()) > 0:  # else a record written before tags were kept
            once[single] = np.frombuffer(data, dtype="<u4", count=int(single.sum()), offset=pos)
        if n_lines > 1 and not bool((lines[1:] > lines[:-1]).all()):  # an older record: sorted now
            order = np.argsort(lines, kind="stable")
            lines, counts, once = lines[order], counts[order], once[order]
        template._lines, template._counts, template._once = lines, counts, once
        return template
