"""A page's gather tells the clusters its verdict merged with its cluster (`RootReply.merged`, its `K`
record): a later page over the story's pages sees one story, not a digest of two (docs/limitations.md,
"A story made of two clusters"). Pure gather-stage tests (real RocksDB, no broker).

F is a story's first fetch, R a rewrite of it in place (related: a cluster of its own), T a third
fetch, a duplicate of both that bridges them (in F's cluster, R's merged), W a wire copy on another
site holding all three whole: it supersedes them and may bridge none (`engine.joined_roots`)."""

from __future__ import annotations

from dataclasses import replace

import orjson

from runtime.scaleout.gather_steps import GatherSteps, verdicts
from streamdedup.runtime.scaleout.gather_records import Guessed, Pending
from streamdedup.runtime.scaleout.gather_stage import GatherPartition
from streamdedup.runtime.scaleout.gather_verdicts import Emitted, stories_of, verdict_of
from streamdedup.runtime.scaleout.messages import Answer, Match, PageHeader, RootAsk, RootReply
from streamdedup.runtime.scaleout.routing import page_order
from streamdedup.verdict.relations import DUPLICATE, SUPERSEDES

F, R, T, W = (page_order(n, n, 0, n) for n in (1, 2, 3, 4))
ORDERS = {"F": F, "R": R, "T": T, "W": W}


def copy_of(page_id: str) -> Match:
    """An exact copy of `page_id`, in its own cluster as its index partition knows it."""
    return Match(page_id, ORDERS[page_id], "exact", 1.0, ORDERS[page_id], page_id)


def held_whole(page_id: str, root_id: str) -> Match:
    """A page of another site that the page holds whole (the page supersedes it)."""
    return Match(page_id, ORDERS[page_id], "minhash", 0.6, ORDERS[root_id], root_id, 0.4, 0.0, SUPERSEDES, DUPLICATE)


complete = GatherSteps(ORDERS).complete


def test_a_wire_copy_over_a_story_of_two_clusters_joins_it_told_the_merge_by_the_bridges_gather(tmp_path):
    gather = GatherPartition(tmp_path / "g", hold=False)
    out: list[Emitted] = []
    complete(gather, "F", (), out)
    complete(gather, "R", (), out)  # related to F only: a cluster of its own
    complete(gather, "T", (copy_of("F"), copy_of("R")), out)
    assert verdicts(out)["T"]["cluster_id"] == "F" and verdicts(out)["T"]["merged_clusters"] == ["R"]
    complete(gather, "W", (held_whole("F", "F"), held_whole("R", "R"), held_whole("T", "F")), out)
    told = {r.of: r.merged for r in out if isinstance(r, RootReply) and r.page_id == "W"}
    assert told == {"F": (), "R": (), "T": ("R",)}
    wire = verdicts(out)["W"]
    assert wire["cluster_id"] == "F" and "merged_clusters" not in wire, wire  # file mode's: one story
    assert set(wire["supersedes"]) == {"F", "R", "T"}
    # a page asking later is told from the K record, after a restart too
    gather.commit()
    gather.close()
    gather = GatherPartition(tmp_path / "g", hold=False)
    assert gather.add_root_ask(RootAsk("T", T, "X", page_order(9, 9, 0, 9))) == [
        RootReply("X", page_order(9, 9, 0, 9), "T", F, "F", merged=("R",))]
    gather.close()


def test_without_the_merge_told_the_wire_copy_reads_as_a_digest_of_two_stories():
    """The control: the gathers' answers without `merged` (a worker before this) give the digest's verdict."""
    header = PageHeader("W", W, (0,), {}, "t")
    answer = Answer("W", W, 0, (held_whole("F", "F"), held_whole("R", "R"), held_whole("T", "F")))
    roots = {"F": (F, "F"), "R": (R, "R"), "T": (F, "F")}
    assert verdict_of(header, [answer], roots=roots)["cluster_id"] == "W"
    assert verdict_of(header, [answer], roots=roots, merges={"T": ["R"]})["cluster_id"] == "F"
    # a merge none of its matches made is not known: two stories still
    assert verdict_of(header, [Answer("W", W, 0, (held_whole("F", "F"), held_whole("R", "R")))],
                      roots=roots, merges={"T": ["R"]})["cluster_id"] == "W"


def test_stories_and_the_records_that_carry_the_merges():
    stories = stories_of([("A", ["B"]), ("C", ()), ("B", ["D"]), ("E", ["C"])])
    assert stories["A"] == stories["B"] == stories["D"] and stories["C"] == stories["E"] != stories["A"]
    reply = RootReply("W", W, "T", F, "F", merged=("R",))
    assert RootReply.from_json(orjson.loads(reply.encode())) == reply
    plain = RootReply("W", W, "F", F, "F")
    assert "merged" not in orjson.loads(plain.encode()) and RootReply.from_json(orjson.loads(plain.encode())) == plain
    pending = Pending(roots={"T": (F, "F")}, merges={"T": ["R"]})
    assert Pending.decode(pending.encode()) == pending
    older = {k: v for k, v in orjson.loads(pending.encode()).items() if k != "merges"}  # written before it
    assert Pending.decode(orjson.dumps(older)) == replace(pending, merges={})
    guessed = Guessed(W, False, {}, {"T": (F, "F")}, "W", [], merges={"T": ["R"]})
    assert Guessed.decode(guessed.encode()) == guessed
