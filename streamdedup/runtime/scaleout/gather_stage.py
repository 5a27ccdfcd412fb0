"""Where a page's answers meet: one verdict per page, and corrections for late matches.

A page's header (its fields, and which index partitions will answer) and the answers arrive on
the page's parts partition, in any order. When all are in, the verdict is the earliest match
in the global order; a match that is *later* than the page (it was filed before this page
reached that index partition) cannot change that later page's verdict any more, so it becomes a
`late_match` event on the clusters topic: "page L is also a near-duplicate of this earlier page".
A page is only ever tagged as a duplicate of a page earlier than itself, so no two pages are
ever tagged as duplicates of each other.

State (a RocksDB store per parts partition, written with the input offset in one WriteBatch):
`W<page id> <order>` -> the pending header and answers; `F<page id>` -> the order of the page
that got a verdict under that id (a second page with the same id is rejected as duplicate_id).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import orjson
from rocksdict import WriteBatch

from streamdedup.record.rejection import Reason
from streamdedup.runtime.scaleout.messages import Answer, Match, PageHeader
from streamdedup.store.plain import open_plain_db
from streamdedup.verdict.contract import Rejection
from streamdedup.verdict.engine import Candidate, decide

_WAITING, _FINISHED, _META = b"W", b"F", b"M"


@dataclass
class Pending:
    header: PageHeader | None = None
    answers: dict[int, Answer] = field(default_factory=dict)

    def complete(self) -> bool:
        return self.header is not None and set(self.header.partitions) <= set(self.answers)

    def encode(self) -> bytes:
        return orjson.dumps({"header": None if self.header is None else self.header.as_json(),
                             "answers": [a.as_json() for a in self.answers.values()]})

    @classmethod
    def decode(cls, data: bytes) -> Pending:
        value = orjson.loads(data)
        header = None if value["header"] is None else PageHeader.from_json(value["header"])
        answers = [Answer.from_json(a) for a in value["answers"]]
        return cls(header, {a.partition: a for a in answers})


@dataclass(frozen=True)
class Decided:
    """What to emit for one page: its outcome (dedup object) and its clusters events."""

    header: PageHeader
    dedup: dict[str, Any]
    events: list[dict[str, Any]]


def verdict_of(header: PageHeader, answers: list[Answer]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The page's `dedup` object and its late-match corrections, from all its answers. Pure."""
    earlier: dict[str, Match] = {}
    later: dict[str, Match] = {}
    for answer in answers:
        for match in answer.earlier:
            earlier.setdefault(match.page_id, match)
        for match in answer.later:
            later.setdefault(match.page_id, match)
    verdict = decide(header.page_id, (Candidate(m.order, m.page_id, m.rule, m.similarity, m.root_order, m.root_id)
                                      for m in earlier.values()))
    page_id, cluster_id = header.page_id, verdict.cluster_id
    dedup = replace(verdict, time_note=header.time_note).as_dict()
    events = [{"type": "late_match", "page_id": m.page_id, "duplicate_of": page_id, "cluster_id": cluster_id,
               "similarity": round(m.similarity, 4), "method": m.rule}
              for m in sorted(later.values(), key=lambda m: m.order)]
    return dedup, events


class GatherPartition:
    def __init__(self, path: Path) -> None:
        self.db = open_plain_db(path)
        self._pending: dict[bytes, Pending] = {}
        self._finished: dict[bytes, bytes] = {}
        self._deleted: set[bytes] = set()
        self._meta: dict[str, bytes] = {}

    def add_header(self, header: PageHeader) -> Decided | None:
        pending = self._load(header.page_id, header.order)
        pending.header = header
        return self._maybe_decide(pending)

    def add_answer(self, answer: Answer) -> Decided | None:
        pending = self._load(answer.page_id, answer.order)
        pending.answers[answer.partition] = answer
        return self._maybe_decide(pending)

    def _maybe_decide(self, pending: Pending) -> Decided | None:
        if not pending.complete():
            return None
        header = pending.header
        assert header is not None
        key = _waiting_key(header.page_id, header.order)
        self._pending.pop(key, None)
        self._deleted.add(key)
        finished = _FINISHED + header.page_id.encode("utf-8", "surrogatepass")
        before = self._finished.get(finished) or self.db.get(finished)
        if before is not None and before != header.order:
            dedup = Rejection(Reason.DUPLICATE_ID.value, f"page id {header.page_id!r} was already processed",
                              header.origin).as_dict()
            return Decided(header, dedup, [])
        self._finished[finished] = header.order
        dedup, events = verdict_of(header, list(pending.answers.values()))
        return Decided(header, dedup, events)

    def _load(self, page_id: str, order: bytes) -> Pending:
        key = _waiting_key(page_id, order)
        pending = self._pending.get(key)
        if pending is None:
            data = None if key in self._deleted else self.db.get(key)
            pending = self._pending[key] = Pending() if data is None else Pending.decode(data)
            self._deleted.discard(key)
        return pending

    # -- the runtime's side -----------------------------------------------------------------
    def stage_meta(self, name: str, value: bytes) -> None:
        self._meta[name] = value

    def get_meta(self, name: str) -> bytes | None:
        return self.db.get(_META + name.encode())

    def commit(self) -> None:
        wb = WriteBatch(raw_mode=True)
        for key in self._deleted:
            wb.delete(key)
        for key, pending in self._pending.items():
            wb.put(key, pending.encode())
        for key, order in self._finished.items():
            wb.put(key, order)
        for name, value in self._meta.items():
            wb.put(_META + name.encode(), value)
        self.db.write(wb)
        self.discard()

    def discard(self) -> None:
        self._pending.clear()
        self._finished.clear()
        self._deleted.clear()
        self._meta.clear()

    def waiting(self) -> int:
        """Pages whose answers are not all in yet (committed state)."""
        it = self.db.iter()
        it.seek(_WAITING)
        count = 0
        while it.valid() and it.key()[:1] == _WAITING:
            count += 1
            it.next()
        return count

    def property_total(self, name: str) -> int:
        return self.db.property_int_value(name) or 0

    def close(self) -> None:
        self.discard()
        self.db.close()


def _waiting_key(page_id: str, order: bytes) -> bytes:
    return _WAITING + page_id.encode("utf-8", "surrogatepass") + b"\x00" + order
