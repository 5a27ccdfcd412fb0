"""The values of an item given to the library, as a crawl file's JSON line would hold them.

A notebook's items are often a DataFrame's rows (`df.to_dict("records")`): numpy numbers, pandas'
`Timestamp`, and its missing values (`NaT`, NaN, pandas' `NA`) where a column has a gap. A time is
written as ISO-8601 text, a number as a Python number, and a missing value as null, which the
record reader takes as the field left out (`record.page`): a fetch time missing is no fetch time,
not a rejection. pandas is never imported here; its `NA` is recognised only if pandas is loaded.
"""

from __future__ import annotations

import base64
import re
import sys
from collections.abc import Mapping
from datetime import date, datetime
from typing import Any

import numpy as np

from streamdedup.record.page import FIELD_ALIASES

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")  # no text in UTF-8 holds one (bytes read with surrogateescape do)


def missing(value: Any) -> bool:
    """Whether a value stands for no value: None, NaN, NaT (pandas' or numpy's), pandas' NA."""
    if value is None:
        return True
    if isinstance(value, (float, np.floating, datetime, np.datetime64)):
        return bool(value != value)  # NaN and NaT are unequal to themselves
    pandas = sys.modules.get("pandas")
    return pandas is not None and value is getattr(pandas, "NA", None)


def plain_value(value: Any) -> Any:
    """`value` as JSON holds it: a time as ISO-8601 text, a numpy scalar as Python's, a missing one None.

    Any other value is returned as it is. A time without a zone is read as UTC, as the reader reads
    ISO text without one (numpy's datetime64 has none)."""
    if missing(value):
        return None
    if isinstance(value, np.datetime64):  # its text in microseconds: the reader takes ISO text to the microsecond
        return str(value.astype("datetime64[us]"))
    if isinstance(value, np.generic):
        value = value.item()
        return None if isinstance(value, float) and value != value else value
    if isinstance(value, (datetime, date)):  # pandas' Timestamp is a datetime orjson does not write itself
        return value.isoformat()
    return value


def json_value(value: Any) -> Any:
    """orjson's `default`: a value it does not write itself, as `plain_value`, else its str (a Decimal, a Path).

    Bytes are refused (their str is a repr)."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        raise TypeError("bytes")
    plain = plain_value(value)
    return str(value) if plain is value else plain


def first_present(record: Mapping[str, Any], field: str) -> Any:
    """The record's value of `field` under the first of its names that holds one (a missing value: none)."""
    return next((value for name in FIELD_ALIASES[field] if not missing(value := record.get(name))), None)


def bytes_content_as_base64(record: Mapping[str, Any]) -> Mapping[str, Any]:
    """The record with bytes content as file mode's `content_encoding: base64`, else as it is.

    So its bytes are decoded as a crawl file's page bytes are (charset of the content type, the
    page's <meta>, detection), not judged on their Python repr ("b'<html>...'")."""
    field = next((name for name in FIELD_ALIASES["content"] if record.get(name) is not None), "")
    content = record.get(field)
    if field == "content_base64" or not isinstance(content, (bytes, bytearray)) or "content_encoding" in record:
        return record
    return {**record, field: base64.b64encode(content).decode("ascii"), "content_encoding": "base64"}


def unencodable(record: Mapping[str, Any]) -> str:
    """One line naming the field of `record` that no JSON line can hold, and what to give instead."""
    for key, value in record.items():
        if isinstance(value, (bytes, bytearray, memoryview)):
            return f"{key} is bytes: give a str (only a page's content may be bytes)"
        if isinstance(value, str) and (lone := _LONE_SURROGATE.search(value)):
            return (f"{key} holds a lone surrogate (U+{ord(lone.group()):04X} at character {lone.start()}), which is "
                    "no UTF-8 text: decode its bytes with errors='replace', or give them as bytes content")
    return "a field holds bytes or a lone surrogate in a nested value or a name: give str values of UTF-8 text"


def table_rows(items: Any) -> list[Mapping[str, Any]] | None:
    """A DataFrame's rows as records (pandas' or polars'), or None when `items` is no DataFrame.

    Iterated as it is, a DataFrame gives its column names (pandas) or its columns (polars), which
    would be judged as texts: `add_many(df)` would file "id" and "text". Duck-typed: neither
    library is imported here."""
    if not hasattr(items, "columns"):
        return None
    if callable(getattr(items, "iter_rows", None)):  # polars
        return list(items.iter_rows(named=True))
    if callable(getattr(items, "to_dict", None)) and callable(getattr(items, "iterrows", None)):  # pandas
        return list(items.to_dict("records"))
    return None


def row_record(item: Any) -> Mapping[str, Any] | None:
    """A DataFrame's row as a record: pandas' `Series`, alone or in `iterrows`' (index, row), or `itertuples`'.

    Else None."""
    if isinstance(item, tuple) and len(item) == 2 and not hasattr(item, "_asdict") and not isinstance(item[1], tuple):
        return row_record(item[1])  # iterrows: (index, row); a pair of other values is no row
    as_dict = getattr(item, "_asdict", None)
    if isinstance(item, tuple) and callable(as_dict):
        return dict(as_dict())
    if hasattr(item, "index") and callable(getattr(item, "to_dict", None)) and not isinstance(item, Mapping):
        rows = item.to_dict()
        return rows if isinstance(rows, dict) and all(isinstance(key, str) for key in rows) else None
    return None


def columns_hint(items: Mapping[str, Any]) -> str:
    """What to give instead of a mapping of columns (`df.to_dict()`, {"text": [...]}), else ""."""
    columns = (isinstance(value, (Mapping, list, tuple)) or hasattr(value, "__array__") for value in items.values())
    if items and all(columns):
        return (" (this one maps names to columns: give its rows, a list of records [{'id': ..., 'text': ...}], "
                "e.g. df.to_dict('records'), or the DataFrame itself)")
    return ""


def whole_number_ids(record: Mapping[str, Any]) -> Mapping[str, Any]:
    """The record with a whole float id (1.0) as the integer it is, else as it is.

    pandas stores an integer column with a gap as floats, so `df.to_dict("records")` gives ids
    1.0 and 3.0 where the user wrote 1 and 3; an id like 1.5 stays as it is (and is refused)."""
    for name in FIELD_ALIASES["id"]:
        value = record.get(name)
        if isinstance(value, np.floating):
            value = value.item()
        if isinstance(value, float) and value.is_integer():
            return {**record, name: int(value)}
    return record
