"""Final verdicts in the global topology, on a real broker: a page's verdict is held until every
index partition it was sent to has passed its place in the global order, so the verdicts as
emitted are file mode's; idle input partitions do not stall that; the bounded wait releases a page
with what is known, and a match found after that is one counted late_match; a worker killed
mid-stream doubles and loses nothing."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import replace

import orjson
import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from conftest import make_article, page, wrap_in_template

from runtime.conftest import read_topic
from runtime.scaleout.test_topologies import (
    SITES,
    TANSU_GROUPS,
    finish,
    make_workers,
    start,
    syndicated_crawl,
    wait_for,
)
from runtime.test_worker import BAD, send
from streamdedup.runtime.scaleout.clusters import corrected_pairs
from streamdedup.runtime.settings import WorkerSettings
from streamdedup.runtime.topics import ensure_topics, topic_config
from streamdedup.runtime.worker import Worker
from streamdedup.testing import run_records


def emitted(settings) -> dict:
    """The verdicts as emitted (each page once, checked), the clusters events, rejections; read
    once the workers have stopped."""
    t = settings.topics
    got = {name: read_topic(settings, topic) for name, topic in
           (("unique", t.unique), ("duplicates", t.duplicates), ("rejected", t.rejected))}
    messages = [m for name in ("unique", "duplicates") for m in got[name]]
    verdicts = [orjson.loads(m.value()) for m in messages]
    seen: dict[str, list] = {}
    for message, verdict in zip(messages, verdicts, strict=True):
        seen.setdefault(verdict["dedup"]["id"], []).append((message.topic(), message.partition(), message.offset(),
                                                            message.timestamp(), verdict["dedup"]))
    assert all(len(v) == 1 for v in seen.values()), [v for v in seen.values() if len(v) > 1]  # each page once
    events = [orjson.loads(m.value()) for m in read_topic(settings, t.clusters)]
    return {"dedups": {v["dedup"]["id"]: v["dedup"] for v in verdicts}, "events": events,
            "fetched": {v["dedup"]["id"]: v["fetched_at"] for v in verdicts}, "rejected": len(got["rejected"]),
            "late": [e for e in events if e["type"] == "late_match"]}


def released(workers, by: str) -> float:
    return sum(w.metrics.registry.get_sample_value("streamdedup_verdicts_released_total", {"by": by}) or 0
               for w in workers.values())


def released_by_the_wait(settings: WorkerSettings, passed: dict, held: dict) -> tuple[
        WorkerSettings, Callable[[dict, int], None], dict[str, Worker], dict[str, threading.Thread]]:
    """One worker on two input partitions, no idle watermarks (interval 1 h), a 0.5 s verdict wait.

    `passed` goes to partition 1, `held` to partition 0; returns once both are out: `held` was
    released by the wait (partition 1 has passed only `passed`). Returns the settings, a function
    that sends a record to a pages partition, and the running workers and their threads."""
    run = replace(settings, partitions=2, verdict_wait_s=0.5, watermark_interval_s=3600.0)
    ensure_topics(run)
    producer = Producer(run.client())

    def produce(record: dict, partition: int) -> None:
        producer.produce(run.topics.pages, orjson.dumps(record), partition=partition)
        producer.flush(10)

    produce(passed, 1)
    produce(held, 0)
    workers = make_workers(run, ("w0",))
    threads = start(workers)
    assert wait_for(lambda: workers["w0"].stats.decided >= 2, 120)
    return run, produce, workers, threads


def test_a_burst_over_three_workers_and_six_partitions_gives_file_modes_verdicts_as_emitted(broker, settings,
                                                                                          tmp_path):
    """Every story's copies on several sites (other input partitions) in one burst: without holding,
    a copy reaching an index partition before an earlier one was emitted as unique or as a
    duplicate of a later copy than file mode's, and corrected afterwards by a late_match."""
    if broker.kind == "tansu":
        pytest.skip(TANSU_GROUPS)
    records = syndicated_crawl(24)
    file_mode = {o.dedup["id"]: o.dedup for o in run_records(records, tmp_path / "file-mode")
                 if o.status != "rejected"}
    run = replace(settings, partitions=6, verdict_wait_s=60.0)  # nothing released by the wait here
    send(run, records)
    workers = make_workers(run, ("w0", "w1", "w2"))
    finish(workers, start(workers), len(records))
    got = emitted(run)
    assert got["rejected"] == len(BAD) and set(got["dedups"]) == set(file_mode)
    as_emitted = {page_id: (d["status"], d["duplicate_of"], d["cluster_id"]) for page_id, d in got["dedups"].items()}
    expected = {page_id: (d["status"], d["duplicate_of"], d["cluster_id"]) for page_id, d in file_mode.items()}
    assert as_emitted == expected
    assert got["late"] == []
    assert released(workers, "watermark") == len(file_mode) and released(workers, "timeout") == 0
    assert not any(w.metrics.registry.get_sample_value("streamdedup_late_pages_total", {"partition": str(p)})
                   for w in workers.values() for p in range(6))  # the crawl is in event-time order


def test_idle_input_partitions_do_not_stall_the_release(broker, settings):
    """Six input partitions, pages on two of them (two sites): the four idle ones send infinite
    watermarks, so every page is released by the watermarks long before the (60 s) wait is over."""
    stories = [make_article(5100 + i, paragraphs=4) for i in range(6)]
    records = [page(f"https://{site.lower()}.example/{i}", wrap_in_template(story, site),
                    f"2024-03-02T0{j}:{i:02d}:00Z") for i, story in enumerate(stories) for j, site in enumerate(SITES[:2])]
    run = replace(settings, partitions=6, verdict_wait_s=60.0)
    send(run, records)
    workers = make_workers(run, ("w0",))
    finish(workers, start(workers), len(records))
    got = emitted(run)
    assert len(got["dedups"]) == len(records)
    assert sum(d["status"] == "duplicate" for d in got["dedups"].values()) == len(stories)
    assert released(workers, "watermark") == len(records) and released(workers, "timeout") == 0


def test_the_bounded_wait_releases_and_a_later_match_is_one_counted_late_match(broker, settings, tmp_path):
    """Two input partitions, no idle watermarks (interval 1 h) and a 0.5 s wait. Partition 1 has
    passed only an early page, so page L on partition 0 is held, then released by the wait
    (unique). Then E, an earlier copy of L, arrives on partition 1: L's gather gets E as a
    supplement after L is out: one late_match L -> E, counted once; corrected, file mode's pair."""
    story = make_article(5200, paragraphs=4)
    other = make_article(5201, paragraphs=4)
    e0 = page("https://beta.example/0", wrap_in_template(other, "Beta"), "2024-03-03T00:00:00Z", id="e0")
    late = page("https://alpha.example/1", wrap_in_template(story, "Alpha"), "2024-03-03T02:00:00Z", id="L")
    early = page("https://beta.example/1", wrap_in_template(story, "Beta"), "2024-03-03T01:00:00Z", id="E")
    run, produce, workers, threads = released_by_the_wait(settings, e0, late)
    produce(early, 1)
    finish(workers, threads, 3)
    got = emitted(run)
    registry = workers["w0"].metrics.registry
    assert got["dedups"]["L"]["status"] == "unique"  # released by the wait, before E was known
    assert [(e["page_id"], e["duplicate_of"]) for e in got["late"]] == [("L", "E")]
    # E was not late (partition 1 had passed only e0): L was released early, by the wait
    assert registry.get_sample_value("streamdedup_late_matches_total", {"cause": "released_early"}) == 1
    assert registry.get_sample_value("streamdedup_late_matches_total", {"cause": "late_page"}) is None
    assert released(workers, "timeout") >= 1
    file_mode = [o.dedup for o in run_records([e0, early, late], tmp_path / "file-mode")]
    order = {"e0": 0, "E": 1, "L": 2}
    assert corrected_pairs(got["dedups"].values(), got["events"], order.__getitem__) == \
        {d["id"]: d["duplicate_of"] for d in file_mode if d["duplicate_of"]}


def story_copies(seed: int, day: str) -> tuple[dict, dict]:
    """L (site Alpha, 02:00) and E (site Beta, 01:00), an earlier copy of the same story."""
    story = make_article(seed, paragraphs=4)
    return (page("https://alpha.example/1", wrap_in_template(story, "Alpha"), f"{day}T02:00:00Z", id="L"),
            page("https://beta.example/1", wrap_in_template(story, "Beta"), f"{day}T01:00:00Z", id="E"))


def one_worker(run) -> tuple[Producer, dict, dict]:
    """The topics, a producer, and one worker running in a thread."""
    ensure_topics(run)
    workers = make_workers(run, ("w0",))
    return Producer(run.client()), workers, start(workers)


def send_one(producer: Producer, run, workers: dict, record: dict, partition: int) -> None:
    """One record to one input partition, then wait until the worker has decided it."""
    decided = workers["w0"].stats.decided + 1
    producer.produce(run.topics.pages, orjson.dumps(record), partition=partition)
    producer.flush(10)
    assert wait_for(lambda: workers["w0"].stats.decided >= decided, 120)


def test_a_page_behind_its_partitions_watermark_is_a_late_page_and_its_late_match_says_so(broker, settings):
    """One input partition, pages sent one at a time: X (03:00), then L (02:00), then E (01:00), an
    earlier copy of L. The partition's watermark passed 03:00 after X, so L goes out at once (by
    the watermark, unique) and E, behind it too, is a late page: L -> E is a late_match counted
    under cause late_page, the sign to raise STREAMDEDUP_ALLOWED_LATENESS_MS."""
    later, earlier = story_copies(5300, "2024-03-04")
    x = page("https://gamma.example/0", wrap_in_template(make_article(5301, paragraphs=4), "Gamma"),
             "2024-03-04T03:00:00Z", id="X")
    run = replace(settings, partitions=1, verdict_wait_s=600.0, watermark_interval_s=3600.0)
    producer, workers, threads = one_worker(run)
    for record in (x, later, earlier):
        send_one(producer, run, workers, record, 0)
    finish(workers, threads, 3)
    got = emitted(run)
    assert got["dedups"]["L"]["status"] == "unique" and got["dedups"]["E"]["status"] == "unique"
    assert [(e["page_id"], e["duplicate_of"]) for e in got["late"]] == [("L", "E")]
    registry = workers["w0"].metrics.registry
    assert registry.get_sample_value("streamdedup_late_matches_total", {"cause": "late_page"}) == 1
    assert registry.get_sample_value("streamdedup_late_matches_total", {"cause": "released_early"}) is None
    assert registry.get_sample_value("streamdedup_late_pages_total", {"partition": "0"}) == 2  # L and E
    assert released(workers, "watermark") == 3 and released(workers, "timeout") == 0


def test_a_copy_from_a_partition_idle_while_its_later_copy_went_out_is_a_late_page_match(broker, settings):
    """Two input partitions, both idle. L arrives on partition 0 and goes out as soon as partition
    0's watermark passes it (partition 1 is idle, so it holds nothing back). Once partition 0 is
    idle again, E, an earlier copy of L, arrives on partition 1: nothing could have held L for a
    page not yet sent, so it is a late_match, and no late page (each partition is in order).

    Its cause is how L went out (kept in L's `F` record), which the broker's timing picks: by
    partition 0's finite watermark, late_page (E's partition had been idle while another moved past
    its time); or, where partition 0's idle claim reached the index partition before the watermark
    that passed L went on to gather, by an infinite one, after_idle. Both are counted in the same
    `by="watermark"` release metric. On Tansu 2 runs in 10 were after_idle (2026-12-02); never
    released_early (L was not released by the wait, nor without holding)."""
    later, earlier = story_copies(5400, "2024-03-05")
    run = replace(settings, partitions=2, verdict_wait_s=600.0, watermark_interval_s=0.2)
    producer, workers, threads = one_worker(run)
    time.sleep(2)  # both inputs idle: their infinite watermarks are out
    send_one(producer, run, workers, later, 0)
    time.sleep(2)  # partition 0 idle again
    send_one(producer, run, workers, earlier, 1)
    finish(workers, threads, 2)
    got = emitted(run)
    assert got["dedups"]["L"]["status"] == "unique" and got["dedups"]["E"]["status"] == "unique"
    assert [(e["page_id"], e["duplicate_of"]) for e in got["late"]] == [("L", "E")]
    registry = workers["w0"].metrics.registry
    causes = {c: registry.get_sample_value("streamdedup_late_matches_total", {"cause": c}) or 0
              for c in ("late_page", "after_idle", "released_early")}
    assert causes in ({"late_page": 1, "after_idle": 0, "released_early": 0},
                      {"late_page": 0, "after_idle": 1, "released_early": 0}), causes
    assert not any(registry.get_sample_value("streamdedup_late_pages_total", {"partition": p}) for p in "01")
    assert released(workers, "watermark") == 2 and released(workers, "timeout") == 0


def test_a_burst_that_finds_every_input_idle_waits_for_the_partitions_waking_up(broker, settings):
    """Two input partitions, both idle (infinite watermarks). L (02:00) and E (01:00), its earlier
    copy, arrive together on partitions 0 and 1, to one worker: L is held until partition 1's page
    is in, so L is E's duplicate as emitted, no late_match. (This held before the waking watermarks
    too: one worker handles both pages in one round. Across workers they matter:
    bench/agreement.py; their order is tested in test_index_and_gather.py.)"""
    later, earlier = story_copies(5500, "2024-03-06")
    run = replace(settings, partitions=2, verdict_wait_s=600.0, watermark_interval_s=0.2)
    producer, workers, threads = one_worker(run)
    time.sleep(2)  # both inputs idle: their infinite watermarks are out
    producer.produce(run.topics.pages, orjson.dumps(later), partition=0)
    producer.produce(run.topics.pages, orjson.dumps(earlier), partition=1)
    producer.flush(10)
    finish(workers, threads, 2)
    got = emitted(run)
    assert got["dedups"]["E"]["status"] == "unique" and got["dedups"]["L"]["duplicate_of"] == "E"
    assert got["late"] == []
    assert released(workers, "watermark") == 2 and released(workers, "timeout") == 0


def test_a_stalled_workers_idle_claims_do_not_release_the_other_workers_pages(broker, settings, tmp_path):
    """Three workers, six input partitions and two index partitions, so one worker holds inputs and
    no index partition. Every input idle (its claim out), that worker's loop stalls for 3 s (as a
    host starved of CPU stalls it) while the syndicated crawl arrives: it cannot take its claims
    back, and the other workers file their pages. The index partitions find its inputs' ends moved
    past where their claims came, so the other pages are held until its pages are in: the verdicts
    as emitted are file mode's, no late match (before, its claims stood: late matches; the same
    scene in `python bench/agreement.py --index-partitions 2 --stall-worker 3.5`)."""
    if broker.kind == "tansu":
        pytest.skip(TANSU_GROUPS)
    records = syndicated_crawl(24)
    file_mode = {o.dedup["id"]: o.dedup for o in run_records(records, tmp_path / "file-mode")
                 if o.status != "rejected"}
    run = replace(settings, partitions=6, verdict_wait_s=60.0)
    admin = AdminClient(run.client())
    [created] = admin.create_topics([NewTopic(run.topics.index, num_partitions=2, replication_factor=1,
                                              config=topic_config(run.topics.index, run))]).values()
    created.result(15)
    workers = make_workers(run, ("w0", "w1", "w2"))
    threads = start(workers)

    def without_index(worker) -> bool:
        topics = {topic for topic, _ in worker.handlers}
        return run.topics.pages in topics and run.topics.index not in topics

    assert wait_for(lambda: sum(map(without_index, workers.values())) == 1
                    and all(w.handlers for w in workers.values()), 120)
    stalled = next(w for w in workers.values() if without_index(w))
    time.sleep(2 * run.watermark_interval_s + 1)  # every input idle: the claims are out
    held = threading.Event()
    held.set()
    consume = stalled._consume

    def stalling(timeout: float) -> list:
        while held.is_set():
            time.sleep(0.05)
        return consume(timeout)

    stalled._consume = stalling  # type: ignore[method-assign]
    send(run, records)
    time.sleep(3)
    held.clear()
    finish(workers, threads, len(records))
    got = emitted(run)
    as_emitted = {page_id: (d["status"], d["duplicate_of"], d["cluster_id"]) for page_id, d in got["dedups"].items()}
    expected = {page_id: (d["status"], d["duplicate_of"], d["cluster_id"]) for page_id, d in file_mode.items()}
    assert got["late"] == [] and as_emitted == expected
    doubted = sum(w.metrics.registry.get_sample_value("streamdedup_idle_claims_doubted_total") or 0
                  for w in workers.values())
    assert doubted >= 1


@pytest.mark.parametrize("wait", ["600", "0.3"])
def test_workers_killed_mid_stream_with_pages_held_double_and_lose_nothing(broker, settings, tmp_path, wait):
    """Two worker processes on 4 partitions, both SIGKILLed as soon as they begin to write
    verdicts, three times; then a clean run: every page once, no late_match twice, the corrected
    pairs are file mode's. With a long wait the held pages survive the kills and the verdicts as
    emitted are file mode's; with a short one release markers are in flight when they strike."""
    if broker.kind == "tansu":
        pytest.skip(TANSU_GROUPS)
    records = syndicated_crawl(24)
    pages = sum(isinstance(r, dict) for r in records)
    run = replace(settings, partitions=4)
    send(run, records)
    env = {**os.environ, "STREAMDEDUP_BOOTSTRAP_SERVERS": run.bootstrap_servers, "STREAMDEDUP_GROUP_ID": run.group_id,
           "STREAMDEDUP_PARTITIONS": "4", "STREAMDEDUP_BATCH_SIZE": "8", "STREAMDEDUP_VERDICT_WAIT_S": wait,
           **{f"STREAMDEDUP_TOPIC_{k.upper()}": v for k, v in run.topics.__dict__.items()}}

    def workers(exit_when_idle: str = "8") -> list[subprocess.Popen]:
        return [subprocess.Popen([sys.executable, "-m", "streamdedup", "worker", "--exit-when-idle", exit_when_idle],
                                 env={**env, "STREAMDEDUP_WORKER_ID": name,
                                      "STREAMDEDUP_STATE_DIR": str(run.state_dir / name)},
                                 stdout=subprocess.DEVNULL, stderr=open(tmp_path / f"{name}.log", "ab"))
                for name in ("w0", "w1")]

    watcher = Consumer(run.client(**{"group.id": "watcher"}))

    def produced(topics: tuple[str, ...]) -> int:  # high watermarks: records written, committed or not
        return sum(watcher.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
                   for topic in topics for p in range(4))

    counts: list[int] = []
    # the first kill once gather has work (pages held, none out yet), the others once verdicts appear;
    # when every verdict is out already (held pages often go out in one transaction), none can
    # appear: the workers are killed once they are back at work, sending their idle watermarks to
    # the index partitions (instead of at the deadline, two minutes later)
    for topics in ((run.topics.parts,), (run.topics.unique, run.topics.duplicates),
                   (run.topics.unique, run.topics.duplicates)):
        if counts and counts[-1] == pages:
            topics = (run.topics.index,)
        before = produced(topics)
        processes = workers()
        deadline = time.monotonic() + 120
        while produced(topics) == before and time.monotonic() < deadline:
            time.sleep(0.02)
        for process in processes:
            process.send_signal(signal.SIGKILL)
            process.wait()
        counts.append(sum(len(read_topic(run, topic)) for topic in (run.topics.unique,
                                                                                              run.topics.duplicates)))
    watcher.close()
    # a clean run, stopped with SIGTERM (as `docker stop` does: exit 0 after the batch in hand) once
    # both workers have their partitions (their loops run: SIGTERM stops them), every record's
    # outcome is committed and nothing more came for 3 s (a doubled page would show up), instead of
    # waiting out the workers' idle time; they still stop on their own if idle for 10 s
    admin = AdminClient(run.client())

    def members() -> list:
        try:
            [group] = admin.describe_consumer_groups([run.group_id], request_timeout=5).values()
            return list(group.result(timeout=5).members)
        except Exception:  # noqa: BLE001 - not there yet
            return []

    # the killed workers stay members until their static ids rejoin (or their sessions end), with their
    # partitions: only members that joined since count (a worker SIGTERMed while it still started up
    # died of it, -15, with nothing in its log)
    killed = {m.member_id for m in members()}
    final = workers("10")

    def both_assigned() -> bool:
        return sum(bool(m.assignment and m.assignment.topic_partitions) and m.member_id not in killed
                   for m in members()) == 2

    outcomes, steady_since, deadline = -1, time.monotonic(), time.monotonic() + 300
    while time.monotonic() < deadline and any(process.poll() is None for process in final):
        now = sum(len(read_topic(run, topic))
                  for topic in (run.topics.unique, run.topics.duplicates, run.topics.rejected))
        if now != outcomes:
            outcomes, steady_since = now, time.monotonic()
        elif outcomes >= pages + len(BAD) and time.monotonic() - steady_since > 3 and both_assigned():
            break
        time.sleep(0.5)
    for process in final:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    for process, name in zip(final, ("w0", "w1"), strict=True):
        assert process.wait(timeout=300) == 0, (tmp_path / f"{name}.log").read_text()[-3000:]
    got = emitted(run)
    assert len(got["dedups"]) == pages and got["rejected"] == len(BAD), counts
    late = [(e["page_id"], e["duplicate_of"]) for e in got["late"]]
    assert len(late) == len(set(late))
    file_mode = [o.dedup for o in run_records(records, tmp_path / "file-mode") if o.status != "rejected"]
    assert corrected_pairs(got["dedups"].values(), got["events"], got["fetched"].__getitem__) == \
        {d["id"]: d["duplicate_of"] for d in file_mode if d["duplicate_of"]}
    assert counts[0] < pages, counts  # the kills landed mid-stream
    if wait == "600":  # no page is late (the crawl is in event-time order) and no wait runs out: the wait
        # counts wall time across the kills (completed_ms is stored), and 600 s is far past the test's length
        assert got["late"] == []
        assert {d["id"]: d["duplicate_of"] for d in got["dedups"].values() if d["duplicate_of"]} == \
            {d["id"]: d["duplicate_of"] for d in file_mode if d["duplicate_of"]}
