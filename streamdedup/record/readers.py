"""Read input files into raw records: JSON Lines (optionally gzip), WARC, or '-' for stdin.

Readers never validate: a bad line is still a record (with its original bytes), so that the
detector can reject it with a reason and nothing is dropped silently. What a reader cannot read
(a cut gzip stream, a broken WARC record, a line far over the content limit) becomes one record
that is already rejected (`RawRecord.rejection`), and reading goes on where it can.

Memory is bounded whatever the input: a line or WARC record is only kept up to `line_limit`
(derived from max_content_bytes); beyond it, it is read in chunks and dropped.
"""

from __future__ import annotations

import gzip
import io
import os
import re
import sys
import zlib
from collections.abc import Generator, Iterable, Iterator
from dataclasses import dataclass, field
from typing import IO, Any, cast

from streamdedup.record.page import FIELD_ALIASES
from streamdedup.record.rejection import Reason

WARC_MAGIC = b"WARC/"
# which WARC records a reader reads (a file job keeps the one it started with: `outputs.job.Job`):
# 1, responses only; 2, also resources of an http(s) URL (a page stored without its HTTP exchange)
# as pages, and revisits (a crawler's own deduplication, no payload) as `warc_revisit` rejections
WARC_RECORDS = 2
_HTTP_URL = re.compile(r"https?://", re.IGNORECASE)
GZIP_MAGIC = b"\x1f\x8b"
DEFAULT_MAX_CONTENT_BYTES = 10_000_000  # a record's content past this is refused (`CleaningConfig.max_content_bytes`)
# a file's read buffer: a line of a crawl is a whole page (30-200 KB), which io's 8 KiB default
# reads in a syscall and a copy per 8 KiB (web dev: 0.08 ms a page to read its lines, 0.05 with this)
READ_BUFFER = 1 << 20
CHUNK = 1 << 20  # bytes read at a time from a line or record that is not kept
HEAD_KEPT = 1024  # bytes of a refused line kept in its rejected record (to find it again)
WARC_HEADER_LIMIT = 64 << 10  # a WARC header block longer than this is no header
_WARC_TRAILER = b"\r\n\r\n"
_READ_ERRORS = (EOFError, OSError, zlib.error)  # gzip.BadGzipFile is an OSError


@dataclass(slots=True)
class RawRecord:
    """One input record before validation: either raw bytes (a JSON line) or fields (WARC)."""

    origin: str  # file:line or file@offset, for error messages
    data: bytes | None = None
    fields: dict[str, Any] | None = field(default=None)
    arrival_ms: int | None = None  # the Kafka message timestamp (None in file mode)
    # its place in its input, unique and the same when the input is read again ("job 2:#17",
    # "topic:3:1042@<message timestamp>"): the id of a page with neither an id nor a usable fetch time
    position: str | None = None
    # the same place as numbers that sort in the order records came (file mode: job, record; Kafka: message
    # timestamp, partition, offset): an undated page's verdict carries it as `arrival` (`clusters.Stories`)
    place: tuple[int, ...] | None = None
    rejection: tuple[Reason, str] | None = None  # a part of the input the reader could not read


def line_limit(max_content_bytes: int) -> int:
    """The longest line (or WARC record block) kept.

    A page's content may grow up to 4x when JSON-escaped (\\u escapes, base64), plus 1 MB for its
    other fields."""
    return 4 * max_content_bytes + (1 << 20)


def check_inputs(paths: Iterable[str]) -> None:
    """Raise, in one line naming the path and the fix, for an input that is no file of pages.

    FileNotFoundError for a missing path, a folder or a pipe; ValueError for a tar or zip archive.
    Checked before a command makes anything (a store, an output folder, a broker's topic)."""
    for path in paths:
        if path != "-" and not os.path.isfile(path):
            if os.path.exists(path) and not os.path.isdir(path):  # a pipe, a device: no file to resume in
                raise FileNotFoundError(f"input {path} is not a regular file (a pipe or a device): give it as stdin, "
                                        f"- < {path}")
            what = "is a folder" if os.path.isdir(path) else "does not exist"
            raise FileNotFoundError(f"input {path} {what}: give JSON Lines or WARC files (.gz ok), or - for stdin")
        archive = None if path == "-" else archive_kind(path)
        if archive:  # read as JSON Lines, each line an invalid_json rejection (271,206 for readability's pages)
            raise ValueError(f"input {path} is a {archive}: give JSON Lines or WARC files (.gz ok), or - for "
                             "stdin; unpack it and give the files it holds")


_TAR_BLOCK = 512  # a tar archive opens with a member's header block


def archive_kind(path: str) -> str | None:
    """'tar archive' or 'zip archive' if the file is one (a tar also gzipped), by its first bytes; else None."""
    try:
        with open(path, "rb") as raw:
            head = raw.read(_TAR_BLOCK)
            if head[:2] == GZIP_MAGIC:
                raw.seek(0)
                with gzip.GzipFile(fileobj=raw) as unpacked:
                    head = unpacked.read(_TAR_BLOCK)
    except _READ_ERRORS:  # unreadable here: the reader says what it could not read, record by record
        return None
    if _is_tar_header(head):
        return "tar archive"
    return "zip archive" if head[:4] == b"PK\x03\x04" else None


def _is_tar_header(block: bytes) -> bool:
    """A tar header: "ustar" at 257 (POSIX and GNU) and its checksum right (a text may hold "ustar" there)."""
    if len(block) < _TAR_BLOCK or block[257:262] != b"ustar":
        return False
    try:
        stored = int(block[148:156].strip(b"\0 ") or b"-1", 8)
    except ValueError:
        return False
    return stored == sum(block[:148]) + 8 * ord(" ") + sum(block[156:_TAR_BLOCK])  # the field counts as spaces


def read_inputs(paths: list[str], max_content_bytes: int = DEFAULT_MAX_CONTENT_BYTES,
                warc_records: int = WARC_RECORDS) -> Generator[RawRecord, None, None]:
    """The raw records of each input in turn (`read_input`: JSON Lines, WARC, gzip, stdin)."""
    for path in paths:
        yield from read_input(path, max_content_bytes, warc_records)


def read_input(path: str, max_content_bytes: int = DEFAULT_MAX_CONTENT_BYTES,
               warc_records: int = WARC_RECORDS) -> Iterator[RawRecord]:
    """Dispatch on content, not name: gzip and WARC are recognised by their magic bytes.

    `warc_records`: which WARC records are read (`WARC_RECORDS`: a file job resumes with its own)."""
    limit = line_limit(max_content_bytes)
    if path == "-":
        yield from _read_stream(_maybe_gunzip(sys.stdin.buffer), "<stdin>", limit, warc_records)
        return
    with open(path, "rb", buffering=READ_BUFFER) as raw:
        yield from _read_stream(_maybe_gunzip(raw), path, limit, warc_records)


def _maybe_gunzip(stream: IO[bytes]) -> io.BufferedReader | gzip.GzipFile:
    """The GzipFile itself, not a BufferedReader over it.

    That one asks it for whole buffers, and a cut stream would then lose the lines before the cut
    along with the cut one."""
    buffered = stream if isinstance(stream, io.BufferedReader) else io.BufferedReader(cast(io.RawIOBase, stream))
    if buffered.peek(2)[:2] == GZIP_MAGIC:
        return gzip.GzipFile(fileobj=buffered)
    return buffered


def _read_stream(stream: io.BufferedReader | gzip.GzipFile, name: str, limit: int,
                 warc_records: int = WARC_RECORDS) -> Iterator[RawRecord]:
    source = _Source(stream)
    try:
        is_warc = stream.peek(len(WARC_MAGIC))[: len(WARC_MAGIC)] == WARC_MAGIC
    except _READ_ERRORS as err:
        yield _unreadable(f"{name}@0", err, "nothing")
        return
    yield from _read_warc(source, name, limit, warc_records) if is_warc else _read_jsonl(source, name, limit)


def _unreadable(origin: str, err: BaseException, what_was_read: str) -> RawRecord:
    """The rest of a stream that cannot be read (a cut or corrupt gzip stream, a read error)."""
    reason = Reason.TRUNCATED_INPUT if isinstance(err, EOFError) else Reason.UNREADABLE_RECORD
    return RawRecord(origin=origin, rejection=(
        reason, f"the input cannot be read from here on ({type(err).__name__}: {err}); "
                f"{what_was_read} before this point were read"))


class _Source:
    """A byte stream with its offset and a push-back buffer.

    The buffer is there to look for the next WARC record inside bytes already read."""

    def __init__(self, stream: io.BufferedReader | gzip.GzipFile) -> None:
        self.stream = stream
        self.pos = 0
        self._back = b""

    def read(self, size: int) -> bytes:
        if self._back:
            data, self._back = self._back[:size], self._back[size:]
            if len(data) < size:
                data += self.stream.read(size - len(data))
        else:
            data = self.stream.read(size)
        self.pos += len(data)
        return data

    def readline(self, size: int) -> bytes:
        """At most `size` bytes, up to and including a newline."""
        if self._back:
            end = self._back.find(b"\n", 0, size)
            if end >= 0 or len(self._back) >= size:
                cut = end + 1 if end >= 0 else size
                line, self._back = self._back[:cut], self._back[cut:]
            else:
                line, self._back = self._back + self.stream.readline(size - len(self._back)), b""
        else:
            line = self.stream.readline(size)
        self.pos += len(line)
        return line

    def unread(self, data: bytes) -> None:
        self._back = data + self._back
        self.pos -= len(data)

    def line(self, limit: int) -> tuple[bytes | None, bytes, int]:
        """The next line (newline included) if it has at most `limit` bytes besides its newline.

        Else None, its first bytes and its size: it is read in chunks, none kept past the limit."""
        parts: list[bytes] | None = []
        head, size = b"", 0
        while True:
            piece = self.readline(CHUNK)
            size += len(piece)
            if parts is not None:
                parts.append(piece)
                if size - piece.endswith(b"\n") > limit:
                    head, parts = parts[0][:HEAD_KEPT], None
            if not piece or piece.endswith(b"\n"):
                break
        if parts is None:
            return None, head, size
        line = b"".join(parts)
        return line, line, size

    def skip(self, size: int) -> int:
        """Read and drop `size` bytes; returns how many there were."""
        skipped = 0
        while skipped < size:
            chunk = self.read(min(CHUNK, size - skipped))
            if not chunk:
                break
            skipped += len(chunk)
        return skipped


def _read_jsonl(source: _Source, name: str, limit: int) -> Iterator[RawRecord]:
    number = 0
    try:
        while True:
            line, head, size = source.line(limit)
            number += 1
            if line is None:
                yield RawRecord(origin=f"{name}:{number}", data=head, rejection=(
                    Reason.TOO_LARGE, f"the line is {size} bytes; lines over {limit} bytes (4 x max_content_bytes "
                                      "+ 1 MB) are not read (its first bytes are in raw)"))
            elif not line:
                return
            elif stripped := line.strip():
                yield RawRecord(origin=f"{name}:{number}", data=stripped)
    except _READ_ERRORS as err:
        yield _unreadable(f"{name}:{number + 1}", err, f"{number} line(s)")


def _read_warc(source: _Source, name: str, limit: int, warc_records: int = WARC_RECORDS) -> Iterator[RawRecord]:
    """Response and resource records as pages, revisit records as rejections; the others carry no page.

    As `warc_records` 2 reads them (`WARC_RECORDS`; 1: responses only). Requests, metadata,
    warcinfo and conversion records are not read, nor resources of another scheme than http(s)
    (a browser crawler's screenshots and extracted text, wget's log). A response whose HTTP
    status is not 2xx is read as an `http_status` rejection (its url, id, date and status). A
    revisit record (the crawler's own deduplication: no payload, the capture it repeats named) is
    a `warc_revisit` rejection naming that capture, so it too has its output. Records are framed
    here (bounded, and a broken one is skipped up to the next record); each is then parsed by
    fastwarc."""
    start, records = 0, 0
    try:
        while True:
            start = source.pos
            line = source.readline(WARC_HEADER_LIMIT)
            if not line:
                return
            if not line.strip():
                continue
            records += 1
            yield from _warc_record(source, f"{name}@{start}", line, limit, warc_records)
    except _READ_ERRORS as err:
        yield _unreadable(f"{name}@{start}", err, f"{records - 1} WARC record(s)")


def _warc_record(source: _Source, origin: str, first_line: bytes, limit: int,
                 warc_records: int = WARC_RECORDS) -> Iterator[RawRecord]:
    """Frame one record from its first line; yield it if it is a page, a revisit (or a rejection)."""
    start = source.pos - len(first_line)
    header = _warc_header(source, first_line) if first_line.startswith(WARC_MAGIC) else None
    if header == b"":
        yield RawRecord(origin=origin, rejection=(Reason.TRUNCATED_INPUT, "the input ends inside a WARC header"))
        return
    names = _header_fields(header) if header is not None else {}
    length = names.get("content-length", "")
    if header is None or not length.isdigit():
        source.unread(b"" if header is None else header[len(first_line):])
        _resync(source)
        problem = "no WARC header" if header is None else "a WARC header without a valid Content-Length"
        yield RawRecord(origin=origin, fields=_identity(names), rejection=(
            Reason.UNREADABLE_RECORD, f"bytes {start}-{source.pos} of the input are not a WARC record ({problem}); "
                                      "reading went on at the next record"))
        return
    size = int(length)
    kind = names.get("warc-type", "").lower()
    if warc_records < 2 and kind != "response":
        kind = ""  # read as before resources and revisits were
    elif kind == "resource" and not _HTTP_URL.match(names.get("warc-target-uri", "").strip("<> ")):  # WARC/1.0: <uri>
        kind = ""  # a screenshot's, an extracted text's, a crawler log's: no page of a site
    is_page = kind in ("response", "resource")
    if size > limit:
        read = source.skip(size)
        trailer_ok = read == size and source.read(len(_WARC_TRAILER)) in (_WARC_TRAILER, b"")
        if is_page or kind == "revisit" or not trailer_ok:
            yield RawRecord(origin=origin, fields=_identity(names), rejection=(
                Reason.TOO_LARGE, f"the WARC record's block is {size} bytes; blocks over {limit} bytes "
                                  "(4 x max_content_bytes + 1 MB) are not read"))
        if not trailer_ok:
            _resync(source)
        return
    block = source.read(size)
    if len(block) < size:
        yield RawRecord(origin=origin, fields=_identity(names), rejection=(
            Reason.TRUNCATED_INPUT, f"the input ends inside this WARC record ({len(block)} of its {size} bytes)"))
        return
    trailer = source.read(len(_WARC_TRAILER))
    if trailer not in (_WARC_TRAILER, b""):  # the block is not the length its header says
        source.unread(block + trailer)
        _resync(source)
        yield RawRecord(origin=origin, fields=_identity(names), rejection=(
            Reason.UNREADABLE_RECORD, f"the WARC record at bytes {start}-{source.pos} does not end where its "
                                      f"Content-Length ({size}) says; reading went on at the next record"))
        return
    if is_page:
        try:
            page_of = _response if kind == "response" else _resource
            yield page_of(origin, header + block + _WARC_TRAILER)
        except (OSError, ValueError, StopIteration) as err:
            yield RawRecord(origin=origin, fields=_identity(names), rejection=(
                Reason.UNREADABLE_RECORD, f"fastwarc cannot parse this WARC record: {type(err).__name__}: {err}"))
    elif kind == "revisit":
        yield _revisit(origin, names)


def _revisit(origin: str, names: dict[str, str]) -> RawRecord:
    """A revisit record as its rejection: the capture it repeats, by its WARC headers, is its page."""
    refers = {"refers_to": names.get("warc-refers-to"), "refers_to_url": names.get("warc-refers-to-target-uri"),
              "refers_to_date": names.get("warc-refers-to-date")}
    refers = {k: v for k, v in refers.items() if v}
    earlier = refers.get("refers_to_url") or refers.get("refers_to") or "an earlier capture"
    when = f" of {refers['refers_to_date']}" if "refers_to_date" in refers else ""
    profile = names.get("warc-profile", "").rstrip("/").rsplit("/", 1)[-1]
    return RawRecord(origin=origin, fields={**_identity(names), **refers}, rejection=(
        Reason.WARC_REVISIT, f"a WARC revisit record ({profile or 'no profile'}): the crawler found this capture "
                             f"the same as {earlier}{when} and kept no payload to judge"))


def _warc_header(source: _Source, first_line: bytes) -> bytes | None:
    """The record's header block (first line to the empty line), or None if it is malformed.

    B"" if the input ends inside it."""
    lines = [first_line]
    total = len(first_line)
    while total <= WARC_HEADER_LIMIT:
        line = source.readline(WARC_HEADER_LIMIT)
        if not line:
            return b""
        lines.append(line)
        total += len(line)
        if not line.strip():
            return b"".join(lines)
    source.unread(b"".join(lines[1:]))
    return None


def _header_fields(header: bytes) -> dict[str, str]:
    names: dict[str, str] = {}
    for line in header.decode("utf-8", "replace").splitlines()[1:]:
        name, colon, value = line.partition(":")
        if colon:
            names.setdefault(name.strip().lower(), value.strip())
    return names


def _identity(names: dict[str, str]) -> dict[str, Any]:
    """What a rejected WARC record is known by (its url, date and id), if its header said."""
    known = {"url": names.get("warc-target-uri"), "fetched_at": names.get("warc-date"),
             "id": names.get("warc-record-id"), "warc_type": names.get("warc-type")}
    return {k: v for k, v in known.items() if v}


def _resync(source: _Source) -> None:
    """Skip to the next line that starts a WARC record (left unread), or to the end."""
    at_line_start = True
    while True:
        line = source.readline(CHUNK)
        if not line:
            return
        if at_line_start and line.startswith(b"WARC/1."):
            source.unread(line)
            return
        at_line_start = line.endswith(b"\n")


def _resource(origin: str, record: bytes) -> RawRecord:
    """A resource record's page: its block, of the record's own Content-Type (no HTTP exchange)."""
    from fastwarc.warc import ArchiveIterator

    parsed = next(iter(ArchiveIterator(io.BytesIO(record), parse_http=False)))
    headers = parsed.headers
    fields: dict[str, Any] = {"url": (headers.get("WARC-Target-URI") or "").strip("<> "),
                              "fetched_at": headers.get("WARC-Date"),
                              "id": headers.get("WARC-Record-ID"), "content": parsed.reader.read(),
                              "warc_type": "resource"}
    if content_type := headers.get("Content-Type"):
        fields["content_type"] = content_type
    return RawRecord(origin=origin, fields=fields)


def _response(origin: str, record: bytes) -> RawRecord:
    from fastwarc.warc import ArchiveIterator

    parsed = next(iter(ArchiveIterator(io.BytesIO(record), parse_http=True)))
    headers = parsed.headers
    http = parsed.http_headers
    fields: dict[str, Any] = {
        "url": headers.get("WARC-Target-URI"),
        "fetched_at": headers.get("WARC-Date"),
        "id": headers.get("WARC-Record-ID"),
        "content": parsed.reader.read(),
    }
    content_type = (http.get("Content-Type") if http else None) or headers.get("WARC-Identified-Payload-Type")
    if content_type:
        fields["content_type"] = content_type
    language = http.get("Content-Language") if http else None
    if language:
        fields["lang"] = language
    status = http.status_code if http else None
    if status and not 200 <= status < 300:  # an error page or a redirect: its body is no article
        del fields["content"]
        fields["http_status"] = status
        return RawRecord(origin=origin, fields=fields, rejection=(
            Reason.HTTP_STATUS, f"{status} {http.reason_phrase or ''}".rstrip()
                                + " (only 2xx responses are judged)"))
    return RawRecord(origin=origin, fields=fields)


__all__ = ["RawRecord", "read_input", "read_inputs", "line_limit", "FIELD_ALIASES"]
