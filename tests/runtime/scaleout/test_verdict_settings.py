"""Workers of one group that judge with other verdict settings (issue 56).

Signatures made with other parameters are refused by the index partitions (`check_made_by`); the
policies, retention and clock skew are not recorded in any store, so a worker started with another
`--policy` judged its index partitions' share of every page under its own rules, without a word.
The group now records its verdict settings (`runtime/group_settings.py`): a worker with other ones
refuses to start, and after a deliberate change (`--adopt-settings`) an index request from a worker
with the new ones stops a worker still running the old ones.
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
from streamdedup.runtime.group_settings import (
    GroupRecord,
    GroupSettingsDiffer,
    as_flags,
    check_topology,
    current_record,
    read_group_record,
    refusal,
)
from streamdedup.runtime.scaleout.index_stage import IndexPartition, Judging, VerdictSettingsDiffer
from streamdedup.runtime.scaleout.messages import IndexRequest
from streamdedup.runtime.scaleout.routing import page_order
from streamdedup.runtime.settings import WorkerSettings
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


def a_record(identity: bytes, generation: int = 1, offset: int = 0) -> GroupRecord:
    return GroupRecord("g", generation, identity, {"policy": identity.hex()}, "w", offset)


def test_the_groups_settings_are_the_highest_generations_first_record_and_equal_policies_share_an_id():
    a, b = b"a" * 8, b"b" * 8
    assert current_record([]) is None
    assert current_record([a_record(a, 1, 0), a_record(b, 1, 1)]).identity == a  # a race at start: the first
    assert current_record([a_record(a, 1, 0), a_record(b, 1, 1), a_record(b, 2, 2), a_record(a, 2, 3)]).identity == b
    written = [DetectorConfig(policy=text) for text in ("exact|minhash>=0.8", " exact | minhash >= 0.80 ")]
    assert len({verdict_identity(c.verdict_settings()) for c in written}) == 1
    assert verdict_identity(DetectorConfig(policy="minhash>=0.8|exact").verdict_settings()) \
        != verdict_identity(written[0].verdict_settings())  # the first rule that holds names the verdict
    line = refusal(replace(WorkerSettings(), group_id="g"), a_record(a), {"policy": "x"}, b)
    assert "\n" not in line and "--policy" in line and "--adopt-settings" in line and a.hex() in line


def test_a_groups_record_names_its_topology_and_a_worker_of_the_other_one_is_refused_in_one_line():
    """A record written now names the group's topology; one of 0.12.0 to 0.14.0 tells it by its
    internal topics (the global topology's, none for local); one of 0.11.0 or earlier does not
    tell, and is not checked. Before, the topology was not recorded: a local worker joined a
    global group (and the other way round) unchecked."""
    written = replace(a_record(b"a" * 8), internal=("pages.index", "pages.parts"), topology="global")
    assert GroupRecord.decode(written.encode(), 0) == replace(written, offset=0)
    old = {"group": "g", "generation": 1, "verdict_id": "61" * 8, "settings": {}, "written_by": "w"}
    of_0_12 = {**old, "internal_topics": ["pages.index", "pages.parts"], "reads": "pages", "writes": []}
    decoded = {name: GroupRecord.decode(orjson.dumps(value), 0) for name, value in (
        ("0.11", old), ("0.12 global", of_0_12), ("0.12 local", {**of_0_12, "internal_topics": []}))}
    assert {name: record.topology for name, record in decoded.items()} == {
        "0.11": "", "0.12 global": "global", "0.12 local": "local"}
    for group, worker in (("global", "local"), ("local", "global")):
        with pytest.raises(GroupSettingsDiffer) as refused:
            check_topology(replace(WorkerSettings(), group_id="g", topology=worker), replace(written, topology=group))
        line = str(refused.value)
        assert "\n" not in line and f"the {worker} topology, group 'g' the {group} one" in line, line
        assert f"--topology {group} (STREAMDEDUP_TOPOLOGY={group}" in line and "--group-id" in line, line
        check_topology(replace(WorkerSettings(), topology=worker), decoded["0.11"])  # not told: accepted
        check_topology(replace(WorkerSettings(), topology=worker), replace(written, topology=worker))


def test_the_settings_set_in_the_config_file_only_are_named_as_its_lines_after_the_flags():
    """Before: "...max_new_pairs in the --config file '8' --max-new-share '0.1'...", a value after the file's name
    and flags on either side."""
    group = DetectorConfig(max_new_pairs=9, min_new_paragraph_words=12, policy=OTHER_POLICY).verdict_settings()
    flags = as_flags(group)
    assert flags.endswith("; in the --config file, max_new_pairs = 9 and min_new_paragraph_words = 12"), flags
    assert flags.startswith("--max-clock-skew 1d --max-new-share '0.1' --policy 'exact'"), flags
    assert DetectorConfig.from_mapping({"max_new_pairs": 8, "min_new_paragraph_words": 12}).max_new_pairs == 8
    assert as_flags({"policy": "exact"}) == "--policy 'exact'"
    line = refusal(replace(WorkerSettings(), group_id="g"), replace(a_record(b"a" * 8), settings=group),
                   DetectorConfig().verdict_settings(), b"b" * 8)
    assert f"max_new_pairs '9' for the group, '{DetectorConfig().max_new_pairs}' here" in line, line
    assert "; in the --config file, max_new_pairs = 9 and min_new_paragraph_words = 12), or restart" in line, line


def test_workers_of_two_engine_rule_versions_have_other_verdict_settings(monkeypatch):
    """The engine's fixed rules move verdicts as a policy does: a group of two versions is told."""
    import streamdedup.verdict.engine as engine

    before = verdict_identity(DetectorConfig().verdict_settings())
    group = a_record(before)
    group.settings.update(DetectorConfig().verdict_settings())
    monkeypatch.setattr(engine, "RULES_VERSION", engine.RULES_VERSION + 1)
    mine = DetectorConfig().verdict_settings()
    assert verdict_identity(mine) != before
    line = refusal(replace(WorkerSettings(), group_id="g"), group, mine, verdict_identity(mine))
    assert "\n" not in line and "one streamdedup version" in line and "--adopt-settings" in line


def test_a_request_under_other_verdict_settings_stops_the_worker_only_if_its_own_are_not_the_groups(
        tmp_path, caplog):
    config = DetectorConfig()
    fingerprinter = Fingerprinter(config)
    mine, theirs = (verdict_identity(c.verdict_settings()) for c in (config, replace(config, policy=OTHER_POLICY)))
    assert mine != theirs and verdict_identity(DetectorConfig().verdict_settings()) == mine
    request = a_request(fingerprinter, theirs)
    assert IndexRequest.decode(request.encode()) == request
    assert IndexRequest.decode(request.encode()[:-8]) == replace(request, judged_with=b"")  # an older maker's
    group: list[GroupRecord] = [a_record(mine)]
    judging = Judging(config.verdict_settings(), mine, "g", lambda: group[0])
    index = IndexPartition(tmp_path / "i", fingerprinter.methods, SitePolicy.parse(config.policy, config.site_policy),
                           fingerprinter.store_config, 0, judging=judging)
    try:
        index.check_judged_with(replace(request, judged_with=mine), "pages.index[0]@0")
        index.check_judged_with(replace(request, judged_with=b""), "pages.index[0]@1")
        with caplog.at_level(logging.WARNING):
            index.check_judged_with(request, "pages.index[0]@2")  # the group's settings are this worker's
        assert theirs.hex() in caplog.text
        group[0] = a_record(theirs, generation=2)  # another worker adopted its settings
        with pytest.raises(VerdictSettingsDiffer) as stopped:
            index.check_judged_with(request, "pages.index[0]@3")
    finally:
        index.close()
    line = str(stopped.value)
    assert "\n" not in line and theirs.hex() in line and mine.hex() in line and "--policy" in line
    assert isinstance(stopped.value, WorkerStopped)


def running(workers: dict[str, Worker], name: str, failures: dict[str, BaseException]) -> threading.Thread:
    """`workers[name].run()` in a thread; a stop lands in `failures`."""
    def target() -> None:
        try:
            workers[name].run()
        except WorkerStopped as err:
            failures[name] = err
    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread


def produce_to(run: WorkerSettings, records: list[dict], partition: int) -> None:
    producer = Producer(run.client())
    for record in records:
        producer.produce(run.topics.pages, orjson.dumps(record), record["url"].encode(), partition=partition)
    assert producer.flush(10) == 0


def second_worker_refused(run, second, config, first_pages, joined):
    """w1 (`run`, the default config) judges the group's first pages; w2 (`second`, `config`) must
    then stop at start with `GroupSettingsDiffer`, before it takes a partition (`joined`: the
    failure's message if it does not). The workers, their threads and their failures."""
    workers = {"w1": Worker(replace(run, worker_id="w1", state_dir=run.state_dir / "w1"), DetectorConfig()),
               "w2": Worker(second, config)}
    failures: dict[str, BaseException] = {}
    threads = {"w1": running(workers, "w1", failures)}
    assert wait_for(lambda: workers["w1"].stats.decided >= first_pages, 30)
    threads["w2"] = running(workers, "w2", failures)
    if not wait_for(lambda: "w2" in failures, 5):
        finish(workers, threads, 0)
        pytest.fail(f"{joined}: its failures {failures}")
    assert isinstance(failures["w2"], GroupSettingsDiffer) and not workers["w2"].handlers
    return workers, threads, failures


@pytest.mark.parametrize("topology", ["global", "local"])
def test_a_worker_with_another_policy_than_its_groups_refuses_to_start(broker, settings, tmp_path, topology):
    """w1 (the default policy) runs the group; w2 (`--policy exact`) refuses at start, before it
    takes any partition, in one line naming what differs and the fix, whichever pages come when.
    Before, w2 joined: in the global topology a page's index requests on w2's partitions were
    judged under its policy (or w2 or w1 stopped, whichever received first); in the local one,
    w2's input partitions were judged under its policy, without a word. w1 judges every page once,
    as file mode does (global topology)."""
    records = [r for r in syndicated_crawl(4) if isinstance(r, dict)]
    first, later = records[:6], records[6:]
    run = replace(settings, topology=topology, partitions=2, static_membership=False, batch_size=8,
                  verdict_wait_s=0.5, watermark_interval_s=0.2)
    send(run, first)
    workers, threads, failures = second_worker_refused(
        run, replace(run, worker_id="w2", state_dir=run.state_dir / "w2"), DetectorConfig(policy=OTHER_POLICY),
        len(first), f"w2 with --policy {OTHER_POLICY} joined the group")
    send(run, later)
    finish({"w1": workers["w1"]}, {"w1": threads["w1"]}, len(records))
    assert "w1" not in failures
    line = str(failures["w2"])
    assert "\n" not in line and f"policy {DetectorConfig().verdict_settings()['policy']!r} for the group" in line
    assert "--adopt-settings" in line and verdict_identity(DetectorConfig().verdict_settings()).hex() in line
    assert workers["w2"].health()[0] is False
    got = verdicts_by_id(outputs(run))  # raises if a page came out twice
    if topology == "global":  # the local one finds no copy across input partitions
        assert got == {o.dedup["id"]: o.status for o in run_records(records, tmp_path / "file-mode")}
    assert len(got) == len(records) and workers["w2"].stats.decided == 0


def test_a_worker_of_the_other_topology_than_its_groups_refuses_to_start(broker, settings, tmp_path):
    """w1 (global) runs the group; w2, started with the local topology, refuses at start, before it
    takes a partition, in one line naming the group's topology and the fix, even with
    --adopt-settings. Before (an operator review), w2 joined, took a partition and judged its pages
    against its own store: 0 of 10 copies across partitions found (10 of 10 with two global
    workers). w1 judges every page once, as file mode does."""
    records = [r for r in syndicated_crawl(4) if isinstance(r, dict)]
    first, later = records[:6], records[6:]
    run = replace(settings, partitions=2, static_membership=False, batch_size=8, verdict_wait_s=0.5,
                  watermark_interval_s=0.2)
    send(run, first)
    workers, threads, failures = second_worker_refused(
        run, replace(run, worker_id="w2", state_dir=run.state_dir / "w2", topology="local", adopt_settings=True),
        DetectorConfig(), len(first), "w2 of the local topology joined a global group")
    line = str(failures["w2"])
    assert "\n" not in line and "--topology global" in line, line
    send(run, later)
    finish({"w1": workers["w1"]}, {"w1": threads["w1"]}, len(records))
    assert "w1" not in failures and workers["w2"].stats.decided == 0
    group = read_group_record(run)
    assert group is not None and group.topology == "global" and group.generation == 1
    got = verdicts_by_id(outputs(run))  # raises if a page came out twice
    assert got == {o.dedup["id"]: o.status for o in run_records(records, tmp_path / "file-mode")}


def test_adopted_settings_stop_the_workers_still_running_the_old_ones(broker, settings, caplog):
    """w1 (the default policy) runs the group; w2 joins with `--policy exact --adopt-settings`:
    the group's settings are now w2's (generation 2). Pages on w1's input partition: w2 receives
    w1's requests and judges them (before, the receiver stopped, whichever it was). Then pages on
    w2's: its index requests reach w1's index partition, and w1, whose settings are no longer the
    group's, stops; w2 does not, takes w1's partitions and judges every page, each once."""
    if broker.kind == "tansu":
        pytest.skip(TANSU_GROUPS)
    records = [r for r in syndicated_crawl(6) if isinstance(r, dict)]
    first, middle, later = records[:6], records[6:12], records[12:]
    run = replace(settings, partitions=2, static_membership=False, batch_size=8, verdict_wait_s=0.5,
                  watermark_interval_s=0.2)
    send(run, first)
    new = DetectorConfig(policy=OTHER_POLICY)
    workers = {"w1": Worker(replace(run, worker_id="w1", state_dir=run.state_dir / "w1"), DetectorConfig()),
               "w2": Worker(replace(run, worker_id="w2", state_dir=run.state_dir / "w2", adopt_settings=True), new)}
    failures: dict[str, BaseException] = {}
    caplog.set_level(logging.WARNING, "streamdedup.runtime.scaleout.index_stage")
    threads = {"w1": running(workers, "w1", failures)}
    assert wait_for(lambda: workers["w1"].stats.decided >= len(first), 30)
    threads["w2"] = running(workers, "w2", failures)
    assert wait_for(lambda: bool(workers["w2"].handlers) and len(workers["w1"].handlers) < 6, 30)
    time.sleep(0.5)  # the rebalance settled: w2 has rebuilt its stores
    # pages on w1's input partition first: w1's requests under the old settings reach w2's index
    # partition, and w2, whose settings are now the group's, judges them and goes on
    mine = sorted(p for topic, p in workers["w1"].handlers if topic == run.topics.pages)
    produce_to(run, middle, mine[0])
    wait_for(lambda: bool(failures) or workers["w1"].stats.decided + workers["w2"].stats.decided
             >= len(first) + len(middle), 10)
    assert not failures, f"a worker stopped on a request from before the adopt's worker: {failures}"
    assert "are judged with the group's" in caplog.text  # w2 received some
    # then pages on w2's: its requests under the new settings reach w1's index partition: w1 stops
    theirs = sorted(p for topic, p in workers["w2"].handlers if topic == run.topics.pages)
    produce_to(run, later, theirs[0])
    if not wait_for(lambda: "w1" in failures, 10):
        finish(workers, threads, 0)
        pytest.fail(f"w1 judged under the group's old settings and did not stop: failures {failures}")
    finish({"w2": workers["w2"]}, {"w2": threads["w2"]}, len(later))
    assert "w2" not in failures
    group = read_group_record(run)
    assert group is not None and group.generation == 2 and group.identity == verdict_identity(new.verdict_settings())
    line = str(failures["w1"])
    assert isinstance(failures["w1"], VerdictSettingsDiffer) and "\n" not in line and "generation 2" in line
    got = verdicts_by_id(outputs(run))  # raises if a page came out twice
    assert len(got) == len(records)
