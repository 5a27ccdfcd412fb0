"""The news feed's reader (issue 58): `ClusterReader` restarted mid-stream from its group's
committed offsets has the stories of a reader that never stopped, and hands back only what is new."""

from __future__ import annotations

import time
from dataclasses import replace

import orjson
import pytest
from confluent_kafka import Producer
from test_related_stories import EXPECTED, follow_up_stream, shape

from runtime.scaleout.test_one_engine import bridged_clusters
from runtime.scaleout.test_topologies import run_workers, syndicated_crawl
from runtime.test_worker import send
from streamdedup.cli import main
from streamdedup.clusters import ClusterReader, Stories, page_fields, read_topic_stories, view_event, view_key
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


def test_a_view_topic_that_started_over_is_handed_back_not_skipped(broker, settings, caplog):
    """The cluster view deleted and created again (or a broker back without its data; noida-db keeps
    the group's offsets): before, a reader restarted on its group handed back none of the new
    topic's events (folded silently, below the old committed offsets), and a reader left running
    caught up never read them at all (its end offsets below its position: no record waiting).
    Now each hands them back as new, with one warning naming the partition."""
    from confluent_kafka.admin import AdminClient, NewTopic

    if broker.kind == "tansu":  # and it drops the group's offsets with the topic: nothing to tell at start
        pytest.skip("librdkafka crashes (SIGSEGV) when Tansu deletes a topic a consumer fetches (the code before too)")
    topic, group = settings.topics.cluster_view, f"{settings.group_id}-feed"
    admin = AdminClient(settings.client())
    producer = Producer(settings.client())

    def create_with(pages: list[str]) -> None:
        [created] = admin.create_topics([NewTopic(topic, 1, 1, config={"cleanup.policy": "compact"})]).values()
        created.result(15)
        for page in pages:
            event = {"type": "created", "page_id": page, "cluster_id": page, "url": f"https://{page}.example/"}
            producer.produce(topic, orjson.dumps(event), view_key(event))
        assert producer.flush(15) == 0

    def start_over_with(pages: list[str]) -> None:
        [deleted] = admin.delete_topics([topic]).values()
        deleted.result(15)
        deadline = time.monotonic() + 15
        while topic in admin.list_topics(timeout=5).topics and time.monotonic() < deadline:
            time.sleep(0.2)
        create_with(pages)

    create_with([f"old{i}" for i in range(5)])
    reader = ClusterReader(settings.bootstrap_servers, group, topic)
    assert len(poll_until(reader, 5)) == 5
    reader.commit()
    reader.close()
    start_over_with(["new0", "new1"])
    caplog.set_level("WARNING", logger="streamdedup.clusters")
    reader = ClusterReader(settings.bootstrap_servers, group, topic)  # its group's offset, 5, is past the end
    assert [e["page_id"] for e in poll_until(reader, 2)] == ["new0", "new1"]
    assert f"{topic}[0] started over (it ends at offset 2, below the 5 the group committed" in caplog.text
    reader.commit()
    reader.poll(1.0)  # caught up: resting, asking the end offsets
    start_over_with(["again"])
    assert [e["page_id"] for e in poll_until(reader, 1, timeout_s=15)] == ["again"]
    reader.commit()  # lowers the group's offset, 2, to the new topic's 1
    reader.close()
    resumed = ClusterReader(settings.bootstrap_servers, group, topic)
    assert resumed.poll(1.0) + resumed.poll(1.0) == [] and [s["cluster_id"] for s in resumed.stories.stories()] == ["again"]
    resumed.close()


def test_partitions_added_to_the_view_are_read_by_a_running_reader(broker, settings):
    """`ensure_topics` tells an operator to add partitions to an output topic that has fewer than the
    settings ask for; the worker then writes view events to them. Before, a running ClusterReader read
    only the partitions it started with: the pages keyed to the new ones never came (silently)."""
    from confluent_kafka.admin import AdminClient, NewPartitions

    if broker.kind == "tansu":
        pytest.skip("Tansu does not add partitions (CreatePartitions unsupported)")
    settings = replace(settings, partitions=1)
    ensure_topics(settings)
    topic = settings.topics.cluster_view

    def produce(page: str, partition: int) -> None:
        producer = Producer(settings.client())  # a new one knows the partitions added
        producer.list_topics(topic, timeout=10)
        event = {"type": "created", "page_id": page, "cluster_id": page, "url": f"https://{page}.example/"}
        producer.produce(topic, orjson.dumps(event), view_key(event), partition=partition)
        assert producer.flush(15) == 0

    produce("first", 0)
    reader = ClusterReader(settings.bootstrap_servers, f"{settings.group_id}-feed", topic)
    assert [e["page_id"] for e in poll_until(reader, 1)] == ["first"]
    reader.poll(0.5)  # caught up: resting
    admin = AdminClient(settings.client())
    [grown] = admin.create_partitions([NewPartitions(topic, 3)]).values()
    grown.result(15)
    produce("on-1", 1)
    produce("on-2", 2)
    assert sorted(e["page_id"] for e in poll_until(reader, 2, timeout_s=15)) == ["on-1", "on-2"]
    reader.commit()
    reader.close()
    resumed = ClusterReader(settings.bootstrap_servers, f"{settings.group_id}-feed", topic)
    assert resumed.poll(1.0) + resumed.poll(1.0) == [] and len(resumed.stories) == 3
    resumed.close()


@pytest.mark.parametrize("topology", ["global", "local"])
def test_the_view_gives_file_modes_related_stories_in_both_topologies(settings, tmp_path, topology):
    """A follow-up (unique, `related_to` an earlier page) through a worker of each topology: the
    stories the view and the `pages.clusters` events fold are file mode's clusters.jsonl, each
    with the stories it is related to. Before, the fold dropped `related_to` (and `pages.clusters`
    dropped it on `joined` events). One input partition: the local topology finds every match."""
    records = follow_up_stream()
    crawl = tmp_path / "crawl.jsonl"
    crawl.write_bytes(b"".join(orjson.dumps(r, option=orjson.OPT_APPEND_NEWLINE) for r in records))
    assert main(["dedup", str(crawl), "--out", str(tmp_path / "out"), "-q"]) == 0
    clusters = [orjson.loads(line) for line in (tmp_path / "out" / "clusters.jsonl").read_bytes().splitlines()]
    assert shape(clusters) == EXPECTED

    settings = replace(settings, partitions=1, topology=topology)
    send(settings, records)
    run_workers(settings, ["w1"], len(records))
    for topic in (settings.topics.cluster_view, settings.topics.clusters):
        stories = read_topic_stories(settings.bootstrap_servers, topic)
        assert stories.stories() == clusters, topic
        assert stories.related_of("a") == ["f", "w"], topic


def revisions_and_parts() -> list[dict]:
    """A view-all page after its two parts (it bridges them), a story revised at its url (the revision
    supersedes the first fetch) and a copy of the revision on another site, in fetch order."""
    from streamdedup.testing import make_article, wrap_in_template

    def record(page_id: str, url: str, paragraphs: list[str], hour: int) -> dict:
        site = url.split("/")[2]
        return {"id": page_id, "url": url, "fetched_at": f"2026-03-01T{hour:02d}:00:00Z",
                "content": wrap_in_template(paragraphs, site, title=f"Page {hour}")}

    article, story, extra = make_article(921, paragraphs=6), make_article(930, paragraphs=6), make_article(931)
    url = "https://paged.example/long-read"
    return [record("p1", f"{url}?page=1", article[:3], 0), record("p2", f"{url}?page=2", article[3:], 1),
            record("whole", url, article, 2), record("s1", "https://news.example/s", story, 3),
            record("s2", "https://news.example/s", story + extra[:1], 4),
            record("s3", "https://copy.example/s", story + extra[:1], 5)]


@pytest.mark.parametrize("topology", ["global", "local"])
def test_the_view_names_what_a_page_supersedes_and_merged_as_file_mode(settings, tmp_path, topology):
    """A feed engineer's two questions of a story: which fetch is the newest revision (`supersedes`) and
    which page joined two stories (`merged`). Before, `stories()` of the view, of `pages.clusters` and
    file mode's clusters.jsonl kept neither; now each page keeps them, the same in all three."""
    records = revisions_and_parts()
    crawl = tmp_path / "crawl.jsonl"
    crawl.write_bytes(b"".join(orjson.dumps(r, option=orjson.OPT_APPEND_NEWLINE) for r in records))
    assert main(["dedup", str(crawl), "--out", str(tmp_path / "out"), "-q"]) == 0
    clusters = [orjson.loads(line) for line in (tmp_path / "out" / "clusters.jsonl").read_bytes().splitlines()]
    pages = {page["id"]: page for story in clusters for page in story["pages"]}
    assert [s["cluster_id"] for s in clusters] == ["p1", "s1"]
    assert (pages["whole"].get("supersedes"), pages["whole"].get("merged")) == (["p1", "p2"], ["p2"])
    assert pages["s2"].get("supersedes") == ["s1"] and pages["s3"]["duplicate_of"] == "s2"

    settings = replace(settings, partitions=1, topology=topology)
    send(settings, records)
    run_workers(settings, ["w1"], len(records))
    for topic in (settings.topics.cluster_view, settings.topics.clusters):
        assert read_topic_stories(settings.bootstrap_servers, topic).stories() == clusters, topic


def test_a_view_event_the_faust_app_repeats_is_handed_back_once(settings, tmp_path):
    """The Faust app is at least once: a record replayed after a crash has its outputs written again,
    byte for byte under the same key (a run of 476 pages killed once mid-run on 6 partitions repeated
    7 view events). Before, `poll()` handed a repeated event back twice (a feed told of a merge twice);
    now once, the repeat counted, whether the first copy was read before a restart or after."""
    from streamdedup.config import DetectorConfig
    from streamdedup.detector import Detector
    from streamdedup.runtime.faust_journal import outputs_for
    from streamdedup.testing import make_article, wrap_in_template

    settings = replace(settings, partitions=1)
    ensure_topics(settings)
    story = make_article(5, paragraphs=4)
    messages = [orjson.dumps({"url": f"https://{site}.example/1", "fetched_at": f"2024-03-01T0{i}:00:00Z",
                              "content": wrap_in_template(story, site)}) for i, site in enumerate("abc")]
    producer = Producer(settings.client())
    topic = settings.topics.cluster_view

    def judge(offsets: range) -> None:  # the app's outputs for these records of its input, its view events produced
        for offset in offsets:
            for target, key, value, _ in outputs_for(detector, "pages", 0, offset, None, messages[offset], 1000):
                if target == "cluster_view":
                    producer.produce(topic, value, key)
        assert producer.flush(30) == 0

    with Detector(DetectorConfig(), tmp_path / "faust") as detector:
        judge(range(2))
        reader = ClusterReader(settings.bootstrap_servers, f"{settings.group_id}-feed", topic)
        assert [e["page_id"] for e in poll_until(reader, 2)] == [p["id"] for p in reader.stories.stories()[0]["pages"]]
        reader.commit()
        reader.close()
        judge(range(1, 3))  # a crash after the second record: it is replayed before the third is judged
    resumed = ClusterReader(settings.bootstrap_servers, f"{settings.group_id}-feed", topic)
    new = poll_until(resumed, 1) + resumed.poll(1.0)
    assert [(e["type"], e["duplicate_of"] is not None) for e in new] == [("joined", True)]  # the third, once
    assert resumed.repeats == 1 and resumed.stories.stories()[0]["size"] == 3
    resumed.close()
    fresh = ClusterReader(settings.bootstrap_servers, f"{settings.group_id}-other", topic)
    assert len(poll_until(fresh, 3) + fresh.poll(1.0)) == 3 and fresh.repeats == 1
    fresh.close()
