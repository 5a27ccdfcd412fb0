"""The decision engine, pure: earliest candidate, oldest cluster, bridged clusters named."""

from streamdedup.verdict.engine import Candidate, decide


def test_no_candidate_is_unique_in_its_own_cluster():
    verdict = decide("p", [])
    assert (verdict.status, verdict.cluster_id, verdict.duplicate_of, verdict.merged_clusters) == ("unique", "p", None, ())


def test_the_earliest_candidate_is_the_original_and_the_oldest_cluster_wins():
    a = Candidate(order=5, page_id="a", rule="minhash", similarity=0.6, root_order=5, root_id="a")
    b = Candidate(order=7, page_id="b", rule="exact", similarity=1.0, root_order=1, root_id="r")
    verdict = decide("c", [b, a])
    assert (verdict.duplicate_of, verdict.method, verdict.similarity) == ("a", "minhash", 0.6)
    assert verdict.cluster_id == "r" and verdict.merged_clusters == ("a",)


def test_candidates_of_one_cluster_merge_nothing():
    a = Candidate(order=b"\x02", page_id="a", rule="minhash", similarity=0.9, root_order=b"\x01", root_id="r")
    b = Candidate(order=b"\x03", page_id="b", rule="minhash", similarity=0.8, root_order=b"\x01", root_id="r")
    verdict = decide("c", [a, b])
    assert verdict.cluster_id == "r" and verdict.duplicate_of == "a" and verdict.merged_clusters == ()
