"""`streamdedup eval`: every method alone, and the default policy, on one labelled set.

Pages are cleaned and fingerprinted once, then each method (and the default policy) decides in
stream order against its own fresh store, exactly as `dedup` would.
"""

from __future__ import annotations

import tempfile
from collections import Counter
from dataclasses import replace
from itertools import combinations
from pathlib import Path
from typing import Any

import orjson

from streamdedup.config import DetectorConfig
from streamdedup.detector import Detector, Fingerprinted, Outcome
from streamdedup.evaluate.attack import attack_pages_needed
from streamdedup.evaluate.directional import directional_errors, directional_scores
from streamdedup.evaluate.kinds import kind_scores, page_kinds
from streamdedup.evaluate.metrics import pair_scores
from streamdedup.evaluate.paper import cluster_pairs, dice_matrix, paper_scores, verify_pairs
from streamdedup.evaluate.report import write_report
from streamdedup.record.readers import RawRecord, check_inputs, read_input

DEFAULT = "default"
SWEEP = {"minhash": (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)}  # thresholds a method is also scored at, alone


def scenario_configs(config: DetectorConfig, methods: list[str],
                     default: DetectorConfig | None = None) -> dict[str, DetectorConfig]:
    """The default (`config` unless given) and each method alone, with its parameters from `config`."""
    scenarios = {DEFAULT: config if default is None else default}
    for name in methods:
        params = {name: config.params_for(name)}
        scenarios[name] = replace(config, methods=(name,), method_params=params, policy=name,
                                  same_site_policy=name)
    return scenarios


def sweep_configs(config: DetectorConfig, methods: list[str]) -> dict[tuple[str, float], DetectorConfig]:
    """Each swept method alone at each of its thresholds (a fresh decision, as `dedup` would make)."""
    sweeps = {}
    for name in methods:
        for threshold in SWEEP.get(name, ()):
            params = {name: {**config.params_for(name), "threshold": threshold}}
            sweeps[(name, threshold)] = replace(config, methods=(name,), method_params=params, policy=name,
                                                same_site_policy=name)
    return sweeps


def _rounded(scores: dict[str, float | int]) -> dict[str, float | int]:
    return {k: round(v, 4) if isinstance(v, float) else v for k, v in scores.items()}


def decide_all(config: DetectorConfig, items: list[Fingerprinted | Outcome], state: Path) -> list[Outcome]:
    """Decide prepared pages in batches on a fresh store at `state`, in order."""
    outcomes: list[Outcome] = []
    with Detector(config, state) as detector:
        for start in range(0, len(items), config.batch_size):
            outcomes.extend(detector.decide_batch(items[start: start + config.batch_size]))
    return outcomes


def predicted_labels(outcomes: list[Outcome]) -> list[str]:
    """Cluster id per page, as emitted; a rejected page is its own cluster."""
    return [o.dedup.get("cluster_id") or f"rejected:{i}" for i, o in enumerate(outcomes)]


def merged_labels(outcomes: list[Outcome], labels: list[str]) -> list[str]:
    """`labels` with every cluster a later page bridged (its `merged_clusters`) joined to that page's cluster.

    What a consumer that applies the merges sees (a news-clustering feed), where the verdicts as
    emitted keep the cluster each page was given when it was decided."""
    parent: dict[str, str] = {}

    def root(cluster: str) -> str:
        while parent.get(cluster, cluster) != cluster:
            cluster = parent[cluster]
        return cluster

    for outcome in outcomes:
        for bridged in outcome.dedup.get("merged_clusters") or ():
            into, other = root(outcome.dedup["cluster_id"]), root(bridged)
            if into != other:
                parent[other] = into
    return [root(label) for label in labels]


def error_pairs(records: list[dict[str, Any]], gold: list[str], predicted: list[str],
                limit: int = 200) -> dict[str, Any]:
    """False-positive and false-negative pairs, described by their variants, for error analysis."""
    def describe(i: int) -> dict[str, Any]:
        r = records[i]
        return {k: r.get(k) for k in ("id", "url", "cluster", "variant") if k in r}

    by_gold: dict[str, list[int]] = {}
    by_pred: dict[str, list[int]] = {}
    for i, (g, p) in enumerate(zip(gold, predicted, strict=True)):
        by_gold.setdefault(g, []).append(i)
        by_pred.setdefault(p, []).append(i)
    false_pos = [(i, j) for members in by_pred.values() for i, j in combinations(members, 2) if gold[i] != gold[j]]
    false_neg = [(i, j) for members in by_gold.values() for i, j in combinations(members, 2)
                 if predicted[i] != predicted[j]]
    return {"false_positives": [{"a": describe(i), "b": describe(j)} for i, j in false_pos[:limit]],
            "false_negatives": [{"a": describe(i), "b": describe(j)} for i, j in false_neg[:limit]],
            "counts": {"false_positives": len(false_pos), "false_negatives": len(false_neg)}}


def _labelled(raw: RawRecord) -> bool:
    """Whether the record carries a gold cluster (its `cluster` field)."""
    if raw.fields is not None:
        return "cluster" in raw.fields
    try:
        value = orjson.loads(raw.data or b"")
    except orjson.JSONDecodeError:
        return False
    return isinstance(value, dict) and "cluster" in value


def run_evaluation(dataset: Path, out_dir: Path, config: DetectorConfig, methods: list[str],
                   quiet: bool = False, default_methods: tuple[str, ...] | None = None) -> dict[str, Any]:
    """Score the default and each of `methods` alone on a labelled set: metrics.json, errors.json, report.html.

    `config` may enable methods beyond `default_methods` (the default's; None: all of config's) only to carry
    the parameters of the methods scored alone (`cli_options.scoring_config`)."""
    from tqdm import tqdm

    default = config if default_methods is None else replace(
        config, methods=default_methods,
        method_params={m: p for m, p in config.method_params.items() if m in default_methods})

    check_inputs([str(dataset)])  # named as `dedup` names it, before --out is made
    if out_dir.exists() and not out_dir.is_dir():
        raise FileExistsError(f"--out {out_dir} is a file: give --out a folder (it is created if missing)")
    out_dir.mkdir(parents=True, exist_ok=True)
    all_methods = tuple(dict.fromkeys([*config.methods, *methods]))
    with tempfile.TemporaryDirectory(prefix="streamdedup-eval-") as tmp:
        with Detector(replace(config, methods=all_methods), Path(tmp) / "prepare") as preparer:
            raws = list(read_input(str(dataset)))
            if raws and not any(_labelled(raw) for raw in raws):
                raise ValueError(f"{dataset} has no labelled page (a `cluster` field): eval scores a labelled "
                                 f"set (make one with `streamdedup devset`); judge a crawl with `streamdedup dedup`")
            for number, raw in enumerate(raws, start=1):  # as a fresh `dedup` job places them (outputs/job.py):
                raw.position = f"job 1:#{number}"       # an undated page's id, so a re-crawl is judged
            items: list[Fingerprinted | Outcome] = []
            with tqdm(total=len(raws), unit="page", desc="fingerprint", disable=quiet or None) as progress:
                for start in range(0, len(raws), config.batch_size):
                    chunk = raws[start: start + config.batch_size]
                    items.extend(preparer.prepare_many(chunk))
                    progress.update(len(chunk))
        records = [item.record for item in items]
        gold = [str(r.get("cluster", f"unlabelled:{i}")) for i, r in enumerate(records)]
        results: dict[str, dict[str, Any]] = {}
        errors: dict[str, Any] = {}
        found: dict[str, set[tuple[int, int]]] = {}
        for name, scenario in scenario_configs(config, methods, default).items():
            outcomes = decide_all(scenario, items, Path(tmp) / name)
            predicted = predicted_labels(outcomes)
            scores = pair_scores(gold, predicted)
            results[name] = _rounded(scores)
            merged = pair_scores(gold, merged_labels(outcomes, predicted))
            results[name]["with_merges"] = {k: v for k, v in _rounded(merged).items()
                                            if k in ("precision", "recall", "f1", "predicted_pairs")}
            results[name]["policy"] = scenario.policy
            results[name].update(kind_scores(records, gold, predicted))
            results[name]["rejected_by_reason"] = dict(Counter(
                str(o.dedup.get("reason")) for o in outcomes if o.dedup.get("status") == "rejected"))
            verdicts = [o.dedup for o in outcomes]  # each page's whole verdict, not only its cluster
            results[name]["directional"] = directional_scores(records, verdicts)
            errors[name] = error_pairs(records, gold, predicted)
            errors[name]["directional"] = directional_errors(records, verdicts)
            found[name] = cluster_pairs(predicted)
        sweep: dict[str, list[dict[str, Any]]] = {}
        for (name, threshold), scenario in sweep_configs(config, methods).items():
            predicted = predicted_labels(decide_all(scenario, items, Path(tmp) / f"{name}-{threshold}"))
            scores = pair_scores(gold, predicted)
            sweep.setdefault(name, []).append(
                {"threshold": threshold, **_rounded(scores),
                 "false_positives_by_negative": kind_scores(records, gold, predicted)["false_positives_by_negative"]})
    texts = [item.text if isinstance(item, Fingerprinted) else "" for item in items]
    pool = set().union(*found.values())
    verified = verify_pairs(pool, texts)
    for name, scores in paper_scores(found, verified).items():
        results[name].update(scores)
    metrics = {"methods": results, "dataset": str(dataset), "pages": len(items),
               "rejected": sum(1 for i in items if isinstance(i, Outcome)),
               "pool": {"pairs": len(pool), "verified": len(verified), "similarity": "rapidfuzz ratio >= 0.8"},
               "dice": dice_matrix({k: v for k, v in found.items() if k != DEFAULT}),
               "kinds": page_kinds(records), "sweep": sweep,
               "template": str(getattr(default, "template", "unknown") or "off"),
               "attack": attack_pages_needed(default)}
    (out_dir / "metrics.json").write_bytes(orjson.dumps(metrics, option=orjson.OPT_INDENT_2))
    (out_dir / "errors.json").write_bytes(orjson.dumps(errors, option=orjson.OPT_INDENT_2))
    write_report(out_dir / "report.html", metrics, errors)
    return metrics
