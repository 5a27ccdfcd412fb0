"""The JSON report a benchmark prints and, when asked with `--out`, also writes to a file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def print_report(report: Any, out: Path | None, indent: int = 2) -> None:
    """Print `report` as indented JSON and write the same text, with a final newline, to `out` if given."""
    text = json.dumps(report, indent=indent)
    print(text)
    if out:
        out.write_text(text + "\n")
