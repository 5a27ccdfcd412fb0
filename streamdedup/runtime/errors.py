"""The worker's stop: an error it cannot go on after, raised by the loop or by a partition handler."""

from __future__ import annotations


class WorkerStopped(RuntimeError):
    """The worker cannot go on; the message names the cause and the fix (one line for the CLI)."""
