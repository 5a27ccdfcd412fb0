"""A topic or broker that starts over: the stores hold offsets of a partition that is gone.

Issue 56: the input topic deleted and created again (or a broker back without its data, or a new
cluster) left the stores' offsets ahead of the new partitions, and the worker started there:
records 0..N-1 of the new topic were never judged, exit 0, no warning.
"""

from __future__ import annotations

import os
import time
from dataclasses import replace

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from conftest import make_article, page, wrap_in_template

from runtime.conftest import read_topic
from runtime.test_worker import BAD, outputs, send, verdicts_by_id
from streamdedup.config import DetectorConfig
from streamdedup.runtime.topic_reset import READ_JOURNAL_SLOTS, ReadJournal, _by_watermarks, journal_slot_key
from streamdedup.runtime.topics import ensure_topics
from streamdedup.runtime.worker import TopicStartedOver, Worker


def pages(first: int, articles: int) -> list:
    """Three copies of each article (on three sites), ids and texts of their own from `first` on."""
    return [page(f"https://{site.lower()}.example/{first + i}", wrap_in_template(make_article(first + i, paragraphs=4),
                                                                                 site), f"2024-03-01T0{j}:00:00Z")
            for i in range(articles) for j, site in enumerate(("Alpha", "Beta", "Gamma"))]


def delete_topics(settings, names) -> None:
    """Delete the topics and wait until the broker no longer lists them."""
    admin = AdminClient(settings.client())
    names = [name for name in names if name in admin.list_topics(timeout=10).topics]
    for future in admin.delete_topics(list(names), operation_timeout=10).values():
        future.result(15)
    deadline = time.monotonic() + 15
    while set(names) & set(admin.list_topics(timeout=10).topics) and time.monotonic() < deadline:
        time.sleep(0.1)


def judged_once(got) -> int:
    """How many pages got an outcome, each id once (verdicts_by_id asserts no id twice)."""
    return len(verdicts_by_id(got)) + len(got["rejected"])


# CI's Tansu pass (.ci/run) runs the [global] case alone: there every topic is deleted, so it meets
# Tansu's way (the group's offsets dropped with the topic) and the read-back of the last record;
# the refusal and the local topology do not depend on the broker, and Tansu's group joins (~9 s a
# worker) make each case ~40 s
NOT_ON_TANSU = pytest.mark.skipif(os.environ.get("STREAMDEDUP_TEST_BROKER") == "tansu",
                                  reason="broker-independent past the detection, which the [global] case checks on Tansu")


@NOT_ON_TANSU
def test_a_recreated_input_topic_is_refused_with_the_fix_named(settings):
    send(settings, pages(0, 4))
    assert Worker(settings, DetectorConfig()).run(idle_timeout_s=2).decided == 12
    delete_topics(settings, [settings.topics.pages])
    new = pages(100, 8)  # more records than the store has read: the old worker skipped the first 12
    send(settings, new)
    with pytest.raises(TopicStartedOver) as refused:
        Worker(settings, DetectorConfig()).run(idle_timeout_s=2)
    message = str(refused.value)
    assert f"{settings.topics.pages}[0] started over" in message and "--on-topic-reset restart" in message
    assert "\n" not in message
    assert judged_once(outputs(settings)) == 12  # the old pages' outputs; none of the new was skipped
    # the operator's fix: every new record judged once, from the beginning of the new topic
    stats = Worker(replace(settings, on_topic_reset="restart"), DetectorConfig()).run(idle_timeout_s=2)
    assert stats.decided == len(new) and stats.replayed == 0
    assert judged_once(outputs(settings)) == 12 + len(new)


# Tansu acknowledged the last transaction of the second worker (offset 110 of pages.parts) and
# then gave the next worker the group's offset of the one before (108): the store is found ahead
# of the group (docs/limitations.md). Seen since the gather steps ask each other for clusters,
# which adds batches that emit nothing; noida-db keeps the offset.
TANSU_LOST_OFFSET = pytest.mark.skipif(os.environ.get("STREAMDEDUP_TEST_BROKER") == "tansu",
                                       reason="Tansu returns the group's previous offset after a committed transaction")


@pytest.mark.parametrize("topology", [pytest.param("global", marks=TANSU_LOST_OFFSET),
                                      pytest.param("local", marks=NOT_ON_TANSU)])
def test_a_broker_that_lost_everything_is_judged_from_the_beginning_on_restart(settings, topology, caplog):
    """Every topic gone (a broker back without its data), the group too for the local topology:
    each new record gets exactly one output; the global topology's index and parts stores start
    over with their topics."""
    settings = replace(settings, topology=topology, on_topic_reset="restart")
    send(settings, pages(0, 4) + BAD)
    assert Worker(settings, DetectorConfig()).run(idle_timeout_s=2).decided == 15
    delete_topics(settings, [settings.topics.pages, *settings.topics.outputs, *settings.topics.internal,
                             settings.topics.settings])
    if topology == "local":
        settings = replace(settings, group_id=settings.group_id + "-new")
    new = pages(100, 8) + BAD
    send(settings, new)
    caplog.set_level("WARNING")
    stats = Worker(settings, DetectorConfig()).run(idle_timeout_s=2)
    assert stats.decided == len(new) and stats.replayed == 0
    got = outputs(settings)
    assert judged_once(got) == len(new) and len(got["rejected"]) == len(BAD)
    assert f"{settings.topics.pages}[0] started over" in caplog.text
    # and again: the store now holds the new topic's offsets, nothing is judged twice
    assert Worker(settings, DetectorConfig()).run(idle_timeout_s=1).decided == 0


@pytest.mark.parametrize("topology", [pytest.param("global", marks=TANSU_LOST_OFFSET),
                                      pytest.param("local", marks=NOT_ON_TANSU)])
def test_a_broker_that_lost_the_tail_of_a_partition_judges_only_the_records_it_did_not_read(settings, topology,
                                                                                           caplog):
    """A broker back without the last records it acknowledged keeps the ones before: those had their
    outputs, and are not judged again (an operator review: 169 of 473 pages twice); the records
    written after it came back are judged once each."""
    settings = replace(settings, topology=topology, on_topic_reset="restart")
    send(settings, pages(0, 4) + BAD)
    assert Worker(settings, DetectorConfig()).run(idle_timeout_s=2).decided == 15
    kept = read_topic(settings, settings.topics.pages)[:9]  # the broker lost offsets 9..14
    delete_topics(settings, [settings.topics.pages])
    ensure_topics(settings)
    producer = Producer(settings.client())
    for message in kept:  # the same records at the same offsets: key, value and time
        producer.produce(settings.topics.pages, message.value(), message.key(), timestamp=message.timestamp()[1])
    producer.flush(10)
    new = pages(100, 4)
    send(settings, new)
    caplog.set_level("WARNING")
    stats = Worker(settings, DetectorConfig()).run(idle_timeout_s=2)
    assert stats.decided == len(new) and stats.replayed == 0
    assert judged_once(outputs(settings)) == 15 + len(new)  # every input once: none of the 9 kept twice
    assert f"{settings.topics.pages}[0] started over" in caplog.text
    assert "offsets 0..8 are the records its store read" in caplog.text


@NOT_ON_TANSU
def test_a_group_commit_below_the_records_kept_is_where_judging_starts(settings, caplog):
    """The broker kept records 0..8 but the group's commit is at 5 (the outputs of 5..8, written
    after them, may be lost too): judged again from 5, twice rather than never."""
    # no static member: noida-db refuses a commit from outside a group that still has one
    settings = replace(settings, topology="local", on_topic_reset="restart", static_membership=False)
    send(settings, pages(0, 4) + BAD)
    assert Worker(settings, DetectorConfig()).run(idle_timeout_s=2).decided == 15
    kept = read_topic(settings, settings.topics.pages)[:9]
    delete_topics(settings, [settings.topics.pages])
    ensure_topics(settings)
    producer = Producer(settings.client())
    for message in kept:
        producer.produce(settings.topics.pages, message.value(), message.key(), timestamp=message.timestamp()[1])
    producer.flush(10)
    committer = Consumer(settings.client(**{"group.id": settings.group_id}))  # the group's commit, moved to 5
    committer.commit(offsets=[TopicPartition(settings.topics.pages, 0, 5)], asynchronous=False)
    committer.close()
    caplog.set_level("WARNING")
    stats = Worker(settings, DetectorConfig()).run(idle_timeout_s=2)
    assert stats.decided == 4 and "the group committed offset 5, below 9: judging from 5" in caplog.text


def test_the_read_journal_keeps_the_last_batches_and_the_newest_word_on_an_offset():
    metas: dict[str, bytes] = {}
    for seq in range(READ_JOURNAL_SLOTS + 3):  # the ring wraps: the 3 oldest batches are gone
        metas[journal_slot_key("t", 0, seq % READ_JOURNAL_SLOTS)] = ReadJournal.slot_value(
            seq, [(2 * seq, b"a" * 16), (2 * seq + 1, b"b" * 16)])
    journal = ReadJournal.read(metas.get, "t", 0, last_offset=10**9)
    assert list(journal.entries) == list(range(6, 2 * (READ_JOURNAL_SLOTS + 3)))
    assert journal.entries[6] == b"a" * 8  # 8 bytes of the digest
    # a topic started over at offset 20 and its next batch read 20..30 (in the oldest slot, of offsets
    # 6 and 7): its digests win, and the old topic's entries past offset 30 are not the new topic's
    seq = READ_JOURNAL_SLOTS + 3
    metas[journal_slot_key("t", 0, seq % READ_JOURNAL_SLOTS)] = ReadJournal.slot_value(
        seq, [(offset, b"n" * 16) for offset in range(20, 31)])
    journal = ReadJournal.read(metas.get, "t", 0, last_offset=30)
    assert list(journal.entries) == list(range(8, 31)) and journal.entries[20] == journal.entries[30] == b"n" * 8
    assert journal.entries[19] == b"b" * 8


def test_what_the_partition_offsets_say_when_the_record_cannot_be_read():
    assert _by_watermarks(0, 5, 7).started_over  # the partition ends below the record the store read
    assert _by_watermarks(0, 7, 7).started_over
    retained = _by_watermarks(50, 90, 7)  # deleted by retention: going on, said so
    assert not retained.started_over and not retained.verified and "retention" in retained.detail
