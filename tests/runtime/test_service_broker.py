"""`streamdedup broker` as a service: SIGTERM stops noida-db too, so nothing holds the port."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from streamdedup.runtime.broker import free_port


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
