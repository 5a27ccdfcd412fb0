"""The in-memory index's snapshot file: what a clean close writes and the next open loads.

The header, every segment's header, then each segment's slots in runs of `_SNAPSHOT_RUN`, each
run a bitmap of the slots in use (postings and tombstones) and those slots only, then the
xxh3-64 of all of it (`_CHECKSUM`). The free slots (a third to a half of a table) are not
written: loading fills the rest with them. A snapshot of another format, another store version
or another number of segments is not read (None: the store rebuilds its index from the page
records); one whose bytes are not those written raises `SnapshotDamaged`.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Sequence
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import xxhash

from streamdedup.jit import numba
from streamdedup.store.index_kernels import EMPTY, SEGMENTS
from streamdedup.store.index_segments import SLOT, SLOT_BYTES, _Segment

# \x02: segments; \x03: a slot's two words side by side; \x04: used slots only; \x05: a checksum last
_MAGIC = b"sdidx\x00\x05\x00"
_CHECKSUM = struct.Struct("<Q")  # a snapshot's last 8 bytes: the xxh3-64 of every byte before them
_SNAPSHOT_RUN = 1 << 20  # slots a snapshot's bitmap covers before the used slots among them (12 MiB)
_HEADER = struct.Struct("<8sQQ")  # a snapshot's: magic, version, segments
_SEGMENT_HEADER = struct.Struct("<QQQ")  # slots, postings, tombstones


def _pack_run(words: np.ndarray, low: np.ndarray, bitmap: np.ndarray, kept_words: np.ndarray,
              kept_low: np.ndarray) -> int:
    """A snapshot's run of slots (`MemoryIndex.save`).

    The bitmap of the slots in use (first slot in the high bit, as numpy's packbits; the last
    byte's bits past the run 0), and those slots' words in order; how many. In numpy, not compiled:
    the same bytes, and no compiled version to load from numba's cache at every store's close (~3 ms)."""
    used = words != EMPTY
    bitmap[:] = np.packbits(used)
    kept = int(np.count_nonzero(used))
    kept_words[:kept] = words[used]
    kept_low[:kept] = low[used]
    return kept


@numba.njit(cache=True)
def _bits_set(bitmap: np.ndarray) -> int:
    count = 0
    for byte in bitmap:
        while byte:
            byte &= byte - np.uint8(1)
            count += 1
    return count


@numba.njit(cache=True)
def _unpack_run(words: np.ndarray, low: np.ndarray, bitmap: np.ndarray, kept_words: np.ndarray,
                kept_low: np.ndarray) -> None:
    """`_pack_run` undone: the slots in use from the kept words, the others free."""
    kept = 0
    for i in range(len(words)):
        if (bitmap[i >> 3] >> (7 - (i & 7))) & 1:
            words[i], low[i] = kept_words[kept], kept_low[kept]
            kept += 1
        else:
            words[i], low[i] = EMPTY, 0


class SnapshotDamaged(ValueError):
    """A snapshot file whose bytes are not those `MemoryIndex.save` wrote (the reason is its message)."""


def _bitmap_bytes(slots: int) -> int:
    """The bytes of a snapshot's bitmaps for a segment of `slots` slots (one per run of `_SNAPSHOT_RUN`)."""
    runs, last = divmod(slots, _SNAPSHOT_RUN)
    return runs * ((_SNAPSHOT_RUN + 7) // 8) + (last + 7) // 8


def save_segments(path: Path, version: int, segments: Sequence[_Segment]) -> None:
    """The segments of a table to a file, synced, for `load_segments` (the format: the module's docstring).

    Growths beside the batches finished first (`MemoryIndex.save`)."""
    checksum = xxhash.xxh3_64()

    def write(data: bytes | memoryview) -> None:
        checksum.update(data)
        out.write(data)

    with open(path, "wb") as out:
        write(_HEADER.pack(_MAGIC, version, len(segments)))
        for segment in segments:
            write(_SEGMENT_HEADER.pack(len(segment.words), segment.postings, segment.tombstones))
        kept = np.empty(_SNAPSHOT_RUN, dtype=SLOT)
        bitmap = np.empty((_SNAPSHOT_RUN + 7) // 8, dtype=np.uint8)
        for segment in segments:
            for start in range(0, len(segment.cells), _SNAPSHOT_RUN):
                stop = min(start + _SNAPSHOT_RUN, len(segment.cells))
                bits = bitmap[: (stop - start + 7) // 8]
                count = _pack_run(segment.words[start: stop], segment.low[start: stop], bits, kept["word"],
                                  kept["low"])
                write(bits.data)
                write(kept[:count].data)
        out.write(_CHECKSUM.pack(checksum.intdigest()))
        out.flush()
        os.fsync(out.fileno())


def read_headers(data: BinaryIO, version: int, checksum: Any = None) -> list[tuple[int, int, int]] | None:
    """The segments' (slots, postings, tombstones) from a snapshot's start, if it is current.

    The segments' (slots, postings, tombstones) from a snapshot's start, if it is one `save_segments`
    wrote in this format, at this `version` of the store (None if not: an earlier format, a
    stale snapshot). Raises SnapshotDamaged if its headers do not fit together or the file is
    not as long as they say (a damaged header is not believed: no table is sized from it).
    `checksum`: an xxh3-64 fed the bytes read."""
    head = data.read(_HEADER.size)
    if len(head) != _HEADER.size:
        raise SnapshotDamaged(f"{len(head)} bytes, shorter than its header")
    magic, saved, count = _HEADER.unpack(head)
    if magic[:6] != _MAGIC[:6]:
        raise SnapshotDamaged("not a snapshot's header")
    if magic != _MAGIC or saved != version or count != SEGMENTS:
        return None
    heads = data.read(count * _SEGMENT_HEADER.size)
    if len(heads) != count * _SEGMENT_HEADER.size:
        raise SnapshotDamaged("cut short in its segments' headers")
    if checksum is not None:
        checksum.update(head)
        checksum.update(heads)
    segments = list(_SEGMENT_HEADER.iter_unpack(heads))
    if any(postings + tombstones > slots for slots, postings, tombstones in segments):
        raise SnapshotDamaged("a segment's header counts more postings than slots")
    length = (_HEADER.size + count * _SEGMENT_HEADER.size + _CHECKSUM.size
              + sum(_bitmap_bytes(slots) + (postings + tombstones) * SLOT_BYTES
                    for slots, postings, tombstones in segments))
    size = os.fstat(data.fileno()).st_size
    if size != length:
        raise SnapshotDamaged(f"{size:,} bytes where its headers say {length:,}")
    return segments


def snapshot_table_bytes(path: Path, version: int) -> int | None:
    """The bytes of the table a snapshot holds once loaded, from its headers.

    The bytes of the table a snapshot holds once loaded (its free slots included, which
    the file leaves out), from its headers; None if `load_segments` would not read it."""
    try:
        with open(path, "rb") as data:
            heads = read_headers(data, version)
    except SnapshotDamaged:
        return None
    return None if heads is None else sum(slots for slots, _, _ in heads) * SLOT_BYTES


def load_segments(path: Path, version: int) -> list[_Segment] | None:
    """The segments of the table `save_segments` wrote, if current.

    The segments of the table `save_segments` wrote, if it was saved in this format at this `version` of the store,
    with these segments (None if not); raises SnapshotDamaged if its bytes are not those `save_segments`
    wrote (its checksum, its counts or its length differ). Each run of slots is filled in
    place, so loading holds the table and one run's bytes, not the table twice."""
    segments = []
    checksum = xxhash.xxh3_64()
    with open(path, "rb") as data:
        heads = read_headers(data, version, checksum)
        if heads is None:
            return None
        for slots, postings, tombstones in heads:
            segment = _Segment(np.empty(slots, dtype=SLOT), postings, tombstones)
            used_slots = 0
            for start in range(0, slots, _SNAPSHOT_RUN):
                stop = min(start + _SNAPSHOT_RUN, slots)
                bitmap = np.fromfile(data, dtype=np.uint8, count=(stop - start + 7) // 8)
                count = _bits_set(bitmap)
                kept = np.fromfile(data, dtype=SLOT, count=count)
                if len(bitmap) != (stop - start + 7) // 8 or len(kept) != count:
                    raise SnapshotDamaged("its bitmaps count more slots than it holds")
                checksum.update(bitmap.data)
                checksum.update(kept.data)
                _unpack_run(segment.words[start: stop], segment.low[start: stop], bitmap, kept["word"], kept["low"])
                used_slots += count
            if used_slots != postings + tombstones:
                raise SnapshotDamaged("a segment's bitmaps and header count different slots")
            segments.append(segment)
        stored = data.read(_CHECKSUM.size)  # the file's length is what the headers say: nothing after
        if len(stored) != _CHECKSUM.size or _CHECKSUM.unpack(stored)[0] != checksum.intdigest():
            raise SnapshotDamaged("its checksum does not match its bytes")
    return segments
