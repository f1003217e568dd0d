"""The result of a shadow-generator attack: :class:`ShadowAttack`, per target and pooled, and its JSON."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from audit_core.common.privacy_bound import epsilon_bound_json
from audit_core.common.roc import AttackMetrics, TprAtFpr, evaluate_attack, tpr_at_fpr
from audit_core.synthetic.shadow.scoring import TargetScores

__all__ = ["SHADOW_ALPHA", "SHADOW_FPRS", "SHADOW_STRONG", "ShadowAttack", "holm"]

SHADOW_ALPHA = 0.05
"""A target is told apart when its Holm-adjusted p-value is at most this (family-wise over the targets)."""

SHADOW_STRONG = 0.01
"""At or below this adjusted p-value the evidence is strong (the release decision is high)."""

SHADOW_FPRS = (0.1, 0.01)
"""The FPRs each target's TPR is read at (the MIDST challenge scores TPR at 10 % FPR)."""


def holm(p: np.ndarray) -> np.ndarray:
    """Holm's step-down adjusted p-values (family-wise error over all of ``p``).

    >>> holm(np.array([0.01, 0.04, 0.03])).round(2).tolist()
    [0.03, 0.06, 0.06]
    """
    p = np.asarray(p, dtype=np.float64)
    order = np.argsort(p, kind="stable")
    m = p.size
    adjusted = np.maximum.accumulate((m - np.arange(m)) * p[order])
    out = np.empty(m)
    out[order] = np.minimum(adjusted, 1.0)
    return out


@dataclass(frozen=True)
class ShadowAttack:
    """A shadow-generator attack on one generator (:func:`audit_core.synthetic.shadow.audit.shadow_attack`).

    Attributes
    ----------
    generator : str
        The registry name of the generator attacked.
    params : dict
        Its settings (defaults filled in).
    target_rows : ndarray of int
        ``[T]`` rows of the training table attacked.
    isolation : ndarray of float
        ``[T]`` each target's mean Gower distance to its 5 nearest real records.
    named : bool
        The steward named the targets (else: the most isolated, Meeus et al.).
    scores : TargetScores
        The cross-fitted scores, AUCs, p-values and the release's scores.
    keep : ndarray of bool
        ``[K, T]``: target t was in shadow set k.
    feature_names : tuple of str
        ``[T]``: the feature each target's test used most.
    targets : pandas.DataFrame
        The target records (aligned training rows), for display.
    n_train, n_population, shadow_rows, synthetic_rows : int
        Training rows, population rows, rows of each shadow training set, rows of each output.
    fit_seconds : ndarray of float
        ``[K]`` seconds of each shadow fit and sample.
    seconds : float
        Wall time of the whole attack.
    release_fitted : bool
        The release was fitted here (no synthetic table was given).
    settings : dict
    warnings : tuple of str
    """

    generator: str
    params: dict[str, Any]
    target_rows: np.ndarray
    isolation: np.ndarray
    named: bool
    scores: TargetScores
    keep: np.ndarray
    feature_names: tuple[str, ...]
    targets: pd.DataFrame = field(repr=False)
    n_train: int = 0
    n_population: int = 0
    shadow_rows: int = 0
    synthetic_rows: int = 0
    fit_seconds: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)
    seconds: float = 0.0
    release_fitted: bool = False
    settings: dict[str, Any] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()

    @property
    def n_targets(self) -> int:
        return int(self.target_rows.size)

    @property
    def n_shadows(self) -> int:
        return int(self.keep.shape[0])

    @property
    def adjusted_p(self) -> np.ndarray:
        """Holm-adjusted p-values of the targets (:func:`holm`)."""
        return holm(self.scores.p_value)

    @property
    def told_apart(self) -> np.ndarray:
        """``[T]``: the attack tells whether the target was in (adjusted p at most :data:`SHADOW_ALPHA`)."""
        return self.adjusted_p <= SHADOW_ALPHA

    def tpr(self, t: int, fpr: float) -> TprAtFpr:
        """Target ``t``'s TPR at ``fpr`` over its shadow outputs, with its interval."""
        return tpr_at_fpr(self.scores.shadow[:, t], self.keep[:, t], fpr)

    def pooled(self) -> AttackMetrics:
        """Every target's out-of-fold scores pooled (one ROC over K x T outputs; not independent across targets)."""
        return evaluate_attack(self.scores.shadow.ravel(), self.keep.ravel(), threshold=0.0)

    def table(self) -> pd.DataFrame:
        """One row per target, most exposed first: its row, isolation, AUC, p-values, TPRs and the release's reading."""
        rows = []
        adjusted = self.adjusted_p
        for t in range(self.n_targets):
            at10, at1 = (self.tpr(t, f) for f in SHADOW_FPRS)
            rows.append({
                "row": int(self.target_rows[t]), "isolation": float(self.isolation[t]), "auc": float(self.scores.auc[t]),
                "p_value": float(self.scores.p_value[t]), "p_adjusted": float(adjusted[t]),
                "told_apart": bool(adjusted[t] <= SHADOW_ALPHA), "tpr@10%": at10.tpr,
                "tpr@10%_ci": f"[{at10.ci_low:.2f}, {at10.ci_high:.2f}]", "tpr@1%": at1.tpr,
                "tpr@1%_ci": f"[{at1.ci_low:.2f}, {at1.ci_high:.2f}]", "release_p": float(self.scores.release_p[t]),
                "feature": self.feature_names[t],
            })  # fmt: skip
        frame = pd.DataFrame(rows)
        return frame.sort_values(["p_adjusted", "auc"], ascending=[True, False], kind="stable").reset_index(drop=True)

    def to_json(self) -> dict[str, Any]:
        """``generator``, ``params``, per-target results under ``targets``, the pooled ROC under ``pooled``, ``timing``."""
        adjusted = self.adjusted_p
        targets = []
        for t in range(self.n_targets):
            targets.append({
                "row": int(self.target_rows[t]), "isolation": float(self.isolation[t]), "auc": float(self.scores.auc[t]),
                "p_value": float(self.scores.p_value[t]), "p_adjusted": float(adjusted[t]),
                "told_apart": bool(adjusted[t] <= SHADOW_ALPHA),
                "tpr_at_fpr": {f"{f:g}": self.tpr(t, f).to_json() for f in SHADOW_FPRS},
                "release_score": float(self.scores.release[t]), "release_p_value": float(self.scores.release_p[t]),
                "feature": self.feature_names[t],
            })  # fmt: skip
        pooled = self.pooled().to_json()
        first = 0  # the most isolated target (named first, or ranked first), chosen before any score was seen
        pooled["epsilon_lower_bound"] = {
            **epsilon_bound_json(self.scores.shadow[:, first], self.keep[:, first], seed=int(self.settings.get("seed", 0))),
            "target_row": int(self.target_rows[first]),
        }
        told = int(self.told_apart.sum())
        return {
            "generator": self.generator,
            "params": dict(self.params),
            "n_targets": self.n_targets,
            "n_shadow_models": self.n_shadows,
            "targets_chosen_by": "named by the steward" if self.named else "isolation (Meeus et al.: mean distance to "
            "the 5 nearest real records, largest first)",
            "told_apart": told,
            "alpha": SHADOW_ALPHA,
            "test": "per target: LiRA-style Gaussian log-likelihood ratio on the feature with the largest Welch t "
            "(chosen within the training folds), cross-fitted over the shadow outputs; AUC of the out-of-fold scores, "
            f"exact permutation p-value ({self.scores.permutations} re-drawn designs), Holm-adjusted over the targets",
            "targets": targets,
            "pooled": pooled,
            "n_train": self.n_train,
            "n_population": self.n_population,
            "shadow_rows": self.shadow_rows,
            "synthetic_rows": self.synthetic_rows,
            "release_fitted": self.release_fitted,
            "timing": {  # wall-clock: the one part two runs cannot share
                "seconds_per_fit": float(np.mean(self.fit_seconds)) if self.fit_seconds.size else 0.0,
                "fit_seconds": float(np.sum(self.fit_seconds)),
                "seconds": float(self.seconds),
            },
            "settings": dict(self.settings),
            "warnings": list(self.warnings),
        }
