import gzip
import io
import os

import pytest
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from streamdedup.record.readers import check_inputs, read_input


def test_jsonl_and_gzip_and_bad_lines_are_all_records(tmp_path):
    lines = b'{"url": "a", "content": "x"}\nnot json\n\n{"url": "b", "content": "y"}\n'
    plain = tmp_path / "in.jsonl"
    plain.write_bytes(lines)
    packed = tmp_path / "in.jsonl.gz"
    packed.write_bytes(gzip.compress(lines))
    for path in (plain, packed):
        records = list(read_input(str(path)))
        assert [r.data for r in records] == [b'{"url": "a", "content": "x"}', b"not json",
                                             b'{"url": "b", "content": "y"}']
        assert records[1].origin.endswith(":2")


def _warc(gzip_records: bool) -> bytes:
    buffer = io.BytesIO()
    writer = WARCWriter(buffer, gzip=gzip_records)
    writer.write_record(writer.create_warcinfo_record("x.warc", {"software": "test"}))
    for i in range(2):
        http = StatusAndHeaders("200 OK", [("Content-Type", "text/html; charset=windows-1251")],
                                protocol="HTTP/1.1")
        body = f"<html><body><p>Привет {i}</p></body></html>".encode("cp1251")
        writer.write_record(writer.create_warc_record(f"https://ru.example/{i}", "response",
                                                      payload=io.BytesIO(body), http_headers=http))
    return buffer.getvalue()


def test_warc_response_records(tmp_path):
    for gz in (False, True):
        path = tmp_path / f"crawl{gz}.warc"
        path.write_bytes(_warc(gz))
        records = list(read_input(str(path)))
        assert [r.fields["url"] for r in records] == ["https://ru.example/0", "https://ru.example/1"]
        assert records[0].fields["content_type"].startswith("text/html; charset=windows-1251")
        assert isinstance(records[0].fields["content"], bytes)
        assert records[0].fields["fetched_at"]


# -- what a reader cannot read becomes a rejected record; the rest is read ------------------------

def _responses(n: int, gzip_records: bool = False) -> tuple[bytes, list[int]]:
    """n response records and the offset of each."""
    buffer = io.BytesIO()
    writer = WARCWriter(buffer, gzip=gzip_records)
    starts = []
    for i in range(n):
        starts.append(buffer.tell())
        http = StatusAndHeaders("200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1")
        writer.write_record(writer.create_warc_record(f"https://x.example/{i}", "response",
                                                      payload=io.BytesIO(f"<p>page {i} body</p>".encode()),
                                                      http_headers=http))
    return buffer.getvalue(), starts


def _set_length(data: bytes, at: int, value: bytes) -> bytes:
    i = data.index(b"Content-Length: ", at)
    return data[:i] + b"Content-Length: " + value + data[data.index(b"\r\n", i):]


def _summary(records):
    return [((r.fields or {}).get("url"), r.rejection and r.rejection[0].value) for r in records]


def test_a_broken_warc_record_is_one_rejection_and_the_next_records_are_read(tmp_path):
    data, starts = _responses(4)
    broken = {
        "length not a number": _set_length(data, starts[1], b"abc"),
        "length too short": _set_length(data, starts[1], b"10"),
        "length too long": _set_length(data, starts[1], b"300"),
        "not a WARC header": data[:starts[1]] + b"WARX" + data[starts[1] + 4:],
    }
    for case, bad in broken.items():
        path = tmp_path / "bad.warc"
        path.write_bytes(bad)
        records = list(read_input(str(path)))
        good = [url for url, reason in _summary(records) if reason is None]
        assert good == ["https://x.example/0", "https://x.example/2", "https://x.example/3"], case
        assert [reason for _, reason in _summary(records) if reason] == ["unreadable_record"], case
        rejected = next(r for r in records if r.rejection)
        assert rejected.origin == f"{path}@{starts[1]}", case
    path.write_bytes(data[:starts[2]] + b"garbage\r\n\r\n" + data[starts[2]:])  # bytes between records
    assert _summary(read_input(str(path))) == [("https://x.example/0", None), ("https://x.example/1", None),
                                               (None, "unreadable_record"), ("https://x.example/2", None),
                                               ("https://x.example/3", None)]


def test_truncated_warc_and_gzip_inputs_end_with_one_truncated_record(tmp_path):
    data, starts = _responses(3)
    packed, packed_starts = _responses(3, gzip_records=True)
    lines = b"".join(b'{"url": "https://x.example/%d", "content": "x"}\n' % i for i in range(3000))
    packed_lines = gzip.compress(lines)
    cases = {
        "cut.warc": (data[:starts[2] + 300], 2),
        "cut.warc.gz": (packed[:packed_starts[2] + 100], 2),
        "cut.jsonl.gz": (packed_lines[:len(packed_lines) // 2], None),
    }
    for name, (content, read_before) in cases.items():
        path = tmp_path / name
        path.write_bytes(content)
        records = list(read_input(str(path)))  # no exception
        assert records[-1].rejection is not None and records[-1].rejection[0].value == "truncated_input", name
        assert all(r.rejection is None for r in records[:-1]), name
        if read_before is not None:
            assert len(records) == read_before + 1, name
        else:  # every whole line before the cut is a record, in order
            assert 100 < len(records) - 1 < 3000
            assert [r.data for r in records[:-1]] == lines.splitlines()[:len(records) - 1]
            assert records[-1].origin == f"{path}:{len(records)}"


class _Spaces(io.RawIOBase):
    """A stream of one huge line of spaces, then one good line, generated (no file, no copy)."""

    def __init__(self, size: int) -> None:
        self.left = size
        self.tail = b'\n{"url": "https://x.example/after", "content": "x"}\n'

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if self.left > 0:
            n = min(len(buffer), self.left)
            buffer[:n] = b" " * n
            self.left -= n
            return n
        n = min(len(buffer), len(self.tail))
        buffer[:n], self.tail = self.tail[:n], self.tail[n:]
        return n


def test_a_huge_line_is_read_in_bounded_memory_and_rejected_as_too_large(monkeypatch):
    import sys
    import tracemalloc

    size = 300_000_000  # 300 MB of whitespace in one line: once 2.3 GB of memory per GB
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BufferedReader(_Spaces(size))))
    tracemalloc.start()
    try:
        records = list(read_input("-"))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # the default limit keeps lines up to 4 x 10 MB + 1 MB: no more than that is ever held
    assert peak < 50_000_000, f"{peak / 1e6:.0f} MB held for a {size / 1e6:.0f} MB line"
    assert [r.origin for r in records] == ["<stdin>:1", "<stdin>:2"]
    reason, detail = records[0].rejection
    assert reason.value == "too_large" and f"{size + 1} bytes" in detail
    assert records[0].data == b" " * 1024  # only its head is kept
    assert records[1].rejection is None and records[1].data.startswith(b'{"url": "https://x.example/after"')


def test_the_line_limit_follows_max_content_bytes(tmp_path):
    path = tmp_path / "lines.jsonl"
    path.write_bytes(b"a" * 6_000_000 + b"\n" + b"b" * 100 + b"\n")
    records = list(read_input(str(path), max_content_bytes=1_000_000))  # limit: 4 x 1 MB + 1 MB
    assert [r.rejection and r.rejection[0].value for r in records] == ["too_large", None]
    assert [r.data for r in read_input(str(path))][0] == b"a" * 6_000_000  # under the default limit: kept


def test_a_warc_record_over_the_limit_is_skipped_unread(tmp_path):
    buffer = io.BytesIO()
    writer = WARCWriter(buffer, gzip=True)
    http = StatusAndHeaders("200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1")
    for i, size in enumerate((1_200_000, 100)):
        writer.write_record(writer.create_warc_record(f"https://x.example/{i}", "response",
                                                      payload=io.BytesIO(b"x" * size), http_headers=http))
    path = tmp_path / "big.warc.gz"
    path.write_bytes(buffer.getvalue())
    records = list(read_input(str(path), max_content_bytes=10))  # block limit: 4 x 10 + 1 MB
    assert _summary(records) == [("https://x.example/0", "too_large"), ("https://x.example/1", None)]


def test_dedup_of_a_cut_warc_judges_what_was_read_and_writes_its_summary(tmp_path):
    import json

    from conftest import make_article, wrap_in_template

    from streamdedup.cli import main

    buffer = io.BytesIO()
    writer = WARCWriter(buffer, gzip=True)
    starts = []
    for i in range(3):
        starts.append(buffer.tell())
        http = StatusAndHeaders("200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1")
        body = wrap_in_template(make_article(50 + i), "Site").encode()
        writer.write_record(writer.create_warc_record(f"https://x.example/{i}", "response",
                                                      payload=io.BytesIO(body), http_headers=http))
    path = tmp_path / "cut.warc.gz"
    path.write_bytes(buffer.getvalue()[:starts[2] + 200])
    out = tmp_path / "out"
    assert main(["dedup", str(path), "--out", str(out), "-q"]) == 0
    unique = [json.loads(line) for line in (out / "unique.jsonl").read_text().splitlines()]
    rejected = [json.loads(line) for line in (out / "rejected.jsonl").read_text().splitlines()]
    assert [r["url"] for r in unique] == ["https://x.example/0", "https://x.example/1"]
    assert [r["dedup"]["reason"] for r in rejected] == ["truncated_input"]
    assert json.loads((out / "summary.json").read_text())["records"] == 3


def test_an_input_that_is_a_pipe_is_named_as_one(tmp_path):
    """`dedup <(zcat crawl.gz) --out o` said "input /dev/fd/63 does not exist"; it is a pipe."""
    fifo = tmp_path / "crawl.fifo"
    os.mkfifo(fifo)
    with pytest.raises(FileNotFoundError) as refused:
        check_inputs([str(fifo)])
    assert "does not exist" not in str(refused.value) and f"- < {fifo}" in str(refused.value)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        check_inputs([str(tmp_path / "missing.jsonl")])


def test_a_tar_or_zip_archive_is_refused_before_it_is_read(tmp_path):
    """`dedup readability-test-pages.tar.gz` read the archive as JSON Lines: 271,206 invalid_json
    rejections. A tar (gzipped or not) or a zip is refused in one line; a JSON line with "ustar" at
    the tar header's place is still read."""
    import tarfile
    import zipfile

    member = tmp_path / "crawl.jsonl"
    member.write_text('{"url": "https://a.example/1", "content": "<p>words</p>"}\n')
    for name, mode in (("pages.tar", "w"), ("pages.tar.gz", "w:gz")):
        with tarfile.open(tmp_path / name, mode) as archive:
            archive.add(member, arcname="crawl.jsonl")
    with zipfile.ZipFile(tmp_path / "pages.zip", "w") as archive:
        archive.write(member, arcname="crawl.jsonl")
    for name, kind in (("pages.tar", "tar"), ("pages.tar.gz", "tar"), ("pages.zip", "zip")):
        with pytest.raises(ValueError) as refused:
            check_inputs([str(tmp_path / name)])
        assert str(refused.value) == (f"input {tmp_path / name} is a {kind} archive: give JSON Lines or WARC files "
                                      "(.gz ok), or - for stdin; unpack it and give the files it holds")
    line = '{"url": "https://a.example/1", "content": "' + "x" * 214 + 'ustar and more"}\n'
    assert line.index("ustar") == 257
    text = tmp_path / "ustar.jsonl"
    text.write_text(line * 3)
    with gzip.open(tmp_path / "ustar.jsonl.gz", "wt") as packed:
        packed.write(line * 3)
    check_inputs([str(member), str(text), str(tmp_path / "ustar.jsonl.gz")])
