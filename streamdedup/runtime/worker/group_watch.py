"""Partitions of the worker's group that no member moves while records wait, named in a WARNING and a gauge.

A worker's own health says nothing of its group. A static member that left (a fleet scaled down) keeps its
partitions until the broker ends its session: Apache Kafka does after `session.timeout.ms` (KIP-345), noida-db and
Tansu never did in 90 s (`bench/static_shrink.py`). A stopped process (SIGSTOP, a frozen VM) keeps them too. Their
records wait while every live worker reports healthy. So every `stall_timeout_s / 4` a worker reads its group's
committed offsets and the ends of the partitions it does not own; a partition whose committed offset has not moved
for `stall_timeout_s` while records wait is stalled. One WARNING line names it, its owner and the fix, and
`streamdedup_group_stalled_partitions` counts them (0 again once it moves). A worker rebuilding its store (a
replay longer than `stall_timeout_s`) commits no offset meanwhile, and is named too. A check is three requests
(the topics, the group's offsets, the ends: one a broker), on the worker's loop.

Records wait: the end is more than one past the committed offset (a transaction's commit marker takes an offset
no record has), or the end grew while the committed offset stood still.

A transaction the broker holds open stops every read_committed reader at its first record, silently: their lag,
measured to the last stable offset, is 0. noida-db kept one open on the parts topic after a restart (the worker that
began it had exited and come back); 3 pages waited for their verdicts for 20 minutes and more while both workers
reported healthy and idle. So the same check asks every partition's last stable offset and its high watermark; one
whose last stable offset stood below the high watermark for `stall_timeout_s` is named in one WARNING line.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass

from confluent_kafka import Consumer, IsolationLevel, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from streamdedup.runtime.settings import WorkerSettings

log = logging.getLogger(__name__)

TP = tuple[str, int]


@dataclass
class Standing:
    """A partition's committed offset and end when its committed offset was last seen to move."""

    committed: int
    end: int
    since: float
    warned: bool = False


class GroupWatch:
    """The group's partitions that stand still with records waiting (see the module's docstring)."""

    def __init__(self, settings: WorkerSettings) -> None:
        self.settings = settings
        self.checked_at = float("-inf")
        self.standing: dict[TP, Standing] = {}
        self.stalled: list[TP] = []
        self.admin: AdminClient | None = None  # made at the first check
        self.held: dict[TP, Standing] = {}  # partitions whose last stable offset stands below the high watermark

    def due(self, now: float) -> bool:
        """Whether it is time to check the group for stalled partitions again."""
        return self.settings.stall_timeout_s > 0 and now - self.checked_at >= self.settings.stall_timeout_s / 4

    def check(self, consumer: Consumer, topics: Iterable[str], own: Iterable[TP], now: float) -> list[TP]:
        """The partitions stalled as of `now` (the last answer if not due, or if the broker did not answer)."""
        if not self.due(now):
            return self.stalled
        self.checked_at = now
        mine = set(own)
        try:
            metadata = consumer.list_topics(timeout=5)
            partitions = [TopicPartition(topic, p) for topic in topics if topic in metadata.topics
                          for p in sorted(metadata.topics[topic].partitions)]
            committed = consumer.committed([tp for tp in partitions if (tp.topic, tp.partition) not in mine],
                                           timeout=5)
            asked = self._admin().list_offsets({TopicPartition(tp.topic, tp.partition): OffsetSpec.latest()
                                                for tp in committed}, request_timeout=5)  # one request a broker
            ends = {(tp.topic, tp.partition): (0, int(future.result(timeout=5).offset)) for tp, future in asked.items()}
        except Exception as err:  # noqa: BLE001 - KafkaException, or a future's: the next check asks again
            log.debug("group check skipped: %s", err)
            return self.stalled
        self.check_held(partitions, now)
        stalled: list[TP] = []
        for tp in committed:
            key = (tp.topic, tp.partition)
            low, end = ends[key]
            offset = tp.offset if tp.offset >= 0 else low
            was = self.standing.get(key)
            if was is None or was.committed != offset:
                self.standing[key] = Standing(offset, end, now)
                continue
            waiting = end > offset + 1 or end > was.end
            if waiting and now - was.since >= self.settings.stall_timeout_s:
                stalled.append(key)
        for key in list(self.standing):
            if key in mine or key not in {(tp.topic, tp.partition) for tp in committed}:
                del self.standing[key]
        fresh = [key for key in stalled if not self.standing[key].warned]
        if fresh:
            self._warn(fresh, now)
        self.stalled = stalled
        return stalled

    def check_held(self, partitions: list[TopicPartition], now: float) -> list[TP]:
        """The partitions whose last stable offset stood below the high watermark for `stall_timeout_s`.

        Each named once in a WARNING (the module's docstring); asked of the broker at the group check's pace."""
        try:
            ends: dict[IsolationLevel, dict[TP, int]] = {}
            for level in (IsolationLevel.READ_COMMITTED, IsolationLevel.READ_UNCOMMITTED):
                asked = self._admin().list_offsets({TopicPartition(tp.topic, tp.partition): OffsetSpec.latest()
                                                    for tp in partitions}, isolation_level=level, request_timeout=5)
                ends[level] = {(tp.topic, tp.partition): int(f.result(timeout=5).offset) for tp, f in asked.items()}
        except Exception as err:  # noqa: BLE001 - KafkaException, or a future's: the next check asks again
            log.debug("open transaction check skipped: %s", err)
            return [key for key, was in self.held.items() if was.warned]
        held: list[TP] = []
        for key, stable in ends[IsolationLevel.READ_COMMITTED].items():
            high = ends[IsolationLevel.READ_UNCOMMITTED].get(key, stable)
            was = self.held.get(key)
            if stable >= high:
                self.held.pop(key, None)
            elif was is None or was.committed != stable:
                self.held[key] = Standing(stable, high, now)
            elif now - was.since >= self.settings.stall_timeout_s:
                held.append(key)
                if not was.warned:
                    was.warned = True
                    log.warning("%s[%d]: a transaction has held its records from offset %d on unreadable for %.0f s "
                                "or more (%d records): the pages that need them wait for their verdicts, and "
                                "read_committed lags read 0. The broker keeps it open (Apache Kafka aborts one after "
                                "transaction.timeout.ms; noida-db kept one after a restart): run Apache Kafka",
                                key[0], key[1], stable, now - was.since, high - stable)
        return held

    def _admin(self) -> AdminClient:
        if self.admin is None:
            self.admin = AdminClient(self.settings.client())
        return self.admin

    def _warn(self, stalled: list[TP], now: float) -> None:
        owners = self._owners()
        for key in stalled:
            self.standing[key].warned = True
        named = ", ".join(f"{topic}[{partition}] ({owners.get((topic, partition), 'no member')}, "
                          f"{self.standing[(topic, partition)].end - self.standing[(topic, partition)].committed} "
                          "records waiting)" for topic, partition in stalled)
        log.warning("group %r: %s stood still for %.0f s or more: its owner is stopped, gone, or rebuilding its "
                    "store (a replay commits no offset until it ends). A static member "
                    "that left keeps its partitions until the broker ends its session (Apache Kafka: after "
                    "session.timeout.ms; noida-db and Tansu: never): start a worker with that worker id again, or "
                    "run the group without static membership (STREAMDEDUP_STATIC_MEMBERSHIP=0); a stopped "
                    "process: resume or kill it", self.settings.group_id, named, self.settings.stall_timeout_s)

    def _owners(self) -> dict[TP, str]:
        """Each assigned partition's owner as the group describes it: its instance id, else its member id."""
        try:
            [described] = self._admin().describe_consumer_groups([self.settings.group_id], request_timeout=5).values()
            members = described.result(timeout=5).members
        except Exception as err:  # noqa: BLE001 - the warning goes out without the owners
            log.debug("describing group %s failed: %s", self.settings.group_id, err)
            return {}
        return {(tp.topic, tp.partition): f"member {member.group_instance_id or member.member_id}"
                for member in members for tp in (member.assignment.topic_partitions if member.assignment else [])}


__all__ = ["GroupWatch"]
