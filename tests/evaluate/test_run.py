"""The eval's scores of what a consumer sees: cluster ids as emitted, and with the merges applied."""

from streamdedup.evaluate.metrics import pair_scores
from streamdedup.evaluate.run import merged_labels, predicted_labels
from streamdedup.fingerprinter import Outcome


def verdict(page: str, cluster: str, *merged: str) -> Outcome:
    return Outcome({"id": page}, {"id": page, "status": "unique" if page == cluster else "duplicate",
                                  "cluster_id": cluster, "merged_clusters": list(merged)}, "test")


def test_a_page_that_bridges_two_clusters_joins_them_once_the_merges_are_applied():
    """b was decided before the page that shows it is a copy of a: it keeps its own cluster as
    emitted; c names the cluster it bridged, and a later bridge (e over d) chains the merge."""
    outcomes = [verdict("a", "a"), verdict("b", "b"), verdict("c", "a", "b"), verdict("d", "d"),
                verdict("e", "b", "d"), verdict("f", "f")]
    emitted = predicted_labels(outcomes)
    assert emitted == ["a", "b", "a", "d", "b", "f"]
    assert merged_labels(outcomes, emitted) == ["a", "a", "a", "a", "a", "f"]
    gold = ["s", "s", "s", "s", "s", "t"]
    assert pair_scores(gold, emitted)["recall"] < 1.0
    assert pair_scores(gold, merged_labels(outcomes, emitted))["recall"] == 1.0


def test_rejected_pages_stay_alone_and_nothing_merges_without_a_bridge():
    outcomes = [verdict("a", "a"), Outcome({"id": "r"}, {"id": "r", "status": "rejected"}, "test"), verdict("b", "a")]
    emitted = predicted_labels(outcomes)
    assert merged_labels(outcomes, emitted) == emitted == ["a", "rejected:1", "a"]
