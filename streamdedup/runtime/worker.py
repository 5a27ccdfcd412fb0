"""The Kafka worker: consume, decide, produce verdicts, exactly once.

One loop, one thread: consume a batch -> each (topic, partition) of it goes to its partition
handler, which stages its store changes and produces its outputs -> one Kafka transaction
carries every output and the input offsets (`send_offsets_to_transaction`) -> then each handler
writes its store changes together with the offset they reflect, in one WriteBatch.

What the handlers are depends on the topology (`settings.topology`):
- `global` (default, `streamdedup.runtime.topologies.scaleout`): pages are fingerprinted, their index keys
  repartitioned through Kafka so every key lives in one index partition, and the answers gathered
  by page id into one verdict. Near-duplicates are found across input partitions and workers.
- `local` (`streamdedup.runtime.topologies.local`): one detector store per input partition; fewer
  hops, but only near-duplicates within one input partition meet.

Restart: a store's offset is never ahead of the committed one (it is written after the
transaction commits). If it is behind (a crash between the two, or a partition whose store is
missing on this worker), the worker replays that range into the store *without* producing, since
its outputs are already in Kafka. If it is ahead (the group's offsets were reset by hand), it
refuses to start. Without transactions (`transactions = false`) the same loop gives
at-least-once delivery with idempotent verdicts keyed by page id.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections import defaultdict
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition

from streamdedup.config import DetectorConfig
from streamdedup.outputs.kafka import Outputs, WorkerStats, cluster_events
from streamdedup.runtime import topics
from streamdedup.runtime.metrics import WorkerMetrics
from streamdedup.runtime.settings import WorkerSettings, mask
from streamdedup.runtime.topologies import PartitionHandler, make_topology
from streamdedup.runtime.topologies.base import offset_of, partition_of, topic_of

log = logging.getLogger(__name__)

TP = tuple[str, int]


class WorkerStopped(RuntimeError):
    """The worker cannot go on; the message names the cause and the fix (one line for the CLI)."""


class StoreAheadOfKafka(WorkerStopped):
    """The local store has seen offsets the consumer group has not committed."""


class StoreWriteFailed(WorkerStopped):
    """The store could not be written (full disk, I/O error) after Kafka committed the batch."""


class WorkerFenced(WorkerStopped):
    """Another worker took this one's identity (group.instance.id or transactional id): this one
    can never commit again, so it stops instead of idling."""


# errors that mean another process now owns this worker's identity
FENCED = frozenset({KafkaError.FENCED_INSTANCE_ID, KafkaError._FENCED, KafkaError.PRODUCER_FENCED,
                    KafkaError.INVALID_PRODUCER_EPOCH})


def fenced(settings: WorkerSettings, error: KafkaError) -> WorkerFenced:
    return WorkerFenced(
        f"worker {settings.worker_id!r} of group {settings.group_id!r} was fenced by another worker with the "
        f"same id ({error.str()}): give every worker its own --worker-id (STREAMDEDUP_WORKER_ID) and state "
        "directory; this one stops")


def offset_key(topic: str, partition: int) -> str:
    return f"offset:{topic}:{partition}"


class Worker:
    def __init__(self, settings: WorkerSettings, config: DetectorConfig) -> None:
        self.settings = settings
        self.config = config
        self.stats = WorkerStats()
        self.metrics = WorkerMetrics()
        self.handlers: dict[TP, PartitionHandler] = {}
        self.replay_until: dict[TP, int] = {}
        self._stop = threading.Event()
        self._last_activity: float | None = None  # set on assignment and on every batch
        log.info("worker starting: %r", settings)
        self.topology = make_topology(settings, config, topics.ensure_topics(settings))
        consumer_settings: dict[str, Any] = {
            "group.id": settings.group_id, "enable.auto.commit": False, "auto.offset.reset": "earliest",
            "isolation.level": "read_committed", "enable.partition.eof": False,
            **topics.consumer_settings(), "session.timeout.ms": 10_000,
            "partition.assignment.strategy": settings.assignment_strategy}
        if settings.static_membership:
            # KIP-345: a restarted worker takes its partitions (and local stores) back at once
            consumer_settings["group.instance.id"] = f"streamdedup-{settings.worker_id}"
        self.consumer = Consumer(settings.client(**consumer_settings))
        self.producer = self._new_producer()
        self.outputs = Outputs(self.producer, settings.topics, self.metrics, self.stats)

    # -- the producer -------------------------------------------------------------------------
    def _new_producer(self) -> Producer:
        """An idempotent producer; with transactions, under a fresh transactional id.

        The previous id of this worker (kept in the state directory) is initialised first, which
        aborts a transaction its killed process left open and fences it off. The new id gets a new
        producer id, so no producer ever writes after one of its own aborted transactions: some
        brokers (noida-db 0.2.3) then hide all its later records from `read_committed` consumers
        that start mid-partition. Offsets are fenced by the consumer group (KIP-447), so a
        per-start transactional id loses no safety."""
        base: dict[str, Any] = {"enable.idempotence": True, "linger.ms": 5, **topics.producer_settings()}
        if not self.settings.transactions:
            return Producer(self.settings.client(**base))
        record = self.settings.state_dir / f"producer-{self.settings.worker_id}.json"
        if record.exists():
            previous = Producer(self.settings.client(**base, **{"transactional.id": record.read_text().strip()}))
            previous.init_transactions(30)
            previous.flush(1)
            del previous
        transactional_id = f"streamdedup-{self.settings.group_id}-{self.settings.worker_id}-{uuid.uuid4().hex[:8]}"
        record.parent.mkdir(parents=True, exist_ok=True)
        record.write_text(transactional_id)
        producer = Producer(self.settings.client(**base, **{"transactional.id": transactional_id}))
        producer.init_transactions(30)
        return producer

    # -- partitions ---------------------------------------------------------------------------
    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        committed = {(tp.topic, tp.partition): tp.offset for tp in consumer.committed(partitions, timeout=30)}
        for tp in partitions:
            tp_key = (tp.topic, tp.partition)
            handler = self.handlers.get(tp_key)
            if handler is None:
                handler = self.handlers[tp_key] = self.topology.open(tp.topic, tp.partition)
            found = committed.get(tp_key, -1)
            kafka = found if found >= 0 else None
            if not handler.stateful:
                tp.offset = kafka if kafka is not None else OFFSET_BEGINNING
                continue
            raw = handler.get_meta(offset_key(tp.topic, tp.partition))
            stored = None if raw is None else int(raw)
            if stored is not None and kafka is not None and stored > kafka:
                raise StoreAheadOfKafka(
                    f"the store for {tp.topic}[{tp.partition}] has processed up to offset {stored}, but the "
                    f"group {self.settings.group_id!r} has committed only {kafka}: the group's offsets were "
                    "reset or the store belongs to another group. Restore the offsets, or delete the "
                    f"store directory {self.settings.state_dir / f'{tp.topic}-{tp.partition}'} to rebuild it.")
            if kafka is not None and (stored or 0) < kafka:
                self.replay_until[tp_key] = kafka
                log.warning("replaying %s[%d] offsets %s..%d into the store without producing",
                            tp.topic, tp.partition, stored or 0, kafka)
            tp.offset = stored if stored is not None else OFFSET_BEGINNING
        log.info("assigned %s", ", ".join(f"{tp.topic}[{tp.partition}]@{tp.offset}" for tp in partitions))
        if self._cooperative(consumer):
            consumer.incremental_assign(partitions)
        else:
            consumer.assign(partitions)
        self._last_activity = time.monotonic()

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        for tp in partitions:
            handler = self.handlers.pop((tp.topic, tp.partition), None)
            if handler is not None:
                handler.close()
            self.replay_until.pop((tp.topic, tp.partition), None)
        if self._cooperative(consumer):
            consumer.incremental_unassign(partitions)
        else:
            consumer.unassign()

    def _cooperative(self, consumer: Consumer) -> bool:
        """Incremental rebalancing (cooperative-sticky): only the moved partitions are passed."""
        return self.settings.assignment_strategy == "cooperative-sticky"

    # -- the loop -----------------------------------------------------------------------------
    def stop(self) -> None:
        self._stop.set()

    def run(self, idle_timeout_s: float | None = None, assignment_timeout_s: float = 120.0,
            stop_after: int | None = None) -> WorkerStats:
        """Run until `stop()`, until `stop_after` pages got their outcome, or until nothing
        arrived for `idle_timeout_s` after the group gave this worker its partitions (tests,
        demo). A killed predecessor keeps its partitions until its session times out, so
        idleness only counts from the assignment."""
        self.consumer.subscribe(self.topology.topics(), on_assign=self._on_assign, on_revoke=self._on_revoke,
                                on_lost=self._on_revoke)
        started = time.monotonic()
        try:
            while not self._stop.is_set():
                messages = [m for m in self.consumer.consume(self.settings.batch_size, self.settings.batch_timeout_s)
                            if not self._is_error(m)]
                now = time.monotonic()
                if messages:
                    self.process(messages)
                    self._last_activity = now
                    if stop_after is not None and self.stats.decided >= stop_after:
                        break
                elif idle_timeout_s is not None and self._last_activity is not None \
                        and now - self._last_activity > idle_timeout_s:
                    break
                elif (idle_timeout_s is not None and self._last_activity is None
                      and now - started > assignment_timeout_s):
                    log.warning("no partitions assigned after %.0fs: stopping", assignment_timeout_s)
                    break
        finally:
            self.close()
        return self.stats

    def _is_error(self, message: Message) -> bool:
        error = message.error()
        if error is None:
            return False
        # librdkafka reports a fenced static member as _FATAL, naming the cause only in the text
        if error.code() in FENCED or (error.code() == KafkaError._FATAL and "fenced" in error.str().lower()):
            raise fenced(self.settings, error)
        if error.fatal() or error.code() == KafkaError._FATAL:
            raise WorkerStopped(f"the Kafka consumer failed for good ({error.str()}): restart the worker")
        log.warning("consumer error: %s", error)
        return True

    def process(self, messages: list[Message]) -> None:
        started = time.monotonic()
        by_partition: dict[TP, list[Message]] = defaultdict(list)
        for message in messages:
            by_partition[(topic_of(message), partition_of(message))].append(message)
        self.outputs.discard()
        if self.settings.transactions:
            self.producer.begin_transaction()
        try:
            for (topic, partition), batch in by_partition.items():
                handler = self.handlers[(topic, partition)]
                self.stats.replayed += handler.process(batch, self.outputs,
                                                       self.replay_until.get((topic, partition), -1))
                handler.stage_meta(offset_key(topic, partition), str(offset_of(batch[-1]) + 1).encode())
            self._commit_offsets(by_partition)
        except KafkaException as err:
            if not self._recover(by_partition, err):
                return
        for tp_key, batch in by_partition.items():
            handler = self.handlers[tp_key]
            try:
                handler.commit()
            except Exception as err:  # noqa: BLE001 - RocksDB reports a full disk as a plain exception
                first, last = offset_of(batch[0]), offset_of(batch[-1])
                raise StoreWriteFailed(
                    f"could not write the store of {tp_key[0]}[{tp_key[1]}] under {self.settings.state_dir}: {err}. "
                    f"The outcomes of offsets {first}..{last} are committed in Kafka; nothing is lost: free space "
                    "and restart the worker, it will replay those offsets into the store without emitting them "
                    "again.") from err
        self.outputs.commit()
        self.stats.batches += 1
        self.stats.consumed += len(messages)
        for (topic, _), batch in by_partition.items():
            self.stats.inputs[topic] += len(batch)
            self.metrics.inputs.labels(topic).inc(len(batch))
        self._observe(by_partition, started)

    def _observe(self, by_partition: dict[TP, list[Message]], started: float) -> None:
        now = time.time()
        self.metrics.batch_seconds.observe(time.monotonic() - started)
        for (topic, partition), batch in by_partition.items():
            label = str(partition) if topic == self.settings.topics.pages else f"{topic}[{partition}]"
            if topic == self.settings.topics.pages:
                for message in batch:
                    kind, stamp = message.timestamp()
                    if kind and stamp > 0:
                        self.metrics.page_latency.observe(max(0.0, now - stamp / 1000))
            try:
                _, high = self.consumer.get_watermark_offsets(TopicPartition(topic, partition), cached=True)
                self.metrics.lag.labels(label).set(max(0, high - offset_of(batch[-1]) - 1))
            except KafkaException:
                pass
            handler = self.handlers[(topic, partition)]
            total = handler.property_total
            if handler.stateful:  # the stateful steps: RocksDB's own figures, all column families
                self.metrics.store_bytes.labels(label).set(total("rocksdb.live-sst-files-size"))
                self.metrics.store_keys.labels(label).set(total("rocksdb.estimate-num-keys"))

    def _commit_offsets(self, by_partition: dict[TP, list[Message]]) -> None:
        offsets = [TopicPartition(topic, partition, offset_of(batch[-1]) + 1)
                   for (topic, partition), batch in by_partition.items()]
        if self.settings.transactions:
            self.producer.send_offsets_to_transaction(offsets, self.consumer.consumer_group_metadata(), 30)
            self.producer.commit_transaction(60)
        else:
            self.producer.flush(60)
            failure = self.outputs.first_failure()
            if failure is not None:  # an output was not delivered: consume the batch again
                raise KafkaException(failure)
            self.consumer.commit(offsets=offsets, asynchronous=False)

    def _recover(self, by_partition: dict[TP, list[Message]], err: KafkaException) -> bool:
        """After a failed transaction: True if it committed after all (its outputs and offsets
        are in Kafka: write the stores and go on), False if the batch must be consumed again.

        A commit whose answer was lost (the broker went away just after committing) must not be
        redone, or its outputs would appear twice; the group's committed offsets, which are part
        of the transaction, tell which way it went."""
        error = err.args[0] if err.args else None
        if isinstance(error, KafkaError) and error.code() in FENCED:
            raise fenced(self.settings, error) from err
        while self.producer.poll(0):  # the delivery reports of the failed records, before they are learnt
            pass
        refused = self.outputs.learn_refusals()  # sent as too_large_for_broker stubs on the retry
        fatal = bool(error is not None and hasattr(error, "fatal") and error.fatal())
        if not self.settings.transactions:
            if fatal:
                raise err
            self._rewind(by_partition)
            return False
        if error is not None and error.retriable():
            try:
                self.producer.commit_transaction(60)
                return True
            except KafkaException as again:
                err, error = again, again.args[0] if again.args else None
                if isinstance(error, KafkaError) and error.code() in FENCED:
                    raise fenced(self.settings, error) from again
                fatal = bool(error is not None and error.fatal())
        if not fatal:
            try:
                self.producer.abort_transaction(30)
            except KafkaException:
                pass  # nothing to abort (it committed) or the broker is away: the successor aborts it
        # a new producer first initialises this one's transactional id: that aborts the
        # transaction if it is still open, and fences this producer off (see _new_producer)
        self.producer = self.outputs.producer = self._new_producer()
        if self._committed(by_partition):
            log.warning("transaction reported %s, but its offsets are committed: it went through", err)
            return True
        if not refused:
            log.warning("transaction failed (%s); the batch will be consumed again", err)
        self._rewind(by_partition)
        return False

    def _committed(self, by_partition: dict[TP, list[Message]]) -> bool:
        wanted = {(topic, partition): offset_of(batch[-1]) + 1 for (topic, partition), batch in by_partition.items()}
        found = self.consumer.committed([TopicPartition(t, p) for t, p in wanted], timeout=30)
        return all(tp.offset == wanted[(tp.topic, tp.partition)] for tp in found)

    def _rewind(self, by_partition: dict[TP, list[Message]]) -> None:
        self.stats.aborted += 1
        self.outputs.discard()
        for (topic, partition), batch in by_partition.items():
            self.handlers[(topic, partition)].discard()
            self.consumer.seek(TopicPartition(topic, partition, offset_of(batch[0])))

    def close(self) -> None:
        for tp_key, handler in self.handlers.items():
            try:
                handler.close()
            except Exception:  # noqa: BLE001 - e.g. a full disk on the final flush: the WAL has the data
                log.exception("closing the store of %s[%d] failed", *tp_key)
        self.handlers.clear()
        try:
            self.consumer.close()
        except RuntimeError:
            pass
        self.producer.flush(10)


__all__ = ["Worker", "WorkerFenced", "WorkerSettings", "WorkerStats", "WorkerStopped", "cluster_events", "mask"]
