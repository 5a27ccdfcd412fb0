"""A full disk, or too little memory, under the store: a clear error naming the fix, no corruption, nothing lost."""

from __future__ import annotations

import subprocess
from dataclasses import replace

import pytest

from runtime.conftest import run_until_decided
from runtime.test_worker import crawl, outputs, send, verdicts_by_id
from streamdedup.config import DetectorConfig
from streamdedup.runtime.worker import StoreWriteFailed, Worker
from streamdedup.testing import run_records


def committed_outcomes(settings) -> int:
    """The outcomes the stopped worker had committed: what a restart has left to decide."""
    return sum(len(messages) for messages in outputs(settings).values())


@pytest.fixture
def small_disk(tmp_path):
    mount = tmp_path / "small"
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=300k", "tmpfs", str(mount)], capture_output=True).returncode:
        pytest.skip("cannot mount a small tmpfs here (needs root)")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def test_full_disk_fails_clearly_and_a_restart_with_space_loses_nothing(broker, settings, small_disk, tmp_path):
    if broker.kind == "tansu":
        pytest.skip("Tansu reported the group's committed offset behind what its transactions had committed "
                    "after the worker stopped on the full disk (parts store at offset 28, group at 11): the "
                    "store-ahead check refuses to start, as it should; runs on noida-db")
    records = crawl(150)
    send(settings, records)
    cramped = replace(settings, state_dir=small_disk / "state")
    with pytest.raises(StoreWriteFailed, match="free space \\(or memory, as the error says\\) and restart"):
        Worker(cramped, DetectorConfig()).run(idle_timeout_s=5)
    # space comes back: the same store, moved to a disk with room, must still open and catch up
    roomy = replace(settings, state_dir=tmp_path / "state")
    subprocess.run(["cp", "-a", str(small_disk / "state"), str(roomy.state_dir)], check=True)
    run_until_decided(Worker(roomy, DetectorConfig()), len(records) - committed_outcomes(settings))
    expected = {o.dedup["id"]: o.status for o in run_records(records, tmp_path / "file-mode") if o.status != "rejected"}
    assert verdicts_by_id(outputs(settings)) == expected


def test_an_index_outgrowing_the_memory_left_fails_clearly_and_a_restart_with_memory_loses_nothing(
        broker, settings, tmp_path, monkeypatch):
    """The worker's store refuses a batch that would grow its in-memory index past the memory left
    (before writing it): the worker stops in one error naming the fix, and once the memory is
    there a restart replays the batch into the store and every page has the verdict file mode gives."""
    from streamdedup.store import signature_store

    if broker.kind == "tansu":
        pytest.skip("as above: Tansu's group offset lags its committed transactions after a stop; runs on noida-db")
    records = crawl(150)
    send(settings, records)
    monkeypatch.setattr(signature_store, "available_bytes", lambda: 1000)
    with pytest.raises(StoreWriteFailed, match="needs .* GiB more memory for its in-memory index .*nothing of the "
                                               "batch was written.* run it where it has more memory"):
        Worker(settings, DetectorConfig()).run(idle_timeout_s=5)
    monkeypatch.setattr(signature_store, "available_bytes", lambda: None)
    run_until_decided(Worker(settings, DetectorConfig()), len(records) - committed_outcomes(settings))
    expected = {o.dedup["id"]: o.status for o in run_records(records, tmp_path / "file-mode") if o.status != "rejected"}
    assert verdicts_by_id(outputs(settings)) == expected
