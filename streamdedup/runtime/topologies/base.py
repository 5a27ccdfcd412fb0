"""What the worker asks of a topology and of its partition handlers, declared; and the helpers both topologies share.

A topology names the topics a worker subscribes to and opens one handler per assigned
(topic, partition). A handler decides a batch of that partition's messages, staging its store
changes; the worker commits the batch's Kafka transaction, then asks each handler to write its
staged changes with the offset they reflect (`stage_meta` + `commit`), or to drop them (`discard`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, cast

from confluent_kafka import TIMESTAMP_NOT_AVAILABLE, Message

from streamdedup.outputs.kafka import Outputs
from streamdedup.record.readers import RawRecord
from streamdedup.runtime.record_identity import kafka_place, kafka_position


class PartitionHandler(Protocol):
    """What the worker asks of the handler of one assigned (topic, partition): decide, stage, commit or discard."""

    stateful: bool  # keeps a store whose offset the worker checks (and replays to) on assignment

    def process(self, messages: list[Message], out: Outputs, replay_until: int) -> int:
        """Decide the messages, sending outputs to `out` except below `replay_until`.

        Messages below `replay_until` rebuild a store: their outputs are in Kafka already. Returns how many were
        replayed."""
        ...

    def get_meta(self, name: str) -> bytes | None:
        """A meta entry of the handler's store (None: not set; the committed offset is one)."""
        ...

    def stage_meta(self, name: str, value: bytes) -> None:
        """Stage a meta entry (the offset the batch reaches) with the batch's store changes."""
        ...

    def commit(self) -> None:
        """Write the batch's staged store changes, after its Kafka transaction committed."""
        ...

    def discard(self) -> None:
        """Drop the batch's staged store changes (its transaction was aborted)."""
        ...

    def close(self) -> None:
        """Close the handler's store (the partition was revoked or the worker stops)."""
        ...

    def property_total(self, name: str) -> int:
        """A RocksDB property summed over the handler's store (0 without one), for metrics."""
        ...

    def work(self) -> Mapping[str, int]:
        """The decide step's work counts so far, for metrics.

        The counts are `Detector.WORK_COUNTS`, empty for a handler that judges no page."""
        ...

    def step_ns(self) -> Mapping[str, int]:
        """The stateful stage's nanoseconds by step so far, for metrics.

        The steps are `Detector.STEPS`, empty for a handler that judges no page."""
        ...

    def due(self, now: float, lag: int | None) -> bool:
        """Whether the handler has something to send without input now.

        That is an idle input's watermark or a held page's release marker. `lag` is its partition's, as last known."""
        ...

    def tick(self, out: Outputs, now: float, lag: int | None) -> None:
        """Send what `due` announced."""
        ...


class Topology(Protocol):
    """What the worker asks of a topology: the topics to subscribe to and a handler per assigned partition."""

    def topics(self) -> list[str]:
        """The topics the worker subscribes to."""
        ...

    def open(self, topic: str, partition: int) -> PartitionHandler:
        """The handler of an assigned partition of one of `topics`."""
        ...


# A consumed message always has its topic, partition and offset, and ours always a value;
# confluent-kafka's stub types them as optional, so these say it once.
def topic_of(message: Message) -> str:
    """A consumed message's topic."""
    return cast(str, message.topic())


def partition_of(message: Message) -> int:
    """A consumed message's partition."""
    return cast(int, message.partition())


def offset_of(message: Message) -> int:
    """A consumed message's offset."""
    return cast(int, message.offset())


def value_of(message: Message) -> bytes:
    """A consumed message's value (b"" for a tombstone)."""
    return message.value() or b""


def headers_of(message: Message) -> list[tuple[str, bytes | None]]:
    """A consumed message's Kafka headers (values are bytes or None), in order."""
    return cast("list[tuple[str, bytes | None]]", message.headers() or [])


def source_of(message: Message) -> str:
    """Where a message came from, as outputs name it: topic[partition]@offset."""
    return f"{topic_of(message)}[{partition_of(message)}]@{offset_of(message)}"


def position_of(message: Message) -> str:
    """The message's place in its topic, the same on every replay.

    A page id without a usable fetch time is made of it (`record_identity.kafka_position`)."""
    return kafka_position(topic_of(message), partition_of(message), offset_of(message), message_timestamp(message))


def message_timestamp(message: Message) -> int | None:
    """The message's timestamp in ms (its arrival time for the retention clock), if it has one."""
    kind, stamp = message.timestamp()
    return stamp if kind != TIMESTAMP_NOT_AVAILABLE and stamp > 0 else None


def raw_record(message: Message) -> RawRecord:
    """A consumed message as the detector reads it: its place, value and arrival time, the same on every replay."""
    stamp = message_timestamp(message)
    return RawRecord(origin=source_of(message), data=value_of(message), arrival_ms=stamp,
                     position=position_of(message), place=kafka_place(partition_of(message), offset_of(message), stamp))


def emit_outcome(out: Outputs, message: Message, outcome: Any) -> None:
    """A detector outcome for an input message: dead letter (original bytes) or verdict."""
    dedup = outcome.dedup
    if dedup["status"] == "rejected":
        out.rejected(message.key(), value_of(message), dedup["reason"], dedup["detail"], source_of(message),
                     headers_of(message), outcome.record, dedup.get("id"))
    else:
        out.verdict(outcome.record, dedup, source_of(message), headers_of(message), message.key(), outcome.line)
