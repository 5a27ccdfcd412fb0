"""A gathered page's verdict, and what a gather emits: pure, no store (`gather_stage.GatherPartition` keeps the state).

`verdict_of` gives a page's `dedup` object from its index partitions' answers, its supplements and
the clusters its matches' gathers named, by the one engine (`verdict/engine.py`), as file mode
does; `Decided`, `LateMatch`, `RelatedLeftOut` and `LateMerge` are what a gather emits besides the
root asks and replies (`Emitted`), with the cluster events of late matches.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from streamdedup.runtime.scaleout.clusters import UnionFind
from streamdedup.runtime.scaleout.gather_records import Root, digest_mark_of, earlier_matches
from streamdedup.runtime.scaleout.messages import Answer, Match, PageHeader, RootAsk, RootReply
from streamdedup.verdict.contract import Verdict
from streamdedup.verdict.engine import Candidate, decide, digest_of_overlapping, started_digest

__all__ = ["AFTER_IDLE", "LATE_PAGE", "RELEASED_EARLY", "Decided", "Emitted", "LateMatch", "LateMerge",
           "RelatedLeftOut", "decided", "late_match_event", "late_related_event", "stories_of",
           "verdict_and_root", "verdict_of"]


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
    names as merged (`verdict_and_root`); once every one is named, the merges file mode's verdict
    names that this one did not. Counted by how the page went out, as a late match."""

    event: dict[str, Any]
    cause: str = RELEASED_EARLY


Emitted = Decided | LateMatch | RelatedLeftOut | RootAsk | RootReply | LateMerge


def verdict_of(header: PageHeader, answers: Iterable[Answer], supplements: Iterable[Match] = (),
               roots: Mapping[str, Root] | None = None, merges: Mapping[str, Iterable[str]] | None = None,
               overlaps: Iterable[str] = (), digests: Iterable[str] = ()) -> dict[str, Any]:
    """The page's `dedup` object from all its answers and supplements (pure)."""
    return verdict_and_root(header, earlier_matches(answers, supplements), roots or {}, (), merges, overlaps,
                            digests)[0]


def verdict_and_root(header: PageHeader, earlier: Mapping[str, Match], roots: Mapping[str, Root],
                      guesses: Iterable[str] = (), merges: Mapping[str, Iterable[str]] | None = None,
                      overlaps: Iterable[str] = (), digests: Iterable[str] = ()
                      ) -> tuple[dict[str, Any], Root, bytes | None]:
    """The page's `dedup` object, its cluster's first page (order, id) and whether that is a digest's (`decided`)."""
    verdict, root, mark = decided(header.page_id, header.order, header.text_cut, earlier, roots, guesses, merges,
                                  overlaps, digests)
    dedup = verdict._replace(time_note=header.time_note).as_dict()
    if header.arrival:  # an undated page: where it came, which orders its story (as file mode's `Detector`)
        dedup["arrival"] = list(header.arrival)
    return dedup, root, mark


def decided(page_id: str, order: bytes, text_cut: bool, earlier: Mapping[str, Match], roots: Mapping[str, Root],
             guesses: Iterable[str] = (), merges: Mapping[str, Iterable[str]] | None = None,
             overlaps: Iterable[str] = (), digests: Iterable[str] = ()) -> tuple[Verdict, Root, bytes | None]:
    """The page's verdict, its cluster's first page (order, id) and whether that cluster is a digest's (its `O` mark).

    An earlier match's cluster is the one its gather named (`roots`; the index partition's where
    none was named: a page released by its wait before every answer came; `guesses`: matches whose
    gather answered with a guess of its own). A cluster only guessed may be stale (that partition
    did not see the match's own matches): `decide` never names it as merged (`engine.joined_roots`),
    so a merge may be missed under load, never made up. `merges`: the clusters each match merged into
    its own, as its gather told (`RootReply.merged`): clusters one of the page's matches merged are one
    story to the digest rule (`stories_of`; a merge no match of the page made is not known here).
    `overlaps`: matches whose gather said their cluster is a digest's of overlapping stories (as file mode
    reads the cluster's first record: `engine.digest_of_overlapping`); the page's is, where it is such a
    digest or joins such a cluster, which its gather tells its askers (`RootReply.overlapping`). `digests`:
    so of a digest's of any stories (`engine.started_digest`, `RootReply.digest`); the mark returned
    (`gather_records.digest_mark_of`: None where the page's cluster is no digest's) is both."""
    candidates = []
    guessed: set[str] = set()
    guesses = set(guesses)
    for m in earlier.values():
        root_order, root_id = roots.get(m.page_id) or (b"", "")
        if not root_id:
            root_order, root_id = m.root_order, m.root_id
            guessed.add(root_id)
        elif m.page_id in guesses:
            guessed.add(root_id)
        candidates.append(Candidate(m.order, m.page_id, m.rule, m.similarity, root_order, root_id, m.relation,
                                    m.new_share, m.their_new_share, m.new_paragraph, m.same_site))
    named = {root for page_id, (_, root) in roots.items() if page_id not in guesses}
    if merges:
        stories = stories_of([(c.root_id, merges.get(c.page_id, ())) for c in candidates])
        candidates = [replace(c, story_id=stories[c.root_id]) for c in candidates]
    marked = {roots[m][1] for m in overlaps if m in roots}
    digested = marked | {roots[m][1] for m in digests if m in roots}
    if digested:
        candidates = [replace(c, overlapping=c.root_id in marked, digest=c.root_id in digested) for c in candidates]
    verdict = decide(page_id, candidates, text_cut, guessed - named)
    cluster = verdict.cluster_id
    root_order = next((c.root_order for c in candidates if c.root_id == cluster), order)
    overlapping = cluster in marked or digest_of_overlapping(page_id, candidates, verdict)
    digest = overlapping or cluster in digested or started_digest(page_id, candidates, verdict)
    return verdict, (root_order, cluster), digest_mark_of(digest, overlapping)


def stories_of(merges: Iterable[tuple[str, Iterable[str]]]) -> dict[str, str]:
    """Each cluster's story: clusters joined where one merged the others (cluster, the clusters merged into it).

    A union of the clusters named (`clusters.UnionFind`), each mapped to one of its story's (the first met of them)."""
    union = UnionFind()
    for cluster, merged in merges:
        union.find(cluster)
        for other in merged:
            union.union(cluster, other)
    return {cluster: union.find(cluster) for cluster in list(union.parent)}


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
