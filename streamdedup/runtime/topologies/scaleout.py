"""The global topology: the three scale-out steps as partition handlers of the worker's loop.

A worker subscribes to all three topics in one consumer group, so Kafka spreads input, index and
parts partitions over the workers and moves them on a rebalance; one transaction per batch
carries every step's outputs and offsets. Index and parts stores are rebuilt from their own
topics (the changelog) when a worker gets a partition whose store it lacks.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import xxhash
from confluent_kafka import Message

from streamdedup.config import DetectorConfig
from streamdedup.fingerprinter import Fingerprinted, Fingerprinter, Outcome, own_text
from streamdedup.fingerprints.base import FingerprintMethod
from streamdedup.outputs.kafka import Outputs
from streamdedup.record.readers import RawRecord
from streamdedup.record.rejection import Reason
from streamdedup.runtime.scaleout.gather_stage import Decided, GatherPartition
from streamdedup.runtime.scaleout.index_stage import IndexPartition
from streamdedup.runtime.scaleout.messages import ANSWER, KIND_HEADER, PAGE, Answer, IndexRequest, PageHeader
from streamdedup.runtime.scaleout.routing import key_partition, page_order, page_partition
from streamdedup.runtime.settings import WorkerSettings
from streamdedup.runtime.topologies.base import (
    emit_outcome,
    headers_of,
    message_timestamp,
    offset_of,
    partition_of,
    source_of,
    value_of,
)
from streamdedup.store.layout import DocRecord
from streamdedup.store.retention import RetentionClock
from streamdedup.store.signature_store import method_tags
from streamdedup.store.template_store import TemplateStore
from streamdedup.verdict.contract import Rejection
from streamdedup.verdict.policy import SitePolicy


@dataclass(frozen=True)
class Routes:
    """Topic names and partition counts: the routing every worker must agree on."""

    index_topic: str
    parts_topic: str
    index_partitions: int
    parts_partitions: int


def index_requests(item: Fingerprinted, methods: Sequence[FingerprintMethod[Any]], tags: Mapping[str, int],
                   event_ms: int, index_partitions: int) -> tuple[DocRecord, dict[int, dict[int, list[bytes]]]]:
    """A page's signature record (what every index partition it touches keeps) and its index
    keys by the index partition they live in, by method tag. Pure."""
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
    return DocRecord(0, item.page.id, event_ms, "", "", signatures, item.site_hash), keys


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
                 templates: bool = True) -> None:
        self.fingerprinter = fingerprinter
        self.routes = routes
        self.store = store
        self.templates = store if templates else None
        self.tags = method_tags([m.name for m in fingerprinter.methods])
        self.max_skew_ms = fingerprinter.config.max_clock_skew_ms
        self._ids: set[str] = set()  # ids seen in this batch (staged)

    def _repeated(self, page_id: str) -> bool:
        """Whether a page with this id came earlier on this input partition; else it is noted."""
        name = "id:" + xxhash.xxh3_128_hexdigest(page_id.encode("utf-8", "surrogatepass"))
        if name in self._ids or self.store.get_meta(name) is not None:
            return True
        self._ids.add(name)
        self.store.stage_meta(name, b"")
        return False

    def process(self, messages: list[Message], out: Outputs, replay_until: int) -> int:
        now_ms = int(time.time() * 1000)
        params = self.fingerprinter.config.template
        replayed = 0
        for message in messages:
            item = self.fingerprinter.prepare(RawRecord(origin=source_of(message), data=value_of(message)))
            if self.templates is not None and params is not None and isinstance(item, Fingerprinted):
                item = own_text(item, self.templates.template(item.site_hash), self.fingerprinter, params)
            if isinstance(item, Fingerprinted) and self._repeated(item.page.id):  # file mode's rule and detail
                item = Outcome(item.record, Rejection(Reason.DUPLICATE_ID.value,
                                                      f"page id {item.page.id!r} was already processed",
                                                      item.origin).as_dict(), item.origin)
            if offset_of(message) < replay_until:  # rebuilding the template store: its outputs are in Kafka
                replayed += 1
                continue
            if isinstance(item, Outcome):
                emit_outcome(out, message, item)
                continue
            stamp = message_timestamp(message)
            page = item.page
            # stateless: no watermark here, so an undated page is filed at its arrival time
            event = RetentionClock(None, self.max_skew_ms).stamp(page.event_time_ms, stamp, now_ms)
            order = page_order(event.event_ms, stamp or 0, partition_of(message), offset_of(message))
            doc, keys = index_requests(item, self.fingerprinter.methods, self.tags, event.event_ms,
                                       self.routes.index_partitions)
            page_key = page.id.encode("utf-8", "surrogatepass")
            requests = [(partition, IndexRequest(order, doc, partition_keys, event.trusted,
                                                     item.template_known).encode())
                        for partition, partition_keys in sorted(keys.items())]
            # the header carries the whole record: the gather step passes it through to the verdict
            passed = headers_of(message)
            header = PageHeader(page.id, order, tuple(sorted(keys)), item.record, item.origin, event.note,
                                tuple(passed)).encode()
            if not (out.fits(self.routes.parts_topic, page_key, header, _HEADER_KIND)
                    and all(out.fits(self.routes.index_topic, page_key, request) for _, request in requests)):
                out.too_large(page_key, self.routes.parts_topic, len(header), item.record, source_of(message),
                              passed=passed)
                continue
            for partition, request in requests:
                out.send(self.routes.index_topic, page_key, request, partition=partition)
            out.send(self.routes.parts_topic, page_key, header, _HEADER_KIND,
                     partition=page_partition(page.id, self.routes.parts_partitions))
        return replayed

    def get_meta(self, name: str) -> bytes | None:
        return self.store.get_meta(name)

    def stage_meta(self, name: str, value: bytes) -> None:
        self.store.stage_meta(name, value)

    def commit(self) -> None:
        self.store.commit()
        self._ids.clear()

    def discard(self) -> None:
        self.store.discard()
        self._ids.clear()

    def property_total(self, name: str) -> int:
        return self.store.property_total(name)

    def close(self) -> None:
        self._ids.clear()
        self.store.close()


class _StoredPartition:
    """A stateful step: its store stages changes per batch and writes them with the offset."""

    stateful = True

    def __init__(self, state: Any) -> None:
        self.state = state

    def property_total(self, name: str) -> int:
        return self.state.property_total(name)

    def get_meta(self, name: str) -> bytes | None:
        return self.state.get_meta(name)

    def stage_meta(self, name: str, value: bytes) -> None:
        self.state.stage_meta(name, value)

    def commit(self) -> None:
        self.state.commit()

    def discard(self) -> None:
        self.state.discard()

    def close(self) -> None:
        self.state.close()


class IndexStagePartition(_StoredPartition):
    """Index requests -> answers, sent to the page's parts partition."""

    def __init__(self, index: IndexPartition, routes: Routes) -> None:
        super().__init__(index)
        self.index = index
        self.routes = routes

    def process(self, messages: list[Message], out: Outputs, replay_until: int) -> int:
        replayed = 0
        answers = self.index.answer_all([IndexRequest.decode(value_of(message)) for message in messages])
        for message, answer in zip(messages, answers, strict=True):
            if offset_of(message) < replay_until:
                replayed += 1
                continue
            out.send(self.routes.parts_topic, answer.page_id.encode("utf-8", "surrogatepass"), answer.encode(),
                     [(KIND_HEADER, ANSWER)], partition=page_partition(answer.page_id, self.routes.parts_partitions))
        return replayed

class GatherStagePartition(_StoredPartition):
    """Headers and answers -> one verdict per page, dead letters for repeated ids, corrections."""

    def __init__(self, gather: GatherPartition) -> None:
        super().__init__(gather)
        self.gather = gather

    def process(self, messages: list[Message], out: Outputs, replay_until: int) -> int:
        replayed = 0
        for message in messages:
            kind = dict(message.headers() or []).get(KIND_HEADER)
            value = orjson.loads(value_of(message))
            decided = (self.gather.add_header(PageHeader.from_json(value)) if kind == PAGE
                       else self.gather.add_answer(Answer.from_json(value)))
            if offset_of(message) < replay_until:
                replayed += 1
            elif decided is not None:
                emit_decided(out, decided)
        return replayed

def emit_decided(out: Outputs, decided: Decided) -> None:
    header, dedup = decided.header, decided.dedup
    if dedup["status"] == "rejected":
        out.rejected(header.page_id.encode("utf-8", "surrogatepass"), orjson.dumps(header.record),
                     dedup["reason"], dedup["detail"], header.origin, list(header.headers))
        return
    out.verdict(header.record, dedup, header.origin, list(header.headers))
    for event in decided.events:
        out.cluster_event(event)


class GlobalTopology:
    """pages -> fingerprint -> pages.index -> index -> pages.parts -> gather -> outputs."""

    def __init__(self, settings: WorkerSettings, config: DetectorConfig, partitions: Mapping[str, int]) -> None:
        topics = settings.topics
        self.settings = settings
        self.config = config
        self.fingerprinter = Fingerprinter(config)
        self.policy = SitePolicy.parse(config.policy, config.site_policy)
        self.routes = Routes(topics.index, topics.parts, partitions[topics.index], partitions[topics.parts])

    def topics(self) -> list[str]:
        return [self.settings.topics.pages, self.routes.index_topic, self.routes.parts_topic]

    def open(self, topic: str, partition: int) -> Any:
        path = self.settings.state_dir / f"{topic}-{partition}"
        if topic == self.routes.index_topic:
            index = IndexPartition(Path(path), self.fingerprinter.methods, self.policy,
                                   self.fingerprinter.store_config, partition, self.config.retention_ms)
            return IndexStagePartition(index, self.routes)
        if topic == self.routes.parts_topic:
            return GatherStagePartition(GatherPartition(Path(path)))
        return FingerprintPartition(self.fingerprinter, self.routes, TemplateStore(Path(path)),
                                    templates=self.config.template is not None)
