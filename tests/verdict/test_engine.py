"""The decision engine, pure: earliest candidate, oldest cluster, bridged clusters named."""

from dataclasses import replace

from streamdedup.verdict.engine import Candidate, decide


def test_no_candidate_is_unique_in_its_own_cluster():
    verdict = decide("p", [])
    assert (verdict.status, verdict.cluster_id, verdict.duplicate_of, verdict.merged_clusters) == ("unique", "p", None, ())


def test_the_earliest_candidate_is_the_original_and_the_oldest_cluster_wins():
    a = Candidate(order=5, page_id="a", rule="minhash", similarity=0.97, root_order=5, root_id="a")
    b = Candidate(order=7, page_id="b", rule="exact", similarity=1.0, root_order=1, root_id="r")
    verdict = decide("c", [b, a])
    assert (verdict.duplicate_of, verdict.method, verdict.similarity) == ("a", "minhash", 0.97)
    assert verdict.cluster_id == "r" and verdict.merged_clusters == ("a",)


def test_candidates_of_one_cluster_merge_nothing():
    a = Candidate(order=b"\x02", page_id="a", rule="minhash", similarity=0.9, root_order=b"\x01", root_id="r")
    b = Candidate(order=b"\x03", page_id="b", rule="minhash", similarity=0.8, root_order=b"\x01", root_id="r")
    verdict = decide("c", [a, b])
    assert verdict.cluster_id == "r" and verdict.duplicate_of == "a" and verdict.merged_clusters == ()


def test_a_copy_of_the_same_text_is_named_before_an_earlier_light_edit():
    """Both hold the page by the new-text measure (a light edit's scattered edits read ~0 new in
    runs), but the light edit may have dropped a short line no measure sees (a heading, a list item:
    multilingual dev's content-loss edges): of those holding as much, the earliest of the nearest is
    named; the page still joins the oldest cluster."""
    edit = Candidate(order=3, page_id="edit", rule="minhash", similarity=0.67, root_order=1, root_id="r")
    copy = Candidate(order=5, page_id="copy", rule="exact", similarity=1.0, root_order=1, root_id="r")
    later = Candidate(order=6, page_id="later", rule="minhash", similarity=0.98, root_order=1, root_id="r")
    verdict = decide("p", [later, copy, edit])
    assert (verdict.duplicate_of, verdict.cluster_id) == ("copy", "r")


def test_a_copy_whose_own_extra_text_lowers_its_similarity_is_as_near():
    """Nearness is the share of the page a candidate holds, not the Jaccard: an original whose
    extraction kept its template's text (half of it not in the page: Jaccard 0.52) holds all of a
    copy, a light edit of it (Jaccard 0.73, nothing of its own) holds less (web dev)."""
    original = Candidate(order=2, page_id="original", rule="minhash", similarity=0.52, root_order=2,
                         root_id="original", their_new_share=0.52)
    edit = Candidate(order=4, page_id="edit", rule="minhash", similarity=0.73, root_order=2, root_id="original")
    assert decide("p", [edit, original]).duplicate_of == "original"


def test_a_page_whose_text_was_cut_is_no_duplicate_but_says_it_was_cut():
    """Its text past `max_text_chars` was never compared: a candidate holding all the rest may lack
    it. The duplicate it would have been is named as related (the page starts its own cluster);
    what it supersedes stands, and joins it to that cluster. Before: `duplicate` of "a"."""
    held = Candidate(order=5, page_id="a", rule="minhash", similarity=1.0, root_order=5, root_id="a")
    verdict = decide("p", [held], text_cut=True)
    assert (verdict.status, verdict.duplicate_of, verdict.cluster_id, verdict.related_to) == ("unique", None, "p", ("a",))
    assert verdict.as_dict()["text_cut"] is True and "text_cut" not in decide("p", [held]).as_dict()
    part = Candidate(order=3, page_id="part", rule="minhash", similarity=0.6, root_order=1, root_id="r",
                     relation="supersedes")
    verdict = decide("p", [held, part], text_cut=True)
    assert (verdict.status, verdict.cluster_id, verdict.supersedes, verdict.related_to) == ("unique", "r", ("part",), ("a",))
    assert decide("p", [], text_cut=True).text_cut


def test_a_cut_page_is_the_duplicate_of_a_page_with_the_same_whole_text():
    """A cut page's exact signature is its whole text's hash (`Texts.main_hash`): an `exact` match is
    a copy of the whole page, which stays a duplicate (and says it was cut). Before: unique, related."""
    copy = Candidate(order=5, page_id="a", rule="exact", similarity=1.0, root_order=2, root_id="r")
    verdict = decide("p", [copy], text_cut=True)
    assert (verdict.status, verdict.duplicate_of, verdict.cluster_id, verdict.text_cut) == ("duplicate", "a", "r", True)


def test_of_copies_holding_as_much_the_one_lacking_no_paragraph_is_named():
    """An earlier light edit that dropped a short line of the page (under the 20 words that make a
    duplicate new) reads as near as the whole article within the estimates' error; the paragraph
    sketches show the line missing from it, so the article is named (multilingual dev: a teaser
    named such a light edit, a content-loss edge). Without such a candidate, the earliest stands."""
    edit = Candidate(order=3, page_id="edit", rule="minhash", similarity=0.58, root_order=1, root_id="r",
                     new_share=0.04, their_new_share=0.34, new_paragraph=12)
    article = Candidate(order=5, page_id="article", rule="minhash", similarity=0.62, root_order=1, root_id="r",
                        new_share=0.03, their_new_share=0.31)
    verdict = decide("p", [edit, article])
    assert (verdict.duplicate_of, verdict.cluster_id) == ("article", "r")
    assert decide("p", [edit, replace(article, new_paragraph=14)]).duplicate_of == "edit"
    # one holding clearly less is not named for lacking no paragraph
    far = replace(article, new_share=0.09)
    assert decide("p", [edit, far]).duplicate_of == "edit"


def test_a_page_bridges_what_it_supersedes_only_where_those_are_its_parts():
    """A digest (whole stories of other sites, each the first page of its cluster) bridges none and
    starts its own cluster, naming them; the view-all page bridges its parts (its own site's, each
    its cluster's first page) and the copies in their clusters; one story held whole is joined."""
    def held(name: str, order: int, root: str | None = None, same_site: bool = False) -> Candidate:
        return Candidate(order, name, "minhash", 0.5, order if root is None else 0, root or name, "supersedes",
                         same_site=same_site)

    digest = decide("d", [held("a", 1), held("b", 2)])
    assert (digest.status, digest.cluster_id, digest.merged_clusters, digest.supersedes) == ("unique", "d", (), ("a", "b"))
    assert decide("s", [held("a", 1)]).cluster_id == "a"  # one story, with something of its own
    view_all = decide("v", [held("p1", 1, same_site=True), held("copy", 3, root="p1"), held("p2", 2, same_site=True)])
    assert (view_all.cluster_id, view_all.merged_clusters) == ("p1", ("p2",))
    # the site's copy of another site's story is not its part: that story's cluster is not bridged
    copied = decide("e", [held("a", 1), held("a-copy", 4, root="a", same_site=True), held("p", 2, same_site=True)])
    assert (copied.cluster_id, copied.merged_clusters) == ("p", ())
    # a duplicate's cluster is joined whatever else the page holds
    copy = Candidate(5, "x", "minhash", 0.97, 5, "x")
    assert (decide("c", [copy, held("a", 1), held("b", 2)]).cluster_id, decide("c", [copy, held("a", 1)]).merged_clusters
            ) == ("x", ())
