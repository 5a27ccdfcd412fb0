"""Every class of hostile input: a clear, machine-readable reason, the original kept, and the
stream goes on (a good page after each bad one still gets its verdict)."""

import base64
import gzip

import brotli
import orjson
import pytest
from conftest import make_article, wrap_in_template

from streamdedup.clean.pipeline import CleaningConfig
from streamdedup.config import DetectorConfig
from streamdedup.outputs.files import output_line
from streamdedup.testing import run_records

GOOD = {"url": "https://good.example/after", "content": wrap_in_template(make_article(3), "Good")}
HTML = wrap_in_template(make_article(4), "Zip")


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


BAD = {
    "invalid JSON": (b'{"url": "https://x.example/", "content": "<p>cut', "invalid_json"),
    "JSON array": ([1, 2, 3], "invalid_shape"),
    "JSON string": ("just a string", "invalid_shape"),
    "missing url": ({"content": "<p>text</p>"}, "missing_url"),
    "url not a string": ({"url": 42, "content": "<p>text</p>"}, "invalid_field"),
    "content not a string": ({"url": "https://x.example/", "content": {"html": "<p>"}}, "invalid_field"),
    "bad fetched_at": ({"url": "https://x.example/", "content": "<p>t</p>", "fetched_at": "soon"}, "invalid_field"),
    "binary garbage line": (bytes(range(256)) * 4, "undecodable"),
    "a latin-1 line": ('{"url": "https://x.example/", "content": "<p>Caf\u00e9</p>"}'.encode("latin-1"), "undecodable"),
    "binary garbage content": ({"url": "https://x.example/", "content_base64": b64(bytes(range(256)) * 40)}, "undecodable"),
    "empty page": ({"url": "https://x.example/", "content": ""}, "empty_content"),
    "whitespace page": ({"url": "https://x.example/", "content": " \n\t "}, "empty_content"),
    "only markup": ({"url": "https://x.example/", "content": "<html><body><div><img src=a.png></div></body></html>"}, "no_text"),
    "only boilerplate": ({"url": "https://x.example/", "content": "<html><body><nav><a href=/>Home</a>"
                          "<a href=/about>About</a></nav><footer>© 2024</footer></body></html>"}, "no_text"),
    "page over the size cap": ({"url": "https://x.example/", "content": "<p>" + "x" * 60_000_000 + "</p>"}, "too_large"),
    "image content type": ({"url": "https://x.example/a.png", "content_base64": b64(b"\x89PNG\r\n" + bytes(500)),
                            "content_type": "image/png"}, "unsupported_content_type"),
    "gzip bomb": ({"url": "https://x.example/", "content_base64": b64(gzip.compress(b"a" * 80_000_000))}, "too_large"),
}


@pytest.mark.parametrize("name", list(BAD))
def test_bad_input_is_rejected_with_its_reason_and_the_stream_goes_on(name, tmp_path):
    record, reason = BAD[name]
    raw = record if isinstance(record, bytes) else orjson.dumps(record)
    outcomes = run_records([raw, GOOD], tmp_path)
    assert [o.status for o in outcomes] == ["rejected", "unique"]
    dedup = outcomes[0].dedup
    assert dedup["reason"] == reason and dedup["detail"]
    output = outcomes[0].output()
    if isinstance(record, dict):
        assert {k: output[k] for k in record} == record  # every original field kept
    else:
        assert output.get("raw") or output.get("raw_base64")  # the original bytes kept


def test_a_line_that_starts_with_a_byte_order_mark_is_judged(tmp_path):
    """A JSON-lines file saved by a Windows tool starts with UTF-8's byte order mark: its first
    record is judged, not rejected as invalid JSON; the reason of a line that is not UTF-8 names
    the fix."""
    first = b"\xef\xbb\xbf" + orjson.dumps({"url": "https://bom.example/a", "content": HTML})
    latin = '{"url": "https://x.example/", "content": "Caf\u00e9"}'.encode("latin-1")
    outcomes = run_records([first, latin, GOOD], tmp_path)
    assert [o.status for o in outcomes] == ["unique", "rejected", "unique"]
    assert outcomes[1].dedup["reason"] == "undecodable" and "iconv" in outcomes[1].dedup["detail"]
    # its output line is JSON, without the mark (before: the mark went on in the middle of unique.jsonl
    # and at the start of the worker's message, which JSON readers such as orjson refuse)
    assert orjson.loads(output_line(outcomes[0]))["dedup"]["status"] == "unique"


@pytest.mark.parametrize("packing", ["gzip", "brotli"])
def test_compressed_content_is_inflated_and_judged(packing, tmp_path):
    packed = gzip.compress(HTML.encode()) if packing == "gzip" else brotli.compress(HTML.encode())
    plain = {"url": "https://plain.example/", "content": HTML}
    outcomes = run_records([plain, {"url": "https://packed.example/", "content_base64": b64(packed)}], tmp_path)
    assert [o.status for o in outcomes] == ["unique", "duplicate"]


@pytest.mark.parametrize("encoding", ["gbk", "big5", "cp1251", "shift_jis", "latin-1"])
def test_legacy_encodings_are_decoded_and_judged(encoding, tmp_path):
    texts = {"gbk": "我们在这里测试中文网页的字符集检测，这是一个很长的句子。", "big5": "我們在這裡測試中文網頁的字元集偵測，這是一個很長的句子。",
             "cp1251": "Съешь же ещё этих мягких французских булок, да выпей чаю.",
             "shift_jis": "日本語のウェブページの文字コードを検出するテストです。", "latin-1": "Crème brûlée à la française, s'il vous plaît."}
    html = "<html><body><article>" + "".join(f"<p>{texts[encoding]} {i}</p>" for i in range(12)) + "</article></body></html>"
    label = "utf-8" if encoding == "latin-1" else None  # Latin-1 mislabelled as UTF-8
    content_type = f"text/html; charset={label}" if label else "text/html"
    records = [{"url": "https://utf8.example/", "content": html},
               {"url": "https://legacy.example/", "content_base64": b64(html.encode(encoding)), "content_type": content_type}]
    assert [o.status for o in run_records(records, tmp_path)] == ["unique", "duplicate"]


def test_deeply_nested_malformed_and_million_token_pages_do_not_stop_the_stream(tmp_path):
    million = " ".join(f"t{i % 5000}" for i in range(1_000_000))
    records = [{"url": "https://x.example/deep", "content": "<div>" * 100_000 + "deep text" + "</div>" * 100_000},
               {"url": "https://x.example/broken", "content": "<p>unclosed <b><i><table><td>cell</p></div>" * 5000},
               {"url": "https://x.example/million", "content": million, "content_type": "text/plain"},
               GOOD]
    outcomes = run_records(records, tmp_path)
    assert len(outcomes) == 4 and outcomes[-1].status == "unique"
    assert all(o.status in ("unique", "duplicate", "rejected") for o in outcomes)


def test_duplicate_message_id(tmp_path):
    outcomes = run_records([{**GOOD, "id": "page-1"}, {**GOOD, "id": "page-1"}], tmp_path)
    assert [o.status for o in outcomes] == ["unique", "rejected"]
    assert outcomes[1].dedup["reason"] == "duplicate_id"


def test_size_cap_is_configurable(tmp_path):
    config = DetectorConfig(cleaning=CleaningConfig(max_content_bytes=1000))
    outcomes = run_records([{"url": "https://x.example/", "content": "<p>" + "y" * 2000 + "</p>"}], tmp_path, config)
    assert outcomes[0].dedup["reason"] == "too_large"


@pytest.mark.parametrize("empty", [b"", b" \r\n"], ids=["empty (a tombstone's value)", "whitespace"])
def test_an_empty_message_is_rejected_saying_it_is_empty_not_a_json_parser_error(empty, tmp_path):
    """A Kafka tombstone (no value: the worker and the Faust app read it as b"") or an empty message:
    its dead letter says so in words.

    Before: "not JSON: Input is a zero-length, empty document: line 1 column 1 (char 0)"."""
    from streamdedup.detector import Detector
    from streamdedup.record.readers import RawRecord

    with Detector(DetectorConfig(), tmp_path) as detector:
        outcomes = list(detector.run([RawRecord("pages[0]@7", data=empty), RawRecord("pages[0]@8", data=orjson.dumps(GOOD))]))
    assert [o.status for o in outcomes] == ["rejected", "unique"]
    dedup = outcomes[0].dedup
    assert dedup["reason"] == "invalid_json"
    assert dedup["detail"].startswith("the message is empty") and "tombstone" in dedup["detail"]


@pytest.mark.parametrize(("record", "reason", "said"), [
    ({"url": "https://x.example/", "content": None}, "missing_content", "content is null (accepted: content, html"),
    ({"url": None, "content": "<p>text</p>"}, "missing_url", "url is null (accepted: url, uri"),
    ({"url": "https://x.example/"}, "missing_content", "no content field (accepted: content, html"),
])
def test_a_null_field_is_named_as_null_not_as_absent(record, reason, said, tmp_path):
    """Before: `"content": null` was rejected as "no content field", which the record plainly has."""
    [outcome] = run_records([record], tmp_path)
    assert outcome.dedup["reason"] == reason and outcome.dedup["detail"].startswith(said)
