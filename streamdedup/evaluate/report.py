"""The HTML evaluation report: a table, a precision/recall chart and the default policy's errors."""

from __future__ import annotations

import html
import io
from pathlib import Path
from typing import Any

MAX_ATTACK_PAGES = 40  # evaluate/attack.py's MAX_PAGES (not imported: the report needs no detector)


def _svg(fig: Any) -> str:
    import matplotlib.pyplot as plt

    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", bbox_inches="tight")
    plt.close(fig)
    svg = buffer.getvalue()
    return svg[svg.index("<svg"):]


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _chart(methods: dict[str, dict[str, Any]]) -> str:
    """Bars per method, and precision against recall.

    Labels rotated, layout constrained, and the scatter's points named in a legend (methods often
    share a point, so labels on it overlap)."""
    plt = _pyplot()
    names = list(methods)
    fig, (bars, scatter) = plt.subplots(1, 2, figsize=(max(12, 1.2 * len(names) + 6), 4.8), layout="constrained")
    width = 0.27
    for offset, metric in enumerate(("precision", "recall", "f1")):
        bars.bar([i + (offset - 1) * width for i in range(len(names))],
                 [methods[n][metric] for n in names], width, label=metric)
    bars.set_xticks(range(len(names)), names, rotation=45, ha="right", rotation_mode="anchor", fontsize=8)
    bars.set_ylim(0, 1.05)
    bars.set_title("pairwise precision / recall / F1")
    bars.legend(loc="lower left", fontsize=8, framealpha=0.9)
    markers = "osD^v<>phX*"
    for i, n in enumerate(names):
        scatter.scatter(methods[n]["recall"], methods[n]["precision"], marker=markers[i % len(markers)],
                        label=n, alpha=0.8)
    scatter.set_xlabel("recall")
    scatter.set_ylabel("precision")
    scatter.set_xlim(0, 1.05)
    scatter.set_ylim(0, 1.05)
    scatter.set_title("precision vs recall per method")
    scatter.legend(loc="center left", bbox_to_anchor=(1.02, 0.5), fontsize=8, frameon=False)
    return _svg(fig)


def _sweep_chart(sweep: dict[str, list[dict[str, Any]]]) -> str:
    if not sweep:
        return ""
    plt = _pyplot()
    fig, axes = plt.subplots(1, len(sweep), figsize=(6 * len(sweep), 3.6), layout="constrained", squeeze=False)
    for ax, (name, rows) in zip(axes[0], sweep.items(), strict=True):
        thresholds = [r["threshold"] for r in rows]
        for metric in ("precision", "recall", "f1"):
            ax.plot(thresholds, [r[metric] for r in rows], marker="o", label=metric)
        ax.set_xlabel(f"{name} threshold")
        ax.set_ylim(0, 1.05)
        ax.set_title(f"{name} alone, by threshold")
        ax.legend(loc="lower left", fontsize=8)
    return _svg(fig)


# 004's Table (ROMIP, ~500k pages): recall against the pool, verified precision, F.
ROMIP = {"a12": (0.96, 0.95, 0.95), "longsent": (0.84, 0.80, 0.82), "tf": (0.60, 0.94, 0.73),
         "optfreq": (0.59, 0.94, 0.73), "tfridf": (0.59, 0.95, 0.73), "heavysent": (0.62, 0.86, 0.72),
         "tfidf": (0.54, 0.96, 0.69), "lexrand": (0.50, 0.97, 0.66), "descrwords": (0.44, 0.77, 0.56),
         "logshingles": (0.39, 0.97, 0.56), "megashingles": (0.36, 0.91, 0.51), "exact": (0.23, 1.00, 0.38)}


def _paper_table(methods: dict[str, dict[str, Any]]) -> str:
    if not any("pool_recall" in m for m in methods.values()):
        return ""
    head = "".join(f"<th>{h}</th>" for h in ("method", "pairs found (Table 3)", "pool recall",
                                               "verified precision", "F", "ROMIP recall", "ROMIP precision", "ROMIP F"))
    rows = []
    for name, m in sorted(methods.items(), key=lambda item: -item[1].get("verified_f", 0)):
        romip = ROMIP.get(name, ("", "", ""))
        cells = [name, m["pairs_found"], f"{m['pool_recall']:.3f}", f"{m['verified_precision']:.3f}",
                 f"{m['verified_f']:.3f}", *romip]
        rows.append("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in cells) + "</tr>")
    return ("<h2>004's protocol: pool of pairs found by any method, verified by text similarity &ge; 0.8</h2>"
            f"<table><tr>{head}</tr>{''.join(rows)}</table>")


def _dice_heatmap(dice: dict[str, dict[str, float]]) -> str:
    if not dice:
        return ""
    plt = _pyplot()
    names = list(dice)
    grid = [[dice[a][b] for b in names] for a in names]
    size = 2.5 + 0.5 * len(names)
    fig, ax = plt.subplots(figsize=(size + 1, size), layout="constrained")
    image = ax.imshow(grid, vmin=0, vmax=1, cmap="viridis")
    ax.set_xticks(range(len(names)), names, rotation=60, ha="right", rotation_mode="anchor", fontsize=8)
    ax.set_yticks(range(len(names)), names, fontsize=8)
    for i, row in enumerate(grid):
        for j, value in enumerate(row):
            ax.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=6,
                    color="white" if value < 0.6 else "black")
    fig.colorbar(image, ax=ax, fraction=0.04)
    ax.set_title("Dice agreement of found pair sets (004's Table 4)", fontsize=9)
    return _svg(fig)


def _cells(row: list[Any]) -> str:
    return "<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>"


def _head(names: list[str]) -> str:
    return "<tr>" + "".join(f"<th>{html.escape(n)}</th>" for n in names) + "</tr>"


def _by_kind(methods: dict[str, dict[str, Any]], kinds: dict[str, dict[str, int]]) -> str:
    """Recall per variant kind (found / gold pairs) and false-positive pairs per negative kind."""
    parts = []
    for field, title in (("recall_by_variant", "Recall per variant kind: pairs found / gold pairs"),
                         ("recall_by_url", "Recall of revisions at the same or a new URL")):
        columns = sorted({k for m in methods.values() for k in m.get(field, {})})
        if not columns:
            continue
        rows = [[name, *(f"{m[field][k]['found']}/{m[field][k]['pairs']} ({m[field][k]['recall']:.3f})"
                         if k in m.get(field, {}) else "" for k in columns)] for name, m in methods.items()]
        parts.append(f"<h3>{title}</h3><table>{_head(['method', *columns])}"
                     f"{''.join(_cells(r) for r in rows)}</table>")
    negatives = kinds.get("negatives", {})
    columns = sorted(set(negatives) | {k for m in methods.values() for k in m.get("false_positives_by_negative", {})})
    if columns:
        header = ["method", *(f"{k} ({negatives[k]} pages)" if k in negatives else k for k in columns),
                  "all false-positive pairs"]
        rows = [[name, *(m.get("false_positives_by_negative", {}).get(k, 0) for k in columns),
                 m["predicted_pairs"] - m["true_pairs"]] for name, m in methods.items()]
        parts.append("<h3>False-positive pairs per negative kind</h3><p>A pair counts for the negative kind of "
                     "each of its pages ('other': neither page is a built hard negative).</p>"
                     f"<table>{_head(header)}{''.join(_cells(r) for r in rows)}</table>")
    return "".join(parts)


DIRECTIONAL_COLUMNS = ("edges", "safe_edges", "content_loss_edges", "false_edges", "edge_precision", "redundant",
                       "found", "edge_recall", "supersedes_found", "superseding", "related_found", "related")


def _directional_row(name: str, scores: dict[str, Any]) -> list[Any]:
    return [name, *(f"{scores[k]:.3f}" if isinstance(scores[k], float) else scores[k] for k in DIRECTIONAL_COLUMNS)]


def _directional(methods: dict[str, dict[str, Any]]) -> str:
    """Directional edge scores (evaluate/directional.py): every method, then the default policy by kind."""
    scored = {name: m["directional"] for name, m in methods.items() if "directional" in m}
    if not scored:
        return ""
    head = _head(["method", *DIRECTIONAL_COLUMNS])
    rows = "".join(_cells(_directional_row(name, d["all"])) for name, d in scored.items())
    default = scored.get("default") or next(iter(scored.values()))
    parts = [f"<h2>Directional: is a duplicate_of edge safe to drop?</h2><p>Gold: each page's content units "
             f"({html.escape(str(default.get('gold_units')))}). An edge P&rarr;Q is safe when all of P's units are in "
             "Q; content loss: unsafe, sharing units; false: sharing none. Recall: pages an earlier page makes "
             "redundant that got a safe edge. supersedes / related_to: informational.</p>"
             f"<table>{head}{rows}</table>"]
    for field, title in (("by_variant", "per variant kind"), ("by_negative", "per negative kind")):
        kinds = default.get(field, {})
        if kinds:
            body = "".join(_cells(_directional_row(kind, scores)) for kind, scores in kinds.items())
            head = _head(["kind", *DIRECTIONAL_COLUMNS])
            parts.append(f"<h3>Default policy, {title}</h3><table>{head}{body}</table>")
    return "".join(parts)


def _sweep(sweep: dict[str, list[dict[str, Any]]]) -> str:
    if not sweep:
        return ""
    parts = []
    for name, rows in sweep.items():
        cells = [[r["threshold"], *(f"{r[k]:.3f}" for k in ("precision", "recall", "f1")),
                  r["predicted_pairs"] - r["true_pairs"],
                  ", ".join(f"{k} {v}" for k, v in r["false_positives_by_negative"].items())] for r in rows]
        parts.append(f"<h3>{html.escape(name)} alone at several thresholds</h3><table>"
                     f"{_head(['threshold', 'precision', 'recall', 'F1', 'false-positive pairs', 'by negative kind'])}"
                     f"{''.join(_cells(c) for c in cells)}</table>")
    return "<h2>Threshold sweep</h2>" + "".join(parts) + _sweep_chart(sweep)


def _table(methods: dict[str, dict[str, Any]]) -> str:
    head = "".join(f"<th>{h}</th>" for h in ("method", "policy", "precision", "recall", "F1", "ARI",
                                               "predicted pairs", "true pairs", "gold pairs",
                                               "P / R / F1 with merges applied"))
    rows = []
    for name, m in methods.items():
        merged = m.get("with_merges")
        cells = [name, m.get("policy", ""), *(f"{m[k]:.3f}" for k in ("precision", "recall", "f1", "ari")),
                 m["predicted_pairs"], m["true_pairs"], m["gold_pairs"],
                 " / ".join(f"{merged[k]:.3f}" for k in ("precision", "recall", "f1")) if merged else ""]
        rows.append("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in cells) + "</tr>")
    return f"<table><tr>{head}</tr>{''.join(rows)}</table>"


def _errors(errors: dict[str, Any]) -> str:
    default = errors.get("default", {})
    parts = []
    for kind in ("false_positives", "false_negatives"):
        items = default.get(kind, [])[:50]
        total = default.get("counts", {}).get(kind, 0)
        lines = "".join(
            f"<li>{html.escape(str(e['a'].get('variant')))} {html.escape(str(e['a'].get('url')))} &harr; "
            f"{html.escape(str(e['b'].get('variant')))} {html.escape(str(e['b'].get('url')))}</li>" for e in items)
        parts.append(f"<h3>{kind.replace('_', ' ')} of the default policy: {total}</h3><ul>{lines}</ul>")
    directional = default.get("directional", {})
    for kind, title in (("unsafe_edges", "unsafe duplicate edges"), ("missed_redundant", "redundant pages missed")):
        items = directional.get(kind, [])
        lines = "".join(f"<li>{html.escape(_edge_line(e))}</li>" for e in items[:50])
        if items:
            parts.append(f"<h3>{title} of the default policy (first {len(items[:50])})</h3><ul>{lines}</ul>")
    return "".join(parts)


def _edge_line(entry: dict[str, Any]) -> str:
    page = entry.get("page") or {}
    other = entry.get("duplicate_of") or entry.get("redundant_after") or {}
    verb = entry.get("kind") or f"{entry.get('status')}, redundant after"
    return f"{page.get('variant')} {page.get('url')} -> {verb} -> {other.get('variant')} {other.get('url')}"


def _attack(rows: list[dict[str, Any]]) -> str:
    """The crafted pages it takes to reject or hide a real article (`evaluate/attack.py`)."""
    if not rows:
        return ""
    cells = [[r["case"], r["reject"] or f"none up to {MAX_ATTACK_PAGES}",
              r["hide_or_reject"] or f"none up to {MAX_ATTACK_PAGES}"] for r in rows]
    return ("<h2>The template model under attack</h2><p>Crafted pages showing a real article's text before it "
            "is crawled: how many it takes to make the article <code>template_only</code> (reject), or to have it "
            "judged on under half of its lines (hide). Generated pages, this run's template parameters.</p>"
            f"<table>{_head(['case', 'pages to reject', 'pages to hide or reject'])}"
            f"{''.join(_cells(c) for c in cells)}</table>")


def write_report(path: Path, metrics: dict[str, Any], errors: dict[str, Any]) -> None:
    """Write the evaluation's HTML report: each method's scores and its errors."""
    methods = metrics["methods"]
    page = f"""<!doctype html><html><head><meta charset="utf-8"><title>streamdedup evaluation</title>
<style>body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse}}
td,th{{border:1px solid #bbb;padding:4px 8px;text-align:right}}td:first-child{{text-align:left}}</style>
</head><body><h1>streamdedup evaluation</h1>
<p>dataset: {html.escape(str(metrics.get('dataset')))}; pages: {metrics.get('pages')};
rejected: {metrics.get('rejected')}; template model: {html.escape(str(metrics.get('template')))}.
Pairwise scores over same-cluster pairs; ARI over clusters.</p>
<h2>Against the gold labels</h2>
{_table(methods)}
{_directional(methods)}
{_chart(methods)}
{_attack(metrics.get('attack', []))}
<h2>By kind</h2>
{_by_kind(methods, metrics.get('kinds', {}))}
{_sweep(metrics.get('sweep', {}))}
{_paper_table(methods)}
<p>pool: {html.escape(str(metrics.get('pool')))}</p>
{_dice_heatmap(metrics.get('dice', {}))}
{_errors(errors)}
</body></html>"""
    path.write_text(page, encoding="utf-8")
