"""The eval's scores of what a consumer sees: cluster ids as emitted, and with the merges applied."""

from conftest import make_article, page, wrap_in_template, write_jsonl

from streamdedup.config import DetectorConfig
from streamdedup.evaluate.metrics import pair_scores
from streamdedup.evaluate.run import merged_labels, predicted_labels, run_evaluation
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


def test_eval_scores_every_verdict_directionally_and_judges_an_undated_re_crawl(tmp_path):
    """The eval keeps each page's whole verdict: a teaser after its article is a safe edge, and a
    re-crawl of one URL without id or fetch time is judged (a duplicate), not `duplicate_id`."""
    story = make_article(71, paragraphs=8)
    records = [page("https://a.example/story", wrap_in_template(story, "Alpha"), cluster="s", variant="original",
                    units=[f"s:{i}" for i in range(8)]),
               page("https://b.example/teaser", wrap_in_template(story[:6], "Beta"), "2024-03-02T00:00:00Z",
                    cluster="s", variant="teaser", units=[f"s:{i}" for i in range(6)]),
               {"url": "https://c.example/feed", "content": wrap_in_template(make_article(72), "Gamma"),
                "cluster": "u", "variant": "undated_original", "units": ["u:0"]},
               {"url": "https://c.example/feed", "content": wrap_in_template(make_article(72), "Gamma"),
                "cluster": "u", "variant": "undated_same", "units": ["u:0"]}]
    metrics = run_evaluation(write_jsonl(tmp_path / "set.jsonl", records), tmp_path / "eval",
                             DetectorConfig(), [], quiet=True)
    directional = metrics["methods"]["default"]["directional"]
    assert directional["by_variant"]["teaser"]["safe_edges"] == 1
    assert directional["by_variant"]["undated_same"]["found"] == 1 and metrics["rejected"] == 0
    assert "Directional: is a duplicate_of edge safe to drop?" in (tmp_path / "eval" / "report.html").read_text()
