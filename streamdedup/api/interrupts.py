"""Ctrl-C during `add_many`: each batch is filed whole or not at all, and the caller is told how far it got.

A store write (RocksDB, then the in-memory index) cut in the middle by KeyboardInterrupt would leave
pages on disk that later pages cannot find, so SIGINT is held off for the span of a batch's write
and delivered right after it (`sigint_held`). Anywhere else a KeyboardInterrupt stops at once: the
batch in hand is decided but not written, and is forgotten. `AddInterrupted` then names the items
filed (the first `filed`, in order) and carries their verdicts.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from types import FrameType
from typing import Any

from streamdedup.verdict.contract import Rejection, Verdict


class AddInterrupted(KeyboardInterrupt):
    """`add_many` (or `add`) stopped by Ctrl-C: its first `filed` items were filed, the others not.

    A KeyboardInterrupt, so a notebook cell or a script stops as Ctrl-C stops it. `results` holds
    the verdicts of the items filed, in order; `total` counts the items given (None: stopped while
    they were read, before any was filed). The store is whole
    and the Deduplicator usable: `add_many(items[err.filed:])` files the rest (the whole list again
    would meet its filed items as repeated ids, `duplicate_id`, or as their own duplicates)."""

    def __init__(self, method: str, filed: int, total: int | None, results: Sequence[Verdict | Rejection]) -> None:
        self.method, self.filed, self.total, self.results = method, filed, total, list(results)
        super().__init__(interrupted_line(method, filed, total))

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (self.method, self.filed, self.total, self.results)


def interrupted_line(method: str, filed: int, total: int | None) -> str:
    """What an interrupted `method` filed and how to file the rest, in one line."""
    if method == "add":
        return ("add was interrupted after filing its item (its verdict: this exception's .results[0])" if filed
                else "add was interrupted before filing its item: nothing was filed, add it again")
    if not filed or total is None:  # (no total: stopped while its items were read, before any was filed)
        return f"{method} was interrupted before filing any of its items: nothing was filed, call it again"
    if filed == total:
        return f"{method} was interrupted after filing all its {total} items (their verdicts: the exception's .results)"
    return (f"{method} was interrupted: its first {filed} of {total} items were filed (their verdicts: this "
            f"exception's .results), the other {total - filed} were not: add_many(items[{filed}:]) "
            "files them")


def filed_note(method: str, filed: int, total: int) -> str:
    """The note an error other than Ctrl-C gets: how many items were filed before it."""
    return (f"{method} filed the first {filed} of its {total} items before this error (each batch whole); "
            f"the other {total - filed} were not filed")


@contextmanager
def sigint_held() -> Iterator[None]:
    """SIGINT held off for the span of the block, then delivered to the handler it had (KeyboardInterrupt).

    Only in the main thread (the only one that receives signals and may set handlers) and where
    SIGINT has a Python handler that is not "ignore"; elsewhere the block runs as it is."""
    before = signal.getsignal(signal.SIGINT)
    if threading.current_thread() is not threading.main_thread() or before in (signal.SIG_IGN, None):
        yield
        return
    received: list[int] = []

    def hold(number: int, frame: FrameType | None) -> None:
        received.append(number)

    signal.signal(signal.SIGINT, hold)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)
    if received:
        signal.raise_signal(signal.SIGINT)  # the handler it had runs now, as it would have then
