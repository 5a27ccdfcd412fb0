"""The order of one round of `Worker.process`: pure logic, so the Kafka clients are stand-ins
here (the broker tests in tests/runtime/scaleout run the same rounds against a real broker)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from confluent_kafka import TopicPartition
from conftest import FakeMessage

from streamdedup.runtime.metrics import WorkerMetrics
from streamdedup.runtime.settings import WorkerSettings
from streamdedup.runtime.worker import Worker, WorkerStats


class _Handler:
    """A partition handler that records what it was asked to do, in order, in a shared log."""

    stateful = False

    def __init__(self, name: str, log: list[tuple[str, str]], due: bool) -> None:
        self.name, self.log, self._due = name, log, due

    def process(self, messages: list[Any], out: Any, replay_until: int) -> int:
        self.log.append(("process", self.name))
        return 0

    def due(self, now: float, lag: int | None) -> bool:
        return self._due

    def tick(self, out: Any, now: float, lag: int | None) -> None:
        self.log.append(("tick", self.name))

    def get_meta(self, name: str) -> bytes | None:
        return None

    def stage_meta(self, name: str, value: bytes) -> None:
        pass

    def commit(self) -> None:
        pass

    def discard(self) -> None:
        pass

    def close(self) -> None:
        pass

    def work(self) -> Mapping[str, int]:
        return {}

    def step_ns(self) -> Mapping[str, int]:
        return {}

    def property_total(self, name: str) -> int:
        return 0


class _Client:
    """The consumer and producer calls a round makes without transactions."""

    def flush(self, timeout: float) -> int:
        return 0

    def commit(self, **_: Any) -> None:
        pass

    def get_watermark_offsets(self, tp: Any, **_: Any) -> tuple[int, int]:
        return (0, 0)

    def position(self, tps: list[Any]) -> list[Any]:
        return tps


class _Outputs:
    def discard(self) -> None:
        pass

    def commit(self) -> None:
        pass

    def first_failure(self) -> None:
        return None


def _worker(handlers: dict[tuple[str, int], _Handler]) -> Worker:
    worker = Worker.__new__(Worker)  # no clients: the round's order is what is tested
    worker.settings = WorkerSettings(transactions=False)
    worker.handlers = handlers  # type: ignore[assignment]
    worker.replay_until, worker._lag, worker._work_seen, worker._steps_seen = {}, {}, {}, {}
    worker._extraction_seen = {}
    worker.stats, worker.metrics = WorkerStats(), WorkerMetrics()
    worker.consumer = worker.producer = _Client()  # type: ignore[assignment]
    worker.outputs = _Outputs()  # type: ignore[assignment]
    return worker


def test_the_other_partitions_tick_before_the_batch_and_its_own_after():
    """An idle input whose records were fetched while another partition's batch was processed
    takes its infinite watermark back in a tick. That tick goes out before the batch's pages and
    watermarks: sent after them, an index partition whose own batch ended between the two would
    pass the batch's place under the stale idle claim and release pages above those records."""
    log: list[tuple[str, str]] = []
    handlers = {("pages", 0): _Handler("busy", log, due=True), ("pages", 1): _Handler("idle", log, due=True)}
    _worker(handlers).process([FakeMessage(b"", 7)])  # type: ignore[list-item]
    assert log == [("tick", "idle"), ("process", "busy"), ("tick", "busy")]


class _Topology:
    def topics(self) -> list[str]:
        return ["pages"]


class _RebalancingConsumer(_Client):
    """A consumer whose later `consume` calls run a rebalance first, as librdkafka's callbacks do inside a poll."""

    def __init__(self, worker: Worker, fetches: list[tuple[list[str], list[FakeMessage]]]) -> None:
        self.worker, self.fetches = worker, fetches

    def consume(self, num: int, timeout: float) -> list[FakeMessage]:
        if not self.fetches:
            return []
        rebalance, messages = self.fetches.pop(0)
        for event in rebalance:
            what, partition = event.split(":")
            tps = [TopicPartition("pages", int(partition))]
            if what == "revoke":
                self.worker._on_revoke(self, tps)  # type: ignore[arg-type]
            else:
                self.worker.handlers[("pages", int(partition))] = _Handler(f"p{partition}", [], due=False)
        return messages

    def unassign(self) -> None:
        pass

    def incremental_unassign(self, tps: list[Any]) -> None:
        pass


def _batching_worker(fetches: list[tuple[list[str], list[FakeMessage]]]) -> Worker:
    log: list[tuple[str, str]] = []
    worker = _worker({("pages", 0): _Handler("p0", log, due=False), ("pages", 1): _Handler("p1", log, due=False)})
    worker.settings = WorkerSettings(transactions=False, batch_size=10)
    worker.topology = _Topology()  # type: ignore[assignment]
    worker._start_offsets, worker._running, worker._paused, worker._revoked = {}, True, False, set()
    worker.consumer = _RebalancingConsumer(worker, fetches)  # type: ignore[assignment]
    return worker


def test_a_batch_leaves_out_what_it_took_of_a_partition_revoked_while_it_was_gathered():
    """A batch is gathered over several polls; a rebalance can revoke a partition in a later one. Its
    messages taken before are no longer this worker's (the new owner reads them from the group's
    offset): processed, they met no handler and stopped the loop with a KeyError."""
    worker = _batching_worker([([], [FakeMessage(b"a", 5, partition=0), FakeMessage(b"b", 9, partition=1)]),
                               (["revoke:0"], [FakeMessage(b"c", 10, partition=1)])])
    batch = worker._consume(1.0)
    assert [(m.partition(), m.offset()) for m in batch] == [(1, 9), (1, 10)]
    worker.process(batch)  # no KeyError: every message has its handler
    assert worker.stats.consumed == 2


def test_a_partition_revoked_and_assigned_again_while_a_batch_is_gathered_is_not_taken_twice():
    """Revoked and assigned again within one batch's polls, a partition is read again from the group's
    offset: what was taken of it before the revocation would be judged a second time."""
    worker = _batching_worker([([], [FakeMessage(b"a", 5, partition=0)]),
                               (["revoke:0"], [FakeMessage(b"x", 3, partition=1)]),
                               (["assign:0"], [FakeMessage(b"a", 5, partition=0)]),
                               ([], [FakeMessage(b"b", 6, partition=0)])])
    batch = worker._consume(1.0)
    assert [(m.partition(), m.offset()) for m in batch] == [(1, 3), (0, 5), (0, 6)]
