"""The worker against a real broker: every page exactly once, right verdicts, crash-safe."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
from dataclasses import replace

import orjson
import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from conftest import make_article, page, wrap_in_template

from runtime.conftest import read_topic, run_until_decided
from runtime.test_broker_conformance import TANSU_READ_COMMITTED
from streamdedup.config import DetectorConfig
from streamdedup.record.readers import RawRecord
from streamdedup.runtime.feed import feed
from streamdedup.runtime.topics import ensure_topics
from streamdedup.runtime.worker import Worker
from streamdedup.testing import run_records

BAD = [b"not json at all", b'{"content": "<p>no url</p>"}', b'{"url": "https://e.example/", "content": ""}']


def crawl(articles: int) -> list:
    records = []
    for i in range(articles):
        story = make_article(1000 + i, paragraphs=4)
        for j, site in enumerate(("Alpha", "Beta", "Gamma")):
            records.append(page(f"https://{site.lower()}.example/{i}", wrap_in_template(story, site),
                                f"2024-03-01T{j:02d}:{i % 60:02d}:00Z"))
    return records + BAD


def send(settings, records) -> None:
    ensure_topics(settings)
    raws = [RawRecord(f"test:{i}", data=r if isinstance(r, bytes) else orjson.dumps(r)) for i, r in enumerate(records)]
    feed(raws, settings.client(), settings.topics.pages)


def outputs(settings) -> dict[str, list]:
    """The outputs, read once the workers have stopped (or been killed)."""
    t = settings.topics
    return {name: read_topic(settings, topic) for name, topic in
            (("unique", t.unique), ("duplicates", t.duplicates), ("rejected", t.rejected))}


def verdicts_by_id(got) -> dict[str, str]:
    out = {}
    for name in ("unique", "duplicates"):
        for message in got[name]:
            dedup = orjson.loads(message.value())["dedup"]
            assert dedup["id"] not in out, f"page {dedup['id']} emitted twice"
            out[dedup["id"]] = dedup["status"]
    return out


@pytest.mark.parametrize("transactions", [True, False], ids=["exactly-once", "at-least-once"])
def test_every_page_once_on_the_right_topic_with_the_file_mode_verdict(settings, tmp_path, transactions):
    records = crawl(20)
    settings = replace(settings, transactions=transactions)
    send(settings, records)
    worker = Worker(settings, DetectorConfig())
    stats = run_until_decided(worker, len(records))
    assert stats.decided == len(records)
    registry = worker.metrics.registry
    assert registry.get_sample_value("streamdedup_pages_total", {"status": "duplicate"}) == 40
    assert registry.get_sample_value("streamdedup_rejected_total", {"reason": "invalid_json"}) == 1
    assert registry.get_sample_value("streamdedup_batch_seconds_count") == stats.batches
    judged = registry.get_sample_value("streamdedup_decide_work_total", {"kind": "pages"})
    # every page judged in each index partition its keys live in; the bad records are rejected before
    assert judged >= len(records) - len(BAD)
    assert registry.get_sample_value("streamdedup_decide_work_total", {"kind": "candidates_verified"}) >= 40
    assert registry.get_sample_value("streamdedup_decide_work_total", {"kind": "tests_run"}) >= 40
    assert registry.get_sample_value("streamdedup_consumer_lag", {"topic": settings.topics.pages, "partition": "0"}) == 0
    got = outputs(settings)
    expected = {o.dedup["id"]: o.status for o in run_records(records, tmp_path / "file-mode") if o.status != "rejected"}
    assert verdicts_by_id(got) == expected
    assert len(got["rejected"]) == len(BAD)
    # the original bytes; a JSON object with its `dedup` too, as rejected.jsonl has it (issue 58)
    dead = {m.value() if not m.value().startswith(b"{") else orjson.dumps(
        {k: v for k, v in orjson.loads(m.value()).items() if k != "dedup"}): m for m in got["rejected"]}
    assert sorted(dead) == sorted(b if not b.startswith(b"{") else orjson.dumps(orjson.loads(b)) for b in BAD)
    assert all(orjson.loads(m.value())["dedup"]["status"] == "rejected" for m in dead.values()
               if m.value().startswith(b"{"))
    # the verdict topic: one message per input, no page body, the verdict whole
    lines = [orjson.loads(m.value()) for m in read_topic(settings, settings.topics.verdicts)]
    assert len(lines) == len(records) and all(b"<p>" not in orjson.dumps(line) for line in lines)
    assert {line["dedup"]["id"]: line["dedup"]["status"] for line in lines if "id" in line["dedup"]} == expected
    assert sorted(line["dedup"]["reason"] for line in lines if line["dedup"]["status"] == "rejected") == sorted(
        ["invalid_json", "missing_url", "empty_content"])
    reasons = {dict(m.headers())["dedup.reason"] for m in got["rejected"]}
    assert reasons == {b"invalid_json", b"missing_url", b"empty_content"}
    header = dict(got["duplicates"][0].headers())
    assert header["dedup.status"] == b"duplicate" and header["dedup.cluster_id"]
    events = [orjson.loads(m.value()) for m in read_topic(settings, settings.topics.clusters)]
    assert sum(e["type"] == "joined" for e in events) == 40 and sum(e["type"] == "created" for e in events) == 20


def test_sigkill_mid_stream_loses_and_doubles_nothing(broker, settings, tmp_path):
    if broker.kind == "tansu":
        pytest.skip(f"exactly once needs read_committed to hide aborted transactions: {TANSU_READ_COMMITTED} "
                    "(tests/runtime/test_broker_conformance.py)")
    records = crawl(40)
    send(settings, records)
    env = {**os.environ, "STREAMDEDUP_BOOTSTRAP_SERVERS": settings.bootstrap_servers,
           "STREAMDEDUP_GROUP_ID": settings.group_id, "STREAMDEDUP_WORKER_ID": "w1",
           "STREAMDEDUP_STATE_DIR": str(settings.state_dir), "STREAMDEDUP_BATCH_SIZE": "8",
           **{f"STREAMDEDUP_TOPIC_{k.upper()}": v for k, v in settings.topics.__dict__.items()}}
    command = [sys.executable, "-m", "streamdedup", "-v", "worker", "--exit-when-idle", "5"]
    committed_after_kill = []
    watcher = Consumer(settings.client(**{"group.id": "watcher"}))

    def produced() -> int:  # high watermarks of the verdict topics: outputs written, committed or not
        return sum(watcher.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1]
                   for topic in (settings.topics.unique, settings.topics.duplicates))

    for _ in range(3):
        before = produced()
        process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while produced() == before and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.02)  # kill as soon as this process has begun to write verdicts
        process.send_signal(signal.SIGKILL)
        process.wait()
        committed_after_kill.append(sum(len(v) for v in outputs(settings).values()))
    watcher.close()
    final = subprocess.run(command, env=env, capture_output=True, timeout=300)
    assert final.returncode == 0, final.stderr[-2000:]
    got = outputs(settings)
    expected = {o.dedup["id"]: o.status for o in run_records(records, tmp_path / "file-mode") if o.status != "rejected"}
    assert len(verdicts_by_id(got)) == len(expected), (final.stdout, committed_after_kill)
    assert verdicts_by_id(got) == expected  # nothing lost, nothing doubled, same verdicts
    assert len(got["rejected"]) == len(BAD)
    # the kills landed mid-stream: some but not all pages were committed when one of them struck
    assert any(0 < n < len(records) for n in committed_after_kill), committed_after_kill


def test_a_lost_store_is_rebuilt_from_kafka_without_re_emitting(settings, tmp_path):
    import shutil

    records = crawl(10)
    send(settings, records[:10])  # originals and copies of the first articles
    assert run_until_decided(Worker(settings, DetectorConfig()), 10).decided == 10
    shutil.rmtree(settings.state_dir)  # the worker's disk is gone
    send(settings, records[10:])
    stats = run_until_decided(Worker(settings, DetectorConfig()), len(records) - 10)
    assert stats.replayed >= 10 and stats.decided == len(records) - 10
    got = outputs(settings)
    expected = {o.dedup["id"]: o.status for o in run_records(records, tmp_path / "file-mode") if o.status != "rejected"}
    assert verdicts_by_id(got) == expected  # same answers as if the store had never been lost


def group_offsets(settings) -> dict[tuple[str, int], int]:
    """The group's committed offset of every partition of the worker's input topics."""
    group = Consumer(settings.client(**{"group.id": settings.group_id}))
    try:
        topics = group.list_topics(timeout=10).topics
        wanted = [TopicPartition(name, p) for name in (settings.topics.pages, settings.topics.index, settings.topics.parts)
                  if name in topics for p in topics[name].partitions]
        return {(tp.topic, tp.partition): tp.offset for tp in group.committed(wanted, timeout=10)}
    finally:
        group.close()


def test_a_replay_stopped_midway_does_not_move_the_group_back(settings, tmp_path, monkeypatch):
    """A store behind Kafka is replayed without producing. Its batches used to commit their own
    offsets, moving the group back below what it had committed: a worker stopped (or killed)
    mid-replay then found store and group agreeing on that earlier offset, consumed the rest of
    the replay as new, and emitted those pages a second time (the global topology's SIGKILL test
    saw it about one run in ten)."""
    import shutil

    records = crawl(10)[:30]
    send(settings, records)
    assert run_until_decided(Worker(settings, DetectorConfig()), 30).decided == 30
    before = group_offsets(settings)
    shutil.rmtree(settings.state_dir)  # the stores are lost: the next worker replays every topic
    batches = []
    original = Worker.process

    def one_batch_then_stop(self, messages):  # the real batch, then a stop: as a kill after its commit
        original(self, messages)
        batches.append(len(messages))
        self.stop()

    monkeypatch.setattr(Worker, "process", one_batch_then_stop)
    Worker(replace(settings, batch_size=4), DetectorConfig()).run(idle_timeout_s=3)
    monkeypatch.undo()
    assert batches and batches[0] <= 4  # stopped after one replay batch
    assert group_offsets(settings) == before  # no partition moved back
    assert Worker(settings, DetectorConfig()).run(idle_timeout_s=3).decided == 0
    assert len(verdicts_by_id(outputs(settings))) == 30  # each page once


def test_broker_unresponsive_mid_stream(tmp_path):
    """A broker that stops answering for a while (frozen: a long GC pause, a network partition)
    and comes back costs nothing: every page once, the file-mode verdicts. Its own broker, so the
    freeze touches no other test.

    A real stop and start of the broker is not tested: noida-db 0.2.3 has lost records it had
    acknowledged (repartition-topic records of committed transactions: 'requested offset not
    available') across its own restart, which no client can make up for; Tansu keeps data in
    memory only. Apache Kafka keeps acknowledged records (acks=all, the idempotent producer's)."""
    import threading
    import uuid

    from streamdedup.runtime.broker import EmbeddedBroker
    from streamdedup.runtime.settings import Topics, WorkerSettings

    if os.environ.get("STREAMDEDUP_TEST_BROKER") == "tansu":  # CI's second pass (.ci/run)
        pytest.skip("its own broker is noida-db on either pass: the Tansu pass would run the same test again")
    broker = EmbeddedBroker(tmp_path / "broker").start()
    try:
        run = uuid.uuid4().hex[:6]
        settings = WorkerSettings(bootstrap_servers=broker.bootstrap_servers, group_id=f"g-{run}", worker_id="w1",
                                  state_dir=tmp_path / "state", batch_size=4, batch_timeout_s=0.2,
                                  topics=Topics(**{k: f"{v}-{run}" for k, v in Topics().__dict__.items()}))
        records = crawl(30)
        send(settings, records)
        worker = Worker(settings, DetectorConfig())
        # on its own it stops after 20 s without input (the freeze counts): pages lost or stuck
        thread = threading.Thread(target=worker.run, kwargs={"idle_timeout_s": 20}, daemon=True)
        thread.start()
        deadline = time.monotonic() + 60
        while worker.stats.decided == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        broker.pause()  # mid-stream: longer than the group's session timeout (10 s)
        at_pause = worker.stats.decided
        time.sleep(12)
        broker.resume()
        # every page decided, then nothing consumed for 2 s (anything doubled would be out by then):
        # stopped then, instead of waiting out the 20 s idle time
        deadline, seen, quiet_since = time.monotonic() + 300, -1, time.monotonic()
        while thread.is_alive():
            if time.monotonic() > deadline:
                worker.stop()
                pytest.fail("the worker did not finish within 300 s of the broker's return")
            if worker.stats.consumed != seen:
                seen, quiet_since = worker.stats.consumed, time.monotonic()
            elif worker.stats.decided >= len(records) and time.monotonic() - quiet_since > 2:
                break
            time.sleep(0.05)
        worker.stop()
        thread.join(timeout=120)
        assert not thread.is_alive()
        got = outputs(settings)
        expected = {o.dedup["id"]: o.status for o in run_records(records, tmp_path / "file-mode") if o.status != "rejected"}
        assert verdicts_by_id(got) == expected
        assert len(got["rejected"]) == len(BAD)
        assert 0 < at_pause < len(records)
    finally:
        broker.resume()
        broker.stop()


def test_a_worker_killed_while_writing_its_producer_record_starts_again(settings):
    """The worker keeps its transactional id in its state directory; a SIGKILL between truncating
    that file and writing it left it empty, and every later start died with "The Transactional
    API requires transactional.id to be configured" (found by the final-verdicts crash test)."""
    records = crawl(2)
    send(settings, records)
    record = settings.state_dir / f"producer-{settings.worker_id}.json"
    record.parent.mkdir(parents=True, exist_ok=True)
    record.write_text("")
    stats = run_until_decided(Worker(settings, DetectorConfig()), len(records))
    assert stats.decided == len(records)
    assert record.read_text().startswith("streamdedup-")


def test_an_assignment_delivered_while_the_consumer_closes_is_not_taken(settings):
    """A rebalance that ends during `consumer.close()` (after the worker overran
    max.poll.interval.ms in CI) delivered its assignment: asking the committed offsets failed on
    the closing handle, and confluent-kafka re-raised that from close() as an object no `except`
    matches, which ended the whole test session. While closing, an assignment is not taken."""

    class ClosingConsumer:
        def committed(self, partitions, timeout=None):
            raise KafkaException(KafkaError(KafkaError._DESTROY))

    worker = Worker(settings, DetectorConfig())
    try:
        worker._closing = True
        worker._on_assign(ClosingConsumer(), [TopicPartition(settings.topics.pages, 0)])  # type: ignore[arg-type]
        assert worker.handlers == {}
    finally:
        worker.close()


def test_a_consumer_that_fails_to_close_still_lets_the_worker_close(settings, caplog):
    """consumer.close() can raise KafkaException (leaving the group fails): close() logs it in one
    line and still flushes the producer, rather than raising past it (in a `finally`, over the
    error that stopped the worker)."""
    worker = Worker(settings, DetectorConfig())
    real_consumer, real_producer = worker.consumer, worker.producer
    flushed: list[float] = []

    class FailingClose:
        def close(self):
            real_consumer.close()
            raise KafkaException(KafkaError(KafkaError._TRANSPORT))

    class CountingFlush:
        def flush(self, timeout):
            flushed.append(timeout)
            return real_producer.flush(timeout)

    worker.consumer, worker.producer = FailingClose(), CountingFlush()  # type: ignore[assignment]
    with caplog.at_level(logging.WARNING):
        worker.close()
    assert flushed == [10]
    assert "closing the consumer failed" in caplog.text
