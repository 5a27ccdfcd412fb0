"""Shared fixtures: synthetic articles and site templates, generated, never read from ../shared."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from streamdedup.testing import make_article, make_words, wrap_in_template  # noqa: F401 - re-exported for tests


def pytest_configure(config: pytest.Config) -> None:
    """Ctrl-C is an interrupt in the tests however they were started.

    A shell starts a background job (`nohup make test &`) with SIGINT ignored, and Python then installs
    no handler: the tests of what Ctrl-C does (test_logs.py, test_api_notebook.py) got no interrupt."""
    import signal

    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


class FakeMessage:
    """A consumed Kafka message as confluent_kafka hands one over, for handlers tested without a broker."""

    def __init__(self, value: bytes | None = b"", offset: int = 0, *, topic: str = "pages", partition: int = 0,
                 headers: list | None = None, key: bytes | None = None,
                 timestamp: tuple[int, int] = (0, 0)) -> None:
        self._value, self._offset, self._topic, self._partition = value, offset, topic, partition
        self._headers, self._key, self._timestamp = headers, key, timestamp

    def topic(self) -> str:
        return self._topic

    def partition(self) -> int:
        return self._partition

    def offset(self) -> int:
        return self._offset

    def value(self) -> bytes | None:
        return self._value

    def headers(self) -> list | None:
        return self._headers

    def key(self) -> bytes | None:
        return self._key

    def timestamp(self) -> tuple[int, int]:
        return self._timestamp

    def error(self) -> None:
        return None


def page(url: str, content: str, fetched_at: str = "2024-03-01T12:00:00Z", **extra: Any) -> dict[str, Any]:
    return {"url": url, "content": content, "fetched_at": fetched_at, **extra}


def write_jsonl(path: Path, records: list[Any]) -> Path:
    with open(path, "wb") as handle:
        for record in records:
            handle.write(record if isinstance(record, bytes) else orjson.dumps(record))
            handle.write(b"\n")
    return path


def write_warc(path: Path, responses: list[tuple[str, str, bytes]], gzip: bool = True) -> Path:
    """A WARC of HTTP responses, each (url, status line such as "404 Not Found", HTML body)."""
    import io

    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    buffer = io.BytesIO()
    writer = WARCWriter(buffer, gzip=gzip)
    for url, status, body in responses:
        http = StatusAndHeaders(status, [("Content-Type", "text/html")], protocol="HTTP/1.1")
        writer.write_record(writer.create_warc_record(url, "response", payload=io.BytesIO(body), http_headers=http))
    path.write_bytes(buffer.getvalue())
    return path


@pytest.fixture
def article() -> Callable[..., list[str]]:
    return make_article
