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
refuses to start. If the partition itself started over (the record the store read last is not at
its offset any more: a topic created again, a broker that lost its data; runtime/topic_reset.py),
it refuses or reads the partition from its beginning, as `on_topic_reset` says. Without
transactions (`transactions = false`) the same loop gives at-least-once delivery with idempotent
verdicts keyed by page id.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Container, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition

from streamdedup.config import DetectorConfig
from streamdedup.outputs.kafka import Outputs, WorkerStats, cluster_events
from streamdedup.runtime import topics
from streamdedup.runtime.errors import WorkerStopped
from streamdedup.runtime.group_settings import agree_on_settings
from streamdedup.runtime.metrics import WorkerMetrics
from streamdedup.runtime.settings import WorkerSettings, mask
from streamdedup.runtime.topic_reset import Finding, RecordIdentity, check_partitions, identity_key
from streamdedup.runtime.topologies import PartitionHandler, make_topology
from streamdedup.runtime.topologies.base import offset_of, partition_of, topic_of
from streamdedup.runtime.watchdog import CallWatchdog

log = logging.getLogger(__name__)

TP = tuple[str, int]


class StoreAheadOfKafka(WorkerStopped):
    """The local store has seen offsets the consumer group has not committed."""


class StoreWriteFailed(WorkerStopped):
    """The store could not be written (full disk, I/O error) after Kafka committed the batch."""


class StateLost(WorkerStopped):
    """A store's folder (or the whole state directory) was deleted under the running worker."""


class TopicStartedOver(WorkerStopped):
    """A partition the store has read started over (the topic was created again, the broker lost its
    data, another cluster) and `on_topic_reset` is `refuse`."""


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


@dataclass(frozen=True)
class Progress:
    at: float
    pages_in: int
    decided: int


def _since_last(seen_by: dict[TP, dict[str, int]], tp_key: TP, now: Mapping[str, int]) -> list[tuple[str, int]]:
    """What each of a handler's running counts (`now`) grew by since `seen_by` last kept them,
    where it grew; `now` is kept for the next batch."""
    seen = seen_by.get(tp_key, {})
    seen_by[tp_key] = dict(now)
    return [(kind, added) for kind, count in now.items() if (added := count - seen.get(kind, 0)) > 0]


class Worker:
    def __init__(self, settings: WorkerSettings, config: DetectorConfig, watchdog: CallWatchdog | None = None) -> None:
        self.settings = settings
        self.config = config
        # a deadline on the client's blocking transactional calls (runtime/watchdog.py): the command
        # line's worker exits when one outlives its timeout; without one (in process), it waits
        self.watchdog = watchdog
        self.stats = WorkerStats()
        self.metrics = WorkerMetrics()
        self.handlers: dict[TP, PartitionHandler] = {}
        self.replay_until: dict[TP, int] = {}
        self._work_seen: dict[TP, dict[str, int]] = {}  # each handler's work counts at its last batch
        self._steps_seen: dict[TP, dict[str, int]] = {}  # and its nanoseconds by step
        self._stop = threading.Event()
        self._closing = False  # the consumer is closing: an assignment it still delivers is not taken
        self._last_activity: float | None = None  # set on assignment and on every batch
        self._loop_at = time.monotonic()  # the loop's last round, for /healthz
        self._running = False
        self._paused = False  # caught up: fetching paused, end offsets polled (see _idle)
        self._taken_over = False  # partitions were assigned in the last poll: they tick before any record
        self._stores_checked_at = 0.0  # when the stores' folders were last found in place (_check_stores)
        self._failure: str | None = None  # why the loop stopped, if it failed (/healthz)
        self._start_offsets: dict[TP, int] = {}  # where each assigned partition was started
        self._lag: dict[TP, int] = {}
        self._progress = Progress(time.monotonic(), 0, 0)
        self.metrics.health = self.health
        self.metrics.readiness = self.readiness
        log.info("worker starting: %r", settings)
        for risk in settings.risks():
            log.warning(risk)
        self._input_ends: dict[int, tuple[float, int | None]] = {}  # input partition -> (asked at, end offset)
        self._ends_client: Consumer | None = None  # asks end offsets while the group consumer fetches
        self.topology = make_topology(settings, config, topics.ensure_topics(settings), self._input_end)
        consumer_settings: dict[str, Any] = {
            "group.id": settings.group_id, "enable.auto.commit": False, "auto.offset.reset": "earliest",
            "isolation.level": "read_committed", "enable.partition.eof": False,
            **topics.consumer_settings(), "session.timeout.ms": 10_000,
            "max.poll.interval.ms": round(settings.max_poll_interval_s * 1000),
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
        previous_id = record.read_text().strip() if record.exists() else ""
        if previous_id:  # empty: a record from before the atomic write below, cut by a kill
            previous = Producer(self.settings.client(**base, **{"transactional.id": previous_id}))
            with self._deadline("init_transactions", 30):
                previous.init_transactions(30)
            previous.flush(1)
            del previous
        transactional_id = f"streamdedup-{self.settings.group_id}-{self.settings.worker_id}-{uuid.uuid4().hex[:8]}"
        record.parent.mkdir(parents=True, exist_ok=True)
        # replaced whole, never truncated in place: a SIGKILL between the truncation and the write
        # left an empty id, and the next start died on it ("Transactional API requires
        # transactional.id to be configured") while the id before it was lost unfenced
        partial = record.with_name(record.name + ".partial")
        partial.write_text(transactional_id)
        os.replace(partial, record)
        producer = Producer(self.settings.client(**base, **{"transactional.id": transactional_id}))
        with self._deadline("init_transactions", 30):
            producer.init_transactions(30)
        return producer

    def _deadline(self, what: str, timeout_s: float) -> AbstractContextManager[None]:
        """The watchdog's deadline on a blocking call of the Kafka client (none without one)."""
        return nullcontext() if self.watchdog is None else self.watchdog.call(what, timeout_s)

    # -- partitions ---------------------------------------------------------------------------
    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        if self._closing:
            # A rebalance that ends while the consumer closes (e.g. after the worker overran
            # max.poll.interval.ms and rejoined) still delivers its assignment. Asking the
            # committed offsets then fails (the handle is being destroyed), and confluent-kafka
            # re-raised that from close() as an object no `except` clause matches: it ended
            # the test session. Not assigning lets librdkafka treat it as unassigned.
            log.info("closing: assignment of %d partitions not taken", len(partitions))
            return
        committed = {(tp.topic, tp.partition): tp.offset for tp in consumer.committed(partitions, timeout=30)}
        for tp in partitions:
            if (tp.topic, tp.partition) not in self.handlers:
                self.handlers[(tp.topic, tp.partition)] = self.topology.open(tp.topic, tp.partition)
        started_over = self._started_over(partitions)
        for tp in partitions:
            tp_key = (tp.topic, tp.partition)
            handler = self.handlers[tp_key]
            found = committed.get(tp_key, -1)
            kafka = found if found >= 0 else None
            if not handler.stateful:
                tp.offset = kafka if kafka is not None else OFFSET_BEGINNING
                continue
            raw = handler.get_meta(offset_key(tp.topic, tp.partition))
            stored = None if raw is None else int(raw)
            if tp_key in started_over:  # judged from its beginning: the store keeps what it knows of earlier pages
                self._start_over(tp_key, stored, kafka, started_over[tp_key].end)
                tp.offset = OFFSET_BEGINNING
                continue
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
        for tp in partitions:
            self._start_offsets[(tp.topic, tp.partition)] = tp.offset
        log.info("assigned %s", ", ".join(f"{tp.topic}[{tp.partition}]@{tp.offset}" for tp in partitions))
        if self._cooperative(consumer):
            consumer.incremental_assign(partitions)
        else:
            consumer.assign(partitions)
        if self._paused:  # librdkafka keeps a partition paused across unassign and assign
            consumer.resume(consumer.assignment())
            self._paused = False  # pausing again once caught up
        self._count_assigned()
        self._taken_over = True
        if self._last_activity is None:  # progress is reported from the first assignment on
            self._progress = Progress(time.monotonic(), 0, 0)
        self._last_activity = time.monotonic()

    def _start_over(self, tp_key: TP, stored: int | None, kafka: int | None, end: int) -> None:
        """A partition that started over is read from its beginning. If the group has committed an
        offset of the new topic (another worker judged it up to there since), that range is replayed
        into the store without producing. An offset equal to the store's is its own last commit of
        the old topic, which some brokers (noida-db) keep when a topic is created again."""
        if kafka is not None and kafka != stored and 0 < kafka and (end < 0 or kafka <= end):
            self.replay_until[tp_key] = kafka
            log.warning("%s[%d]: the group has committed offset %d of the new topic: replaying 0..%d into the "
                        "store without producing", *tp_key, kafka, kafka)
        else:
            self.replay_until.pop(tp_key, None)

    def _started_over(self, partitions: list[TopicPartition]) -> dict[TP, Finding]:
        """The assigned partitions whose stores read a topic that has since started over, to be
        judged from their beginning (`on_topic_reset = restart`); with `refuse`, the worker stops
        at the first (runtime/topic_reset.py). Partitions whose stores read nothing are not asked."""
        expected: dict[TP, tuple[int, RecordIdentity | None]] = {}
        for tp in partitions:
            handler = self.handlers[(tp.topic, tp.partition)]
            raw = handler.get_meta(offset_key(tp.topic, tp.partition)) if handler.stateful else None
            if raw is None or int(raw) <= 0:
                continue
            last = RecordIdentity.decode(handler.get_meta(identity_key(tp.topic, tp.partition)))
            expected[(tp.topic, tp.partition)] = (last.offset if last is not None else int(raw) - 1, last)
        findings = check_partitions(self.settings.client(), expected)
        started_over: dict[TP, Finding] = {}
        for (topic, partition), finding in sorted(findings.items()):
            store = self.settings.state_dir / f"{topic}-{partition}"
            if not finding.started_over:
                if not finding.verified:
                    log.warning("%s[%d]: whether the topic started over cannot be verified (%s): going on "
                                "from the store's offset", topic, partition, finding.detail)
                continue
            if self.settings.on_topic_reset == "refuse":
                raise TopicStartedOver(
                    f"{topic}[{partition}] started over: {finding.detail}, so the topic was deleted and "
                    "created again, the broker lost its data, or the worker now reads another cluster. To judge "
                    "its records from the beginning, keeping what the store knows of earlier pages, restart with "
                    "--on-topic-reset restart (STREAMDEDUP_ON_TOPIC_RESET=restart); to forget them, delete "
                    f"{store}")
            log.warning("%s[%d] started over (%s): judging it from its beginning; the store %s keeps what it "
                        "knows of earlier pages (on_topic_reset = restart)", topic, partition, finding.detail, store)
            started_over[(topic, partition)] = finding
        return started_over

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        for tp in partitions:
            handler = self.handlers.pop((tp.topic, tp.partition), None)
            if handler is not None:
                handler.close()
            self.replay_until.pop((tp.topic, tp.partition), None)
            self._start_offsets.pop((tp.topic, tp.partition), None)
            self._work_seen.pop((tp.topic, tp.partition), None)  # a handler opened again counts from 0
            self._steps_seen.pop((tp.topic, tp.partition), None)
            if self._lag.pop((tp.topic, tp.partition), None) is not None and self._running:
                self.metrics.lag.remove(tp.topic, str(tp.partition))  # another worker reports it now
        if self._paused:  # a paused partition would stay paused when it is assigned again
            consumer.resume(partitions)
        if self._cooperative(consumer):
            consumer.incremental_unassign(partitions)
        else:
            consumer.unassign()
            self._paused = False
        self._count_assigned()

    def _count_assigned(self) -> None:
        by_topic: dict[str, int] = defaultdict(int)
        for topic, _ in self.handlers:
            by_topic[topic] += 1
        for topic in self.topology.topics():
            self.metrics.assigned.labels(topic).set(by_topic[topic])

    def _cooperative(self, consumer: Consumer) -> bool:
        """Incremental rebalancing (cooperative-sticky): only the moved partitions are passed."""
        return self.settings.assignment_strategy == "cooperative-sticky"

    # -- the loop -----------------------------------------------------------------------------
    def stop(self) -> None:
        self._stop.set()

    def run(self, idle_timeout_s: float | None = None, assignment_timeout_s: float = 120.0,
            stop_after: int | None = None) -> WorkerStats:
        """Run until `stop()` (SIGTERM and SIGINT call it when run in the main thread), until
        `stop_after` pages got their outcome, or until nothing arrived for `idle_timeout_s`
        after the group gave this worker its partitions (tests, demo). A killed predecessor keeps
        its partitions until its session times out, so idleness only counts from the assignment."""
        try:  # before joining: a worker whose verdict settings are not its group's takes no partition
            agree_on_settings(self.settings, self.config)
        except WorkerStopped as err:
            self._failure = str(err)
            self.close()
            raise
        self.consumer.subscribe(self.topology.topics(), on_assign=self._on_assign, on_revoke=self._on_revoke,
                                on_lost=self._on_revoke)
        started = time.monotonic()
        previous = self._handle_signals()
        self._running = True
        between_batches = False  # the loop ended between two batches: no transaction is open
        try:
            while not self._stop.is_set():
                self._loop_at = time.monotonic()
                self.metrics.last_loop.set_to_current_time()
                self._check_stores(self._loop_at)
                # the producer's log lines (runtime/settings.py: through Python's logging) wait in
                # its queue until it is polled: every round, or a broker outage without batches
                # would fill it with librdkafka's ~20 failed connections a second
                self.producer.poll(0)
                timeout = self.settings.idle_poll_s if self._paused else self.settings.batch_timeout_s
                messages = self._consume(timeout)
                if self._taken_over:  # before any record: what their previous owners sent is taken back
                    self._taken_over = False
                    # by those with records waiting: their lags first (a partition that has none
                    # is otherwise measured only in a round without input, which a busy worker
                    # may not have for long, and would hold every verdict back until then)
                    self._input_waiting()
                    self._tick_alone()
                now = time.monotonic()
                if messages:
                    self.process(messages)
                    self._last_activity = now
                    if stop_after is not None and self.stats.decided >= stop_after:
                        break
                else:
                    self._tick_alone()
                    if self.handlers and self.settings.idle_poll_s > 0:
                        self._idle()
                if self._last_activity is not None:
                    self._report_progress(now)
                if messages:
                    continue
                if idle_timeout_s is not None and self._last_activity is not None \
                        and now - self._last_activity > idle_timeout_s:
                    break
                if (idle_timeout_s is not None and self._last_activity is None
                        and now - started > assignment_timeout_s):
                    log.warning("no partitions assigned after %.0fs: stopping", assignment_timeout_s)
                    break
            between_batches = True
        except WorkerStopped as err:
            self._failure = str(err)
            raise
        finally:
            self._running = False
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            self.close(close_producer=between_batches)
        return self.stats

    def _check_stores(self, now: float) -> None:
        """At most every second: each open store's folder still has its CURRENT file. RocksDB goes
        on writing into the files of a folder deleted under it (they live until closed), so a worker
        whose state directory was deleted ran on, healthy, and exited 0 (issue 56)."""
        if now - self._stores_checked_at < 1.0:
            return
        self._stores_checked_at = now
        for (topic, partition), handler in self.handlers.items():
            path = self.settings.state_dir / f"{topic}-{partition}"
            if handler.stateful and not (path / "CURRENT").exists():
                raise StateLost(
                    f"the store of {topic}[{partition}] is gone from {path} while the worker ran (the folder or the "
                    f"state directory {self.settings.state_dir} was deleted or unmounted): restart the worker on a "
                    "state directory that stays; it rebuilds the stores from Kafka without emitting anything again")

    def _consume(self, timeout: float) -> list[Message]:
        """Up to `batch_size` messages: waits up to `timeout` for the first, then takes what the
        client has fetched already, as Kafka's poll does. librdkafka's batch consume waits for a
        whole batch or the timeout: unless `batch_size` messages were waiting, every batch waited
        out `batch_timeout_s`, at each of the global topology's three hops. No more once the batch
        holds `batch_bytes` (it is held in memory whole), so after the first, one at a time."""
        settings = self.settings
        messages = self.consumer.consume(1, timeout)
        held = sum(len(m.value() or b"") for m in messages)
        # one at a time: a message's size is known only once taken (1.4-1.8 us of CPU a message
        # against 0.3-0.5 taking 255 a call, noida-db, 30,000 messages; a page takes milliseconds)
        while messages and len(messages) < settings.batch_size and held < settings.batch_bytes:
            more = self.consumer.consume(1, 0)
            if not more:
                break
            messages += more
            held += len(more[0].value() or b"")
        return [m for m in messages if not self._is_error(m)]

    def _handle_signals(self) -> dict[int, Any]:
        """SIGTERM (docker stop, systemd, Kubernetes) and SIGINT finish the batch in hand, close
        the stores and the clients, and return; only the main thread may set handlers."""
        if threading.current_thread() is not threading.main_thread():
            return {}
        previous: dict[int, Any] = {}
        for sig in (signal.SIGTERM, signal.SIGINT):
            previous[sig] = signal.signal(sig, self._on_signal)
        return previous

    def _on_signal(self, signum: int, _: Any) -> None:
        log.info("%s: stopping after the current batch", signal.Signals(signum).name)
        self.stop()

    # -- idle: fetching paused -----------------------------------------------------------------
    def _idle(self) -> None:
        """Nothing came: pause fetching once caught up, resume once something is to be read.

        librdkafka fetches again the moment a fetch comes back and relies on the broker to hold
        an empty fetch for `fetch.wait.max.ms`; noida-db answers at once, so a caught-up consumer
        sent thousands of fetches a second (half a core in the worker, 0.4 in the broker).
        Paused, the loop asks the partitions' end offsets every `idle_poll_s` instead. Pausing
        on one empty answer is not enough: a resumed partition is fetched only when librdkafka's
        broker thread next wakes (up to a second later; the end-offset request wakes it), so
        the worker pauses only when the end offsets say it is caught up."""
        waiting = self._input_waiting()  # also the lag gauges, exact now that nothing moves
        assigned = self.consumer.assignment()
        if waiting and self._paused:
            self.consumer.resume(assigned)
            self._paused = False
            self._tick_alone()  # before any record: inputs that were idle take their idle watermark back
        elif not waiting and not self._paused:
            self.consumer.pause(assigned)
            self._paused = True

    def _input_waiting(self) -> bool:
        """Whether an assigned partition has committed records past this consumer's position,
        asking the broker (its last stable offset, as the consumer reads `read_committed`).
        Updates the lag gauges on the way."""
        assigned = self.consumer.assignment()
        waiting = False
        try:
            positions = self.consumer.position(assigned)
        except KafkaException:
            return True
        # paused, the group consumer fetches nothing and its request wakes its broker thread, which
        # a resumed partition waits for; fetching, it would wait behind the fetch (`_offsets_client`)
        asking = self.consumer if self._paused else self._offsets_client()
        for tp in positions:
            tp_key = (tp.topic, tp.partition)
            try:
                low, end = asking.get_watermark_offsets(TopicPartition(tp.topic, tp.partition), timeout=5,
                                                        cached=False)
            except KafkaException:
                return True  # the broker is away: fetching will tell
            position = tp.offset
            if position < 0:  # nothing read yet: where the partition was started
                start = self._start_offsets.get(tp_key, OFFSET_BEGINNING)
                position = start if start >= 0 else low
            self._set_lag(tp.topic, tp.partition, end - position)
            waiting = waiting or end > position
        return waiting

    def _input_end(self, partition: int, fresh: bool) -> int | None:
        """An input partition's end offset (its last stable offset for this read_committed consumer),
        whoever owns it: asked of the broker at most every `idle_poll_s` unless `fresh`; None if
        it does not answer. The index partitions ask before they trust an idle claim."""
        now = time.monotonic()
        asked = self._input_ends.get(partition)
        if asked is not None and not fresh and now - asked[0] < self.settings.idle_poll_s:
            return asked[1]
        try:
            _, end = self._offsets_client().get_watermark_offsets(
                TopicPartition(self.settings.topics.pages, partition), timeout=1, cached=False)
        except KafkaException:
            end = None
        end = end if end is not None and end >= 0 else None
        self._input_ends[partition] = (now, end)
        return end

    def _offsets_client(self) -> Consumer:
        """A client of its own, assigned nothing, to ask end offsets while the group consumer
        fetches: a broker answers a connection's requests in order, and on the group consumer's
        each call waits behind its long-polling fetch (`fetch.wait.max.ms`, 500 ms; Tansu and
        Apache Kafka hold an empty fetch, noida-db answers at once): 8.6 s for 18 partitions on
        Tansu, measured, after every assignment. Made on first use."""
        if self._ends_client is None:
            self._ends_client = Consumer(self.settings.client(**{
                "group.id": f"{self.settings.group_id}.offsets", "enable.auto.commit": False,
                "isolation.level": "read_committed"}))
        return self._ends_client

    def _set_lag(self, topic: str, partition: int, lag: int) -> None:
        self._lag[(topic, partition)] = max(0, lag)
        self.metrics.lag.labels(topic, str(partition)).set(max(0, lag))

    # -- what an operator sees ------------------------------------------------------------------
    def health(self) -> tuple[bool, dict[str, Any]]:
        """Alive: the loop goes round (a batch, or an idle poll) more often than `stall_timeout_s`, and it
        has not stopped on an error (`WorkerStopped`: a store deleted under it, a fenced worker...)."""
        age = time.monotonic() - self._loop_at
        stopped = not self._running and self._stop.is_set()
        ok = not stopped and self._failure is None and age < self.settings.stall_timeout_s
        return ok, {"running": self._running, "last_loop_age_s": round(age, 3),
                    "stall_timeout_s": self.settings.stall_timeout_s,
                    **({"failed": self._failure} if self._failure else {})}

    def readiness(self) -> tuple[bool, dict[str, Any]]:
        """Ready: the loop runs, partitions are assigned and their stores are open."""
        assigned = sorted(f"{topic}[{partition}]" for topic, partition in self.handlers)
        replaying = sorted(f"{topic}[{partition}]" for topic, partition in self.replay_until)
        ok = self._running and bool(assigned) and self.health()[0]
        return ok, {"running": self._running, "assigned": assigned, "replaying": replaying}

    def _report_progress(self, now: float) -> None:
        """Every `progress_interval_s` once assigned: pages in, verdicts by status, lag, rate."""
        interval = self.settings.progress_interval_s
        last = self._progress
        if interval <= 0 or now - last.at < interval:
            return
        pages_in = self.stats.inputs.get(self.settings.topics.pages, 0)
        elapsed = now - last.at
        statuses = " ".join(f"{status}={n}" for status, n in sorted(self.stats.statuses.items())) or "none"
        lag = {topic: 0 for topic in self.topology.topics()}
        for (topic, _), value in self._lag.items():
            lag[topic] = lag.get(topic, 0) + value
        log.info("progress: %d pages in (%.1f/s over %.0fs), %d decided (%.1f/s): %s; lag %s; %d partitions%s",
                 pages_in, (pages_in - last.pages_in) / elapsed, elapsed, self.stats.decided,
                 (self.stats.decided - last.decided) / elapsed, statuses,
                 " ".join(f"{topic}={n}" for topic, n in lag.items()), len(self.handlers),
                 ", idle" if self._paused else "")
        self._progress = Progress(now, pages_in, self.stats.decided)

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
        ticked: list[tuple[PartitionHandler, int | None]] = []
        try:
            # the other partitions tick first: an idle input whose records the client fetched
            # meanwhile takes its infinite watermark back before this batch's watermarks go out
            # (after them, an index partition whose batch ended between the two would pass this
            # batch's place under the stale claim and release pages above those records)
            ticked = self._ticking(time.monotonic(), skip=by_partition)
            self._tick(ticked)
            for (topic, partition), batch in by_partition.items():
                handler = self.handlers[(topic, partition)]
                self.stats.replayed += handler.process(batch, self.outputs,
                                                       self.replay_until.get((topic, partition), -1))
                handler.stage_meta(offset_key(topic, partition), str(offset_of(batch[-1]) + 1).encode())
                handler.stage_meta(identity_key(topic, partition), RecordIdentity.of(batch[-1]).encode())
            after = self._ticking(time.monotonic(), only=by_partition)
            self._tick(after)
            ticked += after
            self._commit_offsets(by_partition)
        except WorkerStopped:  # a handler's (e.g. a peer with other verdict settings): nothing of it goes out
            self._abort_stopped_batch()
            raise
        except KafkaException as err:
            for handler, _ in ticked:  # what they sent may be lost: they send it again
                if handler not in [self.handlers[tp_key] for tp_key in by_partition]:
                    handler.discard()
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
                    "(or memory, as the error says) and restart the worker, it will replay those offsets into the "
                    "store without emitting them again.") from err
            if offset_of(batch[-1]) + 1 >= self.replay_until.get(tp_key, 0):
                self.replay_until.pop(tp_key, None)  # rebuilt: its handler may tick now
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
            if topic == self.settings.topics.pages:
                for message in batch:
                    kind, stamp = message.timestamp()
                    if kind and stamp > 0:
                        self.metrics.page_latency.observe(max(0.0, now - stamp / 1000))
            try:
                # the end as of the last fetch (exact once idle: _input_waiting asks the broker);
                # behind = end - the next offset to read, not - the last offset seen + 1: a
                # transaction's commit marker takes an offset that no record has
                _, high = self.consumer.get_watermark_offsets(TopicPartition(topic, partition), cached=True)
                position = self.consumer.position([TopicPartition(topic, partition)])[0].offset
                if high >= 0:
                    self._set_lag(topic, partition, high - max(position, offset_of(batch[-1]) + 1))
            except KafkaException:
                pass
            handler = self.handlers[(topic, partition)]
            self._count_work((topic, partition), handler)
            total = handler.property_total
            if handler.stateful:  # the stateful steps: RocksDB's own figures, all column families
                labels = (topic, str(partition))
                self.metrics.store_bytes.labels(*labels).set(total("rocksdb.live-sst-files-size"))
                self.metrics.store_keys.labels(*labels).set(total("rocksdb.estimate-num-keys"))

    def _count_work(self, tp_key: TP, handler: PartitionHandler) -> None:
        """The decide step's work counts (`streamdedup_decide_work`) and time by step
        (`streamdedup_store_step_seconds`) since the last batch of a handler that judges pages (the
        local topology's Detector, the global one's index partitions)."""
        for kind, added in _since_last(self._work_seen, tp_key, handler.work()):
            self.metrics.work.labels(kind).inc(added)
        for step, ns in _since_last(self._steps_seen, tp_key, handler.step_ns()):
            self.metrics.store_steps.labels(step).inc(ns / 1e9)

    # -- tick: what a handler sends without input (idle watermarks, release markers) -----------
    def _ticking(self, now: float, skip: Container[TP] = (),
                 only: Container[TP] | None = None) -> list[tuple[PartitionHandler, int | None]]:
        """The handlers that have something to send now (none while their store is rebuilt),
        with their partition's lag as last known; of the partitions in `only`, if given, and not in `skip`."""
        due = []
        for tp_key, handler in self.handlers.items():
            if tp_key in self.replay_until or tp_key in skip or (only is not None and tp_key not in only):
                continue
            lag = self._lag.get(tp_key)
            if lag == 0:  # as of its last batch or idle check: what was fetched since then counts too
                lag = max(lag, self._fetched_lag(tp_key))
            if handler.due(now, lag):
                due.append((handler, lag))
        return due

    def _fetched_lag(self, tp_key: TP) -> int:
        """Records of a partition fetched by the client past this consumer's position (0 if unknown)."""
        tp = TopicPartition(*tp_key)
        try:
            _, high = self.consumer.get_watermark_offsets(tp, cached=True)
            position = self.consumer.position([tp])[0].offset
        except KafkaException:
            return 0
        return max(0, high - position) if high >= 0 and position >= 0 else 0

    def _tick(self, due: list[tuple[PartitionHandler, int | None]]) -> None:
        now = time.monotonic()
        for handler, lag in due:
            handler.tick(self.outputs, now, lag)

    def _tick_alone(self) -> None:
        """A round without input: the ticks go out in a transaction of their own. Their records
        are idempotent (a watermark, a release marker sent twice changes nothing), so a failed
        one is simply forgotten by its handlers and sent again."""
        due = self._ticking(time.monotonic())
        if not due:
            return
        self.outputs.discard()
        try:
            if self.settings.transactions:
                self.producer.begin_transaction()
            self._tick(due)
            if self.settings.transactions:
                with self._deadline("commit_transaction", 60):
                    self.producer.commit_transaction(60)
            else:
                self.producer.flush(60)
        except KafkaException as err:
            self._recover({}, err)
            for handler, _ in due:
                handler.discard()
            return
        self.outputs.commit()

    def _offsets_to_commit(self, by_partition: dict[TP, list[Message]]) -> dict[TP, int]:
        """The group's offset of each partition after this batch: past its last message, and never
        below what the group had committed when a replay began (`replay_until`). A replay rebuilds
        the store from messages whose outputs are in Kafka already; committing its batches' own
        offsets moved the group back, and a worker killed mid-replay then found store and group
        agreeing on that earlier offset and consumed those messages again with their outputs:
        pages emitted twice (the global topology's SIGKILL test, about one run in ten)."""
        return {(topic, partition): max(offset_of(batch[-1]) + 1, self.replay_until.get((topic, partition), -1))
                for (topic, partition), batch in by_partition.items()}

    def _commit_offsets(self, by_partition: dict[TP, list[Message]]) -> None:
        offsets = [TopicPartition(topic, partition, offset)
                   for (topic, partition), offset in self._offsets_to_commit(by_partition).items()]
        if self.settings.transactions:
            with self._deadline("send_offsets_to_transaction", 30):
                self.producer.send_offsets_to_transaction(offsets, self.consumer.consumer_group_metadata(), 30)
            with self._deadline("commit_transaction", 60):
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
                with self._deadline("commit_transaction", 60):
                    self.producer.commit_transaction(60)
                return True
            except KafkaException as again:
                err, error = again, again.args[0] if again.args else None
                if isinstance(error, KafkaError) and error.code() in FENCED:
                    raise fenced(self.settings, error) from again
                fatal = bool(error is not None and error.fatal())
        if not fatal:
            try:
                with self._deadline("abort_transaction", 30):
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

    def _abort_stopped_batch(self) -> None:
        """Abort the transaction of a batch a handler stopped the worker in, at once: left open, it
        would hold back what every other worker reads of the partitions it wrote to (read
        committed) until the broker times it out (`transaction.timeout.ms`, a minute)."""
        if not self.settings.transactions:
            return
        try:
            with self._deadline("abort_transaction", 30):
                self.producer.abort_transaction(30)
        except KafkaException as err:  # the broker is away: the successor (or the timeout) aborts it
            log.warning("aborting the stopped batch's transaction failed (%s)", err)

    def _committed(self, by_partition: dict[TP, list[Message]]) -> bool:
        wanted = self._offsets_to_commit(by_partition)
        found = self.consumer.committed([TopicPartition(t, p) for t, p in wanted], timeout=30)
        return all(tp.offset == wanted[(tp.topic, tp.partition)] for tp in found)

    def _rewind(self, by_partition: dict[TP, list[Message]]) -> None:
        self.stats.aborted += 1
        self.outputs.discard()
        for (topic, partition), batch in by_partition.items():
            self.handlers[(topic, partition)].discard()
            self.consumer.seek(TopicPartition(topic, partition, offset_of(batch[0])))

    def close(self, close_producer: bool = False) -> None:
        """Close the stores and the consumer; and the producer if `close_producer` (no transaction
        is open: the loop ended between batches)."""
        for tp_key, handler in self.handlers.items():
            try:
                handler.close()
            except Exception:  # noqa: BLE001 - e.g. a full disk on the final flush: the WAL has the data
                log.exception("closing the store of %s[%d] failed", *tp_key)
        self.handlers.clear()
        self._closing = True
        if self._ends_client is not None:
            self._ends_client.close()
            self._ends_client = None
        try:
            self.consumer.close()
        except RuntimeError:  # closed already
            pass
        except KafkaException as error:  # leaving the group failed: the group times the member out, and
            # what it did not commit is read again (offsets commit with their outputs' transaction)
            log.warning("closing the consumer failed (%s); the group will time the member out", error)
        finally:
            self.producer.flush(10)
            # closed, not left to the garbage collector, after a clean stop: a producer alive after
            # the run keeps its connections (a transactional one, to its coordinator) and librdkafka
            # reports them lost when the broker goes (the demo stops its own). Not after a failure
            # mid-batch: close() aborts an open transaction first, and with the broker away that
            # wait has no end (measured: > 200 s); the transaction is the successor's to abort.
            # (An older confluent-kafka without close() frees the producer with the object.)
            close = getattr(self.producer, "close", None)
            if close_producer and close is not None:
                with self._deadline("close", 30):
                    close()
            if self.watchdog is not None:
                self.watchdog.close()


__all__ = ["Worker", "WorkerFenced", "WorkerSettings", "WorkerStats", "WorkerStopped", "cluster_events", "mask"]
