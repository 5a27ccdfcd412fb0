"""The store's two index files: the in-memory index and the chance-check words as a clean close left them.

`SignatureStore.close` writes both (`save_index_files`); the next open loads them once
(`load_index_files`) instead of rebuilding the index from the page records. Each file is
`index_snapshot`'s format; which of the two may stand in a store's directory is `opening`'s.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from streamdedup.store.memory_index import MemoryIndex
from streamdedup.store.opening import _SNAPSHOT, _WORDS_SNAPSHOT

log = logging.getLogger(__name__)


class LoadedIndex(NamedTuple):
    """What `load_index_files` found: the index and words (None: rebuild them), and what `stats` says of it."""

    memory: MemoryIndex | None
    words: MemoryIndex | None
    state: str


def load_index_files(path: Path, version: int, needs_words: bool,
                     check_memory: Callable[[int, str], None]) -> LoadedIndex:
    """The index as the store at `path` was last closed, if no write changed it since.

    The files name the store's `index_version` (`version`), which every write that changes the
    index counts up, and their bytes are those the close wrote (a checksum); else the index and
    words are None, to be rebuilt from the page records. A damaged file is a WARNING. `needs_words`:
    the store keeps chance-check words, so an index without them is not used either.
    `check_memory(bytes, what)` refuses a table the process has no memory for (raises). The files
    are used once: deleted as they are read, so a crash later never finds them."""
    index_path, words_path = path / _SNAPSHOT, path / _WORDS_SNAPSHOT
    if not index_path.exists():
        words_path.unlink(missing_ok=True)
        return LoadedIndex(None, None, "none: the index was rebuilt from the page records")
    size = sum(MemoryIndex.snapshot_table_bytes(file, version) or file.stat().st_size
               for file in (index_path, words_path) if file.exists())  # the tables as loaded, free slots too
    check_memory(size, "its snapshot")  # kept: a run with more memory loads it
    memory = words = None
    reading = index_path
    try:
        memory = MemoryIndex.load(index_path, version)
        reading = words_path
        if words_path.exists():
            words = MemoryIndex.load(words_path, version)
    except (OSError, ValueError) as err:  # SnapshotDamaged is a ValueError
        memory = None
        state = f"damaged ({reading.name}: {err}): the index was rebuilt from the page records"
        log.warning("the index snapshot of the store at %s is damaged (%s: %s): the index is rebuilt from "
                    "the page records", path, reading.name, err)
    else:
        state = "loaded"
    index_path.unlink()
    words_path.unlink(missing_ok=True)
    if memory is None or (words is None and needs_words):
        if state == "loaded":  # not believed, as it is not this store's last close's
            state = ("stale (an earlier format, or older than the store's last index change): "
                     "the index was rebuilt from the page records")
        return LoadedIndex(None, None, state)  # both or neither: the words are rebuilt with the index
    return LoadedIndex(memory, words or MemoryIndex(), state)


def save_index_files(path: Path, version: int, memory: MemoryIndex, words: MemoryIndex) -> None:
    """Write the index and words of the store at `path` for its next open, each through a temporary file.

    The index last: its file is what says the files are there."""
    for name, table in ((_WORDS_SNAPSHOT, words), (_SNAPSHOT, memory)):
        tmp = path / (name + ".tmp")
        table.save(tmp, version)
        os.replace(tmp, path / name)
