"""Figures, verdict and report of the synthetic-table audit (METHODS.md §1).

Used by both the dashboard page (pages/synthetic_risk.py) and the command line
(``python -m audit_core tabular --html``), so both show the same thing.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from audit_core.plots.common import (
    ATTACK_COLORS,
    MEMBER,
    NON_MEMBER,
    apply_layout,
    group_histogram,
    log_roc_figure,
)
from audit_core.report import InputSummary, Report
from audit_core.roc import INTERVAL_LIMIT
from audit_core.synthetic import ATTACK_LABELS, SyntheticAudit, exposed_records

__all__ = [
    "VERDICT_ATTACKS",
    "build_report",
    "distance_figure",
    "overlaps_table",
    "p_member_figure",
    "risk_level",
    "roc_figure",
    "strongest_attack",
    "verdict",
]

_KDE_ATTACKS = ("true_distribution", "realistic")
_P_COLUMN = {"true_distribution": "p_member_true", "realistic": "p_member_realistic"}
_LOW_FPR = "0.01"


def distance_figure(audit: SyntheticAudit, *, attack: str = "true_distribution") -> go.Figure:
    """Histograms of members' and non-members' distances with the fitted KDE curves.

    The bars are densities (area 1 per group, exact copies excluded); the lines
    are the continuous parts of ``KDE_m`` and ``KDE_n`` (METHODS.md §1.2), scaled
    by the share of records that are not exact copies. Exact copies (d = 0) are
    a point mass, shown as a count in the legend rather than as a spike.
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
    for name, mask, dens, color in groups:
        values = d[mask & pos]
        copies = int((mask & ~pos).sum())
        counts, _ = np.histogram(values, bins=edges)
        width = np.diff(edges)
        y = counts / max(values.size, 1) / width
        fig.add_trace(
            go.Bar(
                x=(edges[:-1] + edges[1:]) / 2,
                y=y,
                width=width,
                name=f"{name}: histogram (n={values.size}, {copies} exact copies)",
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
    names = [k for k in (*_KDE_ATTACKS, "domias") if k in audit.attacks]
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


def _pct(x: float) -> str:
    return f"{100 * x:.1f} %"


RISK_HEADLINES = {
    "high": "UNSAFE to release as it is.",
    "elevated": "Elevated risk: review before release.",
    "low": "No measurable membership risk at this sample size.",
}

#: Attacks whose TPR at 1 % FPR feeds the verdict (every scored attack the page shows).
VERDICT_ATTACKS = ("true_distribution", "realistic", "domias")


def _verdict_attacks(audit: SyntheticAudit) -> list[str]:
    return [k for k in VERDICT_ATTACKS if k in audit.attacks]


def strongest_attack(audit: SyntheticAudit) -> str:
    """The attack with the highest lower confidence bound of its TPR at 1 % FPR (ties: the higher TPR)."""
    return max(
        _verdict_attacks(audit),
        key=lambda k: (audit.attacks[k].tpr_at_fpr[_LOW_FPR].ci_low, audit.attacks[k].tpr_at_fpr[_LOW_FPR].tpr),
    )


def risk_level(audit: SyntheticAudit) -> str:
    """``"high"``, ``"elevated"`` or ``"low"``: the rule behind :func:`verdict`.

    High when the exact-copy test finds more training rows copied verbatim than
    chance explains (:class:`~audit_core.synthetic.CopyTest`, one-sided Fisher
    exact test at 5 %), when the near-copy test finds more members than
    non-members within a small distance of a synthetic record
    (:class:`~audit_core.synthetic.NearCopyTest`, at 1 %), or when the lower end of the 95 % interval of any
    attack's TPR at 1 % FPR exceeds three times the FPR; elevated when it
    exceeds twice the FPR or any attack's AUC exceeds 0.6. Every attack the
    page shows counts: the true-distribution, realistic and density-ratio
    scores, and the two Method 1 points, whose AUC as a one-point ROC is
    ``(1 + TPR - FPR) / 2``.
    """
    fpr = float(_LOW_FPR)
    low = audit.attacks[strongest_attack(audit)].tpr_at_fpr[_LOW_FPR]
    tests = (audit.copy_test, audit.near_copies)
    if any(t is not None and t.excess for t in tests) or low.ci_low > 3 * fpr:
        return "high"
    aucs = [audit.attacks[k].auc for k in _verdict_attacks(audit)]
    aucs += [(1 + t.metrics.tpr - t.metrics.fpr) / 2 for t in (audit.distance_threshold, audit.distance_threshold_realistic)]
    if low.ci_low > 2 * fpr or max(aucs) > 0.6:
        return "elevated"
    return "low"


def _p(p: float) -> str:
    return f"{p:.2g}" if p >= 1e-4 else "< 0.0001"


def _copies_sentences(audit: SyntheticAudit, level: str) -> tuple[str, str]:
    """The headline (with the count when copies drive it) and the sentence on exact copies."""
    test = audit.copy_test
    headline = RISK_HEADLINES[level]
    near = audit.near_copies
    if near is not None and near.excess and not (test is not None and test.excess):
        return (
            f"{headline[:-1]}: {near.train_copies:,} of the {near.n_train:,} audited training records have a synthetic "
            f"record within Gower distance {near.tolerance:.2g} (near-copies), against {near.holdout_copies:,} of the "
            f"{near.n_holdout:,} holdout records.",
            f"More than chance explains (one-sided Fisher exact test, p = {_p(near.p_value)}; the tolerance is the "
            "distance only 1 % of the auxiliary records come that close): a near-copy discloses a training record "
            "with one value changed.",
        )
    if test is None or not test.train_copies:
        return headline, ""
    counts = (
        f"{test.train_copies:,} of the {test.n_train:,} training rows appear verbatim in the synthetic table, "
        f"against {test.holdout_copies:,} of the {test.n_holdout:,} holdout rows"
    )
    if test.excess:
        return (
            f"{headline[:-1]}: {counts}.",
            f"More copies than chance explains (one-sided Fisher exact test, p = {_p(test.p_value)}): "
            "each copied row discloses a training record outright.",
        )
    chance = f"no more than chance (one-sided Fisher exact test, p = {_p(test.p_value)})."
    return headline, f"{counts[0].upper()}{counts[1:]}: {chance}"


def verdict(audit: SyntheticAudit) -> str:
    """A plain-language verdict a data steward can read aloud.

    Driven by :func:`risk_level`: verbatim training copies beyond chance (the
    count is in the first sentence), and every attack's TPR at 1 % FPR (the
    strongest is quoted; the realistic attacker's too). The margin of two
    (elevated) and three (high) times the FPR allows for the threshold being
    read off the same non-members whose FPR it sets. Exact copies are always
    named, and a holdout that repeats training rows is flagged.
    """
    level = risk_level(audit)
    fpr = float(_LOW_FPR)
    name = strongest_attack(audit)
    att = audit.attacks[name]
    low = att.tpr_at_fpr[_LOW_FPR]
    true = audit.attacks["true_distribution"]
    real = audit.attacks["realistic"]
    headline, copies = _copies_sentences(audit, level)
    parts: list[str] = [headline]
    if copies:
        parts.append(copies)
    if audit.holdout_flag:
        parts.append(audit.holdout_flag)
    parts.append(
        f"The strongest attack at low FPR, {ATTACK_LABELS[name]}, flags {_pct(low.tpr)} of the training records "
        f"(95 % interval {_pct(low.ci_low)} to {_pct(low.ci_high)}) while wrongly flagging {_pct(low.achieved_fpr)} "
        f"of the non-members; chance would flag {_pct(fpr)}."
    )
    if name != "realistic":
        parts.append(f"A realistic attacker with only auxiliary data flags {_pct(real.tpr_at_fpr[_LOW_FPR].tpr)}.")
    parts.append(
        f"Averages say little here: accuracy at P >= 0.5 is {_pct(true.accuracy)} and AUC {true.auc:.3f}, "
        "yet the log-ROC and the table of most exposed records show whether a few individuals stand out."
    )
    if not low.supported:
        parts.append(
            f"With {low.n_neg} non-members the 1 % FPR is not measurable (needs at least {int(10 / fpr)}); "
            "audit with a larger holdout table."
        )
    return " ".join(parts)


LIMITS = [
    "The true-distribution attack fits its densities on the real membership labels (cross-fitted): it is an upper "
    "bound on what an attacker can do with distances alone, not a realistic attacker.",
    "Only the distance to the nearest synthetic record is used; attacks that model the full joint distribution "
    "(e.g. DOMIAS-style density ratios in feature space) may find more.",
    "A result of 'no measurable risk' is evidence at this sample size, not proof: TPR at FPR alpha needs at least "
    "10/alpha non-members to be measured at all.",
    INTERVAL_LIMIT,
    "Gower distance weights every compared column equally unless weights are given; identifier-like columns should be left out.",
    "The realistic attack's P(member | d) ranks records but is not calibrated: its labels are pseudo-labels, so a record "
    "closer than the cut gets a P near 1 whether or not it was a member.",
    "Exact copies are counted over the whole training and holdout tables (every compared column equal, missing equal to "
    "missing); the one-sided Fisher exact test assumes the split into training and holdout was random.",
]


def overlaps_table(audit: SyntheticAudit) -> pd.DataFrame:
    """The overlaps between the tables, for display: one row per pair, with counts and shares."""
    names = {"train": "training", "holdout": "holdout", "auxiliary": "auxiliary", "synthetic": "synthetic"}
    rows = []
    for key, o in audit.overlaps.items():
        what = "duplicated within the training table" if key == "train_in_train" else f"also in the {names[o.other]} table"
        rows.append({"rows of": names[o.table], "that are": what, "rows": o.rows, "of": o.of, "share": round(o.share, 4)})
    return pd.DataFrame(rows, columns=["rows of", "that are", "rows", "of", "share"])


def build_report(
    audit: SyntheticAudit,
    *,
    inputs: Sequence[InputSummary] = (),
    top_k: int = 20,
    title: str = "Membership risk of a synthetic table",
) -> Report:
    """The audit's deliverable: figures, metrics, verdict, most exposed records.

    Parameters
    ----------
    audit : SyntheticAudit
        The result to report.
    inputs : sequence of InputSummary
        Descriptions of the input tables (``audit_core.report.describe_input``).
    top_k : int
        Rows in the most-exposed-records table.
    title : str
        Report title.
    """
    figures = [
        ("Log-log ROC of all attacks", roc_figure(audit)),
        ("Distances with their KDE curves", distance_figure(audit)),
        ("P(member | d), true-distribution attack", p_member_figure(audit, attack="true_distribution")),
        ("P(member | d), realistic attack", p_member_figure(audit, attack="realistic")),
    ]
    tables = [(f"The {top_k} most exposed training records", exposed_records(audit, k=top_k, members_only=True))]
    if audit.overlaps:
        tables.append(("Rows repeated verbatim between the tables", overlaps_table(audit)))
    settings = dict(audit.settings)
    settings["auxiliary_source"] = audit.auxiliary_source
    settings["numeric columns"] = ", ".join(audit.types.numeric)
    settings["categorical columns"] = ", ".join(audit.types.categorical)
    settings["ignored columns"] = ", ".join(audit.types.ignored) or "none"
    return Report(
        title=title,
        question=(
            "Can an attacker who sees the synthetic table tell which individuals were in the generator's training "
            "data, from how close each record is to its nearest synthetic record? (METHODS.md §1)"
        ),
        inputs=list(inputs),
        settings=settings,
        metrics=audit.to_json(),
        figures=figures,
        tables=tables,
        verdict=verdict(audit),
        limits=[*LIMITS, *audit.warnings],
        seed=int(audit.settings["seed"]),
    )


def exposed_table_for_display(table: pd.DataFrame) -> pd.DataFrame:
    """Round the probability and distance columns of an exposed-records table for display."""
    out = table.copy()
    for col in out.columns:
        if col.startswith("p_member") or col == "distance":
            out[col] = out[col].round(4)
    return out
