"""Colours, layout and the figures all three audits share.

Colours are fixed across the whole dashboard (Okabe-Ito, colour-blind safe):
members are always vermillion, non-members blue, fabricated members purple and
synthetic records green, on every page and in every report.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go

from audit_core.common.roc import RocCurve

__all__ = [
    "ATTACK_COLORS",
    "ATTACK_DASHES",
    "FABRICATED",
    "LOG_AXIS",
    "MEMBER",
    "NEUTRAL",
    "NON_MEMBER",
    "SYNTHETIC",
    "apply_layout",
    "color_for",
    "group_histogram",
    "log_roc_figure",
    "percent_log_ticks",
]

MEMBER = "#D55E00"
NON_MEMBER = "#0072B2"
FABRICATED = "#CC79A7"
SYNTHETIC = "#009E73"
NEUTRAL = "#7F7F7F"

_GROUP_COLORS: dict[str, str] = {
    "members": MEMBER,
    "non-members": NON_MEMBER,
    "fabricated": FABRICATED,
    "synthetic": SYNTHETIC,
}

# Attacks and aggregation rules, each with one colour everywhere.
ATTACK_COLORS: dict[str, str] = {
    "true_distribution": "#000000",
    "realistic": "#56B4E9",
    "distance_threshold": "#000000",
    "domias": "#E69F00",
    "learned": "#CC79A7",
    "naive": "#E69F00",
    "post_processed": "#000000",
    "post_processed_t": "#56B4E9",
    "per_sample_mean": "#009E73",
    "vanilla": "#000000",
    "ar_mia": "#009E73",
    "mfd": "#CC79A7",
}

_PALETTE = ["#000000", "#E69F00", "#56B4E9", "#009E73", "#CC79A7", "#F0E442", "#0072B2", "#D55E00"]
"""Curves without a colour of their own: black, orange and sky blue first, the members' vermillion and the
non-members' blue last."""

ATTACK_DASHES: tuple[str, ...] = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")
"""Line styles of the curves on a log-ROC, in order: colour is never the only thing that tells attacks apart."""


def color_for(name: str, index: int = 0) -> str:
    """Colour of a named group or attack; falls back to the palette by ``index``."""
    key = name.lower()
    return _GROUP_COLORS.get(key) or ATTACK_COLORS.get(key) or _PALETTE[index % len(_PALETTE)]


def apply_layout(fig: go.Figure, *, title: str | None = None, height: int = 460) -> go.Figure:
    """The dashboard's common look: white template, title top-left, legend below the plot."""
    fig.update_layout(
        template="plotly_white",
        height=height,
        margin={"l": 60, "r": 20, "t": 50 if title else 20, "b": 60},
        legend={"orientation": "h", "yanchor": "top", "y": -0.22, "xanchor": "left", "x": 0},
        title={"text": title, "x": 0, "xanchor": "left", "y": 0.98, "yanchor": "top"} if title else None,
    )
    return fig


def log_roc_figure(
    curves: Sequence[tuple[str, RocCurve]],
    *,
    points: Sequence[tuple[str, float, float]] = (),
    title: str = "ROC (log-log)",
    colors: Mapping[str, str] | None = None,
) -> go.Figure:
    """Log-log ROC: low-FPR behaviour made visible (docs/methods.md §1.6).

    The FPR axis starts at ``min(1e-4, 1/n_neg)``; points with FPR = 0 are drawn at
    that floor. ``points`` are single operating points (hard-label attacks) drawn as
    markers. The dashed diagonal is chance.
    """
    n_neg = max([c.n_neg for _, c in curves] or [10_000])
    floor = min(1e-4, 1.0 / max(n_neg, 1))
    fig = go.Figure()
    grid = np.logspace(np.log10(floor), 0, 50)
    fig.add_trace(
        go.Scatter(x=grid, y=grid, mode="lines", name="chance", line={"dash": "dash", "color": NEUTRAL, "width": 1})
    )
    for i, (label, c) in enumerate(curves):
        color = (colors or {}).get(label) or color_for(label, i)
        fig.add_trace(
            go.Scatter(
                x=np.maximum(c.fpr, floor),
                y=np.maximum(c.tpr, floor),
                mode="lines",
                name=f"{label} (AUC {c.auc:.3f})",
                line={"color": color, "width": 2, "shape": "hv", "dash": ATTACK_DASHES[i % len(ATTACK_DASHES)]},
                hovertemplate="FPR %{x:.2g}<br>TPR %{y:.3g}<extra>" + label + "</extra>",
            )
        )
    for i, (label, fpr, tpr) in enumerate(points):
        color = (colors or {}).get(label) or color_for(label, i + len(curves))
        fig.add_trace(
            go.Scatter(
                x=[max(fpr, floor)],
                y=[max(tpr, floor)],
                mode="markers",
                name=label,
                marker={"size": 12, "symbol": "x", "color": color},
                hovertemplate="FPR %{x:.2g}<br>TPR %{y:.3g}<extra>" + label + "</extra>",
            )
        )
    ticks = percent_log_ticks(floor)
    fig.update_xaxes(type="log", title="False-positive rate (non-members flagged)", range=[np.log10(floor), 0], **ticks)
    fig.update_yaxes(type="log", title="True-positive rate (members flagged)", range=[np.log10(floor), 0], **ticks)
    return apply_layout(fig, title=title)


def percent_log_ticks(floor: float) -> dict[str, Any]:
    """A log axis of rates ticked once a decade, as percent: 0.01 %, 0.1 %, 1 %, 10 %, 100 % (never "100µ, 2, 5")."""
    top = 0
    low = int(np.floor(np.log10(max(floor, 1e-12))))
    values = [10.0**k for k in range(low, top + 1)]
    return {"tickvals": values, "ticktext": [f"{100 * v:g} %" for v in values], "minor": {"showgrid": False}}


LOG_AXIS: dict[str, Any] = {"dtick": 1, "exponentformat": "none", "minor": {"showgrid": False}}
"""A log axis of plain numbers ticked once a decade (0.001, 0.01, 0.1, 1), never in SI prefixes ("100µ")."""


def group_histogram(
    values: Mapping[str, np.ndarray],
    *,
    title: str,
    x_title: str,
    log_x: bool = False,
    nbins: int = 50,
    normalize: bool = True,
) -> go.Figure:
    """Overlaid histograms of one quantity per group, in the group colours.

    Bins are shared by all groups (computed on the pooled values, in log space when
    ``log_x``), and each group is normalised to a probability so that groups of
    different sizes compare.
    """
    pooled = np.concatenate([np.asarray(v, dtype=float).ravel() for v in values.values()] or [np.zeros(1)])
    pooled = pooled[np.isfinite(pooled)]
    if log_x:
        pooled = pooled[pooled > 0]
    fig = go.Figure()
    if pooled.size:
        lo, hi = (np.log10(pooled.min()), np.log10(pooled.max())) if log_x else (pooled.min(), pooled.max())
        if hi <= lo:
            hi = lo + 1.0
        edges = np.linspace(lo, hi, nbins + 1)
        centers = (edges[:-1] + edges[1:]) / 2
        for i, (name, v) in enumerate(values.items()):
            v = np.asarray(v, dtype=float).ravel()
            v = v[np.isfinite(v)]
            if log_x:
                v = np.log10(v[v > 0])
            counts, _ = np.histogram(v, bins=edges)
            y = counts / max(counts.sum(), 1) if normalize else counts
            fig.add_trace(
                go.Bar(
                    x=10**centers if log_x else centers,
                    y=y,
                    name=f"{name} (n={v.size})",
                    marker_color=color_for(name, i),
                    opacity=0.6,
                    width=(np.diff(10**edges) if log_x else np.diff(edges)),
                )
            )
    fig.update_layout(barmode="overlay", bargap=0)
    fig.update_xaxes(title=x_title, type="log" if log_x else "linear")
    fig.update_yaxes(title="share of group" if normalize else "count")
    return apply_layout(fig, title=title)
