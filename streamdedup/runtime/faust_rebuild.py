"""The Faust app's partition store rebuilt from its input topic, as the worker rebuilds its own.

A store behind the group's position (its state folder lost, or the partition judged on another app
instance since) does not know the pages judged in between, and copies of them would come out
`unique`. The worker replays that range into its store without producing (`worker/assignment.py`,
`replay_until`); the app does the same before it judges the first record of a partition after an
assignment: the records from the store's next offset (after its newest journal entry; the
partition's start for a store without one) up to that record are read with a plain consumer, as
Faust's consumer reads them (uncommitted records included), and decided in order by the local
topology's step (`topologies.local.decide`), each journaled as a judged record is
(`JournalKeeper.replay`), nothing sent: their outputs are in Kafka. The verdicts that follow are
those of a run that lost nothing, except for pages whose records the topic no longer holds
(retention), which the rebuild says: those gone before it starts in its first line, those deleted while
it reads (its offsets jump past them, `read_range`) in one WARNING at its end, with their offsets and the
fix. A jump of the offsets is told apart from transaction markers and compacted records, which leave
gaps too, by the partition's start (low watermark): only offsets below it were deleted.

A rebuild runs in a thread; meanwhile the partition's records wait and the app judges its other
partitions (`faust_waiting`). The app keeps its partitions however long it takes: aiokafka leaves the
group once its consumer has fetched nothing for `broker_max_poll_interval` (faust-streaming#138: the app
then hangs), and Faust fetches nothing while the agent's buffer is full, so every batch the rebuild reads
counts as a fetch of the app's consumer (`on_progress`, `faust_app.poll_clock_restarter`). A rebuild that
reads nothing stops the app after `STALL_S` instead, and so does one whose records are gone (`RebuildCutOff`:
the topic deleted or created again under it). A cut-short rebuild goes on from its last record.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, NoReturn, Protocol

from streamdedup.runtime.retention import deleted_by_retention
from streamdedup.runtime.settings import WorkerSettings
from streamdedup.runtime.topics import consumer_settings

log = logging.getLogger(__name__)

STALL_S = 60.0  # a rebuild that reads nothing for this long stops the app (the agent's one CRITICAL line)
PROGRESS_S = 60.0  # how often a rebuild says how far it is (a long one holds its partition's records for minutes)


class Replaying(Protocol):
    """What a rebuild asks of a partition's journal keeper (`faust_app.JournalKeeper`)."""

    topic: str
    partition: int

    def next_offset(self) -> int | None:
        """The next offset of the partition the keeper's store has not read (None: it has read none)."""
        ...

    def replay(self, messages: list[Any], until: int) -> None:
        """Decide these records (below `until`) into the store and journal, emitting nothing: their outputs are out."""
        ...


class RebuildStalled(RuntimeError):
    """The records to rebuild a store from could not be read: one line, the fix named."""


class RebuildCutOff(RuntimeError):
    """The partition no longer holds the records to rebuild from (its topic created again): one line, the fix named."""


class RebuildStopped(Exception):
    """The app stops or its partition is revoked: the rebuild ended after its batch; the next goes on from there."""


@dataclass(frozen=True)
class Rebuilt:
    """What a rebuild read: offsets `first` up to (not including) `until`, `records` of them, in `seconds`.

    `lost`: offsets of the range that retention deleted while it was read (not replayed)."""

    first: int
    until: int
    records: int
    seconds: float
    lost: int = 0


def spans(ranges: list[tuple[int, int]], most: int = 5) -> str:
    """Offset ranges (first, until) as "a..b, c..d", the first `most` of them, then how many more."""
    said = ", ".join(f"{a}..{b - 1}" if b - a > 1 else str(a) for a, b in ranges[:most])
    return said + (f" and {len(ranges) - most} more ranges" if len(ranges) > most else "")


class PartitionRebuild:
    """One partition's store rebuild as it reads: its range, what it replayed, when it last said so, what was lost.

    `rebuild` drives it batch by batch; each of its WARNING lines is said here, from the state it carries."""

    def __init__(self, keeper: Replaying, start: int | None, until: int, progress_s: float) -> None:
        self.keeper, self.start, self.until, self.progress_s = keeper, start, until, progress_s
        self.topic, self.partition = keeper.topic, keeper.partition
        self.started = self.said = time.monotonic()
        self.first = self.records = 0
        self.lost: list[tuple[int, int]] = []  # offset ranges retention deleted while they were read

    def begins(self, low: int, new_store: bool) -> bool:
        """Where the read starts, given the partition's start `low`, said in one WARNING; False: nothing to read."""
        start = self.start or 0
        self.first = first = max(start, low)
        what = ("is new" if new_store else "holds none of it" if self.start is None
                else f"has read it up to offset {start}")
        gone = deleted_by_retention(start, self.until, low)  # the store's missing records the topic no longer holds
        lost = (f"; up to {gone[1] - gone[0]} records were deleted by retention before it started (offsets "
                f"{spans([gone])}): the pages judged from them are not rebuilt, and copies of them come out "
                "unique") if gone else ""
        if first >= self.until:
            log.warning("%s partition %d: its store %s, but the app starts at offset %d%s", self.topic, self.partition,
                        what, self.until, lost)
            return False
        log.warning("%s partition %d: its store %s, but the app starts at offset %d (its state folder was lost, "
                    "or the partition was judged on another instance since): rebuilding it from offsets %d..%d "
                    "without producing (up to %d records; the partition's records wait meanwhile, the app judges its "
                    "other partitions and keeps them all)%s",
                    self.topic, self.partition, what, self.until, first, self.until - 1, self.until - first, lost)
        self.said = time.monotonic()
        return True

    def lose(self, first: int, until: int) -> None:
        """Offsets `first` up to `until` were deleted by retention while the rebuild read past them."""
        self.lost.append((first, until))

    def replay(self, messages: list[Any]) -> None:
        """A batch read, into the store (nothing sent)."""
        self.keeper.replay(messages, self.until)
        self.records += len(messages)

    def stop(self, why: str, last: int) -> NoReturn:
        """The rebuild ends after its batch (whose last offset is `last`): `RebuildStopped`."""
        log.warning("%s partition %d: the rebuild of its store stops %s at offset %d (%d of up to %d records read); "
                    "the next start goes on from there", self.topic, self.partition, why, last, self.records,
                    self.until - self.first)
        raise RebuildStopped(f"{self.topic}[{self.partition}] at offset {last}")

    def say_progress(self, last: int) -> None:
        """Every `progress_s`, a WARNING: the records read (up to offset `last`), of how many, how long is left."""
        first, until = self.first, self.until
        if time.monotonic() - self.said < self.progress_s or (read := last + 1 - first) >= until - first:
            return
        self.said = time.monotonic()
        rate = read / max(self.said - self.started, 1e-3)
        log.warning("%s partition %d: rebuilding its store, offset %d of %d..%d: %d of up to %d records read "
                    "in %.0f s (%.0f a second), about %.0f s left; its records wait meanwhile", self.topic,
                    self.partition, first + read - 1, first, until - 1, self.records, until - first,
                    self.said - self.started, rate, (until - first - read) / max(rate, 1e-3))

    def say_lost(self) -> None:
        """The one WARNING of a rebuild whose records retention deleted while it read them (none if none)."""
        if self.lost:
            log.warning("%s partition %d: up to %d records were deleted by retention while its store was rebuilt "
                        "from them (offsets %s): they are not in the store, so the pages judged from offset %d on "
                        "are judged without them and copies of them come out unique. Give the pages topic a "
                        "retention.ms longer than a rebuild takes to read it (or accept it)", self.topic,
                        self.partition, sum(b - a for a, b in self.lost), spans(self.lost), self.until)

    def done(self) -> Rebuilt:
        """What was read, said in one WARNING."""
        done = Rebuilt(self.first, self.until, self.records, time.monotonic() - self.started,
                       sum(b - a for a, b in self.lost))
        log.warning("%s partition %d: store rebuilt from offsets %d..%d (%d records) in %.1f s; judging from %d",
                    self.topic, self.partition, self.first, self.until - 1, self.records, done.seconds, self.until)
        return done


def rebuild(keeper: Replaying, settings: WorkerSettings, group_id: str, until: int, new_store: bool,
            stall_s: float = STALL_S, on_progress: Callable[[], None] | None = None,
            progress_s: float = PROGRESS_S, should_stop: Callable[[], str | None] | None = None) -> Rebuilt | None:
    """Bring a partition's store up to `until` (the first record the app is to judge), emitting nothing.

    Returns what was read, or None when the store was not behind. `new_store`: the app made the store empty
    (for the log line). `on_progress`: called from the rebuild's thread after each batch it replayed. Every
    `progress_s` a WARNING says how many records are read, of how many, and about how long is left. `should_stop`:
    asked after each batch; once it names a reason ("with the app"), the rebuild raises `RebuildStopped`."""
    start = keeper.next_offset()
    if (start or 0) >= until:
        return None
    run = PartitionRebuild(keeper, start, until, progress_s)
    consumer = range_consumer(settings, group_id)
    try:
        low, _ = consumer.get_watermark_offsets(topic_partition(keeper.topic, keeper.partition), timeout=stall_s)
        if not run.begins(low, new_store):
            return Rebuilt(run.first, until, 0, 0.0)
        for messages in read_range(consumer, keeper.topic, keeper.partition, run.first, until, settings.batch_size,
                                   stall_s, on_lost=run.lose):
            run.replay(messages)
            if on_progress is not None:
                on_progress()
            if should_stop is not None and (why := should_stop()):
                run.stop(why, messages[-1].offset())
            run.say_progress(messages[-1].offset())
    finally:
        consumer.close()
        run.say_lost()  # once, whether the rebuild ends, stops or fails
    return run.done()


def range_consumer(settings: WorkerSettings, group_id: str) -> Any:
    """A consumer that reads what Faust's at-least-once consumer reads (uncommitted records too), never committing."""
    from confluent_kafka import Consumer

    return Consumer(settings.client(**{"group.id": group_id, "enable.auto.commit": False,
                                       "enable.auto.offset.store": False, "auto.offset.reset": "earliest",
                                       "isolation.level": "read_uncommitted", "enable.partition.eof": True,
                                       **consumer_settings()}))


def topic_partition(topic: str, partition: int, offset: int | None = None) -> Any:
    """A confluent-kafka TopicPartition, at `offset` if given."""
    from confluent_kafka import TopicPartition

    return TopicPartition(topic, partition) if offset is None else TopicPartition(topic, partition, offset)


def read_range(consumer: Any, topic: str, partition: int, first: int, until: int, batch_size: int,
               stall_s: float, on_lost: Callable[[int, int], None] | None = None) -> Iterator[list[Any]]:
    """The partition's records from `first` up to (not including) `until`, in batches of at most `batch_size`.

    Raises `RebuildStalled` if nothing is read for `stall_s` before `until` (a broker away), `RebuildCutOff` if the
    partition ends below `until` or its offsets go back (the consumer found its position gone and read from the
    start): the topic was deleted or created again, and what it holds now is not what the app read. Offsets the
    read jumps past that retention deleted (below the partition's start, `deleted`) are passed to `on_lost` as
    (first, until) before the batch after them; the rest of the range deleted ends the read there."""
    from confluent_kafka import KafkaError

    consumer.assign([topic_partition(topic, partition, first)])
    position, progress = first, time.monotonic()
    while position < until:
        batch: list[Any] = []
        at_end = reached = False
        back: int | None = None  # the offset the partition's records went back to
        gaps: list[tuple[int, int]] = []  # offsets jumped past: deleted, or transaction markers, or compacted
        for message in consumer.consume(batch_size, timeout=0.5):
            error = message.error()
            if error is not None and error.code() == KafkaError._PARTITION_EOF:
                at_end = True
            elif error is not None:
                log.warning("reading %s[%d] to rebuild its store: %s", topic, partition, error)
            if error is not None:
                continue
            expected = batch[-1].offset() + 1 if batch else position
            if message.offset() < expected:
                back = message.offset()
                break
            if message.offset() > expected:
                gaps.append((expected, min(message.offset(), until)))
            if message.offset() >= until:
                reached = True
                break
            batch.append(message)
        end = batch[-1].offset() + 1 if batch else position
        if at_end and not reached and back is None and end < until:
            gaps.append((end, until))  # the partition ends first: the rest deleted (below its start), or gone
        for a, b in deleted(consumer, topic, partition, gaps, stall_s) if back is None else []:
            if on_lost is not None:
                on_lost(a, b)
            reached = reached or b == until  # the rest of the range deleted by retention: nothing more to read
        if batch:
            yield batch
            position, progress = batch[-1].offset() + 1, time.monotonic()
        if back is not None or (at_end and not reached and position < until):
            where = f"went back to offset {back}" if back is not None else f"ends at offset {position}"
            raise RebuildCutOff(f"{topic}[{partition}] {where} while its store was rebuilt up to offset {until}: the "
                                "topic was deleted or created again under the app, and records the app read are gone. "
                                "Start the app again: it finds the partition started over (on_topic_reset says "
                                "whether it reads it again or refuses)")
        if at_end or reached:
            return
        if time.monotonic() - progress > stall_s:
            raise RebuildStalled(f"could not read {topic}[{partition}] at offset {position} for {stall_s:.0f} s to "
                                 f"rebuild its store up to offset {until}: start the app again once the broker "
                                 "answers")


def deleted(consumer: Any, topic: str, partition: int, gaps: list[tuple[int, int]],
            stall_s: float) -> list[tuple[int, int]]:
    """The parts of the offset gaps (first, until) a read jumped past that retention deleted: those below the start.

    A gap is also left by transaction markers (control records, never delivered) and by compaction: those offsets
    are at or above the partition's start (its low watermark), asked once for all the batch's gaps. Retention
    deleting on while it is asked counts a marker just below the new start as lost too: an upper bound."""
    if not gaps:
        return []
    from confluent_kafka import KafkaException

    try:
        low, _ = consumer.get_watermark_offsets(topic_partition(topic, partition), timeout=stall_s)
    except KafkaException as err:
        log.warning("%s partition %d: the rebuild of its store jumped past offsets %s, and whether retention deleted "
                    "them (rather than transaction markers) could not be asked: %s", topic, partition, spans(gaps), err)
        return []
    return [part for a, b in gaps if (part := deleted_by_retention(a, b, low)) is not None]


__all__ = ["PROGRESS_S", "STALL_S", "RebuildCutOff", "RebuildStalled", "RebuildStopped", "Rebuilt", "read_range",
           "rebuild"]
