"""Hypothesis strategies for hostile input messages, shared by the fuzz test and `bench/fuzz.py`.

Needs hypothesis (the `test` extra); nothing in the detector imports this module."""

from __future__ import annotations

import json

import orjson
from hypothesis import strategies as st

from streamdedup.detector import Detector
from streamdedup.testing import raw_records

TAGS = ["p", "div", "b", "i", "table", "td", "script", "style", "nav", "article", "br", "html", "body", "<"]

html_fragment = st.lists(st.one_of(st.sampled_from([f"<{t}>" for t in TAGS] + [f"</{t}>" for t in TAGS]),
                                   st.text(max_size=40)), max_size=40).map("".join)
json_value = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12)
page = st.fixed_dictionaries(
    {"url": st.one_of(st.text(max_size=30), st.integers(), st.none(), st.just("https://fuzz.example/")),
     "content": st.one_of(html_fragment, st.text(max_size=200), st.binary(max_size=50).map(lambda b: b.hex()),
                          st.integers(), st.none())},
    optional={"fetched_at": st.one_of(st.text(max_size=25), st.integers(), st.just("2024-03-01T00:00:00Z")),
              "id": st.one_of(st.text(max_size=10), st.integers(), st.lists(st.integers(), max_size=2)),
              "content_type": st.one_of(st.text(max_size=20), st.just("text/plain"), st.just("image/png")),
              "content_base64": st.binary(max_size=200).map(lambda b: __import__("base64").b64encode(b).decode()),
              "lang": st.one_of(st.text(max_size=5), st.integers())})


def dumps(value: object) -> bytes:
    """A JSON value as bytes, integers beyond 64 bits included (the standard library's encoder)."""
    return json.dumps(value).encode()  # stdlib: integers beyond 64 bits too


message = st.one_of(st.binary(max_size=300), json_value.map(dumps), page.map(dumps))


def check_batch(detector: Detector, messages: list[bytes]) -> None:
    """Assert the detector gives each message exactly one serialisable outcome, in order."""
    outcomes = list(detector.run(raw_records(messages)))
    assert len(outcomes) == len(messages)
    assert [o.origin for o in outcomes] == [f"memory:{i}" for i in range(1, len(messages) + 1)]
    for outcome in outcomes:
        assert outcome.status in ("unique", "duplicate", "rejected")
        orjson.dumps(outcome.output())  # every output is serialisable
