"""The global topology: the three scale-out steps as partition handlers of the worker's loop.

A worker subscribes to all three topics in one consumer group, so Kafka spreads input, index and
parts partitions over the workers and moves them on a rebalance; one transaction per batch
carries every step's outputs and offsets. Index and parts stores are rebuilt from their own
topics (the changelog) when a worker gets a partition whose store it lacks.

Final verdicts: after each batch an input partition sends every index partition its watermark
(the highest place in the order it has filed: later pages come above it), or an infinite one once
it is caught up and idle (`tick`); an index partition keeps the lowest over all input partitions
and passes it on to every parts partition when it moves; gather holds a complete page until the
watermarks of all its index partitions are past it (gather_stage.py).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

import orjson
from confluent_kafka import Message

from streamdedup.config import DetectorConfig, verdict_identity
from streamdedup.detector import Detector
from streamdedup.fingerprinter import Fingerprinter
from streamdedup.outputs.kafka import Outputs
from streamdedup.runtime.group_settings import GroupRecordCache
from streamdedup.runtime.scaleout.gather_stage import GatherPartition
from streamdedup.runtime.scaleout.gather_verdicts import Decided, LateMatch, LateMerge, RelatedLeftOut
from streamdedup.runtime.scaleout.idle_claims import IdleClaims, InputEnd
from streamdedup.runtime.scaleout.index_stage import IndexPartition, Judging, supplements_of
from streamdedup.runtime.scaleout.messages import (
    ANSWER,
    INFINITE,
    KIND_HEADER,
    PAGE,
    RELEASE,
    ROOT,
    ROOT_ASK,
    SUPPLEMENT,
    WATERMARK,
    Answer,
    IndexRequest,
    PageHeader,
    RootAsk,
    RootReply,
    Supplement,
    kind_of,
    release_value,
    released_by,
    watermark_of,
)
from streamdedup.runtime.scaleout.routing import page_partition
from streamdedup.runtime.settings import WorkerSettings
from streamdedup.runtime.topologies.base import (
    headers_of,
    offset_of,
    source_of,
    value_of,
)
from streamdedup.runtime.topologies.fingerprint_stage import (
    FingerprintPartition,
    Holding,
    Routes,
    index_requests,
    send_watermark,
    watermark_seconds,
)
from streamdedup.store.template_store import TemplateStore

log = logging.getLogger(__name__)
# an index partition's meta record of how many input partitions it has heard from (added ones included)
SOURCES_KEY = "wm-sources"


class _StoredPartition:
    """A stateful step: its store stages changes per batch and writes them with the offset."""

    stateful = True

    def __init__(self, state: Any) -> None:
        self.state = state

    def property_total(self, name: str) -> int:
        return self.state.property_total(name)

    def work(self) -> Mapping[str, int]:
        return {}  # the index stage's partitions judge pages and count it (IndexStagePartition)

    def step_ns(self) -> Mapping[str, int]:
        return {}

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

    def due(self, now: float, lag: int | None) -> bool:
        return False  # the index step sends only in answer to its input

    def tick(self, out: Outputs, now: float, lag: int | None) -> None:
        pass


class IndexStagePartition(_StoredPartition):
    """An index partition: answers a page's index requests and passes watermarks on.

    Index requests -> answers, sent to the page's parts partition, and supplements to the later page of a pair that met
    here out of order; the input partitions' watermarks -> this partition's (their lowest), sent to every parts
    partition when it moves."""

    def __init__(self, index: IndexPartition, routes: Routes, holding: Holding = Holding(),
                 input_end: InputEnd | None = None) -> None:
        super().__init__(index)
        self.index = index
        self.routes = routes
        self.holding = holding
        self.sent: bytes | None = None  # this partition's watermark as last sent
        # idle claims, and whether records overtook them (`input_end`: the input partitions' end offsets)
        self.claims = IdleClaims(input_end if holding.on else None)
        self._load_watermarks()

    def _load_watermarks(self) -> None:
        # the input partitions counted at start, and those added to the pages topic since that sent a
        # watermark here (`SOURCES_KEY`): read back after a failed transaction or a rebalance, an added
        # one was forgotten until it sent again, and the watermark passed its pages meanwhile
        sources = max(self.routes.input_partitions, int(self.index.get_meta(SOURCES_KEY) or 0))
        self.watermarks = {p: self.index.get_meta(f"wm:{p}") or b"" for p in range(sources)}
        for source, watermark in self.watermarks.items():  # a claim known already keeps where its input ended
            if watermark == INFINITE:
                self.claims.restored(source, self.index.get_meta(f"wm-before-idle:{source}") or b"")
            else:
                self.claims.woke(source)

    def work(self) -> Mapping[str, int]:
        """This index partition's work counts so far (`Detector.WORK_COUNTS`), for the worker's metrics."""
        return {kind: self.index.work[kind] for kind in Detector.WORK_COUNTS}

    def step_ns(self) -> Mapping[str, int]:
        """This index partition's nanoseconds by step (`IndexStage.step_ns`), for the worker's metrics."""
        return dict(self.index.step_ns)

    def watermark(self) -> bytes:
        """This partition's watermark: the lowest over its input partitions.

        The lowest over the input partitions, an idle claim that records overtook at its input's last finite watermark
        (`IdleClaims`)."""
        return min((self.claims.watermark(source, wm) for source, wm in self.watermarks.items()), default=b"")

    def due(self, now: float, lag: int | None) -> bool:
        """Whether an overtaken idle claim brings this partition's watermark down now.

        An idle claim that records overtook (its input's owner has not taken it back): this partition's watermark comes
        down at once, not at its next batch."""
        if not self.holding.on:
            return False
        self.claims.check()
        return self._lowered_by_doubts()

    def tick(self, out: Outputs, now: float, lag: int | None) -> None:
        """Lower this partition's watermark where a doubted claim asks it."""
        self._lower_for_doubted_claims(out)

    def _lowered_by_doubts(self) -> bool:
        """Whether a doubted claim holds this partition's watermark below what gather has.

        A doubted claim holds this partition's watermark below what gather has (or may have: nothing sent since a
        restart or a failed transaction)."""
        return bool(self.claims.doubted) and (self.sent is None or self.watermark() < self.sent)

    def _lower_for_doubted_claims(self, out: Outputs) -> None:
        self.claims.check()
        if self.claims.found:
            out.on_commit(partial(out.metrics.idle_claims_doubted.inc, self.claims.found))
            self.claims.found = 0
        if self._lowered_by_doubts():
            self._send_watermark(out, self.watermark())

    def process(self, messages: list[Message], out: Outputs, replay_until: int) -> int:
        """Answer a batch's index requests and pass watermarks on; returns how many messages were replayed."""
        replayed = 0
        requests: list[Message] = []
        if self.holding.on and offset_of(messages[0]) >= replay_until:
            self._lower_for_doubted_claims(out)  # before any answer: gather must not release under a doubted claim
        for message in messages:
            if kind_of(headers_of(message)) == WATERMARK:
                replayed += self._answer(requests, out, replay_until)
                requests = []
                source, watermark = watermark_of(value_of(message))
                previous = self.watermarks.get(source, b"")
                if source >= len(self.watermarks):  # a partition added to the pages topic: kept known
                    for added in range(len(self.watermarks), source):  # not heard from yet: the lowest
                        self.watermarks[added] = b""
                    self.index.stage_meta(SOURCES_KEY, str(source + 1).encode())
                self.watermarks[source] = watermark
                self.index.stage_meta(f"wm:{source}", watermark)
                if watermark != INFINITE:
                    self.claims.woke(source)
                elif previous != INFINITE:  # a replayed claim's end is asked at the next check, not each
                    self.claims.claimed(source, previous, ask=offset_of(message) >= replay_until)
                    self.index.stage_meta(f"wm-before-idle:{source}", previous)
                replayed += offset_of(message) < replay_until
                if (self.holding.on and offset_of(message) >= replay_until and self.sent is not None
                        and self.watermark() < self.sent):  # lowered (a waking input): before the answers after it
                    self._send_watermark(out, self.watermark())
            else:
                requests.append(message)
        replayed += self._answer(requests, out, replay_until)
        if self.holding.on and offset_of(messages[-1]) >= replay_until and self.watermark() != self.sent:
            self._send_watermark(out, self.watermark())  # after this batch's answers and supplements
        return replayed

    def _send_watermark(self, out: Outputs, watermark: bytes) -> None:
        send_watermark(out, self.routes.parts_topic, self.routes.parts_partitions, self.index.partition, watermark)
        self.sent = watermark
        gauge = out.metrics.watermark.labels(str(self.index.partition))
        out.on_commit(partial(gauge.set, watermark_seconds(watermark)))

    def _answer(self, messages: list[Message], out: Outputs, replay_until: int) -> int:
        if not messages:
            return 0
        replayed = 0
        requests = [IndexRequest.decode(value_of(message)) for message in messages]
        for message, request in zip(messages, requests, strict=True):
            self.index.check_made_by(request, source_of(message))
            if offset_of(message) >= replay_until:  # a live peer's (or one waiting since before)
                self.index.check_judged_with(request, source_of(message))
        answers = self.index.answer_all(requests)
        for message, answer in zip(messages, answers, strict=True):
            if offset_of(message) < replay_until:
                replayed += 1
                continue
            out.send(self.routes.parts_topic, answer.page_id.encode("utf-8", "surrogatepass"),
                     replace(answer, later=()).encode(), [(KIND_HEADER, ANSWER)],
                     partition=page_partition(answer.page_id, self.routes.parts_partitions))
            for supplement in supplements_of(answer):
                out.send(self.routes.parts_topic, supplement.page_id.encode("utf-8", "surrogatepass"),
                         supplement.encode(), [(KIND_HEADER, SUPPLEMENT)],
                         partition=page_partition(supplement.page_id, self.routes.parts_partitions))
        return replayed

    def discard(self) -> None:
        """Drop the batch's store changes and reload the watermarks the store holds."""
        super().discard()
        self._load_watermarks()
        self.sent = None


class GatherStagePartition(_StoredPartition):
    """A gather partition: one verdict per page from its parts.

    Headers, answers, supplements, watermarks and release markers -> one verdict per page (held until final, or until
    the wait is over), dead letters for repeated ids, late matches."""

    def __init__(self, gather: GatherPartition, routes: Routes, partition: int = 0,
                 holding: Holding = Holding()) -> None:
        super().__init__(gather)
        self.gather = gather
        self.routes = routes
        self.partition = partition
        self.holding = holding

    def process(self, messages: list[Message], out: Outputs, replay_until: int) -> int:
        """Gather a batch's parts and release markers into verdicts; returns how many messages were replayed."""
        replayed = 0
        now_ms = int(time.time() * 1000)
        for message in messages:
            kind = kind_of(headers_of(message))
            data = value_of(message)
            if kind == WATERMARK:
                emitted = self.gather.add_watermark(*watermark_of(data), now_ms)
            elif kind == RELEASE:
                emitted = self.gather.add_release(released_by(data), now_ms)
            elif kind == SUPPLEMENT:
                emitted = self.gather.add_supplement(Supplement.from_json(orjson.loads(data)))
            elif kind == ROOT_ASK:
                emitted = self.gather.add_root_ask(RootAsk.from_json(orjson.loads(data)), now_ms)
            elif kind == ROOT:
                emitted = self.gather.add_root(RootReply.from_json(orjson.loads(data)), now_ms)
            elif kind == PAGE:
                emitted = self.gather.add_header(PageHeader.from_json(orjson.loads(data)), now_ms)
            else:
                emitted = self.gather.add_answer(Answer.from_json(orjson.loads(data)), now_ms)
            if offset_of(message) < replay_until:
                replayed += 1
                continue
            for item in emitted:
                if isinstance(item, LateMatch):
                    out.cluster_event(item.event)
                    out.on_commit(out.metrics.late_matches.labels(item.cause).inc)
                elif isinstance(item, LateMerge):
                    out.cluster_event(item.event)
                    out.on_commit(out.metrics.late_merges.labels(item.cause).inc)
                elif isinstance(item, RelatedLeftOut):
                    out.on_commit(out.metrics.late_related_left_out.labels(item.cause).inc)
                elif isinstance(item, (RootAsk, RootReply)):  # to the gather partition of the page it names
                    out.send(self.routes.parts_topic, item.page_id.encode("utf-8", "surrogatepass"), item.encode(),
                             [(KIND_HEADER, ROOT_ASK if isinstance(item, RootAsk) else ROOT)],
                             partition=page_partition(item.page_id, self.routes.parts_partitions))
                elif isinstance(item, Decided):
                    emit_decided(out, item)
                    out.on_commit(partial(_released, out, item.by, max(0.0, (now_ms - item.completed_ms) / 1000)))
        return replayed

    def due(self, now: float, lag: int | None) -> bool:
        """Whether a held page's wait is over."""
        return self.holding.on and bool(self.gather.due(int(time.time() * 1000), int(self.holding.wait_s * 1000)))

    def tick(self, out: Outputs, now: float, lag: int | None) -> None:
        """Held pages whose wait is over: a release marker to this partition, acted on when read."""
        if not self.holding.on:
            return
        due = self.gather.due(int(time.time() * 1000), int(self.holding.wait_s * 1000))
        if due:
            out.send(self.routes.parts_topic, None, release_value(due), [(KIND_HEADER, RELEASE)],
                     partition=self.partition)
            self.gather.mark(due)


def _released(out: Outputs, by: str, waited: float) -> None:
    out.metrics.verdicts_released.labels(by).inc()
    out.metrics.verdict_wait.observe(waited)


def emit_decided(out: Outputs, decided: Decided) -> None:
    """Send a page's final outcome: a rejection as a dead letter, else its verdict to its output topic."""
    header, dedup = decided.header, decided.dedup
    if dedup["status"] == "rejected":
        out.rejected(header.page_id.encode("utf-8", "surrogatepass"), orjson.dumps(header.record),
                     dedup["reason"], dedup["detail"], header.origin, list(header.headers), header.record,
                     dedup.get("id"), headers_omitted=header.headers_omitted)
        return
    out.verdict(header.record, dedup, header.origin, list(header.headers), header.key,
                headers_omitted=header.headers_omitted, key_omitted=header.key_omitted)


class GlobalTopology:
    """pages -> fingerprint -> pages.index -> index -> pages.parts -> gather -> outputs."""

    def __init__(self, settings: WorkerSettings, config: DetectorConfig, partitions: Mapping[str, int],
                 input_end: InputEnd | None = None) -> None:
        topics = settings.topics
        self.input_end = input_end  # the input partitions' end offsets, for the index partitions' idle claims
        self.settings = settings
        self.config = config
        self.fingerprinter = Fingerprinter(config)
        # the id a refused index request names (`IndexPartition.check_made_by`)
        log.info("signature id %s: %s", self.fingerprinter.identity.hex(), ", ".join(
            f"{key}={value}" for key, value in sorted(self.fingerprinter.signature_config.items())))
        self.policy = config.site_policies()
        # what verdicts are judged with: every worker of the group must agree (`check_judged_with`)
        verdict_settings = config.verdict_settings()
        self.group_record = GroupRecordCache(settings)
        self.judging = Judging(verdict_settings, verdict_identity(verdict_settings), settings.group_id,
                               self.group_record.current)
        log.info("verdict id %s: %s", self.judging.identity.hex(), ", ".join(
            f"{key}={value}" for key, value in sorted(verdict_settings.items())))
        self.routes = Routes(topics.index, topics.parts, partitions[topics.index], partitions[topics.parts],
                             partitions.get(topics.pages, 1))
        self.holding = Holding(settings.verdict_wait_s, settings.watermark_interval_s, settings.allowed_lateness_ms)

    def topics(self) -> list[str]:
        """The input topic and the two internal topics (index requests, parts)."""
        return [self.settings.topics.pages, self.routes.index_topic, self.routes.parts_topic]

    def open(self, topic: str, partition: int) -> Any:
        """The handler of a partition: an index, a gather or a fingerprint step, by its topic."""
        path = self.settings.state_dir / f"{topic}-{partition}"
        if topic == self.routes.index_topic:
            index = IndexPartition(Path(path), self.fingerprinter.methods, self.policy,
                                   self.fingerprinter.store_config, partition, self.config.retention_ms,
                                   self.judging)
            return IndexStagePartition(index, self.routes, self.holding, self.input_end)
        if topic == self.routes.parts_topic:
            gather = GatherPartition(Path(path), hold=self.holding.on)
            return GatherStagePartition(gather, self.routes, partition, self.holding)
        templates = TemplateStore(Path(path), self.fingerprinter.config.template)
        return FingerprintPartition(self.fingerprinter, self.routes, templates,
                                    templates=self.config.template is not None, partition=partition,
                                    holding=self.holding, judged_with=self.judging.identity)


# the fingerprint step lives in fingerprint_stage.py; its names stay importable from here
__all__ = ["FingerprintPartition", "GatherStagePartition", "GlobalTopology", "Holding", "IndexStagePartition",
           "Routes", "emit_decided", "index_requests", "send_watermark", "watermark_seconds"]
