"""The Kafka worker: consume pages, decide, produce verdicts, exactly once.

One loop, one thread: consume a batch -> the detector decides it per input partition (each
partition has its own RocksDB store under state_dir, so a partition can move between workers)
-> in one Kafka transaction produce every output and the input offsets
(`send_offsets_to_transaction`) -> then write each partition's store changes together with the
offset they reflect in one WriteBatch.

Restart: the store's offset is never ahead of the committed one (the store is written after the
transaction commits). If it is behind (a crash between the two), the worker replays that range
into the store *without* producing, since its outputs are already in Kafka. If it is ahead (the
group's offsets were reset by hand), it refuses to start: it would otherwise diverge silently.
Without transactions (`transactions = false`) the same loop gives at-least-once delivery with
idempotent verdicts keyed by page id.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import orjson
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Message, Producer, TopicPartition

from streamdedup.config import DetectorConfig
from streamdedup.detector import Detector, Outcome
from streamdedup.record.readers import RawRecord
from streamdedup.runtime.metrics import WorkerMetrics
from streamdedup.runtime.settings import WorkerSettings, mask
from streamdedup.runtime.topics import ensure_topics

log = logging.getLogger(__name__)


class StoreAheadOfKafka(RuntimeError):
    """The local store has seen offsets the consumer group has not committed."""


class StoreWriteFailed(RuntimeError):
    """The store could not be written (full disk, I/O error) after Kafka committed the batch."""


@dataclass
class WorkerStats:
    consumed: int = 0
    produced: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    replayed: int = 0
    batches: int = 0
    aborted: int = 0


def offset_key(topic: str, partition: int) -> str:
    return f"offset:{topic}:{partition}"


class Worker:
    def __init__(self, settings: WorkerSettings, config: DetectorConfig) -> None:
        self.settings = settings
        self.config = config
        self.stats = WorkerStats()
        self.metrics = WorkerMetrics()
        self.detectors: dict[int, Detector] = {}
        self.replay_until: dict[int, int] = {}
        self._stop = threading.Event()
        self._last_activity: float | None = None  # set on assignment and on every batch
        log.info("worker starting: %r", settings)
        ensure_topics(settings)
        self.consumer = Consumer(settings.client(**{
            "group.id": settings.group_id, "enable.auto.commit": False, "auto.offset.reset": "earliest",
            "isolation.level": "read_committed", "enable.partition.eof": False,
            "receive.message.max.bytes": 104_857_600, "session.timeout.ms": 10_000,
            # static membership (KIP-345): a restarted worker takes its partitions (and local
            # stores) back at once instead of waiting for a rebalance
            "group.instance.id": f"streamdedup-{settings.worker_id}",
            "partition.assignment.strategy": "range"}))
        producer_settings: dict[str, Any] = {"enable.idempotence": True, "linger.ms": 5,
                                             "message.max.bytes": 104_857_600}
        if settings.transactions:
            producer_settings["transactional.id"] = f"streamdedup-{settings.group_id}-{settings.worker_id}"
        self.producer = Producer(settings.client(**producer_settings))
        if settings.transactions:
            self.producer.init_transactions(30)

    # -- partitions ---------------------------------------------------------------------------
    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        committed = {tp.partition: tp.offset for tp in consumer.committed(partitions, timeout=30)}
        for tp in partitions:
            detector = self.detectors.get(tp.partition)
            if detector is None:
                state = self.settings.state_dir / f"{tp.topic}-{tp.partition}"
                detector = self.detectors[tp.partition] = Detector(self.config, state)
            raw = detector.store.get_meta(offset_key(tp.topic, tp.partition))
            stored = None if raw is None else int(raw)
            kafka = committed.get(tp.partition, -1)
            kafka = kafka if kafka >= 0 else None
            if stored is not None and kafka is not None and stored > kafka:
                raise StoreAheadOfKafka(
                    f"the store for {tp.topic}[{tp.partition}] has processed up to offset {stored}, but the "
                    f"group {self.settings.group_id!r} has committed only {kafka}: the group's offsets were "
                    "reset or the store belongs to another group. Restore the offsets, or delete the "
                    f"store directory {self.settings.state_dir / f'{tp.topic}-{tp.partition}'} to rebuild it.")
            if kafka is not None and (stored or 0) < kafka:
                self.replay_until[tp.partition] = kafka
                log.warning("replaying %s[%d] offsets %s..%d into the store without producing",
                            tp.topic, tp.partition, stored or 0, kafka)
            tp.offset = stored if stored is not None else OFFSET_BEGINNING
        consumer.assign(partitions)
        self._last_activity = time.monotonic()

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        for tp in partitions:
            detector = self.detectors.pop(tp.partition, None)
            if detector is not None:
                detector.close()
            self.replay_until.pop(tp.partition, None)
        consumer.unassign()

    # -- the loop -----------------------------------------------------------------------------
    def stop(self) -> None:
        self._stop.set()

    def run(self, idle_timeout_s: float | None = None, assignment_timeout_s: float = 120.0,
            stop_after: int | None = None) -> WorkerStats:
        """Run until `stop()`, or until nothing arrived for `idle_timeout_s` after the group gave
        this worker its partitions (tests, demo). A killed predecessor keeps its partitions until
        its session times out, so idleness only counts from the assignment."""
        self.consumer.subscribe([self.settings.topics.pages], on_assign=self._on_assign,
                                on_revoke=self._on_revoke)
        started = time.monotonic()
        try:
            while not self._stop.is_set():
                messages = [m for m in self.consumer.consume(self.settings.batch_size, self.settings.batch_timeout_s)
                            if not self._is_error(m)]
                now = time.monotonic()
                if messages:
                    self.process(messages)
                    self._last_activity = now
                    if stop_after is not None and self.stats.consumed >= stop_after:
                        break
                elif idle_timeout_s is not None and self._last_activity is not None \
                        and now - self._last_activity > idle_timeout_s:
                    break
                elif idle_timeout_s is not None and self._last_activity is None and now - started > assignment_timeout_s:
                    log.warning("no partitions assigned after %.0fs: stopping", assignment_timeout_s)
                    break
        finally:
            self.close()
        return self.stats

    @staticmethod
    def _is_error(message: Message) -> bool:
        if message.error() is None:
            return False
        log.warning("consumer error: %s", message.error())
        return True

    def process(self, messages: list[Message]) -> None:
        started = time.monotonic()
        by_partition: dict[int, list[Message]] = defaultdict(list)
        for message in messages:
            by_partition[message.partition()].append(message)
        staged = []
        if self.settings.transactions:
            self.producer.begin_transaction()
        try:
            for partition, batch in by_partition.items():
                staged.append(self._decide_partition(partition, batch))
            self._commit_offsets(by_partition)
        except KafkaException as err:
            self._abort(by_partition, err)
            return
        for detector, store_batch in staged:
            try:
                detector.commit(store_batch)
            except Exception as err:  # noqa: BLE001 - RocksDB reports a full disk as a plain exception
                first, last = messages[0].offset(), messages[-1].offset()
                raise StoreWriteFailed(
                    f"could not write the store at {detector.store.path}: {err}. The verdicts of offsets "
                    f"{first}..{last} are committed in Kafka; nothing is lost: free space and restart the worker, "
                    "it will replay those offsets into the store without emitting them again.") from err
        self.stats.batches += 1
        self.stats.consumed += len(messages)
        self._observe(by_partition, started)

    def _observe(self, by_partition: dict[int, list[Message]], started: float) -> None:
        now = time.time()
        self.metrics.batch_seconds.observe(time.monotonic() - started)
        for partition, batch in by_partition.items():
            for message in batch:
                kind, stamp = message.timestamp()
                if kind and stamp > 0:
                    self.metrics.page_latency.observe(max(0.0, now - stamp / 1000))
            try:
                _, high = self.consumer.get_watermark_offsets(TopicPartition(batch[0].topic(), partition),
                                                               cached=True)
                self.metrics.lag.labels(str(partition)).set(max(0, high - batch[-1].offset() - 1))
            except KafkaException:
                pass
            db = self.detectors[partition].store.db
            self.metrics.store_bytes.labels(str(partition)).set(db.property_int_value("rocksdb.live-sst-files-size") or 0)
            self.metrics.store_keys.labels(str(partition)).set(db.property_int_value("rocksdb.estimate-num-keys") or 0)

    def _decide_partition(self, partition: int, messages: list[Message]) -> tuple[Detector, Any]:
        detector = self.detectors[partition]
        raws = [RawRecord(origin=f"{m.topic()}[{m.partition()}]@{m.offset()}", data=m.value() or b"")
                for m in messages]
        outcomes, store_batch = detector.decide_staged([detector.prepare(raw) for raw in raws])
        topic = messages[0].topic()
        store_batch.set_meta(offset_key(topic, partition), str(messages[-1].offset() + 1).encode())
        replay_until = self.replay_until.get(partition, -1)
        for message, outcome in zip(messages, outcomes):
            if message.offset() < replay_until:
                self.stats.replayed += 1
                continue
            self._produce(message, outcome)
        return detector, store_batch

    def _commit_offsets(self, by_partition: dict[int, list[Message]]) -> None:
        offsets = [TopicPartition(batch[0].topic(), partition, batch[-1].offset() + 1)
                   for partition, batch in by_partition.items()]
        if self.settings.transactions:
            self.producer.send_offsets_to_transaction(offsets, self.consumer.consumer_group_metadata(), 30)
            self.producer.commit_transaction(60)
        else:
            self.producer.flush(60)
            self.consumer.commit(offsets=offsets, asynchronous=False)

    def _abort(self, by_partition: dict[int, list[Message]], err: KafkaException) -> None:
        error = err.args[0] if err.args else None
        if error is not None and hasattr(error, "fatal") and error.fatal():
            raise err
        log.warning("transaction aborted (%s); the batch will be consumed again", err)
        if self.settings.transactions:
            self.producer.abort_transaction(30)
        self.stats.aborted += 1
        for partition, batch in by_partition.items():
            self.detectors[partition].discard()
            self.consumer.seek(TopicPartition(batch[0].topic(), partition, batch[0].offset()))

    # -- outputs ------------------------------------------------------------------------------
    def _produce(self, message: Message, outcome: Outcome) -> None:
        topics = self.settings.topics
        dedup = outcome.dedup
        status = dedup["status"]
        if status == "rejected":
            headers = [("dedup.status", b"rejected"), ("dedup.reason", dedup["reason"].encode()),
                       ("dedup.detail", dedup["detail"][:1000].encode()),
                       ("dedup.source", f"{message.topic()}[{message.partition()}]@{message.offset()}".encode())]
            self._send(topics.rejected, message.key(), message.value(), headers)
            self.metrics.pages.labels("rejected").inc()
            self.metrics.rejected.labels(dedup["reason"]).inc()
            return
        headers = [("dedup.status", status.encode()), ("dedup.cluster_id", dedup["cluster_id"].encode()),
                   ("dedup.duplicate_of", (dedup["duplicate_of"] or "").encode()),
                   ("dedup.method", (dedup["method"] or "").encode())]
        self.metrics.pages.labels(status).inc()
        target = topics.unique if status == "unique" else topics.duplicates
        self._send(target, dedup["id"].encode(), orjson.dumps(outcome.output()), headers)
        for event in cluster_events(dedup):
            self._send(topics.clusters, event["cluster_id"].encode(), orjson.dumps(event), [])

    def _send(self, topic: str, key: bytes | None, value: bytes | None, headers: list[tuple[str, bytes]]) -> None:
        while True:
            try:
                self.producer.produce(topic, value=value, key=key, headers=headers)
                break
            except BufferError:
                self.producer.poll(0.1)
        self.producer.poll(0)
        self.stats.produced[topic] += 1

    def close(self) -> None:
        for partition, detector in self.detectors.items():
            try:
                detector.close()
            except Exception:  # noqa: BLE001 - e.g. a full disk on the final flush: the WAL has the data
                log.exception("closing the store of partition %d failed", partition)
        self.detectors.clear()
        try:
            self.consumer.close()
        except RuntimeError:
            pass
        self.producer.flush(10)


def cluster_events(dedup: dict[str, Any]) -> list[dict[str, Any]]:
    """For the news-clustering feed: a cluster was created, a page joined one, clusters merged."""
    base = {"page_id": dedup["id"], "cluster_id": dedup["cluster_id"]}
    if dedup["status"] == "unique":
        events = [{"type": "created", **base}]
    else:
        events = [{"type": "joined", **base, "duplicate_of": dedup["duplicate_of"],
                   "similarity": dedup["similarity"], "method": dedup["method"]}]
    if dedup.get("merged_clusters"):
        events.append({"type": "merged", **base, "merged": dedup["merged_clusters"]})
    return events


__all__ = ["Worker", "WorkerSettings", "cluster_events", "mask"]
