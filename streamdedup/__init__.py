"""streamdedup: near-duplicate detection for web crawls, batch or streaming.

    from streamdedup import Deduplicator, DetectorConfig, Verdict, Rejection, AddInterrupted, dedup_files, FileRun

`Deduplicator` judges pages or plain texts in-process, `dedup_files` deduplicates files into a
folder (the crash-safe file mode of `streamdedup dedup`); docs/api.md shows both. The names are
imported on first use: `import streamdedup` alone stays light (no numpy, no RocksDB).

The package mirrors the data flow of one page:
record -> clean -> tokens -> fingerprints -> store -> verdict -> outputs.
`streamdedup.detector.Detector` is the thin runtime that strings them together.
"""

from __future__ import annotations

from importlib import import_module

TYPE_CHECKING = False  # as typing.TYPE_CHECKING, without importing typing (~2 ms of every start)

__version__ = "0.31.0"

# public name -> the module that defines it, imported when the name is first asked for
_EXPORTS = {
    "AddInterrupted": "streamdedup.api.interrupts",
    "Deduplicator": "streamdedup.api.deduplicator",
    "dedup_files": "streamdedup.api.file_mode",
    "FileRun": "streamdedup.api.file_mode",
    "DetectorConfig": "streamdedup.config",
    "Verdict": "streamdedup.verdict.contract",
    "Rejection": "streamdedup.verdict.contract",
}
__all__ = ["AddInterrupted", "Deduplicator", "DetectorConfig", "FileRun", "Rejection", "Verdict", "__version__",
           "dedup_files"]

if TYPE_CHECKING:
    from streamdedup.api.deduplicator import Deduplicator
    from streamdedup.api.file_mode import FileRun, dedup_files
    from streamdedup.api.interrupts import AddInterrupted
    from streamdedup.config import DetectorConfig
    from streamdedup.verdict.contract import Rejection, Verdict


def __getattr__(name: str) -> object:
    """A public name's object, its module imported on first use (PEP 562)."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'streamdedup' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
