"""The Kafka worker: consume, decide, produce verdicts, exactly once (runtime/worker/loop.py).

Its parts, one responsibility each: `loop` (the Worker and its loop), `assignment` (offsets on
(re)assignment: store against group, replay, a topic that started over), `transactions` (a batch
in one transaction, the ticks, recovery), `reporting` (health, progress, metrics), `lag` (end
offsets and lag), `errors` (the stops), `state` (the fields they share)."""

from __future__ import annotations

from streamdedup.outputs.kafka import WorkerStats, cluster_events
from streamdedup.runtime.errors import WorkerStopped
from streamdedup.runtime.settings import WorkerSettings, mask
from streamdedup.runtime.topic_reset import identity_key
from streamdedup.runtime.worker.errors import (
    FENCED,
    StateLost,
    StoreAheadOfKafka,
    StoreOfAnotherGroup,
    StoreWriteFailed,
    TopicStartedOver,
    WorkerFenced,
    fenced,
)
from streamdedup.runtime.worker.loop import Worker
from streamdedup.runtime.worker.state import TP, Progress, offset_key

__all__ = ["FENCED", "TP", "Progress", "StateLost", "StoreAheadOfKafka", "StoreOfAnotherGroup", "StoreWriteFailed",
           "TopicStartedOver", "Worker", "WorkerFenced", "WorkerSettings", "WorkerStats", "WorkerStopped",
           "cluster_events", "fenced", "identity_key", "mask", "offset_key"]
