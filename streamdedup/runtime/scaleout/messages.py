"""The wire format between the scale-out stages (Kafka values), in one place.

An index request carries the page's whole signature record (so an index partition can verify a
candidate by every method, not only the one whose key brought it) and the keys that live in that
partition. Headers and answers are JSON: they are small and worth reading in a topic browser.
"""

from __future__ import annotations

import base64
import math
import struct
from dataclasses import dataclass, replace
from typing import Any

import orjson

from streamdedup.record.passed import bounded_headers, bounded_key
from streamdedup.runtime.scaleout.routing import ORDER_BYTES
from streamdedup.store.layout import DocRecord
from streamdedup.verdict.engine import bridges
from streamdedup.verdict.relations import DUPLICATE, RELATED

KIND_HEADER = "sd.kind"
PAGE, ANSWER = b"page", b"answer"
# final verdicts: watermarks (pages.index: an input partition's; pages.parts: an index partition's),
# supplementary answers ("an earlier page reached this partition after you") and release markers
WATERMARK, SUPPLEMENT, RELEASE = b"wm", b"supplement", b"release"
# between parts partitions: "which cluster did this earlier page join?" and its answer
ROOT_ASK, ROOT = b"root_ask", b"root"
# a watermark above every order: an idle input partition promises nothing below it
INFINITE = b"\xff" * (ORDER_BYTES + 1)
_LEN = struct.Struct("<I")
_KEY = struct.Struct("<BH")


@dataclass(frozen=True)
class IndexRequest:
    """"File this page under these keys of your partition, and tell me who was here before."""

    order: bytes
    doc: DocRecord  # page id, event time, site, encoded signatures (seq and cluster unused)
    keys: dict[int, list[bytes]]  # method tag -> the page's keys that live in this partition
    trusted_time: bool = True  # doc.event_ms is the page's own fetch time (store/retention.py)
    template_known: bool = False  # the page's site template was known: own-site candidates meet the one policy
    # what its signatures were made with (`registry.signature_identity`, 8 bytes); b"": a request
    # from before 2026-12-02, which named none
    made_by: bytes = b""
    # the verdict settings of the worker that made it (`config.verdict_identity`, 8 bytes, after
    # `made_by`, and only after one); b"": a request from before it was carried, or made without one
    judged_with: bytes = b""
    # the page's encoded word pairs of the lines its site showed before (`wordpairs.with_shown_lines`),
    # which its record does not keep (after `judged_with`, and only after one); b"": none
    shown: bytes = b""
    # its main text was cut (`Texts.main_cut`): it duplicates none of its matches but a whole copy
    # (`engine.as_cut`), so its root here is the one its gather names (a bit of the flags byte; older
    # requests: not cut)
    text_cut: bool = False
    # its lines one earlier page of its site showed, by that page (`one_page_lines.encode_one_page`), after
    # `shown`, which a bit of the flags byte then says is preceded by its length; b"": none (older requests)
    one_page: bytes = b""

    def encode(self) -> bytes:
        """The request as bytes: its order, page record and keys by method tag, then its flags and ids."""
        doc = self.doc.encode()
        parts = [self.order, _LEN.pack(len(doc)), doc, _LEN.pack(sum(len(k) for k in self.keys.values()))]
        for tag, keys in sorted(self.keys.items()):
            for key in keys:
                parts.append(_KEY.pack(tag, len(key)))
                parts.append(key)
        one_page = bool(self.one_page) and len(self.made_by) == len(self.judged_with) == 8
        parts.append(bytes((self.trusted_time | self.template_known << 1 | self.text_cut << 2 | one_page << 3,)))
        parts.append(self.made_by)
        if len(self.made_by) == 8:  # the verdict id only after a signature id (as its decoding reads it)
            parts.append(self.judged_with)
            if one_page:
                parts += [_LEN.pack(len(self.shown)), self.shown, self.one_page]
            elif len(self.judged_with) == 8:
                parts.append(self.shown)
        return b"".join(parts)

    @classmethod
    def decode(cls, data: bytes) -> IndexRequest:
        """The request `encode` wrote (one from before the flags byte: its time trusted, no ids)."""
        order = data[:ORDER_BYTES]
        pos = ORDER_BYTES
        (size,) = _LEN.unpack_from(data, pos)
        pos += _LEN.size
        doc = DocRecord.decode(0, data[pos: pos + size])
        pos += size
        (count,) = _LEN.unpack_from(data, pos)
        pos += _LEN.size
        keys: dict[int, list[bytes]] = {}
        for _ in range(count):
            tag, length = _KEY.unpack_from(data, pos)
            pos += _KEY.size
            keys.setdefault(tag, []).append(data[pos: pos + length])
            pos += length
        flags = data[pos] if pos < len(data) else 1
        shown, one_page = data[pos + 17:], b""
        if flags & 8:  # `shown` by its length, then the lines one earlier page showed
            (size,) = _LEN.unpack_from(data, pos + 17)
            shown, one_page = data[pos + 21: pos + 21 + size], data[pos + 21 + size:]
        return cls(order, doc, keys, bool(flags & 1), bool(flags & 2), data[pos + 1: pos + 9], data[pos + 9: pos + 17],
                   shown, bool(flags & 4), one_page)


@dataclass(frozen=True)
class Match:
    """A page that passed the policy against the asking page, as one index partition saw it."""

    page_id: str
    order: bytes
    rule: str
    similarity: float
    root_order: bytes = b""  # earliest page of its chain known to that partition (earlier matches)
    root_id: str = ""
    # the asking page's share of text absent from the match and the match's absent from the asking
    # page, and what each is to the other (`relations.Judged`; messages written before directions: a
    # duplicate, nothing new)
    new_share: float = 0.0
    their_new_share: float = 0.0
    relation: str = DUPLICATE
    their_relation: str = DUPLICATE
    # the words of the asking page's longest paragraph absent from the match, and of the match's absent
    # from the asking page (`relations.Judged`; messages written before them: none)
    new_paragraph: int = 0
    their_new_paragraph: int = 0
    # the two pages are of one site (`engine.Candidate.same_site`; messages written before it: not)
    same_site: bool = False

    def as_list(self) -> list[Any]:
        """The match as the JSON list answers carry (orders in hex, similarities and shares rounded)."""
        return [self.page_id, self.order.hex(), self.rule, _rounded(self.similarity),
                self.root_order.hex(), self.root_id, _rounded(self.new_share), _rounded(self.their_new_share),
                self.relation, self.their_relation, self.new_paragraph, self.their_new_paragraph, int(self.same_site)]

    @classmethod
    def from_list(cls, item: list[Any]) -> Match:
        """The match `as_list` wrote (fields a message written before them lacks: their defaults)."""
        page_id, order, rule, similarity, root_order, root_id = item[:6]
        if len(item) < 10:
            return cls(page_id, bytes.fromhex(order), rule, _float(similarity), bytes.fromhex(root_order), root_id)
        paragraphs = (int(item[10]), int(item[11])) if len(item) >= 12 else (0, 0)
        return cls(page_id, bytes.fromhex(order), rule, _float(similarity), bytes.fromhex(root_order), root_id,
                   _float(item[6]), _float(item[7]), item[8], item[9], *paragraphs,
                   len(item) >= 13 and bool(item[12]))

    @property
    def joins(self) -> bool:
        """Whether the asking page may join this match's cluster: it duplicates or supersedes it."""
        return self.relation != RELATED

    @property
    def bridges(self) -> bool:
        """Whether the asking page may bridge this match's cluster and another, its cluster's mark unknown.

        It duplicates the match and is most of it (or of its site), or the match is its part: of its site, its
        cluster's first page. Where the match's cluster is a digest's (`bridges_marked`), it may not."""
        return self.bridges_marked()

    def bridges_marked(self, overlapping: bool = False, digest: bool = False) -> bool:
        """Whether the asking page bridges this match's cluster and another, told whether that is a digest's.

        `engine.bridges` of one match (no fragment: a page held by its story's page beside more is most of none of
        the pages holding it only with its other matches): `digest`, `overlapping`, as `RootReply` tells them."""
        return bridges(self.relation, self.same_site, self.page_id, self.root_id, self.their_new_share,
                       overlapping=overlapping, digest=digest)

    def seen_from_the_other(self, page_id: str, order: bytes, root_order: bytes, root_id: str) -> Match:
        """This match as the matched page sees the asker (`page_id`, `order`, its root): the sides swap."""
        return Match(page_id, order, self.rule, self.similarity, root_order, root_id, self.their_new_share,
                     self.new_share, self.their_relation, self.relation, self.their_new_paragraph, self.new_paragraph,
                     self.same_site)


def _rounded(value: float | None) -> float | None:
    """A similarity or share as JSON carries it: 6 decimals, None for NaN (JSON has no NaN)."""
    return None if value is None or math.isnan(value) else round(value, 6)


def _float(value: float | None) -> float:
    return math.nan if value is None else float(value)


@dataclass(frozen=True)
class Answer:
    """One index partition's reply for one page: verified matches before it and after it.

    `fault`: its judging raised here (a bug: `verdict.page_fault`), what it raised; the page was not
    filed here, and its gather makes it a `processing_error` dead letter."""

    page_id: str
    order: bytes
    partition: int
    earlier: tuple[Match, ...] = ()
    later: tuple[Match, ...] = ()
    fault: str = ""

    def as_json(self) -> dict[str, Any]:
        """The answer as JSON (orders in hex, each match as `Match.as_list`; `fault` only where there is one)."""
        value = {"id": self.page_id, "order": self.order.hex(), "partition": self.partition,
                 "earlier": [m.as_list() for m in self.earlier], "later": [m.as_list() for m in self.later]}
        if self.fault:
            value["fault"] = self.fault
        return value

    def encode(self) -> bytes:
        """The answer as a message value (its `as_json`)."""
        return orjson.dumps(self.as_json())

    @classmethod
    def from_json(cls, value: dict[str, Any]) -> Answer:
        """The answer `as_json` made."""
        return cls(value["id"], bytes.fromhex(value["order"]), value["partition"],
                   tuple(Match.from_list(m) for m in value["earlier"]),
                   tuple(Match.from_list(m) for m in value["later"]), value.get("fault", ""))


@dataclass(frozen=True)
class PageHeader:
    """The page itself, sent to where its verdict is gathered.

    Its fields and which index partitions will answer for it."""

    page_id: str
    order: bytes
    partitions: tuple[int, ...]
    record: dict[str, Any]
    origin: str
    time_note: str | None = None  # why the page's own fetch time was not used, if it was not
    headers: tuple[tuple[str, bytes | None], ...] = ()  # the input message's Kafka headers, for the outputs
    key: bytes | None = None  # the input message's key, which the cluster events carry
    text_cut: bool = False  # its main text was cut (`Texts.main_cut`): `engine.as_cut`
    headers_omitted: int = 0  # the bytes of the input's headers left out (`passed_within`), 0: none
    key_omitted: int = 0  # and of its key
    # an undated page's place in its input (`RawRecord.place`), which its verdict carries (`arrival`); (): dated
    arrival: tuple[int, ...] = ()

    def passed_within(self) -> PageHeader:
        """This header with the input's headers and key left out over `record.passed.PASSED_BYTES`.

        For a header over the parts topic's limit with them whole: the page is still judged, and its
        outputs say what was left out."""
        headers, headers_omitted = bounded_headers(self.headers, self.headers_omitted)
        key, key_omitted = bounded_key(self.key, self.key_omitted)
        return replace(self, headers=tuple(headers), key=key, headers_omitted=headers_omitted, key_omitted=key_omitted)

    def as_json(self) -> dict[str, Any]:
        """The header as JSON: orders in hex, Kafka headers and key in base64, optional fields at defaults left out."""
        value: dict[str, Any] = {"id": self.page_id, "order": self.order.hex(), "partitions": list(self.partitions),
                                 "record": self.record, "origin": self.origin}
        if self.headers_omitted:
            value["headers_omitted"] = self.headers_omitted
        if self.key_omitted:
            value["key_omitted"] = self.key_omitted
        if self.time_note:
            value["time_note"] = self.time_note
        if self.text_cut:
            value["text_cut"] = True
        if self.arrival:
            value["arrival"] = list(self.arrival)
        if self.headers:  # values are bytes: base64
            value["headers"] = [[name, None if data is None else base64.b64encode(data).decode("ascii")]
                                for name, data in self.headers]
        if self.key is not None:
            value["key"] = base64.b64encode(self.key).decode("ascii")
        return value

    def encode(self) -> bytes:
        """The header as a message value (its `as_json`)."""
        return orjson.dumps(self.as_json())

    @classmethod
    def from_json(cls, value: dict[str, Any]) -> PageHeader:
        """The header `as_json` made (fields left out: their defaults)."""
        headers = tuple((name, None if data is None else base64.b64decode(data))
                        for name, data in value.get("headers", ()))
        key = value.get("key")
        return cls(value["id"], bytes.fromhex(value["order"]), tuple(value["partitions"]),
                   value["record"], value["origin"], value.get("time_note"), headers,
                   None if key is None else base64.b64decode(key), bool(value.get("text_cut")),
                   value.get("headers_omitted", 0), value.get("key_omitted", 0), tuple(value.get("arrival", ())))


def kind_of(headers: list[tuple[str, bytes | None]] | None) -> bytes | None:
    """The record kind of a message of the repartition topics (None: an index request)."""
    return next((value for name, value in headers or () if name == KIND_HEADER), None)


def watermark_value(source: int, watermark: bytes) -> bytes:
    """A watermark record.

    "`source` (an input or index partition) sends nothing at or below `watermark` any more" (an
    order, or INFINITE when idle)."""
    return orjson.dumps({"from": source, "wm": watermark.hex()})


def watermark_of(value: bytes) -> tuple[int, bytes]:
    """The sending partition and the watermark of a record `watermark_value` made."""
    decoded = orjson.loads(value)
    return decoded["from"], bytes.fromhex(decoded["wm"])


@dataclass(frozen=True)
class Supplement:
    """An index partition's word to the *later* page of a pair.

    Page `page_id` (`order`) was filed here before `match`, an earlier page in the global order,
    arrived; so `match` is one of its earlier matches (with its root as this partition knows it)."""

    page_id: str
    order: bytes
    match: Match

    def encode(self) -> bytes:
        """The supplement as a message value (JSON, its match as `Match.as_list`)."""
        return orjson.dumps({"id": self.page_id, "order": self.order.hex(), "match": self.match.as_list()})

    @classmethod
    def from_json(cls, value: dict[str, Any]) -> Supplement:
        """The supplement `encode` wrote."""
        return cls(value["id"], bytes.fromhex(value["order"]), Match.from_list(value["match"]))


def release_value(pages: list[tuple[str, bytes]]) -> bytes:
    """A release marker: these held pages go out with what is known (their wait is over)."""
    return orjson.dumps({"pages": [[page_id, order.hex()] for page_id, order in pages]})


def released_by(value: bytes) -> list[tuple[str, bytes]]:
    """The held pages (page id, order) a release marker (`release_value`) names."""
    return [(page_id, bytes.fromhex(order)) for page_id, order in orjson.loads(value)["pages"]]


@dataclass(frozen=True)
class RootAsk:
    """A gather partition's question to the one of an earlier page: which cluster did page `page_id` (`order`) join?

    Asked for `asker` (`asker_order`), one of whose earlier matches it is."""

    page_id: str
    order: bytes
    asker: str
    asker_order: bytes

    def encode(self) -> bytes:
        """The question as a message value (JSON, orders in hex)."""
        return orjson.dumps({"id": self.page_id, "order": self.order.hex(), "asker": self.asker,
                             "asker_order": self.asker_order.hex()})

    @classmethod
    def from_json(cls, value: dict[str, Any]) -> RootAsk:
        """The question `encode` wrote."""
        return cls(value["id"], bytes.fromhex(value["order"]), value["asker"], bytes.fromhex(value["asker_order"]))


@dataclass(frozen=True)
class RootReply:
    """The answer, sent to the asker's gather partition.

    Page `of`, an earlier match of page `page_id` (`order`), is in the cluster whose first page is
    `root_id` (`root_order`). No root (""): `of` got no verdict under that id (a repeated id), the
    index partitions' root stands. `guessed`: `of` went out before its own matches' clusters were
    all named and they still are not (the bound on its answer was reached): the root is its index
    partitions' guess, never named as merged; its gather answers again once they are. `merged`: the
    clusters `of`'s verdict (or its late merge) merged into that cluster: the asker's digest rule sees
    them as one story (`engine.Candidate.story_id`). `overlapping`: that cluster was started by a digest
    of overlapping stories (`engine.digest_of_overlapping`), which no copy bridges for being most of it;
    `digest`: by a digest of any stories (`engine.started_digest`), which no page bridges for being of its site."""

    page_id: str
    order: bytes
    of: str
    root_order: bytes = b""
    root_id: str = ""
    guessed: bool = False
    merged: tuple[str, ...] = ()
    overlapping: bool = False
    digest: bool = False

    def encode(self) -> bytes:
        """The reply as a message value (JSON, orders in hex; `guess` only for a guessed root)."""
        value: dict[str, Any] = {"id": self.page_id, "order": self.order.hex(), "of": self.of,
                                 "root": [self.root_order.hex(), self.root_id]}
        if self.guessed:
            value["guess"] = True
        if self.merged:
            value["merged"] = list(self.merged)
        if self.overlapping:
            value["overlap"] = True
        if self.digest:
            value["digest"] = True
        return orjson.dumps(value)

    @classmethod
    def from_json(cls, value: dict[str, Any]) -> RootReply:
        """The reply `encode` wrote (no `guess`: a named root)."""
        root_order, root_id = value["root"]
        return cls(value["id"], bytes.fromhex(value["order"]), value["of"], bytes.fromhex(root_order), root_id,
                   bool(value.get("guess", False)), tuple(value.get("merged", ())), bool(value.get("overlap", False)),
                   bool(value.get("digest", False)))
