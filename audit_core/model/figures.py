"""Figures and display tables of the model audit (:mod:`audit_core.model.audit`)."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from audit_core.common.display import readable
from audit_core.model.audit import ModelAudit
from audit_core.scores.figures import epsilon_table, roc_figure, tpr_table

__all__ = [
    "epsilon_table",
    "exposed_table",
    "family_sentence",
    "family_table",
    "fidelity_table",
    "log_roc",
    "rmia_table",
    "tpr_table",
]


def log_roc(audit: ModelAudit) -> go.Figure:
    """Every attack on one log-ROC, with the DP limit at the largest epsilon lower bound (as the score check)."""
    fig = roc_figure(audit)
    fig.update_layout(title="Attacks on the uploaded model: log-ROC")
    return fig


def fidelity_table(audit: ModelAudit) -> pd.DataFrame:
    """Target vs reference models: train and test accuracy and loss side by side, and the gap (online ones too)."""
    f = audit.fidelity
    rows = []
    for key in ("train_accuracy", "test_accuracy", "train_loss", "test_loss"):
        row = {"measure": key.replace("_", " "), "target": f.target[key], "reference (mean)": f.reference[key],
               "gap": f.reference[key] - f.target[key]}  # fmt: skip
        if f.online is not None:
            row |= {"online reference (mean)": f.online[key], "online gap": f.online[key] - f.target[key]}
        rows.append(row | {"checked": f"within ±{f.margin:g}" if "accuracy" in key else "shown only"})
    return pd.DataFrame(rows)


def rmia_table(audit: ModelAudit) -> pd.DataFrame:
    """RMIA with the first 1, 2, 4, ... reference models: how much each added model buys (for readers)."""
    frame = pd.DataFrame(
        [{"reference models": int(k), "auc": v["auc"], "tpr": v["tpr_at_fpr"]["0.01"]["tpr"],
          "ci_low": v["tpr_at_fpr"]["0.01"]["ci_low"], "ci_high": v["tpr_at_fpr"]["0.01"]["ci_high"]}
         for k, v in audit.rmia_by_k.items()]
    )  # fmt: skip
    return readable(frame, labels={"tpr": "TPR at 1 % FPR"}, intervals={"95 % interval": ("ci_low", "ci_high")})


def exposed_table(audit: ModelAudit) -> pd.DataFrame:
    """The most exposed members for readers: row, the best attack's score and the share of non-members it outranks,
    then their values (the page; the report prints them redacted unless asked)."""
    columns = [str(c) for c in audit.exposed.columns]
    labels = {c: f"{c.removesuffix('_score')} score" for c in columns if c.endswith("_score")}
    labels |= {c: f"non-members scoring as high ({c.removesuffix('_fpr')})" for c in columns if c.endswith("_fpr")}
    return readable(audit.exposed, labels=labels | {"label": "label (as trained)"},
                    percent=[c for c in columns if c.endswith("_fpr")])  # fmt: skip


def family_table(audit: ModelAudit) -> pd.DataFrame:
    """Under ``--reference-family auto``: every family's fidelity distance and its offline attacks, the chosen first.

    Empty when one family was named. The attacks' columns are shown for the reader, never used to choose.
    """
    choice = audit.reference.get("family_choice")
    if not choice:
        return pd.DataFrame()
    rows = []
    for family, v in choice["families"].items():
        row = {"family": family, "chosen": "✓" if family == choice["chosen"] else "", "fidelity distance": v["distance"],
               "train accuracy": v["train_accuracy"], "test accuracy": v["test_accuracy"],
               "KS train loss": v["ks_train_loss"], "KS population loss": v["ks_test_loss"]}  # fmt: skip
        for name, found in v["attacks"].items():
            row[f"{name} AUC"] = found["auc"]
            row[f"{name} TPR at 1 % FPR"] = found["tpr_at_fpr"]["0.01"]["tpr"]
        rows.append(row)
    frame = pd.DataFrame(rows).sort_values("fidelity distance", kind="mergesort").reset_index(drop=True)
    return readable(frame, percent=[c for c in frame.columns if c.endswith("TPR at 1 % FPR")])


def family_sentence(audit: ModelAudit) -> str:
    """Which reference family was used and why: named by the steward, or chosen by fidelity (``auto``)."""
    ref = audit.reference
    if "architecture" in audit.model:
        return f"The reference models are of the uploaded architecture ('{audit.model['architecture']}')."
    used = f"'{ref['family']}'"
    if ref.get("params_from") in ("skops", "onnx"):
        used += f" ({ref['estimator']} with the hyper-parameters read from the {ref['params_from']} file)"
    choice = ref.get("family_choice")
    if not choice:
        return f"The reference models are of the family {used}."
    ranked = sorted(choice["families"].items(), key=lambda kv: kv[1]["distance"])
    chosen = choice["chosen"]
    others = ", ".join(f"{f} {v['distance']:.2f}" for f, v in ranked if f != chosen)
    why = "" if ranked[0][0] == chosen else (
        f"; the model's own kind, within {choice['tolerance']:.2f} of the closest, which counts as equally close")
    return (f"The reference models are of the family {used}, chosen by fidelity among {len(ranked)} families "
            f"(fidelity distance {choice['families'][chosen]['distance']:.2f}; {others}{why}), never by how well they "
            "attack.")  # fmt: skip
