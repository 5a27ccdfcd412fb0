"""The attacker's digest, then his own copies of its stories on its site: the global topology keeps the stories two.

docs/limitations.md, Hostile pages; file mode: tests/verdict/test_hostile_digest_same_site.py. Stories A and
B share nothing (each under half of the digest D, which is no digest of overlapping stories); A2 and B2
are on D's site. D's gather marks it a digest (`engine.started_digest`, its `O` record) and tells its
askers so with its cluster (`RootReply.digest`): A2 and B2 bridge its cluster for being of its site no
more. Pure gather-stage tests (real RocksDB, no broker), as tests/runtime/scaleout/test_overlapping_digest.py."""

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

ORDERS = {page_id: page_order(n, n, 0, n) for n, page_id in enumerate(("A", "B", "D", "A2", "B2"), 1)}


def held_whole(page_id: str) -> Match:
    """A story of another site the digest holds whole, beside as much of the other story's text."""
    order = ORDERS[page_id]
    return Match(page_id, order, "minhash", 0.5, order, page_id, 0.52, 0.0, SUPERSEDES, DUPLICATE)


def held_in(page_id: str, root_id: str, their_new_share: float, same_site: bool = False) -> Match:
    """A page holding the page whole, `their_new_share` of it absent from the page."""
    return Match(page_id, ORDERS[page_id], "minhash", 1.0 - their_new_share, ORDERS[root_id], root_id, 0.0,
                 their_new_share, DUPLICATE, SUPERSEDES, same_site=same_site)


complete = GatherSteps(ORDERS).complete


def test_the_attackers_own_copies_after_his_digest_do_not_merge_its_stories(tmp_path):
    gather = GatherPartition(tmp_path / "g", hold=False)
    out: list[Emitted] = []
    complete(gather, "A", (), out)
    complete(gather, "B", (), out)
    complete(gather, "D", (held_whole("A"), held_whole("B")), out)
    assert verdicts(out)["D"]["cluster_id"] == "D" and "merged_clusters" not in verdicts(out)["D"]
    complete(gather, "A2", (held_in("A", "A", 0.0), held_in("D", "D", 0.52, same_site=True)), out)
    complete(gather, "B2", (held_in("B", "B", 0.0), held_in("D", "D", 0.52, same_site=True)), out)
    told = {(r.page_id, r.of): (r.digest, r.overlapping) for r in out if isinstance(r, RootReply)}
    assert told[("A2", "D")] == (True, False) and told[("A2", "A")] == (False, False), told
    for copy, story in (("A2", "A"), ("B2", "B")):
        verdict = verdicts(out)[copy]
        assert (verdict["duplicate_of"], verdict["cluster_id"]) == (story, story), verdict
        assert "merged_clusters" not in verdict, verdict  # before: ["D"] both, one story of A, D and B
    # a page asking later is told from the O record, after a restart too
    gather.commit()
    gather.close()
    gather = GatherPartition(tmp_path / "g", hold=False)
    asker = page_order(9, 9, 0, 9)
    assert gather.add_root_ask(RootAsk("D", ORDERS["D"], "X", asker)) == [
        RootReply("X", asker, "D", ORDERS["D"], "D", digest=True)]
    assert not gather.add_root_ask(RootAsk("A2", ORDERS["A2"], "X", asker))[0].digest
    gather.close()


def test_a_page_of_the_site_of_a_cluster_no_digest_started_bridges_it_at_any_share():
    """The control: the same answers without `digest` (a view-all page's cluster, another fetch of the URL) bridge."""
    header = PageHeader("A2", ORDERS["A2"], (0,), {}, "t")
    answer = Answer("A2", ORDERS["A2"], 0, (held_in("A", "A", 0.0), held_in("D", "D", 0.52, same_site=True)))
    roots = {"A": (ORDERS["A"], "A"), "D": (ORDERS["D"], "D")}
    assert verdict_of(header, [answer], roots=roots)["merged_clusters"] == ["D"]
    assert "merged_clusters" not in verdict_of(header, [answer], roots=roots, digests={"D"})
    # of another site, under half of it: not bridged, marked or not
    other = Answer("A2", ORDERS["A2"], 0, (held_in("A", "A", 0.0), held_in("D", "D", 0.52)))
    assert "merged_clusters" not in verdict_of(header, [other], roots=roots)


def test_a_teaser_bridges_a_digests_cluster_no_more():
    """A teaser of A (most of none of the pages holding it: a fragment) after the digest: it bridged A and D."""
    header = PageHeader("A2", ORDERS["A2"], (0,), {}, "t")
    answer = Answer("A2", ORDERS["A2"], 0, (held_in("A", "A", 0.6), held_in("D", "D", 0.8)))
    roots = {"A": (ORDERS["A"], "A"), "D": (ORDERS["D"], "D")}
    assert verdict_of(header, [answer], roots=roots)["merged_clusters"] == ["D"]
    verdict = verdict_of(header, [answer], roots=roots, digests={"D"})
    assert (verdict["duplicate_of"], verdict["cluster_id"]) == ("A", "A") and "merged_clusters" not in verdict


def test_the_digest_mark_is_kept_in_replies_and_records():
    reply = RootReply("A2", ORDERS["A2"], "D", ORDERS["D"], "D", digest=True)
    assert orjson.loads(reply.encode())["digest"] and RootReply.from_json(orjson.loads(reply.encode())) == reply
    plain = RootReply("A2", ORDERS["A2"], "A", ORDERS["A"], "A")
    assert "digest" not in orjson.loads(plain.encode())
    pending = Pending(roots={"D": (ORDERS["D"], "D")}, digests={"D"})
    assert Pending.decode(pending.encode()) == pending
    older = {k: v for k, v in orjson.loads(pending.encode()).items() if k != "digests"}  # written before it
    assert Pending.decode(orjson.dumps(older)) == replace(pending, digests=set())
    guessed = Guessed(ORDERS["A2"], False, {}, {"D": (ORDERS["D"], "D")}, "A2", [], digests={"D"})
    assert Guessed.decode(guessed.encode()) == guessed


OWN_PART = {page_id: page_order(n, n, 0, n) for n, page_id in enumerate(("E1", "A", "B", "D", "A2", "B2"), 1)}


def test_a_digest_joining_a_page_of_its_site_is_told_a_digest(tmp_path):
    """His own page E1 first, his digest D of E1, A and B: D joins E1's cluster (its part) and its gather marks
    it a digest all the same (`engine.started_digest`: two stories it left); his copies bridge E1's cluster
    no more (tests/verdict/test_hostile_digest_own_part.py; before: A2 and B2 merged E1's, one story)."""
    def match(page_id: str, new_share: float, their_new_share: float, relation: str, their_relation: str,
              root_id: str = "", same_site: bool = False) -> Match:
        order, root = OWN_PART[page_id], root_id or page_id
        return Match(page_id, order, "minhash", 0.5, OWN_PART[root], root, new_share, their_new_share, relation,
                     their_relation, same_site=same_site)

    gather = GatherPartition(tmp_path / "g", hold=False)
    out: list[Emitted] = []
    steps = GatherSteps(OWN_PART)
    for page_id in ("E1", "A", "B"):
        steps.complete(gather, page_id, (), out)
    steps.complete(gather, "D", (match("E1", 0.66, 0.0, SUPERSEDES, DUPLICATE, same_site=True),
                                 match("A", 0.66, 0.0, SUPERSEDES, DUPLICATE),
                                 match("B", 0.66, 0.0, SUPERSEDES, DUPLICATE)), out)
    assert verdicts(out)["D"]["cluster_id"] == "E1", verdicts(out)["D"]
    for copy, story in (("A2", "A"), ("B2", "B")):
        steps.complete(gather, copy, (match(story, 0.0, 0.0, DUPLICATE, DUPLICATE),
                                      match("D", 0.0, 0.66, DUPLICATE, SUPERSEDES, "E1", same_site=True)), out)
        verdict = verdicts(out)[copy]
        assert (verdict["duplicate_of"], verdict["cluster_id"]) == (story, story), verdict
        assert "merged_clusters" not in verdict, verdict
