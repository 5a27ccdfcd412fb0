"""Batch-mode sink: unique.jsonl, duplicates.jsonl, rejected.jsonl and summary.json in one folder.

Every input record lands in exactly one of the three files, with all its fields plus `dedup`.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import IO, Any

import orjson

from streamdedup.detector import Outcome

FILES = {"unique": "unique.jsonl", "duplicate": "duplicates.jsonl", "rejected": "rejected.jsonl"}


class FileSink:
    def __init__(self, out_dir: str | Path) -> None:
        self.out_dir = Path(out_dir)
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self._files: dict[str, IO[bytes]] = {
            status: open(self.out_dir / name, "wb") for status, name in FILES.items()}
        self.counts: Counter[str] = Counter()
        self.rejected_by_reason: Counter[str] = Counter()
        self.duplicates_by_method: Counter[str] = Counter()
        self.clusters: set[str] = set()
        self.merges = 0
        self.started = time.perf_counter()

    def write(self, outcome: Outcome) -> None:
        status = outcome.status
        self._files[status].write(orjson.dumps(outcome.output(), option=orjson.OPT_APPEND_NEWLINE))
        self.counts[status] += 1
        dedup = outcome.dedup
        if status == "rejected":
            self.rejected_by_reason[dedup["reason"]] += 1
        else:
            self.clusters.add(dedup["cluster_id"])
            self.merges += len(dedup.get("merged_clusters", ()))
            if status == "duplicate":
                self.duplicates_by_method[dedup["method"]] += 1

    def summary(self, **extra: Any) -> dict[str, Any]:
        elapsed = time.perf_counter() - self.started
        total = sum(self.counts.values())
        return {
            "records": total,
            "unique": self.counts["unique"],
            "duplicates": self.counts["duplicate"],
            "rejected": self.counts["rejected"],
            "rejected_by_reason": dict(self.rejected_by_reason),
            "duplicates_by_method": dict(self.duplicates_by_method),
            "clusters": len(self.clusters),
            "cluster_merges": self.merges,
            "elapsed_s": round(elapsed, 3),
            "records_per_s": round(total / elapsed, 1) if elapsed > 0 else None,
            "files": {status: str(self.out_dir / name) for status, name in FILES.items()},
            **extra,
        }

    def close(self, **extra: Any) -> dict[str, Any]:
        for handle in self._files.values():
            handle.close()
        summary = self.summary(**extra)
        (self.out_dir / "summary.json").write_bytes(orjson.dumps(summary, option=orjson.OPT_INDENT_2))
        return summary
