"""The news feed's reader: `ClusterReader` keeps `Stories` current from the cluster view topic, resumably.

It folds every partition of the view (or of the `pages.clusters` events) from its start and hands
back what is past its consumer group's committed offsets; `read_topic_stories` reads a topic to its
end once; `event_of` is a message's event, or one error line naming the topic to give.
"""

from __future__ import annotations

import logging
from time import monotonic, sleep
from typing import Any

import orjson

from streamdedup.clusters.fold import Stories
from streamdedup.logs import kafka_logger
from streamdedup.record.topic_end import read_to_end

log = logging.getLogger(__name__)

# what to do where the cluster view's topic is not there
_MISSING_VIEW = ("create the topics (`streamdedup topics create`) or start a worker, and give the same topic name "
                 "as the worker's STREAMDEDUP_TOPIC_CLUSTER_VIEW")


# the least time an end-offsets question is given, however little is left of the poll's
_LEAST_ASK_S = 0.05
# how often a reader asks whether its topic has grown partitions (an operator adds them to spread the workers)
_PARTITIONS_CHECK_S = 5.0
_PROBE_S = 2.0  # how long a partition that seems to have started over is fetched to ask the broker
_PARTITION_EOF = -191  # confluent_kafka.KafkaError._PARTITION_EOF: a partition read to its end


class ClusterReader:
    """Story -> pages from the cluster view topic (or the `pages.clusters` events), kept current.

    Reads every partition of `topic` (a view needs all pages, so it never splits the topic with
    other members of its group). It starts from each partition's beginning: the records below the
    group's committed offsets are folded silently (what the application acted on before), those
    past them are returned by `poll`. `commit` stores how far it has read, so a reader restarted
    mid-stream has the same stories as one that never stopped, and hands back only what is new.
    Partitions added to the topic are read from their start; a partition that started over (its end
    below what was read or committed) is handed back again from its start, with a warning. An event
    read again byte for byte under its key (the Faust app, at least once, repeats a replayed record's
    outputs so) is handed back once, counted in `repeats`.

        reader = ClusterReader("kafka:9092", "my-feed")
        while True:
            for event in reader.poll():
                story = reader.stories.story_of(event["page_id"])
                if event.get("merged"):
                    notify(f"stories {event['merged']} are {story}")
            reader.commit()
    """

    def __init__(self, bootstrap_servers: str, group_id: str, topic: str = "pages.cluster_view",
                 timeout_s: float = 30.0, idle_poll_s: float = 0.25, **client: Any) -> None:
        """Raises ConnectionError if no broker answers within `timeout_s`, ValueError if `topic` is missing.

        `idle_poll_s`: caught up, how often the end offsets are asked instead of fetching (as the
        worker's `WorkerSettings.idle_poll_s`; 0: keep fetching). `client`: more librdkafka settings
        (security, for one). Its log lines go to the `streamdedup.kafka` logger, each kind at most
        once a minute, not to the process's stderr."""
        from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, TopicPartition

        self.topic = topic
        self.idle_poll_s = idle_poll_s
        self._paused = False  # caught up: fetching paused, end offsets asked every idle_poll_s
        self._ask_due = False  # fetching: the last fetch came back empty, the end offsets are asked
        self._next_ask = 0.0  # paused: when the end offsets are asked next (monotonic)
        self._woken = True  # fetching: the reader's consumer has been asked since it resumed (below)
        self._ends_client: Any = None
        self._partitions_due = monotonic() + _PARTITIONS_CHECK_S  # when the topic's partitions are asked next
        self.stories = Stories()
        self._client = {"bootstrap.servers": bootstrap_servers, "group.id": group_id, "enable.auto.commit": False,
                        "isolation.level": "read_committed", "logger": kafka_logger(), **client}
        # a partition's end is reported (`_PARTITION_EOF`): one that ends below the group's offset started over
        self._consumer = Consumer({"auto.offset.reset": "earliest", "enable.partition.eof": True, **self._client})
        try:
            metadata = self._consumer.list_topics(topic, timeout=timeout_s).topics[topic]
        except KafkaException as err:
            self._consumer.close()
            problem = err.args[0].str() if err.args and hasattr(err.args[0], "str") else str(err)
            raise ConnectionError(f"no Kafka broker answered at {bootstrap_servers} within {timeout_s:g} s "
                                  f"({problem}): give the address the workers use") from None
        if metadata.error is not None:
            self._consumer.close()
            raise ValueError(f"cannot read topic {topic!r}: {metadata.error.str()}: {_MISSING_VIEW}")
        partitions = [TopicPartition(topic, p) for p in sorted(metadata.partitions)]
        committed = self._consumer.committed(partitions, timeout=30)
        self._resume_at = {tp.partition: max(tp.offset, 0) for tp in committed}
        self._next = dict.fromkeys(self._resume_at, 0)  # per partition: the offset after the last read
        self._recommit: set[int] = set()  # partitions that started over, whose group offset is to be lowered
        self._probes: dict[int, tuple[int, float]] = {}  # per partition: a position past its end, since when
        # per partition: a hash of each (key, value) read, so a repeat (the Faust app's replay) is not handed back
        self._seen: dict[int, set[int]] = {}
        self.repeats = 0  # messages read again byte for byte under their key, not handed back
        self._consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in self._resume_at])

    def poll(self, timeout_s: float = 1.0, max_records: int = 500) -> list[dict[str, Any]]:
        """Fold what arrived within `timeout_s`; returns the events past the committed offsets (the new ones)."""
        new: list[dict[str, Any]] = []
        for message in self._fetch(timeout_s, max_records):
            partition, offset = message.partition(), message.offset()
            if message.error() is not None:
                if message.error().code() == _PARTITION_EOF and partition is not None and offset is not None:
                    self._at_end(partition, offset)
                continue
            assert partition is not None and offset is not None
            if offset < self._next[partition]:  # read again from below what was read: the partition started over
                self._started_over(partition, offset, f"offset {offset} came after {self._next[partition] - 1}")
            event = event_of(message)
            self._next[partition] = offset + 1
            if event is None:  # a tombstone: no page's event
                continue
            seen = self._seen.setdefault(partition, set())
            if (digest := hash((message.key(), message.value()))) in seen:  # the same event again: told before
                self.repeats += 1
                continue
            seen.add(digest)
            self.stories.apply(event)
            if offset >= self._resume_at[partition]:
                new.append(event)
        return new

    def _fetch(self, timeout_s: float, max_records: int) -> list[Any]:
        """The messages that arrive within `timeout_s`; caught up, fetching rests (as the worker's `_idle`).

        librdkafka fetches again the moment a fetch comes back, relying on the broker to hold an
        empty one; noida-db answers at once, so a caught-up reader fetched without end (~0.5
        CPU-second a second). Once the end offsets say it has read everything, fetching is paused
        and the end offsets are asked every `idle_poll_s` instead, until a partition grows. They are
        asked only within the poll's time (a question the poll has no time left for opens the next
        one), so a broker that does not answer holds no poll past `timeout_s`."""
        deadline = monotonic() + timeout_s
        waiting = False  # the end offsets said (or a broker away left it open) that records wait: fetch them
        asked = False  # a question due is asked once a poll even past its deadline (`poll(0)` must move on)
        while True:
            if not self._paused and (waiting or not self._ask_due):
                messages: list[Any] = self._consumer.consume(max_records, max(deadline - monotonic(), 0.0))
                self._ask_due = not messages and self.idle_poll_s > 0  # caught up? the end offsets say
                if not self._ask_due or waiting:
                    return messages
            elif self._paused and self._next_ask < deadline:
                sleep(max(self._next_ask - monotonic(), 0.0))
            due = not self._paused or self._next_ask <= monotonic()
            if (monotonic() >= deadline and (asked or not due)) or (self._paused and self._next_ask >= deadline):
                sleep(max(deadline - monotonic(), 0.0))
                return []
            waiting, asked = self._input_waiting(max(deadline, monotonic() + _LEAST_ASK_S)), True
            self._ask_due, self._next_ask = False, monotonic() + self.idle_poll_s
            if self._paused and waiting:  # records came while resting: asked again at once, to wake the consumer
                self._consumer.resume(self._consumer.assignment())
                self._paused, self._woken, self._ask_due, waiting = False, False, True, False
            elif not self._paused and not waiting:  # caught up
                self._consumer.pause(self._consumer.assignment())
                self._paused = True

    def _input_waiting(self, deadline: float) -> bool:
        """Whether a partition holds committed records past what this reader has read, asked by `deadline`.

        Paused, the reader's consumer asks (it fetches nothing); fetching, a client of its own does:
        on the consumer's connection the question would wait behind the fetch in flight (as the
        worker's, `runtime/worker/lag.py`). A broker that does not answer in time counts as records
        waiting: fetching will tell."""
        from confluent_kafka import KafkaException, TopicPartition

        # paused, or just resumed, no fetch is in flight on the reader's consumer: it asks, and so wakes
        # its broker thread, which a resumed partition waits for (~1 s otherwise, measured on noida-db)
        asking = self._consumer if self._paused or not self._woken else self._offsets_client()
        self._woken = True
        try:
            if monotonic() >= self._partitions_due and self._added_partitions(asking, deadline):
                return True
            for tp in self._consumer.position(self._consumer.assignment()):
                left = deadline - monotonic()
                if left <= 0:
                    return True
                low, end = asking.get_watermark_offsets(TopicPartition(self.topic, tp.partition), timeout=left,
                                                        cached=False)
                if end > (tp.offset if tp.offset >= 0 else low):  # nothing read yet: from the beginning
                    return True
                if end < tp.offset and self._probing(tp.partition, tp.offset):
                    return True
        except KafkaException:
            return True
        return False

    def _added_partitions(self, asking: Any, deadline: float) -> bool:
        """Whether the topic has partitions this reader did not read (added since it started): read from their start.

        Their events are new unless the group committed offsets for them (another reader of the group)."""
        from confluent_kafka import OFFSET_BEGINNING, TopicPartition

        self._partitions_due = monotonic() + _PARTITIONS_CHECK_S
        metadata = asking.list_topics(self.topic, timeout=max(deadline - monotonic(), _LEAST_ASK_S)).topics[self.topic]
        added = sorted(set(metadata.partitions) - set(self._next)) if metadata.error is None else []
        if not added:
            return False
        committed = self._consumer.committed([TopicPartition(self.topic, p) for p in added],
                                             timeout=max(deadline - monotonic(), _LEAST_ASK_S))
        for tp in committed:
            self._resume_at[tp.partition], self._next[tp.partition] = max(tp.offset, 0), 0
        self._consumer.incremental_assign([TopicPartition(self.topic, p, OFFSET_BEGINNING) for p in added])
        log.info("%s has %d partitions now, %d more than this reader read: reading them from their start",
                 self.topic, len(metadata.partitions), len(added))
        return True

    def _probing(self, partition: int, position: int) -> bool:
        """Whether to fetch a partition whose end offset is below the reader's `position`: it may have started over.

        A fetch asks the broker, which answers `offset out of range` if so, and the consumer reads the
        partition from its start again (`poll` tells). For `_PROBE_S` at a position, not for ever: Tansu
        reports an end below a batch's last record, and its fetches come back empty."""
        at, since = self._probes.get(partition, (-1, 0.0))
        if at != position:
            self._probes[partition] = (position, monotonic())
            return True
        return monotonic() - since < _PROBE_S

    def _at_end(self, partition: int, end: int) -> None:
        """A partition read to its `end`: one that ends below the group's offset started over: read it again."""
        from confluent_kafka import OFFSET_BEGINNING, TopicPartition

        if self._next[partition] < self._resume_at[partition] and end < self._resume_at[partition]:
            self._started_over(partition, 0, f"it ends at offset {end}, below the {self._resume_at[partition]} "
                                             "the group committed")
            self._consumer.seek(TopicPartition(self.topic, partition, OFFSET_BEGINNING))

    def _started_over(self, partition: int, offset: int, why: str) -> None:
        """Hand a partition that started over back as new from `offset`, with a warning; the stories folded stay.

        Started over: deleted and created again, or a broker back without its data."""
        log.warning("%s[%d] started over (%s: deleted and created again, or a broker back without its data): its "
                    "events from offset %d on are handed back as new; the stories folded before stay (a new "
                    "ClusterReader has the topic's alone)", self.topic, partition, why, offset)
        self._resume_at[partition] = offset
        self._next[partition] = offset
        self._seen.pop(partition, None)  # its events are new again
        self._recommit.add(partition)  # the group's offset lies past the partition's records: `commit` lowers it

    def _offsets_client(self) -> Any:
        """A client of its own, assigned nothing, to ask end offsets while the reader fetches (made on first use)."""
        if self._ends_client is None:
            from confluent_kafka import Consumer

            self._ends_client = Consumer({**self._client, "group.id": f"{self._client['group.id']}.offsets"})
        return self._ends_client

    def commit(self) -> None:
        """Store how far the stories go (the group's offsets); a restart hands back only what follows."""
        from confluent_kafka import TopicPartition

        ahead = [TopicPartition(self.topic, p, offset) for p, offset in self._next.items()
                 if offset > self._resume_at[p] or p in self._recommit]
        if ahead:
            self._consumer.commit(offsets=ahead, asynchronous=False)
            for tp in ahead:
                self._resume_at[tp.partition] = tp.offset
            self._recommit.clear()

    def close(self) -> None:
        """Close the reader's Kafka consumer and its offsets client."""
        self._consumer.close()
        if self._ends_client is not None:
            self._ends_client.close()


def read_topic_stories(bootstrap_servers: str, topic: str = "pages.cluster_view", timeout_s: float = 30.0,
                       **client: Any) -> Stories:
    """The current stories of a topic, read to its end once (no group offsets are kept)."""
    from confluent_kafka import Consumer

    def failed(problem: str) -> Exception:
        return TimeoutError(f"{problem}: check that the broker is up and the topic exists")

    consumer = Consumer({"bootstrap.servers": bootstrap_servers, "group.id": "streamdedup-clusters",
                         "enable.auto.commit": False, "isolation.level": "read_committed",
                         "enable.partition.eof": True, **client})
    stories = Stories()
    try:
        metadata = consumer.list_topics(topic, timeout=timeout_s).topics[topic]
        if metadata.error is not None:
            raise ValueError(f"cannot read topic {topic!r}: {metadata.error.str()}: {_MISSING_VIEW}")
        for message in read_to_end(consumer, topic, metadata.partitions, timeout_s, failed):
            if (event := event_of(message)) is not None:
                stories.apply(event)
    finally:
        consumer.close()
    return stories


def event_of(message: Any) -> dict[str, Any] | None:
    """A cluster view (or `pages.clusters`) message's event; None for a tombstone.

    Raises ValueError, in one line naming the message and the topics to give, for a message that is
    no cluster event (a reader pointed at the pages or a verdict topic)."""
    value = message.value()
    if value is None:
        return None
    try:
        event = orjson.loads(value)
    except orjson.JSONDecodeError as err:
        problem = f"not JSON ({err})"
    else:
        if isinstance(event, dict) and "page_id" in event and "cluster_id" in event:
            return event
        problem = "a JSON value without page_id and cluster_id"
    raise ValueError(f"{message.topic()}[{message.partition()}]@{message.offset()} is no cluster event ({problem}): "
                     f"give the cluster view topic (default pages.cluster_view, STREAMDEDUP_TOPIC_CLUSTER_VIEW) "
                     "or the cluster events' (pages.clusters)")
