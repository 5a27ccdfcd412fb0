"""Workers of one group that judge with other verdict settings (issue 56).

Signatures made with other parameters are refused by the index partitions (`check_made_by`); the
policies, retention and clock skew are not recorded in any store, so a worker started with another
`--policy` judged its index partitions' share of every page under its own rules, without a word.
An index request now carries its maker's verdict id, and a live one that differs stops the
receiving worker in one line.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import replace

import orjson
import pytest
from confluent_kafka import Producer
from conftest import make_article

from runtime.scaleout.test_topologies import TANSU_GROUPS, finish, syndicated_crawl, wait_for
from runtime.test_worker import outputs, send, verdicts_by_id
from streamdedup.config import DetectorConfig, verdict_identity
from streamdedup.fingerprinter import Fingerprinted, Fingerprinter
from streamdedup.record.readers import RawRecord
from streamdedup.runtime.scaleout.index_stage import IndexPartition, Judging, VerdictSettingsDiffer
from streamdedup.runtime.scaleout.messages import IndexRequest
from streamdedup.runtime.scaleout.routing import page_order
from streamdedup.runtime.topologies.scaleout import index_requests
from streamdedup.runtime.worker import Worker, WorkerStopped
from streamdedup.store.signature_store import method_tags
from streamdedup.testing import run_records
from streamdedup.verdict.policy import SitePolicy

OTHER_POLICY = "exact"  # near-duplicates that are not exact copies are not duplicates under it


def a_request(fingerprinter: Fingerprinter, judged_with: bytes) -> IndexRequest:
    item = fingerprinter.prepare_many([RawRecord(origin="t", data=orjson.dumps({
        "url": "https://a.example/1", "content": "\n\n".join(make_article(7)), "fetched_at": "2024-03-01T00:00:00Z"}))])[0]
    assert isinstance(item, Fingerprinted)
    doc, keys = index_requests(item, fingerprinter.methods, method_tags([m.name for m in fingerprinter.methods]),
                               1000, 1)
    return IndexRequest(page_order(1000, 5, 0, 0), doc, keys[0], made_by=fingerprinter.identity,
                        judged_with=judged_with)


def test_a_live_request_under_other_verdict_settings_stops_the_worker_one_made_before_it_started_does_not(
        tmp_path, caplog):
    config = DetectorConfig()
    fingerprinter = Fingerprinter(config)
    mine, theirs = (verdict_identity(c.verdict_settings()) for c in (config, replace(config, policy=OTHER_POLICY)))
    assert mine != theirs and verdict_identity(DetectorConfig().verdict_settings()) == mine
    request = a_request(fingerprinter, theirs)
    assert IndexRequest.decode(request.encode()) == request
    assert IndexRequest.decode(request.encode()[:-8]) == replace(request, judged_with=b"")  # an older maker's
    judging = Judging(config.verdict_settings(), mine, "g", started_ms=10_000)
    index = IndexPartition(tmp_path / "i", fingerprinter.methods, SitePolicy.parse(config.policy, config.site_policy),
                           fingerprinter.store_config, 0, judging=judging)
    try:
        index.check_judged_with(replace(request, judged_with=mine), "pages.index[0]@0", lambda: 20_000)
        index.check_judged_with(replace(request, judged_with=b""), "pages.index[0]@1", lambda: 20_000)
        with caplog.at_level(logging.WARNING):
            index.check_judged_with(request, "pages.index[0]@2", lambda: 9_000)  # made before this worker started
        assert theirs.hex() in caplog.text
        with pytest.raises(VerdictSettingsDiffer) as stopped:
            index.check_judged_with(request, "pages.index[0]@3", lambda: 20_000)
    finally:
        index.close()
    line = str(stopped.value)
    assert "\n" not in line and theirs.hex() in line and mine.hex() in line and "--policy" in line
    assert isinstance(stopped.value, WorkerStopped)


def test_a_worker_with_another_policy_stops_and_nothing_is_judged_under_two_policies(broker, settings, tmp_path):
    """w1 (the default policy) owns the group, then w2 (`--policy exact`) joins: the pages that
    w1 fingerprints next reach w2's index partition, which stops w2 in one line before it answers;
    w1 takes its partitions back and every page comes out once, as file mode judges it."""
    if broker.kind == "tansu":
        pytest.skip(TANSU_GROUPS)
    records = [r for r in syndicated_crawl(8) if isinstance(r, dict)]
    first, later = records[:10], records[10:]
    run = replace(settings, partitions=2, static_membership=False, batch_size=8, verdict_wait_s=0.5,
                  watermark_interval_s=0.2)
    send(run, first)
    workers = {"w1": Worker(replace(run, worker_id="w1", state_dir=run.state_dir / "w1"), DetectorConfig()),
               "w2": Worker(replace(run, worker_id="w2", state_dir=run.state_dir / "w2"),
                            DetectorConfig(policy=OTHER_POLICY))}
    failures: dict[str, BaseException] = {}

    def running(name: str) -> threading.Thread:
        def target() -> None:
            try:
                workers[name].run()
            except WorkerStopped as err:
                failures[name] = err
        thread = threading.Thread(target=target, daemon=True)
        thread.start()
        return thread

    threads = {"w1": running("w1")}
    assert wait_for(lambda: workers["w1"].stats.decided >= len(first), 30)
    threads["w2"] = running("w2")
    assert wait_for(lambda: bool(workers["w2"].handlers) and len(workers["w1"].handlers) < 6, 30)
    time.sleep(0.5)  # the rebalance settled: w2 has rebuilt its stores
    # the later pages only on an input partition w1 owns: w1 makes their index requests, some to w2
    mine = sorted(p for topic, p in workers["w1"].handlers if topic == run.topics.pages)
    producer = Producer(run.client())
    for record in later:
        producer.produce(run.topics.pages, orjson.dumps(record), record["url"].encode(), partition=mine[0])
    assert producer.flush(10) == 0
    if not wait_for(lambda: "w2" in failures, 8):
        finish(workers, threads, 0)
        pytest.fail("w2 judged under another policy and did not stop: "
                    f"decided {workers['w1'].stats.decided} by w1, {workers['w2'].stats.decided} by w2")
    finish({"w1": workers["w1"]}, {"w1": threads["w1"]}, len(records))
    line = str(failures["w2"])
    assert isinstance(failures["w2"], VerdictSettingsDiffer) and "\n" not in line and "--policy" in line
    assert verdict_identity(DetectorConfig().verdict_settings()).hex() in line
    got = verdicts_by_id(outputs(run, quiet_s=1))  # raises if a page came out twice
    expected = {o.dedup["id"]: o.status for o in run_records(records, tmp_path / "file-mode")}
    assert got == expected
    assert workers["w2"].stats.decided == 0
