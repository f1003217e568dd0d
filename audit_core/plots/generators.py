"""Figures, tables and the report of the generator comparison (METHODS.md §1, several generators)."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import plotly.graph_objects as go

from audit_core.comparison import GeneratorComparison
from audit_core.plots.common import apply_layout, color_for, log_roc_figure
from audit_core.report import InputSummary, Report
from audit_core.roc import INTERVAL_LIMIT

ATTACK_LABELS = {"true_distribution": "true-distribution KDE", "realistic": "realistic KDE"}

LIMITS = [
    "Each generator is fitted once with one seed; AUC and TPR move between seeds, more so for the GANs.",
    "The true-distribution attack is an upper bound (it knows the labels of the attack set, cross-fitted).",
    "TPR at 0.1 % FPR needs at least 10,000 non-members to be measured; below that it is marked unsupported.",
    INTERVAL_LIMIT,
    "Utility is SDMetrics' quality report (column shapes + column pair trends) against the training table: "
    "it measures fidelity of marginals and pairs, not every downstream use.",
    "'bootstrap' (training rows resampled) and 'population' (unseen real rows) are reference points, "
    "not generators: they mark maximal leakage and chance.",
]


def comparison_table(comparison: GeneratorComparison) -> pd.DataFrame:
    """The paper's table for display: one row per generator, rounded, with intervals as text.

    Columns: generator, AUC (true / realistic), TPR at 0.1 % and 1 % FPR of the
    true-distribution attack with their 95 % intervals (:func:`audit_core.roc.tpr_at_fpr`; an
    unsupported FPR is flagged), F1 of the two KDE attacks and of Method 1,
    utility, fit time and the generator's error when it failed.
    """
    raw = comparison.table()
    rows = []
    for _, r in raw.iterrows():
        row = {"Generator": r["label"]}
        if r["error"]:
            row["Error"] = r["error"]
        else:
            row["AUC (true)"] = round(float(r["auc_true"]), 3)
            row["AUC (realistic)"] = round(float(r["auc_realistic"]), 3)
            for tag in ("0.1%", "1%"):
                flag = "" if r[f"tpr@{tag}_supported"] else " (unsupported)"
                row[f"TPR@{tag} FPR"] = f"{r[f'tpr@{tag}']:.3f} {r[f'tpr@{tag}_ci']}{flag}"
            row["F1 KDE (true)"] = round(float(r["f1_true"]), 3)
            row["F1 KDE (realistic)"] = round(float(r["f1_realistic"]), 3)
            row["F1 Method 1"] = round(float(r["f1_method1"]), 3)
            row["Utility"] = round(float(r["utility"]), 3)
            row["Error"] = ""
        row["Fit (s)"] = round(float(r["fit_s"]), 1)
        rows.append(row)
    columns = [
        "Generator", "AUC (true)", "AUC (realistic)", "TPR@0.1% FPR", "TPR@1% FPR", "F1 KDE (true)",
        "F1 KDE (realistic)", "F1 Method 1", "Utility", "Fit (s)", "Error",
    ]
    return pd.DataFrame(rows).reindex(columns=columns)


def comparison_roc_figure(comparison: GeneratorComparison, *, attack: str = "true_distribution") -> go.Figure:
    """Log-log ROC curves of all generators overlaid, for one attack model (METHODS.md §1.6)."""
    curves = [(run.label, run.audit.attacks[attack].curve) for run in comparison.runs if run.ok]
    colors = {run.label: color_for(run.name, i) for i, run in enumerate(comparison.runs)}
    title = f"Log-log ROC per generator ({ATTACK_LABELS.get(attack, attack)})"
    return log_roc_figure(curves, title=title, colors=colors)


def privacy_utility_figure(comparison: GeneratorComparison, *, attack: str = "true_distribution") -> go.Figure:
    """Scatter of utility (x) against attack AUC (y): lower-right is the better trade-off."""
    fig = go.Figure()
    for i, run in enumerate(comparison.runs):
        if not run.ok or run.utility is None:
            continue
        fig.add_trace(go.Scatter(
            x=[run.utility.overall], y=[run.audit.attacks[attack].auc], mode="markers", name=run.label,
            marker={"size": 13, "color": color_for(run.name, i), "line": {"width": 1, "color": "white"}},
            hovertemplate="utility %{x:.3f}<br>AUC %{y:.3f}<extra>" + run.label + "</extra>",
        ))
    fig.add_hline(y=0.5, line={"dash": "dash", "color": "#7F7F7F"}, annotation_text="chance")
    fig.update_xaxes(title="utility (SDMetrics quality score, higher = more faithful)")
    fig.update_yaxes(title=f"AUC ({ATTACK_LABELS.get(attack, attack)}, higher = leakier)")
    return apply_layout(fig, title="Privacy against utility")


def verdict(comparison: GeneratorComparison) -> str:
    """One paragraph: which generators leak, read against the two references."""
    ok = [r for r in comparison.runs if r.ok]
    failed = [r for r in comparison.runs if not r.ok]
    if not ok:
        return "No generator completed; see each row's error."
    parts = []
    real = [r for r in ok if r.name not in {"bootstrap", "population"}]
    if real:
        aucs = {r.label: r.audit.attacks["true_distribution"].auc for r in real}
        worst = max(aucs, key=aucs.get)
        best = min(aucs, key=aucs.get)
        parts.append(
            f"Among the generators, {worst} leaks most (AUC {aucs[worst]:.3f}) and {best} least "
            f"(AUC {aucs[best]:.3f})."
        )
    words = {
        "population": "The chance reference (unseen real rows)",
        "bootstrap": "The leaky reference (resampled training rows)",
    }
    for r in ok:
        if r.name in words:
            parts.append(f"{words[r.name]} scores AUC {r.audit.attacks['true_distribution'].auc:.3f}.")
    if failed:
        parts.append("Failed: " + ", ".join(r.label for r in failed) + ".")
    return " ".join(parts)


def build_report(
    comparison: GeneratorComparison,
    *,
    inputs: Sequence[InputSummary] = (),
    title: str = "Synthetic-data generators compared",
) -> Report:
    """The comparison's deliverable: the table, overlaid log-ROC curves, privacy vs utility."""
    figures = [
        ("Log-log ROC, true-distribution attack", comparison_roc_figure(comparison, attack="true_distribution")),
        ("Log-log ROC, realistic attack", comparison_roc_figure(comparison, attack="realistic")),
        ("Privacy against utility", privacy_utility_figure(comparison)),
    ]
    sizes = comparison.split.sizes()
    settings = {
        "generators": ", ".join(r.name for r in comparison.runs),
        "split fractions": ", ".join(f"{k} {v:.2f}" for k, v in comparison.split.fractions.items()),
        "split rows": ", ".join(f"{k} {v}" for k, v in sizes.items()),
        "synthetic rows per generator": comparison.rows,
        "numeric columns": ", ".join(comparison.types.numeric),
        "categorical columns": ", ".join(comparison.types.categorical),
        "ignored columns": ", ".join(comparison.types.ignored) or "none",
    }
    for run in comparison.runs:
        if run.params:
            settings[f"{run.name} parameters"] = ", ".join(f"{k}={v}" for k, v in run.params.items())
    return Report(
        title=title,
        question=(
            "For the same real training data, which generator's synthetic table lets an attacker tell members "
            "from non-members most easily, and what fidelity does it keep? (METHODS.md §1)"
        ),
        inputs=list(inputs),
        settings=settings,
        metrics=comparison.to_json(),
        figures=figures,
        tables=[("Generators side by side", comparison_table(comparison))],
        verdict=verdict(comparison),
        limits=list(LIMITS),
        seed=int(comparison.seed),
    )


__all__ = [
    "build_report",
    "comparison_roc_figure",
    "comparison_table",
    "privacy_utility_figure",
    "verdict",
]

