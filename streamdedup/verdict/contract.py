"""The output contract: what every mode says about a record, as typed values, rendered in one place.

A record ends as a `Verdict` (unique or duplicate) or a `Rejection` (with its reason). Each has
one JSON form (`as_dict`: the `dedup` object of the file outputs and of the Kafka verdicts) and
one Kafka header form (`headers`: what a consumer can route on without parsing the value), used
by the worker, the Faust app and the file sink alike.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from streamdedup.record.rejection import Reason

DETAIL_HEADER_CHARS = 1000  # a header is for routing and a first look; the full detail is in the value


class Verdict(NamedTuple):  # one a page: immutable, and made in a fifth of a frozen dataclass's time
    """A judged page: unique or duplicate, its cluster and what it matched.

    Read by the same names as a `Rejection` (`reason`, `detail` and `origin` are None here; a
    rejection's verdict fields are None or empty), so `Verdict | Rejection` needs no isinstance to be
    read, and a list of both is one table (`pandas.DataFrame(results)`: the same 15 fields, in order)."""

    page_id: str
    status: str  # "unique" | "duplicate"
    cluster_id: str
    duplicate_of: str | None = None
    similarity: float | None = None
    method: str | None = None
    merged_clusters: tuple[str, ...] = ()
    time_note: str | None = None  # why the page's own fetch time was not used (store/retention.py)
    # a duplicate: the share of its own text (word pairs) absent from `duplicate_of` (verdict/engine.py)
    new_share: float | None = None
    supersedes: tuple[str, ...] = ()  # a unique page: earlier pages whose text is (nearly) all in it
    related_to: tuple[str, ...] = ()  # a unique page: earlier pages sharing much of its text, not all
    # its main text was cut to its first `max_text_chars` characters: compared by those only, so a
    # duplicate only of a page with the same whole text (what lies past the cut may be new; engine `as_cut`)
    text_cut: bool = False

    # a rejection's fields, None on a verdict: a list of both is read by the same names, and is one
    # table whose rows line up (`pandas.DataFrame(results)`: both are tuples of these 15 fields)
    reason: None = None
    detail: None = None
    origin: None = None

    def as_dict(self) -> dict[str, Any]:
        """The verdict as the `dedup` object of its output record (the fields it has, similarity rounded)."""
        out: dict[str, Any] = {
            "id": self.page_id,
            "status": self.status,
            "duplicate_of": self.duplicate_of,
            "similarity": None if self.similarity is None else round(self.similarity, 4),
            "method": self.method,
            "cluster_id": self.cluster_id,
        }
        if self.new_share is not None:
            out["new_share"] = round(self.new_share, 4)
        if self.merged_clusters:
            out["merged_clusters"] = list(self.merged_clusters)
        if self.supersedes:
            out["supersedes"] = list(self.supersedes)
        if self.related_to:
            out["related_to"] = list(self.related_to)
        if self.text_cut:
            out["text_cut"] = True
        if self.time_note:
            out["time_note"] = self.time_note
        return out


class _RejectionFields(NamedTuple):
    """A rejection's fields: a verdict's, in its order (none judged: None or empty), then why."""

    page_id: str | None
    status: str
    cluster_id: None
    duplicate_of: None
    similarity: None
    method: None
    merged_clusters: tuple[str, ...]
    time_note: None
    new_share: None
    supersedes: tuple[str, ...]
    related_to: tuple[str, ...]
    text_cut: bool
    reason: str
    detail: str
    origin: str


class Rejection(_RejectionFields):
    """A record not judged: why (`reason`, `detail`) and where it came from (`origin`).

    `Rejection(reason, detail, origin, page_id=None)`: `reason` a `record.rejection.Reason` value;
    `origin` file:line, file@offset, topic[partition]@offset or "item N"; `page_id` the page's id
    where it is known (a repeated id). Its other fields are a `Verdict`'s, in a verdict's order,
    as a record that was not judged has them (`status` "rejected", `cluster_id`, `duplicate_of`,
    ... None, `supersedes`, ... empty, `text_cut` False): `v.duplicate_of` reads (and type-checks)
    on `Verdict | Rejection` without an isinstance, and a list of both is one table whose columns
    line up (`pandas.DataFrame(results)`; a frozen dataclass before, which pandas could not mix)."""

    __slots__ = ()

    def __new__(cls, reason: str, detail: str, origin: str, page_id: str | None = None) -> Rejection:
        """A rejection of a record: its reason, detail, origin and page id where known; the verdict fields empty."""
        return super().__new__(cls, page_id, "rejected", None, None, None, None, (), None, None, (), (), False,
                               reason, detail, origin)

    def __getnewargs__(self) -> tuple[str, str, str, str | None]:
        """The constructor's arguments: a copy or a pickle makes the same rejection."""
        return self.reason, self.detail, self.origin, self.page_id

    def __repr__(self) -> str:
        return (f"Rejection(reason={self.reason!r}, detail={self.detail!r}, origin={self.origin!r}, "
                f"page_id={self.page_id!r})")

    @classmethod
    def repeated_id(cls, page_id: str, origin: str) -> Rejection:
        """A second record under an id already judged: `duplicate_id`, naming the id."""
        return cls(Reason.DUPLICATE_ID.value, f"page id {page_id!r} was already processed: a record with this id (its "
                   "own, or made from its url and fetch time) was judged before; give it another id to judge it again",
                   origin, page_id)

    def as_dict(self) -> dict[str, Any]:
        """The rejection as the `dedup` object of its output record."""
        out = {"status": self.status, "reason": self.reason, "detail": self.detail, "origin": self.origin}
        if self.page_id is not None:
            out["id"] = self.page_id
        return out


def headers(dedup: Mapping[str, Any], source: str = "") -> list[tuple[str, bytes]]:
    """The Kafka headers of an outcome (its `dedup` object).

    Status and, by kind, cluster, original page, method and similarity, or reason and detail;
    `dedup.source` names the input message."""
    status = dedup["status"]
    if status == "rejected":
        out = [("dedup.status", b"rejected"), ("dedup.reason", str(dedup["reason"]).encode()),
               ("dedup.detail", str(dedup.get("detail", ""))[:DETAIL_HEADER_CHARS].encode())]
    else:
        out = [("dedup.status", status.encode()), ("dedup.cluster_id", dedup["cluster_id"].encode()),
               ("dedup.duplicate_of", (dedup.get("duplicate_of") or "").encode()),
               ("dedup.method", (dedup.get("method") or "").encode())]
        if dedup.get("similarity") is not None:
            out.append(("dedup.similarity", str(dedup["similarity"]).encode()))
    if source:
        out.append(("dedup.source", source.encode()))
    return out
