"""What the worker writes to Kafka.

Verdicts, dead letters and cluster events, with their headers and metrics, whichever stage decided
them.

What a message carries. A verdict (unique/duplicates) is the input record passed through whole,
content included, with its `dedup` object; a dead letter (rejected) is the input's original
bytes with the reason in headers. Nothing is ever dropped for its size: an output over the
producer's limit or its topic's (`record_size.RecordLimits`: checked before it is produced, so the
transaction does not fail), or one the broker refused with MSG_SIZE_TOO_LARGE in an earlier
attempt of the batch (`learn_refusals`), is sent instead as a rejection with reason
`too_large_for_broker` whose value is a small JSON stub: the page's id, url, the size in bytes,
the topic it was meant for and, for a verdict, its `dedup` object; a dead letter too large to
carry keeps its own reason, and its stub says the original was omitted. A refusal the limits did
not foresee (a topic whose limit could not be read, or was lowered since) costs the batch one
failed transaction, after which the worker knows that output and sends the stub.

Light outputs. Every input also has one message on the verdicts topic (`clusters.verdict_line`:
the verdict without the page body, keyed by page id, with the same headers), and every judged
page one on the compacted cluster view (`clusters.view_event`, key = page id; a late match under
a key of its own), in the same transaction as its verdict. A dead letter whose original is a JSON
object carries its `dedup` in the value too (as rejected.jsonl does), in place of any `dedup` field
the sender gave it (which would pass for ours), except our own stub of a verdict too large for the
broker, whose `dedup` is the page's verdict. A light output over its topic's limit (a rejected
record's huge url) goes as its stub, without the fields an input makes of any size, with
`omitted_bytes` (`send_fitting`: every output has a last form, and one that fits in none is left
out, so no refusal is learnt for ever in vain).

Headers. Every output of a page (verdict, dead letter, stub) carries the input record's Kafka
headers (a crawler's trace or tenant ids) after our own `dedup.*` headers; an input header in
the `dedup.` namespace is dropped, so ours are never overwritten or shadowed. The light outputs
carry the input's headers and key only up to `record.passed.PASSED_BYTES` (64 KiB); a verdict or
dead letter carries them whole where it fits with them, else without those over the bound. What
is left out is said: `dedup.headers_omitted` / `dedup.key_omitted` headers, `headers_omitted` /
`key_omitted` fields (its bytes).

Counts (stats and the accounting metrics) are staged per batch and applied by `commit`, so a
batch that is aborted and consumed again counts once.
"""

from __future__ import annotations

import logging
from collections import Counter as Tally
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

import orjson
from confluent_kafka import KafkaError, KafkaException, Message, Producer

from streamdedup.clusters import page_fields, verdict_line, view_event, view_key
from streamdedup.outputs.kafka_contract import Topics, WorkerMetrics
from streamdedup.outputs.record_line import record_json
from streamdedup.outputs.record_size import Headers, RecordLimits, record_size
from streamdedup.record.json_value import json_object
from streamdedup.record.page import first_field
from streamdedup.record.passed import PASSED_BYTES, bounded_headers, bounded_key
from streamdedup.record.rejection import Reason
from streamdedup.verdict.contract import Rejection
from streamdedup.verdict.contract import headers as dedup_headers

log = logging.getLogger(__name__)

# delivery errors that mean "this record will never fit", as opposed to a broker that is away
SIZE_ERRORS = frozenset({KafkaError.MSG_SIZE_TOO_LARGE, KafkaError.RECORD_LIST_TOO_LARGE})

Refusal = tuple[str, bytes | None, int]  # topic, key, record size: deterministic for a re-read batch
Form = tuple[bytes | None, bytes | None, Headers | None]  # an output's key, value and headers
OURS = "dedup."  # the header namespace of our own headers
# the light outputs' fields an input may make of any size, left out of their stub form
UNBOUNDED_FIELDS = frozenset({"url", "fetch_time", "fetched_at", "key"})


def with_input_headers(ours: list[tuple[str, bytes]], passed: Headers | None) -> list[tuple[str, bytes | None]]:
    """Our headers, then the input's except any in our namespace."""
    return [*ours, *((name, value) for name, value in passed or [] if not name.startswith(OURS))]


def light_headers(ours: list[tuple[str, bytes]], passed: Headers | None, omitted: int = 0,
                  bound: int = PASSED_BYTES) -> list[tuple[str, bytes | None]]:
    """Our headers, then the input's if they hold at most `bound` bytes in all (`record.passed`).

    Over it, or where an earlier step left them out (`omitted`: their size), `dedup.headers_omitted`
    says how many bytes were left out instead."""
    kept, omitted = bounded_headers(passed, omitted, bound)
    if omitted:
        ours = [*ours, ("dedup.headers_omitted", str(omitted).encode())]
    return with_input_headers(ours, kept)


def whole_headers(ours: list[tuple[str, bytes]], passed: Headers | None,
                  omitted: int = 0) -> list[tuple[str, bytes | None]]:
    """Our headers, then the input's whole; where an earlier step left them out (`omitted`: their size), said so."""
    return light_headers(ours, passed, omitted) if omitted else with_input_headers(ours, passed)


def header_forms(ours: list[tuple[str, bytes]], passed: Headers | None,
                 omitted: int = 0) -> list[list[tuple[str, bytes | None]]]:
    """A verdict's or dead letter's headers, whole to lightest, in the order they are tried before its stub.

    The input's headers whole (`whole_headers`), then, where they are over `record.passed.PASSED_BYTES`, left out
    (`light_headers`). The worker sends the first form that fits (`Outputs.verdict`, `_dead_letter_forms`); the Faust
    app the next one after the broker refused a form (`runtime.faust_outputs.after_refusal`)."""
    whole = whole_headers(ours, passed, omitted)
    light = light_headers(ours, passed, omitted)
    return [whole] if light == whole else [whole, light]


@dataclass
class WorkerStats:
    """A worker's running counts: messages consumed and produced, pages decided by status, batches."""

    consumed: int = 0  # messages of every topic the worker reads
    decided: int = 0  # pages given their final outcome (verdict or rejection)
    statuses: dict[str, int] = field(default_factory=lambda: defaultdict(int))  # decided, by status
    produced: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    inputs: dict[str, int] = field(default_factory=lambda: defaultdict(int))  # consumed, by topic
    refused: int = 0  # outputs the broker refused as too large, sent as too_large_for_broker
    replayed: int = 0
    batches: int = 0
    aborted: int = 0


class Outputs:
    """What the worker produces for its pages, within each topic's limit (the module docstring)."""

    def __init__(self, producer: Producer, topics: Topics, metrics: WorkerMetrics, stats: WorkerStats,
                 limits: RecordLimits | None = None) -> None:
        self.producer = producer
        self.topics = topics
        self.metrics = metrics
        self.stats = stats
        self.limits = limits or RecordLimits()  # the producer's and each topic's (runtime.topic_limits)
        self.refused: set[Refusal] = set()  # outputs the broker refused: sent as stubs from now on
        self.failures: list[tuple[Refusal, KafkaError]] = []  # delivery errors of the current batch
        self._counts: Tally[tuple[str, ...]] = Tally()  # staged until the batch commits
        self._on_commit: list[Callable[[], None]] = []  # other metrics, staged likewise

    # -- sending --------------------------------------------------------------------------------
    def fits(self, topic: str, key: bytes | None, value: bytes | None, headers: Headers | None = None) -> bool:
        """False if the output is over the producer's limit or its topic's, or the broker refused it before."""
        return ((topic, key, record_size(key, value, headers)) not in self.refused
                and self.limits.fits(topic, key, value, headers))

    def send_fitting(self, topic: str, forms: Iterable[Form]) -> Form | None:
        """The first of an output's forms, whole to smallest, that fits its topic: sent, and returned.

        None: none fits (a topic whose limit is under a few kB), and the output is left out, logged
        and counted as refused, rather than refused by the broker on every attempt."""
        size = 0
        for key, value, headers in forms:
            if self.fits(topic, key, value, headers):
                self.send(topic, key, value, headers)
                return key, value, headers
            size = size or record_size(key, value, headers)
        log.error("a %d-byte output for %s is more than the broker takes for that topic even in its smallest "
                  "form: it is left out", size, topic)
        self._counts[("refused", topic)] += 1
        return None

    def send(self, topic: str, key: bytes | None, value: bytes | None,
             headers: Headers | None = None, partition: int | None = None) -> None:
        """Produce one record in the batch's transaction, waiting while the producer's queue is full."""
        kwargs: dict[str, Any] = {} if partition is None else {"partition": partition}
        refusal: Refusal = (topic, key, record_size(key, value, headers))

        def delivered(err: KafkaError | None, _: Message) -> None:
            if err is not None:
                self.failures.append((refusal, err))

        while True:
            try:
                self.producer.produce(topic, value=value, key=key, on_delivery=delivered, **kwargs,
                                      headers=cast("list[tuple[str, str | bytes | None]]", headers or []))
                break
            except BufferError:
                self.producer.poll(0.1)
            except KafkaException as err:  # over the producer's limit, which `fits` did not foresee:
                error = err.args[0] if err.args else None  # the batch fails now, its retry sends the stub
                if isinstance(error, KafkaError) and error.code() in SIZE_ERRORS:
                    self.failures.append((refusal, error))
                raise
        self.producer.poll(0)
        status = next((data.decode() for name, data in headers or [] if name == "dedup.status" and data),
                      "event" if topic in (self.topics.clusters, self.topics.cluster_view) else "internal")
        self._counts[("produced", topic, status)] += 1

    def rejected(self, key: bytes | None, original: bytes | None, reason: str, detail: str, source: str,
                 passed: Headers | None = None, record: Mapping[str, Any] | None = None,
                 page_id: str | None = None, carries_verdict: bool = False, headers_omitted: int = 0) -> None:
        """Dead letter: the original bytes with the reason in headers, and its verdict line.

        Dead letter: the original bytes (a JSON object: with our `dedup`, in place of one it had), the
        reason in headers (a stub if the original does not fit); and its verdict line (`record`: its
        fields, if known; `page_id`: the page's id where it is known, as for a repeated id;
        `headers_omitted`: the size of the input's headers an earlier step left out).
        `carries_verdict`: the original is `too_large`'s stub, whose `dedup` is the page's verdict."""
        rejection = Rejection(reason, detail, source, page_id).as_dict()
        ours = dedup_headers(rejection, source)
        parsed = json_object(original)
        self.verdict_line(key, record or parsed or {}, rejection, ours, passed, headers_omitted)
        if parsed is not None and not carries_verdict:  # a sender's own `dedup` would pass for ours
            original = orjson.dumps({**parsed, "dedup": rejection})
        sent = self.send_fitting(self.topics.rejected,
                                 _dead_letter_forms(key, original, self.topics.rejected, ours, passed, headers_omitted))
        if sent is not None and sent[1] is not original:  # its stub
            self._counts[("refused", self.topics.rejected)] += 1
        self._counts[("page", "rejected", reason)] += 1

    def verdict(self, record: dict[str, Any], dedup: dict[str, Any], source: str = "",
                passed: Headers | None = None, input_key: bytes | None = None, line: bytes | None = None,
                headers_omitted: int = 0, key_omitted: int = 0) -> None:
        """A unique or duplicate page.

        The record with its `dedup` object (spliced into `line`, the input's text, where the record
        was decoded from it: `record_line.record_json`), and cluster events (`input_key`: the input
        message's key, which they carry). The record goes with the input's headers whole where it
        fits with them, else with them left out (`light_headers`), else as a `too_large` stub;
        `headers_omitted` and `key_omitted`: the bytes of the input's headers and key an earlier
        step left out (the global topology's page header)."""
        status = dedup["status"]
        ours = dedup_headers(dedup, source)
        target = self.topics.unique if status == "unique" else self.topics.duplicates
        key = dedup["id"].encode("utf-8", "surrogatepass")
        value = record_json(record, dedup, line)
        headers = next((h for h in header_forms(ours, passed, headers_omitted) if self.fits(target, key, value, h)),
                       None)
        if headers is not None:
            self.send(target, key, value, headers)
            self._counts[("page", status, "")] += 1
            self.verdict_line(key, record, dedup, ours, passed, headers_omitted)
        else:
            self.too_large(key, target, len(value), record, source, dedup, passed, headers_omitted)
        for event in cluster_events(dedup, record, input_key, key_omitted):
            self.cluster_event(event)
        self.send_event(self.topics.cluster_view, key, view_event(dedup, *page_fields(record)))

    def verdict_line(self, key: bytes | None, record: Mapping[str, Any], dedup: Mapping[str, Any],
                     ours: list[tuple[str, bytes]], passed: Headers | None, headers_omitted: int = 0) -> None:
        """The verdicts topic's line of a record (`clusters.verdict_line`), with our headers and the input's.

        The input's headers and key go in it only up to `record.passed.PASSED_BYTES`. A line still
        over the topic's limit (a rejected record's huge url) goes as its stub: id and `dedup`,
        with `omitted_bytes`, the line's size."""
        value = orjson.dumps(verdict_line(record, dedup, passed, headers_omitted=headers_omitted))
        short_key, key_omitted = bounded_key(key)
        if key_omitted:  # (a rejected record's key: a page's verdicts are keyed by its bounded id)
            ours = [*ours, ("dedup.key_omitted", str(key_omitted).encode())]

        def forms() -> Iterator[Form]:
            headers = light_headers(ours, passed, headers_omitted)
            yield short_key, value, headers
            stub = {"id": dedup.get("id"), "url": None, "fetch_time": None, "omitted_bytes": len(value),
                    "dedup": dedup}
            yield short_key, orjson.dumps(stub), headers
            yield short_key, orjson.dumps(stub), light_headers(ours, passed, headers_omitted, bound=0)

        self.send_fitting(self.topics.verdicts, forms())

    def too_large(self, key: bytes | None, meant_for: str, size: int, record: Any, source: str,
                  dedup: dict[str, Any] | None = None, passed: Headers | None = None,
                  headers_omitted: int = 0) -> None:
        """A page whose output does not fit the broker.

        A rejection carrying its id, url and size (and its verdict, if it had one), not its content."""
        fields = record if isinstance(record, dict) else {}
        stub: dict[str, Any] = {"id": (dedup or {}).get("id", fields.get("id")), "url": fields.get("url"),
                                "bytes": size, "topic": meant_for}
        if dedup is not None:
            stub["dedup"] = dedup
        detail = f"the output for {meant_for} is {size} bytes, more than the broker takes for that topic"
        log.warning("a %d-byte output for %s is more than the broker takes for that topic: it goes to %s as %s",
                    size, meant_for, self.topics.rejected, Reason.TOO_LARGE_FOR_BROKER.value)
        self._counts[("refused", meant_for)] += 1
        self.rejected(key, orjson.dumps(stub), Reason.TOO_LARGE_FOR_BROKER.value, detail, source, passed, fields,
                      carries_verdict=dedup is not None, headers_omitted=headers_omitted)

    def cluster_event(self, event: dict[str, Any]) -> None:
        """Send a cluster event to the clusters topic, and a late one to the cluster view too."""
        self.send_event(self.topics.clusters, event["cluster_id"].encode(), event)
        if event["type"] in ("late_match", "late_related") or event.get("late"):  # the others go with the verdict
            self.send_event(self.topics.cluster_view, view_key(event), event)

    def send_event(self, topic: str, key: bytes, event: Mapping[str, Any]) -> None:
        """A cluster event; over the topic's limit, as its stub (`event_stub`)."""
        value = orjson.dumps(event)
        self.send_fitting(topic, ((key, data, None) for data in (value, orjson.dumps(event_stub(event, len(value))))))

    # -- the batch's outcome ------------------------------------------------------------------
    def learn_refusals(self) -> list[Refusal]:
        """Remember, after a failed batch, the largest output of each topic the broker refused for its size.

        The batch consumed again sends a stub for it. librdkafka fails every record of the
        transaction with the size error, the outputs that fit as well as the one that did not, so
        only the largest of each topic is learnt: the one over the limit, if one output was. Should
        another be over it too, the next attempt fails on it and learns it; none that fits is sent
        as a stub (before: every output of the transaction was). Where the topic's limit is known
        (`runtime.topic_limits`, read again after such a failure), `fits` stubs them all at once.
        Every output of an input's data is sent through `fits` (`send_fitting`; the global
        topology's page header and index requests by their own checks), so each refusal learnt
        makes the next attempt send a smaller form. Clears the batch's delivery errors."""
        largest: dict[str, Refusal] = {}
        for refusal, err in self.failures:
            if err.code() in SIZE_ERRORS and refusal not in self.refused:
                if refusal[0] not in largest or refusal[2] > largest[refusal[0]][2]:
                    largest[refusal[0]] = refusal
        learned = list(largest.values())
        for topic, _, size in learned:
            log.warning("the broker refused a transaction for its size: its largest record for %s (%d bytes) "
                        "goes again as its %s stub, the others whole", topic, size, Reason.TOO_LARGE_FOR_BROKER.value)
        self.refused.update(learned)
        self.failures.clear()
        return learned

    def first_failure(self) -> KafkaError | None:
        """The first delivery error of the batch so far (None: every record delivered)."""
        return self.failures[0][1] if self.failures else None

    def on_commit(self, update: Callable[[], None]) -> None:
        """A metric update that holds only if the batch commits."""
        self._on_commit.append(update)

    def commit(self) -> None:
        """The batch is in Kafka: apply its counts to the stats and metrics."""
        for update in self._on_commit:
            update()
        for key, n in self._counts.items():
            if key[0] == "produced":
                self.stats.produced[key[1]] += n
                self.metrics.outputs.labels(key[1], key[2]).inc(n)
            elif key[0] == "refused":
                self.stats.refused += n
                self.metrics.refused.labels(key[1]).inc(n)
            else:
                _, status, reason = key
                self.stats.decided += n
                self.stats.statuses[status] += n
                self.metrics.pages.labels(status).inc(n)
                if reason:
                    self.metrics.rejected.labels(reason).inc(n)
        self.discard()

    def discard(self) -> None:
        """Forget the batch's counts, commit actions and failures (it was aborted)."""
        self._counts.clear()
        self._on_commit.clear()
        self.failures.clear()


def _dead_letter_forms(key: bytes | None, original: bytes | None, topic: str, ours: list[tuple[str, bytes]],
                       passed: Headers | None, headers_omitted: int) -> Iterator[Form]:
    """A dead letter's forms, whole to smallest.

    The original with the input's key and headers; with those over the bound left out (`light_headers`,
    `record.passed`); a stub of the original with them whole; with them left out over the bound;
    the stub with our headers alone."""
    short_key, key_omitted = bounded_key(key)
    key_note = [("dedup.key_omitted", str(key_omitted).encode())] if key_omitted else []
    yield from ((key, original, headers) for headers in header_forms(ours, passed, headers_omitted))
    if key_omitted:
        yield short_key, original, light_headers([*ours, *key_note], passed, headers_omitted)
    size = len(original or b"")
    stub = orjson.dumps({"bytes": size, "omitted": "original", "topic": topic})
    stubbed = [*ours, ("dedup.original_bytes", str(size).encode())]
    yield key, stub, whole_headers(stubbed, passed, headers_omitted)
    yield short_key, stub, light_headers([*stubbed, *key_note], passed, headers_omitted)
    yield short_key, stub, light_headers([*stubbed, *key_note], passed, headers_omitted, bound=0)


def event_stub(event: Mapping[str, Any], size: int) -> dict[str, Any]:
    """A cluster event without the fields an input may make of any size (url, fetch time, key).

    What a story's fold needs (its type, page, cluster, links) stays; `omitted_bytes` is the whole
    event's size."""
    return {**{name: value for name, value in event.items() if name not in UNBOUNDED_FIELDS}, "omitted_bytes": size}


def cluster_events(dedup: dict[str, Any], record: Any = None, key: bytes | None = None,
                   key_omitted: int = 0) -> list[dict[str, Any]]:
    """For the news-clustering feed: a cluster was created, a page joined one, clusters merged.

    Each event carries the page's url and fetch time as its record gives them (None where it has
    none) and its input message's key (as text, undecodable bytes escaped; None: no key; over
    `record.passed.PASSED_BYTES`, None and `key_omitted`, its size: also where an earlier step left
    it out), so a consumer needs no other topic to list a story's pages."""
    fields = record if isinstance(record, Mapping) else {}
    key, key_omitted = bounded_key(key, key_omitted)
    base = {"page_id": dedup["id"], "cluster_id": dedup["cluster_id"], "url": first_field(fields, "url"),
            "fetched_at": first_field(fields, "fetched_at"),
            "key": None if key is None else key.decode("utf-8", "backslashreplace"),
            **({"key_omitted": key_omitted} if key_omitted else {})}
    if dedup["status"] == "unique" and dedup["cluster_id"] == dedup["id"]:
        events = [{"type": "created", **base}]
        if dedup.get("supersedes"):  # whole pages of stories it may not bridge (a digest): named, not joined
            events[0]["supersedes"] = dedup["supersedes"]
    elif dedup["status"] == "unique":  # kept, and joins the story of the pages it supersedes
        events = [{"type": "joined", **base, "duplicate_of": None, "supersedes": dedup.get("supersedes", [])}]
    else:
        events = [{"type": "joined", **base, "duplicate_of": dedup["duplicate_of"],
                   "similarity": dedup["similarity"], "method": dedup["method"]}]
    if dedup.get("related_to"):  # a page kept, sharing much with these pages, not all: related stories
        events[0]["related_to"] = dedup["related_to"]
    if dedup.get("arrival"):  # an undated page's place in its input: orders a story's undated fetches
        events[0]["arrival"] = dedup["arrival"]
    if dedup.get("merged_clusters"):
        events.append({"type": "merged", **base, "merged": dedup["merged_clusters"]})
    return events
