"""What the bench scripts that hook `streamdedup eval` in their own process share: their command line, the run."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from streamdedup.cli import main as cli_main


def eval_arguments(description: str, json_help: str) -> argparse.ArgumentParser:
    """The command line: a labelled set, eval's --out folder, and --json, a file for the rows (`json_help`)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--out", type=Path, required=True, help="eval's --out folder")
    parser.add_argument("--json", type=Path, help=json_help)
    return parser


def eval_errors(dataset: Path, out: Path) -> dict[str, Any]:
    """Run `streamdedup eval` (defaults, `--methods minhash`) in this process on `dataset`; its errors.json."""
    cli_main(["eval", str(dataset), "--out", str(out), "--methods", "minhash", "-q"])
    errors: dict[str, Any] = json.loads((out / "errors.json").read_text())
    return errors
