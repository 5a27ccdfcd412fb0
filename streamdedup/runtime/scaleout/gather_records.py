"""The gather stage's state: its records in a partition's RocksDB, their codec, and the store that stages them.

State (a RocksDB store per parts partition, written with the input offset in one WriteBatch):
`W<page id> <order>` -> the pending header, answers and supplements (held once complete), the
clusters its earlier matches' gathers named (and which of them were guesses) and the later pages
waiting for its own; `F<page id>` -> the order of the page that got a verdict under that id (a
second page with the same id is rejected as duplicate_id), how it went out and a hash of each
earlier page it is known to duplicate; `R<page id>` -> the order of the page that got a verdict
under that id and its cluster's first page (order and id), for the roots asked; `N<page id>` ->
how many related pages it names (its verdict's `related_to` and its `late_related` events; none:
0); `G<page id>` -> a page out before every joined match's gather named its cluster (its wait
was over, or a late match came): `Guessed`; `K<page id>` -> the clusters a page out merged into
its own (none: no record), told with its cluster (`RootReply.merged`); `O<page id>` -> its cluster
is a digest's (`DIGEST_MARK`: `RootReply.digest`), of overlapping stories (`OVERLAPPING_MARK`:
`RootReply.overlapping`); none: no record; `L<page id>` -> a page out's late matches that may bridge its
story and their clusters, each kept until its gather tells whether that cluster is a digest's (`RootReply`):
`GatherStore.awaiting_mark`; `Mwm:<index partition>` -> that index partition's last watermark.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import xxhash
from rocksdict import WriteBatch

from streamdedup.runtime.scaleout.messages import Answer, Match, PageHeader
from streamdedup.runtime.scaleout.routing import ORDER_BYTES
from streamdedup.store.plain import open_plain_db

WAITING, FINISHED, META, ROOT, NAMED, GUESSED = b"W", b"F", b"M", b"R", b"N", b"G"
# the clusters a page out merged into its own (its verdict's `merged_clusters`, its late merges'), JSON; none: no record
MERGES = b"K"
# a page out whose cluster was started by a digest (`engine.started_digest`): DIGEST_MARK, or OVERLAPPING_MARK
# where its stories overlap (`engine.digest_of_overlapping`; the only mark rules 33 to 35 wrote)
OVERLAPPING = b"O"
OVERLAPPING_MARK, DIGEST_MARK = b"", b"d"
# a page out's late matches awaiting their clusters' marks (match id -> `Match.as_list`), JSON; none: no record
AWAITING_MARK = b"L"
# how a page's verdict went out, kept after its order in its `F` record: a later match's cause; upper case: as a
# duplicate (or found one by a late match since), whose related pages file mode does not name
RELEASED = {"watermark": b"w", "idle": b"i", "timeout": b"t", "complete": b"c"}

Root = tuple[bytes, str]  # a cluster's first page: (order, id); (b"", ""): none named


# -- the codec ----------------------------------------------------------------------------------------
def digest_mark_of(digest: bool, overlapping: bool) -> bytes | None:
    """The `O` record of a page whose cluster is a digest's (`DIGEST_MARK`), of overlapping stories; None: not one."""
    return OVERLAPPING_MARK if overlapping else DIGEST_MARK if digest else None


def id_key(prefix: bytes, page_id: str) -> bytes:
    """A record's key: its kind, then the page id."""
    return prefix + page_id.encode("utf-8", "surrogatepass")


def waiting_key(page_id: str, order: bytes) -> bytes:
    """A pending page's key (`W`): two pages may share an id, so its order follows."""
    return id_key(WAITING, page_id) + b"\x00" + order


def roots_json(roots: Mapping[str, Root]) -> dict[str, list[str]]:
    """Page id -> its cluster's first page, as JSON (orders in hex)."""
    return {page_id: [order.hex(), root] for page_id, (order, root) in roots.items()}


def roots_from_json(value: Mapping[str, list[str]]) -> dict[str, Root]:
    """Page id -> its cluster's first page (order, id), from the JSON `roots_json` made."""
    return {page_id: (bytes.fromhex(order), root) for page_id, (order, root) in value.items()}


def pages_json(pages: Iterable[tuple[str, bytes]]) -> list[list[str]]:
    """(page id, order) pairs, as JSON (orders in hex)."""
    return [[page_id, order.hex()] for page_id, order in pages]


def pages_from_json(value: Iterable[list[str]]) -> list[tuple[str, bytes]]:
    """(page id, order) pairs, from the JSON `pages_json` made."""
    return [(page_id, bytes.fromhex(order)) for page_id, order in value]


def root_record(order: bytes, root: Root) -> bytes:
    """An `R` record: the page's order, then its cluster's first page's order and id."""
    return order + root[0] + root[1].encode("utf-8", "surrogatepass")


def root_of(record: bytes | None, order: bytes) -> Root | None:
    """The cluster an `R` record names for the page of `order` (None: the record is another page's, or missing)."""
    if record is None or record[:ORDER_BYTES] != order:
        return None
    return record[ORDER_BYTES: 2 * ORDER_BYTES], record[2 * ORDER_BYTES:].decode("utf-8", "surrogatepass")


def id_hash(page_id: str) -> bytes:
    """An earlier page's id as an `F` record keeps it (8 bytes)."""
    return xxhash.xxh3_64_digest(page_id.encode("utf-8", "surrogatepass"))


def released_as(finished: bytes) -> tuple[bytes, int]:
    """An `F` record's release byte and where its 8-byte match hashes start.

    The release byte is b"" in records written before 2026-12-01, which have none."""
    if (len(finished) - ORDER_BYTES) % 8 == 1:
        return finished[ORDER_BYTES: ORDER_BYTES + 1], ORDER_BYTES + 1
    return b"", ORDER_BYTES


def as_duplicate(finished: bytes) -> bytes:
    """An `F` record marked as a duplicate's (its release byte in upper case; a record without one as it is)."""
    released, start = released_as(finished)
    return finished if not released else finished[:ORDER_BYTES] + released.upper() + finished[start:]


def hashes_of(finished: bytes) -> Iterator[bytes]:
    """The 8-byte hashes of the earlier pages an `F` record names."""
    start = released_as(finished)[1]
    return (finished[i: i + 8] for i in range(start, len(finished), 8))


def earlier_matches(answers: Iterable[Answer], supplements: Iterable[Match]) -> dict[str, Match]:
    """The earlier matches of a page, each once: its answers', then its supplements'."""
    earlier: dict[str, Match] = {}
    for answer in answers:
        for match in answer.earlier:
            earlier.setdefault(match.page_id, match)
    for match in supplements:
        earlier.setdefault(match.page_id, match)
    return earlier


# -- the records --------------------------------------------------------------------------------------
@dataclass
class Pending:
    """A page not out yet (`W`): its parts, and the clusters of its earlier matches as their gathers said."""

    header: PageHeader | None = None
    answers: dict[int, Answer] = field(default_factory=dict)
    supplements: list[Match] = field(default_factory=list)
    completed_ms: int = 0  # when its last part arrived (the message's timestamp): the wait starts
    # earlier match id -> its cluster's first page (order, id) as its gather says ((b"", ""): none)
    roots: dict[str, Root] = field(default_factory=dict)
    askers: list[tuple[str, bytes]] = field(default_factory=list)  # later pages waiting for this one's cluster
    guesses: set[str] = field(default_factory=set)  # of `roots`, those its gather answered as a guess
    merges: dict[str, list[str]] = field(default_factory=dict)  # of `roots`, the clusters each merged (`RootReply`)
    overlaps: set[str] = field(default_factory=set)  # of `roots`, those in a digest's cluster (`RootReply.overlapping`)
    digests: set[str] = field(default_factory=set)  # of `roots`, those in any digest's cluster (`RootReply.digest`)

    def complete(self) -> bool:
        """Whether its header and the answer of every index partition the header names are in."""
        return self.header is not None and set(self.header.partitions) <= set(self.answers)

    def encode(self) -> bytes:
        """The `W` record's value: its header, answers, supplements, wait start, roots, askers and guesses as JSON."""
        return orjson.dumps({"header": None if self.header is None else self.header.as_json(),
                             "answers": [a.as_json() for a in self.answers.values()],
                             "supplements": [m.as_list() for m in self.supplements],
                             "completed_ms": self.completed_ms, "roots": roots_json(self.roots),
                             "askers": pages_json(self.askers), "guesses": sorted(self.guesses),
                             **({"merges": self.merges} if self.merges else {}),
                             **({"overlaps": sorted(self.overlaps)} if self.overlaps else {}),
                             **({"digests": sorted(self.digests)} if self.digests else {})})

    @classmethod
    def decode(cls, data: bytes) -> Pending:
        """The pending page `encode` wrote (fields a record written before them lacks: empty)."""
        value = orjson.loads(data)
        header = None if value["header"] is None else PageHeader.from_json(value["header"])
        answers = [Answer.from_json(a) for a in value["answers"]]
        return cls(header, {a.partition: a for a in answers},
                   [Match.from_list(m) for m in value.get("supplements", ())], value.get("completed_ms", 0),
                   roots_from_json(value.get("roots", {})), pages_from_json(value.get("askers", ())),
                   set(value.get("guesses", ())), value.get("merges", {}), set(value.get("overlaps", ())),
                   set(value.get("digests", ())))

    def earlier(self) -> dict[str, Match]:
        """Its earlier matches, each once: its answers', then its supplements' (`earlier_matches`)."""
        return earlier_matches(self.answers.values(), self.supplements)

    def joined(self) -> dict[str, Match]:
        """The earlier matches whose clusters the page may join: its duplicates and what it supersedes.

        Those are the matches whose gather it asks which cluster they joined; a related match is
        named by its page id (`related_to`), which needs no answer."""
        return {page_id: m for page_id, m in self.earlier().items() if m.joins}

    def roots_known(self) -> bool:
        """Whether every joined match's gather has answered which cluster it joined (a guess too: no more wait)."""
        return all(page_id in self.roots for page_id in self.joined())

    def roots_named(self) -> bool:
        """Whether every joined match's gather has named its cluster (no answer a guess)."""
        return self.roots_known() and not any(page_id in self.guesses for page_id in self.joined())


@dataclass(frozen=True)
class Held:
    """A complete page waiting for the watermarks of its index partitions."""

    page_id: str
    order: bytes
    partitions: tuple[int, ...]
    completed_ms: int


@dataclass
class Guessed:
    """A page out while its cluster was a guess (`G`): some joined match's cluster not named by that match's gather.

    Out by its wait (its verdict then used the index partitions' roots, `gather_verdicts.decided`), or a late match
    came to a page that went out in a cluster of its own. `matches`: its joined matches; `roots`:
    those named since; `cluster`, `merged`: what its verdict named (`late_merge`). Later pages asking
    its cluster wait in `askers` (since `asked_ms`) until every cluster is named, or until the bound
    (a release marker): then they are answered with the guess, marked so (`told`, answered again
    once named), and so is every later asker (`bounded`)."""

    order: bytes
    cut: bool
    matches: dict[str, Match]
    roots: dict[str, Root]
    cluster: str
    merged: list[str]
    askers: list[tuple[str, bytes]] = field(default_factory=list)
    told: list[tuple[str, bytes]] = field(default_factory=list)
    asked_ms: int = 0
    bounded: bool = False
    early: bool = False  # out with an answer that was a guess (its bound, a wait): its late merges are released early
    merges: dict[str, list[str]] = field(default_factory=dict)  # of `roots`, the clusters each merged (`RootReply`)
    overlaps: set[str] = field(default_factory=set)  # of `roots`, those in a digest's cluster (`RootReply.overlapping`)
    digests: set[str] = field(default_factory=set)  # of `roots`, those in any digest's cluster (`RootReply.digest`)

    def named(self) -> bool:
        """Whether the gather of every one of its joined matches has named that match's cluster."""
        return set(self.matches) <= set(self.roots)

    def encode(self) -> bytes:
        """The `G` record's value, as JSON (orders in hex)."""
        return orjson.dumps({"order": self.order.hex(), "cut": self.cut, "matches": [m.as_list() for m in
                                                                                     self.matches.values()],
                             "roots": roots_json(self.roots), "cluster": self.cluster, "merged": self.merged,
                             "askers": pages_json(self.askers), "told": pages_json(self.told),
                             "asked_ms": self.asked_ms, "bounded": self.bounded, "early": self.early,
                             **({"merges": self.merges} if self.merges else {}),
                             **({"overlaps": sorted(self.overlaps)} if self.overlaps else {}),
                             **({"digests": sorted(self.digests)} if self.digests else {})})

    @classmethod
    def decode(cls, data: bytes) -> Guessed:
        """The `G` record `encode` wrote (fields a record written before them lacks: their defaults)."""
        value: dict[str, Any] = orjson.loads(data)
        return cls(bytes.fromhex(value["order"]), value["cut"],
                   {m.page_id: m for m in map(Match.from_list, value["matches"])}, roots_from_json(value["roots"]),
                   value["cluster"], value["merged"], pages_from_json(value.get("askers", ())),
                   pages_from_json(value.get("told", ())), value.get("asked_ms", 0), value.get("bounded", False),
                   value.get("early", False), value.get("merges", {}), set(value.get("overlaps", ())),
                   set(value.get("digests", ())))


# -- the store ----------------------------------------------------------------------------------------
class GatherStore:
    """A gather partition's records: read through what this batch staged, written in one WriteBatch on `commit`."""

    def __init__(self, path: Path) -> None:
        self.db = open_plain_db(path)
        self._pending: dict[bytes, Pending] = {}
        self._staged: dict[bytes, bytes] = {}
        self._deleted: set[bytes] = set()
        self._meta: dict[str, bytes] = {}

    def get(self, key: bytes) -> bytes | None:
        """A record as this batch left it."""
        staged = self._staged.get(key)
        if staged is not None:
            return staged
        return None if key in self._deleted else self.db.get(key)

    def put(self, key: bytes, value: bytes) -> None:
        """Stage a record for this batch's WriteBatch (a staged deletion of it is undone)."""
        self._staged[key] = value
        self._deleted.discard(key)

    def delete(self, key: bytes) -> None:
        """Stage a record's deletion for this batch's WriteBatch (a staged value of it is dropped)."""
        self._staged.pop(key, None)
        self._deleted.add(key)

    def load(self, page_id: str, order: bytes) -> Pending:
        """A page's pending record (new if none)."""
        key = waiting_key(page_id, order)
        pending = self._pending.get(key)
        if pending is None:
            data = self.get(key)
            pending = self._pending[key] = Pending() if data is None else Pending.decode(data)
            self._deleted.discard(key)
        return pending

    def forget(self, key: bytes) -> None:
        """A pending page is out: its `W` record goes."""
        self._pending.pop(key, None)
        self._deleted.add(key)

    def finished_record(self, page_id: str) -> bytes | None:
        """The `F` record of the page that got a verdict under this id (None: none yet)."""
        return self.get(id_key(FINISHED, page_id))

    def finished_order(self, page_id: str) -> bytes | None:
        """The order of the page that got a verdict under this id (None: none yet)."""
        finished = self.finished_record(page_id)
        return None if finished is None else finished[:ORDER_BYTES]

    def root_record(self, page_id: str) -> bytes | None:
        """The `R` record under this id as this batch left it (None: none); `root_of` reads it for one page."""
        return self.get(id_key(ROOT, page_id))

    def merges_of(self, page_id: str) -> tuple[str, ...]:
        """The clusters a page out merged into its own (its `K` record; none: ())."""
        data = self.get(id_key(MERGES, page_id))
        return () if data is None else tuple(orjson.loads(data))

    def add_merges(self, page_id: str, merged: Sequence[str]) -> None:
        """Stage these clusters among those the page merged (its `K` record), each once, in order."""
        kept = self.merges_of(page_id)
        more = tuple(dict.fromkeys((*kept, *merged)))
        if more != kept:
            self.put(id_key(MERGES, page_id), orjson.dumps(list(more)))

    def digest_mark(self, page_id: str) -> bytes | None:
        """Whether a page out is in a digest's cluster (its `O` record): `DIGEST_MARK`, `OVERLAPPING_MARK` or None."""
        return self.get(id_key(OVERLAPPING, page_id))

    def mark_digest(self, page_id: str, mark: bytes | None) -> None:
        """Stage the page's `O` record where its cluster is a digest's (`digest_mark_of`): told with its cluster."""
        if mark is not None:
            self.put(id_key(OVERLAPPING, page_id), mark)

    def await_mark(self, page_id: str, match: Match) -> None:
        """Stage a late match of a page out among those awaiting their cluster's mark (its `L` record)."""
        key = id_key(AWAITING_MARK, page_id)
        data = self.get(key)
        self.put(key, orjson.dumps({**(orjson.loads(data) if data else {}), match.page_id: match.as_list()}))

    def awaited(self, page_id: str, of: str) -> Match | None:
        """The late match `of` of a page out, if it awaited its cluster's mark: no longer (None: it did not)."""
        key = id_key(AWAITING_MARK, page_id)
        data = self.get(key)
        awaiting = orjson.loads(data) if data else {}
        item = awaiting.pop(of, None)
        if item is None:
            return None
        if awaiting:
            self.put(key, orjson.dumps(awaiting))
        else:
            self.delete(key)
        return Match.from_list(item)

    def guessed(self, page_id: str, order: bytes) -> Guessed | None:
        """The page's `G` record, if it is that page's (of `order`)."""
        data = self.get(id_key(GUESSED, page_id))
        guessed = None if data is None else Guessed.decode(data)
        return guessed if guessed is not None and guessed.order == order else None

    def guessed_records(self) -> Iterator[tuple[str, Guessed]]:
        """Every committed `G` record, with its page id."""
        it = self.db.iter()
        it.seek(GUESSED)
        while it.valid() and it.key()[:1] == GUESSED:
            yield it.key()[1:].decode("utf-8", "surrogatepass"), Guessed.decode(it.value())
            it.next()

    def stage_meta(self, name: str, value: bytes) -> None:
        """Stage a meta entry (`M`: an index partition's watermark, the offset the batch reaches) for `commit`."""
        self._meta[name] = value

    def get_meta(self, name: str) -> bytes | None:
        """A committed meta entry (None: not set); what this batch staged is not read."""
        return self.db.get(META + name.encode())

    def commit(self) -> None:
        """Write the batch's pending pages, staged records, deletions and meta entries in one WriteBatch."""
        wb = WriteBatch(raw_mode=True)
        for key in self._deleted:
            wb.delete(key)
        for key, pending in self._pending.items():
            wb.put(key, pending.encode())
        for key, value in self._staged.items():
            wb.put(key, value)
        for name, value in self._meta.items():
            wb.put(META + name.encode(), value)
        self.db.write(wb)
        self._clear()

    def _clear(self) -> None:
        self._pending.clear()
        self._staged.clear()
        self._deleted.clear()
        self._meta.clear()

    def waiting(self) -> int:
        """Pages not released yet: answers still missing, or held (committed state)."""
        it = self.db.iter()
        it.seek(WAITING)
        count = 0
        while it.valid() and it.key()[:1] == WAITING:
            count += 1
            it.next()
        return count

    def property_total(self, name: str) -> int:
        """A RocksDB integer property of the partition's store (0: not known), for metrics."""
        return self.db.property_int_value(name) or 0

    def close(self) -> None:
        """Drop what this batch staged and close the partition's store."""
        self._clear()
        self.db.close()
