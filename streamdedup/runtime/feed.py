"""`streamdedup feed`: JSON Lines or WARC pages into a Kafka topic (idempotent producer).

JSON lines are sent byte for byte (a bad line must reach the worker's dead-letter output as it
was); WARC records become JSON pages. Messages are keyed by the page's site, so a site's pages
share a partition."""

from __future__ import annotations

import base64
import time
from typing import Iterable

import orjson
from confluent_kafka import Producer

from streamdedup.record.page import site_of
from streamdedup.record.readers import RawRecord


def message_of(raw: RawRecord) -> tuple[bytes | None, bytes]:
    if raw.fields is not None:
        fields = dict(raw.fields)
        content = fields.pop("content", None)
        if isinstance(content, bytes):
            fields["content_base64"] = base64.b64encode(content).decode("ascii")
        elif content is not None:
            fields["content"] = content
        value = orjson.dumps(fields)
        url = fields.get("url")
    else:
        value = raw.data or b""
        try:
            parsed = orjson.loads(value)
            url = parsed.get("url") if isinstance(parsed, dict) else None
        except orjson.JSONDecodeError:
            url = None
    key = site_of(url).encode() if isinstance(url, str) and url else None
    return key, value


def feed(records: Iterable[RawRecord], client: dict, topic: str, rate: float | None = None) -> int:
    producer = Producer({**client, "enable.idempotence": True, "linger.ms": 10, "message.max.bytes": 104_857_600})
    sent = 0
    started = time.monotonic()
    for raw in records:
        key, value = message_of(raw)
        while True:
            try:
                producer.produce(topic, value=value, key=key)
                break
            except BufferError:
                producer.poll(0.1)
        producer.poll(0)
        sent += 1
        if rate:
            ahead = sent / rate - (time.monotonic() - started)
            if ahead > 0:
                time.sleep(ahead)
    remaining = producer.flush(60)
    if remaining:
        raise RuntimeError(f"{remaining} messages were not delivered to {topic}")
    return sent
