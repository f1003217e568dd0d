"""Figures and display tables of the synthetic-table audit (docs/methods.md §1).

One table's membership risk (distances, P(member | d), log-ROC, overlaps, most exposed
records), the generator comparison (side-by-side table, overlaid log-ROC, privacy against
utility, the shadow attack per generator, its figures from :mod:`audit_core.synthetic.shadow.figures`) and the
disclosure attacks (singling out, linkability, inference). Used by the
dashboard pages and, through :mod:`audit_core.synthetic.verdict`, by the command line's
reports, so both show the same thing.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from audit_core.common.decision import times_chance
from audit_core.common.display import readable
from audit_core.common.figures import (
    ATTACK_COLORS,
    MEMBER,
    NEUTRAL,
    NON_MEMBER,
    apply_layout,
    color_for,
    group_histogram,
    log_roc_figure,
)
from audit_core.synthetic.comparison import GeneratorComparison
from audit_core.synthetic.disclosure.audit import DisclosureAudit
from audit_core.synthetic.explanations import exposed_records, record_comparison
from audit_core.synthetic.result import SyntheticAudit
from audit_core.synthetic.shadow.figures import isolation_figure, shadow_roc_figure
from audit_core.synthetic.shadow.figures import target_table as shadow_target_table

__all__ = [
    "ATTACK_LABELS",
    "REALISTIC_NOT_CALIBRATED",
    "comparison_roc_figure",
    "comparison_table",
    "disclosure_label",
    "distance_figure",
    "exposed_display",
    "exposed_table",
    "isolation_figure",
    "overlaps_table",
    "p_member_figure",
    "privacy_utility_figure",
    "record_table",
    "results_table",
    "risk_figure",
    "roc_figure",
    "shadow_roc_figure",
    "shadow_table",
    "shadow_target_table",
]

ATTACK_LABELS: dict[str, str] = {
    "true_distribution": "True-distribution KDE (upper bound)",
    "realistic": "Realistic KDE (auxiliary data)",
    "distance_threshold": "Method 1: distance < median",
    "domias": "DOMIAS-style density ratio (1-NN)",
    "learned": "Learned attacker (gradient boosting, cross-fitted)",
}
"""Plain names of the attacks, for figures, tables and the verdict."""


_KDE_ATTACKS = ("true_distribution", "realistic")


_P_COLUMN = {"true_distribution": "p_member_true", "realistic": "p_member_realistic"}


def distance_figure(audit: SyntheticAudit, *, attack: str = "true_distribution") -> go.Figure:
    """Histograms of members' and non-members' distances with the fitted KDE curves.

    The bars are densities (area 1 per group, exact copies excluded); the lines
    are the continuous parts of ``KDE_m`` and ``KDE_n`` (docs/methods.md §1.2), scaled
    by the share of records that are not exact copies. Records at distance 0 (equal on
    every column both records fill in; a verbatim copy, or a synthetic row with missing
    values where the record has some) are a point mass, shown as a count in the legend
    rather than as a spike. The verbatim-copy counts (all columns equal, missing equal to
    missing) are those of :mod:`audit_core.synthetic.copies`.
    """
    post = audit.posterior_true if attack == "true_distribution" else audit.posterior_realistic
    d = audit.records["distance"].to_numpy()
    member = audit.records["is_member"].to_numpy(dtype=bool)
    pos = d > 0
    upper = float(np.quantile(d, 0.995)) if d.size else 1.0
    upper = min(1.0, max(upper * 1.1, 1e-3))
    edges = np.linspace(0.0, upper, 61)
    fig = go.Figure()
    groups = (("members", member, post.members, MEMBER), ("non-members", ~member, post.non_members, NON_MEMBER))
    verbatim = audit.verbatim_copies
    for name, mask, dens, color in groups:
        values = d[mask & pos]
        copies = int((mask & ~pos).sum())
        copied = verbatim["members" if name == "members" else "non_members"]
        zero = f"{copied:,} copied verbatim" + (f" + {copies - copied:,} equal where both rows have a value"
                                                if copies > copied else "")  # fmt: skip
        counts, _ = np.histogram(values, bins=edges)
        width = np.diff(edges)
        y = counts / max(values.size, 1) / width
        fig.add_trace(
            go.Bar(
                x=(edges[:-1] + edges[1:]) / 2,
                y=y,
                width=width,
                name=f"{name}: histogram of {values.size:,}; at distance 0: {zero}",
                marker_color=color,
                opacity=0.35,
            )
        )
        grid, curve = dens.curve(np.linspace(0.0, upper, 400))
        fig.add_trace(
            go.Scatter(
                x=grid,
                y=curve,
                mode="lines",
                name=f"{name}: KDE (h={dens.bandwidth:.3g} on the log-distance axis)",
                line={"color": color, "width": 2.5},
            )
        )
    fig.update_layout(barmode="overlay", bargap=0)
    fig.update_xaxes(title="Gower distance to the nearest synthetic record", range=[0, upper])
    fig.update_yaxes(title="density")
    title = "Distances to the synthetic table" + (
        "" if attack == "true_distribution" else " (realistic attack: KDEs on pseudo-labels)"
    )
    return apply_layout(fig, title=title)


#: What the realistic attack's probabilities are, in words (issue 9: they look like certainties).
REALISTIC_NOT_CALIBRATED = (
    "These probabilities rank records; they are not calibrated. The realistic attacker's labels are pseudo-labels "
    "(the auxiliary records closest to the synthetic table are called members), so a record below that cut gets a P "
    "near 1 whether or not it was in the training data."
)


def p_member_figure(audit: SyntheticAudit, *, attack: str = "true_distribution") -> go.Figure:
    """Histograms of ``P(member | d)`` for members and non-members under one attack.

    The realistic attack's figure says in words that its probabilities rank
    records and are not calibrated (:data:`REALISTIC_NOT_CALIBRATED`).
    """
    p = audit.records[_P_COLUMN[attack]].to_numpy()
    member = audit.records["is_member"].to_numpy(dtype=bool)
    title = f"P(member | d): {ATTACK_LABELS[attack]}"
    if attack == "realistic":
        title = "P(member | d), realistic KDE: ranks records, not calibrated"  # one line: a subtitle gets clipped
    fig = group_histogram(
        {"members": p[member], "non-members": p[~member]},
        title=title,
        x_title="P(member | distance)" + (" (a rank, not a probability)" if attack == "realistic" else ""),
        nbins=40,
    )
    if attack == "realistic":
        fig.update_layout(margin={"t": 70})
    return fig


def roc_figure(audit: SyntheticAudit) -> go.Figure:
    """One log-log ROC: the KDE attacks (and the density ratio) as curves, Method 1 as points."""
    names = [k for k in (*_KDE_ATTACKS, "domias", "learned") if k in audit.attacks]
    curves = [(ATTACK_LABELS[k], audit.attacks[k].curve) for k in names]
    colors = {ATTACK_LABELS[k]: ATTACK_COLORS[k] for k in names}
    m1 = audit.distance_threshold.metrics
    m1r = audit.distance_threshold_realistic.metrics
    label_true = "Method 1 (tau = non-members' median)"
    label_real = "Method 1 (tau = auxiliary median)"
    colors[label_true] = ATTACK_COLORS["distance_threshold"]
    colors[label_real] = "#7F7F7F"
    points = [(label_true, m1.fpr, m1.tpr), (label_real, m1r.fpr, m1r.tpr)]
    return log_roc_figure(curves, points=points, title="ROC, log-log (low FPR is where individuals are exposed)", colors=colors)


def overlaps_table(audit: SyntheticAudit) -> pd.DataFrame:
    """The overlaps between the tables, for display: one row per pair, with counts and shares."""
    names = {"train": "training", "holdout": "holdout", "auxiliary": "auxiliary", "synthetic": "synthetic"}
    rows = []
    for key, o in audit.overlaps.items():
        what = "duplicated within the training table" if key == "train_in_train" else f"also in the {names[o.other]} table"
        rows.append({"rows of": names[o.table], "that are": what, "rows": o.rows, "of": o.of,
                     "share": f"{100 * o.share:.1f} %"})  # fmt: skip
    return pd.DataFrame(rows, columns=["rows of", "that are", "rows", "of", "share"])


def exposed_table(audit: SyntheticAudit, *, k: int = 20, by: str = "p_member_true") -> pd.DataFrame:
    """The ``k`` most exposed records ranked ``by`` an attack's P(member), rounded for display."""
    out = exposed_records(audit, k=k, by=by).copy()
    for col in out.columns:
        if (col.startswith("p_member") and out[col].dtype.kind == "f") or col == "distance":
            out[col] = out[col].round(4)
    return out


_INTERNAL = ("is_member", "p_member_true_supported", "p_member_realistic_supported")


def exposed_display(table: pd.DataFrame) -> pd.DataFrame:
    """:func:`exposed_table` (or ``explanations.exposed_records``) for readers: the words of the glossary, no flags
    (the note says where a probability does not rest on data)."""
    return readable(table.drop(columns=[c for c in _INTERNAL if c in table.columns]))


_COMPARISON_ATTACK_LABELS = {"true_distribution": "true-distribution KDE", "realistic": "realistic KDE"}


def comparison_table(comparison: GeneratorComparison) -> pd.DataFrame:
    """The paper's table for readers: one row per generator, the privacy half first and the utility beside it.

    Columns: generator, AUC (true / realistic; numbers), TPR at 1 % FPR of the true-distribution
    attack with its 95 % interval as percent (:func:`audit_core.common.roc.tpr_at_fpr`), its magnitude
    ("11 times chance"), TPR at 0.1 % FPR only where some generator's split can measure it, utility,
    F1 of the two KDE attacks and of Method 1, fit time and the generator's error when it failed.
    An FPR the split cannot measure says so with its number of non-members (never "None").
    """
    measurable = {key: any(run.ok and run.audit is not None and run.audit.attacks["true_distribution"].tpr_at_fpr[key].supported
                           for run in comparison.runs) for key in ("0.001", "0.01")}  # fmt: skip
    method1 = comparison.table().set_index("generator")["f1_method1"] if comparison.completed() else None
    rows = []
    for run in comparison.runs:
        row: dict[str, Any] = {"Generator": run.label}
        if not run.ok or run.audit is None:
            row["Error"] = run.error or ""
        else:
            true, real = run.audit.attacks["true_distribution"], run.audit.attacks["realistic"]
            row["AUC (true)"] = round(float(true.auc), 3)
            row["AUC (realistic)"] = round(float(real.auc), 3)
            for key, label in (("0.01", "1 %"), ("0.001", "0.1 %")):
                if key == "0.001" and not measurable[key]:
                    continue
                t = true.tpr_at_fpr[key]
                row[f"TPR at {label} FPR [95 % interval]"] = (
                    f"{100 * t.tpr:.1f} % [{100 * t.ci_low:.1f}–{100 * t.ci_high:.1f} %]" if t.supported
                    else f"not measurable ({t.n_neg:,} non-members; needs {round(10 / t.target_fpr):,})")  # fmt: skip
                if key == "0.01":
                    row["magnitude"] = times_chance(t.tpr, t.target_fpr) if t.supported else "–"
            row["Utility"] = round(float(run.utility.overall), 3) if run.utility is not None else "–"
            row["F1 KDE (true)"] = round(float(true.f1), 3)
            row["F1 KDE (realistic)"] = round(float(real.f1), 3)
            row["F1 Method 1"] = round(float(method1.loc[run.name]), 3) if method1 is not None else "–"
            row["Error"] = ""
        row["Fit (s)"] = round(float(run.fit_seconds), 1)
        rows.append(row)
    columns = ["Generator", "AUC (true)", "AUC (realistic)", "TPR at 1 % FPR [95 % interval]", "magnitude",
               *(["TPR at 0.1 % FPR [95 % interval]"] if measurable["0.001"] else []), "Utility", "F1 KDE (true)",
               "F1 KDE (realistic)", "F1 Method 1", "Fit (s)", "Error"]  # fmt: skip
    frame = pd.DataFrame(rows).reindex(columns=columns)
    if not frame["Error"].astype(bool).any():
        frame = frame.drop(columns=["Error"])
    return frame


def shadow_table(comparison: GeneratorComparison) -> pd.DataFrame:
    """The shadow attack per generator: targets told apart, highest and mean AUC, seconds per fit, or its error."""
    rows: list[dict[str, object]] = []
    for run in comparison.runs:
        a = run.shadow
        if a is None:
            rows.append({"Generator": run.label, "Error": run.shadow_error or run.error or ""})
            continue
        timing = a.to_json()["timing"]
        rows.append({"Generator": run.label, "Told apart": f"{int(a.told_apart.sum())} of {a.n_targets}",
                     "Highest AUC": round(float(a.scores.auc.max()), 3), "Mean AUC": round(float(a.scores.auc.mean()), 3),
                     "Smallest p (Holm)": float(f"{a.adjusted_p.min():.3g}"), "Shadow models": a.n_shadows,
                     "s per fit": round(timing["seconds_per_fit"], 2), "Error": ""})  # fmt: skip
    columns = ["Generator", "Told apart", "Highest AUC", "Mean AUC", "Smallest p (Holm)", "Shadow models", "s per fit",
               "Error"]  # fmt: skip
    return pd.DataFrame(rows).reindex(columns=columns)


def comparison_roc_figure(comparison: GeneratorComparison, *, attack: str = "true_distribution") -> go.Figure:
    """Log-log ROC curves of all generators overlaid, for one attack model (docs/methods.md §1.6)."""
    curves = [(run.label, audit.attacks[attack].curve) for run, audit in comparison.completed()]
    colors = {run.label: color_for(run.name, i) for i, run in enumerate(comparison.runs)}
    title = f"Log-log ROC per generator ({_COMPARISON_ATTACK_LABELS.get(attack, attack)})"
    return log_roc_figure(curves, title=title, colors=colors)


def privacy_utility_figure(comparison: GeneratorComparison, *, attack: str = "true_distribution") -> go.Figure:
    """Scatter of utility (x) against attack AUC (y): lower-right is the better trade-off."""
    fig = go.Figure()
    color = {run.name: color_for(run.name, i) for i, run in enumerate(comparison.runs)}
    for run, audit in comparison.completed():
        if run.utility is None:
            continue
        fig.add_trace(go.Scatter(
            x=[run.utility.overall], y=[audit.attacks[attack].auc], mode="markers", name=run.label,
            marker={"size": 13, "color": color[run.name], "line": {"width": 1, "color": "white"}},
            hovertemplate="utility %{x:.3f}<br>AUC %{y:.3f}<extra>" + run.label + "</extra>",
        ))
    fig.add_hline(y=0.5, line={"dash": "dash", "color": "#7F7F7F"}, annotation_text="chance")
    fig.update_xaxes(title="utility (SDMetrics quality score, higher = more faithful)")
    fig.update_yaxes(title=f"AUC ({_COMPARISON_ATTACK_LABELS.get(attack, attack)}, higher = leakier)")
    return apply_layout(fig, title="Privacy against utility")


_LABELS = {
    "singling_out": "Singling out (multivariate)",
    "singling_out.univariate": "Singling out (univariate)",
    "linkability": "Linkability",
}


def disclosure_label(key: str) -> str:
    """The plain name of a disclosure attack by its JSON key (``linkability``, ``inference.<column>``...)."""
    return _LABELS.get(key, f"Inference of {key.split('.', 1)[1]}" if key.startswith("inference.") else key)


def results_table(disclosure: DisclosureAudit) -> pd.DataFrame:
    """One row per attack: risk, interval, the three success rates, attacks, status and reading."""
    rows = []
    for key, r in disclosure.results():
        rows.append({
            "attack": disclosure_label(key), "key": key, "risk": round(r.risk, 4), "ci_low": round(r.ci_low, 4),
            "ci_high": round(r.ci_high, 4), "attack_rate": round(r.attack_rate, 4),
            "control_rate": round(r.control_rate, 4), "baseline_rate": round(r.baseline_rate, 4),
            "n_attacks": r.n_attacks, "status": r.status, "reading": r.reading,
        })  # fmt: skip
    return pd.DataFrame(rows)


def risk_figure(disclosure: DisclosureAudit) -> go.Figure:
    """Each attack's risk with its 95 % interval, and the success rates behind it."""
    table = results_table(disclosure)
    fig = go.Figure()
    fig.add_trace(go.Scatter(
        x=table["risk"], y=table["attack"], mode="markers", name="risk (95 % interval)",
        marker={"color": MEMBER, "size": 10},
        error_x={"type": "data", "symmetric": False, "array": table["ci_high"] - table["risk"],
                 "arrayminus": table["risk"] - table["ci_low"]},
    ))  # fmt: skip
    for col, name, color, symbol in (
        ("attack_rate", "success on training records", MEMBER, "circle-open"),
        ("control_rate", "success on control records", NON_MEMBER, "diamond-open"),
        ("baseline_rate", "random-guess baseline", NEUTRAL, "x"),
    ):
        fig.add_trace(go.Scatter(x=table[col], y=table["attack"], mode="markers", name=name,
                                 marker={"color": color, "symbol": symbol, "size": 9}, visible="legendonly"))  # fmt: skip
    fig.add_vline(x=0, line={"color": NEUTRAL, "dash": "dot"})
    apply_layout(fig, title="Disclosure risks: excess success on training records over the control", height=360)
    fig.update_xaxes(title="risk = (rate_train - rate_control) / (1 - rate_control)", range=[-0.2, 1.02])
    fig.update_yaxes(autorange="reversed")
    return fig


def record_table(audit: SyntheticAudit, source: str, row: int) -> pd.DataFrame:
    """Record ``row`` of table ``source`` (train or holdout) beside its nearest synthetic record, column by column."""
    recs = audit.records
    position = int(np.flatnonzero((recs["source"] == source).to_numpy() & (recs["row"] == row).to_numpy())[0])
    table = record_comparison(audit, position)
    return table.assign(record=table["record"].astype(str), nearest_synthetic=table["nearest_synthetic"].astype(str))
