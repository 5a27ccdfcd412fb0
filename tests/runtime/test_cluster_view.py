"""The news feed's reader (issue 58): `ClusterReader` restarted mid-stream from its group's
committed offsets has the stories of a reader that never stopped, and hands back only what is new."""

from __future__ import annotations

import time
from dataclasses import replace

import orjson
import pytest
from confluent_kafka import Producer

from runtime.scaleout.test_one_engine import bridged_clusters
from runtime.scaleout.test_topologies import syndicated_crawl
from streamdedup.clusters import ClusterReader, Stories, page_fields, view_event, view_key
from streamdedup.runtime.topics import ensure_topics
from streamdedup.testing import run_records


def poll_until(reader: ClusterReader, count: int, timeout_s: float = 30.0) -> list[dict]:
    """The new events the reader hands back until there are `count` of them."""
    got: list[dict] = []
    deadline = time.monotonic() + timeout_s
    while len(got) < count and time.monotonic() < deadline:
        got += reader.poll(0.5)
    assert len(got) == count, f"{len(got)} new events of {count}"
    return got


def test_a_reader_restarted_mid_stream_has_the_stories_of_one_that_never_stopped(settings, tmp_path):
    settings = replace(settings, partitions=3)  # a story's events on several partitions, in no order between them
    ensure_topics(settings)
    records = sorted([r for r in syndicated_crawl(6) if isinstance(r, dict)] + bridged_clusters(),
                     key=lambda r: r["fetched_at"])
    outcomes = [o for o in run_records(records, tmp_path / "file-mode") if o.status != "rejected"]
    events = [view_event(o.dedup, *page_fields(o.record)) for o in outcomes]
    assert any(e.get("merged") for e in events[len(events) // 2:]), "the bridge comes after the restart"
    # and a late match joining two stories that nothing else joins
    alone = [e for e in events if e["type"] == "created"]
    events.append({"type": "late_match", "page_id": alone[-1]["page_id"], "duplicate_of": alone[0]["page_id"],
                   "cluster_id": alone[0]["cluster_id"]})
    first, second = events[:len(events) // 2], events[len(events) // 2:]
    producer = Producer(settings.client())
    topic = settings.topics.cluster_view

    def produce(batch: list[dict]) -> None:
        for event in batch:
            producer.produce(topic, orjson.dumps(event), view_key(event))
        assert producer.flush(30) == 0

    produce(first)
    never_stopped = ClusterReader(settings.bootstrap_servers, f"{settings.group_id}-a", topic)
    restarted = ClusterReader(settings.bootstrap_servers, f"{settings.group_id}-b", topic)
    poll_until(never_stopped, len(first))
    assert sorted(e["page_id"] for e in poll_until(restarted, len(first))) == sorted(e["page_id"] for e in first)
    restarted.commit()
    restarted.close()

    produce(second)
    poll_until(never_stopped, len(second))
    restarted = ClusterReader(settings.bootstrap_servers, f"{settings.group_id}-b", topic)
    new = poll_until(restarted, len(second))
    assert sorted(view_key(e) for e in new) == sorted(view_key(e) for e in second)  # only what is new
    expected = Stories()
    for event in events:
        expected.apply(event)
    assert restarted.stories.stories() == never_stopped.stories.stories() == expected.stories()
    assert restarted.stories.story_of(alone[-1]["page_id"]) == restarted.stories.story_of(alone[0]["page_id"])
    assert len(expected) < sum(e["type"] == "created" for e in events) - 1  # the bridge and the late match joined stories
    never_stopped.close()
    restarted.close()


def test_a_reader_given_a_wrong_address_or_topic_ends_in_one_error_naming_it(settings, capfd):
    """The README's `ClusterReader` with an address no broker answers at: before, 580 raw librdkafka
    lines on stderr in 30 s and a bare KafkaException. Now a ConnectionError naming the address,
    and librdkafka's lines go through logging. A topic no worker made: a ValueError naming the fix."""
    import socket

    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{free.getsockname()[1]}"
    with pytest.raises(ConnectionError, match=f"no Kafka broker answered at {address} within 3 s"):
        ClusterReader(address, "g", timeout_s=3)
    assert "|FAIL|" not in capfd.readouterr().err
    with pytest.raises(ValueError, match="streamdedup topics create"):
        ClusterReader(settings.bootstrap_servers, "g", settings.topics.cluster_view + "-missing")
