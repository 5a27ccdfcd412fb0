"""`streamdedup feed`: JSON Lines or WARC pages into a Kafka topic (idempotent producer).

JSON lines are sent byte for byte (a bad line must reach the worker's dead-letter output as it
was); WARC records become JSON pages. Messages are keyed by the page's site, so a site's pages
share a partition, and compressed (zstd) so pages up to the content cap fit the topic.

Every delivery report is checked. A record the broker refuses as too large is not lost: it
becomes a `too_large_for_broker` rejection on the rejected topic (its url, id and size, not its
content), as the worker would have written it; any other undelivered record is an error that
names it. A record the reader itself could not take (a WARC response that is not 2xx, a record
over the size limit, a cut file) goes straight to the rejected topic with the reader's reason,
as `streamdedup dedup` writes it, instead of reaching the worker as a page without content."""

from __future__ import annotations

import base64
import logging
import time
from collections import Counter
from collections.abc import Iterable
from typing import Any, cast

import orjson
from confluent_kafka import KafkaError, KafkaException, Message, Producer

from streamdedup.outputs.kafka import SIZE_ERRORS
from streamdedup.record.page import site_of
from streamdedup.record.readers import RawRecord
from streamdedup.record.rejection import Reason
from streamdedup.runtime.topics import producer_settings
from streamdedup.verdict.contract import Rejection
from streamdedup.verdict.contract import headers as outcome_headers

log = logging.getLogger(__name__)


class FeedFailed(RuntimeError):
    """Records that reached no topic: the message names them."""


def message_of(raw: RawRecord) -> tuple[bytes | None, bytes]:
    """The Kafka key and value `feed` produces for a raw record."""
    key, value, _ = described(raw)
    return key, value


def described(raw: RawRecord) -> tuple[bytes | None, bytes, dict[str, Any]]:
    """The message's key and value, and what names the page in a rejection (url, id)."""
    parsed: Any = None
    if raw.fields is not None:
        fields = dict(raw.fields)
        content = fields.pop("content", None)
        if isinstance(content, bytes):
            fields["content_base64"] = base64.b64encode(content).decode("ascii")
        elif content is not None:
            fields["content"] = content
        value = orjson.dumps(fields)
        parsed = fields
    else:
        value = raw.data or b""
        try:
            parsed = orjson.loads(value)
        except orjson.JSONDecodeError:
            parsed = None
    names = {name: parsed.get(name) for name in ("url", "id")} if isinstance(parsed, dict) else {}
    names = {name: found for name, found in names.items() if isinstance(found, (str, int)) and str(found)}
    url = names.get("url")
    key = site_of(url).encode() if isinstance(url, str) else None
    return key, value, {**names, "origin": raw.origin}


def feed(records: Iterable[RawRecord], client: dict, topic: str, rate: float | None = None,
         rejected_topic: str | None = None, refused: list[dict[str, Any]] | None = None,
         by_reader: Counter[str] | None = None) -> int:
    """Send the records.

    Returns how many reached a topic (`topic`, or `rejected_topic` as too_large_for_broker stubs,
    which are also appended to `refused`). The records the reader rejected (a WARC's 404, a cut
    file) go to `rejected_topic` as their rejections, counted by reason in `by_reader`. Raises
    FeedFailed if any record reached none."""
    producer = Producer({**client, "enable.idempotence": True, "linger.ms": 10, **producer_settings()})
    failed: list[tuple[dict[str, Any], bytes | None, int, KafkaError]] = []
    # the records sent and not acknowledged yet (input index -> origin), and how many were read and acknowledged
    unacked: dict[int, str] = {}
    counts = [0, 0]
    sent = 0
    started = time.monotonic()
    try:
        for raw in records:
            sent += _send_one(producer, raw, topic, rejected_topic, failed, unacked, counts, by_reader)
            if rate:
                ahead = sent / rate - (time.monotonic() - started)
                if ahead > 0:
                    time.sleep(ahead)
        if producer.flush(60):
            late = "records not delivered within 60 s: is the broker up?"
            raise FeedFailed(_stopped_at(late, topic, unacked, counts))
    except KafkaException as err:  # the producer failed for good (e.g. a broker back without its producer state)
        producer.flush(10)
        why = err.args[0].str() if err.args and isinstance(err.args[0], KafkaError) else str(err)
        raise FeedFailed(_stopped_at(why, topic, unacked, counts)) from None
    return _finish(producer, topic, rejected_topic, refused, failed, sent)


def _stopped_at(why: str, topic: str, unacked: dict[int, str], counts: list[int]) -> str:
    """One line: why the producer stopped, what reached the topic, and the record to feed again from."""
    first = min(unacked, default=None)
    where = (f"the first record not acknowledged is {unacked[first]} (record {first + 1} of the input): feed again "
             "from it; records acknowledged before it are in the topic (fed again, a page with the same id is a "
             "duplicate_id rejection)" if first is not None else "every record read so far was acknowledged: "
             "feed again from the next one")
    return (f"the producer stopped ({why}): {counts[1]} of {counts[0]} records read were acknowledged by {topic}; "
            f"{where}")


def _send_one(producer: Producer, raw: RawRecord, topic: str, rejected_topic: str | None,
              failed: list[tuple[dict[str, Any], bytes | None, int, KafkaError]], unacked: dict[int, str],
              counts: list[int], by_reader: Counter[str] | None = None) -> int:
    """Produce one record (to `topic`, or its reader's rejection to `rejected_topic`, counted in `by_reader`); 1."""
    key, value, names = described(raw)
    topic_of_record, headers = topic, None
    if raw.rejection is not None and rejected_topic is not None:
        value, headers = reader_rejection(raw, names)
        topic_of_record = rejected_topic
        if by_reader is not None:
            by_reader[raw.rejection[0].value] += 1
        log.info("%s rejected by the reader (%s): sent to %s", names.get("url") or raw.origin,
                 raw.rejection[0].value, rejected_topic)

    index = counts[0]
    counts[0] += 1
    unacked[index] = raw.origin + (f" ({names['url']})" if names.get("url") else "")

    def done() -> None:
        unacked.pop(index, None)
        counts[1] += 1

    def delivered(err: KafkaError | None, _: Message, names: dict[str, Any] = names, key: bytes | None = key,
                  size: int = len(value)) -> None:
        if err is not None:
            failed.append((names, key, size, err))
        else:
            done()

    try:
        _produce(producer, topic_of_record, key, value, delivered, headers)
    except KafkaException as err:  # over the client's own limit (MAX_RECORD_BYTES)
        if err.args[0].code() not in SIZE_ERRORS:
            raise
        failed.append((names, key, len(value), err.args[0]))
        done()  # handled: its stub goes to the rejected topic
    return 1


def _finish(producer: Producer, topic: str, rejected_topic: str | None, refused: list[dict[str, Any]] | None,
            failed: list[tuple[dict[str, Any], bytes | None, int, KafkaError]], sent: int) -> int:
    """Send the stubs of records too large for the broker; raise FeedFailed naming what reached no topic."""
    too_large = [f for f in failed if f[3].code() in SIZE_ERRORS and rejected_topic is not None]
    lost = [f for f in failed if f not in too_large]
    stub_failures: list[KafkaError] = []

    def stub_delivered(error: KafkaError | None, _: Message) -> None:
        if error is not None:
            stub_failures.append(error)

    for names, key, size, refusal in too_large:
        stub = {**{k: v for k, v in names.items() if k != "origin"}, "bytes": size, "topic": topic}
        detail = f"the broker refused the {size}-byte record for {topic}: {refusal.str()}"
        headers = outcome_headers(Rejection(Reason.TOO_LARGE_FOR_BROKER.value, detail, names["origin"]).as_dict(),
                                  f"feed:{names['origin']}")
        log.warning("%s (%s) is too large for the broker: sent to %s as %s", names.get("url") or names["origin"],
                    size, rejected_topic, Reason.TOO_LARGE_FOR_BROKER.value)
        _produce(producer, cast(str, rejected_topic), key, orjson.dumps(stub), stub_delivered, headers)
        if refused is not None:
            refused.append(stub)
    _flush(producer, rejected_topic or topic)
    if lost or stub_failures:
        named = ", ".join(f"{n.get('url') or n['origin']} ({size} bytes: {err.str()})" for n, _, size, err in lost[:5])
        raise FeedFailed(f"{len(lost) + len(stub_failures)} of {sent} records reached no topic"
                         + (f": {named}" if named else f": {stub_failures[0].str()}")
                         + ("" if rejected_topic else "; records too large for the broker go to the rejected "
                            "topic only when one is given"))
    return sent


# the fields a reader's rejection keeps besides the record's names (`readers._response`, `readers._revisit`)
_READER_DETAILS = ("http_status", "refers_to", "refers_to_url", "refers_to_date")


def reader_rejection(raw: RawRecord, names: dict[str, Any]) -> tuple[bytes, list[tuple[str, bytes]]]:
    """The rejected output of a record its reader could not take (what names it, and why) and its headers."""
    assert raw.rejection is not None
    reason, detail = raw.rejection
    record = {k: v for k, v in names.items() if k != "origin"}
    if raw.fields is not None:  # what the reader knew of why: a response's status, the capture a revisit repeats
        record.update({k: raw.fields[k] for k in _READER_DETAILS if k in raw.fields})
    dedup = Rejection(reason.value, detail, f"feed:{raw.origin}").as_dict()
    return orjson.dumps({**record, "dedup": dedup}), outcome_headers(dedup, f"feed:{raw.origin}")


def _produce(producer: Producer, topic: str, key: bytes | None, value: bytes, on_delivery: Any,
             headers: list[tuple[str, bytes]] | None = None) -> None:
    while True:
        try:
            producer.produce(topic, value=value, key=key, on_delivery=on_delivery,
                             headers=cast("list[tuple[str, str | bytes | None]]", headers or []))
            break
        except BufferError:
            producer.poll(0.1)
    producer.poll(0)


def _flush(producer: Producer, topic: str) -> None:
    remaining = producer.flush(60)
    if remaining:
        raise FeedFailed(f"{remaining} messages were not delivered to {topic} within 60 s: is the broker up?")
