"""The worker's batches, each in one Kafka transaction.

This module holds the producer, a batch's outputs and input offsets, the ticks sent without input, and recovery
from a failed transaction."""

from __future__ import annotations

import logging
import os
import time
import uuid
from collections import defaultdict
from collections.abc import Container
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Message, Producer, TopicPartition

from streamdedup.outputs.record_size import DEFAULT_BATCH_BYTES, RecordLimits
from streamdedup.runtime import topic_limits, topics
from streamdedup.runtime.errors import WorkerStopped
from streamdedup.runtime.topic_reset import RecordIdentity, identity_key, stage_read_journal
from streamdedup.runtime.topologies import PartitionHandler
from streamdedup.runtime.topologies.base import offset_of, partition_of, topic_of
from streamdedup.runtime.worker.errors import FENCED, StoreWriteFailed, fenced, lost_writes
from streamdedup.runtime.worker.reporting import Reporting
from streamdedup.runtime.worker.state import GROUP_KEY, TP, offset_key

log = logging.getLogger(__name__)
# the producer's batch.size once a refusal showed a topic's limit unknown (`_read_limits_again`)
REFUSED_BATCH_BYTES = 64 << 10


class Transactions(Reporting):
    """A batch consumed, decided and produced exactly once (at least once without transactions)."""

    # after a refusal the limits did not foresee: the producer's batch.size, so that records that each
    # fit are not refused together in one batch (None: no such refusal yet)
    _batch_after_refusal: int | None = None

    # -- the producer -------------------------------------------------------------------------
    def _read_limits_again(self, refused: list[tuple[str, bytes | None, int]]) -> None:
        """The written topics' limits read again after a refusal, for the outputs' checks and the next producer.

        Where a refused topic's limit is still unknown, the next producers send small batches
        (`REFUSED_BATCH_BYTES`): a record over batch.size goes in a batch of its own, so the broker
        refuses only a record over its limit, never one that fits beside others (a 935 KB page that
        compresses to 4 % under the limit was refused with two small ones)."""
        try:
            self.limits = self.outputs.limits = self._read_limits()
        except KafkaException as err:
            log.warning("the topics' record limits could not be read again (%s): the ones read before stand", err)
        if any(topic not in self.limits.topic_bytes for topic, _, _ in refused):
            self._batch_after_refusal = REFUSED_BATCH_BYTES

    def _read_limits(self) -> RecordLimits:
        """The largest record each written topic takes, and how the worker's producers compress."""
        return topic_limits.read_limits(self.settings, self.settings.client(**self._producer_settings()))

    def _producer_settings(self) -> dict[str, Any]:
        """The settings of every producer of the worker, but `batch.size` (within the topics' limits)."""
        return {"enable.idempotence": True, "linger.ms": 5, **topics.producer_settings()}

    def _new_producer(self) -> Producer:
        """An idempotent producer; with transactions, under a fresh transactional id.

        The previous id of this worker (kept in the state directory) is initialised first, which
        aborts a transaction its killed process left open and fences it off. The new id gets a new
        producer id, so no producer ever writes after one of its own aborted transactions: some
        brokers (noida-db 0.2.3) then hide all its later records from `read_committed` consumers
        that start mid-partition. Offsets are fenced by the consumer group (KIP-447), so a
        per-start transactional id loses no safety."""
        # a batch of records that fit fits its topic; a user's smaller batch.size stands
        batch = min(self.limits.batch_bytes(), int(self.settings.kafka.get("batch.size", DEFAULT_BATCH_BYTES)),
                    self._batch_after_refusal or DEFAULT_BATCH_BYTES)
        base = {**self._producer_settings(), "batch.size": batch}
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

    # -- a batch -----------------------------------------------------------------------------
    def process(self, messages: list[Message]) -> None:
        """One batch: its partitions' outputs and input offsets in one transaction, then their stores."""
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
                stage_read_journal(handler.get_meta, handler.stage_meta, topic, partition, batch)
                handler.stage_meta(GROUP_KEY, self.settings.group_id.encode())
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

    # -- tick: what a handler sends without input (idle watermarks, release markers) -----------
    def _ticking(self, now: float, skip: Container[TP] = (),
                 only: Container[TP] | None = None) -> list[tuple[PartitionHandler, int | None]]:
        """The handlers with something to send now, and their partitions' lag.

        The handlers that have something to send now (none while their store is rebuilt), with their partition's lag as
        last known; of the partitions in `only`, if given, and not in `skip`."""
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

    def _tick(self, due: list[tuple[PartitionHandler, int | None]]) -> None:
        now = time.monotonic()
        for handler, lag in due:
            handler.tick(self.outputs, now, lag)

    def _tick_alone(self) -> None:
        """A round without input: the ticks go out in a transaction of their own.

        Their records are idempotent (a watermark, a release marker sent twice changes nothing), so a failed one is
        simply forgotten by its handlers and sent again."""
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

    # -- the commit, and a failed one -----------------------------------------------------------
    def _offsets_to_commit(self, by_partition: dict[TP, list[Message]]) -> dict[TP, int]:
        """The group's offsets after this batch, never below where a replay began.

        The group's offset of each partition after this batch: past its last message, and never below what the group had
        committed when a replay began (`replay_until`). A replay rebuilds the store from messages whose outputs are in
        Kafka already; committing its batches' own offsets moved the group back, and a worker killed mid-replay then
        found store and group agreeing on that earlier offset and consumed those messages again with their outputs:
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
        """Whether a failed transaction committed after all.

        After a failed transaction: True if it committed after all (its outputs and offsets are in Kafka: write the
        stores and go on), False if the batch must be consumed again.

        A commit whose answer was lost (the broker went away just after committing) must not be redone, or its outputs
        would appear twice; the group's committed offsets, which are part of the transaction, tell which way it went."""
        error = err.args[0] if err.args else None
        if isinstance(error, KafkaError) and error.code() in FENCED:
            raise fenced(self.settings, error) from err
        if isinstance(error, KafkaError) and error.code() == KafkaError.OUT_OF_ORDER_SEQUENCE_NUMBER:
            log.error(lost_writes(error))
        # the delivery reports of the failed records, before they are learnt; bounded, as a client that
        # kept serving events (its log lines) would hold the worker here
        served_until = time.monotonic() + 5.0
        while self.producer.poll(0) and time.monotonic() < served_until:
            pass
        refused = self.outputs.learn_refusals()  # sent as too_large_for_broker stubs on the retry
        if refused:  # a limit not foreseen (lowered since the start, or not described then): read again
            self._read_limits_again(refused)
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
        if not by_partition:  # a round without input: its watermarks and release markers are sent again
            log.warning("a transaction without input failed (%s); its watermarks and markers are sent again", err)
            self._rewind(by_partition)
            return False
        if self._committed(by_partition):
            log.warning("transaction reported %s, but its offsets are committed: it went through", err)
            return True
        if not refused:
            log.warning("transaction failed (%s); the batch will be consumed again", err)
        self._rewind(by_partition)
        return False

    def _abort_stopped_batch(self) -> None:
        """Abort at once the transaction of a batch a handler stopped the worker in.

        Abort the transaction of a batch a handler stopped the worker in, at once: left open, it would hold back what
        every other worker reads of the partitions it wrote to (read committed) until the broker times it out
        (`transaction.timeout.ms`, a minute)."""
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
