"""A digest of two stories sharing a passage, then a copy of each: the global topology keeps the stories two.

docs/limitations.md, Hostile pages. The digest D holds stories A and B whole; they share a quote, so
each is most of D (0.44 of it absent from each). D's gather marks it a digest of overlapping stories
(`engine.digest_of_overlapping`, its `O` record) and tells its askers so with its cluster
(`RootReply.overlapping`): the copies A2 and B2, most of D, bridge its cluster into neither story,
as in file mode (tests/verdict/test_hostile_shared_passage.py). Pure gather-stage tests (real
RocksDB, no broker), as tests/runtime/scaleout/test_merged_told.py."""

from __future__ import annotations

from dataclasses import replace

import orjson

from runtime.scaleout.gather_steps import GatherSteps, verdicts
from streamdedup.runtime.scaleout.gather_records import Guessed, Pending
from streamdedup.runtime.scaleout.gather_stage import GatherPartition
from streamdedup.runtime.scaleout.gather_verdicts import Emitted, verdict_of
from streamdedup.runtime.scaleout.messages import Answer, Match, PageHeader, RootAsk, RootReply
from streamdedup.runtime.scaleout.routing import page_order
from streamdedup.verdict.relations import DUPLICATE, SUPERSEDES

ORDERS = {page_id: page_order(n, n, 0, n) for n, page_id in enumerate(("A", "B", "D", "D2", "A2", "B2"), 1)}


def held_whole(page_id: str, new_share: float) -> Match:
    """A page of another site the page holds whole, `new_share` of the page absent from it."""
    order = ORDERS[page_id]
    return Match(page_id, order, "minhash", 0.5, order, page_id, new_share, 0.0, SUPERSEDES, DUPLICATE)


def held_in(page_id: str, root_id: str, their_new_share: float) -> Match:
    """A page of another site holding the page whole, `their_new_share` of it absent from the page."""
    return Match(page_id, ORDERS[page_id], "minhash", 1.0 - their_new_share, ORDERS[root_id], root_id, 0.0,
                 their_new_share, DUPLICATE, SUPERSEDES)


complete = GatherSteps(ORDERS).complete


def test_copies_of_two_stories_sharing_a_quote_do_not_merge_them_through_the_digest(tmp_path):
    gather = GatherPartition(tmp_path / "g", hold=False)
    out: list[Emitted] = []
    complete(gather, "A", (), out)
    complete(gather, "B", (), out)
    complete(gather, "D", (held_whole("A", 0.44), held_whole("B", 0.44)), out)
    assert verdicts(out)["D"]["cluster_id"] == "D" and "merged_clusters" not in verdicts(out)["D"]
    complete(gather, "D2", (held_in("D", "D", 0.0), held_whole("A", 0.44), held_whole("B", 0.44)), out)
    assert verdicts(out)["D2"]["cluster_id"] == "D"  # the digest's own copy joins it
    complete(gather, "A2", (held_in("A", "A", 0.0), held_in("D", "D", 0.44), held_in("D2", "D", 0.44)), out)
    complete(gather, "B2", (held_in("B", "B", 0.0), held_in("D", "D", 0.44), held_in("D2", "D", 0.44)), out)
    told = {(r.page_id, r.of): r.overlapping for r in out if isinstance(r, RootReply)}
    assert told[("A2", "D")] and told[("A2", "D2")] and not told[("A2", "A")], told
    for copy, story in (("A2", "A"), ("B2", "B")):
        verdict = verdicts(out)[copy]
        assert (verdict["duplicate_of"], verdict["cluster_id"]) == (story, story), verdict
        assert "merged_clusters" not in verdict, verdict  # before: ["D"] both, one story of A, D and B
    # a page asking later is told from the O record, after a restart too
    gather.commit()
    gather.close()
    gather = GatherPartition(tmp_path / "g", hold=False)
    asker = page_order(9, 9, 0, 9)
    assert gather.add_root_ask(RootAsk("D2", ORDERS["D2"], "X", asker)) == [
        RootReply("X", asker, "D2", ORDERS["D"], "D", overlapping=True, digest=True)]
    assert not gather.add_root_ask(RootAsk("A2", ORDERS["A2"], "X", asker))[0].overlapping
    gather.close()


def test_without_the_mark_told_a_copy_bridges_the_digest_as_before():
    """The control: answers without `overlapping` (a worker before rules version 33) bridge the digest's cluster."""
    header = PageHeader("A2", ORDERS["A2"], (0,), {}, "t")
    answer = Answer("A2", ORDERS["A2"], 0, (held_in("A", "A", 0.0), held_in("D", "D", 0.44)))
    roots = {"A": (ORDERS["A"], "A"), "D": (ORDERS["D"], "D")}
    assert verdict_of(header, [answer], roots=roots)["merged_clusters"] == ["D"]
    assert "merged_clusters" not in verdict_of(header, [answer], roots=roots, overlaps={"D"})


def test_the_mark_is_kept_in_replies_and_records():
    reply = RootReply("A2", ORDERS["A2"], "D", ORDERS["D"], "D", overlapping=True)
    assert RootReply.from_json(orjson.loads(reply.encode())) == reply
    plain = RootReply("A2", ORDERS["A2"], "A", ORDERS["A"], "A")
    assert "overlap" not in orjson.loads(plain.encode()) and RootReply.from_json(orjson.loads(plain.encode())) == plain
    pending = Pending(roots={"D": (ORDERS["D"], "D")}, overlaps={"D"})
    assert Pending.decode(pending.encode()) == pending
    older = {k: v for k, v in orjson.loads(pending.encode()).items() if k != "overlaps"}  # written before it
    assert Pending.decode(orjson.dumps(older)) == replace(pending, overlaps=set())
    guessed = Guessed(ORDERS["A2"], False, {}, {"D": (ORDERS["D"], "D")}, "A2", [], overlaps={"D"})
    assert Guessed.decode(guessed.encode()) == guessed
