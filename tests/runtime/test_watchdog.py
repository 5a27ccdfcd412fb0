"""The deadline on the Kafka client's blocking transactional calls (runtime/watchdog.py)."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from contextlib import contextmanager

from conftest import make_article, page, wrap_in_template

from runtime.conftest import run_until_decided
from runtime.test_worker import send
from streamdedup.config import DetectorConfig
from streamdedup.runtime.watchdog import STUCK_EXIT_CODE, CallWatchdog
from streamdedup.runtime.worker import Worker


def test_a_call_past_its_timeout_and_grace_is_reported_once_and_one_in_time_is_not():
    stuck: list[tuple[str, float]] = []
    watchdog = CallWatchdog(lambda what, waited: stuck.append((what, waited)), grace_s=0.1, tick_s=0.02)
    with watchdog.call("commit_transaction", 0.05):
        time.sleep(0.01)  # returns in time
    time.sleep(0.3)
    assert stuck == []
    with watchdog.call("send_offsets_to_transaction", 0.05):
        time.sleep(0.5)  # as librdkafka #5456 does, for ever
    time.sleep(0.1)
    watchdog.close()
    assert [what for what, _ in stuck] == ["send_offsets_to_transaction"] and stuck[0][1] >= 0.15
    assert sum(t.name == "kafka-call-watchdog" for t in threading.enumerate()) <= 1


def test_the_command_lines_remedy_is_one_line_and_an_exit_a_supervisor_restarts():
    done = subprocess.run([sys.executable, "-c", "from streamdedup.runtime.watchdog import exit_stuck; "
                           "exit_stuck('send_offsets_to_transaction', 91.4)"], capture_output=True, text=True, timeout=60)
    assert done.returncode == STUCK_EXIT_CODE
    [line] = done.stderr.splitlines()
    assert line.startswith("the Kafka client's send_offsets_to_transaction has not returned in 91 s")
    assert "#5456" in line and "restart" in line


class Recorder:
    """A watchdog that records the calls it is given."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, float]] = []

    @contextmanager
    def call(self, what: str, timeout_s: float):
        self.calls.append((what, timeout_s))
        yield

    def close(self) -> None:
        self.calls.append(("closed", 0.0))


def test_the_worker_puts_its_blocking_transactional_calls_under_the_watchdog(settings):
    send(settings, [page(f"https://a.example/{i}", wrap_in_template(make_article(3100 + i), "A")) for i in range(3)])
    recorder = Recorder()
    worker = Worker(settings, DetectorConfig(), recorder)  # type: ignore[arg-type]
    assert run_until_decided(worker, 3).decided == 3
    called = [what for what, _ in recorder.calls]
    assert {"init_transactions", "send_offsets_to_transaction", "commit_transaction"} <= set(called)
    assert called[-2:] == ["close", "closed"]  # the producer closed after a clean stop, then the watchdog
