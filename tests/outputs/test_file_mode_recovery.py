"""File mode keeps its outputs and finishes after a crash: refusals touch nothing, a rerun after
SIGKILL gives every input record exactly once across unique/duplicates/rejected.jsonl, and
--fresh deletes only a store. Real store, real `streamdedup dedup` subprocesses for the kills."""

from __future__ import annotations

import io
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import orjson
import pytest
from conftest import write_jsonl

from streamdedup.cli import main
from streamdedup.detector import Detector
from streamdedup.testing import make_words

OUTPUTS = ("unique.jsonl", "duplicates.jsonl", "rejected.jsonl")
COMMAND = [sys.executable, "-m", "streamdedup", "dedup"]



class Killed(BaseException):
    """A kill in the middle of a run (SIGKILL cannot be caught): no handler of the command line's
    takes it, as none takes a kill; Ctrl-C's KeyboardInterrupt it does (one line, exit 130)."""

def crawl(count: int, seed: int = 1, prefix: str = "p") -> list[bytes]:
    """Small plain-text pages (each article with an edited copy on another site) and a bad line
    in every 50: a few thousand are generated in well under a second."""
    rng = random.Random(seed)
    vocabulary = make_words(rng, 2000)
    records: list[bytes] = []
    while len(records) < count:
        n = len(records)
        if n % 50 == 49:
            records.append(f"{{not json {prefix}{n}".encode())
            continue
        words = rng.choices(vocabulary, k=60)
        for copy in range(2):
            text = " ".join(words + ([f"update{copy}"] if copy else []))
            records.append(orjson.dumps({"id": f"{prefix}{n + copy}", "url": f"https://s{copy}.example/{prefix}{n}",
                                         "content": text, "content_type": "text/plain",
                                         "fetched_at": "2024-03-01T00:00:00Z"}))
    return records[:count]


def input_keys(records: list[bytes]) -> Counter[str]:
    """What identifies each input record in the outputs: its id, or its raw bytes if it is not JSON."""
    keys: Counter[str] = Counter()
    for record in records:
        try:
            keys[orjson.loads(record)["id"]] += 1
        except orjson.JSONDecodeError:
            keys[record.decode()] += 1
    return keys


def output_keys(out: Path) -> tuple[Counter[str], Counter[str]]:
    """Every output line's input key, and the statuses/reasons seen."""
    keys: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    for name in OUTPUTS:
        path = out / name
        for line in path.read_bytes().splitlines() if path.exists() else []:
            row = orjson.loads(line)
            keys[row.get("id") or row.get("raw")] += 1
            kinds[row["dedup"].get("reason", row["dedup"]["status"])] += 1
    return keys, kinds


def snapshot(out: Path) -> dict[str, bytes]:
    return {name: (out / name).read_bytes() for name in (*OUTPUTS, "summary.json") if (out / name).exists()}


def dedup(*args: str) -> int:
    return main(["dedup", *args, "-q"])


def killed_committing(monkeypatch: pytest.MonkeyPatch, at_batch: int, *args: str) -> None:
    """A `dedup` run that dies as its `at_batch`-th batch commits (its outputs written, not committed)."""
    commit, calls = Detector.commit, []

    def crashing_commit(self: Detector, batch: object) -> None:
        calls.append(1)
        if len(calls) == at_batch:
            raise Killed  # as if killed here: not an error the CLI handles
        commit(self, batch)  # type: ignore[arg-type]

    monkeypatch.setattr(Detector, "commit", crashing_commit)
    with pytest.raises(Killed):
        dedup(*args)
    monkeypatch.setattr(Detector, "commit", commit)


def test_config_mismatch_refusal_keeps_earlier_outputs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = write_jsonl(tmp_path / "a.jsonl", crawl(40))
    out = tmp_path / "out"
    assert dedup(str(data), "--out", str(out)) == 0
    before = snapshot(out)
    assert before["unique.jsonl"]
    assert dedup(str(data), "--out", str(out), "--param", "minhash.num_perm=64") == 2
    assert "built with other parameters" in capsys.readouterr().err
    assert snapshot(out) == before


def test_store_held_by_another_process_keeps_outputs(tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "a.jsonl", crawl(40))
    out, state = tmp_path / "out", tmp_path / "state"
    assert dedup(str(data), "--out", str(out), "--state", str(state)) == 0
    before = snapshot(out)
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\nfrom streamdedup.store.signature_store import SignatureStore\n"
         "s = SignatureStore.open_existing(sys.argv[1])\nprint('ready', flush=True)\ntime.sleep(60)", str(state)],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        result = subprocess.run([*COMMAND, str(data), "--out", str(out), "--state", str(state), "-q"],
                                capture_output=True, text=True, timeout=120)
        fresh = dedup(str(data), "--out", str(out), "--state", str(state), "--fresh")  # a store in use stays
    finally:
        holder.kill()
        holder.wait()
    assert result.returncode != 0 and fresh == 2
    assert snapshot(out) == before and (state / "CURRENT").exists()
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr, result.stderr


def test_rerun_of_a_finished_job_changes_nothing(tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "a.jsonl", crawl(60))
    out = tmp_path / "out"
    assert dedup(str(data), "--out", str(out)) == 0
    before = snapshot(out)
    assert dedup(str(data), "--out", str(out)) == 0
    after = snapshot(out)
    assert {k: v for k, v in after.items() if k != "summary.json"} == \
        {k: v for k, v in before.items() if k != "summary.json"}
    assert json.loads(after["summary.json"])["records"] == 60


def test_new_inputs_on_the_same_out_are_appended(tmp_path: Path) -> None:
    first, second = crawl(60, prefix="a"), crawl(30, seed=2, prefix="b")
    out = tmp_path / "out"
    assert dedup(str(write_jsonl(tmp_path / "a.jsonl", first)), "--out", str(out)) == 0
    assert dedup(str(write_jsonl(tmp_path / "b.jsonl", second)), "--out", str(out), "--append") == 0
    keys, kinds = output_keys(out)
    assert keys == input_keys(first + second)
    assert kinds["duplicate_id"] == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["records"] == 90 and summary["unique"] + summary["duplicates"] + summary["rejected"] == 90


def test_uncommitted_batch_is_redone_and_other_inputs_are_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A crash between a batch's outputs and its store write (the third commit fails): the rerun
    drops those outputs and redoes the batch; other inputs cannot take over the unfinished job."""
    records = crawl(100)
    data = write_jsonl(tmp_path / "a.jsonl", records)
    out = tmp_path / "out"
    killed_committing(monkeypatch, 3, str(data), "--out", str(out), "--batch-size", "16")
    lines = sum(len((out / n).read_bytes().splitlines()) for n in OUTPUTS)
    assert lines == 48  # three batches written, two committed
    before = snapshot(out)
    other = write_jsonl(tmp_path / "b.jsonl", crawl(10, seed=3, prefix="x"))
    assert dedup(str(other), "--out", str(out)) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "unfinished" in err, err
    assert snapshot(out) == before
    assert dedup(str(data), "--out", str(out), "--batch-size", "7") == 0
    keys, kinds = output_keys(out)
    assert keys == input_keys(records) and kinds["duplicate_id"] == 0
    assert json.loads((out / "summary.json").read_text())["records"] == 100
    # the light outputs too: a verdict line per input (none of the batch cut off twice), and the
    # stories of a run that never crashed (issue 58)
    verdicts = [orjson.loads(line) for line in (out / "verdicts.jsonl").read_bytes().splitlines()]
    assert len(verdicts) == 100 and Counter(v["id"] for v in verdicts if v["id"]) == Counter(
        {key: n for key, n in input_keys(records).items() if not key.startswith("{not json")})
    assert all("content" not in v for v in verdicts)
    assert dedup(str(data), "--out", str(tmp_path / "whole"), "--state", str(tmp_path / "whole-state")) == 0
    stories = (out / "clusters.jsonl").read_bytes()
    assert stories == (tmp_path / "whole" / "clusters.jsonl").read_bytes() and stories.count(b"\n") == \
        json.loads((out / "summary.json").read_text())["clusters"]


def test_stdin_job_resumes_when_the_same_stream_is_piped_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    records = crawl(80)
    payload = b"\n".join(records) + b"\n"
    out = tmp_path / "out"

    def stdin(data: bytes) -> None:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BufferedReader(io.BytesIO(data))))

    stdin(payload)
    killed_committing(monkeypatch, 2, "-", "--out", str(out), "--batch-size", "16")
    stdin(b"\n".join(crawl(80, seed=9)) + b"\n")  # another stream: refused, nothing touched
    before = snapshot(out)
    assert dedup("-", "--out", str(out)) == 2
    assert "stdin" in capsys.readouterr().err
    assert snapshot(out) == before
    stdin(payload)
    assert dedup("-", "--out", str(out)) == 0
    keys, kinds = output_keys(out)
    assert keys == input_keys(records) and kinds["duplicate_id"] == 0


def test_fresh_refuses_a_directory_that_is_not_a_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = write_jsonl(tmp_path / "a.jsonl", crawl(10))
    notes = tmp_path / "mine"
    notes.mkdir()
    (notes / "notes.txt").write_text("keep me")
    assert dedup(str(data), "--out", str(tmp_path / "out"), "--state", str(notes), "--fresh") == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "not a streamdedup store" in err, err
    assert (notes / "notes.txt").read_text() == "keep me"


def test_fresh_starts_over_from_an_empty_store_and_outputs(tmp_path: Path) -> None:
    records = crawl(40)
    data = write_jsonl(tmp_path / "a.jsonl", records)
    out = tmp_path / "out"
    assert dedup(str(data), "--out", str(out)) == 0
    (out / "mine.txt").write_text("not ours")
    assert dedup(str(data), "--out", str(out), "--fresh") == 0
    keys, kinds = output_keys(out)
    assert keys == input_keys(records) and kinds["duplicate_id"] == 0
    assert (out / "mine.txt").read_text() == "not ours"


def _wait_for_lines(out: Path, lines: int, process: subprocess.Popen[bytes], timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        written = sum(os.path.getsize(p) for n in OUTPUTS if (p := out / n).exists())
        if written and sum(len((out / n).read_bytes().splitlines()) for n in OUTPUTS if (out / n).exists()) >= lines:
            return
        time.sleep(0.01)


def test_sigkill_mid_run_then_rerun_gives_every_record_once(tmp_path: Path) -> None:
    records = crawl(3000)
    data = write_jsonl(tmp_path / "crawl.jsonl", records)
    out = tmp_path / "out"
    command = [*COMMAND, str(data), "--out", str(out), "-q", "--batch-size", "8"]
    rng = random.Random(5)
    killed = 0
    for target in sorted(rng.sample(range(200, 2000), 2)):
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _wait_for_lines(out, target, process)
        process.send_signal(signal.SIGKILL)
        killed += process.wait() == -signal.SIGKILL
    assert killed == 2, "both kills must land mid-run"
    final = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert final.returncode == 0, final.stderr
    keys, kinds = output_keys(out)
    expected = input_keys(records)
    assert not expected - keys, "lost"
    assert not keys - expected, "doubled or foreign"
    assert kinds["duplicate_id"] == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["records"] == len(records)
    assert summary["unique"] + summary["duplicates"] + summary["rejected"] == len(records)
    clusters = {orjson.loads(line)["dedup"]["cluster_id"] for name in OUTPUTS[:2]
                for line in (out / name).read_bytes().splitlines()}
    assert summary["clusters"] == len(clusters)


def _output_lines(out: Path) -> int:
    return sum(len((out / n).read_bytes().splitlines()) for n in OUTPUTS if (out / n).exists())


def test_a_slow_endless_stdin_is_flushed_on_time_and_stopped_cleanly_by_sigterm(tmp_path: Path) -> None:
    """`dedup -` on a pipe that sends a page now and then: each batch comes out within about
    --batch-wait of its first page (not once 256 came), and SIGTERM ends the run after the batch
    in hand: every page read is in the outputs and the summary, one line says it stopped, exit 0;
    the next stream goes on with --append."""
    records = crawl(12)
    out = tmp_path / "out"
    command = [*COMMAND, "-", "--out", str(out), "--batch-wait", "0.3"]
    process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdin is not None
    try:
        for record in records[:5]:
            process.stdin.write(record + b"\n")
            process.stdin.flush()
            time.sleep(0.05)
        deadline = time.monotonic() + 60  # the command's start-up, then --batch-wait
        while _output_lines(out) < 5 and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.05)
        assert _output_lines(out) == 5, "the first pages are out while the stream is still open"
        for record in records[5:]:
            process.stdin.write(record + b"\n")
            process.stdin.flush()
        time.sleep(0.1)  # read (the pipe is open: the batch waits for more or for its time)
        process.send_signal(signal.SIGTERM)
        stdout, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, stderr
    assert b"stopped by SIGTERM" in stderr and b"Traceback" not in stderr
    keys, _ = output_keys(out)
    assert keys == input_keys(records)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["records"] == len(records) and summary["stopped_by"] == "SIGTERM"
    more = crawl(6, seed=3, prefix="q")
    again = subprocess.run([*COMMAND, "-", "--out", str(out), "--append", "-q"], input=b"\n".join(more) + b"\n",
                           capture_output=True, timeout=120)
    assert again.returncode == 0, again.stderr
    assert output_keys(out)[0] == input_keys(records) + input_keys(more)


@pytest.mark.parametrize("written_by", ["this version", "an earlier version"])
def test_a_moved_store_and_outputs_resume_their_job(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str], written_by: str) -> None:
    """A killed run's store moved off its disk, then its --out elsewhere: the rerun with the new paths
    finishes the job (every record once, none a duplicate_id). Outputs of an earlier version (no
    job file: their ledger is keyed by --out's path relative to --state) are found by their
    committed lengths. Outputs beside a store that never saw them are refused, and the fix named
    (the store they were written with) works."""
    import shutil

    records = crawl(120)
    data = write_jsonl(tmp_path / "a.jsonl", records)
    out, state = tmp_path / "disk1" / "out", tmp_path / "disk1" / "state"
    killed_committing(monkeypatch, 2, str(data), "--out", str(out), "--state", str(state), "--batch-size", "16")
    if written_by == "an earlier version":
        (out / ".streamdedup-job").unlink()
    moved_state = tmp_path / "disk2" / "state"
    moved_state.parent.mkdir()
    shutil.move(state, moved_state)
    other_state = tmp_path / "other-state"
    before = snapshot(out)
    assert dedup(str(data), "--out", str(out), "--state", str(other_state)) == 2
    err = capsys.readouterr().err
    assert "give --state the store that run used" in err and snapshot(out) == before
    shutil.move(out, tmp_path / "disk3")  # and the outputs elsewhere: --out's path relative to --state changed
    out = tmp_path / "disk3"
    assert dedup(str(data), "--out", str(out), "--state", str(moved_state), "--batch-size", "16") == 0
    keys, kinds = output_keys(out)
    assert keys == input_keys(records) and kinds["duplicate_id"] == 0
    assert json.loads((out / "summary.json").read_text())["records"] == len(records)
