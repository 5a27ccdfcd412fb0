"""A plain RocksDB (one column family, raw bytes) for the small stores of the scale-out steps.

The gather step's pending verdicts and the fingerprint step's site templates."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

from rocksdict import Options, Rdict

from streamdedup.store import process_memory


def open_plain_db(path: Path) -> Rdict:
    """Open (or create) a plain RocksDB at `path` within the process's cache and memtable budget."""
    path.mkdir(parents=True, exist_ok=True)
    options = Options(raw_mode=True)
    options.create_if_missing(True)
    options.set_block_based_table_factory(process_memory.table())  # the process's cache and memtable budget
    process_memory.memtable_options(options)
    return Rdict(str(path), options=options)


def multi_get(db: Rdict, keys: list[bytes]) -> list[bytes | None]:
    """One multi_get (rocksdict's `get` of a list), typed; no keys, no call."""
    return cast("list[bytes | None]", db.get(cast(Any, keys))) if keys else []
