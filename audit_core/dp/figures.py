"""Figures and display tables of the DP claim check (:mod:`audit_core.dp.audit`)."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from audit_core.common.figures import MEMBER, NEUTRAL, NON_MEMBER, apply_layout, group_histogram
from audit_core.dp.audit import DpAuditResult

NOT_A_PROOF = "A bound below the claim does not prove the claim: a stronger attack or more canaries might disprove it."


def epsilon_figure(result: DpAuditResult) -> go.Figure:
    """The claim, the accountant's epsilon, both audited bounds and the ceiling, on one axis."""
    bars = [
        ("claimed", result.epsilon, NEUTRAL),
        ("accountant", result.accountant_epsilon, NEUTRAL),
        ("audited (DP-SGD)", result.dp.bound.epsilon, MEMBER if result.disproved else NON_MEMBER),
        ("audited (no DP)", result.non_dp.bound.epsilon, MEMBER),
        (f"ceiling (m = {result.canaries.m:,})", result.ceiling, NEUTRAL),
    ]
    fig = go.Figure(go.Bar(x=[b[0] for b in bars], y=[b[1] for b in bars], marker_color=[b[2] for b in bars],
                           text=[f"{b[1]:.2f}" for b in bars], textposition="outside"))  # fmt: skip
    fig.add_hline(y=result.epsilon, line_dash="dot", line_color=NEUTRAL)
    fig.update_yaxes(title="epsilon", rangemode="tozero")
    return apply_layout(fig, title=f"Claimed epsilon vs what one run proves (delta {result.delta:g}, 95 %)", height=400)


def score_figure(result: DpAuditResult, *, which: str = "dp") -> go.Figure:
    """Canary scores of one model, included vs left out (the one-run audit guesses from these)."""
    audit = result.dp if which == "dp" else result.non_dp
    inc = result.canaries.included
    label = "DP-SGD" if which == "dp" else "no DP"
    return group_histogram({"included (member)": audit.scores[inc], "left out (non-member)": audit.scores[~inc]},
                           title=f"Canary scores, {label}", x_title="log(p_y / (1 - p_y)) of the canary's label")  # fmt: skip


def guesses_table(result: DpAuditResult) -> pd.DataFrame:
    """Every number of guesses r tried, for both models: correct guesses and the bound at the corrected level."""
    rows = []
    for name, audit in (("DP-SGD", result.dp), ("no DP", result.non_dp)):
        for r, v, e in audit.bound.grid:
            rows.append({"model": name, "guesses r": r, "correct v": v, "share correct": v / r, "epsilon >=": e})
    return pd.DataFrame(rows)


def summary_table(result: DpAuditResult) -> pd.DataFrame:
    """The headline numbers of both models."""
    return pd.DataFrame([
        {"model": "DP-SGD", "epsilon claimed": result.epsilon, "accountant epsilon": result.accountant_epsilon,
         "epsilon >= (audited)": result.dp.bound.epsilon, "train accuracy": result.dp.train_accuracy,
         "test accuracy": result.dp.test_accuracy},
        {"model": "no DP", "epsilon claimed": None, "accountant epsilon": None,
         "epsilon >= (audited)": result.non_dp.bound.epsilon, "train accuracy": result.non_dp.train_accuracy,
         "test accuracy": result.non_dp.test_accuracy},
    ])  # fmt: skip
