"""The local topology: one Detector (one RocksDB store) per input partition.

Right when all near-duplicates of a page arrive on the same input partition (one partition, or
a crawl partitioned so that copies meet); otherwise use the global topology
(`topologies/scaleout.py`), which finds them across partitions at the price of two more
hops through Kafka.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from confluent_kafka import Message

from streamdedup.config import DetectorConfig
from streamdedup.detector import Detector
from streamdedup.fingerprinter import Outcome
from streamdedup.outputs.kafka import Outputs
from streamdedup.runtime.settings import WorkerSettings
from streamdedup.runtime.topologies.base import emit_outcome, offset_of, raw_record
from streamdedup.store.signature_store import StoreBatch


class LocalTopology:
    """pages -> one detector store per input partition -> outputs."""

    def __init__(self, settings: WorkerSettings, config: DetectorConfig) -> None:
        self.settings = settings
        self.config = config

    def topics(self) -> list[str]:
        """The input topic alone."""
        return [self.settings.topics.pages]

    def open(self, topic: str, partition: int) -> LocalDedupPartition:
        """A detector on its own store for the input partition."""
        return LocalDedupPartition(self.config, self.settings.state_dir / f"{topic}-{partition}")


def decide(detector: Detector, messages: list[Message]) -> tuple[list[Outcome], StoreBatch]:
    """Decide a partition's consumed messages in order, their store changes staged.

    The local topology's step, a replay's included; the Faust app rebuilds a lost store with it
    (`runtime/faust_rebuild.py`), so both modes' stores hold what one detector made of the same records."""
    return detector.decide_staged(detector.prepare_many([raw_record(message) for message in messages]))


class LocalDedupPartition:
    """One input partition judged by its own detector and store (the local topology)."""

    stateful = True

    def __init__(self, config: DetectorConfig, path: Path) -> None:
        self.detector = Detector(config, path)
        self.staged: Any = None

    def property_total(self, name: str) -> int:
        """A RocksDB property of the partition's store."""
        return self.detector.store.property_total(name)

    def work(self) -> Mapping[str, int]:
        """The detector's work counts so far (`Detector.WORK_COUNTS`), for the worker's metrics."""
        return {kind: self.detector.work[kind] for kind in Detector.WORK_COUNTS}

    def extraction(self) -> Mapping[str, int]:
        """How the detector's pages were read (`fingerprinter.EXTRACTION_COUNTS`), for the worker's metrics."""
        return dict(self.detector.fingerprinter.extraction)

    def step_ns(self) -> Mapping[str, int]:
        """The detector's nanoseconds by step (`Detector.STEPS`), for the worker's metrics."""
        return dict(self.detector.step_ns)

    def get_meta(self, name: str) -> bytes | None:
        """A meta entry of the partition's store."""
        return self.detector.store.get_meta(name)

    def process(self, messages: list[Message], out: Outputs, replay_until: int) -> int:
        """Decide a batch (store changes staged); returns how many messages were replayed."""
        outcomes, self.staged = decide(self.detector, messages)
        replayed = 0
        for message, outcome in zip(messages, outcomes, strict=True):
            if offset_of(message) < replay_until:
                replayed += 1
                continue
            emit_outcome(out, message, outcome)
        return replayed

    def stage_meta(self, name: str, value: bytes) -> None:
        """Stage a meta entry with the batch's store changes."""
        self.staged.set_meta(name, value)

    def commit(self) -> None:
        """Write the batch's store changes."""
        self.detector.commit(self.staged)
        self.staged = None

    def discard(self) -> None:
        """Drop the batch's store changes."""
        self.staged = None
        self.detector.discard()

    def close(self) -> None:
        """Close the partition's detector and store."""
        self.detector.close()

    def due(self, now: float, lag: int | None) -> bool:
        """Never: a verdict goes out with its batch, nothing is held."""
        return False  # nothing is held: a verdict goes out with its batch

    def tick(self, out: Outputs, now: float, lag: int | None) -> None:
        """Nothing to do: nothing is held."""
        pass
