"""A Faust store rebuild whose records retention deletes while it reads them says so (real broker, real RocksDB)."""

from __future__ import annotations

import logging
import os

import orjson
import pytest
from conftest import page

from streamdedup.config import DetectorConfig
from streamdedup.detector import Detector
from streamdedup.runtime import faust_rebuild
from streamdedup.runtime.faust_journal import JournalKeeper
from streamdedup.runtime.topics import ensure_topics

TRANSACTIONS = 4  # of `PER_TRANSACTION` records each, each ended by a commit marker that takes an offset
PER_TRANSACTION = 6


def produce_in_transactions(settings) -> list[int]:
    """Small pages on partition 0 of the pages topic, in transactions; the offsets the records got."""
    from confluent_kafka import Producer

    ensure_topics(settings)
    producer = Producer(settings.client(**{"transactional.id": f"tx-{settings.group_id}"}))
    producer.init_transactions(30)
    offsets: list[int] = []
    for t in range(TRANSACTIONS):
        producer.begin_transaction()
        for i in range(PER_TRANSACTION):
            record = page(f"https://kept.example/{t}/{i}", f"<p>story {t} {i}: " + "word " * 40 + "</p>")
            producer.produce(settings.topics.pages, orjson.dumps(record), partition=0,
                             on_delivery=lambda err, m: offsets.append(m.offset()) if err is None else None)
        producer.commit_transaction(30)
    assert producer.flush(30) == 0
    return sorted(offsets)


def delete_below(settings, offset: int) -> None:
    """Records of partition 0 of the pages topic below `offset` deleted, as retention deletes them."""
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient

    tp = TopicPartition(settings.topics.pages, 0, offset)
    admin = AdminClient(settings.client())  # held until the answer: a client let go never answers
    assert admin.delete_records([tp], request_timeout=30)[tp].result(30).low_watermark == offset


# Tansu closes the connection on DeleteRecords ("Local: Broker transport failure"): it cannot delete a
# partition's first records, so CI's Tansu pass skips this (noida-db answers it, as Kafka does)
@pytest.mark.skipif(os.environ.get("STREAMDEDUP_TEST_BROKER") == "tansu", reason="Tansu has no DeleteRecords")
@pytest.mark.parametrize("deleted_below", ["second transaction", "every record"])
def test_records_retention_deletes_during_a_rebuild_are_named_in_one_warning_transaction_markers_not(
        settings, tmp_path, caplog, monkeypatch, deleted_below):
    """Four transactions of six pages (each commit marker takes an offset: gaps that are not lost data) are on the
    pages topic. A new store is rebuilt up to the first record of the fourth; as it starts reading (after it asked
    where the partition starts), retention deletes the records below the second transaction, or every record.
    The rebuild replays what is left and ends with one WARNING naming exactly the offsets deleted, not the
    markers' (`Rebuilt.lost`). Before: it carried on past the jump without a word ("store rebuilt", and the
    pages after it judged without the deleted ones); with every record deleted, it stopped the app saying the
    topic was deleted or created again."""
    offsets = produce_in_transactions(settings)
    assert offsets[PER_TRANSACTION] > PER_TRANSACTION, f"no offset gap for the markers: {offsets}"
    until = offsets[3 * PER_TRANSACTION]  # the first record of the fourth transaction: the app judges from it
    low = offsets[PER_TRANSACTION] if deleted_below == "second transaction" else offsets[-1] + 2
    read_range = faust_rebuild.read_range

    def read_once_retention_deleted(consumer, topic, partition, first, *args, **kwargs):
        delete_below(settings, low)  # retention deletes as the rebuild's read starts: its first offset is gone
        yield from read_range(consumer, topic, partition, first, *args, **kwargs)

    monkeypatch.setattr(faust_rebuild, "read_range", read_once_retention_deleted)
    caplog.set_level(logging.WARNING, logger="streamdedup.runtime.faust_rebuild")
    with Detector(DetectorConfig(), tmp_path / "store") as detector:
        keeper = JournalKeeper(detector, settings.topics.pages, 0)
        rebuilt = faust_rebuild.rebuild(keeper, settings, settings.group_id, until, new_store=True, stall_s=20)
        gone = min(low, until)
        replayed = [o for o in offsets if gone <= o < until]
        assert keeper.next_offset() == (replayed[-1] + 1 if replayed else None)
    said = [r.getMessage() for r in caplog.records if "deleted by retention" in r.getMessage()]
    assert said == [f"{settings.topics.pages} partition 0: up to {gone} records were deleted by retention while its "
                    f"store was rebuilt from them (offsets 0..{gone - 1}): they are not in the store, so the pages "
                    f"judged from offset {until} on are judged without them and copies of them come out unique. "
                    "Give the pages topic a retention.ms longer than a rebuild takes to read it (or accept it)"], said
    assert rebuilt is not None and (rebuilt.records, rebuilt.lost) == (len(replayed), gone), rebuilt
    assert f"store rebuilt from offsets 0..{until - 1} ({len(replayed)} records)" in caplog.text


@pytest.mark.skipif(os.environ.get("STREAMDEDUP_TEST_BROKER") == "tansu", reason="Tansu has no DeleteRecords")
@pytest.mark.parametrize("store_read, deleted_below", [("nothing", "second transaction"),
                                                       ("first transaction", "every record")])
def test_records_retention_deleted_before_a_rebuild_are_named_in_its_first_line(
        settings, tmp_path, caplog, store_read, deleted_below):
    """Four transactions of six pages are on the pages topic; the store has read nothing (new), or the first
    transaction. Before the rebuild up to the first record of the fourth starts, retention has deleted the records
    below the second transaction, or every record (the partition now starts past the app's start). The rebuild's
    first WARNING names the offsets from the store's next one up to the partition's start, cut at the app's start
    (`retention.deleted_by_retention`, as the read's own jumps are), and counts them "up to" (commit markers take
    offsets too); it reads from the partition's start, or reads nothing. Before: the line named the offsets up to
    the partition's start even past the app's start ("records 6..27" for an app starting at offset 21), and
    called every offset a record."""
    offsets = produce_in_transactions(settings)
    until = offsets[3 * PER_TRANSACTION]
    low = offsets[PER_TRANSACTION] if deleted_below == "second transaction" else offsets[-1] + 2
    caplog.set_level(logging.WARNING, logger="streamdedup.runtime.faust_rebuild")
    with Detector(DetectorConfig(), tmp_path / "store") as detector:
        keeper = JournalKeeper(detector, settings.topics.pages, 0)
        if store_read == "first transaction":
            faust_rebuild.rebuild(keeper, settings, settings.group_id, offsets[PER_TRANSACTION], new_store=True,
                                  stall_s=20)
        start = keeper.next_offset() or 0
        assert start == (0 if store_read == "nothing" else offsets[PER_TRANSACTION - 1] + 1), start
        delete_below(settings, low)
        caplog.clear()
        rebuilt = faust_rebuild.rebuild(keeper, settings, settings.group_id, until, new_store=store_read == "nothing",
                                        stall_s=20)
    gone = min(low, until)
    lost = (f"; up to {gone - start} records were deleted by retention before it started (offsets {start}..{gone - 1}):"
            " the pages judged from them are not rebuilt, and copies of them come out unique")
    store = "is new" if store_read == "nothing" else f"has read it up to offset {start}"
    first = f"{settings.topics.pages} partition 0: its store {store}, but the app starts at offset {until}"
    if low < until:
        first += (" (its state folder was lost, or the partition was judged on another instance since): rebuilding it "
                  f"from offsets {low}..{until - 1} without producing (up to {until - low} records; the partition's "
                  "records wait meanwhile, the app judges its other partitions and keeps them all)")
    said = [r.getMessage() for r in caplog.records]
    assert said[0] == first + lost, said
    assert not [line for line in said[1:] if "retention" in line], said  # nothing deleted while it read
    replayed = [o for o in offsets if low <= o < until]
    assert rebuilt is not None and (rebuilt.first, rebuilt.records, rebuilt.lost) == (low, len(replayed), 0), rebuilt
