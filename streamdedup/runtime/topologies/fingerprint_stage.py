"""The global topology's first step: an input page -> its index requests and its header.

Also what the three steps share: their routes (topics and partition counts) and their holding
settings (final verdicts' watermarks), and the watermark a step sends every index partition.
"""

from __future__ import annotations

import struct
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import xxhash
from confluent_kafka import Message

from streamdedup.clean.page_urls import document_key
from streamdedup.fingerprinter import (
    EXTRACTION_COUNTS,
    Fingerprinted,
    Fingerprinter,
    Outcome,
    steered_record,
)
from streamdedup.fingerprints.base import FingerprintMethod
from streamdedup.fingerprints.one_page_lines import encode_one_page
from streamdedup.fingerprints.wordpairs import WordPairsMethod, WordPairsSignature
from streamdedup.outputs.kafka import Outputs
from streamdedup.own_text import own_text
from streamdedup.runtime.scaleout.messages import (
    INFINITE,
    KIND_HEADER,
    PAGE,
    WATERMARK,
    IndexRequest,
    PageHeader,
    watermark_value,
)
from streamdedup.runtime.scaleout.routing import key_partition, page_order, page_partition
from streamdedup.runtime.settings import WorkerSettings
from streamdedup.runtime.topologies.base import (
    emit_outcome,
    headers_of,
    message_timestamp,
    offset_of,
    partition_of,
    raw_record,
    source_of,
)
from streamdedup.store.layout import DocRecord
from streamdedup.store.retention import RetentionClock
from streamdedup.store.signature_store import method_tags
from streamdedup.store.template_store import TemplateStore
from streamdedup.verdict.contract import Rejection


@dataclass(frozen=True)
class Routes:
    """Topic names and partition counts: the routing every worker must agree on."""

    index_topic: str
    parts_topic: str
    index_partitions: int
    parts_partitions: int
    input_partitions: int = 1


@dataclass(frozen=True)
class Holding:
    """How final verdicts are held: the wait, the watermark interval and the allowed lateness.

    Final verdicts' settings (WorkerSettings, whose defaults these are): no holding at all when `wait_s` is 0."""

    wait_s: float = WorkerSettings.verdict_wait_s
    interval_s: float = WorkerSettings.watermark_interval_s
    lateness_ms: int = WorkerSettings.allowed_lateness_ms

    @property
    def on(self) -> bool:
        """Whether final verdicts are held at all (a wait above 0)."""
        return self.wait_s > 0


_WATERMARK_KIND = [(KIND_HEADER, WATERMARK)]


_LOWEST = page_order(0, 0, 0, 0)  # below every page's place: event times are after 1991 (store/retention.py)


def send_watermark(out: Outputs, topic: str, partitions: int, source: int, watermark: bytes) -> None:
    """Send a fingerprint partition's watermark to every partition of the index topic."""
    value = watermark_value(source, watermark)
    for partition in range(partitions):
        out.send(topic, None, value, _WATERMARK_KIND, partition=partition)


def watermark_seconds(watermark: bytes) -> float:
    """A watermark's event time (Unix seconds) for the gauge: +inf when idle, 0 when unknown."""
    if watermark == INFINITE:
        return float("inf")
    if not watermark:
        return 0.0
    return (struct.unpack_from(">Q", watermark)[0] - (1 << 63)) / 1000


def index_requests(item: Fingerprinted, methods: Sequence[FingerprintMethod[Any]], tags: Mapping[str, int],
                   event_ms: int, index_partitions: int) -> tuple[DocRecord, dict[int, dict[int, list[bytes]]]]:
    """A page's signature record and its index keys by index partition.

    A page's signature record (what every index partition it touches keeps) and its index keys by the index partition
    they live in, by method tag. Pure."""
    keys: dict[int, dict[int, list[bytes]]] = {}
    signatures = {}
    for method in methods:
        signature = item.signatures[method.name]
        if signature is None:
            continue
        tag = tags[method.name]
        signatures[tag] = method.encode(signature)
        for key in method.index_keys(signature):
            keys.setdefault(key_partition(tag, key, index_partitions), {}).setdefault(tag, []).append(key)
    return DocRecord(0, item.page.id, event_ms, "", "", signatures, item.site_hash,
                     document=document_key(item.page.url), steered=steered_record(item, methods)), keys


def shown_lines_record(item: Fingerprinted, methods: Sequence[FingerprintMethod[Any]]) -> bytes:
    """The page's encoded word pairs of the lines its site showed before (`wordpairs.with_shown_lines`); b"": none.

    Not in its signatures, so carried beside them to the index partitions that judge it, which keep them in its record
    (`DocRecord.shown`): an earlier page may arrive there after it, and judge it then."""
    signature = item.signatures.get(WordPairsMethod.name)
    lines = signature.shown if isinstance(signature, WordPairsSignature) else None
    shown = lines.pairs if lines is not None else None
    method = next((m for m in methods if isinstance(m, WordPairsMethod)), None)
    return b"" if shown is None or method is None else method.encode(shown)


def one_page_record(item: Fingerprinted, methods: Sequence[FingerprintMethod[Any]]) -> bytes:
    """The page's lines one earlier page of its site showed, by that page, encoded (`one_page_lines`); b"": none.

    Carried beside its signatures to the index partitions that judge it (`IndexRequest.one_page`); not
    kept in its record: a page filed before an earlier one arrived is judged then without them."""
    signature = item.signatures.get(WordPairsMethod.name)
    method = next((m for m in methods if isinstance(m, WordPairsMethod)), None)
    if not isinstance(signature, WordPairsSignature) or not signature.one_page or method is None:
        return b""
    return encode_one_page(signature, method)


_HEADER_KIND = [(KIND_HEADER, PAGE)]


class FingerprintPartition:
    """Input page -> index requests (one per index partition its keys live in) + its header.

    A stateful step: its store (a `TemplateStore`, written with the partition's offset) keeps the
    page ids seen on its input partition and, with the template model on, the templates of its
    sites. A second page under an id is a `duplicate_id` rejection here, as in file mode, before
    any index partition files it: filed, other pages could match it (and join the cluster of the
    id's first page), which file mode never lets them. Ids repeated across input partitions (a
    crawler that does not key by site) are still caught at gather, one verdict per id."""

    stateful = True

    def __init__(self, fingerprinter: Fingerprinter, routes: Routes, store: TemplateStore,
                 templates: bool = True, partition: int = 0, holding: Holding = Holding(),
                 judged_with: bytes = b"") -> None:
        self.fingerprinter = fingerprinter
        self.judged_with = judged_with  # this worker's verdict id, carried by its index requests
        self.routes = routes
        self.store = store
        self.templates = store if templates else None
        self.tags = method_tags([m.name for m in fingerprinter.methods])
        self.max_skew_ms = fingerprinter.config.max_clock_skew_ms
        self._ids: set[str] = set()  # ids seen in this batch (staged)
        self.partition = partition
        self.holding = holding
        self.highest = b""  # the highest order filed from this partition (since this process started)
        self.highest_event_ms: int | None = None
        self.clock = self._clock()
        self._committed_highest: tuple[bytes, int | None] = (b"", None)  # as of the last commit (`discard`)
        self.sent: bytes | None = None  # the watermark last sent to the index partitions
        self.last_batch_at = time.monotonic()
        # this partition's share of the (shared) fingerprinter's `extraction` counts
        self._extraction: Counter[str] = Counter({kind: 0 for kind in EXTRACTION_COUNTS})

    def _clock(self) -> RetentionClock:
        """The partition's clock as its store last committed it (file mode's rule: store/retention.py).

        An undated page is stamped with the newest trusted fetch time its input partition has given,
        as file mode stamps it with its job's, so an archived crawl replayed today orders it among
        the pages around it. Before, it was stamped with its arrival time: after every dated page of
        such a crawl, so a page judged first in file mode was judged last here (another story)."""
        def get_meta_int(name: str, default: int) -> int:
            value = self.store.get_meta(name)
            return default if value is None else int(value)

        return RetentionClock.load(None, self.max_skew_ms, get_meta_int)

    def _repeated(self, page_id: str) -> bool:
        """Whether a page with this id came earlier on this input partition; else it is noted."""
        name = "id:" + xxhash.xxh3_128_hexdigest(page_id.encode("utf-8", "surrogatepass"))
        if name in self._ids or self.store.get_meta(name) is not None:
            return True
        self._ids.add(name)
        self.store.stage_meta(name, b"")
        return False

    def process(self, messages: list[Message], out: Outputs, replay_until: int) -> int:
        """Fingerprint a batch of input pages into index requests and headers; returns how many were replayed."""
        now_ms = int(time.time() * 1000)
        params = self.fingerprinter.config.template
        replayed = 0
        # records wait (this batch): the tick's rule, before its first request, even while its store
        # replays; an infinite watermark sent in the round that fetched the batch is taken back here
        if self.holding.on and self._taking_back(len(messages)):
            self._send_watermark(out, self._waking())
        counted = Counter(self.fingerprinter.extraction)
        prepared = self.fingerprinter.prepare_many([raw_record(message) for message in messages])
        for message, item in zip(messages, prepared, strict=True):
            if self.templates is not None and params is not None and isinstance(item, Fingerprinted):
                # the article-block marks now: the index step reads them from the encoded signature
                item = own_text(item, self.templates.template(item.template_hash), self.fingerprinter, params,
                                now=True)
            if isinstance(item, Fingerprinted) and self._repeated(item.page.id):  # file mode's rule and detail
                item = Outcome(item.record, Rejection.repeated_id(item.page.id, item.origin).as_dict(), item.origin)
            stamp = message_timestamp(message)
            if isinstance(item, Fingerprinted):  # replayed pages too: a rebuilt store gets the same clock
                event = self.clock.stamp(item.page.event_time_ms, stamp, now_ms)
            if offset_of(message) < replay_until:  # rebuilding the template store: its outputs are in Kafka
                replayed += 1
                continue
            if isinstance(item, Outcome):
                emit_outcome(out, message, item)
                continue
            page = item.page
            order = page_order(event.event_ms, stamp or 0, partition_of(message), offset_of(message))
            doc, keys = index_requests(item, self.fingerprinter.methods, self.tags, event.event_ms,
                                       self.routes.index_partitions)
            page_key = page.id.encode("utf-8", "surrogatepass")
            shown = shown_lines_record(item, self.fingerprinter.methods)
            one_page = one_page_record(item, self.fingerprinter.methods)
            requests = [(partition, IndexRequest(order, doc, partition_keys, event.trusted,
                                                     item.template_known, self.fingerprinter.identity,
                                                     self.judged_with, shown, item.text_cut, one_page).encode())
                        for partition, partition_keys in sorted(keys.items())]
            # the header carries the whole record: the gather step passes it through to the verdict
            passed = headers_of(message)
            whole = PageHeader(page.id, order, tuple(sorted(keys)), item.record, item.origin, event.note,
                               tuple(passed), message.key(), item.text_cut,
                               arrival=() if event.trusted or item.place is None else item.place)
            header = whole.encode()
            if not out.fits(self.routes.parts_topic, page_key, header, _HEADER_KIND):
                # over the limit with the input's headers and key whole (base64): judged without them
                header = whole.passed_within().encode()
            if not (out.fits(self.routes.parts_topic, page_key, header, _HEADER_KIND)
                    and all(out.fits(self.routes.index_topic, page_key, request) for _, request in requests)):
                out.too_large(page_key, self.routes.parts_topic, len(header), item.record, source_of(message),
                              passed=passed)
                continue
            for partition, request in requests:
                out.send(self.routes.index_topic, page_key, request, partition=partition)
            out.send(self.routes.parts_topic, page_key, header, _HEADER_KIND,
                     partition=page_partition(page.id, self.routes.parts_partitions))
            if self.sent is not None and self.sent != INFINITE and order < self.sent:  # behind its own watermark
                out.on_commit(out.metrics.late_pages.labels(str(self.partition)).inc)
            self.highest = max(self.highest, order)
            self.highest_event_ms = max(self.highest_event_ms or event.event_ms, event.event_ms)
        self.clock.stage(self.store.stage_meta)
        self.last_batch_at = time.monotonic()
        self._extraction.update(self.fingerprinter.extraction - counted)
        if self.holding.on and replayed < len(messages):
            self._send_watermark(out, self._watermark())
        return replayed

    def _watermark(self) -> bytes:
        """Every page this partition files from now on is above this (unless it is late)."""
        if self.sent == INFINITE and not self.highest:
            return INFINITE  # idle since it started: still nothing to file
        if self.holding.lateness_ms and self.highest_event_ms is not None:
            return min(self.highest, page_order(self.highest_event_ms - self.holding.lateness_ms, 0, 0, 0))
        return self.highest

    def _send_watermark(self, out: Outputs, watermark: bytes) -> None:
        if watermark and watermark != self.sent:
            send_watermark(out, self.routes.index_topic, self.routes.index_partitions, self.partition, watermark)
            self.sent = watermark

    def due(self, now: float, lag: int | None) -> bool:
        """Whether this partition's watermark is to be sent now.

        Caught up and idle for a while: time to tell the index partitions (an infinite watermark). Or idle no more, or
        just taken over (`_taking_back`): records wait or may, so the infinite watermark is taken back (`_waking`)
        before any of them is filed."""
        if not self.holding.on:
            return False
        if self._taking_back(lag):
            return True
        if self.sent == INFINITE:
            return False
        return lag == 0 and now - self.last_batch_at >= self.holding.interval_s

    def tick(self, out: Outputs, now: float, lag: int | None) -> None:
        """Send this partition's watermark when it is due (`due`): infinite when idle, or taken back."""
        if self.due(now, lag):
            self._send_watermark(out, self._waking() if self._taking_back(lag) else INFINITE)

    def _taking_back(self, lag: int | None) -> bool:
        """Whether the watermark the index partitions hold for this partition may claim too much.

        It may when it was infinite and records wait, or when this process sent none yet (the partition was
        just assigned, or a transaction failed) and records wait or its lag is not known yet. What its
        previous owner sent stands until then: an infinite watermark would let the index partitions release
        other partitions' pages above this one's waiting records for as long as the new owner takes to file
        them (its store's replay first), each a `late_match`."""
        return (self.sent is None or self.sent == INFINITE) and lag != 0

    def _waking(self) -> bytes:
        """The watermark of an idle partition whose records come again.

        It is where the partition had got to (the lowest place of all if it filed nothing in this process).
        The worker sends it before it fetches them (`Worker._idle`), so the pages other partitions file
        meanwhile are held until this one's are in: a burst that finds every partition idle would otherwise
        release a page before an earlier copy on a partition still waking up arrives (a `late_match`)."""
        return self.highest or _LOWEST

    def get_meta(self, name: str) -> bytes | None:
        """A meta entry of the partition's template store."""
        return self.store.get_meta(name)

    def stage_meta(self, name: str, value: bytes) -> None:
        """Stage a meta entry with the batch's template changes."""
        self.store.stage_meta(name, value)

    def commit(self) -> None:
        """Write the batch's template changes and keep the highest page it reached as committed."""
        self.store.commit()
        self._ids.clear()
        self._committed_highest = (self.highest, self.highest_event_ms)

    def discard(self) -> None:
        """Drop the batch's template changes; its watermark is sent again."""
        self.store.discard()
        self._ids.clear()
        self.sent = None  # its watermark record may not have gone out: send it again
        # the batch's pages were not filed (their requests went with the transaction): sent
        # before they come again, a watermark above them would make them late
        self.highest, self.highest_event_ms = self._committed_highest
        self.clock = self._clock()

    def property_total(self, name: str) -> int:
        """A RocksDB property of the partition's template store."""
        return self.store.property_total(name)

    def work(self) -> Mapping[str, int]:
        """None: pages are judged in the index partitions."""
        return {}  # pages are judged in the index partitions

    def step_ns(self) -> Mapping[str, int]:
        """None: pages are judged in the index partitions."""
        return {}

    def extraction(self) -> Mapping[str, int]:
        """How this partition's pages were read (`fingerprinter.EXTRACTION_COUNTS`), for the worker's metrics."""
        return dict(self._extraction)

    def close(self) -> None:
        """Close the partition's template store."""
        self._ids.clear()
        self.store.close()
