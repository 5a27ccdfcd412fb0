"""The news feed's fold: cluster events (or verdicts) -> "story -> its pages", and the lines it reads.

The events a judged page gives (`view_event`, keyed by `view_key`), its verdict without the body
(`verdict_line`), `Stories`, which folds events into stories in any order, and file mode's side:
`read_folder` (a dedup folder's verdicts.jsonl), `write_stories` (clusters.jsonl), `table`.
Reading the events from Kafka is `clusters.reader`'s.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson

from streamdedup.record.page import FIELD_ALIASES, parse_timestamp
from streamdedup.record.passed import bounded_headers

CLUSTERS_FILE = "clusters.jsonl"
VERDICTS_FILE = "verdicts.jsonl"
MEMBER_FIELDS = ("id", "url", "fetch_time", "status", "duplicate_of")
Event = Mapping[str, Any]
# the event types this version folds (docs/reference.md, "Cluster events"): a type added later is skipped, told once
EVENT_TYPES = frozenset({"created", "joined", "merged", "late_match", "late_related"})

log = logging.getLogger(__name__)


def when(fetch_time: Any) -> tuple[int, float, str]:
    """A fetch time as it was given, as a key that orders instants, whatever their form.

    ISO-8601 in any zone, WARC's 14 digits, epoch s or ms (the forms the reader accepts) by their
    instant; before: by their text, so 1704067200 came before any ISO date, 20240102000000 after
    2024-01-03, and +05:00 after the Z of a later instant. None first, as before; a time not
    read as any of them last, by its text."""
    if fetch_time is None:
        return (0, 0.0, "")
    try:
        return (1, parse_timestamp(fetch_time).timestamp(), "")
    except (ValueError, TypeError, OverflowError, OSError):
        return (2, 0.0, str(fetch_time))


def _first(record: Mapping[str, Any], field: str) -> Any:
    return next((record[name] for name in FIELD_ALIASES[field] if record.get(name) is not None), None)


def page_fields(record: Mapping[str, Any]) -> tuple[Any, Any]:
    """The record's url and fetch time as it gave them (by the field names the reader accepts)."""
    return _first(record, "url"), _first(record, "fetched_at")


def verdict_line(record: Mapping[str, Any], dedup: Mapping[str, Any], headers: Sequence[tuple[str, bytes | None]]
                 | None = None, duplicate_of_url: str | None = None, headers_omitted: int = 0) -> dict[str, Any]:
    """A record's verdict without its body.

    Id, url, fetch time, the `dedup` object whole (and the duplicate_of page's url if known, the
    input's Kafka headers if any: over `record.passed.PASSED_BYTES` in all, `headers_omitted`, their
    size, instead; `headers_omitted` given: an earlier step left them out)."""
    url, fetched = page_fields(record)
    line: dict[str, Any] = {"id": dedup.get("id", _first(record, "id")), "url": url, "fetch_time": fetched}
    if duplicate_of_url is not None:
        line["duplicate_of_url"] = duplicate_of_url
    headers, headers_omitted = bounded_headers(headers, headers_omitted)
    if headers:
        line["headers"] = [[name, None if value is None else value.decode("utf-8", "replace")]
                           for name, value in headers]
    if headers_omitted:
        line["headers_omitted"] = headers_omitted
    line["dedup"] = dict(dedup)
    return line


def view_event(dedup: Mapping[str, Any], url: Any, fetch_time: Any) -> dict[str, Any]:
    """A judged page's cluster-view event.

    `created` (it started its cluster) or `joined`, with its url, fetch time, status and the
    clusters it bridged (`merged`)."""
    page_id, cluster_id = dedup["id"], dedup["cluster_id"]
    event: dict[str, Any] = {"type": "created" if cluster_id == page_id else "joined", "page_id": page_id,
                             "cluster_id": cluster_id, "url": url, "fetch_time": fetch_time,
                             "status": dedup["status"], "duplicate_of": dedup.get("duplicate_of"),
                             "similarity": dedup.get("similarity"), "method": dedup.get("method")}
    if dedup.get("merged_clusters"):
        event["merged"] = list(dedup["merged_clusters"])
    for name in ("supersedes", "related_to"):  # the directional verdict's links, passed on as they are
        if dedup.get(name):
            event[name] = dedup[name]
    return event


def view_key(event: Event) -> bytes:
    """The compacted topic's key: the page id (a late match: one key per pair, kept beside it)."""
    if event["type"] == "late_match":
        key = f"{event['page_id']} late {event['duplicate_of']}"
    elif event["type"] == "late_related":
        key = f"{event['page_id']} related {' '.join(event['related_to'])}"
    else:
        key = event["page_id"]
    return str(key).encode("utf-8", "surrogatepass")


class Stories:
    """Story -> pages, folded from cluster events (`apply`) or verdicts (`add`), in any order.

    A story is a connected component of pages (a page, the cluster it joined, the page it
    duplicates, the clusters it merged, its late matches). It is named by its earliest cluster:
    the cluster id whose page has the smallest fetch time (then id; ids without a known page
    last), which is the verdicts' `cluster_id` for a story no merge or late match made. The same
    events in any order give the same stories, names included.

    A page kept as unique that shares much of earlier pages but adds its own text (a follow-up)
    names them in `related_to`; it stays in its own story, which is *related* to theirs
    (`related_of`, a story's `related`): resolved through merges when asked, both ways."""

    def __init__(self) -> None:
        self.pages: dict[str, dict[str, Any]] = {}  # page id -> its member fields
        self._names: dict[str, set[str]] = {}  # page id -> the earlier pages its verdict named (their order)
        self._parent: dict[str, str] = {}
        self._name: dict[str, tuple[int, tuple[int, float, str], str]] = {}  # root -> its earliest cluster's rank
        self._cluster_ids: set[str] = set()
        self._held: dict[str, int] = {}  # root -> how many pages of this view its component holds
        self._links: dict[str, set[tuple[str, str]]] = {}  # root -> the (page, related page) pairs of either end in it
        self.skipped: dict[str, int] = {}  # an event type this version does not know -> how many were skipped

    def _root(self, item: str) -> str:
        parent = self._parent.setdefault(item, item)
        while parent != self._parent.setdefault(parent, parent):
            self._parent[item] = parent = self._parent[parent]
        return parent

    def _rank(self, cluster_id: str) -> tuple[int, tuple[int, float, str], str]:
        member = self.pages.get(cluster_id)
        fetched = None if member is None else member["fetch_time"]
        return (1, when(None), cluster_id) if fetched is None else (0, when(fetched), cluster_id)

    def _cluster(self, cluster_id: str) -> None:
        root = self._root(cluster_id)
        rank = self._rank(cluster_id)
        if root not in self._name or rank < self._name[root]:
            self._name[root] = rank

    def _join(self, a: str, b: str) -> None:
        root_a, root_b = self._root(a), self._root(b)
        if root_a == root_b:
            return
        self._parent[root_b] = root_a
        names = [n for n in (self._name.pop(root_a, None), self._name.pop(root_b, None)) if n is not None]
        if names:
            self._name[root_a] = min(names)
        if held := self._held.pop(root_b, 0):
            self._held[root_a] = self._held.get(root_a, 0) + held
        if (links_b := self._links.pop(root_b, None)) is not None:  # the smaller set into the larger
            links_a = self._links.setdefault(root_a, set())
            if len(links_a) < len(links_b):
                links_a, links_b = links_b, links_a
                self._links[root_a] = links_a
            links_a |= links_b

    def story_of(self, page_id: str) -> str:
        """The story (its earliest cluster's id) `page_id` is in."""
        root = self._root(page_id)
        return self._name[root][2] if root in self._name else root

    def apply(self, event: Event) -> str:
        """Fold one event (created, joined, merged, late_match, late_related); returns the page's story.

        An event of a type this version does not know (written by a later one) is skipped, counted in
        `skipped`, with one WARNING a type naming the fix: folded as a join, it could merge stories it
        only relates, or relate none it should."""
        page, cluster = event["page_id"], event["cluster_id"]
        kind = event.get("type")
        if kind is not None and kind not in EVENT_TYPES:
            self._skip(str(kind), page)
            return self.story_of(page)
        if kind in ("created", "joined"):
            if page not in self.pages:
                root = self._root(page)
                self._held[root] = self._held.get(root, 0) + 1
            member = self.pages.setdefault(page, dict.fromkeys(MEMBER_FIELDS))
            member["id"] = page
            if event.get("related_to"):  # the earlier pages it shares much with, not all: other stories
                member["related_to"] = list(event["related_to"])
                for related in member["related_to"]:
                    for end in (page, related):
                        self._links.setdefault(self._root(end), set()).add((page, related))
            for name in MEMBER_FIELDS[1:]:
                if event.get(name) is not None:
                    member[name] = event[name]
            if member["fetch_time"] is None and event.get("fetched_at") is not None:
                member["fetch_time"] = event["fetched_at"]  # a `pages.clusters` event names it so
            if member["status"] is None:  # a `pages.clusters` event has none: a page kept names no duplicate_of
                member["status"] = "duplicate" if event.get("duplicate_of") else "unique"
        elif kind == "late_related":  # found after the page's verdict: its story is related to theirs
            for related in event.get("related_to", ()):
                for end in (page, related):
                    self._links.setdefault(self._root(end), set()).add((page, related))
        if kind != "late_match":  # the earlier pages its verdict names, the clusters it bridged too
            named = {event.get("duplicate_of"), *event.get("supersedes", ()), *event.get("related_to", ()),
                     *event.get("merged", ())}
            named.discard(None)
            if named:
                self._names.setdefault(page, set()).update(named)
        self._join(cluster, page)
        for other in (event.get("duplicate_of"), *event.get("merged", ())):
            if other:
                self._join(cluster, other)
        ranked = (cluster, *event.get("merged", ()))
        for named in ranked:
            self._cluster_ids.add(named)
            self._cluster(named)
        # its fetch time, which ranks its cluster, may come only now (ranked above already: the same again)
        if page in self._cluster_ids and page not in ranked:
            self._cluster(page)
        return self.story_of(page)

    def _skip(self, kind: str, page: str) -> None:
        if kind not in self.skipped:
            log.warning("cluster event type %r (page %s) is unknown to this streamdedup, which skips such events (the "
                        "stories leave out what they say): upgrade streamdedup where the stories are read to the "
                        "workers' version", kind, page)
        self.skipped[kind] = self.skipped.get(kind, 0) + 1

    def add(self, dedup: Mapping[str, Any], url: Any, fetch_time: Any) -> None:
        """Fold a unique or duplicate page's verdict."""
        self.apply(view_event(dedup, url, fetch_time))

    def related_of(self, story_or_page_id: str) -> list[str]:
        """The stories related to the one holding `story_or_page_id` (a page's id or a story's), by name.

        Related: a page of one names a page of the other in `related_to` (either way: a story's
        follow-ups and the stories it follows up). Named as `story_of` names them now, merges
        included; only stories holding pages of this view (a related page not read yet, or filed
        before a `Deduplicator` opened its store, is in its page's `related_to` alone); [] for an
        id in no story of this view. Costs the story's related pairs, not the view's pages."""
        if story_or_page_id not in self._parent:
            return []
        root = self._root(story_or_page_id)
        return self._related_names(root) if self._held.get(root) else []

    def _related_names(self, root: str) -> list[str]:
        others = set()
        for pair in self._links.get(root, ()):
            for end in pair:
                other = self._root(end)
                if other != root and self._held.get(other):
                    others.add(other)
        return sorted(self.story_of(other) for other in others)

    def url_of(self, page_id: str | None) -> str | None:
        member = self.pages.get(page_id) if page_id is not None else None
        return None if member is None else member["url"]

    def stories(self) -> list[dict[str, Any]]:
        """The current stories, by name, each with the stories it is `related` to and its pages in the order fetched.

        [{cluster_id, size, related, pages}]; `related`: `related_of` the story, by name. A page:
        {id, url, fetch_time, status, duplicate_of} and, where its verdict names them, `related_to`.

        Pages by fetch time; those of one fetch time after every earlier page their verdicts name
        (duplicate_of, supersedes, related_to, the clusters they merged), which is the order they were
        judged in; then by id.
        A page without a fetch time (a polled live page) comes after the pages its verdict names."""
        groups: dict[str, list[dict[str, Any]]] = {}
        roots: dict[str, str] = {}
        for page_id, member in self.pages.items():
            root = self._root(page_id)
            name = roots[root] = self.story_of(page_id)
            groups.setdefault(name, []).append(member)
        related = {name: self._related_names(root) for root, name in roots.items()}
        place = self._places()
        return [{"cluster_id": name, "size": len(members), "related": related[name],
                 "pages": sorted(members, key=lambda m: (*place[m["id"]], m["id"]))}
                for name, members in sorted(groups.items())]

    def _places(self) -> dict[str, tuple[tuple[int, float, str], int]]:
        """Each page's place in its story: its fetch time, then its longest chain of named pages.

        The chain: the earlier pages its verdict named, in pages this view holds. A page without
        a fetch time takes the latest of the pages it names (a polled page after the fetch it
        repeats or revises), so it comes after them however they are dated. Walked in page id order
        (the names of a page sorted too), so named pages that name each other in a cycle (verdicts
        of several workers) place the same whatever order the events came in."""
        depth: dict[str, int] = {}
        time: dict[str, tuple[int, float, str]] = {}
        for start in sorted(self.pages):
            if start in depth:
                continue
            stack, open_ = [start], {start}
            while stack:  # depth-first without recursion: a live page polled 10,000 times is one chain
                page = stack[-1]
                names = sorted(n for n in self._names.get(page, ()) if n in self.pages)
                todo = [n for n in names if n not in depth and n not in open_]
                if todo:
                    stack.extend(todo)
                    open_.update(todo)
                    continue
                depth[page] = 1 + max((depth.get(n, -1) for n in names), default=-1)
                fetched = self.pages[page]["fetch_time"]
                time[page] = when(fetched) if fetched is not None else max(
                    (time[n] for n in names if n in time), default=when(None))
                stack.pop()
                open_.discard(page)
        return {page: (time[page], depth[page]) for page in depth}

    def __len__(self) -> int:
        """How many stories hold pages of this view: kept as events are folded, so asking costs nothing.

        (A feed's loop asks it at every poll: a walk over every page cost ~0.55 s at 1 M pages.)"""
        return len(self._held)  # a root's count of pages: moved to the new root on a join, never 0


def complete_lines(path: Path, length: int | None = None) -> Iterator[bytes]:
    """The whole lines of a JSON-lines file, a partial last line left out.

    Only its first `length` bytes are read, if given. A partial last line is a write in progress."""
    if not path.exists():
        return
    with open(path, "rb") as handle:
        remaining = length
        for line in handle:
            if remaining is not None:
                if remaining <= 0:
                    break
                remaining -= len(line)
            if line.endswith(b"\n"):
                yield line


def fold_verdicts(lines: Iterable[bytes], stories: Stories | None = None) -> Stories:
    """Fold verdict-only lines (or full output lines: record + dedup) into stories."""
    stories = stories if stories is not None else Stories()
    for line in lines:
        data = orjson.loads(line)
        dedup = data["dedup"]
        if dedup["status"] == "rejected":
            continue
        stories.add(dedup, *page_fields(data))  # a verdict line names them url and fetch_time
    return stories


def read_folder(out_dir: str | Path) -> Stories:
    """The stories of a file-mode output folder, from its verdicts.jsonl.

    The outputs of a version before verdicts.jsonl are read from unique.jsonl and duplicates.jsonl instead.
    Raises FileNotFoundError, naming the folder, where it holds none of them (no dedup run's folder)."""
    out = Path(out_dir)
    if (out / VERDICTS_FILE).exists():
        return fold_verdicts(complete_lines(out / VERDICTS_FILE))
    if not any((out / name).exists() for name in ("unique.jsonl", "duplicates.jsonl")):
        raise FileNotFoundError(f"{out} holds no {VERDICTS_FILE} (nor unique.jsonl, duplicates.jsonl): give the "
                                "--out folder of a streamdedup dedup run")
    stories = Stories()
    for name in ("unique.jsonl", "duplicates.jsonl"):
        fold_verdicts(complete_lines(out / name), stories)
    return stories


def write_stories(path: Path, stories: Stories) -> None:
    """Replace `path` with one line per story, whole (a crash leaves the old file or the new one)."""
    temporary = path.with_name(f".{path.name}.tmp")
    with open(temporary, "wb") as handle:
        for story in stories.stories():
            handle.write(orjson.dumps(story, option=orjson.OPT_APPEND_NEWLINE))
    temporary.replace(path)


def table(stories: Sequence[Mapping[str, Any]]) -> str:
    """Stories as a plain table: one block a story, a line a page."""
    lines = []
    for story in stories:
        related = f"  related: {', '.join(story['related'])}" if story.get("related") else ""
        lines.append(f"{story['cluster_id']}  ({story['size']} pages){related}")
        for member in story["pages"]:
            shown = member["url"] or member["id"]
            lines.append(f"  {member['status'] or '':<9} {member['fetch_time'] or '-':<27} {shown}")
    return "\n".join(lines)
