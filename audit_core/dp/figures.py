"""Figures and display tables of the DP claim check, trained here (:mod:`audit_core.dp.audit`) or uploaded
(:mod:`audit_core.dp.uploaded`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from audit_core.common.figures import MEMBER, NEUTRAL, NON_MEMBER, apply_layout, group_histogram

__all__ = [
    "NOT_A_PROOF",
    "epsilon_figure",
    "guesses_table",
    "score_figure",
    "summary_table",
    "uploaded_epsilon_figure",
    "uploaded_guesses_table",
    "uploaded_score_figure",
]

if TYPE_CHECKING:  # annotations only: the uploaded-model mode never imports torch
    from audit_core.dp.audit import DpAuditResult
    from audit_core.dp.onerun import OneRunBound
    from audit_core.dp.uploaded import UploadedDpResult

_SCORE_AXIS = "log(p_y / (1 - p_y)) of the canary's label"
_UPLOADED_SCORE_AXIS = _SCORE_AXIS


def _claim_figure(bars: list[tuple[str, float, str]], *, epsilon: float, delta: float) -> go.Figure:
    fig = go.Figure(go.Bar(x=[b[0] for b in bars], y=[b[1] for b in bars], marker_color=[b[2] for b in bars],
                           text=[f"{b[1]:.2f}" for b in bars], textposition="outside"))  # fmt: skip
    fig.add_hline(y=epsilon, line_dash="dot", line_color=NEUTRAL)
    fig.update_yaxes(title="epsilon", rangemode="tozero")
    return apply_layout(fig, title=f"Claimed epsilon vs what one run proves (delta {delta:g}, 95 %)", height=400)

NOT_A_PROOF = "A bound below the claim does not prove the claim: a stronger attack or more canaries might disprove it."


def epsilon_figure(result: DpAuditResult) -> go.Figure:
    """The claim, the accountant's epsilon, both audited bounds and the ceiling, on one axis."""
    return _claim_figure([
        ("claimed", result.epsilon, NEUTRAL),
        ("accountant", result.accountant_epsilon, NEUTRAL),
        ("audited (DP-SGD)", result.dp.bound.epsilon, MEMBER if result.disproved else NON_MEMBER),
        ("audited (no DP)", result.non_dp.bound.epsilon, MEMBER),
        (f"ceiling (m = {result.canaries.m:,})", result.ceiling, NEUTRAL),
    ], epsilon=result.epsilon, delta=result.delta)  # fmt: skip


def uploaded_epsilon_figure(result: UploadedDpResult) -> go.Figure:
    """The claim, the bound the uploaded model's canaries prove and the ceiling, on one axis."""
    return _claim_figure([
        ("claimed", result.epsilon, NEUTRAL),
        ("audited (uploaded model)", result.bound.epsilon, MEMBER if result.disproved else NON_MEMBER),
        (f"ceiling (m = {result.canaries.m:,})", result.ceiling, NEUTRAL),
    ], epsilon=result.epsilon, delta=result.delta)  # fmt: skip


def _score_histogram(scores: np.ndarray, included: np.ndarray, *, label: str, x_title: str) -> go.Figure:
    """Included canaries as members, left-out ones as non-members: the dashboard's member colours."""
    return group_histogram({"members": scores[included], "non-members": scores[~included]},
                           title=f"Canary scores, {label} (members: trained on)", x_title=x_title)  # fmt: skip


def score_figure(result: DpAuditResult, *, which: str = "dp") -> go.Figure:
    """Canary scores of one model, included vs left out (the one-run audit guesses from these)."""
    audit = result.dp if which == "dp" else result.non_dp
    return _score_histogram(audit.scores, result.canaries.included, label="DP-SGD" if which == "dp" else "no DP",
                            x_title=_SCORE_AXIS)  # fmt: skip


def uploaded_score_figure(result: UploadedDpResult) -> go.Figure:
    """Canary scores of the uploaded model, included vs left out."""
    return _score_histogram(result.scores, result.canaries.included, label="uploaded model", x_title=_UPLOADED_SCORE_AXIS)


def _guess_rows(name: str, bound: OneRunBound) -> list[dict[str, object]]:
    return [{"model": name, "guesses r": r, "correct v": v, "share correct": v / r, "epsilon >=": e} for r, v, e in bound.grid]


def guesses_table(result: DpAuditResult) -> pd.DataFrame:
    """Every number of guesses r tried, for both models: correct guesses and the bound at the corrected level."""
    return pd.DataFrame([row for name, audit in (("DP-SGD", result.dp), ("no DP", result.non_dp))
                         for row in _guess_rows(name, audit.bound)])  # fmt: skip


def uploaded_guesses_table(result: UploadedDpResult) -> pd.DataFrame:
    """Every number of guesses r tried on the uploaded model's canaries."""
    return pd.DataFrame(_guess_rows("uploaded model", result.bound))


def summary_table(result: DpAuditResult) -> pd.DataFrame:
    """The headline numbers of both models, as text ("-" where a model has no such number: no claim without DP)."""
    rows = []
    for name, audit, claimed, accountant in (("DP-SGD", result.dp, f"{result.epsilon:g}", f"{result.accountant_epsilon:.2f}"),
                                             ("no DP", result.non_dp, "-", "-")):  # fmt: skip
        rows.append({"model": name, "epsilon claimed": claimed, "accountant epsilon": accountant,
                     "epsilon >= (audited)": f"{audit.bound.epsilon:.2f}", "train accuracy": f"{audit.train_accuracy:.3f}",
                     "test accuracy": f"{audit.test_accuracy:.3f}"})  # fmt: skip
    return pd.DataFrame(rows)
