"""Shared fixtures: synthetic articles and site templates, generated, never read from ../shared."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from streamdedup.testing import make_article, make_words, wrap_in_template  # noqa: F401 - re-exported for tests


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
