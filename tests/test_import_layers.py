"""`make lint`'s import contracts (pyproject.toml, [tool.importlinter]): the package keeps them, and
an import cycle hidden in a function body breaks them."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _lint_imports(where: Path) -> subprocess.CompletedProcess[str]:
    """lint-imports on the package under `where` (its pyproject.toml's contracts), without a cache."""
    code = "import sys; from importlinter.cli import lint_imports; sys.exit(lint_imports(no_cache=True, no_logo=True))"
    return subprocess.run([sys.executable, "-c", code], cwd=where, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(where)})


def test_the_package_keeps_its_layers_and_a_hidden_cycle_breaks_them(tmp_path):
    kept = _lint_imports(ROOT)
    assert kept.returncode == 0, kept.stdout + kept.stderr
    assert "2 kept, 0 broken" in kept.stdout
    shutil.copytree(ROOT / "streamdedup", tmp_path / "streamdedup", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    rebuild = tmp_path / "streamdedup" / "store" / "rebuild.py"
    rebuild.write_text(rebuild.read_text() + "\n\ndef _store() -> object:\n"
                       "    from streamdedup.store.signature_store import SignatureStore\n\n    return SignatureStore\n")
    broken = _lint_imports(tmp_path)
    assert broken.returncode != 0
    assert "No cycles are allowed in streamdedup.store" in broken.stdout, broken.stdout
