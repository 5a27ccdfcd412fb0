"""What an operator sees of the worker: health, progress and metrics.

Health is /healthz and /readyz, progress is the progress line, and the batch metrics are latency, lag, work by
step and store size."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

from confluent_kafka import KafkaException, Message, TopicPartition

from streamdedup.runtime.topologies import PartitionHandler
from streamdedup.runtime.topologies.base import offset_of
from streamdedup.runtime.worker.lag import LagTracking
from streamdedup.runtime.worker.state import TP, Progress

log = logging.getLogger(__name__)


def _since_last(seen_by: dict[TP, dict[str, int]], tp_key: TP, now: Mapping[str, int]) -> list[tuple[str, int]]:
    """What each of a handler's running counts grew by since the last batch.

    The running counts are `now`; the last batch is when `seen_by` last kept them. Only the counts that grew are
    listed, and `now` is kept for the next batch."""
    seen = seen_by.get(tp_key, {})
    seen_by[tp_key] = dict(now)
    return [(kind, added) for kind, count in now.items() if (added := count - seen.get(kind, 0)) > 0]



class Reporting(LagTracking):
    """Health, readiness, progress and the metrics of each batch."""

    def health(self) -> tuple[bool, dict[str, Any]]:
        """Whether the worker is alive, with the details.

        Alive: the loop goes round (a batch, or an idle poll) more often than `stall_timeout_s`, and it has not stopped
        on an error (`WorkerStopped`: a store deleted under it, a fenced worker...)."""
        age = time.monotonic() - self._loop_at
        stopped = not self._running and self._stop.is_set()
        ok = not stopped and self._failure is None and age < self.settings.stall_timeout_s
        return ok, {"running": self._running, "last_loop_age_s": round(age, 3),
                    "stall_timeout_s": self.settings.stall_timeout_s,
                    **({"failed": self._failure} if self._failure else {})}

    def readiness(self) -> tuple[bool, dict[str, Any]]:
        """Ready: the loop runs, partitions are assigned and their stores are open."""
        assigned = sorted(f"{topic}[{partition}]" for topic, partition in self.handlers)
        replaying = sorted(f"{topic}[{partition}]" for topic, partition in self.replay_until)
        ok = self._running and bool(assigned) and self.health()[0]
        return ok, {"running": self._running, "assigned": assigned, "replaying": replaying}

    def _report_progress(self, now: float) -> None:
        """Every `progress_interval_s` once assigned: pages in, verdicts by status, lag, rate."""
        interval = self.settings.progress_interval_s
        last = self._progress
        if interval <= 0 or now - last.at < interval:
            return
        pages_in = self.stats.inputs.get(self.settings.topics.pages, 0)
        elapsed = now - last.at
        statuses = " ".join(f"{status}={n}" for status, n in sorted(self.stats.statuses.items())) or "none"
        lag = {topic: 0 for topic in self.topology.topics()}
        for (topic, _), value in self._lag.items():
            lag[topic] = lag.get(topic, 0) + value
        log.info("progress: %d pages in (%.1f/s over %.0fs), %d decided (%.1f/s): %s; lag %s; %d partitions%s",
                 pages_in, (pages_in - last.pages_in) / elapsed, elapsed, self.stats.decided,
                 (self.stats.decided - last.decided) / elapsed, statuses,
                 " ".join(f"{topic}={n}" for topic, n in lag.items()), len(self.handlers),
                 ", idle" if self._paused else "")
        self._progress = Progress(now, pages_in, self.stats.decided)

    def _observe(self, by_partition: dict[TP, list[Message]], started: float) -> None:
        now = time.time()
        self.metrics.batch_seconds.observe(time.monotonic() - started)
        for (topic, partition), batch in by_partition.items():
            if topic == self.settings.topics.pages:
                for message in batch:
                    kind, stamp = message.timestamp()
                    if kind and stamp > 0:
                        self.metrics.page_latency.observe(max(0.0, now - stamp / 1000))
            try:
                # the end as of the last fetch (exact once idle: _input_waiting asks the broker);
                # behind = end - the next offset to read, not - the last offset seen + 1: a
                # transaction's commit marker takes an offset that no record has
                _, high = self.consumer.get_watermark_offsets(TopicPartition(topic, partition), cached=True)
                position = self.consumer.position([TopicPartition(topic, partition)])[0].offset
                if high >= 0:
                    self._set_lag(topic, partition, high - max(position, offset_of(batch[-1]) + 1))
            except KafkaException:
                pass
            handler = self.handlers[(topic, partition)]
            self._count_work((topic, partition), handler)
            total = handler.property_total
            if handler.stateful:  # the stateful steps: RocksDB's own figures, all column families
                labels = (topic, str(partition))
                self.metrics.store_bytes.labels(*labels).set(total("rocksdb.live-sst-files-size"))
                self.metrics.store_keys.labels(*labels).set(total("rocksdb.estimate-num-keys"))

    def _count_work(self, tp_key: TP, handler: PartitionHandler) -> None:
        """A judging handler's work counts and time by step since its last batch.

        The decide step's work counts (`streamdedup_decide_work`) and time by step (`streamdedup_store_step_seconds`)
        since the last batch of a handler that judges pages (the local topology's Detector, the global one's index
        partitions)."""
        for kind, added in _since_last(self._work_seen, tp_key, handler.work()):
            self.metrics.work.labels(kind).inc(added)
        for step, ns in _since_last(self._steps_seen, tp_key, handler.step_ns()):
            self.metrics.store_steps.labels(step).inc(ns / 1e9)
        # the handlers that read pages (the local topology's, the global one's fingerprint step)
        for kind, added in _since_last(self._extraction_seen, tp_key, getattr(handler, "extraction", dict)()):
            self.metrics.extraction.labels(kind).inc(added)
