"""An in-memory source and sink for tests and notebooks: a pipeline test in a few lines.

    outcomes = run_records([{"url": ..., "content": ...}, b"not json"], tmp_path)
    assert [o.status for o in outcomes] == ["unique", "rejected"]
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

import orjson

from streamdedup.config import DetectorConfig
from streamdedup.detector import Detector, Outcome
from streamdedup.record.readers import RawRecord


def raw_records(records: Iterable[Any]) -> list[RawRecord]:
    """dicts become JSON lines, bytes are taken as they are (to test bad input)."""
    return [RawRecord(origin=f"memory:{i}", data=r if isinstance(r, bytes) else orjson.dumps(r))
            for i, r in enumerate(records, start=1)]


def run_records(records: Iterable[Any], state_dir: str | Path, config: DetectorConfig | None = None,
                **overrides: Any) -> list[Outcome]:
    config = (config or DetectorConfig()).with_overrides(**overrides)
    with Detector(config, state_dir) as detector:
        return list(detector.run(raw_records(records)))
