"""Recall per variant kind and false positives per negative kind, on a hand-made example, and
both in the eval report for every method."""

import json

from conftest import make_article, page, wrap_in_template, write_jsonl

from streamdedup.cli import main
from streamdedup.evaluate.kinds import false_positives_by_kind, kind_scores, recall_by_kind


def _rec(cluster, variant, negative=None, same_url=None):
    return {"cluster": cluster, "variant": variant, "negative": negative, "same_url": same_url}


# gold: A = {0 original, 1 teaser, 2 correction (same URL)}, B = {3 original, 4 correction (new URL)},
# singletons 5, 6 (short pages), 7 (an unlabelled other page)
RECORDS = [_rec("A", "original", "feed_article"), _rec("A", "teaser", "feed_article"),
           _rec("A", "correction", "feed_article", True), _rec("B", "original", "feed_article"),
           _rec("B", "correction", "feed_article", False), _rec("s1", "short_page", "short_page"),
           _rec("s2", "short_page", "short_page"), _rec("o", "original")]
GOLD = [r["cluster"] for r in RECORDS]
# predicted: the teaser is missed, B's correction found; both short pages and the other page joined
PREDICTED = ["a", "t", "a", "b", "b", "s", "s", "s"]


def test_recall_per_variant_counts_each_pair_for_both_pages_kinds():
    assert recall_by_kind(RECORDS, GOLD, PREDICTED) == {
        "correction": {"pairs": 3, "found": 2, "recall": 0.6667},  # 0-2 found, 1-2 missed, 3-4 found
        "original": {"pairs": 3, "found": 2, "recall": 0.6667},  # 0-1 missed, 0-2 and 3-4 found
        "teaser": {"pairs": 2, "found": 0, "recall": 0.0}}


def test_recall_by_url_keeps_revisions_at_the_same_and_at_a_new_url_apart():
    assert recall_by_kind(RECORDS, GOLD, PREDICTED, "same_url") == {
        "new_url": {"pairs": 1, "found": 1, "recall": 1.0}, "same_url": {"pairs": 2, "found": 1, "recall": 0.5}}


def test_false_positives_per_negative_kind():
    # predicted cluster s = {5, 6, 7}: pairs 5-6 (short_page), 5-7 and 6-7 (short_page only: 7 is no negative)
    assert false_positives_by_kind(RECORDS, GOLD, PREDICTED) == {"short_page": 3}
    joined = ["x", "x", "x", "x", "x", "s", "s", "o"]  # A and B in one cluster: 6 feed_article pairs
    assert false_positives_by_kind(RECORDS, GOLD, joined) == {"feed_article": 6, "short_page": 1}
    apart = [str(i) for i in range(len(RECORDS))]
    assert false_positives_by_kind(RECORDS, GOLD, apart) == {}
    others = [_rec("p", "original"), _rec("q", "original")]
    assert false_positives_by_kind(others, ["p", "q"], ["z", "z"]) == {"other": 1}


def test_old_sets_name_the_negative_in_the_variant():
    old = [{"cluster": "neg-1", "variant": "short"}, {"cluster": "neg-2", "variant": "short"}]
    assert false_positives_by_kind(old, ["neg-1", "neg-2"], ["z", "z"]) == {"short": 1}
    assert "recall_by_url" not in kind_scores(old, ["neg-1", "neg-2"], ["z", "z"])


def test_eval_report_has_kinds_for_every_method_and_a_minhash_sweep(tmp_path):
    story, other = make_article(61), make_article(62)
    crawl = write_jsonl(tmp_path / "set.jsonl", [
        page("https://a.example/1", wrap_in_template(story, "Alpha"), "2024-01-01T00:00:00Z", cluster="s",
             variant="original", negative=None),
        page("https://b.example/1", wrap_in_template(story, "Beta"), "2024-01-02T00:00:00Z", cluster="s",
             variant="syndicated", negative=None),
        page("https://a.example/2", wrap_in_template(other, "Alpha"), "2024-01-03T00:00:00Z", cluster="o",
             variant="original", negative="same_template")])
    out = tmp_path / "eval"
    assert main(["eval", str(crawl), "--out", str(out), "-q", "--methods", "minhash,simhash"]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    for name in ("default", "minhash", "simhash"):
        assert metrics["methods"][name]["recall_by_variant"]["syndicated"] == {"pairs": 1, "found": 1, "recall": 1.0}
        assert metrics["methods"][name]["false_positives_by_negative"] == {}
    assert metrics["kinds"]["negatives"] == {"same_template": 1}
    assert [row["threshold"] for row in metrics["sweep"]["minhash"]] == [0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]
    assert metrics["sweep"]["minhash"][-1]["recall"] == 1.0  # the same article: Jaccard 1 at every threshold
    report = (out / "report.html").read_text()
    assert "Recall per variant kind" in report and "same_template (1 pages)" in report
    assert "Threshold sweep" in report and report.count("<svg") >= 3
