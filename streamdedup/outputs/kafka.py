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
broker, whose `dedup` is the page's verdict.

Headers. Every output of a page (verdict, dead letter, stub) carries the input record's Kafka
headers (a crawler's trace or tenant ids) after our own `dedup.*` headers; an input header in
the `dedup.` namespace is dropped, so ours are never overwritten or shadowed.

Counts (stats and the accounting metrics) are staged per batch and applied by `commit`, so a
batch that is aborted and consumed again counts once.
"""

from __future__ import annotations

import logging
from collections import Counter as Tally
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

import orjson
from confluent_kafka import KafkaError, KafkaException, Message, Producer

from streamdedup.clusters import page_fields, verdict_line, view_event, view_key
from streamdedup.outputs.kafka_contract import Topics, WorkerMetrics
from streamdedup.outputs.record_line import record_json
from streamdedup.outputs.record_size import Headers, RecordLimits
from streamdedup.record.page import first_field
from streamdedup.record.rejection import Reason
from streamdedup.verdict.contract import Rejection
from streamdedup.verdict.contract import headers as dedup_headers

log = logging.getLogger(__name__)

# delivery errors that mean "this record will never fit", as opposed to a broker that is away
SIZE_ERRORS = frozenset({KafkaError.MSG_SIZE_TOO_LARGE, KafkaError.RECORD_LIST_TOO_LARGE})

Refusal = tuple[str, bytes | None, int]  # topic, key, value size: deterministic for a re-read batch
OURS = "dedup."  # the header namespace of our own headers


def with_input_headers(ours: list[tuple[str, bytes]], passed: Headers | None) -> list[tuple[str, bytes | None]]:
    """Our headers, then the input's except any in our namespace."""
    return [*ours, *((name, value) for name, value in passed or [] if not name.startswith(OURS))]


@dataclass
class WorkerStats:
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
        return ((topic, key, len(value or b"")) not in self.refused
                and self.limits.fits(topic, key, value, headers))

    def send(self, topic: str, key: bytes | None, value: bytes | None,
             headers: Headers | None = None, partition: int | None = None) -> None:
        kwargs: dict[str, Any] = {} if partition is None else {"partition": partition}
        refusal: Refusal = (topic, key, len(value or b""))

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
                 page_id: str | None = None, carries_verdict: bool = False) -> None:
        """Dead letter: the original bytes with the reason in headers, and its verdict line.

        Dead letter: the original bytes (a JSON object: with our `dedup`, in place of one it had), the
        reason in headers (a stub if the original does not fit); and its verdict line (`record`: its
        fields, if known; `page_id`: the page's id where it is known, as for a repeated id).
        `carries_verdict`: the original is `too_large`'s stub, whose `dedup` is the page's verdict."""
        rejection = Rejection(reason, detail, source, page_id).as_dict()
        ours = dedup_headers(rejection, source)
        parsed = _json_object(original)
        record = record or parsed
        self.send(self.topics.verdicts, key, orjson.dumps(verdict_line(record or {}, rejection, passed)),
                  with_input_headers(ours, passed))
        if parsed is not None and not carries_verdict:  # a sender's own `dedup` would pass for ours
            original = orjson.dumps({**parsed, "dedup": rejection})
        headers = with_input_headers(ours, passed)
        if not self.fits(self.topics.rejected, key, original, headers):
            size = len(original or b"")
            original = orjson.dumps({"bytes": size, "omitted": "original", "topic": self.topics.rejected})
            ours.append(("dedup.original_bytes", str(size).encode()))
            headers = with_input_headers(ours, passed)
            self._counts[("refused", self.topics.rejected)] += 1
        self.send(self.topics.rejected, key, original, headers)
        self._counts[("page", "rejected", reason)] += 1

    def verdict(self, record: dict[str, Any], dedup: dict[str, Any], source: str = "",
                passed: Headers | None = None, input_key: bytes | None = None, line: bytes | None = None) -> None:
        """A unique or duplicate page.

        The record with its `dedup` object (spliced into `line`, the input's text, where the record
        was decoded from it: `record_line.record_json`), and cluster events (`input_key`: the input
        message's key, which they carry)."""
        status = dedup["status"]
        headers = with_input_headers(dedup_headers(dedup, source), passed)
        target = self.topics.unique if status == "unique" else self.topics.duplicates
        key = dedup["id"].encode("utf-8", "surrogatepass")
        value = record_json(record, dedup, line)
        if self.fits(target, key, value, headers):
            self.send(target, key, value, headers)
            self._counts[("page", status, "")] += 1
            self.send(self.topics.verdicts, key, orjson.dumps(verdict_line(record, dedup, passed)), headers)
        else:
            self.too_large(key, target, len(value), record, source, dedup, passed)
        for event in cluster_events(dedup, record, input_key):
            self.cluster_event(event)
        view = view_event(dedup, *page_fields(record))
        self.send(self.topics.cluster_view, key, orjson.dumps(view))

    def too_large(self, key: bytes | None, meant_for: str, size: int, record: Any, source: str,
                  dedup: dict[str, Any] | None = None, passed: Headers | None = None) -> None:
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
                      carries_verdict=dedup is not None)

    def cluster_event(self, event: dict[str, Any]) -> None:
        self.send(self.topics.clusters, event["cluster_id"].encode(), orjson.dumps(event))
        if event["type"] == "late_match":  # the view's other events go with the page's verdict
            self.send(self.topics.cluster_view, view_key(event), orjson.dumps(event))

    # -- the batch's outcome ------------------------------------------------------------------
    def learn_refusals(self) -> list[Refusal]:
        """Remember, after a failed batch, the largest output of each topic the broker refused for its size.

        The batch consumed again sends a stub for it. librdkafka fails every record of the
        transaction with the size error, the outputs that fit as well as the one that did not, so
        only the largest of each topic is learnt: the one over the limit, if one output was. Should
        another be over it too, the next attempt fails on it and learns it; none that fits is sent
        as a stub (before: every output of the transaction was). Where the topic's limit is known
        (`runtime.topic_limits`, read again after such a failure), `fits` stubs them all at once.
        Clears the batch's delivery errors."""
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
        self._counts.clear()
        self._on_commit.clear()
        self.failures.clear()


def _json_object(data: bytes | None) -> dict[str, Any] | None:
    """`data` as a JSON object, or None (not JSON, or not an object)."""
    try:
        value = orjson.loads(data or b"")
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def cluster_events(dedup: dict[str, Any], record: Any = None, key: bytes | None = None) -> list[dict[str, Any]]:
    """For the news-clustering feed: a cluster was created, a page joined one, clusters merged.

    Each event carries the page's url and fetch time as its record gives them (None where it has
    none) and its input message's key (as text, undecodable bytes escaped; None: no key), so a
    consumer needs no other topic to list a story's pages."""
    fields = record if isinstance(record, Mapping) else {}
    base = {"page_id": dedup["id"], "cluster_id": dedup["cluster_id"], "url": first_field(fields, "url"),
            "fetched_at": first_field(fields, "fetched_at"),
            "key": None if key is None else key.decode("utf-8", "backslashreplace")}
    if dedup["status"] == "unique" and dedup["cluster_id"] == dedup["id"]:
        events = [{"type": "created", **base}]
        if dedup.get("related_to"):  # shares much with these pages, not all: its own story
            events[0]["related_to"] = dedup["related_to"]
    elif dedup["status"] == "unique":  # kept, and joins the story of the pages it supersedes
        events = [{"type": "joined", **base, "duplicate_of": None, "supersedes": dedup.get("supersedes", [])}]
    else:
        events = [{"type": "joined", **base, "duplicate_of": dedup["duplicate_of"],
                   "similarity": dedup["similarity"], "method": dedup["method"]}]
    if dedup.get("merged_clusters"):
        events.append({"type": "merged", **base, "merged": dedup["merged_clusters"]})
    return events
