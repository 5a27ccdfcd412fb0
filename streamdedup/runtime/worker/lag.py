"""The worker's lag, and whether input is waiting.

The worker's lag: end offsets asked of the broker, each partition's lag (the gauges), and whether input is waiting past
the consumer's position."""

from __future__ import annotations

import time

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, TopicPartition

from streamdedup.runtime.worker.state import TP, WorkerState


class LagTracking(WorkerState):
    """How far the worker is behind its input, asked of the broker or of the client's last fetch."""

    def _input_waiting(self) -> bool:
        """Whether input is waiting past this consumer's position.

        Whether an assigned partition has committed records past this consumer's position, asking the broker (its last
        stable offset, as the consumer reads `read_committed`). Updates the lag gauges on the way."""
        assigned = self.consumer.assignment()
        waiting = False
        try:
            positions = self.consumer.position(assigned)
        except KafkaException:
            return True
        # paused, the group consumer fetches nothing and its request wakes its broker thread, which
        # a resumed partition waits for; fetching, it would wait behind the fetch (`_offsets_client`)
        asking = self.consumer if self._paused else self._offsets_client()
        for tp in positions:
            tp_key = (tp.topic, tp.partition)
            try:
                low, end = asking.get_watermark_offsets(TopicPartition(tp.topic, tp.partition), timeout=5,
                                                        cached=False)
            except KafkaException:
                return True  # the broker is away: fetching will tell
            position = tp.offset
            if position < 0:  # nothing read yet: where the partition was started
                start = self._start_offsets.get(tp_key, OFFSET_BEGINNING)
                position = start if start >= 0 else low
            self._set_lag(tp.topic, tp.partition, end - position)
            waiting = waiting or end > position
        return waiting

    def _input_end(self, partition: int, fresh: bool) -> int | None:
        """An input partition's end offset, whoever owns it; None if the broker does not answer.

        An input partition's end offset (its last stable offset for this read_committed consumer), whoever owns it:
        asked of the broker at most every `idle_poll_s` unless `fresh`; None if it does not answer. The index partitions
        ask before they trust an idle claim."""
        now = time.monotonic()
        asked = self._input_ends.get(partition)
        if asked is not None and not fresh and now - asked[0] < self.settings.idle_poll_s:
            return asked[1]
        try:
            _, end = self._offsets_client().get_watermark_offsets(
                TopicPartition(self.settings.topics.pages, partition), timeout=1, cached=False)
        except KafkaException:
            end = None
        end = end if end is not None and end >= 0 else None
        self._input_ends[partition] = (now, end)
        return end

    def _offsets_client(self) -> Consumer:
        """A client of its own to ask end offsets while the group consumer fetches.

        A client of its own, assigned nothing, to ask end offsets while the group consumer fetches: a broker answers a
        connection's requests in order, and on the group consumer's each call waits behind its long-polling fetch
        (`fetch.wait.max.ms`, 500 ms; Tansu and Apache Kafka hold an empty fetch, noida-db answers at once): 8.6 s for
        18 partitions on Tansu, measured, after every assignment. Made on first use."""
        if self._ends_client is None:
            self._ends_client = Consumer(self.settings.client(**{
                "group.id": f"{self.settings.group_id}.offsets", "enable.auto.commit": False,
                "isolation.level": "read_committed"}))
        return self._ends_client

    def _set_lag(self, topic: str, partition: int, lag: int) -> None:
        self._lag[(topic, partition)] = max(0, lag)
        self.metrics.lag.labels(topic, str(partition)).set(max(0, lag))

    def _fetched_lag(self, tp_key: TP) -> int:
        """Records of a partition fetched by the client past this consumer's position (0 if unknown)."""
        tp = TopicPartition(*tp_key)
        try:
            _, high = self.consumer.get_watermark_offsets(tp, cached=True)
            position = self.consumer.position([tp])[0].offset
        except KafkaException:
            return 0
        return max(0, high - position) if high >= 0 and position >= 0 else 0
