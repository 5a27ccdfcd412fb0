"""The verdict journal of the Faust app: each input partition's verdicts, kept in its store to replay them.

Every verdict the app emits is journaled in the partition's RocksDB store in the same WriteBatch
as the state change, under the record's offset with a digest of the record (`record_identity`):
a message whose offset and digest match an entry (a replay after a crash) re-emits the journaled
verdict, byte for byte; a journaled offset holding another record means the topic started over
(`JournalKeeper.start_over`). The journal is bounded: entries below the group's committed offset
are removed, keeping at least the last `keep` of the partition. `runtime/faust_app.py` runs it.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import orjson

from streamdedup.detector import Detector
from streamdedup.outputs.record_size import Headers
from streamdedup.record.readers import RawRecord
from streamdedup.runtime.faust_outputs import Output, render
from streamdedup.runtime.record_identity import DIGEST_BYTES, kafka_place, kafka_position, record_digest
from streamdedup.runtime.topologies.local import decide

log = logging.getLogger("streamdedup.runtime.faust_app")  # the app's logger: operators filter by it

JOURNAL_KEEP = 10_000  # entries kept per partition below the committed offset, whatever it is
_OFFSET_DIGITS = 20  # offsets zero-padded in journal names, so names sort as offsets do


def journal_name(topic: str, partition: int, offset: int) -> str:
    """The journal entry name of an input record, ordered by offset within its partition."""
    return f"{topic}:{partition}@{offset:0{_OFFSET_DIGITS}d}"


class StartedOver(RuntimeError):
    """A partition of the pages topic started over and `on_topic_reset` is `refuse`: one line, the fix named."""


def stop_refused(err: StartedOver) -> NoReturn:
    """Stop the running app on a partition that started over (`on_topic_reset` refuse): one line, exit status 2.

    The line goes to the process's standard error itself, as the CLI's refusals: Faust's worker turns `sys.stderr`
    into a logger."""
    os.write(2, f"streamdedup: error: {err}\n".encode())
    logging.shutdown()
    os._exit(2)


def refusal(topic: str, partition: int, why: str) -> str:
    """The one line that refuses a partition that started over, naming both fixes."""
    return (f"{topic}[{partition}] started over: {why}, so the topic was deleted and created again, the broker lost "
            "its data, or the app now reads another cluster. To judge its records from the beginning, keeping what "
            "the stores know of earlier pages, start again with --on-topic-reset restart "
            "(STREAMDEDUP_ON_TOPIC_RESET=restart)")


@dataclass
class JournalKeeper:
    """The verdict journal of one input partition, in that partition's store."""

    detector: Detector
    topic: str
    partition: int
    keep: int = JOURNAL_KEEP
    pruned_below: int = -1  # -1: nothing pruned yet this run (older formats are dropped at the first)
    warned: bool = False
    on_topic_reset: str = "restart"  # `WorkerSettings.on_topic_reset`: "refuse" raises `StartedOver`
    step: int = field(init=False)

    def __post_init__(self) -> None:
        self.step = max(1, self.keep // 10)  # one range deletion per `step` offsets, not one a record

    def outputs(self, offset: int, key: bytes | None, value: bytes | None, timestamp_ms: int | None = None,
                committed: int | None = None, passed: Headers | None = None) -> list[Output]:
        """The messages to send for one input message: decided once, replayed from the journal.

        committed: the group's committed offset of the partition, if known; entries below it
        (and below the last `keep`) are removed in the record's WriteBatch. passed: the input
        message's Kafka headers, which its verdict line carries."""
        source = f"{self.topic}[{self.partition}]@{offset}"
        name = journal_name(self.topic, self.partition, offset)
        digest = record_digest(key, value, timestamp_ms)
        journaled = self.detector.store.get_journal(name)
        if journaled is not None and journaled[:DIGEST_BYTES] == digest:
            return render(orjson.loads(journaled[DIGEST_BYTES:]), key, value, source, passed)
        if journaled is not None:
            self.start_over(f"offset {offset} holds another record than the one judged there before")
        arrival_ms = timestamp_ms if timestamp_ms is not None and timestamp_ms > 0 else None
        item = self.detector.prepare(RawRecord(origin=source, data=value or b"", arrival_ms=arrival_ms,
                                               position=kafka_position(self.topic, self.partition, offset, arrival_ms),
                                               place=kafka_place(self.partition, offset, arrival_ms)))
        outcomes, batch = self.detector.decide_staged([item])
        dedup = outcomes[0].dedup
        if journaled is not None:  # another record had this offset: the old topic's entries are void
            batch.delete_journal(name, journal_name(self.topic, self.partition, 10**_OFFSET_DIGITS - 1))
        self._prune(batch, offset, committed)
        batch.set_journal(name, digest + orjson.dumps(dedup))
        self.detector.commit(batch)  # state and journal in one WriteBatch, before anything is sent
        return render(dedup, key, value, source, passed)

    def next_offset(self) -> int | None:
        """The offset after the partition's newest journaled record: what its store has read (None: no entry).

        Every judged record is journaled, and pruning keeps the newest entry."""
        name = self.detector.store.last_journal_name(f"{self.topic}:{self.partition}@")
        return None if name is None else int(name[-_OFFSET_DIGITS:]) + 1

    def replay(self, messages: list[Any], until: int) -> None:
        """Consumed records whose outputs are in Kafka already, decided into the store as the worker replays them.

        `messages` are confluent-kafka messages below `until`, in order; nothing is sent. Each is journaled as
        `outputs` journals it, in one WriteBatch with the state, so a rebuild cut short goes on from its last record."""
        outcomes, batch = decide(self.detector, messages)
        for message, outcome in zip(messages, outcomes, strict=True):
            digest = record_digest(message.key(), message.value(), message.timestamp()[1])
            batch.set_journal(journal_name(self.topic, self.partition, message.offset()),
                              digest + orjson.dumps(outcome.dedup))
        self._prune(batch, messages[-1].offset(), until)
        self.detector.commit(batch)

    def start_over(self, why: str) -> None:
        """The partition started over: raise `StartedOver` (`on_topic_reset` refuse), else warn once and go on."""
        if self.on_topic_reset == "refuse":
            raise StartedOver(refusal(self.topic, self.partition, why))
        if not self.warned:
            log.warning("%s partition %d started over: %s (the topic was created again or the broker lost its "
                        "data); judging its records as new", self.topic, self.partition, why)
            self.warned = True
        self.pruned_below = min(self.pruned_below, 0)  # the new topic's offsets start below the old ones

    def went_back(self, offset: int, read: int, key: bytes | None, value: bytes | None,
                  timestamp_ms: int | None) -> bool:
        """Whether a record below the offset `read` Faust has read of the partition shows that it started over.

        It does unless it is the record journaled at its offset (a repeat, which Faust rightly drops); then
        `start_over` is called."""
        journaled = self.detector.store.get_journal(journal_name(self.topic, self.partition, offset))
        if journaled is not None and journaled[:DIGEST_BYTES] == record_digest(key, value, timestamp_ms):
            return False
        self.start_over(f"offset {offset} holds another record than the one judged there before"
                        if journaled is not None else
                        f"its records start again at offset {offset}, below offset {read} the app had read "
                        "(Kafka found the app's position out of range)")
        return True

    def _prune(self, batch: Any, offset: int, committed: int | None) -> None:
        if self.pruned_below < 0:  # entries of an older app, named topic:partition:offset, undigested
            prefix = f"{self.topic}:{self.partition}:"
            if self.detector.store.journal_names(prefix, limit=1):
                log.warning("dropping the verdict journal of an older streamdedup faust for %s partition %d: "
                            "records it had not committed are judged again", self.topic, self.partition)
                batch.delete_journal(prefix, prefix[:-1] + chr(ord(":") + 1))
            self.pruned_below = 0
        if committed is None:
            return  # a replay could start anywhere: keep everything until the group has committed
        # the entry before the committed offset stays: at start it tells whether the topic started over
        floor = min(committed - 1, offset + 1 - self.keep)
        if floor - self.pruned_below >= self.step:
            batch.delete_journal(journal_name(self.topic, self.partition, 0),
                                 journal_name(self.topic, self.partition, floor))
            self.pruned_below = floor


def outputs_for(detector: Detector, topic: str, partition: int, offset: int, key: bytes | None,
                value: bytes | None, timestamp_ms: int | None = None) -> list[Output]:
    """`JournalKeeper.outputs` without pruning, for one message."""
    return JournalKeeper(detector, topic, partition).outputs(offset, key, value, timestamp_ms)


def journaled_digest(store_path: Path, topic: str, partition: int, offset: int) -> bytes | None:
    """The digest journaled for a record of a partition's store, read-only (the app is not running)."""
    from rocksdict import AccessType, Options, Rdict

    from streamdedup.store import layout

    if not (store_path / "CURRENT").exists():
        return None
    db = Rdict(str(store_path), options=Options(raw_mode=True), access_type=AccessType.read_only())
    try:
        value = db.get(layout.journal_key(journal_name(topic, partition, offset)))
    finally:
        db.close()
    return None if value is None else value[:DIGEST_BYTES]


def newest_journaled(store_path: Path, topic: str, partition: int) -> int | None:
    """The offset of a partition's newest journal entry, read-only (the app is not running); None without one."""
    from rocksdict import AccessType, Options, Rdict

    from streamdedup.store import layout

    if not (store_path / "CURRENT").exists():
        return None
    first = layout.journal_key(journal_name(topic, partition, 0))
    db = Rdict(str(store_path), options=Options(raw_mode=True), access_type=AccessType.read_only())
    try:
        entries = db.iter()
        entries.seek_for_prev(layout.journal_key(journal_name(topic, partition, 10**_OFFSET_DIGITS - 1)))
        key = entries.key() if entries.valid() else None
        del entries
    finally:
        db.close()
    if key is None or not (first[:-_OFFSET_DIGITS] <= key < first[:-_OFFSET_DIGITS] + b"\xff"):
        return None
    return int(key[-_OFFSET_DIGITS:])
