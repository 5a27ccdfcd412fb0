"""Logs: one JSON object a line, and librdkafka's lines through them with repeats held back."""

import logging
import time

import pytest

from streamdedup.logs import Repeats


def _record(message: str, level: int = logging.ERROR) -> logging.LogRecord:
    return logging.LogRecord("streamdedup.kafka", level, __file__, 1, message, (), None)


def test_a_line_that_repeats_is_let_through_once_an_interval_and_then_says_how_many_were_held():
    now = [0.0]
    repeats = Repeats(interval_s=60, clock=lambda: now[0])
    refused = "FAIL [rdkafka#consumer-{n}] 127.0.0.1:9092/bootstrap: Connect failed: Connection refused (after {n}ms)"
    assert repeats.filter(_record(refused.format(n=1)))
    held = [repeats.filter(_record(refused.format(n=n))) for n in range(2, 7)]  # the same kind: numbers aside
    assert held == [False] * 5
    assert repeats.filter(_record("another kind of line"))  # kinds are held apart
    now[0] = 61.0
    last = _record(refused.format(n=9))
    assert repeats.filter(last)
    assert last.getMessage().endswith("(after 9ms) (5 more like it in the last 60 s)")
    assert not repeats.filter(_record(refused.format(n=10)))


def test_librdkafkas_own_count_of_suppressed_lines_does_not_make_a_new_kind():
    """librdkafka folds repeats itself too, inside the line: "(after 0ms in state CONNECT, 1 identical error(s)
    suppressed)". That line was a kind of its own, so a broker that is down logged twice (a clean-clone CI run)."""
    repeats = Repeats(interval_s=60, clock=lambda: 0.0)
    line = "FAIL [rdkafka#consumer-1] 127.0.0.1:1/bootstrap: Connect failed: Connection refused (after 0ms in state CONNECT{})"
    assert repeats.filter(_record(line.format("")))
    assert not repeats.filter(_record(line.format(", 1 identical error(s) suppressed")))
    assert not repeats.filter(_record(line.format(", 12 identical error(s) suppressed")))


def test_the_kinds_it_remembers_are_bounded():
    repeats = Repeats(interval_s=60, kinds=3, clock=lambda: 0.0)
    for word in ("one", "two", "three", "four"):
        assert repeats.filter(_record(f"line {word}"))
    assert len(repeats._seen) == 3
    assert repeats.filter(_record("line one"))  # forgotten, so let through again


def test_a_client_whose_broker_is_down_logs_through_python_once_not_on_stderr_every_50_ms(capfd, caplog, monkeypatch):
    """librdkafka writes a failed connection to the process's stderr every ~50 ms for as long as
    the broker stays down (1,184 lines in a minute of a worker's log when its broker was killed)."""
    pytest.importorskip("confluent_kafka")
    from confluent_kafka import Consumer

    from streamdedup.logs import kafka_logger
    from streamdedup.runtime.settings import WorkerSettings

    monkeypatch.setattr(kafka_logger(), "filters", [Repeats()])  # not what earlier tests logged

    consumer = Consumer(WorkerSettings(bootstrap_servers="127.0.0.1:1").client(**{"group.id": "nobody"}))
    consumer.subscribe(["pages"])
    with caplog.at_level(logging.ERROR, logger="streamdedup.kafka"):
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            consumer.poll(0.2)
    consumer.close()
    refused = [r for r in caplog.records if "Connection refused" in r.getMessage()]
    assert len(refused) == 1 and refused[0].name == "streamdedup.kafka"
    assert "|FAIL|" not in capfd.readouterr().err  # librdkafka's own format ("%3|<time>|FAIL|rdkafka#...")


def test_a_ctrl_c_the_kafka_client_loses_in_a_flush_is_still_an_interrupt():
    """Ctrl-C while the demo's worker wrote its group's settings printed "SystemError: <method 'flush'
    of 'cimpl.Producer' objects> returned NULL without setting an exception": the client calls its
    logger from inside flush and dropped the KeyboardInterrupt raised there. 7 of 10 such flushes to a
    broker that is down ended so; the command line (`interrupts_kept`) makes each an interrupt."""
    import os
    import signal
    import threading

    pytest.importorskip("confluent_kafka")
    from confluent_kafka import Producer

    from streamdedup.logs import interrupts_kept
    from streamdedup.runtime.settings import WorkerSettings

    outcomes = []
    for delay in (0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.6):
        producer = Producer(WorkerSettings(bootstrap_servers="127.0.0.1:1").client(
            **{"enable.idempotence": True, "acks": "all"}))
        producer.produce("pages.settings", b"x")
        timer = threading.Timer(delay, os.kill, (os.getpid(), signal.SIGINT))
        timer.start()
        try:
            with interrupts_kept():
                producer.flush(3)
            outcomes.append("none")
        except BaseException as err:  # noqa: BLE001 - what the flush ended in is the test
            outcomes.append(type(err).__name__)
        timer.join()
        producer.purge()
    assert outcomes == ["KeyboardInterrupt"] * 8
