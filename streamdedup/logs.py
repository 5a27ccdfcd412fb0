"""Structured logs: one JSON object per line (time, level, logger, message, exception).

And the Kafka clients' logger callback, with what it costs a Ctrl-C (`interrupts_kept`)."""

from __future__ import annotations

import logging
import re
import signal
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

import orjson


class JsonFormatter(logging.Formatter):
    """A log formatter that writes each record as one JSON line (UTC time, level, logger, message)."""

    def format(self, record: logging.LogRecord) -> str:
        """The record as one JSON line, with its exception's traceback if it has one."""
        entry = {"time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
                 "level": record.levelname, "logger": record.name, "message": record.getMessage()}
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return orjson.dumps(entry).decode()


def configure(verbose: bool) -> None:
    """Send log records to stderr as JSON lines, at INFO if verbose, else WARNING."""
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter())
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, handlers=[handler], force=True)


_NUMBERS = re.compile(r"\d+")
# librdkafka's own count of a line it held back, inside the line: ", 3 identical error(s) suppressed"
_SUPPRESSED = re.compile(r",? \d+ identical error\(s\) suppressed")


class Repeats(logging.Filter):
    """Each kind of line (its text with numbers left out) at most once an `interval_s`.

    The next one let through says how many like it were held back. A broker that is down makes
    librdkafka log a failed connection every ~50 ms, per client, for as long as it stays down
    (~1,200 lines a minute, 330 MB a day); the first line says it, the rest say it is still so.
    Bounded: the `kinds` kinds seen last are remembered."""

    def __init__(self, interval_s: float = 60.0, kinds: int = 1024,
                 clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self.interval_s, self.kinds, self.clock = interval_s, kinds, clock
        self._seen: OrderedDict[tuple[int, str], list[float]] = OrderedDict()  # kind -> [let through at, held]

    def filter(self, record: logging.LogRecord) -> bool:
        """Let the record through unless one of its kind went through within `interval_s`; count what is held."""
        message = record.getMessage()
        kind = (record.levelno, _NUMBERS.sub("#", _SUPPRESSED.sub("", message)))
        now, seen = self.clock(), self._seen.get(kind)
        if seen is not None and now - seen[0] < self.interval_s:
            seen[1] += 1
            return False
        held = int(seen[1]) if seen is not None else 0
        self._seen[kind] = [now, 0]
        self._seen.move_to_end(kind)
        while len(self._seen) > self.kinds:
            self._seen.popitem(last=False)
        if held:
            record.msg, record.args = f"{message} ({held} more like it in the last {self.interval_s:g} s)", ()
        return True


def kafka_logger() -> logging.Logger:
    """The logger Kafka clients log to (librdkafka's own lines, served by the client's poll), with repeats held back.

    Otherwise librdkafka writes to the process's stderr itself, past logging."""
    logger = logging.getLogger("streamdedup.kafka")
    if not any(isinstance(f, Repeats) for f in logger.filters):
        logger.addFilter(Repeats())
    return logger


# what CPython says of a C function that failed without an exception: a Ctrl-C the C code dropped
_LOST = "returned NULL without setting an exception"


@contextmanager
def interrupts_kept() -> Iterator[None]:
    """Within: a SystemError that follows a SIGINT, as a C extension's call that lost it, is a KeyboardInterrupt.

    confluent-kafka calls the client's logger (Python) from inside its flush and poll; when SIGINT's
    KeyboardInterrupt is raised in that callback, the call drops it and ends in "SystemError: <method
    'flush' of 'cimpl.Producer' objects> returned NULL without setting an exception" (a demo's Ctrl-C
    while its worker wrote the group's settings printed that traceback; 7 of 10 flushes to a broker
    that is down, interrupted at random, ended so). Only where SIGINT has Python's default handler, in
    the main thread; SIGINT is noted, then handled as before."""
    before = signal.getsignal(signal.SIGINT)
    if threading.current_thread() is not threading.main_thread() or before is not signal.default_int_handler:
        yield
        return
    received: list[int] = []

    def note(number: int, frame: FrameType | None) -> None:
        received.append(number)
        signal.default_int_handler(number, frame)

    signal.signal(signal.SIGINT, note)
    try:
        yield
    except SystemError as err:
        if received and _LOST in str(err):
            raise KeyboardInterrupt from err
        raise
    finally:
        signal.signal(signal.SIGINT, before)
