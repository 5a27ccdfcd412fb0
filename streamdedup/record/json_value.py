"""A record's JSON text and value from its bytes, read one way by every mode.

The detector decides a record from its value (`Fingerprinter._decode`) and the outputs write it
again (file mode, the worker, the Faust app): both must read the same bytes the same way, or a
record the detector judged fails when it is written (a UTF-8 BOM stopped the Faust app for good).
"""

from __future__ import annotations

import codecs
from typing import Any

import orjson


def json_text(data: bytes | None) -> bytes:
    """The record's JSON text: its bytes without a leading UTF-8 BOM.

    A file saved by a Windows tool starts with one; it is not the record's, and orjson refuses it."""
    data = data or b""
    return data[len(codecs.BOM_UTF8):] if data.startswith(codecs.BOM_UTF8) else data


def json_value(data: bytes | None) -> Any:
    """The record's JSON value (raises `orjson.JSONDecodeError` if its text is not JSON)."""
    return orjson.loads(json_text(data))


def json_object(data: bytes | None) -> dict[str, Any] | None:
    """The record as a JSON object, or None (not JSON, or not an object)."""
    try:
        value = json_value(data)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None
