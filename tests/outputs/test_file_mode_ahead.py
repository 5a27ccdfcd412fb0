"""File mode reads and prepares a file's next batch while this batch's outputs sync, and commits
this batch as before; stdin's next batch is not read before its turn; plain text never loads the
nesting check. Real store, the command's own `main`."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest
from conftest import write_jsonl
from test_file_mode_recovery import Killed, crawl, dedup, input_keys, output_keys

from streamdedup.fingerprinter import Fingerprinter
from streamdedup.outputs.files import FileSink

WAIT_S = 3.0  # how long the first sync waits for the next batch's preparation before it tells it did not come


def test_a_files_next_batch_is_prepared_while_its_outputs_sync(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first batch's sync waits until the second batch is being prepared: done one after the
    other (the sync first), it would wait in vain. Every record is out once all the same."""
    records = crawl(64)
    data = write_jsonl(tmp_path / "a.jsonl", records)
    prepare, sync = Fingerprinter.prepare_many, FileSink.sync
    preparing, seen = threading.Event(), []  # the second batch's preparation started

    def prepare_many(self: Fingerprinter, raws: list) -> list:  # type: ignore[type-arg]
        seen.append(("prepare", threading.current_thread() is threading.main_thread()))
        if len([s for s in seen if s[0] == "prepare"]) == 2:
            preparing.set()
        return prepare(self, raws)

    def synced(self: FileSink) -> dict[str, int]:
        if not [s for s in seen if s[0] == "sync"]:
            seen.append(("sync", preparing.wait(WAIT_S)))  # bounded: a sequential run is slow, not stuck
        return sync(self)

    monkeypatch.setattr(Fingerprinter, "prepare_many", prepare_many)
    monkeypatch.setattr(FileSink, "sync", synced)
    assert dedup(str(data), "--out", str(tmp_path / "out"), "--batch-size", "16") == 0
    assert ("sync", True) in seen  # the next batch was prepared while it synced
    assert all(main for kind, main in seen if kind == "prepare")  # pages are still prepared by the main thread
    keys, kinds = output_keys(tmp_path / "out")
    assert keys == input_keys(records) and kinds["duplicate_id"] == 0


def test_stdin_is_not_read_ahead_of_its_batch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A stream's next batch is read after this one is committed: a stop (SIGTERM) in between
    must not leave records read that no output holds."""
    import io

    from streamdedup.detector import Detector

    records = crawl(48)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BufferedReader(io.BytesIO(b"\n".join(records) + b"\n"))))
    prepare, commit, order = Fingerprinter.prepare_many, Detector.commit, []

    def prepare_many(self: Fingerprinter, raws: list) -> list:  # type: ignore[type-arg]
        order.append("prepare")
        return prepare(self, raws)

    def committed(self: Detector, batch: object) -> None:
        order.append("commit")
        commit(self, batch)  # type: ignore[arg-type]

    monkeypatch.setattr(Fingerprinter, "prepare_many", prepare_many)
    monkeypatch.setattr(Detector, "commit", committed)
    assert dedup("-", "--out", str(tmp_path / "out"), "--batch-size", "16") == 0
    assert order[:6] == ["prepare", "commit"] * 3


def test_an_error_preparing_the_next_batch_leaves_this_one_committed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A crash while the next batch is prepared comes after this batch's commit, as when it was
    read after it: its outputs stand, and the rerun finishes the job with every record once."""
    records = crawl(64)
    data = write_jsonl(tmp_path / "a.jsonl", records)
    out = tmp_path / "out"
    prepare, calls = Fingerprinter.prepare_many, []

    def crashing(self: Fingerprinter, raws: list) -> list:  # type: ignore[type-arg]
        calls.append(1)
        if len(calls) == 3:
            raise Killed
        return prepare(self, raws)

    monkeypatch.setattr(Fingerprinter, "prepare_many", crashing)
    with pytest.raises(Killed):
        dedup(str(data), "--out", str(out), "--batch-size", "16")
    monkeypatch.setattr(Fingerprinter, "prepare_many", prepare)
    written = sum(len((out / name).read_bytes().splitlines()) for name in ("unique.jsonl", "duplicates.jsonl",
                                                                            "rejected.jsonl"))
    assert written == 32  # two batches out, both committed: the rerun keeps them
    before = {name: (out / name).read_bytes() for name in ("unique.jsonl", "duplicates.jsonl", "rejected.jsonl")}
    assert dedup(str(data), "--out", str(out), "--batch-size", "16") == 0
    assert all((out / name).read_bytes().startswith(kept) for name, kept in before.items())
    keys, kinds = output_keys(out)
    assert keys == input_keys(records) and kinds["duplicate_id"] == 0


def test_plain_text_never_loads_the_nesting_check(tmp_path: Path) -> None:
    """The nesting check's kernels (markup only) are not loaded for a run of plain text."""
    data = write_jsonl(tmp_path / "a.jsonl", crawl(20))
    probe = ("import sys; from streamdedup.api import dedup_files; "
             f"dedup_files([{str(data)!r}], {str(tmp_path / 'out')!r}); "
             "print('streamdedup.clean.nesting' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False"]


def test_no_collection_runs_while_a_batch_is_alive(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """From a batch's verdicts to its commit (the next batch prepared meanwhile) the cyclic collector
    does not run: it would find the batch's objects alive and move them to older generations. It
    runs between batches, and is left enabled after."""
    import gc

    from streamdedup.detector import Detector

    decide, commit = Detector.decide_staged, Detector.commit
    alive, during, between = [False], [], []

    def decide_staged(self: Detector, items: list) -> tuple:  # type: ignore[type-arg]
        alive[0] = True
        return decide(self, items)

    def committed(self: Detector, batch: object) -> None:
        commit(self, batch)  # type: ignore[arg-type]
        alive[0] = False

    def collected(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            (during if alive[0] else between).append(info["generation"])

    monkeypatch.setattr(Detector, "decide_staged", decide_staged)
    monkeypatch.setattr(Detector, "commit", committed)
    threshold = gc.get_threshold()
    gc.set_threshold(50, *threshold[1:])  # collections every few pages, so that a span left open shows
    gc.callbacks.append(collected)
    try:
        assert dedup(str(write_jsonl(tmp_path / "a.jsonl", crawl(64))), "--out", str(tmp_path / "out"),
                     "--batch-size", "16") == 0
    finally:
        gc.callbacks.remove(collected)
        gc.set_threshold(*threshold)
    assert during == [] and between  # collections ran, none with a batch alive
    assert gc.isenabled()
