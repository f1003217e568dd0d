"""Figures and display tables of the score check (:mod:`audit_core.scores.audit`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from audit_core.common.decision import times_chance
from audit_core.common.display import readable
from audit_core.common.figures import NEUTRAL, log_roc_figure
from audit_core.common.privacy_bound import epsilon_scale
from audit_core.scores.audit import AttackCheck

__all__ = ["epsilon_table", "records_table", "roc_figure", "tpr_table"]


class _Attacks(Protocol):
    """Anything with evaluated attacks by name: the score check, the model audit."""

    @property
    def attacks(self) -> Mapping[str, AttackCheck]: ...

    @property
    def delta(self) -> float: ...


def roc_figure(check: _Attacks) -> go.Figure:
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


def tpr_table(check: _Attacks) -> pd.DataFrame:
    """One row per (attack, target FPR), for readers: TPR, its interval, its magnitude, FPR reached, measurable."""
    rows = []
    for name, a in check.attacks.items():
        for t in a.tpr_at_fpr.values():
            rows.append({"attack": name, "target_fpr": t.target_fpr, "tpr": t.tpr, "ci_low": t.ci_low, "ci_high": t.ci_high,
                         "times chance": times_chance(t.tpr, t.target_fpr) if t.supported else "not measurable",
                         "achieved_fpr": t.achieved_fpr, "threshold": t.threshold, "n_non_members": t.n_neg,
                         "supported": t.supported})  # fmt: skip
    return readable(pd.DataFrame(rows), intervals={"95 % interval": ("ci_low", "ci_high")})


def epsilon_table(check: _Attacks) -> pd.DataFrame:
    """One row per attack, for readers: AUC and the epsilon lower bound with its evidence and its scale."""
    rows = []
    for name, a in check.attacks.items():
        e = a.epsilon
        rows.append(
            {
                "attack": name,
                "auc": a.auc,
                "epsilon_lower_bound": e.epsilon,
                "ceiling": e.ceiling,
                "delta": e.delta,
                "confidence": e.confidence,
                "inequality": "TPR <= e^eps FPR + delta" if e.direction == "tpr_fpr" else "TNR <= e^eps FNR + delta",
                "rate_low": e.rate_low,
                "rate_high": e.rate_high,
                "threshold": e.threshold,
                "members_evaluated": e.n_pos,
                "non_members_evaluated": e.n_neg,
                "for scale": epsilon_scale(e.epsilon),
            }
        )
    return readable(pd.DataFrame(rows), labels={"ceiling": "most these records could show"}, percent=("confidence",))


def records_table(check: _Attacks, *, rows: int = 1000) -> pd.DataFrame:
    """The per-record table for readers (its first ``rows``): the CSV download keeps the keys."""
    frame = check.records.head(rows)  # type: ignore[attr-defined]
    labels = {c: f"flagged at {100 * float(c.removeprefix('flagged_at_')):g} % FPR" for c in frame.columns
              if str(c).startswith("flagged_at_")}  # fmt: skip
    return readable(frame, labels=labels | {"record_id": "record id", "is_member": "member"})
