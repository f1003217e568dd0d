"""Figures and display tables for the fabricated-members section (docs/methods.md §3)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from audit_core.common.figures import (
    ATTACK_COLORS,
    FABRICATED,
    LOG_AXIS,
    MEMBER,
    NEUTRAL,
    NON_MEMBER,
    apply_layout,
    group_histogram,
    log_roc_figure,
)
from audit_core.common.roc import DEFAULT_FPRS
from audit_core.fabrication.attacks import ATTACK_LABELS, eps255
from audit_core.fabrication.metrics import curve
from audit_core.fabrication.result import FabricationResult

__all__ = [  # eps255 (from attacks) too: the page writes radii as the figures do
    "FPR_KEYS", "MIA_LABELS", "adaptive_figure", "adaptive_table", "attacks_figure", "budgets_table", "eps255",
    "gallery_figure", "grad_norm_histogram", "lambda_figure", "lambda_table", "regime_figure", "regime_sentence",
    "regime_table", "roc_figure", "score_histogram", "tpr_table",
]  # fmt: skip

FPR_KEYS = tuple(f"{f:g}" for f in DEFAULT_FPRS)
"""The JSON keys of the target FPRs the cards and tables show ("0.001", "0.01", "0.1")."""

MIA_LABELS = {"loss": "LOSS / confidence", "lira": "offline LiRA", "rmia": "RMIA"}
"""Each MIA's name in the figures, tables and the page."""
_ATTACK_LINE = {"mfa": FABRICATED, "ipgd": "#0072B2", "icw": "#E69F00"}


def _to_image(x: np.ndarray) -> np.ndarray:
    """(C, H, W) in [0, 1] -> (H, W) grey or (H, W, 3) uint8."""
    if x.shape[0] == 1:
        return x[0]
    return (np.clip(np.transpose(x, (1, 2, 0)), 0, 1) * 255).astype(np.uint8)


def gallery_figure(result: FabricationResult, *, n: int = 6, amplify: float | None = None) -> go.Figure:
    """Originals, fabricated images and their difference amplified to the full pixel range."""
    n = min(n, result.gallery_original.shape[0])
    amp = amplify or 0.5 / max(result.epsilon, 1e-6)
    rows = ("original", "fabricated", f"diff x{amp:.0f}")
    fig = make_subplots(rows=3, cols=n, horizontal_spacing=0.01, vertical_spacing=0.04, row_titles=list(rows))
    for j in range(n):
        x0, xf = result.gallery_original[j], result.gallery_fabricated[j]
        diff = np.clip(0.5 + amp * (xf - x0), 0, 1)
        for i, img in enumerate((x0, xf, diff)):
            im = _to_image(img)
            if im.ndim == 2:
                fig.add_trace(
                    go.Heatmap(z=im[::-1], colorscale="gray", zmin=0, zmax=1, showscale=False,
                               hovertemplate="pixel %{z:.2f}<extra></extra>"),
                    row=i + 1, col=j + 1,
                )
            else:
                fig.add_trace(go.Image(z=im), row=i + 1, col=j + 1)
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False, scaleanchor=None)
    for j in range(n):
        fig.layout.annotations += (
            go.layout.Annotation(text=f"label {int(result.gallery_labels[j])}", x=(j + 0.5) / n, y=1.04,
                                 xref="paper", yref="paper", showarrow=False, font={"size": 11}),
        )
    return apply_layout(fig, title=f"{ATTACK_LABELS.get(result.attack, result.attack)} at epsilon = "
                        f"{eps255(result.epsilon)}, T = {result.steps}", height=420)


def score_histogram(result: FabricationResult, *, mia: str = "loss") -> go.Figure:
    """MIA scores of members, clean non-members and fabricated non-members."""
    s = result.scores[mia]
    return group_histogram(
        {"members": s.members, "non-members": s.non_members, "fabricated": s.fabricated},
        title=f"{MIA_LABELS.get(mia, mia)} score (higher = member)", x_title="membership score",
    )


def grad_norm_histogram(result: FabricationResult) -> go.Figure:
    """Input-gradient norms (log scale): the collapse of fabricated points, or its absence."""
    n = result.norms
    fig = group_histogram(
        {"members": n.members, "non-members": n.non_members, "fabricated": n.fabricated},
        title="Input-gradient norm ||grad_x loss|| (log scale)", x_title="gradient norm", log_x=True,
    )
    fig.add_vline(x=result.g_ref, line={"dash": "dot", "color": NEUTRAL},
                  annotation_text="g_ref")
    return fig


def roc_figure(result: FabricationResult, *, lam: float, mia: str = "loss") -> go.Figure:
    """Log-ROC of the vanilla MIA and AR-MIA, against clean and against fabricated non-members."""
    s = result.scores[mia]
    a = result.ar_scores(lam=lam, mia=mia)
    curves = [
        ("vanilla vs clean", curve(s.members, s.non_members)),
        ("vanilla vs fabricated", curve(s.members, s.fabricated)),
        (f"AR-MIA (lambda={lam:g}) vs clean", curve(a.members, a.non_members)),
        (f"AR-MIA (lambda={lam:g}) vs fabricated", curve(a.members, a.fabricated)),
    ]
    colors = {
        curves[0][0]: ATTACK_COLORS["vanilla"], curves[1][0]: FABRICATED,
        curves[2][0]: ATTACK_COLORS["ar_mia"], curves[3][0]: "#E69F00",
    }
    fig = log_roc_figure(curves, title=f"{MIA_LABELS.get(mia, mia)}: vanilla vs AR-MIA", colors=colors)
    for tr in fig.data:
        if tr.name and "vs clean" in tr.name:
            tr.line.dash = "dash"
    return fig


def lambda_figure(result: FabricationResult, *, mia: str = "loss", lam: float | None = None) -> go.Figure:
    """AR-MIA AUC with and without fabricated members over the normalised lambda grid."""
    pts = result.by_lambda(mia)
    van = result.mia(mia)
    fig = go.Figure()
    x = [p.lam for p in pts]
    fig.add_trace(go.Scatter(x=x, y=[p.auc_clean for p in pts], name="AR-MIA, clean non-members",
                             mode="lines+markers", line={"color": ATTACK_COLORS["ar_mia"]}))
    fig.add_trace(go.Scatter(x=x, y=[p.auc_fabricated for p in pts], name="AR-MIA, fabricated non-members",
                             mode="lines+markers", line={"color": FABRICATED}))
    fig.add_hline(y=van.auc_clean, line={"dash": "dash", "color": ATTACK_COLORS["vanilla"]},
                  annotation_text=f"vanilla clean {van.auc_clean:.2f}")
    fig.add_hline(y=van.auc_fabricated, line={"dash": "dot", "color": FABRICATED},
                  annotation_text=f"vanilla fabricated {van.auc_fabricated:.2f}")
    fig.add_hline(y=0.5, line={"color": NEUTRAL, "width": 1})
    if lam is not None:
        fig.add_vline(x=lam, line={"dash": "dot", "color": NEUTRAL})
    fig.update_xaxes(type="log", **LOG_AXIS, title="lambda (normalised: lambda = 1 gives a typical member tanh(1) = 0.76)")
    fig.update_yaxes(title="AUC (members vs ...)", range=[0, 1.02])
    return apply_layout(fig, title=f"AR-MIA ({MIA_LABELS.get(mia, mia)}) vs lambda")


def regime_figure(result: FabricationResult, *, lam: float | None = None) -> go.Figure:
    """The regime map: AUCs vs epsilon (top) and the fabricated confidence vs members' (bottom)."""
    pts = result.regime
    lam = result.lam if lam is None else lam
    ar = result.regime_at(lam=lam)
    x = [p.epsilon * 255 for p in pts]
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, row_heights=[0.65, 0.35], vertical_spacing=0.06)
    for name, ys, color in (
        ("vanilla MIA, members vs fabricated", [p.mia_auc_fabricated for p in pts], ATTACK_COLORS["vanilla"]),
        ("MFD, fabricated vs real members", [p.mfd_auc for p in pts], ATTACK_COLORS["mfd"]),
        (f"AR-MIA (lambda={lam:g}) vs fabricated", [a.auc_fabricated for a in ar], ATTACK_COLORS["ar_mia"]),
    ):
        fig.add_trace(go.Scatter(x=x, y=ys, name=name, mode="lines+markers", line={"color": color}), row=1, col=1)
    fig.add_hline(y=0.9, line={"dash": "dot", "color": NEUTRAL}, annotation_text="0.9", row=1, col=1)
    fig.add_hline(y=0.5, line={"color": NEUTRAL, "width": 1}, row=1, col=1)
    med_m = float(np.median(result.confidence.members))
    fig.add_trace(go.Scatter(x=x, y=[p.median_conf_fabricated for p in pts], name="median confidence, fabricated",
                             mode="lines+markers", line={"color": FABRICATED, "dash": "dash"}), row=2, col=1)
    fig.add_hline(y=med_m, line={"color": MEMBER, "dash": "dash"}, annotation_text="members' median", row=2, col=1)
    fig.add_hline(y=float(np.median(result.confidence.non_members)), line={"color": NON_MEMBER, "dash": "dot"},
                  annotation_text="non-members' median", row=2, col=1)
    fig.update_xaxes(type="log", **LOG_AXIS, title="epsilon (x/255)", row=2, col=1)
    fig.update_xaxes(type="log", **LOG_AXIS, row=1, col=1)
    fig.update_yaxes(title="AUC", range=[0, 1.02], row=1, col=1)
    fig.update_yaxes(title="p_y", row=2, col=1)
    return apply_layout(fig, title="Regime map: where detection holds and where it breaks", height=560)


def attacks_figure(result: FabricationResult) -> go.Figure:
    """Vanilla MIA AUC on fabricated points vs epsilon: MFA vs I-PGD vs I-CW at each step budget."""
    fig = go.Figure()
    budgets = sorted({p.steps for p in result.budgets})
    dashes = ["dot", "solid", "dash", "dashdot"]
    for a in dict.fromkeys(p.attack for p in result.budgets):
        for k, t in enumerate(budgets):
            pts = [p for p in result.budgets if p.attack == a and p.steps == t]
            fig.add_trace(go.Scatter(
                x=[p.epsilon * 255 for p in pts], y=[p.mia_auc_fabricated for p in pts],
                name=f"{ATTACK_LABELS.get(a, a)}, T = {t}", mode="lines+markers",
                line={"color": _ATTACK_LINE.get(a, NEUTRAL), "dash": dashes[k % len(dashes)]},
            ))
    fig.add_hline(y=0.5, line={"color": NEUTRAL, "width": 1})
    fig.update_xaxes(type="log", **LOG_AXIS, title="epsilon (x/255)")
    fig.update_yaxes(title="vanilla MIA AUC, members vs fabricated (lower = fooled more)", range=[0, 1.02])
    return apply_layout(fig, title="MFA vs I-PGD vs I-CW at several step budgets")


def adaptive_figure(result: FabricationResult) -> go.Figure:
    """The adaptive attacker: keeping the gradient norm up evades MFD but stops fooling the MIA."""
    pts = result.adaptive
    fig = go.Figure()
    x = [max(p.beta, 1e-3) for p in pts]
    fig.add_trace(go.Scatter(x=x, y=[p.mia_auc_fabricated for p in pts], mode="lines+markers",
                             name="vanilla MIA AUC vs fabricated (lower = attack works)",
                             line={"color": ATTACK_COLORS["vanilla"]}))
    fig.add_trace(go.Scatter(x=x, y=[p.mfd_auc for p in pts], mode="lines+markers",
                             name="MFD AUC (higher = detected)", line={"color": ATTACK_COLORS["mfd"]}))
    fig.add_hline(y=0.5, line={"color": NEUTRAL, "width": 1})
    fig.update_xaxes(type="log", **LOG_AXIS, title="beta: weight of the gradient-norm term (0 drawn at 0.001)")
    fig.update_yaxes(title="AUC", range=[0, 1.02])
    return apply_layout(fig, title=f"Adaptive attacker at epsilon = {eps255(result.epsilon)}: the trade-off")


def regime_table(result: FabricationResult) -> pd.DataFrame:
    """The regime map as a table."""
    return pd.DataFrame([{
        "epsilon": eps255(p.epsilon), "vanilla MIA AUC (fabricated)": p.mia_auc_fabricated, "MFD AUC": p.mfd_auc,
        f"AR-MIA AUC (fabricated, lambda={result.lam:g})": a.auc_fabricated,
        f"AR-MIA AUC (clean, lambda={result.lam:g})": a.auc_clean,
        "median confidence (fabricated)": p.median_conf_fabricated,
        "median grad norm (fabricated)": p.median_norm_fabricated,
    } for p, a in zip(result.regime, result.regime_at(lam=result.lam), strict=True)])


def budgets_table(result: FabricationResult) -> pd.DataFrame:
    """Attack comparison as a table."""
    return pd.DataFrame([{
        "attack": ATTACK_LABELS.get(p.attack, p.attack), "T": p.steps, "epsilon": eps255(p.epsilon),
        "vanilla MIA AUC (fabricated)": p.mia_auc_fabricated, "MFD AUC": p.mfd_auc,
        "median confidence (fabricated)": p.median_conf_fabricated,
    } for p in result.budgets])


def lambda_table(result: FabricationResult) -> pd.DataFrame:
    """AR-MIA AUCs over the lambda grid, for every MIA scored."""
    rows = []
    for m in result.mias:
        for p in result.by_lambda(m):
            rows.append({"MIA": MIA_LABELS.get(m, m), "lambda": p.lam, "AUC clean": p.auc_clean,
                         "AUC fabricated": p.auc_fabricated})
    return pd.DataFrame(rows)


def adaptive_table(result: FabricationResult) -> pd.DataFrame:
    """The adaptive attacker's trade-off as a table."""
    return pd.DataFrame([{"beta": p.beta, "vanilla MIA AUC (fabricated)": p.mia_auc_fabricated, "MFD AUC": p.mfd_auc,
                          "median grad norm (fabricated)": p.median_norm_fabricated} for p in result.adaptive])


def tpr_table(result: FabricationResult, *, lam: float | None = None) -> pd.DataFrame:
    """TPR at each low FPR with its 95 % interval: every MIA (vanilla and AR-MIA) vs clean and fabricated, and MFD.

    For an MIA the positives are the members and the FPR counts the negatives named in
    ``negatives``; for MFD the positives are the fabricated images and the FPR counts
    real members wrongly flagged as fabricated.
    """
    lam = result.lam if lam is None else lam
    rows = []

    def add(measure: str, negatives: str, tprs: dict) -> None:
        for t in tprs.values():
            rows.append({
                "measure": measure, "negatives": negatives, "target FPR": t.target_fpr, "TPR": t.tpr,
                "95 % CI low": t.ci_low, "95 % CI high": t.ci_high, "achieved FPR": t.achieved_fpr,
                "n negatives": t.n_neg, "supported (>= 10/FPR negatives)": bool(t.supported),
            })

    for m in result.mias:
        for label, summary in ((MIA_LABELS.get(m, m), result.mia(m)),
                               (f"AR-MIA ({MIA_LABELS.get(m, m)}, lambda={lam:g})", result.mia(m, lam=lam))):
            add(label, "clean non-members", summary.tpr_clean)
            add(label, "fabricated non-members", summary.tpr_fabricated)
    add("MFD (fabricated flagged)", "real members", result.mfd().tpr_at_fpr)
    return pd.DataFrame(rows)


def regime_sentence(result: FabricationResult) -> str:
    """One sentence on why detection holds or breaks at the chosen epsilon."""
    med = result.confidence.medians()
    above = med["fabricated"] > med["members"]
    if above:
        return (f"At {eps255(result.epsilon)} the attack pushes fabricated confidence (median {med['fabricated']:.3f}) "
                f"past the members' ({med['members']:.3f}), and since grad CE = (1 - p_y) x ..., their gradient norms "
                "collapse below the members': MFD and AR-MIA can see them.")
    return (f"At {eps255(result.epsilon)} fabricated confidence (median {med['fabricated']:.3f}) stays below the "
            f"members' ({med['members']:.3f}), so their gradient norms do not collapse below the members' and "
            "MFD / AR-MIA cannot separate them: a larger epsilon (or more pixels) is needed for the collapse.")
