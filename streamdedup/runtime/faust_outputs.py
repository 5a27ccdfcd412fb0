"""The Faust app's outputs of a record, rendered from its verdict as the worker writes them.

A journaled verdict gives the same messages on every replay (`render`); an output the broker refused
for its size goes again in the worker's next form (`after_refusal`: the input's headers left out over
the bound, then the worker's `too_large_for_broker` rejection); send errors are sorted into the
broker's refusal, the broker away (retried) and the rest.
"""

from __future__ import annotations

import logging
from typing import Any

import orjson

from streamdedup.clusters import page_fields, verdict_line, view_event
from streamdedup.outputs.kafka import OURS, cluster_events, header_forms, light_headers, with_input_headers
from streamdedup.outputs.record_size import Headers
from streamdedup.record.json_value import json_object
from streamdedup.record.rejection import Reason
from streamdedup.verdict.contract import Rejection
from streamdedup.verdict.contract import headers as dedup_headers

log = logging.getLogger(__name__)

# target ("unique", "duplicate", "rejected", "clusters", "verdicts", "cluster_view"), key, value, headers
Output = tuple[str, Any, Any, list]
PAGE_TARGETS = ("unique", "duplicate")  # a judged page's full output, the one its verdict line waits for


def render(dedup: dict, key: bytes | None, value: bytes | None, source: str = "",
           passed: Headers | None = None) -> list[Output]:
    """A record's outputs from its journaled verdict, as the worker sends them.

    Deterministic: the same journaled verdict and input give byte-identical outputs, with the worker's headers
    (`verdict.contract.headers`); its verdict line and cluster events as the worker's (`outputs.kafka.Outputs.verdict`).
    The value is read as the detector read it (`record.json_value`). Outputs that cannot be written (a bug) are a
    `processing_error` dead letter instead: a record that stopped the app would stop it at every restart, as the
    replay renders the same journaled verdict. passed: the input message's Kafka headers."""
    try:
        return render_verdict(dedup, key, value, source, passed)
    except Exception as err:  # noqa: BLE001 - one record's outputs must not stop its partition for good
        log.error("could not write the outputs of %s: it goes to the rejected topic as %s", source,
                  Reason.PROCESSING_ERROR.value, exc_info=err)
        detail = f"its verdict ({dedup.get('status')}) could not be written: {type(err).__name__}: {err}"
        rejection = Rejection(Reason.PROCESSING_ERROR.value, detail, source, dedup.get("id")).as_dict()
        return render_verdict(rejection, key, value, source, passed)


def render_verdict(dedup: dict, key: bytes | None, value: bytes | None, source: str,
                   passed: Headers | None) -> list[Output]:
    """`render` without its fallback: raises if the outputs cannot be written.

    The page's verdict or dead letter carries our headers, then the input's whole, as the worker's
    (`outputs.kafka.whole_headers`)."""
    headers = with_input_headers(dedup_headers(dedup, source), passed)
    parsed = json_object(value)
    if dedup["status"] == "rejected":
        if parsed is not None:  # a JSON object carries its verdict, in place of a sender's, as the worker's
            value = orjson.dumps({**parsed, "dedup": dedup})
        return [("rejected", key, value, headers), line_output(key, parsed or {}, dedup, source, passed)]
    if parsed is None:
        raise ValueError("a judged record's value is not a JSON object")
    page_key = dedup["id"].encode("utf-8", "surrogatepass")
    out = [(dedup["status"], page_key, orjson.dumps({**parsed, "dedup": dedup}), headers),
           line_output(page_key, parsed, dedup, source, passed)]
    out += [("clusters", e["cluster_id"].encode(), orjson.dumps(e), []) for e in cluster_events(dedup, parsed, key)]
    out.append(("cluster_view", page_key, orjson.dumps(view_event(dedup, *page_fields(parsed))), []))
    return out


def line_output(key: bytes | None, record: dict, dedup: dict, source: str, passed: Headers | None) -> Output:
    """The verdicts topic's message for a record.

    It is the record's verdict line, with the verdict's headers and the input's, as the worker sends it."""
    return ("verdicts", key, orjson.dumps(verdict_line(record, dedup, passed)),
            light_headers(dedup_headers(dedup, source), passed))


def too_large_rejection(topic: str, size: int, source: str) -> dict:
    """The `too_large_for_broker` rejection of an output the broker refused for its size."""
    detail = f"the output for {topic} is {size} bytes, more than the broker takes for that topic"
    return Rejection(Reason.TOO_LARGE_FOR_BROKER.value, detail, source).as_dict()


def refused_line(output: Output, topic: str, source: str, passed: Headers | None) -> Output:
    """The verdict line of a page whose output the broker refused for its size.

    The refused `output` was meant for `topic`. The line is its rejection's, as the worker writes it
    (`Outputs.too_large`)."""
    target, key, value, _ = output
    record = orjson.loads(value or b"{}")
    return line_output(key, record, too_large_rejection(topic, len(value or b""), source), source, passed)


def too_large_output(output: Output, topic: str, source: str) -> Output:
    """The rejection sent instead of an output the broker refused for its size.

    It is the worker's `too_large_for_broker` stub (id, url, size, topic, verdict). For a dead letter it is the dead
    letter's own reason, with the original omitted (outputs/kafka.py). It carries the input's headers
    (those of `output` after ours) up to `record.passed.PASSED_BYTES`, as the worker's stub."""
    target, key, value, headers = output
    size = len(value or b"")
    ours, passed = _split_headers(headers)
    if target == "rejected":
        stub = {"bytes": size, "omitted": "original", "topic": topic}
        return ("rejected", key, orjson.dumps(stub),
                light_headers([*ours, ("dedup.original_bytes", str(size).encode())], passed))
    record = orjson.loads(value or b"{}") if target in (*PAGE_TARGETS, "verdicts") else {}
    dedup = record.get("dedup") if isinstance(record, dict) else None
    stub = {"id": (dedup or {}).get("id"), "url": record.get("url") if isinstance(record, dict) else None,
            "bytes": size, "topic": topic, **({"dedup": dedup} if dedup else {})}
    rejection = too_large_rejection(topic, size, source)
    return ("rejected", key, orjson.dumps(stub), light_headers(dedup_headers(rejection, source), passed))


def _split_headers(headers: list) -> tuple[list[tuple[str, bytes]], list[tuple[str, bytes | None]]]:
    """An output's headers as ours (`dedup.*`, first) and the input's passed on after them."""
    ours = [(name, data) for name, data in headers if name.startswith(OURS) and data is not None]
    return ours, [(name, data) for name, data in headers if not name.startswith(OURS)]


def is_stub(headers: list) -> bool:
    """Whether an output with these headers is already a `too_large_output` stub (nothing smaller to send).

    Told by our headers only: an input's header of the same value (`dedup.*` ones are dropped) is not ours."""
    reason = ("dedup.reason", Reason.TOO_LARGE_FOR_BROKER.value.encode())
    return any(name == "dedup.original_bytes" or (name, data) == reason for name, data in headers)


def after_refusal(output: Output, original: Output, topic: str, source: str) -> Output | None:
    """What to send after the broker refused `output`, a form of `original`, for its size (None: nothing smaller).

    The worker's next form (`outputs.kafka.header_forms`): a page's verdict or a dead letter that carried the input's
    headers whole goes again with them left out where they are over `record.passed.PASSED_BYTES`; else `original`
    goes as its `too_large_output` stub (`topic`: the one it was meant for); a stub has nothing smaller."""
    target, key, value, headers = output
    if is_stub(headers):
        return None
    if target in (*PAGE_TARGETS, "rejected"):
        forms = header_forms(*_split_headers(headers))
        if len(forms) > 1:
            return target, key, value, forms[1]
    return too_large_output(original, topic, source)


def input_headers(headers: Any) -> list[tuple[str, bytes | None]]:
    """A consumed Faust message's Kafka headers as the worker reads them: (name, value) pairs, in order."""
    pairs = headers.items() if isinstance(headers, dict) else headers or ()
    return [(str(name), None if data is None else bytes(data)) for name, data in pairs]


def is_size_refusal(err: BaseException) -> bool:
    """Whether aiokafka refused a record (or its batch) as too large, itself or as the cause."""
    from aiokafka.errors import MessageSizeTooLargeError, RecordListTooLargeError, RecordTooLargeError

    causes = (err, err.__cause__)
    return any(isinstance(e, (MessageSizeTooLargeError, RecordListTooLargeError, RecordTooLargeError))
               for e in causes)


def is_broker_trouble(err: BaseException) -> bool:
    """Whether a send error is worth retrying.

    A send error worth retrying: the broker is away or busy (aiokafka's retriable errors, and timeouts), not the
    record's fault nor a setting's (authorization, a missing topic config)."""
    from aiokafka.errors import KafkaError, KafkaTimeoutError

    return any(isinstance(e, KafkaTimeoutError) or (isinstance(e, KafkaError) and e.retriable)
               for e in (err, err.__cause__)) and not is_size_refusal(err)


__all__ = ["PAGE_TARGETS", "Output", "after_refusal", "input_headers", "is_broker_trouble", "is_stub",
           "is_size_refusal", "line_output", "refused_line", "render", "render_verdict", "too_large_output",
           "too_large_rejection"]
