"""The Python API.

`Deduplicator` (pages or texts in a notebook or a service) and `dedup_files` (the crash-safe file
mode that `streamdedup dedup` runs). docs/api.md shows both."""

from streamdedup.api.deduplicator import Deduplicator
from streamdedup.api.file_mode import FileRun, dedup_files
from streamdedup.api.interrupts import AddInterrupted

__all__ = ["AddInterrupted", "Deduplicator", "FileRun", "dedup_files"]
