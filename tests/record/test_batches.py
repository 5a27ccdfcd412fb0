"""Batches end at `max_pages` records or once they hold `max_bytes`, whichever comes first."""

import pytest

from streamdedup.config import DetectorConfig
from streamdedup.record.batches import batches, record_bytes
from streamdedup.record.readers import RawRecord


def _records(sizes: list[int]) -> list[RawRecord]:
    return [RawRecord(f"memory:{i}", data=b"x" * size) for i, size in enumerate(sizes)]


def test_every_record_once_in_order_and_no_batch_past_its_bounds():
    sizes = [10, 10, 10, 500, 10, 10, 2000, 1, 1, 1, 1, 1]
    records = _records(sizes)
    got = list(batches(iter(records), max_pages=4, max_bytes=100))
    assert [r for batch in got for r in batch] == records
    assert [[record_bytes(r) for r in batch] for batch in got] == [[10, 10, 10, 500], [10, 10, 2000], [1, 1, 1, 1], [1]]
    for batch in got:
        assert batch and len(batch) <= 4 and sum(map(record_bytes, batch[:-1])) < 100  # only the last crosses


def test_a_batch_is_yielded_before_the_next_record_is_read():
    """A resumed job counts what it consumed by batch: the reader must not be ahead of the batch."""
    read = []

    def reader():
        for record in _records([60, 60, 60]):
            read.append(record)
            yield record

    got = batches(reader(), max_pages=10, max_bytes=100)
    assert len(next(got)) == 2 and len(read) == 2


def test_warc_fields_weigh_their_content():
    assert record_bytes(RawRecord("w@0", fields={"content": b"abc", "url": "u" * 50})) == 3
    assert record_bytes(RawRecord("w@0", fields={"url": "u"})) == 0


@pytest.mark.parametrize("field", ["batch_size", "batch_bytes"])
def test_a_batch_of_nothing_is_refused(field):
    """`--batch-size 0` took no page, and the run said it was done with 0 records."""
    with pytest.raises(ValueError, match="each at least 1"):
        DetectorConfig(**{field: 0})
