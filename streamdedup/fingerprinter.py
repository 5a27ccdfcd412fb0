"""The pure stages, as one named thing: record -> page -> clean -> tokens -> fingerprints.

No state and no store: the Detector runs it before its store lookups, the global topology's
fingerprint step runs it alone (its index partitions hold the state), evaluation and benchmarks
run it to compare methods on the same signatures.
"""

from __future__ import annotations

import base64
import logging
import os
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any, Generic, TypeVar, overload

import numpy as np
import orjson
import xxhash

from streamdedup.clean.errors import CleaningStackMissing
from streamdedup.clean.extract import Texts
from streamdedup.clean.learned_layout import OBSERVE, SiteLayout
from streamdedup.clean.pipeline import clean_page_texts, shown_text, try_other_extractor
from streamdedup.clean.template import (
    TEMPLATE_MODEL,
    line_hashes,
    split_lines,
    template_site,
)
from streamdedup.config import TOKENIZER_VERSION, DetectorConfig
from streamdedup.fingerprints.base import FingerprintMethod
from streamdedup.fingerprints.exact import ExactMethod
from streamdedup.fingerprints.registry import create_method, signature_config, signature_identity
from streamdedup.record.json_value import json_text
from streamdedup.record.page import TEXT_URL_SCHEME, Page, page_from_record
from streamdedup.record.readers import RawRecord
from streamdedup.record.rejection import Reason, Rejected
from streamdedup.tokens.document import Document
from streamdedup.verdict.contract import Rejection, Verdict
from streamdedup.verdict.relations import STEERED_METHOD, STEERED_VALUES

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Outcome:
    """One input record's result.

    The record (all its fields) and its `dedup` object; a judged page's typed `Verdict` too (the
    Python API hands it on; the outputs write `dedup`); `line`, the JSON text `record` was decoded
    from, if it was (file mode's outputs copy it rather than encode the page again:
    `outputs.files.output_line`)."""

    record: dict[str, Any]
    dedup: dict[str, Any]
    origin: str
    verdict: Verdict | None = None
    line: bytes | None = None

    @property
    def status(self) -> str:
        """The outcome's status: unique, duplicate or rejected."""
        return self.dedup["status"]

    def output(self) -> dict[str, Any]:
        """The output record: the input's fields and `dedup`."""
        return {**self.record, "dedup": self.dedup}


_T = TypeVar("_T")


class _made_once(Generic[_T]):  # noqa: N801 - used as a decorator, as functools.cached_property
    """`functools.cached_property` without its lock.

    Python 3.11's takes an RLock on every first read (gone in 3.12), and the Detector reads two of
    these once a page, ~1 µs each. The value goes into the instance's `__dict__`, which later reads
    find first."""

    def __init__(self, func: Callable[[Any], _T]) -> None:
        self.func, self.name = func, func.__name__
        self.__doc__ = func.__doc__

    @overload
    def __get__(self, instance: None, owner: type) -> _made_once[_T]: ...

    @overload
    def __get__(self, instance: object, owner: type) -> _T: ...

    def __get__(self, instance: object | None, owner: type) -> _made_once[_T] | _T:
        if instance is None:
            return self
        value = instance.__dict__[self.name] = self.func(instance)
        return value


@dataclass
class Fingerprinted:
    """A page after the pure stages, ready for the store: its signatures by method name."""

    page: Page
    record: dict[str, Any]
    origin: str
    signatures: dict[str, Any]  # method name -> signature (None: the method abstains)
    text: str = ""  # the cleaned main text (kept for evaluation's direct text similarity)
    arrival_ms: int | None = None  # when the record reached us (Kafka message time), if known
    place: tuple[int, ...] | None = None  # its place in its input, as numbers (`RawRecord.place`)
    template_known: bool = False  # its site's template (learned, or provisional in the cold start) was removed
    visible: str = ""  # all the page's visible text, normalised (what its site's template learns)
    # the MinHash signature of the article element's own text, where extraction's rescue replaced
    # it (`clean.extract.Texts.steered`; own-site candidates, `verdict/relations.py`); else None
    steered: Any = None
    # how `fast` was asked to use the page's site's learned layout ("": not asked: another extractor,
    # not HTML, or learned extraction off), and what the page showed of it (`clean.learned_layout`)
    layout_asked: str = ""
    layout_seen: str = ""
    # the page's rejection, where it came after a read by a learned layout: the stateful stage
    # reads it again if its site's layout, as the site's earlier pages left it, asks otherwise
    rejection: Outcome | None = None
    line: bytes | None = None  # the JSON text `record` was decoded from, if it was (`Outcome.line`)
    # its main text is its first `max_text_chars` characters only (`Texts.main_cut`): `engine.as_cut`
    text_cut: bool = False

    @_made_once
    def site_hash(self) -> int:
        """The 64-bit key of the page's site (its registrable domain), as the store files it."""
        return site_hash(self.page.site)

    @_made_once
    def template_hash(self) -> int:
        """The key of the page's template model: its host (`clean.template.template_site`)."""
        return site_hash(template_site(self.page.url))

    @_made_once
    def visible_lines(self) -> tuple[list[str], list[int]]:
        """The visible text's lines and their hashes (`split_lines`), made once."""
        return split_lines(self.visible)

    @_made_once
    def visible_hashes(self) -> np.ndarray:
        """The visible text's line hashes (`line_hashes`), made once.

        What its site learns of every page (the lines themselves are asked for only by the rare
        missed-content test)."""
        return line_hashes(self.visible)

    @_made_once
    def text_hashes(self) -> np.ndarray:
        """The main text's line hashes (`line_hashes`), made once for its text.

        Asked by the site's template and its shown lines, and by the article-block marks
        (`own_text`); `replaced` with another text drops them (or takes the new text's)."""
        return line_hashes(self.text)

    def replaced(self, **changes: Any) -> Fingerprinted:
        """A copy with these fields changed.

        `dataclasses.replace` without its per-call checks; the copy keeps the site hash if it was computed."""
        copy = object.__new__(Fingerprinted)
        copy.__dict__.update(self.__dict__, **changes)
        signatures = changes.get("signatures")
        if self.text_cut and signatures is not None and signatures.get(ExactMethod.name) is not None:
            # fingerprinted again (its site's template taken off): a cut page's exact signature stays
            # its whole text's hash, or a page sharing only its first 2 M characters matched it `exact`
            copy.signatures = {**signatures, ExactMethod.name: self.signatures.get(ExactMethod.name)}
        if "text" in changes and "text_hashes" not in changes:
            copy.__dict__.pop("text_hashes", None)
        if "page" in changes:
            copy.__dict__.pop("site_hash", None)
            copy.__dict__.pop("template_hash", None)
        return copy


@lru_cache(maxsize=1 << 14)
def site_hash(site: str) -> int:
    """xxh3-64 of a site's name.

    The key of same-site candidates (the registrable domain) and of a template model
    (`template_site`: the host)."""
    return xxhash.xxh3_64_intdigest(site.encode("utf-8", "surrogatepass"))


class Fingerprinter:
    """Parses, cleans, tokenises and fingerprints one record at a time; pure and parallelisable."""

    def __init__(self, config: DetectorConfig) -> None:
        self.config = config
        self.methods: list[FingerprintMethod[Any, Any]] = [
            create_method(name, **config.params_for(name)) for name in config.methods]
        # what signatures depend on besides the methods' own parameters (recorded in stores)
        self.store_config = {"cleaning": str(config.cleaning), "tokenizer": TOKENIZER_VERSION,
                             "template": f"model {TEMPLATE_MODEL} {config.template}" if config.template else "off"}
        # the whole of it, the methods' own parameters included; and its 8-byte identity, which the
        # global topology's index requests carry (`IndexRequest.made_by`)
        self.signature_config = signature_config(self.store_config, self.methods)
        self.identity = signature_identity(self.signature_config)
        warm_up(self.methods)
        self.threads = prepare_threads(config.prepare_threads)
        self.steered_method = steered_method(self.methods)
        # learned extraction (clean/learned_layout.py): `fast` only, and kept in the template records
        self.learned = config.learned_extraction and config.cleaning.extractor == "fast" and config.template is not None
        # each site's layout as the stateful stage last left it (`read_by_layout`), carried on by
        # the pages `prepare` read one by one since: a hint, which the stateful stage checks;
        # bounded (emptied at `MAX_LAYOUT_HINTS`)
        self.layout_hints: dict[int, SiteLayout] = {}
        # how pages were read (summary.json's and the worker's "extraction"), and how many the
        # stateful stage read again because `prepare`'s hint was not their site's layout
        self.extraction: Counter[str] = Counter({kind: 0 for kind in EXTRACTION_COUNTS})
        self.extraction_redone = 0

    def prepare_many(self, raws: Sequence[RawRecord]) -> list[Fingerprinted | Outcome]:
        """`prepare` of each record, in their order.

        With more than one thread (`prepare_threads`) the pages that may be HTML are prepared side
        by side, each thread with its own extraction process: the parse and main-content extraction
        (most of an HTML page's CPU, in that process) of several pages run on several cores, while
        the Python stages take turns. Pages with no markup are prepared in the calling thread: they
        hold the GIL from end to end, so a thread of their own only adds its hand-offs (6,000
        plain-text pages: ~15 % more CPU). The results are the same as one by one: `prepare` is
        pure. With learned extraction a site's pages are read in order until its layout hint is
        warm (`_site_chain`), the sites side by side, then its other pages side by side."""
        if self.threads <= 1 or len(raws) <= 1:
            return [self.prepare(raw) for raw in raws]
        reads = list(zip(raws, [self._read(raw) for raw in raws], strict=True))
        heavy = [(i, raw, read) for i, (raw, read) in enumerate(reads)
                 if isinstance(read, tuple) and may_be_html(read[0])]
        if len(heavy) <= 1:
            return [self._finish(raw, read) for raw, read in reads]
        pool = _pool(self.threads)
        futures: dict[int, Future[Any]] = {}
        try:
            if self.learned:
                sites: dict[int, list[tuple[int, RawRecord, tuple[Page, dict[str, Any]]]]] = {}
                for entry in heavy:
                    sites.setdefault(site_hash(template_site(entry[2][0].url)), []).append(entry)
                chains = [pool.submit(self._site_chain, pool, entries) for entries in sites.values()]
                prepared: dict[int, Fingerprinted | Outcome] = {}
                for chain in chains:
                    done, rest = chain.result()
                    prepared.update(done)
                    futures.update(rest)
                return [prepared[i] if i in prepared else futures[i].result() if i in futures
                        else self._finish(raw, read) for i, (raw, read) in enumerate(reads)]
            futures = {i: pool.submit(self._fingerprint, raw, *read) for i, raw, read in heavy}
            return [futures[i].result() if i in futures else self._finish(raw, read)
                    for i, (raw, read) in enumerate(reads)]
        except BaseException:  # Ctrl-C, a stop: the pages not started are not prepared
            for future in futures.values():
                future.cancel()
            raise

    def _site_chain(self, pool: ThreadPoolExecutor, entries: list[tuple[int, RawRecord, tuple[Page, dict[str, Any]]]]
                    ) -> tuple[dict[int, Fingerprinted | Outcome], dict[int, Future[Any]]]:
        """One site's pages of a batch: read in order, each by the layout its site's earlier ones foresee.

        Until the site's layout is warm (or for `CHAIN_PAGES` pages); its other pages are then
        handed to the pool with that layout's request (`read_by_layout` reads one again where the
        site relearned in the batch). Returns the pages read and those handed on."""
        done: dict[int, Fingerprinted | Outcome] = {}
        layout = self.layout_hints.get(site_hash(template_site(entries[0][2][0].url)))
        for n, (i, raw, (page, record)) in enumerate(entries):
            if (layout is not None and layout.warm) or n >= CHAIN_PAGES:
                return done, {j: pool.submit(self._fingerprint, later, *read, self._request(read[0], layout))
                              for j, later, read in entries[n:]}
            result = done[i] = self._fingerprint(raw, page, record, self._request(page, layout))
            if isinstance(result, Fingerprinted):
                layout = _foreseen(layout, result)
        return done, {}

    def prepare(self, raw: RawRecord) -> Fingerprinted | Outcome:
        """The pure stages (parse, clean, tokenise, fingerprint): no store access, parallelisable.

        Pages prepared one by one carry their site's layout hint on, as the stateful stage will
        learn from them (`foresee`): a site that warms in a batch reads its next pages by its
        container at once, not again in the stateful stage."""
        result = self._finish(raw, self._read(raw))
        if self.learned and isinstance(result, Fingerprinted):
            self.foresee(result)
        return result

    def foresee(self, item: Fingerprinted) -> None:
        """The site's layout hint after this page, as `read_by_layout` will learn it."""
        known = self.layout_hints.get(item.template_hash)
        layout = _foreseen(known, item)
        if layout is not known and layout is not None:
            self.hint(item.template_hash, layout)

    def _finish(self, raw: RawRecord, read: tuple[Page, dict[str, Any]] | Outcome) -> Fingerprinted | Outcome:
        return read if isinstance(read, Outcome) else self._fingerprint(raw, *read)

    def _read(self, raw: RawRecord) -> tuple[Page, dict[str, Any]] | Outcome:
        """The record's page and its pass-through fields, or its rejection."""
        record: dict[str, Any] = {}
        try:
            value, record = self._decode(raw)
            return page_from_record(value, max_content_bytes=self.config.cleaning.max_content_bytes,
                                    position=raw.position, now_ms=raw.arrival_ms,
                                    max_skew_ms=self.config.max_clock_skew_ms), record
        except Exception as err:  # noqa: BLE001 - one bad page must not stop the stream
            return self._failed(raw, record, err)

    def _fingerprint(self, raw: RawRecord, page: Page, record: dict[str, Any],
                     layout: str | None = None) -> Fingerprinted | Outcome:
        request = self.layout_request(page) if layout is None else layout
        line = json_text(raw.data) if raw.fields is None and raw.data is not None else None  # as decoded
        try:
            texts, signatures = self.signatures(page, request)
            return Fingerprinted(page, record, raw.origin, signatures, texts.main, raw.arrival_ms, raw.place,
                                 visible=texts.visible, steered=self.steered_signature(texts.steered, page.lang),
                                 layout_asked=request if texts.layout else "", layout_seen=texts.layout, line=line,
                                 text_cut=texts.main_cut)
        except CleaningStackMissing:  # a broken install: every HTML page would fail, so the run stops
            raise
        except Rejected as err:
            if request and err.reason is Reason.NO_TEXT and may_be_html(page):  # its text may depend on the request
                return Fingerprinted(page, record, raw.origin, {}, arrival_ms=raw.arrival_ms, place=raw.place,
                                     layout_asked=request, rejection=self._failed(raw, record, err), line=line)
            return self._failed(raw, record, err)
        except Exception as err:  # noqa: BLE001 - one bad page must not stop the stream
            return self._failed(raw, record, err)

    def layout_request(self, page: Page) -> str:
        """How `fast` is to read the page (`clean.learned_layout`'s request; "": learned extraction off)."""
        return self._request(page, self.layout_hints.get(site_hash(template_site(page.url))) if self.learned else None)

    def _request(self, page: Page, layout: SiteLayout | None) -> str:
        """How `fast` is to read the page if its site's layout is `layout` (None: none yet)."""
        if not self.learned or page.url.startswith(TEXT_URL_SCHEME):
            return ""
        return OBSERVE if layout is None else layout.request()

    def read_again(self, item: Fingerprinted, request: str) -> Fingerprinted | Outcome:
        """The page prepared again, read as `request` asks (the stateful stage's, `read_by_layout`)."""
        self.extraction_redone += 1
        raw = RawRecord(origin=item.origin, arrival_ms=item.arrival_ms, place=item.place)
        return self._fingerprint(raw, item.page, item.record, request)

    def hint(self, template_hash: int, layout: SiteLayout) -> None:
        """Note a site's layout (a copy) for the next pages `prepare` reads."""
        hints = self.layout_hints
        if len(hints) >= MAX_LAYOUT_HINTS and template_hash not in hints:
            hints.clear()
        hints[template_hash] = replace(layout)

    def _failed(self, raw: RawRecord, record: dict[str, Any], err: Exception) -> Outcome:
        """A rejection with its reason; any other error is a processing error, logged."""
        if isinstance(err, Rejected):
            return self._rejected(raw, record, err.reason.value, err.detail)
        log.error("processing failed for %s", raw.origin, exc_info=err)
        return self._rejected(raw, record, Reason.PROCESSING_ERROR.value, f"{type(err).__name__}: {err}")

    @staticmethod
    def _decode(raw: RawRecord) -> tuple[Any, dict[str, Any]]:
        """The record's JSON value and its pass-through fields (JSON-safe)."""
        if raw.rejection is not None:  # a part of the input its reader could not read
            raise Rejected(*raw.rejection)
        if raw.fields is not None:
            return raw.fields, _raw_payload(raw)
        data = json_text(raw.data)
        if not data or data.isspace():  # a tombstone reads as b"": say so in words
            raise Rejected(Reason.INVALID_JSON, "the message is empty (no value, as a Kafka tombstone, or only "
                           "blanks): a page is one JSON object with url and content")
        try:
            value = orjson.loads(data)
        except orjson.JSONDecodeError as err:
            try:
                data.decode("utf-8")
            except UnicodeDecodeError as bad:
                raise Rejected(Reason.UNDECODABLE, f"not UTF-8 (byte {bad.start}): a JSON line is UTF-8 text; "
                               "re-encode the input (e.g. iconv -f latin1 -t utf-8)") from None
            raise Rejected(Reason.INVALID_JSON, f"not JSON: {err}") from None
        return value, value if isinstance(value, dict) else {}

    def signatures(self, page: Page, layout: str = "") -> tuple[Texts, dict[str, Any]]:
        """Clean, tokenise and compute every enabled method's signature.

        The page's visible text too when the template model is on. `layout`: how `fast` uses the
        site's learned layout (`clean.learned_layout`'s request)."""
        texts = clean_page_texts(page, self.config.cleaning, visible=self.config.template is not None, layout=layout)
        try:
            signatures = fingerprint_text(texts.main, page.lang, self.methods, self.config.cleaning.min_words)
        except Rejected as err:
            raise Rejected(err.reason, self._too_few_words(page, texts, layout)) from None
        if texts.main_cut and signatures.get(ExactMethod.name) is not None:  # the whole text's, not its cut's
            signatures[ExactMethod.name] = texts.main_hash
        return texts, signatures

    def _too_few_words(self, page: Page, texts: Texts, layout: str) -> str:
        """`no_text`'s human text for a main text under `min_words`: how many words the page shows, and the fix.

        The page's visible text is read here where it was not (once, on a page rejected anyway)."""
        cleaning = self.config.cleaning
        kept = Document.from_text(texts.main, page.lang).num_tokens
        told = f"the main text has {kept} words (fewer than {cleaning.min_words})"
        visible = texts.visible or shown_text(page, cleaning, layout)
        if visible is None:  # out of time: what the page shows is not known
            return told
        shown = Document.from_text(visible, page.lang).num_tokens
        if shown <= kept:
            return f"{told}, and the page shows no more: too little text to judge"
        return (f"{told}, but the page shows {shown} words: the {cleaning.extractor} extractor took the rest for"
                f" menus, notices or other boilerplate, or did not read it; {try_other_extractor(cleaning)}")

    def steered_signature(self, steered: str, lang: str | None) -> Any:
        """The MinHash signature of a rescued page's article element text, or None.

        The MinHash signature of a rescued page's article element text (None: no such text, fewer
        words than a page must have, or no MinHash among the methods). Nor for a text of one line:
        an element holding a headline alone says nothing of what the page holds, and a revision
        may change its headline (a cold test set's pair was lost to it: see docs/evaluation.md)."""
        minhash = self.steered_method
        if minhash is None or sum(1 for line in steered.splitlines() if line.strip()) < 2:
            return None
        try:
            signature = fingerprint_text(steered, lang, [minhash], self.config.cleaning.min_words)[minhash.name]
        except Rejected:  # fewer words than a page must have
            return None
        if signature is None:
            return None
        # its first values alone (compared, never indexed); its checks kept, as every encoded signature ends in them
        return replace(signature, values=signature.values[:STEERED_VALUES])

    @staticmethod
    def _rejected(raw: RawRecord, record: dict[str, Any], reason: str, detail: str) -> Outcome:
        if not record:
            record = _raw_payload(raw)
        return Outcome(record, Rejection(reason, detail, raw.origin).as_dict(), raw.origin)


# summary.json's and the worker's "extraction": pages read from their site's learned container, by
# `fast` (the site cold), from its brief container after the learned one failed (brief), by `fast`
# after both failed (fallback), and of these the pages after which the site dropped its container to
# learn again (relearned)
EXTRACTION_COUNTS = ("learned", "brief", "fast", "fallback", "relearned")
MAX_LAYOUT_HINTS = 1 << 16  # sites whose layout `prepare` keeps (~300 bytes each)
# A cold site's pages of a batch read one after the other (`_site_chain`) before the rest go side
# by side: a site that has not warmed in this many is one whose pages disagree (it may never)
CHAIN_PAGES = 8

_pools: dict[tuple[int, int], ThreadPoolExecutor] = {}
_pools_lock = threading.Lock()


def _foreseen(layout: SiteLayout | None, item: Fingerprinted) -> SiteLayout | None:
    """A site's layout after `item`, as `read_by_layout` will learn it (a copy; `layout` if it teaches nothing)."""
    if not item.layout_seen or item.rejection is not None:
        return layout
    after = replace(layout) if layout is not None else SiteLayout()
    after.observe(item.layout_seen)
    return after


def _pool(threads: int) -> ThreadPoolExecutor:
    """This process's pool of `threads` threads, kept for its life as the main thread's extraction process is.

    Each thread's process is started once (~0.3 CPU-s of imports), not per Detector. Keyed by
    process id too: a forked child starts its own."""
    key = (os.getpid(), threads)
    with _pools_lock:
        pool = _pools.get(key)
        if pool is None:
            pool = _pools[key] = ThreadPoolExecutor(threads, thread_name_prefix=f"prepare{threads}")
        return pool


def may_be_html(page: Page) -> bool:
    """Whether the page may go through the extraction process.

    `is_html` needs a "<" among the first 65,536 characters (bytes: 4 times as many, so any encoding
    of them is covered). Only where the page is prepared depends on it, never what it gives."""
    content = page.content
    if isinstance(content, bytes):
        return b"<" in content[:1 << 18]
    return "<" in content[:1 << 16]


def prepare_threads(setting: int) -> int:
    """Threads for `prepare_many`.

    The setting, or with 0 one per CPU this process may run on (at most 8: each thread keeps an
    extraction process of ~100 MB)."""
    if setting > 0:
        return setting
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(8, cpus))


def steered_method(methods: Sequence[FingerprintMethod[Any, Any]]) -> FingerprintMethod[Any, Any] | None:
    """The method that signs a rescued page's element text (`STEERED_METHOD`), if it is among `methods`."""
    return next((m for m in methods if m.name == STEERED_METHOD), None)


def steered_record(item: Fingerprinted, methods: Sequence[FingerprintMethod[Any, Any]]) -> bytes:
    """The page's steered signature as its record keeps it; b"": none.

    The signature is `Fingerprinted.steered`, kept as `DocRecord.steered`."""
    method = None if item.steered is None else steered_method(methods)
    return b"" if method is None else method.encode(item.steered)


_WARM_UP_TEXTS = ("Compiled kernels load once. Tables too.",  # ASCII text is scanned as bytes
                  "東京 und Wörter; བོད་ཀྱི།")  # other text as 32-bit code points


def warm_up(methods: list[FingerprintMethod[Any, Any]]) -> None:
    """Load the compiled kernels and tables before the store opens.

    Load the compiled kernels and tables (numba's disk cache, the character table) before the
    store opens, so the first batch of a fresh process is not seconds slower than the rest. The
    nesting check's kernels (~15 ms) load at the first HTML page that needs them: plain text never does."""
    for text in _WARM_UP_TEXTS:
        fingerprint_text(text, None, methods, 0)


def fingerprint_text(text: str, lang: str | None, methods: list[FingerprintMethod[Any, Any]],
                     min_words: int) -> dict[str, Any]:
    """Cleaned text -> each method's signature (None: it abstains); one Document shared by all."""
    doc = Document.from_text(text, lang)
    if doc.num_tokens < min_words:
        raise Rejected(Reason.NO_TEXT, f"the main text has {doc.num_tokens} words (fewer than {min_words})")
    return {m.name: m.signature(doc) for m in methods}


def _raw_payload(raw: RawRecord) -> dict[str, Any]:
    """The original bytes, kept so a rejected record can be inspected and replayed."""
    if raw.fields is not None:
        fields = dict(raw.fields)
        content = fields.get("content")
        if isinstance(content, bytes):
            fields["content_base64"] = base64.b64encode(content).decode("ascii")
            del fields["content"]
        return fields
    data = raw.data or b""
    try:
        return {"raw": data.decode("utf-8")}
    except UnicodeDecodeError:
        return {"raw_base64": base64.b64encode(data).decode("ascii")}
