"""Re-crawls without a fetch time in file mode: every fetch of a url is judged, none is a
`duplicate_id`, also in a later run into another --out that shares the store; the ids are the
same when a killed run is finished by a rerun, also a run of a ledger of an earlier version."""

from __future__ import annotations

import io
import sys
from collections.abc import Callable, Generator
from pathlib import Path

import orjson
import pytest
from conftest import make_article, write_jsonl

from streamdedup.cli import main
from streamdedup.detector import Detector
from streamdedup.outputs.job import FileJob
from streamdedup.record.readers import RawRecord

OUTPUTS = ("unique.jsonl", "duplicates.jsonl", "rejected.jsonl")
FEED = "https://news.example/feed"


class Killed(BaseException):
    """A kill between a batch's outputs and its store commit (as in test_file_mode_recovery)."""


def text(seed: int) -> str:
    return "\n\n".join(make_article(seed, paragraphs=3))


def polls(job: int) -> list[dict[str, object]]:
    """One feed url polled three times without a date (same, same, another story); a dated page
    sent twice (same url and fetch time: a re-send); an explicit id sent twice; a page dated 0
    (a crawler's "unknown") polled twice with another story."""
    first, other, third = text(11), text(12), text(13)
    dated = {"url": "https://news.example/a", "content": text(14), "fetched_at": "2024-03-01T00:00:00Z"}
    given = {"id": "story-9", "url": "https://news.example/b", "content": text(15)}
    records = [{"url": FEED, "content": first}, {"url": FEED, "content": first}, {"url": FEED, "content": other},
               dated, dated, given, given,
               {"url": "https://news.example/c", "content": first, "fetched_at": 0},
               {"url": "https://news.example/c", "content": third, "fetched_at": 0}]
    return [{**record, "n": n, "job": job} for n, record in enumerate(records)]


def by_url(out: Path) -> dict[str, list[dict[str, object]]]:
    """Each url's verdicts in input order (the records are numbered: `n`, passed through)."""
    rows = sorted((orjson.loads(line) for name in OUTPUTS for line in (out / name).read_bytes().splitlines()),
                  key=lambda row: (row["job"], row["n"]))
    found: dict[str, list[dict[str, object]]] = {}
    for row in rows:
        found.setdefault(row["url"], []).append(row["dedup"])
    return found


def test_an_undated_url_fetched_three_times_gets_three_verdicts(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert main(["dedup", str(write_jsonl(tmp_path / "in.jsonl", polls(1))), "--out", str(out), "-q"]) == 0
    got = by_url(out)
    first, same, changed = got[FEED]
    assert first["status"] == "unique"
    assert same["status"] == "duplicate" and same["duplicate_of"] == first["id"] and same["id"] != first["id"]
    assert changed["status"] == "unique" and changed["id"] not in (first["id"], same["id"])
    # dated 0: no usable time, judged as undated (the second page, another story, is unique)
    assert [v["status"] for v in got["https://news.example/c"]] == ["duplicate", "unique"]
    # a re-send of a dated page, and of an explicit id, stays a duplicate_id
    assert [v.get("reason") for v in got["https://news.example/a"]] == [None, "duplicate_id"]
    sent, resent = got["https://news.example/a"]
    assert resent["id"] == sent["id"]  # the dead letter names the id it repeats
    assert [v.get("reason") for v in got["https://news.example/b"]] == [None, "duplicate_id"]
    # the same polls again, --append (a new job): its undated pages are judged again, not refused
    assert main(["dedup", str(write_jsonl(tmp_path / "in.jsonl", polls(2))), "--out", str(out), "-q",
                 "--append"]) == 0
    again = by_url(out)[FEED][3:]
    assert [v["status"] for v in again] == ["duplicate"] * 3
    assert [v["duplicate_of"] for v in again] == [first["id"], first["id"], changed["id"]]


def run_killed(command: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Run `command`, killed between its third batch's outputs and their commit."""
    commit, calls = Detector.commit, []

    def crashing_commit(self: Detector, batch: object) -> None:
        calls.append(1)
        if len(calls) == 3:
            raise Killed
        commit(self, batch)  # type: ignore[arg-type]

    with monkeypatch.context() as crash:
        crash.setattr(Detector, "commit", crashing_commit)
        with pytest.raises(Killed):
            main(command)


def test_a_rerun_after_a_kill_gives_undated_pages_the_ids_of_an_unbroken_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    records = [{"url": f"https://feed{i % 3}.example/", "content": text(100 + i // 2)} for i in range(24)]
    data = write_jsonl(tmp_path / "in.jsonl", records)
    whole = tmp_path / "whole"
    assert main(["dedup", str(data), "--out", str(whole), "-q", "--batch-size", "5"]) == 0
    killed = tmp_path / "killed"
    run_killed(["dedup", str(data), "--out", str(killed), "-q", "--batch-size", "5"], monkeypatch)
    assert main(["dedup", str(data), "--out", str(killed), "-q", "--batch-size", "5"]) == 0
    for out in (whole, killed):
        assert sum(len((out / name).read_bytes().splitlines()) for name in OUTPUTS) == len(records)
        assert not (out / "rejected.jsonl").read_bytes()
    assert {name: (killed / name).read_bytes() for name in OUTPUTS} == {
        name: (whole / name).read_bytes() for name in OUTPUTS}


def test_an_undated_refetch_in_a_later_run_into_another_out_that_shares_the_store_is_judged(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each new --out's first job was "job 1" (its place in that --out's ledger), so the url's
    fetch in the second run had the first one's id: a `duplicate_id`, never judged."""
    state, timetable, cancelled = tmp_path / "state", text(21), text(22)
    day1 = write_jsonl(tmp_path / "day1.jsonl", [{"url": FEED, "content": timetable, "n": 0, "job": 1}])
    day2 = write_jsonl(tmp_path / "day2.jsonl", [{"url": FEED, "content": cancelled, "n": 0, "job": 2},
                                                 {"url": FEED, "content": timetable, "n": 1, "job": 2}])
    for data, out in ((day1, "o1"), (day2, "o2")):
        assert main(["dedup", str(data), "--out", str(tmp_path / out), "--state", str(state), "-q"]) == 0
    (first,) = by_url(tmp_path / "o1")[FEED]
    changed, same = by_url(tmp_path / "o2")[FEED]
    assert changed["status"] == "unique" and changed["id"] != first["id"]
    assert same["status"] == "duplicate" and same["duplicate_of"] == first["id"]
    # stdin into a third --out: judged too (the day's first fetch again)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BufferedReader(io.BytesIO(day1.read_bytes()))))
    assert main(["dedup", "-", "--out", str(tmp_path / "o3"), "--state", str(state), "-q"]) == 0
    (again,) = by_url(tmp_path / "o3")[FEED]
    assert again["status"] == "duplicate" and again["duplicate_of"] == first["id"]


def second_job_whole_and_killed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, first: Path, second: Path) -> list[str]:
    """Two stores ("whole", "killed") each given a job over `first` into `o1`, then one over `second` into `o2`:
    unbroken in "whole", killed mid-run in "killed"; returns the killed job's command, to rerun."""
    for store in ("whole", "killed"):
        state = tmp_path / store / "state"
        assert main(["dedup", str(first), "--out", str(tmp_path / store / "o1"), "--state", str(state), "-q"]) == 0
    assert main(["dedup", str(second), "--out", str(tmp_path / "whole" / "o2"), "--state",
                 str(tmp_path / "whole" / "state"), "-q", "--batch-size", "5"]) == 0
    command = ["dedup", str(second), "--out", str(tmp_path / "killed" / "o2"), "--state",
               str(tmp_path / "killed" / "state"), "-q", "--batch-size", "5"]
    run_killed(command, monkeypatch)
    return command


def outputs(out: Path) -> dict[str, bytes]:
    return {name: (out / name).read_bytes() for name in OUTPUTS}


def test_a_killed_later_job_of_a_shared_store_is_finished_with_the_ids_of_an_unbroken_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    records = [{"url": f"https://feed{i % 3}.example/", "content": text(100 + i // 2)} for i in range(24)]
    data = write_jsonl(tmp_path / "in.jsonl", records)
    command = second_job_whole_and_killed(tmp_path, monkeypatch, data, data)
    assert main(command) == 0
    assert outputs(tmp_path / "killed" / "o2") == outputs(tmp_path / "whole" / "o2")
    got = tmp_path / "killed" / "o2"
    assert not (got / "rejected.jsonl").read_bytes()  # the second fetches are judged: duplicates of the first
    assert len((got / "duplicates.jsonl").read_bytes().splitlines()) == len(records)


def numbered_by_place(self: FileJob, read: Callable[[list[str], int], Generator[RawRecord, None, None]]
                      ) -> Generator[RawRecord, None, None]:
    """`FileJob._new_job` before ledger version 3: a job was not numbered in the store, but by its place in its ledger."""
    self.ledger.jobs.append(self.job)
    return read(self.job.inputs, self.job.warc_records)


def test_a_job_of_an_earlier_version_is_finished_with_the_ids_it_had_and_new_jobs_come_after_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    records = [{"url": f"https://feed{i % 3}.example/", "content": text(100 + i // 2)} for i in range(24)]
    data, other = write_jsonl(tmp_path / "in.jsonl", records), write_jsonl(tmp_path / "other.jsonl", records[:3])
    with monkeypatch.context() as old_version:
        old_version.setattr("streamdedup.outputs.job.LEDGER_VERSION", 2)
        old_version.setattr(FileJob, "_new_job", numbered_by_place)
        command = second_job_whole_and_killed(tmp_path, monkeypatch, other, data)
    assert main(command) == 0  # this version finishes the old job: its pages' places are "job 1:#n" still
    assert outputs(tmp_path / "killed" / "o2") == outputs(tmp_path / "whole" / "o2")
    # a new job into that store is numbered after the old ledgers' jobs: its pages are judged
    state, o3 = tmp_path / "killed" / "state", tmp_path / "killed" / "o3"
    assert main(["dedup", str(other), "--out", str(o3), "--state", str(state), "-q"]) == 0
    assert not (o3 / "rejected.jsonl").read_bytes()
    assert len((o3 / "duplicates.jsonl").read_bytes().splitlines()) == 3
