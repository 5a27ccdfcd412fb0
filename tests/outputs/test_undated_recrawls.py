"""Re-crawls without a fetch time in file mode: every fetch of a url is judged, none is a
`duplicate_id`; the ids are the same when a killed run is finished by a rerun."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from conftest import make_article, write_jsonl

from streamdedup.cli import main
from streamdedup.detector import Detector

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


def test_a_rerun_after_a_kill_gives_undated_pages_the_ids_of_an_unbroken_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    records = [{"url": f"https://feed{i % 3}.example/", "content": text(100 + i // 2)} for i in range(24)]
    data = write_jsonl(tmp_path / "in.jsonl", records)
    whole = tmp_path / "whole"
    assert main(["dedup", str(data), "--out", str(whole), "-q", "--batch-size", "5"]) == 0
    commit, calls = Detector.commit, []

    def crashing_commit(self: Detector, batch: object) -> None:
        calls.append(1)
        if len(calls) == 3:
            raise Killed
        commit(self, batch)  # type: ignore[arg-type]

    killed = tmp_path / "killed"
    monkeypatch.setattr(Detector, "commit", crashing_commit)
    with pytest.raises(Killed):
        main(["dedup", str(data), "--out", str(killed), "-q", "--batch-size", "5"])
    monkeypatch.setattr(Detector, "commit", commit)
    assert main(["dedup", str(data), "--out", str(killed), "-q", "--batch-size", "5"]) == 0
    for out in (whole, killed):
        assert sum(len((out / name).read_bytes().splitlines()) for name in OUTPUTS) == len(records)
        assert not (out / "rejected.jsonl").read_bytes()
    assert {name: (killed / name).read_bytes() for name in OUTPUTS} == {
        name: (whole / name).read_bytes() for name in OUTPUTS}
