"""In-process deduplication: add pages or plain texts one by one or in lists, get a typed verdict each.

    with Deduplicator() as dedup:
        first = dedup.add("An article about the harbour ...", id="a")
        again = dedup.add("An article about the harbour ...", id="b")
        again.status, again.duplicate_of  # ("duplicate", "a")

The same engine as `streamdedup dedup` and the Kafka worker (`Detector`), on a store in a
temporary folder (removed on `close`) or in a folder that later runs open again.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import uuid
import weakref
from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from streamdedup.api.interrupts import AddInterrupted, filed_note, sigint_held
from streamdedup.api.stories import FiledStories
from streamdedup.api.values import (
    bytes_content_as_base64,
    columns_hint,
    first_present,
    json_value,
    missing,
    plain_value,
    row_record,
    table_rows,
    unencodable,
    whole_number_ids,
)
from streamdedup.clean.extract import is_html
from streamdedup.config import DetectorConfig
from streamdedup.detector import Detector
from streamdedup.fingerprinter import Outcome
from streamdedup.record.batches import batches
from streamdedup.record.page import FIELD_ALIASES, TEXT_URL_SCHEME
from streamdedup.record.readers import RawRecord
from streamdedup.record.rejection import Reason
from streamdedup.store.sessions import take_session
from streamdedup.verdict.contract import Rejection, Verdict

Item = str | Mapping[str, Any]


class Deduplicator:
    """A store of pages and texts that judges each new one against those filed before it.

    `config`: methods, policies, extractor (default `DetectorConfig()`, as the command line).
    `state`: a store folder, made if new and kept (a later `Deduplicator(state=...)` or
    `streamdedup dedup --state` continues from it); None: a temporary folder removed on `close`.
    `keep_stories`: keep what `stories` needs (~0.5 KB a page filed, in memory; a service that
    never asks passes False). Use it as a context manager, or call `close`. Safe to share between
    threads: its calls take turns (one at a time, each whole), so threads add no speed; `add_many`
    is the fast way."""

    def __init__(self, config: DetectorConfig | None = None, state: str | os.PathLike[str] | None = None, *,
                 keep_stories: bool = True) -> None:
        if config is not None and not isinstance(config, DetectorConfig):
            hint = (f"; a store folder is the second argument: Deduplicator(state={str(config)!r})"
                    if isinstance(config, (str, os.PathLike)) else
                    " (the keys of a config file: DetectorConfig.from_mapping(...))")
            raise TypeError(f"config is a DetectorConfig, e.g. DetectorConfig(policy='exact|minhash'), got "
                            f"{type(config).__name__}{hint}")
        self._temporary: str | None = None
        if state is None:
            self._temporary = tempfile.mkdtemp(prefix="streamdedup-")
            state = self._temporary
        self.state = Path(state).expanduser()  # "~/stores/news", as a shell would read it
        # the detector and its store serve one call at a time: two threads in one batch interleave
        # their staged pages and the store loses some of them for good (and numba's compile lock
        # against the store's can hang); reentrant, as `query` calls `query_many`
        self._lock = threading.RLock()
        # the process that opened the store: a forked child sharing it would write to a copy of
        # its memory tables that no one ever flushes (its verdicts said `unique`, its pages lost)
        self._owner = os.getpid()
        try:
            self._detector = Detector(config or DetectorConfig(), self.state)
        except BaseException:
            self._remove_temporary()
            raise
        self._count = 0
        self._given_ids: dict[str, str] = {}  # the ids the items of a call gave, by their origin ("item N")
        # the place of an item among all a store was ever given (`RawRecord.position`): an undated
        # page is told apart from another fetch of its url by it, also after the store is reopened
        # or shared with `streamdedup dedup` jobs, which take their numbers from the same count;
        # taken at the first item, so that a Deduplicator that only asks writes nothing
        self._session: int | None = None
        self._stories = FiledStories(keep_stories, self._detector.store.get_meta_int("next_seq", 0))
        # a temporary store not closed is still removed when the object goes
        self._finalizer = weakref.finalize(self, _close, self._detector, self._temporary, self._owner)

    @property
    def config(self) -> DetectorConfig:
        """The configuration the store judges with."""
        return self._detector.config

    def add(self, content: str, id: str | None = None, url: str | None = None,
            fetched_at: datetime | str | None = None, html: bool | None = None) -> Verdict | Rejection:
        """Judge one page or plain text against those filed before it, then file it.

        `content`: the page's HTML (its main text is extracted) or a plain text (taken as it is).
        `html`: None decides by the content (markup first, or an HTML document's head); True or
        False says which. `id`: the page's id, which later verdicts name in `duplicate_of`
        (default: derived from `url` and `fetched_at` if a url is given, else a random one).
        `url`: its site decides which policy applies (same site or not) and which site template
        is learned; a text without one is its own site. `fetched_at`: event time (retention).
        Returns a `Verdict` (status "unique" or "duplicate") or a `Rejection` (empty, no text...)."""
        self._check_open("add")  # before the lock: a forked child's copy of it may be held for ever
        with self._lock:
            return self._file([self.record(content, id, url, fetched_at, html)], "add")[0]

    def query(self, content: str, id: str | None = None, url: str | None = None,
              fetched_at: datetime | str | None = None, html: bool | None = None) -> Verdict | Rejection:
        """What `add` would answer, without filing the page: the store is left as it was."""
        self._check_open("query")  # before the lock: a forked child's copy of it may be held for ever
        with self._lock:
            return self.query_many([self.record(content, id, url, fetched_at, html)])[0]

    def add_many(self, items: Iterable[Item]) -> list[Verdict | Rejection]:
        """`add` of each item, in order, a store write per batch: far faster than one by one.

        An item is a string (HTML or plain text, as `add` takes it with its defaults) or a page
        record as in a crawl file: a mapping with a url and content, or an id and a `text`
        field (see `record`); any other fields of a crawl record are read as in file mode.
        A pandas or polars DataFrame is read row by row, each row such a record.

        Each batch (`config.batch_size` items) is filed whole or not at all. Ctrl-C (a
        KeyboardInterrupt) stops the call at once, or right after a batch's store write in
        progress, and raises `AddInterrupted`, a KeyboardInterrupt naming how many items were
        filed (the first `filed`) with their verdicts (`results`): `add_many(items[err.filed:])`
        files the rest. Another error has a note saying the same."""
        self._check_open("add_many")
        with self._lock:
            return self._file(items, "add_many")

    def query_many(self, items: Iterable[Item]) -> list[Verdict | Rejection]:
        """`query` of each item: judged as one batch (later items see earlier ones), then discarded."""
        self._check_open("query_many")
        with self._lock:
            records = self._raws(items, "query_many")
            detector = self._detector
            try:
                outcomes, _ = detector.decide_staged(detector.prepare_many(records))
            finally:
                detector.discard()  # the staged batch is dropped uncommitted (Ctrl-C in it too)
            return [self._result(outcome) for outcome in outcomes]

    def _file(self, items: Iterable[Item], method: str) -> list[Verdict | Rejection]:
        """Judge and file `items` batch by batch; each batch's store write is whole (`interrupts`)."""
        detector, config = self._detector, self._detector.config
        results: list[Verdict | Rejection] = []
        records: list[RawRecord] | None = None  # None: still reading the items
        try:
            records = self._raws(items, method)
            for chunk in batches(records, config.batch_size, config.batch_bytes):
                outcomes, staged = detector.decide_staged(detector.prepare_many(chunk))
                with sigint_held():  # Ctrl-C waits for the write: a store written in part would lose pages
                    detector.commit(staged)
                    self._stories.keep(outcomes)
                    results += [self._result(outcome) for outcome in outcomes]
        except BaseException as err:
            detector.discard()  # the batch in hand, decided and not written, is forgotten
            total = None if records is None else len(records)
            if isinstance(err, KeyboardInterrupt):
                raise AddInterrupted(method, len(results), total, results) from err
            if results and records is not None:  # (a wrong item is refused before any is filed)
                err.add_note(filed_note(method, len(results), len(records)))
            raise
        return results

    def stories(self) -> list[dict[str, Any]]:
        """Story -> its pages, for the pages this Deduplicator filed: [{cluster_id, size, pages}].

        The shape of file mode's clusters.jsonl and `clusters.Stories.stories()`, folded by the
        same code from each filed page's verdict: a story is the pages joined by `duplicate_of`,
        their clusters and the clusters a page merged, named by its earliest cluster; `related`:
        the stories its pages are related to (a follow-up and what it follows up, either way);
        `pages` (id, url: None for a text given without one, fetch_time, status, duplicate_of, and
        related_to where the verdict has it) in the order they were fetched. Queries and rejections
        are in none. Also after `close`.

        Only pages filed by this object: a kept store opened again holds no cluster events (nor
        merges, nor urls), so the pages it held before are in no story (a UserWarning says so
        once); a page added since that joins one of their clusters is in a story named by that
        cluster, listing the pages added since. file mode's clusters.jsonl has a whole job's."""
        if os.getpid() != self._owner:
            self._check_open("stories")  # a forked child's copy: refused, as every call
        with self._lock:
            return self._stories.stories()

    def record(self, content: str, id: str | None = None, url: str | None = None,
               fetched_at: datetime | str | None = None, html: bool | None = None) -> dict[str, Any]:
        """The page record `add` files for these arguments (a text without url gets `text:` + id)."""
        if not isinstance(content, str):
            hint = "; a page record (a mapping, a DataFrame's row) goes in a list: add_many([record])" if (
                isinstance(content, Mapping) or row_record(content) is not None) else ""
            raise TypeError(f"content must be a str (HTML or plain text), got {type(content).__name__}{hint}")
        markup = looks_like_html(content) if html is None else html
        if id is None and url is None:
            id = uuid.uuid4().hex
        record: dict[str, Any] = {"url": url if url is not None else TEXT_URL_SCHEME + str(id)}
        if id is not None:
            record["id"] = id
        record.update({"content": content, "content_type": "text/html"} if markup
                      else {"text": content, "content_type": "text/plain"})
        if (fetched := plain_value(fetched_at)) is not None:  # a datetime as ISO text; NaT, NaN: no fetch time
            record["fetched_at"] = fetched
        return record

    def _raws(self, items: Iterable[Item], method: str) -> list[RawRecord]:
        """The records of a list of items; refused once closed, or a single item (iterated: its letters)."""
        self._check_open(method)
        if isinstance(items, (str, bytes, Mapping)):  # iterated, a text would be judged letter by letter
            hint = columns_hint(items) if isinstance(items, Mapping) else ""
            raise TypeError(f"{method} takes a list of items (texts or page records), got a single "
                            f"{type(items).__name__}{hint or ': pass it in a list, [item]'}")
        if not isinstance(items, Iterable):
            raise TypeError(f"{method} takes a list of items (texts or page records), got {type(items).__name__}")
        rows = table_rows(items)  # a DataFrame: its rows (iterated, it gives its column names)
        items = items if rows is None else rows
        if method in ("add", "add_many") and self._session is None:
            with sigint_held():  # a store write: whole
                self._session = take_session(self._detector.store)
        # a query files nothing, so it takes no number: 0, which no session of a store has
        session = self._session or 0
        self._given_ids.clear()  # of this call's items only
        return [self._raw(item, session, index) for index, item in enumerate(items)]

    def _check_open(self, method: str) -> None:
        """Refuse `method` (named as the caller called it) once the store is closed, or in another process."""
        if os.getpid() != self._owner:
            raise RuntimeError(f"this Deduplicator was opened by process {self._owner}, not this one "
                               f"({os.getpid()}): {method} in a forked child would lose its pages; open a "
                               "Deduplicator in each process (e.g. in a Pool's initializer), with its own state "
                               "folder (a kept store is open in one process at a time)")
        if not self._finalizer.alive:
            raise ValueError(f"this Deduplicator is closed: {method} needs an open one (Deduplicator(state=...) "
                             "opens a kept store again)")

    def _raw(self, item: Item | None, session: int, index: int) -> RawRecord:
        """The record of one item (`index`: its place in the list given, which an error names)."""
        self._count += 1
        origin, position = f"item {self._count}", f"api {session}:#{self._count}"
        if missing(item):  # a gap in a list of texts (None, or NaN from a column's tolist()): this item's rejection
            return RawRecord(origin=origin, position=position,
                             rejection=(Reason.EMPTY_CONTENT, f"the item is {item!r} (a missing value): no text"))
        record = self.record(item) if isinstance(item, str) else row_record(item) or item
        if not isinstance(record, Mapping):
            if isinstance(item, (bytes, bytearray)):
                hint = (": decode it (.decode(errors='replace')), or give a page record {'url': ..., 'content': "
                        "<bytes>}, whose bytes are decoded as a crawl file's are")
            elif isinstance(item, (list, tuple)) or hasattr(item, "__array__"):  # df.values, a row's values
                hint = ": a row of values names no field: give a page record {'id': ..., 'text': ...} or the DataFrame"
            else:
                hint = ": give str(item), or a page record {'url': ..., 'content': ...}"
            raise TypeError(f"an item is a str or a page record (a mapping); item {index} of the list is "
                            f"{type(item).__name__}{hint} (no item was filed)")
        record = whole_number_ids(record)  # an int column with a gap is floats in pandas
        given = plain_value(first_present(record, "id"))
        if not isinstance(item, str) and isinstance(given, (str, int)) and not isinstance(given, bool) and given != "":
            self._given_ids[origin] = str(given)  # a rejection of the item names it, as a verdict would
        if first_present(record, "content") is None and (gap := next(
                (name for name in FIELD_ALIASES["content"] if name in record), None)) is not None:
            # a gap in the text column: "no url field" (a text row has none) would name the wrong fix
            return RawRecord(origin=origin, position=position, rejection=(
                Reason.MISSING_CONTENT, f"{gap} is {record[gap]!r} (a missing value): no text to judge"))
        # a plain text: its own site, as `add` files it (a DataFrame's row without a url has NaN there)
        if not missing(record.get("text")) and first_present(record, "url") is None:
            page_id = plain_value(first_present(record, "id"))
            page_id = uuid.uuid4().hex if page_id is None or page_id == "" else page_id  # an id 0 is an id
            record = {**record, "id": page_id, "url": TEXT_URL_SCHEME + str(page_id)}
        try:  # numpy and pandas values as JSON holds them, a missing one as null: the field left out (`values`)
            data = orjson.dumps(bytes_content_as_base64(record), default=json_value)
        except TypeError:  # bytes, a lone surrogate: no JSON line holds them; the item's rejection, not the batch's
            return RawRecord(origin=origin, position=position, rejection=(Reason.INVALID_FIELD, unencodable(record)))
        return RawRecord(origin=origin, data=data, position=position, place=(session, self._count))

    def _result(self, outcome: Outcome) -> Verdict | Rejection:
        if outcome.verdict is not None:
            return outcome.verdict
        dedup = outcome.dedup  # its id: a repeated one, else the one the item gave (a generated one is no one's)
        return Rejection(dedup["reason"], dedup["detail"], dedup["origin"],
                         dedup.get("id") or self._given_ids.get(dedup["origin"]))

    def close(self) -> None:
        """Close the store (and remove it if it was temporary), once another thread's call has ended.

        Ctrl-C waits for the close to finish, then stops the caller."""
        if os.getpid() != self._owner:  # a forked child's copy: the store is its parent's to close
            self._finalizer.detach()
            return
        # Ctrl-C waits for it (`sigint_held`): cut while the index files are written, RocksDB stayed
        # open and locked in this process, and the closed Deduplicator could not close it again
        with self._lock, sigint_held():
            self._finalizer()

    def _remove_temporary(self) -> None:
        if self._temporary is not None:
            shutil.rmtree(self._temporary, ignore_errors=True)

    def __repr__(self) -> str:
        """Its store folder, temporary or kept, and whether it is open."""
        kind = "temporary" if self._temporary is not None else "kept"
        return f"<Deduplicator {kind} state={str(self.state)!r} {'open' if self._finalizer.alive else 'closed'}>"

    def __getstate__(self) -> None:
        """Refused: an open store does not travel to another process."""
        raise TypeError("a Deduplicator cannot be pickled (it holds an open store): open a Deduplicator in each "
                        "process (e.g. in a Pool's initializer), with its own state folder")

    def __enter__(self) -> Deduplicator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def looks_like_html(content: str) -> bool:
    """Whether a string given without saying is HTML.

    It starts with markup, or has an HTML document's head (`clean.extract.is_html`'s sniff of a text
    labelled plain)."""
    return content.lstrip()[:1] == "<" or is_html("text/plain", content)


def _close(detector: Detector, temporary: str | None, owner: int) -> None:
    """Close the store, then remove it if it was temporary (called once: `weakref.finalize`).

    Not in a forked child (`owner`: the opening process), whose exit would remove its parent's store."""
    if os.getpid() != owner:
        return
    try:
        detector.close()
    finally:
        if temporary is not None:
            shutil.rmtree(temporary, ignore_errors=True)
