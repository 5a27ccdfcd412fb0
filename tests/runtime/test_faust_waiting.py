"""The Faust app's records waiting for a store rebuild (`faust_waiting.Rebuilds`): pure logic, no broker."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from streamdedup.runtime.faust_rebuild import RebuildCutOff, RebuildStalled
from streamdedup.runtime.faust_waiting import Rebuilds


class Pauser:
    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []

    def pause(self, topic: str, partition: int) -> None:
        self.calls.append(("pause", partition))

    def resume(self, topic: str, partition: int) -> None:
        self.calls.append(("resume", partition))


def event(offset: int, partition: int = 0) -> SimpleNamespace:
    """As Faust's `Event`: the record is its `message`; the event itself has no topic, partition or offset."""
    return SimpleNamespace(message=SimpleNamespace(topic="pages", partition=partition, offset=offset, acked=False))


def test_a_rebuild_that_fails_stops_the_app_at_its_first_waiting_record():
    """A rebuild that raises (its records gone, the broker away for `STALL_S`) ends the app through `stop`, given
    the first waiting record's message, as the agent gives it (`faust_app.stop_at` logs its topic, partition and
    offset, then exits). Before: `stop` was given the Faust event, which has none of them; the AttributeError
    ended the rebuild's task without a word and the app went on with that partition paused for good (on
    noida-db, a topic deleted under a rebuild: no line, the app still running 75 s later)."""
    for error in (RebuildCutOff("pages[0] ends at offset 3"), RebuildStalled("could not read pages[0]")):
        stopped: list[tuple[str, int, int, BaseException]] = []

        def stop(message, err, stopped=stopped) -> None:
            stopped.append((message.topic, message.partition, message.offset, err))

        def rebuild(topic, partition, until, why_stop, error=error) -> None:
            raise error

        async def run(stop=stop, rebuild=rebuild) -> Rebuilds:
            never = asyncio.Event()
            rebuilds = Rebuilds(Pauser(), rebuild, judge=None, stop=stop, stopped=never.wait)
            rebuilds.start(event(600))
            rebuilds.hold(event(601))
            await asyncio.wait_for(asyncio.gather(rebuilds.tasks[0], return_exceptions=True), 10)
            rebuilds.watcher.cancel()
            return rebuilds

        rebuilds = asyncio.run(run())
        assert stopped == [("pages", 0, 600, error)]
        assert rebuilds.tasks[0].exception() is None  # nothing left in a task nobody reads
        assert rebuilds.holds(0)  # the partition's records stay unjudged, uncommitted: the app ends
