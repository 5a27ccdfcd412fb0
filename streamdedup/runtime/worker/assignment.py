"""The worker's partitions on (re)assignment and revocation.

The worker's partitions on (re)assignment: the store's offset against the group's (ahead: refuse; behind: replay without
producing), a topic that started over (runtime/topic_reset.py), and revocation."""

from __future__ import annotations

import logging
import time
from collections import defaultdict

from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

from streamdedup.runtime.topic_reset import (
    Finding,
    ReadJournal,
    RecordIdentity,
    check_partitions,
    identity_key,
    judged_prefix,
)
from streamdedup.runtime.worker.errors import StoreAheadOfKafka, StoreOfAnotherGroup, TopicStartedOver
from streamdedup.runtime.worker.state import GROUP_KEY, TP, Progress, WorkerState, offset_key

log = logging.getLogger(__name__)


class Assignment(WorkerState):
    """The consumer's rebalance callbacks: which offset each assigned partition starts from."""

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
            if tp_key in started_over:  # judged again: the store keeps what it knows of earlier pages
                finding, first = started_over[tp_key]
                if kafka is not None and kafka != stored and kafka < first:
                    # the group's commit on this log is below: a broker that lost the tail may have lost
                    # the outputs of records it kept too (written after them); judged again, not lost
                    log.warning("%s[%d]: the group committed offset %d, below %d: judging from %d (records "
                                "between may come out twice; none is lost)", *tp_key, kafka, first, kafka)
                    first = kafka
                self._start_over(tp_key, stored, kafka, finding.end, first)
                tp.offset = first if first > 0 else OFFSET_BEGINNING
                continue
            written_for = handler.get_meta(GROUP_KEY)
            if stored is not None and written_for is not None and written_for.decode() != self.settings.group_id:
                raise StoreOfAnotherGroup(
                    f"the store {self.settings.state_dir / f'{tp.topic}-{tp.partition}'} has read {tp.topic}"
                    f"[{tp.partition}] up to offset {stored} for group {written_for.decode()!r}, so group "
                    f"{self.settings.group_id!r} would skip those records: give this group a state directory of its "
                    f"own (--state-dir), or run it as group {written_for.decode()!r}")
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

    def _start_over(self, tp_key: TP, stored: int | None, kafka: int | None, end: int, first: int) -> None:
        """A partition that started over is read from the first record its store did not read (`judged_prefix`).

        If the group has committed an offset of the new topic past it (another worker judged it up to there since),
        that range is replayed into the store without producing. An offset equal to the store's is its own last commit
        of the old topic, which some brokers (noida-db) keep when a topic is created again."""
        if kafka is not None and kafka != stored and first < kafka and (end < 0 or kafka <= end):
            self.replay_until[tp_key] = kafka
            log.warning("%s[%d]: the group has committed offset %d of the new topic: replaying %d..%d into the "
                        "store without producing", *tp_key, kafka, first, kafka)
        else:
            self.replay_until.pop(tp_key, None)

    def _started_over(self, partitions: list[TopicPartition]) -> dict[TP, tuple[Finding, int]]:
        """The assigned partitions whose stores read a topic that has since started over, with where to judge from.

        They are to be judged again from the first record their stores did not read (`on_topic_reset = restart`,
        `judged_prefix`); with `refuse`, the worker stops at the first (runtime/topic_reset.py). Partitions whose stores
        read nothing are not asked."""
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
                    "its records again, keeping what the store knows of earlier pages, restart with "
                    "--on-topic-reset restart (STREAMDEDUP_ON_TOPIC_RESET=restart); to forget them, delete "
                    f"{store}")
            started_over[(topic, partition)] = finding
        journals = {tp_key: ReadJournal.read(self.handlers[tp_key].get_meta, *tp_key, expected[tp_key][0])
                    for tp_key in started_over}
        firsts = judged_prefix(self.settings.client(), journals)
        for (topic, partition), finding in started_over.items():
            first = firsts[(topic, partition)]
            store = self.settings.state_dir / f"{topic}-{partition}"
            where = (f"offsets 0..{first - 1} are the records its store read (their outcomes are out): judging it from "
                     f"offset {first}" if first > 0 else "judging it from its beginning")
            log.warning("%s[%d] started over (%s): %s; the store %s keeps what it knows of earlier pages "
                        "(on_topic_reset = restart)", topic, partition, finding.detail, where, store)
        return {tp_key: (finding, firsts[tp_key]) for tp_key, finding in started_over.items()}

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self._revoked.update((tp.topic, tp.partition) for tp in partitions)
        for tp in partitions:
            handler = self.handlers.pop((tp.topic, tp.partition), None)
            if handler is not None:
                handler.close()
            self.replay_until.pop((tp.topic, tp.partition), None)
            self._start_offsets.pop((tp.topic, tp.partition), None)
            self._work_seen.pop((tp.topic, tp.partition), None)  # a handler opened again counts from 0
            self._steps_seen.pop((tp.topic, tp.partition), None)
            self._extraction_seen.pop((tp.topic, tp.partition), None)
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
