"""A page out by its wait before its matches' gathers named their clusters: the merges it missed, late.

Pure gather-stage tests (real RocksDB, no broker): bench/cluster_agreement.py with 3 workers missed
all 29 of file mode's merges in one run, each a view-all page released by its wait with no root
answered yet (its parts were released by their own waits in the same round)."""

from __future__ import annotations

from dataclasses import replace

from streamdedup.clusters import Stories, view_event, view_key
from streamdedup.runtime.scaleout.gather_stage import GatherPartition
from streamdedup.runtime.scaleout.gather_verdicts import RELEASED_EARLY, Decided, LateMerge
from streamdedup.runtime.scaleout.messages import Answer, Match, PageHeader, RootAsk, RootReply
from streamdedup.runtime.scaleout.routing import page_order
from streamdedup.verdict.relations import DUPLICATE, SUPERSEDES

P1, P2, V = page_order(1, 1, 0, 0), page_order(2, 2, 0, 1), page_order(3, 3, 0, 2)


def part(page_id: str, order: bytes, same_site: bool = True) -> Match:
    """A match the page supersedes (its own site's part, or another site's whole story), rooted at itself."""
    return Match(page_id, order, "minhash", 0.5, order, page_id, 0.5, 0.0, SUPERSEDES, DUPLICATE,
                 same_site=same_site)


def out_by_its_wait(gather: GatherPartition, matches: tuple[Match, ...]) -> Decided:
    """V complete (its two index partitions' answers), asking both matches' gathers; then its wait is over."""
    gather.add_header(PageHeader("V", V, (0, 1), {}, "t"), at_ms=0)
    gather.add_answer(Answer("V", V, 0, matches[:1]), at_ms=0)
    asks = gather.add_answer(Answer("V", V, 1, matches[1:]), at_ms=0)
    assert sorted(asks, key=lambda ask: ask.page_id) == [RootAsk(m.page_id, m.order, "V", V) for m in matches]
    assert gather.due(5000, 5000) == [("V", V)]
    [decided] = gather.add_release([("V", V)])
    assert isinstance(decided, Decided) and decided.by == "timeout"
    return decided


def test_a_view_all_page_out_by_its_wait_merges_its_parts_when_their_gathers_name_their_clusters(tmp_path):
    """Out before its parts' gathers answered, its verdict names no merge (a cluster known only from
    an index partition may be stale); their answers then give file mode's merge as a `merged` event
    marked late, counted as released early, once, across a restart. Before: nothing (29 of 29 missed)."""
    gather = GatherPartition(tmp_path / "g")
    decided = out_by_its_wait(gather, (part("P1", P1), part("P2", P2)))
    assert decided.dedup["cluster_id"] == "P1" and "merged_clusters" not in decided.dedup
    gather.commit()
    assert gather.add_root(RootReply("V", V, "P1", P1, "P1")) == []  # one still to come
    gather.commit()
    gather.close()
    gather = GatherPartition(tmp_path / "g")  # kept in the store: a restart between the answers
    [late] = gather.add_root(RootReply("V", V, "P2", P2, "P2"))
    assert late == LateMerge({"type": "merged", "page_id": "V", "cluster_id": "P1", "merged": ["P2"], "late": True},
                             RELEASED_EARLY)
    gather.commit()
    assert gather.add_root(RootReply("V", V, "P2", P2, "P2")) == []  # a reply read again: once
    # later pages asking V's cluster are told P1, as before, with the merge it made late (its `K` record)
    assert gather.add_root_ask(RootAsk("V", V, "W", page_order(4, 4, 1, 0))) == [
        RootReply("W", page_order(4, 4, 1, 0), "V", P1, "P1", merged=("P2",))]
    gather.close()


def test_a_late_answer_makes_up_no_merge_and_names_an_older_cluster_to_later_askers(tmp_path):
    """Where file mode merges nothing there is no late event: parts found one story already (P2's
    gather names P1's cluster), and another site's stories the page holds whole (a digest bridges
    none). A cluster older than the index partitions knew is what V's gather tells later askers."""
    gather = GatherPartition(tmp_path / "g")
    out_by_its_wait(gather, (part("P1", P1), part("P2", P2)))
    assert gather.add_root(RootReply("V", V, "P1", P1, "P1")) == []
    assert gather.add_root(RootReply("V", V, "P2", P1, "P1")) == []  # one story already
    gather.close()
    gather = GatherPartition(tmp_path / "digest")
    out_by_its_wait(gather, (part("P1", P1, same_site=False), part("P2", P2, same_site=False)))
    assert gather.add_root(RootReply("V", V, "P1", P1, "P1")) == []
    assert gather.add_root(RootReply("V", V, "P2", P2, "P2")) == []
    gather.close()
    gather = GatherPartition(tmp_path / "older")
    zero = page_order(0, 0, 1, 0)
    decided = out_by_its_wait(gather, (replace(part("P1", P1), relation=DUPLICATE),))
    assert decided.dedup["cluster_id"] == "P1"
    assert gather.add_root(RootReply("V", V, "P1", zero, "Z")) == []  # joined, merges nothing: no event
    assert gather.add_root_ask(RootAsk("V", V, "W", page_order(4, 4, 1, 0))) == [
        RootReply("W", page_order(4, 4, 1, 0), "V", zero, "Z")]
    gather.close()


def test_a_page_whose_clusters_were_all_named_keeps_nothing_for_late_answers(tmp_path):
    """Released with every cluster named (by its watermarks, or its wait after the answers): no record, no event."""
    gather = GatherPartition(tmp_path / "g", hold=False)
    gather.add_header(PageHeader("V", V, (0,), {}, "t"))
    gather.add_answer(Answer("V", V, 0, (part("P1", P1), part("P2", P2))))
    assert gather.add_root(RootReply("V", V, "P1", P1, "P1")) == []
    [decided] = gather.add_root(RootReply("V", V, "P2", P2, "P2"))
    assert isinstance(decided, Decided) and decided.dedup["merged_clusters"] == ["P2"]
    assert gather.add_root(RootReply("V", V, "P2", P2, "P2")) == []
    gather.commit()
    assert not any(key.startswith(b"G") for key in gather.db.keys())
    gather.close()


def test_the_cluster_view_keeps_a_late_merge_beside_the_pages_own_event_and_folds_one_story():
    """On the compacted view topic the late `merged` event has a key of its own (keyed by the page id,
    it would replace the page's own event); folded, the two parts and the view-all page are one story."""
    own = view_event({"id": "V", "status": "unique", "cluster_id": "P1", "supersedes": ["P1", "P2"]}, None, None)
    late = {"type": "merged", "page_id": "V", "cluster_id": "P1", "merged": ["P2"], "late": True}
    assert view_key(own) == b"V" and view_key(late) == b"V merged"
    stories = Stories()
    for event in (view_event({"id": "P1", "status": "unique", "cluster_id": "P1"}, None, None),
                  view_event({"id": "P2", "status": "unique", "cluster_id": "P2"}, None, None), own):
        stories.apply(event)
    assert stories.story_of("P2") == "P2"  # the merge the verdict did not name
    stories.apply(late)
    assert stories.story_of("P2") == stories.story_of("V") == "P1"
