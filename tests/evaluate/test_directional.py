"""Directional scores on hand-made verdicts: a duplicate edge is safe only when the page's content
is all in the page it names."""

from streamdedup.evaluate.directional import directional_errors, directional_scores


def page(name, units, variant, cluster="a", **extra):
    return {"id": name, "units": units, "variant": variant, "cluster": cluster, **extra}


def unique(name, cluster=None, **extra):
    return {"id": name, "status": "unique", "cluster_id": cluster or name, **extra}


def duplicate(name, of, cluster):
    return {"id": name, "status": "duplicate", "duplicate_of": of, "cluster_id": cluster}


PART = ["a:0", "a:1"]
FULL = ["a:0", "a:1", "a:2", "a:3"]


def test_the_full_page_tagged_a_duplicate_of_its_earlier_part_is_a_content_loss_edge():
    records = [page("p1", PART, "part_first"), page("full", FULL, "full_after_part")]
    scores = directional_scores(records, [unique("p1"), duplicate("full", "p1", "p1")])
    assert scores["all"]["edges"] == 1 and scores["all"]["content_loss_edges"] == 1
    assert scores["all"]["edge_precision"] == 0.0
    assert scores["all"]["redundant"] == 0 and scores["all"]["edge_recall"] == 1.0  # nothing was redundant
    assert scores["by_variant"]["full_after_part"]["content_loss_edges"] == 1
    unsafe = directional_errors(records, [unique("p1"), duplicate("full", "p1", "p1")])["unsafe_edges"]
    assert [(e["kind"], e["page"]["id"], e["duplicate_of"]["id"]) for e in unsafe] == [("content_loss", "full", "p1")]


def test_a_teaser_after_its_full_article_is_a_safe_edge_and_found():
    records = [page("full", FULL, "full_first"), page("teaser", PART, "teaser")]
    scores = directional_scores(records, [unique("full"), duplicate("teaser", "full", "full")])
    assert (scores["all"]["safe_edges"], scores["all"]["edge_precision"]) == (1, 1.0)
    assert (scores["by_variant"]["teaser"]["redundant"], scores["by_variant"]["teaser"]["found"]) == (1, 1)


def test_the_full_page_after_its_part_kept_unique_and_naming_the_part_is_right():
    records = [page("p1", PART, "part_first"), page("p2", ["a:2", "a:3"], "part_first"),
               page("full", FULL, "full_after_part")]
    verdicts = [unique("p1"), unique("p2"), unique("full", "p1", supersedes=["p1", "p2"])]
    scores = directional_scores(records, verdicts)
    assert scores["all"]["edges"] == 0 and scores["all"]["edge_precision"] == 1.0
    assert scores["by_variant"]["full_after_part"]["superseding"] == 1
    assert scores["by_variant"]["full_after_part"]["supersedes_found"] == 1
    assert scores["all"]["redundant"] == 0  # the second part shares nothing with the first


def test_a_missed_redundant_page_a_false_edge_and_a_related_follow_up():
    records = [page("orig", FULL, "original"), page("copy", FULL, "light_edit"),
               page("other", ["b:0"], "short", cluster="b", negative="short"),
               page("follow", ["a:0", "a:1", "a:2", "c:0"], "followup", cluster="f", negative="followup")]
    verdicts = [unique("orig"), unique("copy"), duplicate("other", "orig", "orig"),
                unique("follow", related_to=["orig"])]
    scores = directional_scores(records, verdicts)
    assert (scores["all"]["redundant"], scores["all"]["found"], scores["all"]["edge_recall"]) == (1, 0, 0.0)
    assert scores["all"]["false_edges"] == 1 and scores["by_negative"]["short"]["false_edges"] == 1
    assert (scores["by_variant"]["followup"]["related"], scores["by_variant"]["followup"]["related_found"]) == (1, 1)
    missed = directional_errors(records, verdicts)["missed_redundant"]
    assert [(m["page"]["id"], m["redundant_after"]["id"]) for m in missed] == [("copy", "orig")]


def test_sets_without_units_fall_back_to_their_gold_clusters():
    records = [{"id": "x", "cluster": "a", "variant": "original"}, {"id": "y", "cluster": "a", "variant": "print"},
               {"id": "z", "cluster": "b", "variant": "original"}]
    scores = directional_scores(records, [unique("x"), duplicate("y", "x", "x"), duplicate("z", "x", "x")])
    assert scores["gold_units"] == "cluster"
    assert (scores["all"]["safe_edges"], scores["all"]["false_edges"], scores["all"]["edge_recall"]) == (1, 1, 1.0)
