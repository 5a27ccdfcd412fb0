"""What the worker's parts share: its fields, the store's offset key, and the deadline on Kafka calls."""

from __future__ import annotations

import threading
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass

from confluent_kafka import Consumer, Producer

from streamdedup.config import DetectorConfig
from streamdedup.outputs.kafka import Outputs, WorkerStats
from streamdedup.outputs.record_size import RecordLimits
from streamdedup.runtime.metrics import WorkerMetrics
from streamdedup.runtime.settings import WorkerSettings
from streamdedup.runtime.topologies import PartitionHandler, Topology
from streamdedup.runtime.watchdog import CallWatchdog

TP = tuple[str, int]


GROUP_KEY = "group"  # the store's meta record of the consumer group whose offsets its own are


def offset_key(topic: str, partition: int) -> str:
    """The store's meta key for the next offset of a partition its store has taken in."""
    return f"offset:{topic}:{partition}"


@dataclass(frozen=True)
class Progress:
    """The figures of the last progress line: when, pages in, pages decided."""

    at: float
    pages_in: int
    decided: int


class WorkerState:
    """The worker's fields, declared once for its parts.

    The parts are assignment, lag, reporting, transactions and the loop. `Worker.__init__`
    (runtime/worker/loop.py) sets them."""

    settings: WorkerSettings
    config: DetectorConfig
    # a deadline on the client's blocking transactional calls (runtime/watchdog.py): the command
    # line's worker exits when one outlives its timeout; without one (in process), it waits
    watchdog: CallWatchdog | None
    stats: WorkerStats
    metrics: WorkerMetrics
    topology: Topology
    consumer: Consumer
    producer: Producer
    limits: RecordLimits  # the largest record the producer builds and each written topic takes
    outputs: Outputs
    handlers: dict[TP, PartitionHandler]
    replay_until: dict[TP, int]
    _work_seen: dict[TP, dict[str, int]]  # each handler's work counts at its last batch
    _steps_seen: dict[TP, dict[str, int]]  # and its nanoseconds by step
    _extraction_seen: dict[TP, dict[str, int]]  # and how its pages were read
    _stop: threading.Event
    _closing: bool  # the consumer is closing: an assignment it still delivers is not taken
    _last_activity: float | None  # set on assignment and on every batch
    _loop_at: float  # the loop's last round, for /healthz
    _running: bool
    _paused: bool  # caught up: fetching paused, end offsets polled (see _idle)
    _taken_over: bool  # partitions were assigned in the last poll: they tick before any record
    _revoked: set[TP]  # partitions revoked in the last poll of a batch being gathered (_consume)
    _stores_checked_at: float  # when the stores' folders were last found in place (_check_stores)
    _failure: str | None  # why the loop stopped, if it failed (/healthz)
    _start_offsets: dict[TP, int]  # where each assigned partition was started
    _lag: dict[TP, int]
    _progress: Progress
    _input_ends: dict[int, tuple[float, int | None]]  # input partition -> (asked at, end offset)
    _ends_client: Consumer | None  # asks end offsets while the group consumer fetches

    def _deadline(self, what: str, timeout_s: float) -> AbstractContextManager[None]:
        """The watchdog's deadline on a blocking call of the Kafka client (none without one)."""
        return nullcontext() if self.watchdog is None else self.watchdog.call(what, timeout_s)
