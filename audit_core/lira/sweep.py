"""The what-if over M: TPR at alpha as the number of models grows, from subsets of the trained pool."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from audit_core.common.limits import MIN_MODELS
from audit_core.common.runtime import ProgressFn, as_progress
from audit_core.lira.cautions import required_models
from audit_core.lira.per_sample import extrapolated_record_tpr
from audit_core.lira.rules import aggregate, rates

__all__ = ["ModelsSweep", "models_sweep"]


@dataclass(frozen=True)
class ModelsSweep:
    """TPR at alpha as the number of models grows (subsamples of the trained pool).

    Attributes
    ----------
    n_models : np.ndarray
        ``(k,)`` sizes tried (even; whole complementary pairs).
    tpr : dict[str, np.ndarray]
        ``(k, repeats)`` TPR per aggregation (naive, post_processed, post_processed_t,
        per_sample_mean).
    fpr_spread : dict[str, np.ndarray]
        ``(k, repeats)`` std of per-sample FPRs (naive, post_processed).
    fpr : float
    required_models : int
    """

    n_models: np.ndarray
    tpr: dict[str, np.ndarray] = field(repr=False)
    fpr_spread: dict[str, np.ndarray] = field(repr=False)
    fpr: float
    required_models: int

    def table(self) -> pd.DataFrame:
        """Long table: ``n_models, rule, tpr_mean, tpr_low, tpr_high`` (min/max over repeats)."""
        rows = []
        for rule, v in self.tpr.items():
            for i, m in enumerate(self.n_models):
                rows.append(
                    {
                        "n_models": int(m),
                        "rule": rule,
                        "tpr_mean": float(np.nanmean(v[i])),
                        "tpr_low": float(np.nanmin(v[i])),
                        "tpr_high": float(np.nanmax(v[i])),
                    }
                )
        return pd.DataFrame(rows)


def models_sweep(
    scores: np.ndarray,
    keep: np.ndarray,
    *,
    fpr: float,
    sizes: tuple[int, ...] | None = None,
    repeats: int = 5,
    seed: int = 0,
    progress: ProgressFn | None = None,
) -> ModelsSweep:
    """What-if: the four aggregations recomputed with M' < M models of the pool.

    Draws ``repeats`` random subsets of whole complementary pairs (rows 2k, 2k+1 of the
    keep-matrix, see :func:`audit_core.lira.keep_matrix.balanced_keep_matrix`), so every
    subset keeps each record in exactly M'/2 models. Default sizes: 8, 16, 32, ... and M.
    """
    M = scores.shape[0]
    if sizes is None:
        sizes = tuple(sorted({*(2**k for k in range(3, 12) if 2**k < M), M}))
    sizes = tuple(s for s in sizes if MIN_MODELS <= s <= M and s % 2 == 0)
    rng = np.random.default_rng(seed)
    rules = ("naive", "post_processed", "post_processed_t", "per_sample_mean")
    tpr = {r: np.full((len(sizes), repeats), np.nan) for r in rules}
    spread = {r: np.full((len(sizes), repeats), np.nan) for r in ("naive", "post_processed")}
    report = as_progress(progress)
    for i, m in enumerate(sizes):
        reps = 1 if m == M else repeats
        for r in range(reps):
            pairs = rng.choice(M // 2, size=m // 2, replace=False)
            rows = np.sort(np.r_[2 * pairs, 2 * pairs + 1])
            agg = aggregate(scores[rows], keep[rows], fpr)
            t, f = rates(agg)
            plain = agg.hits["per_sample_mean"] / agg.n_in
            t["per_sample_mean"] = float(np.mean(extrapolated_record_tpr(scores[rows], keep[rows], plain, fpr, seed=seed)[0]))
            for rule in rules:
                tpr[rule][i, r] = t[rule]
            for rule in spread:
                spread[rule][i, r] = f[rule].std()
        report((i + 1) / len(sizes), f"What-if with {m} models")
    return ModelsSweep(n_models=np.array(sizes), tpr=tpr, fpr_spread=spread, fpr=fpr, required_models=required_models(fpr))
