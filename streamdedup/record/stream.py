"""A slow or endless input (`streamdedup dedup -`): batches that also end on time, and a clean stop.

`batches` waits for a batch to fill (256 pages), so a stream that sends a page a second emitted
nothing for four minutes. `timed_batches` reads the records in a thread and ends a batch once
`max_wait_s` passed since its first record came without it filling (`--batch-wait`, 1 s by
default). `StopSignals` turns SIGTERM and SIGINT into a request (`stop`) that the command answers
after the batch in hand: its pages are judged, written and committed, then the command ends; a
second signal is the default one (Ctrl-C twice interrupts at once, as before).
"""

from __future__ import annotations

import queue
import signal
import threading
import time
from collections.abc import Iterable, Iterator
from types import FrameType
from typing import Any

from streamdedup.record.batches import record_bytes
from streamdedup.record.readers import RawRecord

_SIGNALS = (signal.SIGTERM, signal.SIGINT)
_POLL_S = 0.05  # how often a wait for a record looks at `stop`
# after a stop, how long the record being read may take to come: one that comes later is not taken
# (it and the rest of the stream stay unread); a reader waiting on a silent stream holds none
_STOP_GRACE_S = 0.5


class StopSignals:
    """SIGTERM and SIGINT set `stop` (and name the signal in `received`) while this is entered.

    Each handler is then the one before again, so a second signal acts as it would have."""

    def __init__(self) -> None:
        self.stop = threading.Event()
        self.received: str | None = None
        self._before: dict[int, Any] = {}

    def _handle(self, number: int, frame: FrameType | None) -> None:
        self.received = signal.Signals(number).name
        self.stop.set()
        for other, handler in self._before.items():  # the next one is not asked to wait
            signal.signal(other, handler)

    def __enter__(self) -> StopSignals:
        if threading.current_thread() is threading.main_thread():  # only it may set handlers
            self._before = {number: signal.getsignal(number) for number in _SIGNALS}
            for number in _SIGNALS:
                signal.signal(number, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for number, handler in self._before.items():
            signal.signal(number, handler)
        self._before = {}


def timed_batches(records: Iterable[RawRecord], max_pages: int, max_bytes: int, max_wait_s: float,
                  stop: threading.Event) -> Iterator[list[RawRecord]]:
    """The `batches.batches`, but a batch also ends `max_wait_s` after its first record came.

    `batches.batches`, but a batch also ends `max_wait_s` after its first record came if it has
    not filled by then, and the last one ends when `stop` is set (with every record read so far;
    no other is read after it). The records are read by a daemon thread, one ahead at most: a read
    that blocks on a silent stream holds neither the batch in hand nor the stop."""
    handoff: queue.Queue[tuple[str, Any]] = queue.Queue(maxsize=1)
    closing = threading.Event()

    def hand(kind: str, item: Any) -> bool:
        while not closing.is_set():
            try:
                handoff.put((kind, item), timeout=_POLL_S)
                return True
            except queue.Full:
                continue
        return False

    def read() -> None:
        try:
            for raw in records:
                if not hand("record", raw) or stop.is_set():
                    return
            hand("end", None)
        except BaseException as err:  # noqa: BLE001 - raised again in the batching thread
            hand("error", err)

    reader = threading.Thread(target=read, name="stdin-reader", daemon=True)
    reader.start()
    batch: list[RawRecord] = []
    held = 0
    deadline = stop_by = 0.0
    try:
        while True:
            now = time.monotonic()
            if batch and now >= deadline:  # not filled in time: out as it is
                yield batch
                batch, held = [], 0
            if stop.is_set() and not stop_by:
                stop_by = now + _STOP_GRACE_S
            try:
                kind, item = handoff.get(timeout=_POLL_S)
            except queue.Empty:
                if stop_by and (not reader.is_alive() or now >= stop_by):
                    batch += _handed(handoff)  # one the reader handed as it ended
                    break
                continue
            if kind == "end":
                break
            if kind == "error":
                raise item
            if not batch:
                deadline = time.monotonic() + max_wait_s
            batch.append(item)
            held += record_bytes(item)
            if len(batch) >= max_pages or held >= max_bytes:
                yield batch
                batch, held = [], 0
        if batch:
            yield batch
    finally:
        closing.set()


def _handed(handoff: queue.Queue[tuple[str, Any]]) -> list[RawRecord]:
    """The records left in the hand-off (at most one), without waiting."""
    left: list[RawRecord] = []
    while True:
        try:
            kind, item = handoff.get_nowait()
        except queue.Empty:
            return left
        if kind == "record":
            left.append(item)
