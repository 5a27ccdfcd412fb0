"""The news-feed view: "story -> its pages", folded from cluster events, kept current, resumable.

Every mode writes the same two light outputs next to the full records (no page body in either):
- verdict-only lines (`verdicts.jsonl`, the `pages.verdicts` topic): one per input record, with
  `id`, `url`, `fetch_time`, `duplicate_of_url` (file mode, when known), the input's Kafka
  `headers` (Kafka only; over 64 KiB, `headers_omitted`: `record.passed`) and the whole `dedup`
  object (status, duplicate_of, cluster_id, similarity, method, reason...: whatever it holds).
- cluster-view events (the compacted `pages.cluster_view` topic, key = page id): the page's
  `created` or `joined` event with its url, fetch time, status, duplicate_of and, if it bridged
  clusters, `merged`; a `late_match` (key `<page id> late <earlier id>`) when the global topology
  finds a match after the later page's verdict was out. File mode folds the same events into
  `clusters.jsonl` (one line per current story).

`Stories` folds such events (and the `pages.clusters` events, which carry the same types) into
connected components. The fold does not depend on the order the events arrive in: a story is
named by its earliest cluster (by its page's fetch time), names included.
`ClusterReader` keeps `Stories` current from a topic and resumes from a consumer group's committed
offsets; `read_folder` reads a file-mode output folder.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from time import monotonic, sleep
from typing import Any

import orjson

from streamdedup.logs import kafka_logger
from streamdedup.record.page import FIELD_ALIASES, parse_timestamp
from streamdedup.record.passed import bounded_headers
from streamdedup.record.topic_end import read_to_end

log = logging.getLogger(__name__)

CLUSTERS_FILE = "clusters.jsonl"
VERDICTS_FILE = "verdicts.jsonl"
MEMBER_FIELDS = ("id", "url", "fetch_time", "status", "duplicate_of")
Event = Mapping[str, Any]


def when(fetch_time: Any) -> tuple[int, float, str]:
    """A fetch time as it was given, as a key that orders instants, whatever their form.

    ISO-8601 in any zone, WARC's 14 digits, epoch s or ms (the forms the reader accepts) by their
    instant; before: by their text, so 1704067200 came before any ISO date, 20240102000000 after
    2024-01-03, and +05:00 after the Z of a later instant. None first, as before; a time not
    read as any of them last, by its text."""
    if fetch_time is None:
        return (0, 0.0, "")
    try:
        return (1, parse_timestamp(fetch_time).timestamp(), "")
    except (ValueError, TypeError, OverflowError, OSError):
        return (2, 0.0, str(fetch_time))


def _first(record: Mapping[str, Any], field: str) -> Any:
    return next((record[name] for name in FIELD_ALIASES[field] if record.get(name) is not None), None)


def page_fields(record: Mapping[str, Any]) -> tuple[Any, Any]:
    """The record's url and fetch time as it gave them (by the field names the reader accepts)."""
    return _first(record, "url"), _first(record, "fetched_at")


def verdict_line(record: Mapping[str, Any], dedup: Mapping[str, Any], headers: Sequence[tuple[str, bytes | None]]
                 | None = None, duplicate_of_url: str | None = None, headers_omitted: int = 0) -> dict[str, Any]:
    """A record's verdict without its body.

    Id, url, fetch time, the `dedup` object whole (and the duplicate_of page's url if known, the
    input's Kafka headers if any: over `record.passed.PASSED_BYTES` in all, `headers_omitted`, their
    size, instead; `headers_omitted` given: an earlier step left them out)."""
    url, fetched = page_fields(record)
    line: dict[str, Any] = {"id": dedup.get("id", _first(record, "id")), "url": url, "fetch_time": fetched}
    if duplicate_of_url is not None:
        line["duplicate_of_url"] = duplicate_of_url
    headers, headers_omitted = bounded_headers(headers, headers_omitted)
    if headers:
        line["headers"] = [[name, None if value is None else value.decode("utf-8", "replace")]
                           for name, value in headers]
    if headers_omitted:
        line["headers_omitted"] = headers_omitted
    line["dedup"] = dict(dedup)
    return line


def view_event(dedup: Mapping[str, Any], url: Any, fetch_time: Any) -> dict[str, Any]:
    """A judged page's cluster-view event.

    `created` (it started its cluster) or `joined`, with its url, fetch time, status and the
    clusters it bridged (`merged`)."""
    page_id, cluster_id = dedup["id"], dedup["cluster_id"]
    event: dict[str, Any] = {"type": "created" if cluster_id == page_id else "joined", "page_id": page_id,
                             "cluster_id": cluster_id, "url": url, "fetch_time": fetch_time,
                             "status": dedup["status"], "duplicate_of": dedup.get("duplicate_of"),
                             "similarity": dedup.get("similarity"), "method": dedup.get("method")}
    if dedup.get("merged_clusters"):
        event["merged"] = list(dedup["merged_clusters"])
    for name in ("supersedes", "related_to"):  # the directional verdict's links, passed on as they are
        if dedup.get(name):
            event[name] = dedup[name]
    return event


def view_key(event: Event) -> bytes:
    """The compacted topic's key: the page id (a late match: one key per pair, kept beside it)."""
    key = event["page_id"] if event["type"] != "late_match" else f"{event['page_id']} late {event['duplicate_of']}"
    return str(key).encode("utf-8", "surrogatepass")


class Stories:
    """Story -> pages, folded from cluster events (`apply`) or verdicts (`add`), in any order.

    A story is a connected component of pages (a page, the cluster it joined, the page it
    duplicates, the clusters it merged, its late matches). It is named by its earliest cluster:
    the cluster id whose page has the smallest fetch time (then id; ids without a known page
    last), which is the verdicts' `cluster_id` for a story no merge or late match made. The same
    events in any order give the same stories, names included."""

    def __init__(self) -> None:
        self.pages: dict[str, dict[str, Any]] = {}  # page id -> its member fields
        self._names: dict[str, set[str]] = {}  # page id -> the earlier pages its verdict named (their order)
        self._parent: dict[str, str] = {}
        self._name: dict[str, tuple[int, tuple[int, float, str], str]] = {}  # root -> its earliest cluster's rank
        self._cluster_ids: set[str] = set()

    def _root(self, item: str) -> str:
        parent = self._parent.setdefault(item, item)
        while parent != self._parent.setdefault(parent, parent):
            self._parent[item] = parent = self._parent[parent]
        return parent

    def _rank(self, cluster_id: str) -> tuple[int, tuple[int, float, str], str]:
        member = self.pages.get(cluster_id)
        fetched = None if member is None else member["fetch_time"]
        return (1, when(None), cluster_id) if fetched is None else (0, when(fetched), cluster_id)

    def _cluster(self, cluster_id: str) -> None:
        root = self._root(cluster_id)
        rank = self._rank(cluster_id)
        if root not in self._name or rank < self._name[root]:
            self._name[root] = rank

    def _join(self, a: str, b: str) -> None:
        root_a, root_b = self._root(a), self._root(b)
        if root_a == root_b:
            return
        self._parent[root_b] = root_a
        names = [n for n in (self._name.pop(root_a, None), self._name.pop(root_b, None)) if n is not None]
        if names:
            self._name[root_a] = min(names)

    def story_of(self, page_id: str) -> str:
        """The story (its earliest cluster's id) `page_id` is in."""
        root = self._root(page_id)
        return self._name[root][2] if root in self._name else root

    def apply(self, event: Event) -> str:
        """Fold one event (created, joined, merged, late_match); returns the page's story."""
        page, cluster = event["page_id"], event["cluster_id"]
        if event.get("type") in ("created", "joined"):
            member = self.pages.setdefault(page, dict.fromkeys(MEMBER_FIELDS))
            member["id"] = page
            for name in MEMBER_FIELDS[1:]:
                if event.get(name) is not None:
                    member[name] = event[name]
            if member["fetch_time"] is None and event.get("fetched_at") is not None:
                member["fetch_time"] = event["fetched_at"]  # a `pages.clusters` event names it so
            if member["status"] is None:  # a `pages.clusters` event has none: a page kept names no duplicate_of
                member["status"] = "duplicate" if event.get("duplicate_of") else "unique"
        if event.get("type") != "late_match":  # the earlier pages its verdict names, the clusters it bridged too
            named = {event.get("duplicate_of"), *event.get("supersedes", ()), *event.get("related_to", ()),
                     *event.get("merged", ())}
            named.discard(None)
            if named:
                self._names.setdefault(page, set()).update(named)
        self._join(cluster, page)
        for other in (event.get("duplicate_of"), *event.get("merged", ())):
            if other:
                self._join(cluster, other)
        for named in (cluster, *event.get("merged", ())):
            self._cluster_ids.add(named)
            self._cluster(named)
        if page in self._cluster_ids:  # its fetch time, which ranks its cluster, may come only now
            self._cluster(page)
        return self.story_of(page)

    def add(self, dedup: Mapping[str, Any], url: Any, fetch_time: Any) -> None:
        """Fold a unique or duplicate page's verdict."""
        self.apply(view_event(dedup, url, fetch_time))

    def url_of(self, page_id: str | None) -> str | None:
        member = self.pages.get(page_id) if page_id is not None else None
        return None if member is None else member["url"]

    def stories(self) -> list[dict[str, Any]]:
        """The current stories, by name, each with its pages in the order they were fetched.

        By fetch time; pages of one fetch time after every earlier page their verdicts name
        (duplicate_of, supersedes, related_to, the clusters they merged), which is the order they were
        judged in; then by id.
        A page without a fetch time (a polled live page) comes after the pages its verdict names."""
        groups: dict[str, list[dict[str, Any]]] = {}
        for page_id, member in self.pages.items():
            groups.setdefault(self.story_of(page_id), []).append(member)
        place = self._places()
        return [{"cluster_id": name, "size": len(members),
                 "pages": sorted(members, key=lambda m: (*place[m["id"]], m["id"]))}
                for name, members in sorted(groups.items())]

    def _places(self) -> dict[str, tuple[tuple[int, float, str], int]]:
        """Each page's place in its story: its fetch time, then its longest chain of named pages.

        The chain: the earlier pages its verdict named, in pages this view holds. A page without
        a fetch time takes the latest of the pages it names (a polled page after the fetch it
        repeats or revises), so it comes after them however they are dated. Walked in page id order
        (the names of a page sorted too), so named pages that name each other in a cycle (verdicts
        of several workers) place the same whatever order the events came in."""
        depth: dict[str, int] = {}
        time: dict[str, tuple[int, float, str]] = {}
        for start in sorted(self.pages):
            if start in depth:
                continue
            stack, open_ = [start], {start}
            while stack:  # depth-first without recursion: a live page polled 10,000 times is one chain
                page = stack[-1]
                names = sorted(n for n in self._names.get(page, ()) if n in self.pages)
                todo = [n for n in names if n not in depth and n not in open_]
                if todo:
                    stack.extend(todo)
                    open_.update(todo)
                    continue
                depth[page] = 1 + max((depth.get(n, -1) for n in names), default=-1)
                fetched = self.pages[page]["fetch_time"]
                time[page] = when(fetched) if fetched is not None else max(
                    (time[n] for n in names if n in time), default=when(None))
                stack.pop()
                open_.discard(page)
        return {page: (time[page], depth[page]) for page in depth}

    def __len__(self) -> int:
        return len({self._root(page_id) for page_id in self.pages})


def complete_lines(path: Path, length: int | None = None) -> Iterator[bytes]:
    """The whole lines of a JSON-lines file, a partial last line left out.

    Only its first `length` bytes are read, if given. A partial last line is a write in progress."""
    if not path.exists():
        return
    with open(path, "rb") as handle:
        remaining = length
        for line in handle:
            if remaining is not None:
                if remaining <= 0:
                    break
                remaining -= len(line)
            if line.endswith(b"\n"):
                yield line


def fold_verdicts(lines: Iterable[bytes], stories: Stories | None = None) -> Stories:
    """Fold verdict-only lines (or full output lines: record + dedup) into stories."""
    stories = stories if stories is not None else Stories()
    for line in lines:
        data = orjson.loads(line)
        dedup = data["dedup"]
        if dedup["status"] == "rejected":
            continue
        stories.add(dedup, *page_fields(data))  # a verdict line names them url and fetch_time
    return stories


def read_folder(out_dir: str | Path) -> Stories:
    """The stories of a file-mode output folder, from its verdicts.jsonl.

    The outputs of a version before verdicts.jsonl are read from unique.jsonl and duplicates.jsonl instead.
    Raises FileNotFoundError, naming the folder, where it holds none of them (no dedup run's folder)."""
    out = Path(out_dir)
    if (out / VERDICTS_FILE).exists():
        return fold_verdicts(complete_lines(out / VERDICTS_FILE))
    if not any((out / name).exists() for name in ("unique.jsonl", "duplicates.jsonl")):
        raise FileNotFoundError(f"{out} holds no {VERDICTS_FILE} (nor unique.jsonl, duplicates.jsonl): give the "
                                "--out folder of a streamdedup dedup run")
    stories = Stories()
    for name in ("unique.jsonl", "duplicates.jsonl"):
        fold_verdicts(complete_lines(out / name), stories)
    return stories


def write_stories(path: Path, stories: Stories) -> None:
    """Replace `path` with one line per story, whole (a crash leaves the old file or the new one)."""
    temporary = path.with_name(f".{path.name}.tmp")
    with open(temporary, "wb") as handle:
        for story in stories.stories():
            handle.write(orjson.dumps(story, option=orjson.OPT_APPEND_NEWLINE))
    temporary.replace(path)


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
    below what was read or committed) is handed back again from its start, with a warning.

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


def table(stories: Sequence[Mapping[str, Any]]) -> str:
    """Stories as a plain table: one block a story, a line a page."""
    lines = []
    for story in stories:
        lines.append(f"{story['cluster_id']}  ({story['size']} pages)")
        for member in story["pages"]:
            shown = member["url"] or member["id"]
            lines.append(f"  {member['status'] or '':<9} {member['fetch_time'] or '-':<27} {shown}")
    return "\n".join(lines)
