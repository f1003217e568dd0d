"""Figures and display tables of the shadow-generator attack: per-target log-ROC, AUC by isolation, the target table."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from audit_core.common.figures import MEMBER, NEUTRAL, NON_MEMBER, apply_layout, log_roc_figure
from audit_core.common.roc import roc_curve
from audit_core.synthetic.shadow.result import SHADOW_ALPHA, ShadowAttack

__all__ = ["isolation_figure", "shadow_roc_figure", "target_table"]

_MOST_CURVES = 5


def shadow_roc_figure(attack: ShadowAttack, *, title: str | None = None) -> go.Figure:
    """Log-log ROC over the shadow outputs: every target pooled, and the most exposed targets one by one."""
    table = attack.table()
    curves = [("all targets pooled", attack.pooled().curve)]
    position = {int(r): t for t, r in enumerate(attack.target_rows)}
    for row in table["row"].head(_MOST_CURVES):
        t = position[int(row)]
        curves.append((f"row {int(row)}", roc_curve(attack.scores.shadow[:, t], attack.keep[:, t])))
    label = title or f"Log-log ROC over {attack.n_shadows} shadow outputs"
    return log_roc_figure(curves, title=label, colors={"all targets pooled": "#000000"})


def isolation_figure(attack: ShadowAttack) -> go.Figure:
    """Each target's AUC against its isolation: are the unusual records the exposed ones? Told apart in vermillion."""
    told = attack.told_apart
    fig = go.Figure()
    for mask, name, color in ((told, "told apart", MEMBER), (~told, "not told apart", NON_MEMBER)):
        if mask.any():
            fig.add_trace(go.Scatter(
                x=attack.isolation[mask], y=attack.scores.auc[mask], mode="markers", name=name,
                marker={"color": color, "size": 10}, text=[f"row {r}" for r in attack.target_rows[mask]],
                hovertemplate="%{text}<br>isolation %{x:.3f}<br>AUC %{y:.2f}<extra></extra>",
            ))  # fmt: skip
    fig.add_hline(y=0.5, line={"dash": "dash", "color": NEUTRAL}, annotation_text="chance")
    fig.update_xaxes(title="isolation (mean Gower distance to the 5 nearest real records)")
    fig.update_yaxes(title="AUC over the shadow outputs", range=[0, 1.02])
    return apply_layout(fig, title=f"AUC by isolation (told apart: Holm p <= {SHADOW_ALPHA:g})")


def target_table(attack: ShadowAttack) -> pd.DataFrame:
    """The per-target table for display, most exposed first, rounded; a TPR without enough outputs is marked."""
    out = attack.table()
    n_out = int((~attack.keep).sum(axis=0).min())
    for col in ("isolation", "auc"):
        out[col] = out[col].round(3)
    for col in ("p_value", "p_adjusted", "release_p"):
        out[col] = out[col].map(lambda p: float(f"{p:.3g}"))
    for tag, fpr in (("10%", 0.1), ("1%", 0.01)):
        mark = "" if n_out >= 10 / fpr else " ⚠"
        out[f"tpr@{tag}"] = [f"{v:.2f} {ci}{mark}" for v, ci in zip(out[f"tpr@{tag}"], out.pop(f"tpr@{tag}_ci"), strict=True)]
    return out.rename(columns={"p_value": "p", "p_adjusted": "p (Holm)", "release_p": "release p",
                               "feature": "feature used", "told_apart": "told apart"}).assign(
        **{"told apart": np.where(out["told_apart"], "yes", "")}
    )
