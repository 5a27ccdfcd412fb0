import gzip
import io

import orjson
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from streamdedup.record.readers import read_input


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
