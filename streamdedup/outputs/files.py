"""Batch-mode sink: one folder of output files.

Batch-mode sink: unique.jsonl, duplicates.jsonl, rejected.jsonl, verdicts.jsonl, clusters.jsonl
and summary.json in one folder.

Every input record lands in exactly one of the three files, with all its fields plus `dedup`, and
its verdict without the page body in verdicts.jsonl (`streamdedup.clusters.verdict_line`).
clusters.jsonl is the current stories (`streamdedup.clusters.Stories`), replaced whole with the
summary; a rerun folds them again from the committed verdicts.
The sink appends after the bytes a job has committed (`outputs/job.py` keeps those lengths in the
store) and makes each batch durable (`sync`) before the store records it, so a crash can leave
only outputs the store never saw: the next run cuts them off.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import orjson

from streamdedup.clusters import (
    CLUSTERS_FILE,
    VERDICTS_FILE,
    Stories,
    complete_lines,
    fold_verdicts,
    page_fields,
    verdict_line,
    write_stories,
)
from streamdedup.detector import Outcome
from streamdedup.outputs.record_line import record_json

FILES = {"unique": "unique.jsonl", "duplicate": "duplicates.jsonl", "rejected": "rejected.jsonl",
         "verdicts": VERDICTS_FILE}  # the outputs appended to, by their key in the job ledger's lengths
SUMMARY = "summary.json"


class OutputsChanged(ValueError):
    """An output file is shorter than the store says was written: not ours to repair."""


@dataclass
class Tally:
    """The counts summary.json reports, carried from batch to batch (and run to run) in the job ledger."""

    counts: Counter[str] = field(default_factory=Counter)
    rejected_by_reason: Counter[str] = field(default_factory=Counter)
    duplicates_by_method: Counter[str] = field(default_factory=Counter)
    merges: int = 0

    def add(self, outcome: Outcome) -> None:
        """Count one outcome: its status, a rejection's reason, a duplicate's method, the clusters it merged."""
        status, dedup = outcome.status, outcome.dedup
        self.counts[status] += 1
        if status == "rejected":
            self.rejected_by_reason[dedup["reason"]] += 1
        else:
            self.merges += len(dedup.get("merged_clusters", ()))
            if status == "duplicate":
                self.duplicates_by_method[dedup["method"]] += 1

    def to_json(self) -> dict[str, Any]:
        """The counts as JSON values, for the job ledger."""
        return {"counts": dict(self.counts), "rejected_by_reason": dict(self.rejected_by_reason),
                "duplicates_by_method": dict(self.duplicates_by_method), "merges": self.merges}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Tally:
        """The counts `to_json` wrote."""
        return cls(Counter(data["counts"]), Counter(data["rejected_by_reason"]),
                   Counter(data["duplicates_by_method"]), int(data["merges"]))


class FileSink:
    """File mode's outputs in one --out folder: a JSON Lines file per status, verdicts, clusters and the summary."""

    def __init__(self, out_dir: str | Path, lengths: Mapping[str, int] | None = None,
                 tally: Tally | None = None) -> None:
        """Append after `lengths`, cutting off anything beyond them.

        Append after `lengths` (the committed bytes of each file; none: empty files), cutting
        off anything beyond them: outputs of a batch the store never recorded."""
        self.out_dir = Path(out_dir)
        self.out_dir.mkdir(parents=True, exist_ok=True)
        lengths = lengths or {}
        check_lengths(self.out_dir, lengths)
        self._files: dict[str, IO[bytes]] = {}
        for status, name in FILES.items():
            handle = self._files[status] = open(self.out_dir / name, "ab")
            handle.truncate(lengths.get(status, 0))
            handle.seek(lengths.get(status, 0))  # writes append; tell() must report the length
        sync_directory(self.out_dir)  # the files' names are durable before the store names lengths
        self._dirty: set[str] = set()
        self.tally = tally or Tally()
        self.stories = self._read_stories(lengths)
        self.written = 0
        self.started = time.perf_counter()

    def _read_stories(self, lengths: Mapping[str, int]) -> Stories:
        """The stories of the committed verdicts.

        Outputs of a version without verdicts.jsonl: from the three files, whose verdicts are
        written to verdicts.jsonl now (status by status)."""
        if "verdicts" in lengths or not any(lengths.values()):
            return fold_verdicts(complete_lines(self.out_dir / VERDICTS_FILE, lengths.get("verdicts", 0)))
        stories = Stories()
        for status in ("unique", "duplicate", "rejected"):
            for line in complete_lines(self.out_dir / FILES[status], lengths.get(status, 0)):
                output = orjson.loads(line)
                self._write_verdict(output, output["dedup"], stories)
        return stories

    def _write_verdict(self, record: Mapping[str, Any], dedup: Mapping[str, Any], stories: Stories) -> None:
        if dedup["status"] != "rejected":
            stories.add(dedup, *page_fields(record))
        line = verdict_line(record, dedup, duplicate_of_url=stories.url_of(dedup.get("duplicate_of")))
        self._files["verdicts"].write(orjson.dumps(line, option=orjson.OPT_APPEND_NEWLINE))
        self._dirty.add("verdicts")

    def write(self, outcome: Outcome) -> None:
        """Append one outcome to its status's file and its verdict line, and count it."""
        status = outcome.status
        self._files[status].write(output_line(outcome))
        self._dirty.add(status)
        self.tally.add(outcome)
        self._write_verdict(outcome.record, outcome.dedup, self.stories)
        self.written += 1

    def write_clusters(self) -> None:
        """Replace clusters.jsonl with the current stories (a crash leaves the old file or the new)."""
        write_stories(self.out_dir / CLUSTERS_FILE, self.stories)

    def sync(self) -> dict[str, int]:
        """Make what was written durable and return each file's length.

        Only then may the store record the batch (a power cut must not leave the store ahead of the
        files)."""
        for status in self._dirty:
            handle = self._files[status]
            handle.flush()
            os.fdatasync(handle.fileno())
        self._dirty.clear()
        return {status: handle.tell() for status, handle in self._files.items()}

    def summary(self, **extra: Any) -> dict[str, Any]:
        """The run's summary.json content: the counts, clusters, records written and their rate."""
        return summary(self.out_dir, self.tally, len(self.stories), self.written,
                       time.perf_counter() - self.started, **extra)

    def close(self) -> None:
        """Close the output files."""
        for handle in self._files.values():
            handle.close()


def output_line(outcome: Outcome) -> bytes:
    """The outcome's line in unique, duplicates or rejected.jsonl (`record_line.record_json`)."""
    return record_json(outcome.record, outcome.dedup, outcome.line, newline=True)


def summary(out_dir: Path, tally: Tally, clusters: int, written: int, elapsed: float,
            **extra: Any) -> dict[str, Any]:
    """summary.json: counts over everything in the three files; speed of this run."""
    counts = tally.counts
    return {
        "records": sum(counts.values()),
        "unique": counts["unique"],
        "duplicates": counts["duplicate"],
        "rejected": counts["rejected"],
        "rejected_by_reason": dict(tally.rejected_by_reason),
        "duplicates_by_method": dict(tally.duplicates_by_method),
        "clusters": clusters,  # the current stories: clusters merged since count once
        "cluster_merges": tally.merges,
        "records_this_run": written,
        "elapsed_s": round(elapsed, 3),
        "records_per_s": round(written / elapsed, 1) if elapsed > 0 else None,
        "files": {**{status: str(out_dir / name) for status, name in FILES.items()},
                  "clusters": str(out_dir / CLUSTERS_FILE)},
        **extra,
    }


def sync_directory(path: Path) -> None:
    """Fsync a directory, so the names of files created or replaced in it survive a crash."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_summary(out_dir: Path, data: Mapping[str, Any]) -> None:
    """Replace summary.json whole (a crash leaves the old one or the new one, never half)."""
    target = out_dir / SUMMARY
    temporary = target.with_name(f".{SUMMARY}.tmp")
    temporary.write_bytes(orjson.dumps(data, option=orjson.OPT_INDENT_2))
    os.replace(temporary, target)


def check_lengths(out_dir: Path, lengths: Mapping[str, int]) -> None:
    """Each file must hold at least its committed bytes; less means someone else changed it."""
    for status, length in lengths.items():
        path = out_dir / FILES[status]
        size = path.stat().st_size if path.exists() else 0
        if size < length:
            raise OutputsChanged(f"{path} has {size} bytes but {length} were written to it: the outputs "
                                 "were changed since; start over with --fresh (or use another --out)")


def existing_outputs(out_dir: Path) -> list[str]:
    """Output files in `out_dir` that hold something."""
    return [name for name in FILES.values() if (out_dir / name).exists() and (out_dir / name).stat().st_size]


def remove_outputs(out_dir: Path) -> None:
    """The files this sink owns (nothing else in the folder)."""
    # and the name of its job (outputs/job.py)
    for name in (*FILES.values(), CLUSTERS_FILE, SUMMARY, ".streamdedup-job"):
        (out_dir / name).unlink(missing_ok=True)
