"""A faust-streaming app that embeds the same detector, for teams that run Faust.

Why not the default runtime: faust's confluent transport is experimental and its exactly-once
mode has open reports of duplicates on rebalance, so this app runs Faust's default (aiokafka)
transport with **at-least-once** delivery and makes re-processing idempotent instead: every
verdict it emits is journaled in the partition's RocksDB store in the same WriteBatch as the
state change, with a digest of the record (`record_identity`), and a message whose offset and
digest match a journal entry (a replay after a crash) re-emits the journaled verdict, byte for
byte, under the same key. Consumers that key by page id therefore see each page once. One
rocksdict store per input partition, like the worker.

A record at a journaled offset with another digest means the topic started over (deleted and
created again, a broker without its data, a new cluster): the app warns once per partition,
drops the old topic's entries from that offset on and judges the record as new. So does a
record below the offset Faust has read of its partition that is not the one journaled there: a
topic created again under the running app, whose records Faust would drop
(`deliver_where_started_over`). With `on_topic_reset` refuse the app stops instead, in one line.

The journal is bounded: a replay starts at the group's committed offset, so entries below it are
removed, keeping at least the last `journal_keep` of the partition (`faust_journal.JournalKeeper`).

A partition's store behind the offset the app starts it at (its state folder lost, or the
partition judged on another instance since) is rebuilt from the pages topic before its first
record is judged, as the worker rebuilds its own (`faust_rebuild`): the verdicts are those of a
run that lost nothing. Meanwhile that partition is paused and its records wait, unacknowledged; the
other partitions' records are judged (`faust_waiting`).

Light outputs, as the worker's: every input also has one line on the verdicts topic
(`clusters.verdict_line`, with the input's Kafka headers) and every judged page one event on the
compacted cluster view (`clusters.view_event`). A line is sent once its page's output is in
Kafka: a page whose output the broker refused for its size has the line of its
`too_large_for_broker` rejection, as the worker writes it. Both are journaled as the rest is (a
replay renders them again from the journaled verdict), so repeats are byte-identical.

Sizes: topics are created as the worker's (`topics.ensure_topics`), the producer compresses with
zstd and takes records up to `MAX_RECORD_BYTES`; an output the broker still refuses for its size
goes again in the worker's next form (`faust_outputs.after_refusal`): a verdict or dead letter that
carried the input's headers whole, without them where they are over 64 KiB; else to the rejected
topic as `too_large_for_broker` (a stub with id, url and size), as the worker sends it. Every
output is awaited before the record counts as done (Faust commits what the agent has taken); an
error that is not the broker's refusal or absence stops the app without committing, rather than
letting Faust restart the agent past the record.

    streamdedup faust --bootstrap-servers 127.0.0.1:9092 --state-dir faust-state
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, NoReturn

from streamdedup.config import DetectorConfig
from streamdedup.detector import Detector
from streamdedup.logs import Repeats
from streamdedup.outputs.record_size import Headers, record_size
from streamdedup.record.rejection import Reason
from streamdedup.runtime.faust_journal import (
    JOURNAL_KEEP,
    JournalKeeper,
    StartedOver,
    journal_name,
    journaled_digest,
    newest_journaled,
    outputs_for,
    refusal,
    stop_refused,
)
from streamdedup.runtime.faust_outputs import (
    PAGE_TARGETS,
    Output,
    after_refusal,
    input_headers,
    is_broker_trouble,
    is_size_refusal,
    is_stub,
    refused_line,
    render,
    too_large_output,
)
from streamdedup.runtime.faust_rebuild import rebuild
from streamdedup.runtime.faust_waiting import KafkaPauser, Rebuilds
from streamdedup.runtime.faust_warm_up import warm_up_kernels
from streamdedup.runtime.record_identity import record_digest
from streamdedup.runtime.settings import WorkerSettings, keep_worker_id
from streamdedup.runtime.topics import COMPRESSION, MAX_MESSAGE_BYTES, MAX_RECORD_BYTES, topic_config

log = logging.getLogger(__name__)

SEND_RETRY_S = (0.5, 1, 2, 5)  # backoff while the broker is away, the last repeated
# the app's consumer group (its Faust app id) when none is given: not the worker's `streamdedup`, so that the two
# never join one group (`group_settings.mode_clash` refuses them on the same topics)
FAUST_GROUP_ID = "streamdedup-faust"
OLD_DEFAULT_GROUP_ID = "streamdedup"  # the default of earlier versions, the worker's
GROUP_ID_FILE = "faust-group-id"  # in the state directory: the default group the app took there
# how often aiokafka asks the topics' metadata, and so how soon the app reads partitions added to its pages topic
# (aiokafka's default: 5 minutes); one small request a period
METADATA_MAX_AGE_S = 10


def default_group_id(state_dir: Path) -> str:
    """The app's group when none is given (--group-id, STREAMDEDUP_GROUP_ID), kept in its state directory.

    `FAUST_GROUP_ID`, except in the state directory of an app of an earlier version (Faust's files there, no
    `GROUP_ID_FILE`): that one keeps its group, the old default, as under a new group it would read its topic again
    from the start (every page past the journal a `duplicate_id`)."""
    path = state_dir / GROUP_ID_FILE
    if path.exists():
        return path.read_text(encoding="utf-8").strip()
    group = OLD_DEFAULT_GROUP_ID if (state_dir / "faust-data").exists() else FAUST_GROUP_ID
    if group == OLD_DEFAULT_GROUP_ID:
        log.warning("this state directory's app ran as group %r, the default of earlier versions and the worker's: "
                    "it keeps it; a worker on the same topics is refused. To move to the new default, start it with "
                    "--group-id %s on a fresh --state", group, FAUST_GROUP_ID)
    state_dir.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    partial.write_text(group + "\n", encoding="utf-8")
    os.replace(partial, path)
    return group


def partitions_started_over(settings: WorkerSettings, group_id: str, timeout: float = 15.0) -> dict[int, int]:
    """The pages topic's partitions that started over since the group committed, with their first offsets.

    Before the app starts: the partitions of the pages topic that started over since the group committed (its committed
    offset is past the partition's end, or the record before it is not the one journaled there), each with its first
    offset, said loudly. Faust would otherwise drop every new record below the old committed offset without a word
    (`create_app` seeks them)."""
    from confluent_kafka import Consumer, TopicPartition

    topic = settings.topics.pages
    consumer = Consumer(settings.client(**{"group.id": group_id, "enable.auto.commit": False,
                                           "auto.offset.reset": "earliest", "enable.partition.eof": True}))
    started_over: dict[int, int] = {}
    try:
        partitions = sorted(consumer.list_topics(topic, timeout=timeout).topics[topic].partitions)
        for tp in consumer.committed([TopicPartition(topic, p) for p in partitions], timeout=timeout):
            committed = tp.offset
            store_path = Path(settings.state_dir) / f"faust-{topic}-{tp.partition}"
            if committed <= 0:  # nothing committed (Tansu drops a deleted topic's offsets): the newest entry
                newest = newest_journaled(store_path, topic, tp.partition)
                if newest is None:
                    continue
                committed = newest + 1
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, tp.partition), timeout=timeout)
            before = record_at(consumer, topic, tp.partition, committed - 1, timeout) if high > low else None
            why = None
            if before is None:
                if committed > high:  # Tansu's high watermark is the last batch's first offset + 1: asked last
                    why = f"the group's committed offset {committed} is past its end ({high})"
            else:
                stored = journaled_digest(store_path, topic, tp.partition, committed - 1)
                if stored is not None and record_digest(before.key(), before.value(), before.timestamp()[1]) != stored:
                    why = f"offset {committed - 1}, last judged, now holds another record"
            if why is not None:
                if settings.on_topic_reset == "refuse":
                    raise StartedOver(refusal(topic, tp.partition, why))
                log.warning("%s partition %d started over (%s: the topic was created again or the broker lost its "
                            "data): reading it again from offset %d", topic, tp.partition, why, low)
                started_over[tp.partition] = low
    finally:
        consumer.close()
    return started_over


def record_at(consumer: Any, topic: str, partition: int, offset: int, timeout: float) -> Any:
    """The record at exactly that offset, or None (out of range, compacted away, at the end)."""
    from confluent_kafka import KafkaError, TopicPartition

    consumer.assign([TopicPartition(topic, partition, offset)])
    try:
        message = consumer.poll(timeout)
        if message is None or message.error() is not None:
            if message is not None and message.error().code() != KafkaError._PARTITION_EOF:
                log.warning("could not read %s[%d]@%d: %s", topic, partition, offset, message.error())
            return None
        return message if message.offset() == offset else None
    finally:
        consumer.unassign()


def seek_at_assignment(app: Any, topic: str, started_over: dict[int, int]) -> None:
    """Make the app's consumer read each assigned partition of `topic` from where it should, past Faust's seek.

    Faust seeks to the committed offsets in `seek_to_committed`. A partition that started over is read from the given
    first offset instead, at its first assignment, not from the group's committed offset of the old topic (the app
    then commits the new positions). A partition without a committed offset (a partition added to the topic, a new
    group) is read from its start, as `consumer_auto_offset_reset` says, at every assignment: a partition added under
    the app had aiokafka's position past its first record, never delivered, in 9 of 13 runs (likely a fetch that
    ended after the rebalance, whose records Faust drops as the old generation's)."""
    pending = dict(started_over)
    new_consumer = app._new_consumer

    def consumer_that_seeks() -> Any:
        consumer = new_consumer()
        seek_to_committed = consumer.seek_to_committed

        async def seek_to_committed_or_start() -> dict:
            offsets = dict(await seek_to_committed())
            for tp in list(offsets):
                if tp.topic == topic and tp.partition in pending:
                    offsets[tp] = pending.pop(tp.partition)
                    await consumer.seek(tp, offsets[tp])
                elif tp.topic == topic and (offsets[tp] or 0) <= 0:  # below the start: aiokafka reads from it
                    await consumer.seek(tp, 0)
            return offsets

        consumer.seek_to_committed = seek_to_committed_or_start
        return consumer

    app._new_consumer = consumer_that_seeks


def let_go_at_revocation(app: Any, topic: str, revoke: Callable[[set[int]], None]) -> None:
    """Make the app's consumer call `revoke` with the partitions of `topic` a rebalance revokes, before Faust waits.

    Faust's revocation waits for every record taken and not acknowledged (`Consumer.wait_empty`), and so, with the
    group, for the rest of a store rebuild and the records waiting for it (`faust_waiting.Rebuilds.revoke` lets them
    go first). Faust's `on_partitions_revoked` signal is sent only after that wait."""
    new_consumer = app._new_consumer

    def consumer_that_lets_go() -> Any:
        consumer = new_consumer()
        on_revoked = consumer.on_partitions_revoked

        async def on_partitions_revoked(revoked: set) -> None:
            revoke({tp.partition for tp in revoked if tp.topic == topic})
            await on_revoked(revoked)

        consumer.on_partitions_revoked = on_partitions_revoked
        return consumer

    app._new_consumer = consumer_that_lets_go


def timestamp_ms(message: Any) -> int | None:
    """A consumed Faust message's timestamp in milliseconds, as journaled."""
    return None if message.timestamp is None else round(message.timestamp * 1000)


def forget_read_offsets(consumer: Any, tp: Any) -> None:
    """Make Faust's consumer track a partition afresh, as after its revocation.

    Faust then delivers its records from wherever aiokafka reads (instead of dropping those below the offset it had
    read) and commits the new topic's offsets (instead of only those past the old committed offset). Its messages
    still in flight belong to the old topic: they are marked acked, so their offsets are never committed."""
    for tracked in (consumer._gap, consumer._acked, consumer._acked_index, consumer._read_offset,
                    consumer._committed_offset):
        tracked.pop(tp, None)
    for message in list(consumer._unacked_messages):
        if message.tp == tp:
            message.acked = True


def deliver_where_started_over(app: Any, topic: str, keeper_for: Callable[[str, int], JournalKeeper]) -> None:
    """Make the app's consumer deliver the records of a partition that started over while the app runs.

    Faust drops every record below the offset it has read of a partition (`Consumer._drain_messages`, "DROPPED
    MESSAGE ROFF"). That is right for a repeat, but a topic deleted and created again under the app lost every new
    record below the old position: aiokafka finds the position out of range and resets it to the earliest offset,
    and Faust dropped what came from there. A record below the read offset that is not the one journaled at its
    offset (`JournalKeeper.went_back`) makes Faust track the partition afresh (`forget_read_offsets`), with a
    warning, or stops the app (`on_topic_reset` refuse)."""
    new_consumer = app._new_consumer

    def consumer_that_delivers() -> Any:
        consumer = new_consumer()
        getmany = consumer.getmany

        async def getmany_where_started_over(timeout: float) -> AsyncIterator[tuple[Any, Any]]:
            async for tp, message in getmany(timeout=timeout):
                read = consumer._read_offset.get(tp)
                if tp.topic == topic and read is not None and message.offset < read:
                    try:
                        went_back = keeper_for(tp.topic, tp.partition).went_back(
                            message.offset, read, message.key, message.value, timestamp_ms(message))
                    except StartedOver as err:
                        stop_refused(err)
                    if went_back:
                        forget_read_offsets(consumer, tp)
                yield tp, message

        consumer.getmany = getmany_where_started_over
        return consumer

    app._new_consumer = consumer_that_delivers


CLIENT_LOGGERS = ("aiokafka", "faust.transport")  # Faust's Kafka client and its driver: a line per retry


def hold_back_client_repeats(repeats: logging.Filter | None = None) -> logging.Filter:
    """Let each kind of line of the Kafka client's loggers through at most once a minute, as the worker's.

    While the broker is down, aiokafka logs every failed connection, metadata update, fetch and coordinator
    request (an operator review: ~1,150 ERROR lines in 20 s). A logger's filter sees only its own records, not
    its children's, so `logs.Repeats` (one, shared) goes on every logger under `CLIENT_LOGGERS`, once their
    modules are imported."""
    import faust.transport.drivers.aiokafka  # noqa: F401 - creates the loggers filtered here

    shared = repeats or Repeats()
    names = [name for name in list(logging.root.manager.loggerDict)
             if any(name == prefix or name.startswith(prefix + ".") for prefix in CLIENT_LOGGERS)]
    for name in names:
        logger = logging.getLogger(name)
        if not any(isinstance(f, Repeats) for f in logger.filters):
            logger.addFilter(shared)
    return shared


def poll_clock_restarter(app: Any) -> Callable[[], None]:
    """A function that makes the app's consumer count as having just fetched, callable from any thread.

    aiokafka leaves the group once its consumer has fetched nothing for `max_poll_interval_ms`
    (`SubscriptionState.fetcher_idle_time`), and Faust fetches nothing while the agent's buffer is full: a store
    rebuild longer than that cost the app its partitions, and the app hung, never joining again
    (faust-streaming#138). Called after each batch a rebuild reads, it restarts that clock, on the consumer's own
    thread, as a fetch ending there does; heartbeats go on from that thread meanwhile. Records are neither
    fetched nor dropped."""
    thread = app.consumer._thread

    def fetched() -> None:
        with thread._ensure_consumer()._subscription.fetch_context():
            pass

    def restart() -> None:
        thread.thread_loop.call_soon_threadsafe(fetched)

    return restart


def create_app(settings: WorkerSettings, config: DetectorConfig, app_id: str = "streamdedup-faust",
               journal_keep: int = JOURNAL_KEEP, started_over: dict[int, int] | None = None) -> Any:
    """The Faust app.

    The Faust app, its kernels compiled or loaded (`faust_warm_up`); `started_over`: partitions to read from the
    given offset at their first assignment (`partitions_started_over`)."""
    import faust
    from faust.types import TP

    # Faust judges on its event loop, which also answers the group's rebalances: numba's compiles happen here,
    # before the app joins, not at its first pages (`faust_warm_up`)
    log.info("kernels ready in %.1f s", warm_up_kernels(config))
    # datadir: Faust's own files beside our state, not "<app id>-data" in whatever directory it started in
    Path(settings.state_dir).mkdir(parents=True, exist_ok=True)
    hold_back_client_repeats()
    keep_worker_id(settings)  # before faust-data: a default id stays this directory's at every restart
    app = faust.App(app_id, broker=f"kafka://{settings.bootstrap_servers}", web_enabled=False,
                    datadir=str(Path(settings.state_dir) / "faust-data"),
                    processing_guarantee="at_least_once", topic_allow_declare=True,
                    consumer_auto_offset_reset="earliest", topic_partitions=settings.partitions,
                    producer_compression_type=COMPRESSION, producer_max_request_size=MAX_RECORD_BYTES,
                    consumer_max_fetch_size=MAX_MESSAGE_BYTES, consumer_metadata_max_age_ms=METADATA_MAX_AGE_S * 1000,
                    # the worker's session timeout; Tansu answers a join only after half the rebalance
                    # timeout (Faust's default 60 s: 30 s before the first record)
                    broker_session_timeout=10, broker_rebalance_timeout=10,
                    # the worker's (300 s), not Faust's 1,000 s; the records waiting for the agent at most a
                    # worker's batch (Faust's 4,096 pages of up to 32 MiB held in memory)
                    broker_max_poll_interval=settings.max_poll_interval_s,
                    stream_buffer_maxsize=settings.batch_size,
                    # as the worker's: a restarted app takes its own place back, instead of waiting for
                    # a killed one to time out (on noida-db, a killed leader stalled the group for good)
                    consumer_group_instance_id=(f"streamdedup-faust-{settings.worker_id}"
                                                if settings.static_membership else None))
    raw: dict[str, Any] = {"key_type": bytes, "value_type": bytes, "key_serializer": "raw", "value_serializer": "raw",
                           "config": {"max.message.bytes": str(MAX_MESSAGE_BYTES)}}
    t = settings.topics
    pages = app.topic(t.pages, **raw)
    seek_at_assignment(app, t.pages, started_over or {})
    names = {"unique": t.unique, "duplicate": t.duplicates, "rejected": t.rejected, "clusters": t.clusters,
             "verdicts": t.verdicts, "cluster_view": t.cluster_view}
    for name in names.values():  # declared as the worker's (the view compacted), should they be missing
        app.topic(name, **{**raw, "config": topic_config(name, settings)})
    keepers: dict[int, JournalKeeper] = {}
    new_stores: set[int] = set()  # partitions whose store this app made empty, not yet rebuilt
    # pages partitions whose store was checked against the offset of their first record since their assignment
    checked: set[int] = set()

    async def on_assigned(sender: Any, /, *args: Any, **kwargs: Any) -> None:  # args: (the assigned TPs,)
        checked.difference_update(tp.partition for tp in args[0] if tp.topic == t.pages)

    app.on_partitions_assigned.connect(on_assigned)

    def keeper_for(topic: str, partition: int) -> JournalKeeper:
        if partition not in keepers:
            path = Path(settings.state_dir) / f"faust-{t.pages}-{partition}"
            if not (path / "CURRENT").exists():
                new_stores.add(partition)
            detector = Detector(config, path)
            keepers[partition] = JournalKeeper(detector, topic, partition, keep=journal_keep,
                                               on_topic_reset=settings.on_topic_reset)
        return keepers[partition]

    async def send(output: Output) -> Any:
        target, key, value, headers = output
        return await app.producer.send(names[target], key, value, None, None, headers)

    async def emit(outputs: list[Output], source: str, passed: Headers | None) -> None:
        """A record's outputs in Kafka, its verdict line last.

        If the broker refused the page's output for its size, that line is the line of its rejection."""
        refused = await deliver([output for output in outputs if output[0] != "verdicts"], source)
        lines = [output for output in outputs if output[0] == "verdicts"]
        if refused:
            lines = [refused_line(refused[0], names[refused[0][0]], source, passed)]
        await deliver(lines, source)

    async def deliver(outputs: list[Output], source: str) -> list[Output]:
        """Every output in Kafka, a refused one in its next form (`after_refusal`); retried while the broker is away.

        Returns the pages' outputs that went as their `too_large_for_broker` stub."""
        pending = [(output, output) for output in outputs]  # (the form to send, the output it is a form of)
        refused: list[Output] = []
        attempt = 0
        while True:
            again: list[tuple[Output, Output, bool]] = []  # (the next form, its output, whether the broker was away)
            sent: list[tuple[Output, Output, Any]] = []
            failed: list[tuple[Output, Output, Exception]] = []
            for output, original in pending:
                try:
                    sent.append((output, original, await send(output)))
                except Exception as err:  # noqa: BLE001 - sorted by `instead_of`
                    failed.append((output, original, err))
            for output, original, future in sent:
                try:
                    await future
                except Exception as err:  # noqa: BLE001 - sorted by `instead_of`
                    failed.append((output, original, err))
            for output, original, error in failed:
                instead, away = instead_of(output, original, error, source)
                again.append((instead, original, away))
                if original[0] in PAGE_TARGETS and is_size_refusal(error) and is_stub(instead[3]):
                    refused.append(original)
            if not again:
                return refused
            if any(away for _, _, away in again):
                await asyncio.sleep(SEND_RETRY_S[min(attempt, len(SEND_RETRY_S) - 1)])
            pending = [(output, original) for output, original, _ in again]
            attempt += 1

    def instead_of(output: Output, original: Output, err: Exception, source: str) -> tuple[Output, bool]:
        """What to send after `output`, a form of `original`, failed with `err`.

        That is its next form if the broker refused its size (`after_refusal`: as the worker's), or the output itself
        if the broker is away. Any other error is raised, as is a refusal of the smallest form."""
        if is_size_refusal(err):
            instead = after_refusal(output, original, names[original[0]], source)
            if instead is None:
                raise err  # even the stub is refused: nothing smaller to send
            log.warning("the broker refused a %d-byte record for %s as too large: it goes %s", record_size(*output[1:]),
                        names[output[0]], f"to {t.rejected} as {Reason.TOO_LARGE_FOR_BROKER.value}"
                        if is_stub(instead[3]) else "again without the input's headers")
            return instead, False
        if is_broker_trouble(err):
            log.warning("sending to %s failed (%s); retrying", names[output[0]], err)
            return output, True
        raise err

    deliver_where_started_over(app, t.pages, keeper_for)

    def stop_at(message: Any, err: BaseException) -> NoReturn:
        """End the app on an error of a record, without committing it: Faust would go on past the record."""
        if isinstance(err, StartedOver):  # on_topic_reset = refuse, found while running (no committed offset)
            stop_refused(err)
        log.critical("streamdedup faust stops at %s[%d]@%d without committing it; fix the cause below and start it "
                     "again", message.topic, message.partition, message.offset, exc_info=err)
        logging.shutdown()
        os._exit(1)

    def rebuild_store(topic: str, partition: int, until: int, why_stop: Callable[[], str | None]) -> None:
        """The partition's store brought up to `until` (in a thread); each batch it reads keeps the app in its group."""
        new = partition in new_stores
        new_stores.discard(partition)
        rebuild(keeper_for(topic, partition), settings, app.conf.id, until, new, on_progress=poll_clock_restarter(app),
                should_stop=why_stop)

    async def judge(event: Any) -> None:
        """One record judged, its outputs in Kafka, then acknowledged (so Faust may commit its offset)."""
        message = event.message
        keeper = keeper_for(message.topic, message.partition)
        # what Faust last committed or read at assignment (the offset a replay starts at)
        committed = getattr(app.consumer, "_committed_offset", {}).get(TP(message.topic, message.partition))
        passed = input_headers(message.headers)
        outputs = keeper.outputs(message.offset, message.key, message.value, timestamp_ms(message), committed, passed)
        await emit(outputs, f"{message.topic}[{message.partition}]@{message.offset}", passed)
        await acking[-1].ack(event)

    acking: list[Any] = []  # the agent's stream, whose records `judge` acknowledges
    rebuilds = Rebuilds(KafkaPauser(app), rebuild_store, judge, stop_at, app.wait_until_stopped)

    async def forget_waiting(sender: Any, /, *args: Any, **kwargs: Any) -> None:  # args: (the assigned TPs,)
        rebuilds.forget({tp.partition for tp in args[0] if tp.topic == t.pages})

    app.on_partitions_assigned.connect(forget_waiting)
    let_go_at_revocation(app, t.pages, rebuilds.revoke)

    @app.agent(pages)
    async def dedup(stream: Any) -> None:
        # acknowledged by `judge` once a record's outputs are in Kafka: a record waiting for its partition's store
        # (`Rebuilds`) stays unacknowledged, so no commit passes it while later records of other partitions go on
        acking.append(stream.noack())
        async for event in acking[-1].events():
            message = event.message
            try:
                if rebuilds.holds(message.partition):  # its store is being rebuilt: judged after it, in order
                    rebuilds.hold(event)
                    continue
                keeper = keeper_for(message.topic, message.partition)
                if message.partition not in checked:  # a lost store, or the partition judged elsewhere since
                    checked.add(message.partition)
                    if rebuilds.busy(message.partition) or (keeper.next_offset() or 0) < message.offset:
                        rebuilds.start(event)  # rebuilt in a thread; the other partitions go on meanwhile
                        continue
                    new_stores.discard(message.partition)
                await judge(event)
            except Exception as err:  # noqa: BLE001 - Faust would restart the agent and commit past the record
                stop_at(message, err)

    return app


__all__ = ["FAUST_GROUP_ID", "JOURNAL_KEEP", "JournalKeeper", "StartedOver", "create_app", "default_group_id",
           "deliver_where_started_over", "forget_read_offsets", "hold_back_client_repeats", "journal_name",
           "outputs_for", "partitions_started_over", "poll_clock_restarter", "refused_line", "refusal", "render",
           "too_large_output"]
