"""A deadline on the Kafka client's blocking transactional calls, kept from another thread.

librdkafka's `send_offsets_to_transaction` ignores its timeout while the consumer group's
coordinator cannot be reached, or is one it cached before its broker restarted (librdkafka issues
#5456 and #5511, open in 2.16): the worker then waits in C, where no signal reaches Python, so
neither its timeout nor SIGTERM ends the wait. Seen here both ways: a broker stopped during a
batch's commit (the worker still waiting 4 minutes later), and a broker killed and back 30 s later
(the worker's next commit never returned, the broker up). A call that has not
returned a grace period past its own timeout is reported to `on_stuck` from this thread; the
command line's worker then exits (`exit_stuck`): a restart aborts the open transaction and consumes
the batch again, as after a kill, so nothing is lost or doubled.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

log = logging.getLogger(__name__)

STUCK_EXIT_CODE = 75  # EX_TEMPFAIL: a supervisor's restart is the remedy


class CallWatchdog:
    """`call(what, timeout_s)` around a blocking call; one daemon thread, started at the first."""

    def __init__(self, on_stuck: Callable[[str, float], None], grace_s: float = 60.0, tick_s: float = 1.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.on_stuck, self.grace_s, self.tick_s, self.clock = on_stuck, grace_s, tick_s, clock
        self._lock = threading.Lock()
        self._armed: tuple[str, float, float] | None = None  # (what, started, deadline)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @contextmanager
    def call(self, what: str, timeout_s: float) -> Iterator[None]:
        """Around one blocking call: if it lasts past `timeout_s` and the grace, `on_stuck` is called."""
        started = self.clock()
        with self._lock:
            self._armed = (what, started, started + timeout_s + self.grace_s)
            if self._thread is None:
                self._thread = threading.Thread(target=self._watch, name="kafka-call-watchdog", daemon=True)
                self._thread.start()
        try:
            yield
        finally:
            with self._lock:
                self._armed = None

    def close(self) -> None:
        """Stop the watching thread."""
        self._stop.set()

    def _watch(self) -> None:
        while not self._stop.wait(self.tick_s):
            with self._lock:
                armed = self._armed
                if armed is None or self.clock() < armed[2]:
                    continue
                self._armed = None  # reported once
            what, started, _ = armed
            self.on_stuck(what, self.clock() - started)


def exit_stuck(what: str, waited_s: float) -> None:
    """The command line worker's `on_stuck`.

    One log line naming the cause and the remedy, then exit at once (the main thread cannot be
    woken; nothing of the batch was written to the store)."""
    message = (f"the Kafka client's {what} has not returned in {waited_s:.0f} s, past its timeout (librdkafka "
               "issues #5456, #5511: the consumer group's coordinator unreachable, or cached from before its broker "
               "restarted); exiting so that a restart aborts the open transaction and consumes the batch again "
               "(nothing is lost): run the worker under a supervisor that restarts it (docker compose does)")
    log.critical(message)
    for handler in logging.getLogger().handlers:
        handler.flush()
    sys.stderr.flush()
    os._exit(STUCK_EXIT_CODE)
