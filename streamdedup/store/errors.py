"""The errors a store can raise that a user can mend.

Each message names the fix, and the command line prints it alone, without a traceback. Apart from
the stores, so that every module reading RocksDB (the signature store, the template store) raises
the same ones."""

from __future__ import annotations

import os
from typing import Any


class StoreError(Exception):
    """A store that cannot be used as it is (in use, damaged, not a store).

    The message names the fix; the command line prints it alone, without a traceback."""


class StoreLocked(StoreError):
    """Another process (or another open of this process) holds the store."""


class StoreCorrupt(StoreError):
    """RocksDB found the store damaged (a checksum mismatch, a missing file)."""


class StoreConfigMismatch(StoreError, ValueError):
    """The store was built with other parameters; mixing signatures would give wrong answers."""


def store_error(err: BaseException, path: str | os.PathLike[str] | None = None) -> StoreError | None:
    """The StoreError a RocksDB exception means (rocksdict raises plain Exceptions whose text says 'IO error: ...

    LOCK' or 'Corruption: ...'), or None if it is no store error."""
    if isinstance(err, StoreError):
        return err
    text = str(err)
    where = f"the store at {path}" if path is not None else "a store"
    if "/LOCK" in text and "lock hold by current process" in text:  # RocksDB's words for a second open here
        return StoreLocked(f"{where} is open already in this process (another Deduplicator or detector on it): "
                           "close that one first, or give this one another state directory")
    if "/LOCK" in text and "lock" in text.lower():
        return StoreLocked(f"{where} is in use by another process ({text}): stop the other process that uses "
                           "it (a `streamdedup` dedup or worker, or a Deduplicator open in another Python process, "
                           "such as another notebook's kernel), or give this one another state directory")
    if "Corruption:" in text:
        return StoreCorrupt(damaged(where, text))
    if "IO error" in text and ("Read-only file system" in text or "Permission denied" in text):
        return StoreError(f"{where} cannot be written ({text}): give this run a state directory it may write "
                          "(--state, or STREAMDEDUP_STATE_DIR for the worker), or make that one writable")
    return None


def damaged(where: str, what: str) -> str:
    """The one line that says a store is damaged and how to recover (restore, or rebuild from the inputs)."""
    return (f"{where} is damaged ({what}); its pages cannot be trusted. Restore the directory from a backup, "
            "or move it away and start again: a worker rebuilds a missing store from Kafka, file mode by "
            "rerunning the inputs with a new --state")


def check_iterator(it: Any, path: str | os.PathLike[str]) -> None:
    """Raise the StoreError a RocksDB iterator's status holds, if any.

    At a damaged block an iterator just stops, and says so only there."""
    try:
        it.status()
    except Exception as err:  # noqa: BLE001 - rocksdict raises plain Exceptions
        raise store_error(err, path) or StoreCorrupt(damaged(f"the store at {path}", str(err))) from None
