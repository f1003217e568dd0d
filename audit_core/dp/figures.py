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
    from audit_core.dp.bounds import AuditedBounds
    from audit_core.dp.uploaded import UploadedDpResult

_SCORE_AXIS = "log(p_y / (1 - p_y)) of the canary's label"
_UPLOADED_SCORE_AXIS = _SCORE_AXIS


_STEINKE = "#9aa5b1"
"""Steinke et al.'s bound, shown beside the reported one (never used for the decision when it is not the reported)."""


def _claim_figure(bars: list[tuple[str, float, str, float | None]], *, epsilon: float, delta: float,
                  reported: str, ceiling: tuple[int, float, float]) -> go.Figure:  # fmt: skip
    """One bar per entry (the reported value) and, where given, Steinke et al.'s bound beside it in grey.

    The ceiling (m, reported method's, Steinke's) is written in the title, not drawn: a bar of 9.5 would flatten
    the bounds the figure is about.
    """
    fig = go.Figure(go.Bar(name=reported, x=[b[0] for b in bars], y=[b[1] for b in bars],
                           marker_color=[b[2] for b in bars], text=[f"{b[1]:.2f}" for b in bars],
                           textposition="outside", showlegend=False))  # fmt: skip
    side = [(b[0], b[3]) for b in bars if b[3] is not None]
    if side and reported != "Steinke et al.":
        fig.add_trace(go.Bar(name="Steinke et al. (shown, not used)", x=[b[0] for b in side], y=[b[1] for b in side],
                             marker_color=_STEINKE, text=[f"Steinke {b[1]:.2f}" for b in side], textposition="outside",
                             showlegend=False))  # fmt: skip
    fig.add_hline(y=epsilon, line_dash="dot", line_color=NEUTRAL, annotation_text=f"claim {epsilon:g}",
                  annotation_position="top right")  # fmt: skip
    fig.update_yaxes(title="epsilon", rangemode="tozero")
    fig.update_layout(barmode="group")
    m, top, steinke = ceiling
    title = (f"Claimed epsilon vs what one run proves (delta {delta:g}, 95 %; reported: {reported}"
             + ("" if reported == "Steinke et al." else ", grey: Steinke et al.") + ")"
             + f"<br><sup>ceiling with m = {m:,} canaries (every guess right): {top:.2f}"
             + ("" if reported == "Steinke et al." else f"; Steinke et al.'s {steinke:.2f}") + "</sup>")  # fmt: skip
    fig = apply_layout(fig, title=title, height=440)
    fig.update_layout(margin={"t": 90})  # the title's second line (the ceiling)
    return fig


NOT_A_PROOF = "A bound below the claim does not prove the claim: a stronger attack or more canaries might disprove it."


def epsilon_figure(result: DpAuditResult) -> go.Figure:
    """The claim, the accountant's epsilon, the audited bounds (black-box, no DP, white-box) and the ceiling."""
    def bar(name: str, b: AuditedBounds, colour: str) -> tuple[str, float, str, float | None]:
        return (name, b.epsilon, colour, b.steinke.epsilon)

    bars = [("claimed", result.epsilon, NEUTRAL, None), ("accountant", result.accountant_epsilon, NEUTRAL, None),
            bar("DP-SGD (black-box)", result.dp.bound, MEMBER if result.disproved else NON_MEMBER),
            bar("same model, no DP", result.non_dp.bound, MEMBER)]  # fmt: skip
    if result.white_box is not None:
        bars.append(bar("DP-SGD (white-box)", result.white_box.bound, MEMBER if result.white_box_disproved else NON_MEMBER))
    b = result.dp.bound
    return _claim_figure(bars, epsilon=result.epsilon, delta=result.delta, reported=b.method,
                         ceiling=(b.m, b.ceiling, b.steinke_ceiling))  # fmt: skip


def uploaded_epsilon_figure(result: UploadedDpResult) -> go.Figure:
    """The claim, the bound the uploaded model's canaries prove and the ceiling, on one axis."""
    b = result.bound
    return _claim_figure([
        ("claimed", result.epsilon, NEUTRAL, None),
        ("audited (uploaded model)", b.epsilon, MEMBER if result.disproved else NON_MEMBER, b.steinke.epsilon),
    ], epsilon=result.epsilon, delta=result.delta, reported=b.method, ceiling=(b.m, b.ceiling, b.steinke_ceiling))  # fmt: skip


def _score_histogram(scores: np.ndarray, included: np.ndarray, *, label: str, x_title: str) -> go.Figure:
    """Included canaries as members, left-out ones as non-members: the dashboard's member colours."""
    return group_histogram({"members": scores[included], "non-members": scores[~included]},
                           title=f"{label}: canary scores (members: in)", x_title=x_title)  # fmt: skip


def score_figure(result: DpAuditResult, *, which: str = "dp") -> go.Figure:
    """Canary scores of one model, included vs left out (the one-run audit guesses from these).

    ``which``: ``"dp"``, ``"non_dp"`` or ``"white_box"`` (the gradient canaries' scores).
    """
    if which == "white_box" and result.white_box is not None:
        wb = result.white_box
        axis = "sum over steps of <canary, update> / C" if wb.statistic == "sum" else "log-likelihood ratio over steps"
        return _score_histogram(wb.scores, wb.canaries.included, label="White-box", x_title=axis)
    audit = result.dp if which == "dp" else result.non_dp
    return _score_histogram(audit.scores, result.canaries.included, label="DP-SGD" if which == "dp" else "no DP",
                            x_title=_SCORE_AXIS)  # fmt: skip


def uploaded_score_figure(result: UploadedDpResult) -> go.Figure:
    """Canary scores of the uploaded model, included vs left out."""
    return _score_histogram(result.scores, result.canaries.included, label="uploaded model", x_title=_UPLOADED_SCORE_AXIS)


def _guess_rows(name: str, bound: AuditedBounds) -> list[dict[str, object]]:
    return [{"model": name, "guesses r": r, "correct v": v, "share correct": v / r, "epsilon >= (Steinke)": e,
             "epsilon >= (f-DP)": f} for r, v, e, f in bound.grid]  # fmt: skip


def guesses_table(result: DpAuditResult) -> pd.DataFrame:
    """Every number of guesses r tried, for every audited model: correct guesses and both bounds at the corrected level."""
    audits = [("DP-SGD", result.dp.bound), ("no DP", result.non_dp.bound)]
    if result.white_box is not None:
        audits.append(("DP-SGD white-box", result.white_box.bound))
    return pd.DataFrame([row for name, bound in audits for row in _guess_rows(name, bound)])


def uploaded_guesses_table(result: UploadedDpResult) -> pd.DataFrame:
    """Every number of guesses r tried on the uploaded model's canaries."""
    return pd.DataFrame(_guess_rows("uploaded model", result.bound))


def summary_table(result: DpAuditResult) -> pd.DataFrame:
    """The headline numbers of both models, as text ("-" where a model has no such number: no claim without DP)."""
    rows = []
    claim, accountant = f"{result.epsilon:g}", f"{result.accountant_epsilon:.2f}"
    audits = [("DP-SGD (black-box)", result.dp.bound, claim, accountant, result.dp),
              ("no DP", result.non_dp.bound, "-", "-", result.non_dp)]  # fmt: skip
    if result.white_box is not None:
        audits.append(("DP-SGD (white-box, same run)", result.white_box.bound, claim, accountant, result.dp))
    for name, b, claimed, acc, model in audits:
        rows.append({"model": name, "epsilon claimed": claimed, "accountant epsilon": acc,
                     "epsilon >= (reported)": f"{b.epsilon:.2f}", "Steinke": f"{b.steinke.epsilon:.2f}",
                     "f-DP": f"{b.fdp.epsilon:.2f}", "train accuracy": f"{model.train_accuracy:.3f}",
                     "test accuracy": f"{model.test_accuracy:.3f}"})  # fmt: skip
    return pd.DataFrame(rows)
