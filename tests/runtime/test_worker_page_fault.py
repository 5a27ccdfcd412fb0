"""A page whose judging or template step raises, on the worker (both topologies, a real broker and RocksDB): one dead letter.

The fault is injected into the engine's pure logic for one page id (tests/test_page_fault.py); before
the per-page net the worker raised it out of its batch, and a restart replayed the batch into it again."""

from __future__ import annotations

from dataclasses import replace

import orjson
import pytest
from test_page_fault import DETAIL, FAULTY, fault_records, inject_fault

from runtime.conftest import read_topic, run_until_decided
from runtime.test_worker import outputs, send, verdicts_by_id
from streamdedup.config import DetectorConfig
from streamdedup.runtime.worker import Worker
from streamdedup.testing import run_records


@pytest.mark.parametrize("topology", ["global", "local"])
def test_the_faulty_page_is_rejected_once_and_the_others_judged(settings, tmp_path, monkeypatch, caplog, topology):
    records = fault_records()
    expected = {o.dedup["id"]: o.status for o in run_records(records, tmp_path / "file-mode") if o.dedup["id"] != FAULTY}
    settings = replace(settings, topology=topology)
    send(settings, records)
    inject_fault(monkeypatch)
    stats = run_until_decided(Worker(settings, DetectorConfig()), len(records), timeout_s=120)
    assert stats.decided == len(records)
    got = outputs(settings)
    assert verdicts_by_id(got) == expected
    [dead] = got["rejected"]
    assert dict(dead.headers())["dedup.reason"] == b"processing_error"
    dedup = orjson.loads(dead.value())["dedup"]
    assert dedup["id"] == FAULTY and dedup["reason"] == "processing_error" and DETAIL in dedup["detail"]
    lines = [orjson.loads(m.value())["dedup"] for m in read_topic(settings, settings.topics.verdicts)]
    assert len(lines) == len(records) and sum(line["status"] == "rejected" for line in lines) == 1
    # logged with its traceback where it raised: once (global: once in each index partition its keys live in)
    logged = [r for r in caplog.records if r.name == "streamdedup.verdict.page_fault"]
    assert logged and all(FAULTY in r.getMessage() and r.exc_info for r in logged)
    assert len(logged) == 1 or topology == "global"


@pytest.mark.parametrize("topology", ["global", "local"])
def test_a_replay_meets_the_faulty_page_again_and_emits_nothing_twice(settings, tmp_path, monkeypatch, topology):
    """The store lost after the faulty page's batch: the next worker replays it (the faulty page failing again,
    filed nowhere) without producing, then judges the rest as file mode does with the same fault."""
    import shutil

    records = fault_records()
    settings = replace(settings, topology=topology)
    inject_fault(monkeypatch)
    file_mode = {o.dedup["id"]: o.status for o in run_records(records, tmp_path / "file-mode")}
    assert file_mode[FAULTY] == "rejected"
    send(settings, records[:6])  # the faulty page is the fifth
    assert run_until_decided(Worker(settings, DetectorConfig()), 6, timeout_s=120).decided == 6
    shutil.rmtree(settings.state_dir)  # the worker's disk is gone: its stores are rebuilt from Kafka
    send(settings, records[6:])
    stats = run_until_decided(Worker(settings, DetectorConfig()), len(records) - 6, timeout_s=120)
    assert stats.replayed >= 6 and stats.decided == len(records) - 6
    got = outputs(settings)
    assert verdicts_by_id(got) == {page_id: status for page_id, status in file_mode.items() if page_id != FAULTY}
    assert [orjson.loads(m.value())["dedup"]["id"] for m in got["rejected"]] == [FAULTY]  # once


@pytest.mark.parametrize("topology", ["global", "local"])
def test_a_page_whose_template_step_raises_is_rejected_once(settings, tmp_path, monkeypatch, topology):
    """The fault in the template step (`own_text`: the global topology's fingerprint step, the local's detector)."""
    from test_template_fault import inject_template_fault

    records = fault_records()
    inject_template_fault(monkeypatch)
    file_mode = {o.dedup["id"]: o.status for o in run_records(records, tmp_path / "file-mode")}
    assert file_mode[FAULTY] == "rejected"
    settings = replace(settings, topology=topology)
    send(settings, records)
    stats = run_until_decided(Worker(settings, DetectorConfig()), len(records), timeout_s=120)
    assert stats.decided == len(records)
    got = outputs(settings)
    assert verdicts_by_id(got) == {page_id: status for page_id, status in file_mode.items() if page_id != FAULTY}
    [dead] = got["rejected"]
    dedup = orjson.loads(dead.value())["dedup"]
    assert dedup["id"] == FAULTY and dedup["reason"] == "processing_error" and DETAIL in dedup["detail"]
