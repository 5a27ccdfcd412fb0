"""Read input files into raw records: JSON Lines (optionally gzip), WARC, or '-' for stdin.

Readers never validate: a bad line is still a record (with its original bytes), so that the
detector can reject it with a reason and nothing is dropped silently.
"""

from __future__ import annotations

import gzip
import io
import sys
from dataclasses import dataclass, field
from typing import IO, Any, Iterator

from streamdedup.record.page import FIELD_ALIASES

WARC_MAGIC = b"WARC/"
GZIP_MAGIC = b"\x1f\x8b"


@dataclass(slots=True)
class RawRecord:
    """One input record before validation: either raw bytes (a JSON line) or fields (WARC)."""

    origin: str  # file:line or file@offset, for error messages
    data: bytes | None = None
    fields: dict[str, Any] | None = field(default=None)
    arrival_ms: int | None = None  # the Kafka message timestamp (None in file mode)


def read_inputs(paths: list[str]) -> Iterator[RawRecord]:
    for path in paths:
        yield from read_input(path)


def read_input(path: str) -> Iterator[RawRecord]:
    """Dispatch on content, not name: gzip and WARC are recognised by their magic bytes."""
    if path == "-":
        yield from _read_stream(_maybe_gunzip(sys.stdin.buffer), "<stdin>")
        return
    with open(path, "rb") as raw:
        yield from _read_stream(_maybe_gunzip(raw), path)


def _maybe_gunzip(stream: IO[bytes]) -> io.BufferedReader:
    buffered = stream if isinstance(stream, io.BufferedReader) else io.BufferedReader(stream)  # type: ignore[arg-type]
    if buffered.peek(2)[:2] == GZIP_MAGIC:
        return io.BufferedReader(gzip.GzipFile(fileobj=buffered))  # type: ignore[arg-type]
    return buffered


def _read_stream(stream: io.BufferedReader, name: str) -> Iterator[RawRecord]:
    if stream.peek(len(WARC_MAGIC))[: len(WARC_MAGIC)] == WARC_MAGIC:
        yield from _read_warc(stream, name)
    else:
        yield from _read_jsonl(stream, name)


def _read_jsonl(stream: IO[bytes], name: str) -> Iterator[RawRecord]:
    for number, line in enumerate(stream, start=1):
        stripped = line.strip()
        if stripped:
            yield RawRecord(origin=f"{name}:{number}", data=stripped)


def _read_warc(stream: IO[bytes], name: str) -> Iterator[RawRecord]:
    """Response records only (requests, metadata and warcinfo carry no page)."""
    from fastwarc.warc import ArchiveIterator, WarcRecordType

    for record in ArchiveIterator(stream, record_types=WarcRecordType.response, parse_http=True):
        headers = record.headers
        http = record.http_headers
        fields: dict[str, Any] = {
            "url": headers.get("WARC-Target-URI"),
            "fetched_at": headers.get("WARC-Date"),
            "id": headers.get("WARC-Record-ID"),
            "content": record.reader.read(),
        }
        content_type = (http.get("Content-Type") if http else None) or headers.get(
            "WARC-Identified-Payload-Type")
        if content_type:
            fields["content_type"] = content_type
        language = http.get("Content-Language") if http else None
        if language:
            fields["lang"] = language
        yield RawRecord(origin=f"{name}@{record.stream_pos}", fields=fields)


__all__ = ["RawRecord", "read_input", "read_inputs", "FIELD_ALIASES"]
