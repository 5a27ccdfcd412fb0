"""Where a page's answers meet: one verdict per page, final when emitted, and counted late matches.

A page's header (its fields, and which index partitions will answer) and the answers arrive on
the page's parts partition, in any order. Arrival order at an index partition is not the global
order, so an earlier page E can reach a partition after a later page L it matches: that partition
then sends L a *supplement* ("E is one of your earlier matches"). A complete page is *held* until
every index partition it was sent to has passed its place in the order (the partitions'
watermarks, `W<i>` records on this topic): then no earlier page can still reach them, its
supplements are in, and `decide()` (verdict/engine.py) gives the verdict file mode gives. Pages
released by one watermark go out in the global order.

A page held longer than the bounded wait is released by a *marker* its gather partition writes
to its own parts partition (`tick`): the release happens when the marker is read back, at the
same point of the log on every replay, so a restart emits the same verdicts and none twice. A
supplement for a page already out is a `late_match` event on the clusters topic, counted: "page L
is also a near-duplicate of this earlier page"; a related one (L adds much text of its own) is a
`late_related` event, counted too: L's story is related to that page's, as file mode's `related_to`
says (none for a page that went out as a duplicate, as file mode names none), up to `MAX_NAMED`
related pages with those its verdict named, as file mode's `related_to` (`RelatedLeftOut` past it). A page is only ever
tagged as a duplicate of a page earlier than itself, so no two pages are ever tagged as duplicates
of each other.

A page's cluster is the oldest of its earlier matches' clusters, as file mode gives it; but an
index partition knows a page's cluster only from the matches found there (`IndexPartition`), and
a page whose cluster came from another partition's match would be named there as a cluster of its
own: a false merge. So a complete page asks each earlier match's gather partition which cluster
that page joined (`RootAsk`), answered once that page is out (`RootReply`, kept in its `R`
record), and is released only when every answer is in (or its wait is over: the index
partitions' roots then stand). The answers come from pages earlier in the order, whose own
answers come from earlier pages still: no cycle, nothing waits for ever (docs/scaleout.md).

With `hold=False` (a verdict wait of 0) a page is released as soon as it is complete and its
matches' clusters are known.

State (a RocksDB store per parts partition, written with the input offset in one WriteBatch):
`W<page id> <order>` -> the pending header, answers and supplements (held once complete);
`F<page id>` -> the order of the page that got a verdict under that id (a second page with the
same id is rejected as duplicate_id) and a hash of each earlier page it is known to duplicate;
`R<page id>` -> the order of the page that got a verdict under that id and its cluster's first page
(order and id), for the roots asked; `N<page id>` -> how many related pages it names (its verdict's
`related_to` and its `late_related` events; none: 0); `G<page id>` -> a page out before every
joined match's gather named its cluster (its wait was over): its order, those matches, the clusters
named since and the cluster and merges its verdict named (`late_merge`); `Mwm:<index partition>` ->
that index partition's last watermark.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import xxhash
from rocksdict import WriteBatch

from streamdedup.runtime.scaleout.messages import (
    INFINITE,
    Answer,
    Match,
    PageHeader,
    RootAsk,
    RootReply,
    Supplement,
)
from streamdedup.runtime.scaleout.routing import ORDER_BYTES
from streamdedup.store.plain import open_plain_db
from streamdedup.verdict.contract import Rejection, Verdict
from streamdedup.verdict.engine import DUPLICATE, MAX_NAMED, RELATED, Candidate, decide

_WAITING, _FINISHED, _META, _ROOT, _NAMED, _GUESSED = b"W", b"F", b"M", b"R", b"N", b"G"


@dataclass
class Pending:
    header: PageHeader | None = None
    answers: dict[int, Answer] = field(default_factory=dict)
    supplements: list[Match] = field(default_factory=list)
    completed_ms: int = 0  # when its last part arrived (the message's timestamp): the wait starts
    # earlier match id -> its cluster's first page (order, id) as its gather says ((b"", ""): none)
    roots: dict[str, tuple[bytes, str]] = field(default_factory=dict)
    askers: list[tuple[str, bytes]] = field(default_factory=list)  # later pages waiting for this one's cluster

    def complete(self) -> bool:
        return self.header is not None and set(self.header.partitions) <= set(self.answers)

    def encode(self) -> bytes:
        return orjson.dumps({"header": None if self.header is None else self.header.as_json(),
                             "answers": [a.as_json() for a in self.answers.values()],
                             "supplements": [m.as_list() for m in self.supplements],
                             "completed_ms": self.completed_ms,
                             "roots": {page_id: [order.hex(), root] for page_id, (order, root) in self.roots.items()},
                             "askers": [[page_id, order.hex()] for page_id, order in self.askers]})

    @classmethod
    def decode(cls, data: bytes) -> Pending:
        value = orjson.loads(data)
        header = None if value["header"] is None else PageHeader.from_json(value["header"])
        answers = [Answer.from_json(a) for a in value["answers"]]
        return cls(header, {a.partition: a for a in answers},
                   [Match.from_list(m) for m in value.get("supplements", ())], value.get("completed_ms", 0),
                   {page_id: (bytes.fromhex(order), root) for page_id, (order, root) in value.get("roots", {}).items()},
                   [(page_id, bytes.fromhex(order)) for page_id, order in value.get("askers", ())])

    def earlier(self) -> dict[str, Match]:
        return _earlier_matches(self.answers.values(), self.supplements)

    def joined(self) -> dict[str, Match]:
        """The earlier matches whose clusters the page may join: its duplicates and what it supersedes.

        Those are the matches whose gather it asks which cluster they joined; a related match is
        named by its page id (`related_to`), which needs no answer."""
        return {page_id: m for page_id, m in self.earlier().items() if m.joins}

    def roots_known(self) -> bool:
        """Whether every joined match's gather has said which cluster it joined."""
        return all(page_id in self.roots for page_id in self.joined())


@dataclass(frozen=True)
class Decided:
    """What to emit for one page.

    Its outcome (dedup object), how it was released (`watermark`, `timeout`, or `complete` when not
    held) and when it was complete (ms)."""

    header: PageHeader
    dedup: dict[str, Any]
    by: str = "complete"
    completed_ms: int = 0


# why a match came after the later page's verdict was out (`LateMatch.cause`, a metric label), by
# how that page went out: by its watermarks, the earlier page came after they had passed it
LATE_PAGE = "late_page"  # released by finite watermarks: the earlier page was late (or its input had idled)
AFTER_IDLE = "after_idle"  # released under an infinite one: every input of a partition had been idle
RELEASED_EARLY = "released_early"  # released before its watermarks passed (the wait, or no holding)


@dataclass(frozen=True)
class LateMatch:
    """A `late_match` event for a page whose verdict was already out, and why it was late.

    The reason comes from how that page went out, kept in its `F` record. By finite watermarks: the earlier page
    came after they had passed it (`LATE_PAGE`: its input partition was out of event-time order by more than the
    allowed lateness, or had been idle while the others moved on). By an infinite one: every input of one of its
    index partitions had been idle (`AFTER_IDLE`). By the bounded wait, or without holding: `RELEASED_EARLY`."""

    event: dict[str, Any]
    cause: str = RELEASED_EARLY


@dataclass(frozen=True)
class RelatedLeftOut:
    """A related match found after the page's verdict, not emitted: the page names `MAX_NAMED` related pages already.

    File mode's `related_to` names at most that many; here the first to reach the page's gather
    partition are kept (its verdict's, then the late ones in the order of that log, the same on
    every replay), where file mode keeps the earliest in the global order. Counted, as a late
    match would be."""

    page_id: str
    cause: str = RELEASED_EARLY


@dataclass(frozen=True)
class LateMerge:
    """A `merged` event (`"late": true`) for a page out before its matches' gathers named their clusters.

    Its verdict went out by its wait with clusters known only from index partitions, which it never
    names as merged (`_verdict_and_root`); once every one is named, the merges file mode's verdict
    names that this one did not. Counted by how the page went out, as a late match."""

    event: dict[str, Any]
    cause: str = RELEASED_EARLY


Emitted = Decided | LateMatch | RelatedLeftOut | RootAsk | RootReply | LateMerge


def verdict_of(header: PageHeader, answers: Iterable[Answer], supplements: Iterable[Match] = (),
               roots: Mapping[str, tuple[bytes, str]] | None = None) -> dict[str, Any]:
    """The page's `dedup` object from all its answers and supplements (pure)."""
    return _verdict_and_root(header, _earlier_matches(answers, supplements), roots or {})[0]


def _verdict_and_root(header: PageHeader, earlier: Mapping[str, Match],
                      roots: Mapping[str, tuple[bytes, str]]) -> tuple[dict[str, Any], tuple[bytes, str]]:
    """The page's `dedup` object and its cluster's first page (order, id) (`_decided`)."""
    verdict, root = _decided(header.page_id, header.order, header.text_cut, earlier, roots)
    return verdict._replace(time_note=header.time_note).as_dict(), root


def _decided(page_id: str, order: bytes, text_cut: bool, earlier: Mapping[str, Match],
             roots: Mapping[str, tuple[bytes, str]]) -> tuple[Verdict, tuple[bytes, str]]:
    """The page's verdict and its cluster's first page (order, id).

    An earlier match's cluster is the one its gather named (`roots`; the index partition's where
    none was named: a page released by its wait before every answer came). A cluster known only
    from an index partition may be stale (that partition did not see the match's own matches),
    so it is never named as merged: a merge may be missed under load, never made up."""
    candidates = []
    guessed: set[str] = set()
    for m in earlier.values():
        root_order, root_id = roots.get(m.page_id) or (b"", "")
        if not root_id:
            root_order, root_id = m.root_order, m.root_id
            guessed.add(root_id)
        candidates.append(Candidate(m.order, m.page_id, m.rule, m.similarity, root_order, root_id, m.relation,
                                    m.new_share, m.their_new_share, m.new_paragraph, m.same_site))
    verdict = decide(page_id, candidates, text_cut)
    joins = [c for c in candidates if c.relation != RELATED]
    if verdict.cluster_id == page_id and joins and any(c.root_id in guessed for c in joins):
        # clusters it may not bridge (a digest's, `engine.joined_roots`), some known only from an index
        # partition: stale ones may be one story's (a copy filed before its story's page reached that
        # partition names itself); it joins the oldest, as where they are one, and bridges none
        verdict = verdict._replace(cluster_id=min((c.root_order, c.root_id) for c in joins)[1], merged_clusters=())
    if guessed and verdict.merged_clusters:
        named = {root for _, root in roots.values()}
        verdict = verdict._replace(merged_clusters=tuple(c for c in verdict.merged_clusters
                                                         if c in named or c not in guessed))
    cluster = verdict.cluster_id
    root_order = next((c.root_order for c in candidates if c.root_id == cluster), order)
    return verdict, (root_order, cluster)


def _earlier_matches(answers: Iterable[Answer], supplements: Iterable[Match]) -> dict[str, Match]:
    earlier: dict[str, Match] = {}
    for answer in answers:
        for match in answer.earlier:
            earlier.setdefault(match.page_id, match)
    for match in supplements:
        earlier.setdefault(match.page_id, match)
    return earlier


def late_related_event(page_id: str, cluster_id: str, match: Match) -> dict[str, Any]:
    """The cluster event of a related match found after the page's verdict: its story is related to the match's.

    The page stays in its cluster (`cluster_id`, the one its verdict named); `related_to` names the match, as
    file mode's verdict of the page would have."""
    return {"type": "late_related", "page_id": page_id, "cluster_id": cluster_id, "related_to": [match.page_id],
            "similarity": round(match.similarity, 4), "method": match.rule, "relation": match.relation}


def late_match_event(page_id: str, match: Match) -> dict[str, Any]:
    """The cluster event of a match found after the page's verdict: the page joins the match's story.

    `relation`: "duplicate" (the page's text is all in it) or "supersedes" (its text is all in the
    page); the key names it `duplicate_of` either way, as the events of 0.13 and before did."""
    return {"type": "late_match", "page_id": page_id, "duplicate_of": match.page_id, "cluster_id": match.root_id,
            "similarity": round(match.similarity, 4), "method": match.rule, "relation": match.relation}


def _id_hash(page_id: str) -> bytes:
    return xxhash.xxh3_64_digest(page_id.encode("utf-8", "surrogatepass"))


@dataclass(frozen=True)
class Held:
    """A complete page waiting for the watermarks of its index partitions."""

    page_id: str
    order: bytes
    partitions: tuple[int, ...]
    completed_ms: int


class GatherPartition:
    def __init__(self, path: Path, hold: bool = True) -> None:
        self.db = open_plain_db(path)
        self.hold = hold
        self._pending: dict[bytes, Pending] = {}
        self._finished: dict[bytes, bytes] = {}
        self._deleted: set[bytes] = set()
        self._meta: dict[str, bytes] = {}
        self.marked: set[bytes] = set()  # held pages a release marker was sent for (not yet read back)
        self._load_state()

    def _load_state(self) -> None:
        """The watermarks and the held pages, as committed."""
        self.watermarks: dict[int, bytes] = {}
        it = self.db.iter()
        it.seek(_META + b"wm:")
        while it.valid() and it.key().startswith(_META + b"wm:"):
            self.watermarks[int(it.key()[len(_META) + 3:])] = it.value()
            it.next()
        self.held: dict[bytes, Held] = {}
        it.seek(_WAITING)
        while it.valid() and it.key()[:1] == _WAITING:
            pending = Pending.decode(it.value())
            if pending.complete() and pending.header is not None:
                self.held[it.key()] = Held(pending.header.page_id, pending.header.order,
                                           pending.header.partitions, pending.completed_ms)
            it.next()

    # -- what arrives on the parts partition ----------------------------------------------------
    def add_header(self, header: PageHeader, at_ms: int = 0) -> list[Emitted]:
        pending = self._load(header.page_id, header.order)
        was = pending.complete()
        pending.header = header
        return self._completed(pending, was, at_ms)

    def add_answer(self, answer: Answer, at_ms: int = 0) -> list[Emitted]:
        pending = self._load(answer.page_id, answer.order)
        was = pending.complete()
        pending.answers[answer.partition] = answer
        return self._completed(pending, was, at_ms)

    def add_supplement(self, supplement: Supplement) -> list[Emitted]:
        """An earlier match of a page: merged while the page is held, a late match once it is out."""
        finished = _FINISHED + supplement.page_id.encode("utf-8", "surrogatepass")
        before = self._finished.get(finished) or self.db.get(finished)
        if before is not None:
            if before[:ORDER_BYTES] != supplement.order:
                return []  # another page had this id first: this one is (or will be) a duplicate_id
            known = _id_hash(supplement.match.page_id)
            released, start = _released_as(before)
            if any(before[i: i + 8] == known for i in range(start, len(before), 8)):
                return []  # it was one of the page's earlier matches already (another partition's answer)
            cause = _LATE_CAUSE.get(released.lower(), RELEASED_EARLY)
            # a match it supersedes joins the stories only as its part (`engine.bridges`): the page went out in
            # a story already, and a second whole story it holds (a digest's) would be merged into it
            if supplement.match.bridges:
                if supplement.match.relation == DUPLICATE:  # file mode names no related page of a duplicate
                    before = _as_duplicate(before)
                self._finished[finished] = before + known
                return [LateMatch(late_match_event(supplement.page_id, supplement.match), cause)]
            if released.isupper():  # related to a page that went out as a duplicate: file mode names none
                return []
            # related, or a whole story it holds: the page keeps its story, which is related to the match's (file
            # mode's `related_to`; a late_match merged stories file mode keeps apart: a feed review)
            self._finished[finished] = before + known
            named = _NAMED + supplement.page_id.encode("utf-8", "surrogatepass")
            count = (self._finished.get(named) or self.db.get(named) or b"\x00")[0]
            if count >= MAX_NAMED:  # as many as file mode's `related_to` names
                return [RelatedLeftOut(supplement.page_id, cause)]
            self._finished[named] = bytes([count + 1])
            return [LateMatch(late_related_event(supplement.page_id, self._own_cluster(supplement.page_id),
                                                 supplement.match), cause)]
        pending = self._load(supplement.page_id, supplement.order)
        new = supplement.match.page_id not in pending.earlier() and supplement.match.joins
        pending.supplements.append(supplement.match)
        # complete already: its other earlier matches were asked about then, this one now
        return [RootAsk(supplement.match.page_id, supplement.match.order, supplement.page_id, supplement.order)
                ] if new and pending.complete() else []

    def add_root_ask(self, ask: RootAsk) -> list[Emitted]:
        """Which cluster page `ask.page_id` joined: answered now if it is out, else when it goes."""
        root = self._root_record(ask.page_id)
        if root is not None or self._finished_order(ask.page_id) is not None:
            return [_reply(ask.asker, ask.asker_order, ask.page_id, ask.order, root)]
        self._load(ask.page_id, ask.order).askers.append((ask.asker, ask.asker_order))
        return []

    def add_root(self, reply: RootReply) -> list[Emitted]:
        """An earlier match's cluster, as its gather says.

        The page goes out once all are in and its watermarks have passed it (out already, by its
        wait: the merges it missed, `_late_merge`)."""
        if self._finished_order(reply.page_id) == reply.order:
            return self._late_merge(reply)
        key = _waiting_key(reply.page_id, reply.order)
        pending = self._load(reply.page_id, reply.order)
        pending.roots[reply.of] = (reply.root_order, reply.root_id)
        held = self.held.get(key)
        if held is None or not pending.roots_known() or (self.hold and not self._passed(held)):
            return []
        return self._release(key, "watermark" if self.hold else "complete")

    def add_watermark(self, partition: int, watermark: bytes) -> list[Emitted]:
        """Index partition `partition` has passed `watermark`: release what it was the last to hold."""
        self.watermarks[partition] = watermark
        self._meta[f"wm:{partition}"] = watermark
        ready = [(held.order, key) for key, held in self.held.items()
                 if partition in held.partitions and self._passed(held)
                 and self._load(held.page_id, held.order).roots_known()]  # else released by the last root
        return [item for _, key in sorted(ready) for item in self._release(key, "watermark")]

    def add_release(self, pages: list[tuple[str, bytes]]) -> list[Emitted]:
        """A release marker read back: those of its pages still held go out with what is known."""
        keys = sorted((order, _waiting_key(page_id, order)) for page_id, order in pages)
        return [item for _, key in keys if key in self.held for item in self._release(key, "timeout")]

    def due(self, now_ms: int, wait_ms: int) -> list[tuple[str, bytes]]:
        """Held pages whose wait is over and that no release marker was sent for, in order."""
        return sorted(((held.page_id, held.order) for key, held in self.held.items()
                       if held.completed_ms + wait_ms <= now_ms and key not in self.marked), key=lambda p: p[1])

    def mark(self, pages: list[tuple[str, bytes]]) -> None:
        """A release marker for these pages was sent (forgotten on `discard`: sent again)."""
        self.marked.update(_waiting_key(page_id, order) for page_id, order in pages)

    # -- deciding -------------------------------------------------------------------------------
    def _passed(self, held: Held) -> bool:
        return all(self.watermarks.get(p, b"") >= held.order for p in held.partitions)

    def _completed(self, pending: Pending, was: bool, at_ms: int) -> list[Emitted]:
        if was or not pending.complete():
            return []
        header = pending.header
        assert header is not None
        pending.completed_ms = at_ms
        key = _waiting_key(header.page_id, header.order)
        self.held[key] = held = Held(header.page_id, header.order, header.partitions, at_ms)
        asks: list[Emitted] = [RootAsk(m.page_id, m.order, header.page_id, header.order)
                               for m in pending.joined().values() if m.page_id not in pending.roots]
        if asks or (self.hold and not self._passed(held)):
            return asks
        return self._release(key, "watermark" if self.hold else "complete")

    def _release(self, key: bytes, by: str) -> list[Emitted]:
        """The page's outcome, and the answers to the pages that asked which cluster it joined."""
        held = self.held.pop(key)
        self.marked.discard(key)
        pending = self._load(held.page_id, held.order)
        header = pending.header
        assert header is not None
        self._pending.pop(key, None)
        self._deleted.add(key)
        finished = _FINISHED + header.page_id.encode("utf-8", "surrogatepass")
        before = self._finished.get(finished) or self.db.get(finished)
        if before is not None and before[:ORDER_BYTES] != header.order:
            dedup = Rejection.repeated_id(header.page_id, header.origin).as_dict()
            return [Decided(header, dedup, by, held.completed_ms),
                    *(_reply(asker, order, header.page_id, header.order, None) for asker, order in pending.askers)]
        earlier = pending.earlier()
        # by the watermarks: under an infinite one when every input of one of its partitions was idle
        idle = by == "watermark" and any(self.watermarks.get(p) == INFINITE for p in held.partitions)
        dedup, (root_order, root_id) = _verdict_and_root(header, earlier, pending.roots)
        released = _RELEASED["idle" if idle else by]
        self._finished[finished] = (header.order + (released.upper() if dedup["status"] == "duplicate" else released)
                                    + b"".join(_id_hash(page_id) for page_id in earlier))
        root = header.order + root_order + root_id.encode("utf-8", "surrogatepass")
        self._finished[_ROOT + header.page_id.encode("utf-8", "surrogatepass")] = root
        if not pending.roots_known():  # out by its wait: the clusters still to be named may be merges it missed
            joined = pending.joined()
            self._finished[_GUESSED + header.page_id.encode("utf-8", "surrogatepass")] = orjson.dumps(
                {"order": header.order.hex(), "cut": header.text_cut, "matches": [m.as_list() for m in joined.values()],
                 "roots": {page_id: [o.hex(), r] for page_id, (o, r) in pending.roots.items() if page_id in joined},
                 "cluster": dedup["cluster_id"], "merged": list(dedup.get("merged_clusters") or ())})
        if dedup.get("related_to"):  # late related pages are named up to MAX_NAMED with these
            self._finished[_NAMED + header.page_id.encode("utf-8", "surrogatepass")] = bytes([len(dedup["related_to"])])
        return [Decided(header, dedup, by, held.completed_ms),
                *(_reply(asker, order, header.page_id, header.order, root) for asker, order in pending.askers)]

    def _late_merge(self, reply: RootReply) -> list[Emitted]:
        """A cluster named for a page out by its wait: once all are, the merges its verdict did not name.

        Its verdict named as merged no cluster known only from an index partition (a stale one
        there would make up a merge); with every joined match's cluster named by its gather, the
        page is decided again on the same matches: the merges it names that the verdict did not
        are a `merged` event (`"late": true`, with the cluster that decision joins), and its `R`
        record names that cluster for later askers. None: a match's id was another page's first
        (its cluster stays guessed), or nothing was missed."""
        key = _GUESSED + reply.page_id.encode("utf-8", "surrogatepass")
        data = self._finished.get(key) or (None if key in self._deleted else self.db.get(key))
        if data is None:
            return []
        value = orjson.loads(data)
        matches = {m.page_id: m for m in map(Match.from_list, value["matches"])}
        value["roots"][reply.of] = [reply.root_order.hex(), reply.root_id]
        if not set(matches) <= set(value["roots"]):
            self._finished[key] = orjson.dumps(value)
            return []
        self._finished.pop(key, None)
        self._deleted.add(key)
        roots = {page_id: (bytes.fromhex(o), r) for page_id, (o, r) in value["roots"].items()}
        verdict, (root_order, cluster) = _decided(reply.page_id, reply.order, value["cut"], matches, roots)
        if cluster != value["cluster"]:  # not the one its index partitions knew: later askers are told this one
            self._finished[_ROOT + key[1:]] = reply.order + root_order + cluster.encode("utf-8", "surrogatepass")
        if not [c for c in verdict.merged_clusters if c not in value["merged"] or cluster != value["cluster"]]:
            return []
        finished = self._finished.get(_FINISHED + key[1:]) or self.db.get(_FINISHED + key[1:]) or b""
        cause = _LATE_CAUSE.get(_released_as(finished)[0].lower(), RELEASED_EARLY)
        return [LateMerge({"type": "merged", "page_id": reply.page_id, "cluster_id": cluster,
                           "merged": list(verdict.merged_clusters), "late": True}, cause)]

    def _finished_order(self, page_id: str) -> bytes | None:
        """The order of the page that got a verdict under this id (None: none yet)."""
        finished = _FINISHED + page_id.encode("utf-8", "surrogatepass")
        before = self._finished.get(finished) or self.db.get(finished)
        return None if before is None else before[:ORDER_BYTES]

    def _own_cluster(self, page_id: str) -> str:
        """The cluster a page that is out joined (its `R` record; its own id where none is kept)."""
        root = self._root_record(page_id)
        return page_id if root is None else root[2 * ORDER_BYTES:].decode("utf-8", "surrogatepass")

    def _root_record(self, page_id: str) -> bytes | None:
        key = _ROOT + page_id.encode("utf-8", "surrogatepass")
        return self._finished.get(key) or self.db.get(key)

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
        self._clear()

    def _clear(self) -> None:
        self._pending.clear()
        self._finished.clear()
        self._deleted.clear()
        self._meta.clear()

    def discard(self) -> None:
        """The batch is to be consumed again: back to the committed state; markers are resent."""
        self._clear()
        self.marked.clear()
        self._load_state()

    def waiting(self) -> int:
        """Pages not released yet: answers still missing, or held (committed state)."""
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
        self._clear()
        self.db.close()


# how a page's verdict went out, kept after its order in its `F` record: a later match's cause; upper case: as a
# duplicate (or found one by a late match since), whose related pages file mode does not name
_RELEASED = {"watermark": b"w", "idle": b"i", "timeout": b"t", "complete": b"c"}
_LATE_CAUSE = {b"w": LATE_PAGE, b"i": AFTER_IDLE}  # else released early (or a record from before 2026-12-01)


def _released_as(finished: bytes) -> tuple[bytes, int]:
    """An `F` record's release byte and where its 8-byte match hashes start.

    An `F` record's release byte (b"" in records written before 2026-12-01, which have none)
    and where its 8-byte match hashes start."""
    if (len(finished) - ORDER_BYTES) % 8 == 1:
        return finished[ORDER_BYTES: ORDER_BYTES + 1], ORDER_BYTES + 1
    return b"", ORDER_BYTES


def _as_duplicate(finished: bytes) -> bytes:
    """An `F` record marked as a duplicate's (its release byte in upper case; a record without one as it is)."""
    released, start = _released_as(finished)
    return finished if not released else finished[:ORDER_BYTES] + released.upper() + finished[start:]


def _reply(asker: str, asker_order: bytes, page_id: str, order: bytes, root: bytes | None) -> RootReply:
    """The answer to a `RootAsk` for page `page_id` (`order`) from its `R` record (`root`).

    Its cluster's first page, or none if the record is another page's under that id (or missing)."""
    if root is None or root[:ORDER_BYTES] != order:
        return RootReply(asker, asker_order, page_id)
    return RootReply(asker, asker_order, page_id, root[ORDER_BYTES: 2 * ORDER_BYTES],
                     root[2 * ORDER_BYTES:].decode("utf-8", "surrogatepass"))


def _waiting_key(page_id: str, order: bytes) -> bytes:
    return _WAITING + page_id.encode("utf-8", "surrogatepass") + b"\x00" + order
