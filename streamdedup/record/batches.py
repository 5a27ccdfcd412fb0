"""Input records -> batches: at most `max_pages` records, and no more once they hold `max_bytes`.

A batch is one atomic store write, and it is held in memory whole, each page several times over
(its bytes, its decoded and extracted text, its record in the outcome): 64 pages of 5 MB took 1.2
GB at the peak of `streamdedup dedup`, so 256 pages at the 10 MB cap would take ~10 GB. A batch
therefore also ends with the record that brings it to `max_bytes` (one record is a batch, however
big); small pages still fill `max_pages`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the worker's settings import this module for its default: no parsing stack for them
    from streamdedup.record.readers import RawRecord

DEFAULT_BATCH_BYTES = 64 << 20


MAX_BATCH_PAGES = 1 << 17  # the store numbers a batch's pages in 17 bits beside a seq's 47 (`store.chance.page_pairs`)


def check_batch_limits(max_pages: int, max_bytes: int, unit: str = "pages") -> None:
    """A batch of none, or of more pages than the store can number, refused in one line.

    A batch of none would take no record and report the run done; one of more than `MAX_BATCH_PAGES`
    would have two of its pages share a number in the store's chance checks."""
    if max_pages < 1 or max_bytes < 1:
        raise ValueError(f"batch_size is a number of {unit} and batch_bytes of bytes, each at least 1 (got "
                         f"{max_pages} and {max_bytes}): a batch of none would take no {unit[:-1]}")
    if max_pages > MAX_BATCH_PAGES:
        raise ValueError(f"batch_size is at most {MAX_BATCH_PAGES:,} {unit} (got {max_pages:,}): set a smaller "
                         f"batch_size (the default, 256, is what the benchmarks use)")


def record_bytes(raw: RawRecord) -> int:
    """What a record weighs in a batch: its line, or a WARC record's content."""
    if raw.data is not None:
        return len(raw.data)
    content = (raw.fields or {}).get("content")
    return len(content) if isinstance(content, str | bytes) else 0


def batches(records: Iterable[RawRecord], max_pages: int, max_bytes: int) -> Iterator[list[RawRecord]]:
    """The records in order, each in exactly one batch, none empty.

    A batch is yielded as soon as it is full, without reading the next record (a resumed job counts
    what it consumed by batch)."""
    batch: list[RawRecord] = []
    held = 0
    for raw in records:
        batch.append(raw)
        held += record_bytes(raw)
        if len(batch) >= max_pages or held >= max_bytes:
            yield batch
            batch, held = [], 0
    if batch:
        yield batch
