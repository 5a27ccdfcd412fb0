"""One worker process a state directory: a lock taken before the worker joins its group.

A second worker started on a running one's `--state` found its stores locked only once the group
had given it partitions, and by then it had joined under the same worker id (the host name): the
group fenced the running worker, and both stopped. The lock is taken first, so the second one
stops alone, in one line, and the running one is left as it is.

A POSIX record lock (`fcntl.lockf`): held by the process, released when it exits however it
exits; workers of one process (tests, a crash simulated in process) do not exclude each other.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from streamdedup.runtime.errors import WorkerStopped

LOCK_FILE = "worker.lock"


class StateInUse(WorkerStopped):
    """Another process's worker holds this state directory."""


def lock_state_dir(state_dir: Path) -> int:
    """Take the state directory for this process; its lock file's descriptor (closing it releases the lock)."""
    if state_dir.exists() and not state_dir.is_dir():  # mkdir would say only "[Errno 17] File exists"
        raise NotADirectoryError(f"--state {state_dir} is a file: give --state a folder (it is created if missing)")
    try:  # a read-only mount, a parent that is a file or not ours: said once, with the fix
        state_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(state_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as err:
        raise OSError(f"the state directory {state_dir} cannot be written ({err.strerror or err}): give --state "
                      "(STREAMDEDUP_STATE_DIR) a folder this worker can create and write") from None
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        holder = os.pread(fd, 64, 0).decode("utf-8", "replace").strip()
        os.close(fd)
        raise StateInUse(f"the state directory {state_dir} is in use by another worker ({holder or 'another process'}):"
                         " give each worker its own --state and --worker-id; the running one goes on") from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"pid {os.getpid()} on {os.uname().nodename}\n".encode(), 0)
    return fd
