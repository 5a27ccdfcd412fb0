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
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Message

from streamdedup.config import DetectorConfig
from streamdedup.outputs.kafka import Outputs, WorkerStats
from streamdedup.runtime import topics
from streamdedup.runtime.errors import WorkerStopped
from streamdedup.runtime.group_settings import agree_on_settings
from streamdedup.runtime.metrics import WorkerMetrics
from streamdedup.runtime.settings import WorkerSettings, keep_worker_id
from streamdedup.runtime.topologies import make_topology
from streamdedup.runtime.topologies.base import partition_of, topic_of
from streamdedup.runtime.watchdog import CallWatchdog
from streamdedup.runtime.worker.assignment import Assignment
from streamdedup.runtime.worker.errors import FENCED, StateLost, fenced
from streamdedup.runtime.worker.group_watch import GroupWatch
from streamdedup.runtime.worker.state import Progress
from streamdedup.runtime.worker.state_lock import lock_state_dir
from streamdedup.runtime.worker.transactions import Transactions

log = logging.getLogger(__name__)
# how often the group consumer asks the topics' metadata, and so how soon a partition added to one it reads is
# assigned (librdkafka's default: 5 minutes; the Faust app's METADATA_MAX_AGE_S): one small request a period
METADATA_REFRESH_MS = 10_000


class Worker(Transactions, Assignment):
    """The Kafka worker: its loop of batches, the idle pause, its signals and its close.

    Its parts: runtime/worker/assignment.py (offsets on (re)assignment), transactions.py (a batch,
    the ticks), reporting.py (health, progress, metrics), lag.py (end offsets), errors.py (stops)."""

    def __init__(self, settings: WorkerSettings, config: DetectorConfig, watchdog: CallWatchdog | None = None) -> None:
        self.settings = settings
        # before any client: a second worker on this state directory stops here, alone (state_lock.py)
        self._state_lock: int | None = lock_state_dir(settings.state_dir)
        keep_worker_id(settings)  # a default id stays this directory's at every restart
        self.config = config
        # a deadline on the client's blocking transactional calls (runtime/watchdog.py): the command
        # line's worker exits when one outlives its timeout; without one (in process), it waits
        self.watchdog = watchdog
        self.stats = WorkerStats()
        self.metrics = WorkerMetrics()
        self.handlers = {}
        self.replay_until = {}
        self._work_seen = {}  # each handler's work counts at its last batch
        self._steps_seen = {}  # and its nanoseconds by step
        self._extraction_seen = {}  # and how its pages were read
        self._stop = threading.Event()
        self.stopped_by: str | None = None  # the signal (SIGTERM, SIGINT) that stopped the loop, if one did
        self._closing = False  # the consumer is closing: an assignment it still delivers is not taken
        self._last_activity = None  # set on assignment and on every batch
        self._loop_at = time.monotonic()  # the loop's last round, for /healthz
        self._running = False
        self._paused = False  # caught up: fetching paused, end offsets polled (see _idle)
        self._taken_over = False  # partitions were assigned in the last poll: they tick before any record
        self._revoked = set()  # partitions revoked in the last poll of a batch being gathered (_consume)
        self._stores_checked_at = 0.0  # when the stores' folders were last found in place (_check_stores)
        self._failure = None  # why the loop stopped, if it failed (/healthz)
        self._start_offsets = {}  # where each assigned partition was started
        self._lag = {}
        self._progress = Progress(time.monotonic(), 0, 0)
        self.group_watch = GroupWatch(settings)  # the group's partitions that no member moves
        self.metrics.health = self.health
        self.metrics.readiness = self.readiness
        log.info("worker starting: %r", settings)
        for risk in settings.risks():
            log.warning(risk)
        self._input_ends = {}  # input partition -> (asked at, end offset)
        self._ends_client = None  # asks end offsets while the group consumer fetches
        self.topology = make_topology(settings, config, topics.ensure_topics(settings), self._input_end)
        consumer_settings: dict[str, Any] = {
            "group.id": settings.group_id, "enable.auto.commit": False, "auto.offset.reset": "earliest",
            "isolation.level": "read_committed", "enable.partition.eof": False,
            **topics.consumer_settings(), "session.timeout.ms": 10_000,
            "max.poll.interval.ms": round(settings.max_poll_interval_s * 1000),
            "partition.assignment.strategy": settings.assignment_strategy,
            # a partition added to a topic is assigned at the next metadata refresh: 10 s, not librdkafka's 5 minutes
            "topic.metadata.refresh.interval.ms": METADATA_REFRESH_MS}
        if settings.static_membership:
            # KIP-345: a restarted worker takes its partitions (and local stores) back at once
            consumer_settings["group.instance.id"] = f"streamdedup-{settings.worker_id}"
        self.consumer = Consumer(settings.client(**consumer_settings))
        # the largest record each written topic takes: an output over it goes out as its stub at once
        self.limits = self._read_limits()
        self.producer = self._new_producer()
        self.outputs = Outputs(self.producer, settings.topics, self.metrics, self.stats, self.limits)

    # -- the loop -----------------------------------------------------------------------------
    def stop(self) -> None:
        """Ask the worker to stop after the batch in hand (safe from a signal handler or another thread)."""
        self._stop.set()

    def run(self, idle_timeout_s: float | None = None, assignment_timeout_s: float = 120.0,
            stop_after: int | None = None) -> WorkerStats:
        """Run until stopped, until `stop_after` pages got their outcome, or until idle.

        Run until `stop()` (SIGTERM and SIGINT call it when run in the main thread), until `stop_after` pages got their
        outcome, or until nothing arrived for `idle_timeout_s` after the group gave this worker its partitions (tests,
        demo). A killed predecessor keeps its partitions until its session times out, so idleness only counts from the
        assignment."""
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
                    if self.group_watch.due(now):
                        stalled = self.group_watch.check(self.consumer, self.topology.topics(), self.handlers, now)
                        self.metrics.group_stalled.set(len(stalled))
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
        """Stop the worker (`StateLost`) if an open store's folder is gone.

        At most every second: each open store's folder still has its CURRENT file. RocksDB goes on writing into the
        files of a folder deleted under it (they live until closed), so a worker whose state directory was deleted ran
        on, healthy, and exited 0 (issue 56)."""
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
        """Up to `batch_size` messages, without waiting for a whole batch.

        Up to `batch_size` messages: waits up to `timeout` for the first, then takes what the client has fetched
        already, as Kafka's poll does. librdkafka's batch consume waits for a whole batch or the timeout: unless
        `batch_size` messages were waiting, every batch waited out `batch_timeout_s`, at each of the global topology's
        three hops. No more once the batch holds `batch_bytes` (it is held in memory whole), so after the first, one at
        a time."""
        settings = self.settings
        messages = self.consumer.consume(1, timeout)
        held = sum(len(m.value() or b"") for m in messages)
        # one at a time: a message's size is known only once taken (1.4-1.8 us of CPU a message
        # against 0.3-0.5 taking 255 a call, noida-db, 30,000 messages; a page takes milliseconds)
        while messages and len(messages) < settings.batch_size and held < settings.batch_bytes:
            self._revoked.clear()
            more = self.consumer.consume(1, 0)
            if self._revoked:  # a rebalance in this poll: what was taken of those partitions is not ours
                messages = self._not_revoked(messages)
            if not more:
                break
            messages += more
            held += len(more[0].value() or b"")
        return [m for m in messages if not self._is_error(m)]

    def _not_revoked(self, messages: list[Message]) -> list[Message]:
        """The messages of a batch being gathered whose partitions were not revoked since they were taken.

        Their new owner reads them again from the group's offset; so does this worker if the partition comes back in
        the same batch's polls. Kept, they met no handler (a KeyError that stopped the loop) or were judged twice."""
        revoked = self._revoked
        kept = [m for m in messages if m.error() is not None or (topic_of(m), partition_of(m)) not in revoked]
        if len(kept) < len(messages):
            log.info("a rebalance revoked %d partitions while a batch was gathered: %d of its messages left to their "
                     "new owner", len(revoked), len(messages) - len(kept))
        return kept

    def _handle_signals(self) -> dict[int, Any]:
        """Make SIGTERM and SIGINT stop the worker after the batch in hand.

        SIGTERM (docker stop, systemd, Kubernetes) and SIGINT finish the batch in hand, close the stores and the
        clients, and return; only the main thread may set handlers."""
        if threading.current_thread() is not threading.main_thread():
            return {}
        previous: dict[int, Any] = {}
        for sig in (signal.SIGTERM, signal.SIGINT):
            previous[sig] = signal.signal(sig, self._on_signal)
        return previous

    def _on_signal(self, signum: int, _: Any) -> None:
        self.stopped_by = signal.Signals(signum).name
        log.info("%s: stopping after the current batch", self.stopped_by)
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

    def close(self, close_producer: bool = False) -> None:
        """Close the stores, the consumer and, if asked, the producer.

        Close the stores and the consumer; and the producer if `close_producer` (no transaction is open: the loop ended
        between batches)."""
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
            if self._state_lock is not None:  # the state directory is free for the next worker
                os.close(self._state_lock)
                self._state_lock = None
            if self.watchdog is not None:
                self.watchdog.close()
