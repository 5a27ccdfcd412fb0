"""The Faust app's partitions whose store is being rebuilt: their records wait, the other partitions go on.

A partition's store behind the offset the app starts it at is rebuilt (`faust_rebuild.rebuild`, in a
thread) before any of its records is judged. While it is, that partition is paused in the app's
aiokafka consumer (`KafkaPauser`) and its records already fetched wait here, in order, unacknowledged,
so no commit passes them; the agent goes on judging the other partitions' records. Once the rebuild
ends, its waiting records are judged in order, then the partition is resumed. At most what was
fetched of it before the pause took effect waits (one fetch and the agent's buffer), as Faust itself
holds.

When the app stops, a rebuild ends after its batch (`faust_rebuild.RebuildStopped`; the next start goes
on from there) and the waiting records are let go unjudged and uncommitted, read again at the next
start: Faust's stop waits for every record taken and not acknowledged, and so waited for the rest of
the rebuild. A rebalance does the same to the partitions it revokes (`revoke`): their rebuilds end after
their batch and their waiting records are let go, read again by whichever instance gets the partition
(this one goes on from the offset the rebuild reached). Before, Faust's revocation waited for the rest of
the rebuild and the group with it; the records judged meanwhile came out again from the partition's next
owner, their offsets never committed.

Why aiokafka's pause and not Faust's `Consumer.pause_partitions`: Faust's only drops the partition from
the set its fetch loop checks each record against (`Consumer.getmany`), and the records of the batch
aiokafka has already returned (its position past them) are then skipped without a word; Faust counts
the offsets it skipped as a gap, which it commits as done (`Consumer._add_gap`), so they would be lost.
aiokafka's pause discards what it fetched of the partition without moving its position: nothing is
skipped, and what was returned before the pause arrives and waits.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from streamdedup.runtime.faust_rebuild import RebuildStopped

log = logging.getLogger("streamdedup.runtime.faust_app")  # the app's logger: operators filter by it


class KafkaPauser:
    """Pauses and resumes one partition of the app's aiokafka consumer, from the app's event loop.

    The consumer lives on Faust's consumer thread and its own loop: each call is made there, in the order asked.
    A partition no longer assigned is left alone (a rebalance makes every partition's state afresh, unpaused)."""

    def __init__(self, app: Any) -> None:
        self.app = app  # its consumer is made when first asked for, with the app's own changes (`create_app`)

    def pause(self, topic: str, partition: int) -> None:
        """Pause fetching one partition, on the consumer's thread."""
        self._on_thread("pause", topic, partition)

    def resume(self, topic: str, partition: int) -> None:
        """Resume fetching one partition, on the consumer's thread."""
        self._on_thread("resume", topic, partition)

    def _on_thread(self, method: str, topic: str, partition: int) -> None:
        from aiokafka import TopicPartition

        tp, thread = TopicPartition(topic, partition), self.app.consumer._thread

        def call() -> None:
            consumer = thread._ensure_consumer()
            if tp in consumer.assignment():
                getattr(consumer, method)(tp)

        thread.thread_loop.call_soon_threadsafe(call)


@dataclass(eq=False)
class Waiting:
    """A partition whose store is being rebuilt: its records (Faust events) wait here, in order."""

    topic: str
    partition: int
    events: deque = field(default_factory=deque)
    revoked: threading.Event = field(default_factory=threading.Event)  # a rebalance took it: its records go


class Rebuilds:
    """The partitions whose store is being rebuilt, each with its waiting records.

    `rebuild(topic, partition, until, why_stop)` brings a partition's store up to offset `until` (blocking: it runs in
    a thread; it is to end once `why_stop()` names a reason); `judge(event)` judges one record and acknowledges it;
    `stop(message, error)` ends the app on an error of a record (its Faust message, as the agent passes it);
    `stopped()` returns once the app stops. `pauser` pauses and resumes a partition's fetching (`KafkaPauser`)."""

    def __init__(self, pauser: Any, rebuild: Callable[[str, int, int, Callable[[], str | None]], Any],
                 judge: Callable[[Any], Awaitable[None]], stop: Callable[[Any, BaseException], None],
                 stopped: Callable[[], Awaitable[Any]]) -> None:
        self.pauser, self.rebuild, self.judge, self.stop, self.stopped = pauser, rebuild, judge, stop, stopped
        self.waiting: dict[int, Waiting] = {}
        self.tasks: dict[int, asyncio.Task] = {}  # the newest rebuild task of each partition, done or not
        self.stopping = threading.Event()  # the app stops: rebuilds end, waiting records are let go
        self.watcher: asyncio.Task | None = None

    def holds(self, partition: int) -> bool:
        """Whether the partition's records wait (its store is being rebuilt, or its waiting records judged)."""
        return partition in self.waiting

    def busy(self, partition: int) -> bool:
        """Whether a rebuild of the partition, maybe of an earlier assignment, has not ended: a next one waits."""
        task = self.tasks.get(partition)
        return task is not None and not task.done()

    def hold(self, event: Any) -> None:
        """A record of a partition that waits: judged after those before it, once its store is rebuilt."""
        waiting = self.waiting[event.message.partition]
        waiting.events.append(event)
        if self.stopping.is_set() or waiting.revoked.is_set():  # none is judged any more
            drop(waiting)

    def start(self, event: Any) -> None:
        """Rebuild the store of the event's partition up to the event, its records waiting meanwhile, then judge them.

        The partition is paused at once; the agent goes on with the other partitions' records."""
        message = event.message
        waiting = Waiting(message.topic, message.partition, deque([event]))
        self.waiting[message.partition] = waiting
        self.pauser.pause(message.topic, message.partition)
        earlier = self.tasks.get(message.partition)
        loop = asyncio.get_running_loop()
        self.tasks[message.partition] = loop.create_task(self._run(waiting, message.offset, earlier))
        if self.watcher is None:
            self.watcher = loop.create_task(self._watch())

    def revoke(self, partitions: set[int]) -> None:
        """A rebalance revokes these partitions: their rebuilds end after their batch, their waiting records go.

        Called before Faust's revocation waits for the records taken and not acknowledged: let go (`drop`), they
        are not waited for, nor committed; the partition's next owner reads them again. Records of the partition
        still reaching the agent are let go too (`hold`), never judged ahead of them."""
        for partition in partitions:
            waiting = self.waiting.get(partition)
            if waiting is not None:
                waiting.revoked.set()
                drop(waiting)

    def forget(self, partitions: set[int]) -> None:
        """Partitions assigned again: their waiting records are the earlier assignment's, never judged now.

        A rebuild still running (to the end of its batch) is not waited for; the next one of its partition starts
        after it ends (`busy`)."""
        for partition in partitions:
            waiting = self.waiting.pop(partition, None)
            if waiting is not None:
                waiting.revoked.set()
                drop(waiting)

    def stop_all(self) -> None:
        """The app stops: every rebuild ends after its batch, and the waiting records are let go (`drop`)."""
        self.stopping.set()
        for waiting in self.waiting.values():
            drop(waiting)

    async def _watch(self) -> None:
        await self.stopped()
        self.stop_all()

    def _why_stop(self, waiting: Waiting) -> str | None:
        """Why a rebuild of the partition is to end after its batch, or None: it goes on."""
        if self.stopping.is_set():
            return "with the app"
        if waiting.revoked.is_set():
            return "as a rebalance revokes the partition"
        return None

    async def _run(self, waiting: Waiting, until: int, earlier: asyncio.Task | None) -> None:
        event = waiting.events[0]
        try:
            if earlier is not None and not earlier.done():
                await asyncio.wait([earlier])  # the same store: one rebuild at a time
            if self._why_stop(waiting) is not None:
                drop(waiting)  # stopped or revoked meanwhile: let go, as `stop_all` and `revoke` do
                return
            await asyncio.to_thread(self.rebuild, waiting.topic, waiting.partition, until,
                                    lambda: self._why_stop(waiting))
            if len(waiting.events) > 1:
                log.info("%s partition %d: judging the %d records that waited for its store", waiting.topic,
                         waiting.partition, len(waiting.events))
            while waiting.events and self._why_stop(waiting) is None:
                event = waiting.events.popleft()
                await self.judge(event)
            if self.waiting.get(waiting.partition) is waiting and self._why_stop(waiting) is None:
                del self.waiting[waiting.partition]
                self.pauser.resume(waiting.topic, waiting.partition)
        except RebuildStopped:
            return  # the app stops (its line said where); the waiting records were let go
        except BaseException as err:  # noqa: BLE001 - a task's error would be silent: the app stops, as the agent's
            if isinstance(err, asyncio.CancelledError):
                raise
            self.stop(event.message, err)  # the record, as the agent passes it: an event has no topic or offset


def drop(waiting: Waiting) -> None:
    """Waiting records let go unjudged (the app stops, or they are an earlier assignment's).

    Each is marked done, so Faust's stop does not wait for it, without being acknowledged, so its offset is not
    committed: the group reads it again from its committed offset."""
    for event in waiting.events:
        event.message.acked = True
    waiting.events.clear()


__all__ = ["KafkaPauser", "Rebuilds", "Waiting", "drop"]
