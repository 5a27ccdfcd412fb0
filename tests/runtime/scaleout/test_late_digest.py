"""A digest found after its story's copy went out (a late match) bridges the digest's cluster as file mode would.

docs/limitations.md, Hostile pages. The attacker's digest D of stories A and B (each on its own site, first),
then copies of A: A2 on D's site, A3 on another. File mode judges each copy with D's mark
(`engine.started_digest`, `engine.digest_of_overlapping`): A2 bridges D's cluster neither for being of its site
nor, where A and B share a quote (D is a digest of overlapping stories), for being most of it; nor does A3.
In the global topology a copy can go out before D reaches its index partitions (here: released by its
wait); D is then a late match (`Supplement`), which the copy's gather judged by `Match.bridges` without the mark:
its `late_match` event merged A's story and D's, and the fold of the clusters topic (the cluster view) held A,
D and A2 as one story where file mode's held two. It now asks D's gather for its cluster and mark
(`RootAsk`) and judges the match when told (`RootReply`), by `engine.bridges` with the mark, as file mode.
The gather step alone: tests/runtime/scaleout/test_late_related.py."""

from __future__ import annotations

import pytest
from verdict.story_pages import story_page

from runtime.scaleout.gather_steps import GatherSteps, late_match, told, verdicts
from runtime.scaleout.test_digest_same_site import ORDERS as ON_TIME
from runtime.scaleout.test_digest_same_site import held_in
from runtime.scaleout.test_final_verdicts import emitted, released_by_the_wait
from runtime.scaleout.test_late_related import shape
from runtime.scaleout.test_topologies import finish, wait_for
from streamdedup.clusters import Stories, read_topic_stories
from streamdedup.runtime.scaleout.gather_stage import GatherPartition
from streamdedup.runtime.scaleout.gather_verdicts import Emitted, LateMatch
from streamdedup.runtime.scaleout.messages import RootAsk, RootReply, Supplement
from streamdedup.runtime.scaleout.routing import page_order
from streamdedup.testing import make_article, run_records


def digest_and_copies(quote: bool) -> list[dict]:
    """A, B (stories of two sites), D (both, on the attacker's site), A2 (A on D's site), A3 (A on a third)."""
    first, second = make_article(61, paragraphs=8, sentences=3), make_article(361, paragraphs=8, sentences=3)
    if quote:  # ~100 words both stories print: each is most of D
        shared = make_article(661, paragraphs=1, sentences=6)[0]
        first, second = [*first[:4], shared, *first[4:]], [*second[:4], shared, *second[4:]]
    return [story_page("A", "alpha.example", first, "08:00"), story_page("B", "beta.example", second, "08:10"),
            story_page("D", "evil.example", first + second, "08:30"),
            story_page("A2", "evil.example", first, "08:40"), story_page("A3", "gamma.example", first, "08:50")]


@pytest.mark.parametrize("quote", [False, True])
def test_a_digest_found_after_its_storys_copies_went_out_is_not_merged_into_that_story(broker, settings, tmp_path,
                                                                                       quote):
    """A on input partition 1, B on 0 (both out by the wait), then A2 and A3 on 0, released by the 0.5 s wait
    (partition 1 has passed only A), duplicates of A; then D, earlier than both, on partition 1: an index
    partition holding A2 and A3 sends each a supplement, a late match. Before: a `late_match` event A2 -> D
    (A2 of D's site; with the quote A3 -> D too, most of D), and the cluster view held A, D and the copies as
    one story; file mode: D a story of its own. Now the stories are file mode's, told and folded."""
    records = digest_and_copies(quote)
    by_id = {r["id"]: r for r in records}
    file_mode = {o.dedup["id"]: o for o in run_records(records, tmp_path / "file-mode")}
    assert file_mode["D"].dedup["cluster_id"] == "D" and "merged_clusters" not in file_mode["D"].dedup
    expected = Stories()
    for o in file_mode.values():
        expected.add(o.dedup, *(o.record.get(name) for name in ("url", "fetched_at")))
    assert shape(expected) == {"A": (["A", "A2", "A3"], []), "B": (["B"], []), "D": (["D"], [])}, shape(expected)

    run, produce, workers, threads = released_by_the_wait(settings, by_id["A"], by_id["B"])
    produce(by_id["A2"], 0)
    produce(by_id["A3"], 0)
    assert wait_for(lambda: workers["w0"].stats.decided >= 4, 120)  # out before D is known
    produce(by_id["D"], 1)
    finish(workers, threads, len(records))
    got = emitted(run)
    for copy in ("A2", "A3"):
        assert (got["dedups"][copy]["duplicate_of"], got["dedups"][copy]["cluster_id"]) == ("A", "A"), got["dedups"]
    assert got["dedups"]["D"]["cluster_id"] == "D" and "merged_clusters" not in got["dedups"]["D"]
    late = [e for e in got["events"] if e["type"] in ("late_match", "late_related") or e.get("late")]
    assert not [e for e in late if e["type"] == "late_match"], late  # before: A2 -> D (and A3 -> D, with the quote)
    folded = Stories()
    for dedup in got["dedups"].values():
        folded.add(dedup, None, got["fetched"][dedup["id"]])
    for event in late:
        folded.apply(event)
    assert shape(folded) == shape(expected)
    assert shape(read_topic_stories(run.bootstrap_servers, run.topics.cluster_view)) == shape(expected)


ORDERS = {**ON_TIME, **{page_id: page_order(n, n, 0, n) for n, page_id in enumerate(("C1", "C2", "X1", "X2", "L"), 6)}}
complete = GatherSteps(ORDERS).complete


def test_a_late_match_bridges_its_story_and_a_digests_cluster_as_the_digests_gather_marks_it(tmp_path):
    """Copies of A out in A's story, then D late. Of D's site (`same_site`): told D's cluster a digest's, nothing
    (the copy is a duplicate: file mode names no related page of one); told not (a view-all page's cluster, another
    fetch of its URL), a `late_match`, as before. Of another site and most of D: told a digest of overlapping
    stories, nothing; of a digest of stories sharing nothing (of which one alone can be most of it), a `late_match`."""
    gather = GatherPartition(tmp_path / "g", hold=False)
    out: list[Emitted] = []
    complete(gather, "A", (), out)
    for copy in ("C1", "C2", "X1", "X2"):
        complete(gather, copy, (held_in("A", "A", 0.0),), out)
        assert verdicts(out)[copy]["cluster_id"] == "A"
    of_its_site, most_of_it = held_in("D", "D", 0.52, same_site=True), held_in("D", "D", 0.44)
    assert gather.add_supplement(Supplement("C1", ORDERS["C1"], of_its_site)) == [
        RootAsk("D", ORDERS["D"], "C1", ORDERS["C1"])]  # whether it bridges hangs on D's mark: asked
    assert gather.add_supplement(Supplement("C1", ORDERS["C1"], of_its_site)) == []  # another partition's: once
    assert told(gather, "C1", ORDERS["C1"], of_its_site, digest=True) == []  # before: a late_match C1 -> D
    assert told(gather, "C1", ORDERS["C1"], of_its_site, digest=True) == []  # told again: judged once
    [bridged] = late_match(gather, "C2", ORDERS["C2"], of_its_site)
    assert isinstance(bridged, LateMatch) and bridged.event["duplicate_of"] == "D"
    assert late_match(gather, "X1", ORDERS["X1"], most_of_it, overlapping=True, digest=True) == []  # before: bridged
    [most] = late_match(gather, "X2", ORDERS["X2"], most_of_it, digest=True)
    assert isinstance(most, LateMatch) and most.event["duplicate_of"] == "D"
    gather.close()


def test_a_page_alone_asking_a_late_digests_mark_keeps_its_askers_and_then_its_own_cluster(tmp_path):
    """L out alone (its own cluster), then D, a digest of L's site, late: L may join D's cluster, so a page asking
    L's cluster waits (as for any late match it may join); told D's is a digest's, L bridges nothing, stays in its
    own cluster (related to D), and the asker is told that, across a restart. The cost of asking: file mode, D
    being L's only match, would put L in D's cluster (docs/limitations.md)."""
    gather = GatherPartition(tmp_path / "g", hold=False)
    out: list[Emitted] = []
    complete(gather, "L", (), out)
    d = held_in("D", "D", 0.52, same_site=True)
    assert gather.add_supplement(Supplement("L", ORDERS["L"], d)) == [RootAsk("D", ORDERS["D"], "L", ORDERS["L"])]
    asker = page_order(9, 9, 0, 9)
    assert gather.add_root_ask(RootAsk("L", ORDERS["L"], "V", asker)) == []  # kept until D's gather answers
    gather.commit()
    gather.close()
    gather = GatherPartition(tmp_path / "g", hold=False)
    related, reply = told(gather, "L", ORDERS["L"], d, digest=True)
    assert isinstance(related, LateMatch) and related.event["type"] == "late_related", related
    assert reply == RootReply("V", asker, "L", ORDERS["L"], "L")
    assert gather.add_root_ask(RootAsk("L", ORDERS["L"], "W", asker)) == [
        RootReply("W", asker, "L", ORDERS["L"], "L")]
    gather.close()


def test_a_late_match_waits_for_the_digests_named_mark_not_its_guess(tmp_path):
    """D out by its wait before A's and B's clusters were named: its guess joins the oldest (`joined_roots`, a
    stale cluster), so its mark is no digest's until they are, and then it starts its own. C1 (A's copy of D's
    site, in A's story) asks about D, late, and is told the guess first (D's bound reached): judged by it, a
    `late_match` C1 -> D merged A's story and D's. It waits for D's named answer, as a late merge does."""
    gather = GatherPartition(tmp_path / "g", hold=False)
    out: list[Emitted] = []
    complete(gather, "A", (), out)
    complete(gather, "C1", (held_in("A", "A", 0.0),), out)
    of_its_site = held_in("D", "A", 0.52, same_site=True)  # D's cluster as its index partition guessed it: A's
    assert gather.add_supplement(Supplement("C1", ORDERS["C1"], of_its_site)) == [
        RootAsk("D", ORDERS["D"], "C1", ORDERS["C1"])]
    guess = RootReply("C1", ORDERS["C1"], "D", ORDERS["A"], "A", guessed=True)
    assert gather.add_root(guess) == []  # before: a late_match C1 -> D, judged by the guess's mark
    named = RootReply("C1", ORDERS["C1"], "D", ORDERS["D"], "D", digest=True)
    assert gather.add_root(named) == []  # a digest's cluster: C1, a duplicate, names no related page
    gather.close()


def test_a_late_match_told_a_guess_and_then_a_cluster_bridging_it_is_judged_once(tmp_path):
    """As above, D named in a cluster no digest started: C1's `late_match` goes out once, when it is named."""
    gather = GatherPartition(tmp_path / "g", hold=False)
    out: list[Emitted] = []
    complete(gather, "A", (), out)
    complete(gather, "C1", (held_in("A", "A", 0.0),), out)
    of_its_site = held_in("D", "D", 0.52, same_site=True)
    gather.add_supplement(Supplement("C1", ORDERS["C1"], of_its_site))
    assert gather.add_root(RootReply("C1", ORDERS["C1"], "D", ORDERS["D"], "D", guessed=True, digest=True)) == []
    [bridged] = gather.add_root(RootReply("C1", ORDERS["C1"], "D", ORDERS["D"], "D"))
    assert isinstance(bridged, LateMatch) and bridged.event["duplicate_of"] == "D"
    assert gather.add_root(RootReply("C1", ORDERS["C1"], "D", ORDERS["D"], "D")) == []
    gather.close()
