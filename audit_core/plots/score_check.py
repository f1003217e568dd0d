"""Figures, tables, verdict and report of the score check (:mod:`audit_core.score_check`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from audit_core.plots.common import NEUTRAL, log_roc_figure
from audit_core.privacy_bound import ASSUMPTION
from audit_core.report import InputSummary, Report
from audit_core.score_check import ScoreCheck


def _pct(x: float) -> str:
    return f"{100 * x:.1f} %"


def roc_figure(check: ScoreCheck) -> go.Figure:
    """Log-ROC of every attack, overlaid, with the (eps, delta)-DP boundary of the largest bound.

    An (eps, delta)-DP mechanism keeps every attack's ROC below ``TPR = e^eps FPR + delta``;
    the dotted curve is that limit at the epsilon lower bound: the data show, with
    95 % confidence, a point above the limit of any smaller epsilon.
    """
    fig = log_roc_figure([(name, a.curve) for name, a in check.attacks.items()], title="Membership scores: log-ROC")
    best = max(check.attacks.values(), key=lambda a: a.epsilon.epsilon)
    eps = best.epsilon.epsilon
    if eps > 0:
        floor = 10 ** fig.layout.xaxis.range[0]
        x = np.logspace(np.log10(floor), 0, 80)
        fig.add_trace(
            go.Scatter(
                x=x,
                y=np.minimum(np.exp(eps) * x + check.delta, 1.0),
                mode="lines",
                name=f"DP limit at eps = {eps:.2f} (lower bound, {best.name})",
                line={"dash": "dot", "color": NEUTRAL, "width": 2},
                hoverinfo="skip",
            )
        )
    return fig


def tpr_table(check: ScoreCheck) -> pd.DataFrame:
    """One row per (attack, target FPR): TPR, its interval, threshold, achieved FPR, support."""
    rows = []
    for name, a in check.attacks.items():
        for key, t in a.tpr_at_fpr.items():
            rows.append(
                {
                    "attack": name,
                    "target_fpr": t.target_fpr,
                    "tpr": t.tpr,
                    "ci_low": t.ci_low,
                    "ci_high": t.ci_high,
                    "threshold": t.threshold,
                    "achieved_fpr": t.achieved_fpr,
                    "n_non_members": t.n_neg,
                    "supported": t.supported,
                    "fpr_key": key,
                }
            )
    return pd.DataFrame(rows)


def epsilon_table(check: ScoreCheck) -> pd.DataFrame:
    """One row per attack: AUC and the epsilon lower bound with its evidence."""
    rows = []
    for name, a in check.attacks.items():
        e = a.epsilon
        rows.append(
            {
                "attack": name,
                "auc": a.auc,
                "epsilon_lower_bound": e.epsilon,
                "delta": e.delta,
                "confidence": e.confidence,
                "threshold": e.threshold,
                "inequality": "TPR <= e^eps FPR + delta" if e.direction == "tpr_fpr" else "TNR <= e^eps FNR + delta",
                "rate_low": e.rate_low,
                "rate_high": e.rate_high,
                "members_evaluated": e.n_pos,
                "non_members_evaluated": e.n_neg,
            }
        )
    return pd.DataFrame(rows)


def verdict(check: ScoreCheck) -> str:
    """Plain-language reading: the strongest attack at the lowest supported FPR, and the epsilon bound."""
    best = max(check.attacks.values(), key=lambda a: (a.epsilon.epsilon, a.auc))
    parts = []
    for a in check.attacks.values():
        supported = [t for t in a.tpr_at_fpr.values() if t.supported]
        if supported:
            t = min(supported, key=lambda t: t.target_fpr)
            parts.append(
                f"Attack '{a.name}' (AUC {a.auc:.3f}) flags {_pct(t.tpr)} of members at FPR {t.target_fpr:g} "
                f"(95 % interval {_pct(t.ci_low)} to {_pct(t.ci_high)})."
            )
        else:
            parts.append(
                f"Attack '{a.name}' (AUC {a.auc:.3f}) has too few non-members ({a.curve.n_neg:,}) for a TPR at the "
                f"chosen FPRs to be measured."
            )
    parts.append((f"Strongest evidence, attack '{best.name}': " if len(check.attacks) > 1 else "") + best.epsilon.sentence())
    return " ".join(parts)


LIMITS = [
    ASSUMPTION,
    "TPR intervals come from audit_core.roc.tpr_at_fpr, the same for every audit in this tool.",
    "The epsilon lower bound picks its threshold on a seeded, stratified half of each attack's records and is "
    "computed on the other half with one-sided Clopper-Pearson bounds (2.5 % each): exact, but it uses half the data; "
    "another seed gives a slightly different bound.",
    "A low bound is no privacy guarantee: it shows what these scores demonstrate, and a stronger attack may "
    "demonstrate more. Only an analysis of the training procedure gives an upper bound.",
    "The scores are taken as given: how they were made (and whether the members were used to tune the attack) "
    "is outside the check.",
]


def build_report(check: ScoreCheck, *, inputs: Sequence[InputSummary] = ()) -> Report:
    """The score check's report, used by the page and by ``python -m audit_core scores --html``."""
    return Report(
        title="Score check",
        question="What do these membership scores show: TPR at low FPR, and the privacy loss they prove?",
        inputs=list(inputs),
        settings={"fpr": list(check.fprs), "delta": check.delta, "seed": check.seed},
        metrics=check.to_json()["attacks"],
        figures=[("Log-ROC of every attack", roc_figure(check))],
        tables=[
            ("Epsilon lower bound per attack", epsilon_table(check)),
            ("TPR at each target FPR", tpr_table(check)),
            ("Most member-like records (top 50 per attack)", check.records.groupby("attack", sort=False).head(50)),
        ],
        verdict=verdict(check),
        limits=LIMITS,
        seed=check.seed,
    )
