"""Figures and display tables for the calibrated-LiRA section (docs/methods.md §2)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from audit_core.common.decision import times_chance
from audit_core.common.display import readable
from audit_core.common.figures import ATTACK_COLORS, LOG_AXIS, NEUTRAL, apply_layout, log_roc_figure
from audit_core.lira.evaluation import LiraEvaluation, vulnerable_records
from audit_core.lira.fpc import FpcSimulation
from audit_core.lira.sweep import ModelsSweep

__all__ = [
    "LABELS",
    "fpc_figure",
    "models_sweep_figure",
    "per_sample_fpr_figure",
    "records_table",
    "roc_figure",
    "rule_caption",
    "rules_table",
    "tpr_table",
    "vulnerable_table",
]

LABELS = {
    "naive": "naive concatenation",
    "post_processed": "post-processed, N(0,1) threshold",
    "post_processed_t": "post-processed, Student-t threshold",
    "per_sample_mean": "per-sample average (extrapolated)",
    "naive_online": "naive, online LiRA statistic",
    "online_fixed_variance": "online LiRA, fixed variance",
    "post_processed_fixed_variance": "post-processed, fixed variance",
    "post_processed_fpc": "post-processed, FPC-corrected sigma",
    "per_sample_mean_gaussian": "per-sample average (Gaussian TPR)",
    "per_sample_mean_empirical": "per-sample average (empirical threshold)",
    "per_sample_mean_uncorrected": "per-sample average (not extrapolated)",
}


def roc_figure(ev: LiraEvaluation) -> go.Figure:
    """Log-ROC of the pooled raw score (naive), the PP score and the per-sample average.

    Markers show where the N(0,1) and Student-t thresholds land (pooled FPR, TPR).
    """
    curves = [(LABELS[k], ev.curves[k]) for k in ("naive", "post_processed", "per_sample_mean", "naive_online")]
    colors = {LABELS[k]: ATTACK_COLORS.get(k, NEUTRAL) for k in LABELS}
    colors[LABELS["naive_online"]] = "#CC79A7"
    points = [
        (f"PP N(0,1) at alpha = {ev.fpr:g}", ev.pooled_fpr["post_processed"], ev.tpr["post_processed"]),
        (f"PP Student-t at alpha = {ev.fpr:g}", ev.pooled_fpr["post_processed_t"], ev.tpr["post_processed_t"]),
        (f"naive at alpha = {ev.fpr:g}", ev.pooled_fpr["naive"], ev.tpr["naive"]),
    ]
    pcolors = dict(zip([p[0] for p in points], ["#0072B2", "#56B4E9", "#E69F00"], strict=True))
    fig = log_roc_figure(
        curves, points=points, title=f"LiRA over {ev.n_models} models x {ev.n_samples} records", colors=colors | pcolors
    )
    fig.add_vline(x=ev.fpr, line={"dash": "dot", "color": NEUTRAL}, annotation_text=f"alpha = {ev.fpr:g}")
    return fig


def per_sample_fpr_figure(ev: LiraEvaluation) -> go.Figure:
    """Distribution over records of the FPR each record actually gets at nominal alpha."""
    fig = go.Figure()
    for key in ("naive", "post_processed", "post_processed_t"):
        v = ev.per_sample_fpr[key]
        s = ev.fpr_summary(key)
        fig.add_trace(
            go.Histogram(
                x=v,
                name=f"{LABELS[key]} (mean {s['mean']:.3f}, sd {s['std']:.3f})",
                marker_color=ATTACK_COLORS[key],
                opacity=0.6,
                xbins={"start": -0.5 / (ev.n_models / 2), "size": 1.0 / (ev.n_models / 2)},
            )
        )
    fig.add_vline(x=ev.fpr, line={"dash": "dash", "color": "black"}, annotation_text=f"alpha = {ev.fpr:g}")
    fig.update_layout(barmode="overlay")
    fig.update_xaxes(title="Per-record FPR (share of the record's out-models that flag it)")
    fig.update_yaxes(title="Records", type="log", **LOG_AXIS)
    return apply_layout(fig, title="Does the FPR hold for each record?")


def models_sweep_figure(sw: ModelsSweep) -> go.Figure:
    """TPR at alpha against the number of models (what-if), with the M >= 10/alpha line."""
    fig = go.Figure()
    x = sw.n_models
    for key, v in sw.tpr.items():
        mean = np.nanmean(v, axis=1)
        lo, hi = np.nanmin(v, axis=1), np.nanmax(v, axis=1)
        fig.add_trace(
            go.Scatter(
                x=x,
                y=mean,
                mode="lines+markers",
                name=LABELS[key],
                line={"color": ATTACK_COLORS[key]},
                error_y={"type": "data", "symmetric": False, "array": hi - mean, "arrayminus": mean - lo},
                hovertemplate="M = %{x}<br>TPR %{y:.3f}<extra>" + LABELS[key] + "</extra>",
            )
        )
    fig.add_vline(
        x=sw.required_models,
        line={"dash": "dash", "color": "black"},
        annotation_text=f"M = 10/alpha = {sw.required_models}",
    )
    fig.update_xaxes(
        type="log",
        title="Number of models M (subsampled from the trained pool)",
        tickvals=sorted({*sw.n_models, sw.required_models}),
        range=[np.log10(min(x) * 0.8), np.log10(max(max(x), sw.required_models) * 1.3)],
    )
    fig.update_yaxes(title=f"TPR at FPR {sw.fpr:g}", rangemode="tozero")
    return apply_layout(fig, title="How many models does the number need?")


def fpc_figure(sims: Sequence[FpcSimulation]) -> go.Figure:
    """sigma_emp/sigma_ana against N/N_+, before and after the correction, with sqrt(FPC)."""
    frac = np.array([s.train_size / s.population for s in sims])
    emp = np.array([s.ratio_empirical for s in sims])
    q = np.array([np.quantile(s.ratios, [0.25, 0.75]) for s in sims])
    corr = np.array([s.ratio_corrected for s in sims])
    qc = np.array([np.quantile(s.ratios / np.sqrt(s.fpc), [0.25, 0.75]) for s in sims])
    grid = np.linspace(0.0, 0.99, 100)
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=grid, y=np.sqrt(1 - grid), mode="lines", name="sqrt(FPC) = sqrt(1 - N/N+)", line={"color": NEUTRAL, "dash": "dash"}
        )
    )
    fig.add_trace(
        go.Scatter(
            x=frac,
            y=emp,
            mode="markers",
            name="sigma_emp / sigma_ana (median, IQR)",
            marker={"color": "#D55E00", "size": 10},
            error_y={"type": "data", "symmetric": False, "array": q[:, 1] - emp, "arrayminus": emp - q[:, 0]},
        )
    )
    fig.add_trace(
        go.Scatter(
            x=frac,
            y=corr,
            mode="markers",
            name="after correction / sqrt(FPC)",
            marker={"color": "#009E73", "size": 10, "symbol": "diamond"},
            error_y={"type": "data", "symmetric": False, "array": qc[:, 1] - corr, "arrayminus": corr - qc[:, 0]},
        )
    )
    fig.add_hline(y=1.0, line={"color": "black", "width": 1})
    fig.update_xaxes(title="N / N+ (training-subset size over pool size)", range=[0, 1])
    fig.update_yaxes(title="sigma_emp / sigma_ana", rangemode="tozero")
    return apply_layout(fig, title="Finite-population correction: shadow pools understate the spread")


def tpr_table(ev: LiraEvaluation) -> pd.DataFrame:
    """Every rule: TPR, bootstrap interval, pooled FPR, spread of per-record FPRs, and whether it holds alpha.

    ``no_signal_tpr`` is the rule's reading on simulated scores without any membership
    signal at the same M; ``holds_alpha`` is False where that reads clearly above alpha
    (the rule's TPR then overstates the exposure).
    """
    rows = []
    for key, label in LABELS.items():
        lo, hi = ev.tpr_ci.get(key, (np.nan, np.nan))
        s = ev.fpr_summary(key) if key in ev.per_sample_fpr else None
        rows.append(
            {
                "rule": label,
                "key": key,
                "tpr": ev.tpr[key],
                "tpr_ci_low": lo,
                "tpr_ci_high": hi,
                "pooled_fpr": ev.pooled_fpr.get(key, np.nan),
                "per_record_fpr_sd": s["std"] if s else np.nan,
                "per_record_fpr_p90": s["p90"] if s else np.nan,
                "no_signal_tpr": ev.no_signal_tpr.get(key, np.nan),
                "holds_alpha": ev.holds_alpha.get(key, True),
            }
        )
    return pd.DataFrame(rows)


def rule_caption(ev: LiraEvaluation, key: str) -> str:
    """The caption under a rule's TPR card: its magnitude, its interval and what it reads with no signal."""
    lo, hi = ev.tpr_ci.get(key, (np.nan, np.nan))
    null = ev.no_signal_tpr.get(key)
    text = f"{times_chance(ev.tpr[key], ev.fpr)} · 95 % CI {100 * lo:.1f}–{100 * hi:.1f} % (bootstrap over records)"
    if null is not None:
        text += f" · with no signal it reads {100 * null:.1f} %"
        text += "" if ev.holds_alpha.get(key, True) else ": does not hold alpha at this M"
    return text


def rules_table(ev: LiraEvaluation) -> pd.DataFrame:
    """:func:`tpr_table` for readers: percent, one interval column, yes / no, the magnitude in words."""
    frame = tpr_table(ev).drop(columns=["key"])
    frame.insert(3, "times chance", [times_chance(t, ev.fpr) for t in frame["tpr"]])
    return readable(frame, labels={"rule": "rule", "tpr": f"TPR at FPR {ev.fpr:g}", "pooled_fpr": "FPR reached (pooled)",
                                   "per_record_fpr_sd": "per-record FPR: spread (sd)",
                                   "per_record_fpr_p90": "per-record FPR: 90th percentile",
                                   "no_signal_tpr": "reads with no signal", "holds_alpha": "holds alpha"},
                    percent=("pooled_fpr", "per_record_fpr_sd", "per_record_fpr_p90", "no_signal_tpr", "tpr_ci_low"),
                    intervals={"95 % interval (bootstrap)": ("tpr_ci_low", "tpr_ci_high")})  # fmt: skip


def vulnerable_table(ev: LiraEvaluation, data: pd.DataFrame | None = None, *, top: int = 20) -> pd.DataFrame:
    """The most exposed records (:func:`audit_core.lira.evaluation.vulnerable_records`) with their table values."""
    table = vulnerable_records(ev, top=top)
    if data is None:
        return table
    values = data.iloc[table["row"].to_numpy()].reset_index(drop=True)
    return pd.concat([table, values], axis=1)


def records_table(ev: LiraEvaluation) -> pd.DataFrame:
    """One row per record: its Gaussian fits, per-record TPR and FPR under each rule (CSV download)."""
    out = pd.DataFrame({"row": np.arange(ev.n_samples), "per_sample_tpr": ev.per_sample_tpr})
    for key, values in ev.fits.items():
        out[key] = values
    for key in ("naive", "post_processed", "post_processed_t", "per_sample_mean"):
        out[f"fpr_{key}"] = ev.per_sample_fpr[key]
    return out
