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


@pytest.fixture
def article() -> Callable[..., list[str]]:
    return make_article
