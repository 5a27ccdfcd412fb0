"""`streamdedup broker` as a service: SIGTERM stops noida-db too, so nothing holds the port; a broker that
will not start says why in one line."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from streamdedup.runtime.broker import exit_cause, free_port


def children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(c) for c in (task / "children").read_text().split()]
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state not in ("Z", "X")


def port_free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def test_sigterm_to_streamdedup_broker_stops_noida_db(tmp_path):
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "streamdedup", "broker", "--port", str(port),
                                "--data-dir", str(tmp_path / "data")], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    spawned: list[int] = []
    try:
        deadline = time.monotonic() + 30
        while port_free(port):
            assert process.poll() is None and time.monotonic() < deadline, "the broker did not start"
            time.sleep(0.1)
        spawned += children(process.pid)
        assert spawned, "streamdedup broker runs noida-db as a child"
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=20)
        deadline = time.monotonic() + 5
        while (any(alive(pid) for pid in spawned) or not port_free(port)) and time.monotonic() < deadline:
            time.sleep(0.1)
        survivors = [pid for pid in spawned if alive(pid)]
        assert not survivors and port_free(port), f"noida-db {survivors} still runs and holds port {port}"
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        for pid in spawned:  # what this test started and the broker left behind
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


def test_a_broker_that_will_not_start_says_why_and_the_fix_in_one_line(broker, tmp_path):
    """noida-db exits at once on a port in use, or on a data folder a running one holds (here the tests'
    broker's). Before (an operator review): a Python traceback ending "RuntimeError: broker exited with 1;
    see .../broker.log". Now one line: the cause, as noida-db's log gives it, and the fix."""
    if broker.kind != "noida":
        pytest.skip("noida-db's own data folder and messages")
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        cases = {"port": (["--port", str(port), "--data-dir", str(tmp_path / "data")],
                          f"port {port} is already in use", f"Give another --port, or stop what listens on port {port}"),
                 "data": (["--port", str(free_port()), "--data-dir", str(broker.data_dir)],
                          f"noida-db is already running for {broker.data_dir}", "give this one another --data-dir")}
        for name, (argv, cause, fix) in cases.items():
            result = subprocess.run([sys.executable, "-m", "streamdedup", "broker", *argv], capture_output=True,
                                    text=True, timeout=60)
            err = result.stderr.strip()
            assert result.returncode == 2 and "Traceback" not in err and len(err.splitlines()) == 1, (name, err)
            assert err.startswith("streamdedup: error: noida-db did not start on 127.0.0.1:"), err
            assert cause in err and fix in err, (name, err)
    assert broker.process is not None and broker.process.poll() is None  # the running one runs on


def test_the_cause_of_a_brokers_exit_is_its_last_error_line_of_this_run(tmp_path):
    log = tmp_path / "broker.log"
    log.write_bytes(b"error: an earlier run's\n")
    since = log.stat().st_size
    with open(log, "ab") as handle:
        handle.write(b"noida-db 0.2.3 | data dir: d\n/x/noida-db: libc.so.6: weak version `GLIBC_2.39' not found\n"
                     b"error: kafka: port 9 is already in use\nhint: pick another port with --kafka-port <n>\n\n")
    assert exit_cause(log, since) == "kafka: port 9 is already in use"
    assert exit_cause(log, log.stat().st_size) == "" and exit_cause(tmp_path / "none") == ""
    log.write_bytes(b"panicked at main.rs\n")
    assert exit_cause(log) == "panicked at main.rs"
