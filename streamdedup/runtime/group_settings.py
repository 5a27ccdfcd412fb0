"""The group's verdict settings, recorded in Kafka, so a worker started with other ones is refused.

The settings that turn compared signatures into verdicts (`DetectorConfig.verdict_settings`:
policies, retention, clock skew) are recorded in no store, and two workers of one group that judge
under different ones would give a page one verdict or another depending on which worker owns its
partitions. The group records them in a small compacted topic (`Topics.settings`, one partition):
per group, the verdict id and the settings in words. At start, before it joins the group, a worker
reads the topic to its end (`agree_on_settings`): no record for its group, it writes its own and
reads again; a record, and the worker's verdict id differs from the group's, it refuses to start
(`GroupSettingsDiffer`, one line: what differs and the fix). The record also names the group's
topology, and a worker of the other one is refused likewise (`check_topology`): a `local` worker in
a `global` group judged its partitions' pages against its own stores only, so copies across
partitions stopped being found. A record written by 0.14.0 or later names its topology; one of 0.12.0 to
0.13.x tells it by its internal topics (the global topology's, none for local); one of 0.11.0 or earlier
tells nothing, and its topology is not checked (`GroupRecord.topology` "").
The Faust app (`streamdedup faust`) takes part as a topology of its own, `faust`: a worker and a Faust
app on one group, or on the same pages and outputs, refuse whichever starts second (`mode_clash`).

The group's record is the one with the highest generation, ties going to the first in offset
order: two workers that start at once both write generation 1, and both agree the first one
written is the group's (the second then refuses). `--adopt-settings` writes the worker's settings
as the next generation: a deliberate change, which every worker still running the old ones learns
when it receives an index request from a worker with the new ones (`index_stage.check_judged_with`,
which re-reads the record through `GroupRecordCache`).

Records are keyed by group, generation and verdict id, not by group alone: compaction keeps only
the last record of a key, and with one key per group it would keep the loser of a race (written
second) instead of the winner, and change the group's settings after the fact. One record per
generation and id is a few hundred bytes for each change of a group's settings.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass

import orjson
from confluent_kafka import Consumer, ConsumerGroupState, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from streamdedup.config import DetectorConfig, verdict_identity
from streamdedup.record.topic_end import read_to_end
from streamdedup.runtime.errors import WorkerStopped
from streamdedup.runtime.settings import WorkerSettings

log = logging.getLogger(__name__)

# the command-line flag of each verdict setting, to name the fix; the others are set in the --config file only
FLAGS = {"policy": "--policy", "same_site_policy": "--same-site-policy", "retention_ms": "--retention",
         "max_clock_skew_ms": "--max-clock-skew", "max_new_share": "--max-new-share"}


FAUST = "faust"  # the topology a Faust app's record names (`streamdedup faust`)


class GroupSettingsDiffer(WorkerStopped):
    """This worker's verdict settings are not its group's (recorded in `Topics.settings`)."""


@dataclass(frozen=True)
class GroupRecord:
    """One record of the settings topic: a group's verdict settings from `generation` on."""

    group: str
    generation: int
    identity: bytes  # `config.verdict_identity` of `settings`
    settings: Mapping[str, str]
    written_by: str  # the worker id that wrote it
    offset: int = -1  # its offset in the settings topic (-1: not written yet)
    internal: tuple[str, ...] = ()  # the group's internal topics (global topology), which no other group may use
    reads: str = ""  # the pages topic it reads ("": a record written before this was kept)
    writes: tuple[str, ...] = ()  # the topics its verdicts go to
    topology: str = ""  # the group's topology ("": a record of 0.11.0 or earlier, which does not tell)

    def key(self) -> bytes:
        """The record's key on the settings topic: group, generation and verdict id."""
        return f"{self.group}\x00{self.generation}\x00{self.identity.hex()}".encode()

    def encode(self) -> bytes:
        """The record's JSON value on the settings topic."""
        return orjson.dumps({"group": self.group, "generation": self.generation, "verdict_id": self.identity.hex(),
                             "settings": dict(self.settings), "written_by": self.written_by,
                             "internal_topics": list(self.internal), "reads": self.reads,
                             "writes": list(self.writes), "topology": self.topology})

    @classmethod
    def decode(cls, data: bytes, offset: int) -> GroupRecord | None:
        """The record, or None for one this version cannot read (logged, skipped)."""
        try:
            value = orjson.loads(data)
            return cls(str(value["group"]), int(value["generation"]), bytes.fromhex(value["verdict_id"]),
                       {str(k): str(v) for k, v in value["settings"].items()}, str(value["written_by"]), offset,
                       tuple(str(name) for name in value.get("internal_topics", ())), str(value.get("reads", "")),
                       tuple(str(name) for name in value.get("writes", ())), recorded_topology(value))
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError):
            log.warning("settings topic, offset %d: not a group settings record, skipped", offset)
            return None

    def described(self) -> str:
        """The settings as one line, name=value, sorted."""
        return ", ".join(f"{key}={value}" for key, value in sorted(self.settings.items()))


def recorded_topology(value: Mapping[str, object]) -> str:
    """The topology a decoded record names; "" if it cannot tell.

    Its own field since 0.14.0. A record of 0.12.0 to 0.13.x has none, but lists the group's internal topics:
    the global topology's (`internal_topics`), none for local. One of 0.11.0 or earlier lists neither: its
    topology is unknown, and accepted (the default was `global` then too, but a group may have run `local`
    through STREAMDEDUP_TOPOLOGY: read as `global`, every worker of such a group would refuse after an upgrade)."""
    if "topology" in value:
        return str(value["topology"])
    if "internal_topics" in value:
        return "global" if value["internal_topics"] else "local"
    return ""


def current_record(records: list[GroupRecord]) -> GroupRecord | None:
    """The group's settings among its records (in offset order).

    The highest generation, the first written of that generation."""
    best: GroupRecord | None = None
    for record in records:
        if best is None or record.generation > best.generation:
            best = record
    return best


def read_group_record(settings: WorkerSettings, timeout_s: float = 15.0) -> GroupRecord | None:
    """The group's current record in the settings topic, read to its end; None if it has none."""
    return read_group_records(settings, timeout_s).get(settings.group_id)


def read_group_records(settings: WorkerSettings, timeout_s: float = 15.0) -> dict[str, GroupRecord]:
    """Every group's current record in the settings topic, read to its end."""
    topic = settings.topics.settings
    consumer = Consumer(settings.client(**{"group.id": f"streamdedup-settings-{uuid.uuid4().hex[:8]}",
                                           "enable.auto.commit": False, "enable.partition.eof": True,
                                           "isolation.level": "read_committed"}))
    records: dict[str, list[GroupRecord]] = {}

    def failed(problem: str) -> Exception:
        return WorkerStopped(f"the settings topic {problem}: check the broker and restart the worker")

    try:
        _, end = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=timeout_s)
        if end <= 0:
            return {}
        for message in read_to_end(consumer, topic, [0], timeout_s, failed):  # no group join
            record = GroupRecord.decode(message.value() or b"", message.offset() or 0)
            if record is not None:
                records.setdefault(record.group, []).append(record)
    finally:
        consumer.close()
    return {group: current for group, of_group in records.items() if (current := current_record(of_group))}


def group_has_members(settings: WorkerSettings, group: str, timeout_s: float = 10.0) -> bool:
    """Whether a consumer group has members now (True if the broker cannot say: refusing is the safe side).

    By its members, or by its state where it lists none: Tansu describes a group whose consumer holds
    partitions as `STABLE` with no member, and only an `EMPTY` or `DEAD` group has none for sure."""
    try:
        admin = AdminClient(settings.client())
        [described] = admin.describe_consumer_groups([group], request_timeout=timeout_s).values()
        result = described.result(timeout=timeout_s)
        return bool(result.members) or result.state not in (ConsumerGroupState.EMPTY, ConsumerGroupState.DEAD)
    except Exception as err:  # noqa: BLE001 - any failure to describe: assume it runs
        log.debug("describing group %s failed: %s", group, err)
        return True


def internal_topics(settings: WorkerSettings) -> tuple[str, ...]:
    """The internal topics a worker of this group reads and writes: the global topology's, none for local."""
    return settings.topics.internal if settings.topology == "global" else ()


def mode(topology: str) -> str:
    """What runs a group of that topology, in words: the Faust app or workers of a topology."""
    return "Faust apps (streamdedup faust)" if topology == FAUST else f"streamdedup workers ({topology} topology)"


def mode_clash(settings: WorkerSettings, group: str, record: GroupRecord, outputs: list[str]) -> str | None:
    """The refusal of a worker next to a Faust app, or of a Faust app next to a worker; None if both are one mode.

    `outputs`: the topics both would write (none: both are in one group). Each would judge every page again and
    give it a second output; in one consumer group the two clients broke each other (a worker died in librdkafka's
    `rd_slice_init_full` assertion, the group stuck rebalancing)."""
    if not record.topology or (record.topology == FAUST) == (settings.topology == FAUST):
        return None
    where, harm = ((f"judge {record.reads} into {', '.join(outputs)}", "on the same topics would give every page a "
                    "second output") if outputs else
                   ("use this group", "in one group would break it (neither judges) or judge every page twice"))
    return (f"{mode(record.topology)} already {where} (group {group!r}, written by {record.written_by!r}): "
            f"{mode(settings.topology)} {harm}. Run one mode on "
            "these topics, or give this one topics of its own (STREAMDEDUP_TOPIC_PAGES and _UNIQUE, _DUPLICATES, "
            "_REJECTED, _CLUSTERS, _VERDICTS, _CLUSTER_VIEW) and its own --group-id")


def check_topics(settings: WorkerSettings, records: Mapping[str, GroupRecord]) -> None:
    """Refuse to start on topics another group uses.

    Those are its internal topics (each group would read the other's pages, a stopped group's too), or, while it has
    members, its input and outputs (each page would come out twice). A group with no member now (stopped: a
    migration to a new group id and new internal topics) is only warned of there; on brokers that keep a static
    member that left (noida-db, Tansu) a stopped group keeps its members."""
    mine = set(internal_topics(settings))
    for group, record in sorted(records.items()):
        if group == settings.group_id:
            continue
        same_input = record.reads == settings.topics.pages
        both = sorted(set(settings.topics.outputs) & set(record.writes)) if same_input else []
        if both and not group_has_members(settings, group):  # stopped for good (a migration): said, not refused
            log.warning("group %r, which has no member now, judged %s into %s: if it starts again, each page will "
                        "come out twice there", group, record.reads, ", ".join(both))
            both = []
        clash = mode_clash(settings, group, record, both) if both else None
        if clash:
            raise WorkerStopped(clash)
        if both:
            raise WorkerStopped(
                f"group {group!r} (written by {record.written_by!r}) already judges {record.reads} into "
                f"{', '.join(both)}: a second group would give every page a second output there. Run this worker as "
                f"group {group!r}, or give group {settings.group_id!r} outputs of its own ([worker.topics] or "
                "STREAMDEDUP_TOPIC_UNIQUE, _DUPLICATES, _REJECTED, _CLUSTERS, _VERDICTS, _CLUSTER_VIEW)")
        shared = sorted(mine & set(record.internal))  # its records there would be judged again, even if it stopped
        if shared:
            index, parts = settings.topics.index, settings.topics.parts
            raise WorkerStopped(
                f"the topics {', '.join(shared)} are the internal topics of group {group!r} (written by "
                f"{record.written_by!r}): a second group on them would read the first one's pages and double its "
                f"outputs. Give group {settings.group_id!r} its own (STREAMDEDUP_TOPIC_INDEX={index}."
                f"{settings.group_id} STREAMDEDUP_TOPIC_PARTS={parts}.{settings.group_id}, or [worker.topics] "
                f"index and parts), or run it as group {group!r}")


def check_topology(settings: WorkerSettings, group: GroupRecord) -> None:
    """Refuse to start in another topology than the group's (`GroupSettingsDiffer`, one line naming the fix).

    A worker of the other topology would take a share of the input partitions and judge their pages apart from
    the rest: a `local` worker in a `global` group finds no copy on another partition (an operator review: 0 of
    10 copies across partitions found, 10 of 10 with two global workers). A record that names no topology
    (0.11.0 or earlier) is not checked. `--adopt-settings` does not change it: the stores of one topology are
    not the other's."""
    if not group.topology or group.topology == settings.topology:
        return
    clash = mode_clash(settings, settings.group_id, group, [])
    if clash:
        raise GroupSettingsDiffer(clash)
    raise GroupSettingsDiffer(
        f"this worker runs the {settings.topology} topology, group {settings.group_id!r} the {group.topology} one "
        f"(written by {group.written_by!r}): in one group a worker of the other topology would not find copies "
        f"across the group's partitions. Start it with --topology {group.topology} (STREAMDEDUP_TOPOLOGY="
        f"{group.topology}, or topology in the config file's [worker] table), as the group's workers run, or, to "
        "change the topology, run every worker as a new group (--group-id)")


def write_group_record(settings: WorkerSettings, record: GroupRecord, timeout_s: float = 15.0) -> None:
    """Append `record` to the settings topic, acknowledged by every in-sync replica."""
    producer = Producer(settings.client(**{"enable.idempotence": True, "acks": "all"}))
    failures: list[str] = []
    producer.produce(settings.topics.settings, record.encode(), record.key(), partition=0,
                     on_delivery=lambda err, _: failures.append(str(err)) if err is not None else None)
    left = producer.flush(timeout_s)
    if left or failures:
        raise WorkerStopped(f"writing the group's settings to {settings.topics.settings!r} failed "
                            f"({failures[0] if failures else 'not acknowledged in time'}): restart the worker")


def differences(mine: Mapping[str, str], group: Mapping[str, str]) -> list[str]:
    """The settings that differ, one phrase each."""
    return [f"{key} {group.get(key)!r} for the group, {mine.get(key)!r} here"
            for key in sorted(set(mine) | set(group)) if mine.get(key) != group.get(key)]


def duration(ms: int) -> str:
    """`ms` as `config.parse_duration` reads it, in the largest unit that holds it whole."""
    for unit, unit_ms in (("w", 604_800_000), ("d", 86_400_000), ("h", 3_600_000), ("m", 60_000)):
        if ms and ms % unit_ms == 0:
            return f"{ms // unit_ms}{unit}"
    return f"{ms / 1000:g}s"


def as_flags(settings: Mapping[str, str]) -> str:
    """The flags that give a worker these verdict settings, then those only the --config file sets.

    `--policy 'exact' --retention 30d; in the --config file, max_new_pairs = 8`."""
    def flag(key: str, text: str) -> str:
        if key.endswith("_ms"):
            return f"no {FLAGS[key]}" if text == "None" else f"{FLAGS[key]} {duration(int(text))}"
        return f"{FLAGS[key]} {text!r}"
    # "rules" is the engine's rules version (`verdict.engine.RULES_VERSION`): a version, not a flag
    shown = sorted((key, text) for key, text in settings.items() if key != "rules")
    flags = " ".join(flag(key, text) for key, text in shown if key in FLAGS)
    in_file = " and ".join(f"{key} = {text}" for key, text in shown if key not in FLAGS)
    return "; ".join(part for part in (flags, in_file and f"in the --config file, {in_file}") if part)


def refusal(settings: WorkerSettings, group: GroupRecord, mine: Mapping[str, str], identity: bytes) -> str:
    """One line: what differs between this worker's verdict settings and its group's, and the fix."""
    if mine.get("rules") != group.settings.get("rules"):
        return (f"this worker's verdict rules (version {mine.get('rules')}) are not those of group "
                f"{settings.group_id!r} (version {group.settings.get('rules')}, written by {group.written_by!r}): run "
                f"one streamdedup version in the group, or restart every worker of group {settings.group_id!r} on this "
                "version with --adopt-settings (STREAMDEDUP_ADOPT_SETTINGS=1) on one of them")
    return (f"this worker's verdict settings (verdict id {identity.hex()}) are not those of group "
            f"{settings.group_id!r} (verdict id {group.identity.hex()}, generation {group.generation}, written by "
            f"{group.written_by!r}): {'; '.join(differences(mine, group.settings))}. Give this worker the group's "
            f"settings ({as_flags(group.settings)}), or restart every worker of group {settings.group_id!r} with "
            "the new settings and --adopt-settings (STREAMDEDUP_ADOPT_SETTINGS=1) on one of them")


def agree_on_settings(settings: WorkerSettings, config: DetectorConfig) -> GroupRecord:
    """At start: the group's record, written first if the group has none.

    With `settings.adopt_settings`, this worker's settings are adopted as the group's record instead. Raises
    `GroupSettingsDiffer` if the record is not this worker's."""
    mine = config.verdict_settings()
    identity = verdict_identity(mine)
    records = read_group_records(settings)
    check_topics(settings, records)
    group = records.get(settings.group_id)
    if group is not None:
        check_topology(settings, group)
    if group is None or (settings.adopt_settings and group.identity != identity):
        generation = 1 if group is None else group.generation + 1
        if group is not None:
            log.warning("adopting this worker's verdict settings (verdict id %s: %s) for group %r, generation %d, "
                        "instead of verdict id %s (%s): workers with the old ones stop as soon as they receive an "
                        "index request from one with the new", identity.hex(), ", ".join(
                            f"{k}={v}" for k, v in sorted(mine.items())), settings.group_id, generation,
                        group.identity.hex(), group.described())
        write_group_record(settings, GroupRecord(settings.group_id, generation, identity, mine, settings.worker_id,
                                                 internal=internal_topics(settings), reads=settings.topics.pages,
                                                 writes=settings.topics.outputs, topology=settings.topology))
        group = read_group_record(settings)
        if group is None:
            raise WorkerStopped(f"the group's settings written to {settings.topics.settings!r} could not be read "
                                "back: check the topic (cleanup.policy=compact, not delete) and restart the worker")
    check_topology(settings, group)  # a worker of the other topology may have written first
    if group.identity != identity:
        raise GroupSettingsDiffer(refusal(settings, group, mine, identity))
    if not group.topology:
        log.info("group %r's settings were recorded by 0.11.0 or earlier, without its topology: not checked",
                 settings.group_id)
    log.info("group %r judges with verdict id %s (generation %d, written by %r)", settings.group_id,
             group.identity.hex(), group.generation, group.written_by)
    return group


class GroupRecordCache:
    """The group's record for a running worker, read again at most every `max_age_s` seconds.

    It is read again only when asked: on an index request under another verdict id."""

    def __init__(self, settings: WorkerSettings, record: GroupRecord | None = None, max_age_s: float = 2.0) -> None:
        self.settings = settings
        self.record = record
        self.max_age_s = max_age_s
        self.read_at = float("-inf")

    def current(self) -> GroupRecord | None:
        """The group's record, read again from the settings topic if the last read is older than `max_age_s`."""
        now = time.monotonic()
        if now - self.read_at >= self.max_age_s:
            self.record = read_group_record(self.settings)
            self.read_at = now
        return self.record
