"""Per-record Gaussian fits of LiRA scores, the likelihood ratios built on them, and Student-t cuts (docs/methods.md §2).

Scores come as an ``(M, N)`` matrix (model m's score on record x) with its keep-matrix.
:func:`record_fits` fits each record's in- and out-Gaussian over all models;
:func:`loo_stats` does so leaving each model out (for the score of model m on record x,
only the other models' scores on x), so a score is never standardised with itself. The
model audit (audit_core.model.attacks) reuses the fits and the likelihood ratios.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

__all__ = [
    "LooStats",
    "fixed_variance_llr",
    "gaussian_llr",
    "loo_stats",
    "mean_sd",
    "moments",
    "orientation",
    "pooled_sd",
    "record_fits",
    "t_cut",
    "t_quantile",
]

_SD_FLOOR = 1e-4


@dataclass(frozen=True)
class LooStats:
    """Per-entry leave-one-model-out Gaussian parameters, each ``(M, N)``; ``n_out`` the out-scores behind them."""

    mu_in: np.ndarray
    sd_in: np.ndarray
    mu_out: np.ndarray
    sd_out: np.ndarray
    n_out: np.ndarray


def moments(D: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per record (column): the count, sum and sum of squares of the entries of ``D`` where ``mask``."""
    n = mask.sum(0).astype(np.float64)
    s1 = np.where(mask, D, 0.0).sum(0)
    s2 = np.where(mask, D * D, 0.0).sum(0)
    return n, s1, s2


def mean_sd(n: np.ndarray, s1: np.ndarray, s2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and sd (ddof = 1, floored at 1e-4) from a count, a sum and a sum of squares (:func:`moments`)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = s1 / n
        var = (s2 - s1 * s1 / n) / (n - 1)
    return mean, np.sqrt(np.maximum(var, _SD_FLOOR**2))


def record_fits(scores: np.ndarray, keep: np.ndarray) -> dict[str, np.ndarray]:
    """Per-record Gaussian fits over all models: ``mu_in, sd_in, mu_out, sd_out`` (ddof = 1)."""
    c = scores.mean(0)
    D = scores - c
    mi, si = mean_sd(*moments(D, keep))
    mo, so = mean_sd(*moments(D, ~keep))
    return {"mu_in": mi + c, "sd_in": si, "mu_out": mo + c, "sd_out": so}


def loo_stats(scores: np.ndarray, keep: np.ndarray) -> LooStats:
    """Leave-one-model-out in/out Gaussian parameters for every entry (docs/methods.md §2).

    For the score of model m on record x, the in- and out-parameters of x are estimated
    from the other M - 1 models only (the side m belongs to loses one score).
    """
    c = scores.mean(0)
    D = scores - c
    n_i, s1_i, s2_i = moments(D, keep)
    n_o, s1_o, s2_o = moments(D, ~keep)
    K = keep
    # in-side parameters: drop m when m is in
    ni = np.where(K, n_i - 1, n_i)
    mu_in, sd_in = mean_sd(ni, np.where(K, s1_i - D, s1_i), np.where(K, s2_i - D * D, s2_i))
    no = np.where(K, n_o, n_o - 1)
    mu_out, sd_out = mean_sd(no, np.where(K, s1_o, s1_o - D), np.where(K, s2_o, s2_o - D * D))
    return LooStats(mu_in=mu_in + c, sd_in=sd_in, mu_out=mu_out + c, sd_out=sd_out, n_out=no)


def gaussian_llr(scores: np.ndarray, mu_in: np.ndarray, sd_in: np.ndarray, mu_out: np.ndarray, sd_out: np.ndarray) -> np.ndarray:
    """Online LiRA's statistic: ``log N(s; mu_in, sd_in) - log N(s; mu_out, sd_out)`` (Carlini et al. 2022)."""
    return stats.norm.logpdf(scores, mu_in, sd_in) - stats.norm.logpdf(scores, mu_out, sd_out)


def pooled_sd(fits: dict[str, np.ndarray]) -> float:
    """One within-record sigma for both sides: the root mean of every record's in- and out-variance (NaN ignored).

    ``fits`` holds per-record ``sd_in`` and ``sd_out`` (:func:`record_fits`); NaN when no record has two scores on a side.
    """
    return float(np.sqrt(np.nanmean(np.r_[fits["sd_in"] ** 2, fits["sd_out"] ** 2]))) + 1e-12


def fixed_variance_llr(scores: np.ndarray, mu_in: np.ndarray, mu_out: np.ndarray, sd: float) -> np.ndarray:
    """Online LiRA with one fixed variance: ``log N(s; mu_in, sd) - log N(s; mu_out, sd)``, which is
    ``(mu_in - mu_out)(s - (mu_in + mu_out) / 2) / sd^2`` (the reference implementation's ``fix_variance``)."""
    return (mu_in - mu_out) * (scores - (mu_in + mu_out) / 2) / sd**2


def orientation(x: np.ndarray) -> np.ndarray:
    """+1 where ``x >= 0``, else -1: the direction a record's in-scores lie from its out-scores."""
    return np.where(x >= 0, 1.0, -1.0)


def t_quantile(n_ref: np.ndarray, q: float) -> np.ndarray:
    """``t_{n-1}^-1(q)`` for each entry of the integer array ``n_ref`` (n >= 2; +inf below).

    Looked up in a table over 0..max(n) instead of one ``t.ppf`` call per entry.
    """
    n_ref = np.asarray(n_ref).astype(np.int64)
    top = int(n_ref.max(initial=0))
    table = np.full(top + 1, np.inf)
    if top >= 2:
        table[2:] = stats.t.ppf(q, np.arange(1, top))
    return table[np.clip(n_ref, 0, None)]


def t_cut(n_ref: np.ndarray, fpr: float) -> np.ndarray:
    """Student-t predictive cut ``t_{n-1}^-1(1 - alpha) sqrt(1 + 1/n)`` for a score standardised by n others."""
    n_ref = np.asarray(n_ref, dtype=np.float64)
    with np.errstate(divide="ignore"):
        return t_quantile(n_ref, 1 - fpr) * np.sqrt(1 + 1 / n_ref)
