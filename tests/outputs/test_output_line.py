"""File mode's output lines copy the input line and splice `dedup` in: the same JSON as encoding the record."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest
from conftest import make_article

from streamdedup.api.file_mode import dedup_files
from streamdedup.fingerprinter import Outcome
from streamdedup.outputs.files import output_line
from streamdedup.outputs.record_line import record_json

DEDUP = {"id": "p", "status": "unique", "duplicate_of": None, "cluster_id": "p"}


def pairs(line: bytes) -> list[tuple[str, object]]:
    """The line's top-level fields in order, repeats kept (what a dict would hide)."""
    return json.loads(line, object_pairs_hook=list)


@pytest.mark.parametrize("line", [
    b'{"id":"p","content":"x"}',
    b'{ "id" : "p" , "content" : "caf\\u00e9 \\ud83d\\ude00 \\"q\\"" }',  # spaces, escapes
    b"{}", b"{ }", b'{"a":1}  \t\r',  # no field; JSON space after it
    b'{"a":1,"a":2}',  # a repeated field: the record keeps its last value
    b'{"n":123456789012345678901234567890,"f":1.50}',  # numbers as the input wrote them
    b'{"dedup":"theirs","id":"p"}',  # the record's own dedup is replaced, in its place
    b'{"a":\r1}',  # a line break inside: encoded again, one line a record
    b'{"nested":{"dedup":1},"list":[{"a":"}"}]}',
])
def test_the_line_is_the_record_with_its_dedup(line: bytes) -> None:
    record = orjson.loads(line)
    out = output_line(Outcome(record, DEDUP, "f:1", line=line))
    assert out.endswith(b"}\n") and out.count(b"\n") == 1 and b"\r" not in out
    assert orjson.loads(out) == {**record, "dedup": DEDUP}
    assert record_json(record, DEDUP, line) + b"\n" == out  # a Kafka message's value: the same, no line end
    fields = pairs(out)
    assert [name for name, _ in fields].count("dedup") == 1
    assert fields[-1][0] == "dedup" or "dedup" in record  # last, unless the record had one


def test_without_its_line_the_record_is_encoded() -> None:
    record = {"url": "https://a.example/", "content": "x"}  # WARC fields, a rejection's raw payload
    assert output_line(Outcome(record, DEDUP, "w@0")) == orjson.dumps({**record, "dedup": DEDUP}) + b"\n"


def test_file_mode_writes_the_input_lines_with_their_verdicts(tmp_path: Path) -> None:
    text = "\n\n".join(make_article(3, paragraphs=2))
    lines = [
        orjson.dumps({"id": "a", "url": "https://a.example/1", "content": text, "extra": [1, {"b": None}]}),
        b'{ "id" : "b", "url":"https://b.example/1",  "content" : ' + json.dumps(text).encode() + b" }  ",
        b'{"id":"c","url":"https://c.example/1","content":"too few"}',  # rejected: no text
        b"[1, 2]",  # not an object: rejected, its raw line kept
    ]
    (tmp_path / "in.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    dedup_files([tmp_path / "in.jsonl"], tmp_path / "out")
    written = {}
    for name in ("unique.jsonl", "duplicates.jsonl", "rejected.jsonl"):
        for out in (tmp_path / "out" / name).read_bytes().splitlines():
            record = orjson.loads(out)
            written[record.get("id", record.get("raw"))] = (out, record)
    assert set(written) == {"a", "b", "c", "[1, 2]"}
    for line in lines[:3]:
        out, record = written[orjson.loads(line)["id"]]
        assert out.startswith(line.strip()[:-1])  # the input's own bytes
        assert {name: value for name, value in record.items() if name != "dedup"} == orjson.loads(line)
    assert written["b"][1]["dedup"]["status"] == "duplicate" and written["c"][1]["dedup"]["status"] == "rejected"
