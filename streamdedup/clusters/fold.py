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
    clusters it bridged (`merged`); an undated page with its `arrival` (its place in its input)."""
    page_id, cluster_id = dedup["id"], dedup["cluster_id"]
    event: dict[str, Any] = {"type": "created" if cluster_id == page_id else "joined", "page_id": page_id,
                             "cluster_id": cluster_id, "url": url, "fetch_time": fetch_time,
                             "status": dedup["status"], "duplicate_of": dedup.get("duplicate_of"),
                             "similarity": dedup.get("similarity"), "method": dedup.get("method")}
    if dedup.get("merged_clusters"):
        event["merged"] = list(dedup["merged_clusters"])
    for name in ("supersedes", "related_to", "arrival"):  # the directional verdict's links, an undated page's place
        if dedup.get(name):
            event[name] = dedup[name]
    return event


def view_key(event: Event) -> bytes:
    """The compacted topic's key: the page id (a late match: one key per pair, a late merge one, kept beside it)."""
    if event["type"] == "late_match":
        key = f"{event['page_id']} late {event['duplicate_of']}"
    elif event["type"] == "late_related":
        key = f"{event['page_id']} related {' '.join(event['related_to'])}"
    elif event.get("late"):  # a merge found after the page's verdict (`merged`): beside the page's own event
        key = f"{event['page_id']} merged"
    else:
        key = event["page_id"]
    return str(key).encode("utf-8", "surrogatepass")


# a page's status, one string each (a verdict line read back holds its own copy: ~55 bytes a page)
_STATUSES = {status: status for status in ("unique", "duplicate")}


class _Node:
    """An id the fold met: a page of this view (`status` set), or a cluster or page one named, in its story's tree.

    One object an id, its slots in place of a dict a page and an entry in each of five dicts: 850-910
    bytes a page -> ~400 (bench/fold_memory.py, the page's id, url and fetch time included). A node
    without `parent` is its story's root: it holds the story's name (`name_id`, ranked by
    `name_time`, the fetch time it was ranked by) and how many pages of this view the story holds
    (`held`)."""

    __slots__ = ("arrival", "cluster", "duplicate_of", "fetch_time", "held", "id", "merged", "name_id", "name_time",
                 "names", "parent", "related_to", "status", "supersedes", "url")

    def __init__(self, node_id: str) -> None:
        self.id = node_id
        self.url: Any = None
        self.fetch_time: Any = None
        # an undated page's place in its input (its verdict's `arrival`): orders pages that tie otherwise; (): none
        self.arrival: tuple[int, ...] = ()
        self.status: str | None = None
        self.duplicate_of: str | None = None
        self.related_to: tuple[str, ...] | None = None
        self.supersedes: tuple[str, ...] | None = None  # the earlier pages its verdict holds whole (a revision's)
        self.merged: tuple[str, ...] | None = None  # the clusters it bridged into its own (late merges included)
        # the earlier pages its verdict named: one id as itself (a duplicate's duplicate_of), more as a sorted tuple
        self.names: str | tuple[str, ...] | None = None
        self.parent: _Node | None = None
        self.name_id: str | None = None
        self.name_time: Any = None
        self.held = 0
        self.cluster = False  # ranked as a cluster (a story's name may be its id)

    def named(self) -> tuple[str, ...]:
        return () if self.names is None else (self.names,) if isinstance(self.names, str) else self.names

    def member(self) -> dict[str, Any]:
        """The page as `stories()` gives it: {id, url, fetch_time, status, duplicate_of} and what its events name.

        Each of `supersedes`, `merged`, `related_to` where its verdict (or a late merge) names it."""
        line = {"id": self.id, "url": self.url, "fetch_time": self.fetch_time, "status": self.status,
                "duplicate_of": self.duplicate_of}
        for name in ("supersedes", "merged", "related_to"):
            if (value := getattr(self, name)) is not None:
                line[name] = list(value)
        return line


def _arrival(value: Any) -> tuple[int, ...] | None:
    """An event's `arrival` as a tuple of whole numbers; None where it has none, or none of that form."""
    if isinstance(value, list) and value and all(type(item) is int for item in value):
        return tuple(value)
    return None


def _rank(cluster_id: str, fetched: Any) -> tuple[int, tuple[int, float, str], str]:
    """A cluster's rank as a story's name, by its page's fetch time (then id; none known: last)."""
    return (1, when(None), cluster_id) if fetched is None else (0, when(fetched), cluster_id)


class Stories:
    """Story -> pages, folded from cluster events (`apply`) or verdicts (`add`), in any order.

    A story is a connected component of pages (a page, the cluster it joined, the page it
    duplicates, the clusters it merged, its late matches). It is named by its earliest cluster:
    the cluster id whose page has the smallest fetch time (then id; ids without a known page
    last), which is the verdicts' `cluster_id` for a story no merge or late match made. The same
    events in any order give the same stories, names included.

    A page kept as unique that shares much of earlier pages but adds its own text (a follow-up)
    names them in `related_to`; it stays in its own story, which is *related* to theirs
    (`related_of`, a story's `related`): resolved through merges when asked, both ways.

    Each id is one `_Node` (its page's fields, its story's tree), an id named again held as the
    string first read (file mode keeps the fold for the job: ~400 bytes a page, its strings included)."""

    def __init__(self) -> None:
        self._nodes: dict[str, _Node] = {}  # every id met: pages of this view and the ids they name
        self._count = 0  # roots holding pages of this view: `len`
        self._links: dict[_Node, set[tuple[str, str]]] = {}  # root -> the (page, related page) pairs of an end in it
        self.skipped: dict[str, int] = {}  # an event type this version does not know -> how many were skipped

    def _node(self, item: str) -> _Node:
        node = self._nodes.get(item)
        if node is None:
            node = self._nodes[item] = _Node(item)
        return node

    def _root(self, node: _Node) -> _Node:
        """The root of `node`'s tree, the path to it made one step."""
        root = node
        while root.parent is not None:
            root = root.parent
        while node.parent is not None and node.parent is not root:
            node.parent, node = root, node.parent
        return root

    def _same(self, item: str) -> str:
        """`item` as the string the fold holds already (one copy an id), or itself."""
        node = self._nodes.get(item)
        return item if node is None else node.id

    def _cluster(self, node: _Node) -> None:
        root = self._root(node)
        if root.name_id is None or _rank(node.id, node.fetch_time) < _rank(root.name_id, root.name_time):
            root.name_id, root.name_time = node.id, node.fetch_time

    def _join(self, a: str, b: str) -> None:
        root_a, root_b = self._root(self._node(a)), self._root(self._node(b))
        if root_a is root_b:
            return
        root_b.parent = root_a
        if root_b.name_id is not None:
            if root_a.name_id is None or _rank(root_b.name_id, root_b.name_time) < _rank(root_a.name_id,
                                                                                      root_a.name_time):
                root_a.name_id, root_a.name_time = root_b.name_id, root_b.name_time
            root_b.name_id = root_b.name_time = None
        if root_b.held:
            self._count -= bool(root_a.held)
            root_a.held += root_b.held
            root_b.held = 0
        if (links_b := self._links.pop(root_b, None)) is not None:  # the smaller set into the larger
            links_a = self._links.setdefault(root_a, set())
            if len(links_a) < len(links_b):
                links_a, links_b = links_b, links_a
                self._links[root_a] = links_a
            links_a |= links_b

    def _link(self, page: str, related: str) -> None:
        pair = (self._node(page).id, self._node(related).id)
        for end in pair:
            self._links.setdefault(self._root(self._nodes[end]), set()).add(pair)

    @staticmethod
    def _name_of(root: _Node) -> str:
        return root.id if root.name_id is None else root.name_id

    def story_of(self, page_id: str) -> str:
        """The story (its earliest cluster's id) `page_id` is in."""
        node = self._nodes.get(page_id)
        return page_id if node is None else self._name_of(self._root(node))

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
        node = self._node(page)
        if kind in ("created", "joined"):
            self._page(node, event)
        elif kind == "merged" and event.get("merged"):  # a late merge (global topology): the page's, as file mode's
            node.merged = self._ids(*(node.merged or ()), *event["merged"])
        elif kind == "late_related":  # found after the page's verdict: its story is related to theirs
            for related in event.get("related_to", ()):
                self._link(page, related)
        self._join(cluster, page)
        for other in (event.get("duplicate_of"), *event.get("merged", ())):
            if other:
                self._join(cluster, other)
        if kind != "late_match":  # the earlier pages its verdict names, the clusters it bridged too
            self._name(node, event)
        ranked = (cluster, *event.get("merged", ()))
        for named in ranked:
            ranked_node = self._node(named)
            ranked_node.cluster = True
            self._cluster(ranked_node)
        # its fetch time, which ranks its cluster, may come only now (ranked above already: the same again)
        if node.cluster and page not in ranked:
            self._cluster(node)
        return self.story_of(page)

    def _page(self, node: _Node, event: Event) -> None:
        """A created or joined event's page: its fields, its story's count, its related pages."""
        if node.status is None:  # new to this view (a page's status is set below, never None again)
            root = self._root(node)
            self._count += not root.held
            root.held += 1
        if event.get("related_to"):  # the earlier pages it shares much with, not all: other stories
            for related in event["related_to"]:
                self._link(node.id, related)
            node.related_to = tuple(self._same(related) for related in event["related_to"])
        if event.get("supersedes"):  # a revision, a view-all page: the earlier fetches it holds whole
            node.supersedes = tuple(self._same(earlier) for earlier in event["supersedes"])
        if event.get("merged"):  # the clusters it bridged (a late merge's may have come first)
            node.merged = self._ids(*event["merged"], *(node.merged or ()))
        if event.get("url") is not None:
            node.url = event["url"]
        if event.get("fetch_time") is not None:
            node.fetch_time = event["fetch_time"]
        if (arrival := _arrival(event.get("arrival"))) is not None:
            node.arrival = arrival
        if (status := event.get("status")) is not None:
            node.status = _STATUSES.get(status, status) if isinstance(status, str) else status
        if event.get("duplicate_of") is not None:
            node.duplicate_of = self._node(event["duplicate_of"]).id
        if node.fetch_time is None and event.get("fetched_at") is not None:
            node.fetch_time = event["fetched_at"]  # a `pages.clusters` event names it so
        if node.status is None:  # a `pages.clusters` event has none: a page kept names no duplicate_of
            node.status = "duplicate" if event.get("duplicate_of") else "unique"

    def _ids(self, *ids: str) -> tuple[str, ...]:
        """`ids` once each, in the order first given, as the strings the fold holds."""
        return tuple(dict.fromkeys(self._same(item) for item in ids))

    def _name(self, node: _Node, event: Event) -> None:
        """Add the earlier pages `event` names (duplicate_of, supersedes, related_to, merged) to its page's."""
        named = {event.get("duplicate_of"), *event.get("supersedes", ()), *event.get("related_to", ()),
                 *event.get("merged", ())}
        named.discard(None)
        if not named:
            return
        names = {self._same(name) for name in named}.union(node.named())
        node.names = next(iter(names)) if len(names) == 1 else tuple(sorted(names))

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
        node = self._nodes.get(story_or_page_id)
        if node is None:
            return []
        root = self._root(node)
        return self._related_names(root) if root.held else []

    def _related_names(self, root: _Node) -> list[str]:
        others = set()
        for pair in self._links.get(root, ()):
            for end in pair:
                other = self._root(self._nodes[end])
                if other is not root and other.held:
                    others.add(other)
        return sorted(self._name_of(other) for other in others)

    def url_of(self, page_id: str | None) -> str | None:
        """The url of a page the stories hold (None: not known, or not yet given its verdict)."""
        node = self._nodes.get(page_id) if page_id is not None else None
        return None if node is None or node.status is None else node.url

    def stories(self) -> list[dict[str, Any]]:
        """The current stories, by name, each with the stories it is `related` to and its pages in the order fetched.

        [{cluster_id, size, related, pages}]; `related`: `related_of` the story, by name. A page:
        {id, url, fetch_time, status, duplicate_of} and, where its verdict names them, `related_to`.

        Pages by fetch time; those of one fetch time after every earlier page their verdicts name
        (duplicate_of, supersedes, related_to, the clusters they merged), which is the order they were
        judged in; then by id.
        A page without a fetch time (a polled live page) comes after the pages its verdict names;
        undated pages that tie there by the place their verdicts give (`arrival`: the order they
        came in, so were judged in), then by id."""
        return list(self.each_story())

    def each_story(self) -> Iterator[dict[str, Any]]:
        """`stories()` one at a time: a page's dict is made as its story is given (clusters.jsonl's lines)."""
        groups: dict[str, list[_Node]] = {}
        roots: dict[_Node, str] = {}
        for node in self._nodes.values():
            if node.status is not None:
                root = self._root(node)
                name = roots[root] = self._name_of(root)
                groups.setdefault(name, []).append(node)
        related = {name: self._related_names(root) for root, name in roots.items()}
        place = self._places()
        for name, members in sorted(groups.items()):
            members.sort(key=lambda m: (*place[m.id], m.arrival, m.id))
            yield {"cluster_id": name, "size": len(members), "related": related[name],
                   "pages": [member.member() for member in members]}

    def _places(self) -> dict[str, tuple[tuple[int, float, str], tuple[int, ...], int]]:
        """Each page's place in its story: its fetch time, its arrival, then its longest chain of named pages.

        The chain: the earlier pages its verdict named, in pages this view holds. A page without
        a fetch time takes the latest of the pages it names (a polled page after the fetch it
        repeats or revises), so it comes after them however they are dated; and the latest
        `arrival` of itself and of those of its time (undated pages of one time in the order they
        came, a page never before one it names; () where none has one: by the chain, as before). Walked in
        page id order (the names of a page sorted too), so named pages that name each other in a
        cycle (verdicts of several workers) place the same whatever order the events came in."""
        depth: dict[str, int] = {}
        time: dict[str, tuple[int, float, str]] = {}
        came: dict[str, tuple[int, ...]] = {}
        pages = self._nodes
        for start in sorted(page for page, node in pages.items() if node.status is not None):
            if start in depth:
                continue
            stack, open_ = [start], {start}
            while stack:  # depth-first without recursion: a live page polled 10,000 times is one chain
                page = stack[-1]
                names = [n for n in pages[page].named() if n in pages and pages[n].status is not None]
                todo = [n for n in names if n not in depth and n not in open_]
                if todo:
                    stack.extend(todo)
                    open_.update(todo)
                    continue
                depth[page] = 1 + max((depth.get(n, -1) for n in names), default=-1)
                fetched = pages[page].fetch_time
                time[page] = when(fetched) if fetched is not None else max(
                    (time[n] for n in names if n in time), default=when(None))
                came[page] = max((pages[page].arrival,
                                  *(came[n] for n in names if n in came and time[n] == time[page])))
                stack.pop()
                open_.discard(page)
        return {page: (time[page], came[page], depth[page]) for page in depth}

    def __len__(self) -> int:
        """How many stories hold pages of this view: kept as events are folded, so asking costs nothing.

        (A feed's loop asks it at every poll: a walk over every page cost ~0.55 s at 1 M pages.)"""
        return self._count  # a root's count of pages: moved to the new root on a join, never 0


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
        for story in stories.each_story():  # a story's page dicts made as its line is written, not all at once
            handle.write(orjson.dumps(story, option=orjson.OPT_APPEND_NEWLINE))
    temporary.replace(path)


def table(stories: Sequence[Mapping[str, Any]]) -> str:
    """Stories as a plain table: one block a story, a line a page.

    A page's line: status, fetch time, url, and what its verdict says of the story's other pages
    (`supersedes N` earlier fetches it holds whole, the stories it `merged`, its `related_to`
    count), each named by page id where the story holds the same url more than once."""
    lines = []
    for story in stories:
        related = f"  related: {', '.join(story['related'])}" if story.get("related") else ""
        count = "1 page" if story["size"] == 1 else f"{story['size']} pages"
        lines.append(f"{story['cluster_id']}  ({count}){related}")
        urls = [member["url"] for member in story["pages"]]
        for member in story["pages"]:
            shown = member["url"] or member["id"]
            if member["url"] is not None and urls.count(member["url"]) > 1:
                shown = f"{shown} [{member['id']}]"
            notes = [f"supersedes {len(member['supersedes'])}"] if member.get("supersedes") else []
            if member.get("merged"):
                notes.append(f"merged {', '.join(member['merged'])}")
            if member.get("related_to"):
                notes.append(f"related to {len(member['related_to'])}")
            noted = f"  ({'; '.join(notes)})" if notes else ""
            lines.append(f"  {member['status'] or '':<9} {member['fetch_time'] or '-':<27} {shown}{noted}")
    return "\n".join(lines)
