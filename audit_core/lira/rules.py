"""The aggregation rules: every way of turning one pool's LiRA scores into a TPR at FPR alpha (docs/methods.md §2).

- :func:`aggregate`: the four rules the audit compares (naive concatenation, post-processed
  with the N(0,1) and with the Student-t threshold, the per-sample average) and their hits;
- :func:`_add_variants`: online LiRA, online LiRA with one fixed variance, one pooled sigma_out,
  the FPC-corrected sigma_out, and the per-sample TPR from the fitted Gaussian and from the
  empirical out-quantile;
- :func:`read_rules`: all of them on one pool, the per-sample average Richardson-extrapolated.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from audit_core.common.roc import TprAtFpr, tpr_at_fpr
from audit_core.lira.fits import (
    LooStats,
    fixed_variance_llr,
    gaussian_llr,
    loo_stats,
    orientation,
    pooled_sd,
    record_fits,
    t_cut,
)
from audit_core.lira.per_sample import SplitTest, extrapolated_record_tpr, split_flags, split_tests

__all__ = ["Aggregations", "RuleReadings", "Variants", "aggregate", "rates", "read_rules"]


@dataclass(frozen=True)
class Aggregations:
    """The four aggregations on one pool (no curves, no bootstrap).

    Attributes
    ----------
    stats : LooStats
        Leave-one-model-out in/out parameters of every entry.
    fits : dict[str, np.ndarray]
        ``mu_in, sd_in, mu_out, sd_out`` per record over all models.
    pp : np.ndarray
        ``(M, N)`` post-processed score ``sign(mu_in - mu_out) (s - mu_out) / sd_out``.
    halves : (SplitTest, SplitTest)
        The per-sample split test.
    z : float
        ``Phi^-1(1 - alpha)``.
    naive : TprAtFpr
        The pooled naive operating point.
    hits, false : dict[str, np.ndarray]
        ``(N,)`` in-entries and out-entries flagged per record, per rule (``naive``,
        ``post_processed``, ``post_processed_t``, ``per_sample_mean``).
    n_in, n_out : np.ndarray
        ``(N,)`` in- and out-scores per record.
    """

    stats: LooStats
    fits: dict[str, np.ndarray]
    pp: np.ndarray
    halves: tuple[SplitTest, SplitTest]
    z: float
    naive: TprAtFpr
    hits: dict[str, np.ndarray]
    false: dict[str, np.ndarray]
    n_in: np.ndarray
    n_out: np.ndarray


def aggregate(scores: np.ndarray, keep: np.ndarray, fpr: float) -> Aggregations:
    """The four aggregations of docs/methods.md §2 (no curves, no bootstrap)."""
    K, OUT = keep, ~keep
    n_in = K.sum(0)
    n_out = OUT.sum(0)
    st = loo_stats(scores, keep)
    z = float(stats.norm.ppf(1 - fpr))
    pp = orientation(st.mu_in - st.mu_out) * (scores - st.mu_out) / st.sd_out
    t_thr = t_cut(st.n_out, fpr)
    flags_pp, flags_t = pp > z, pp > t_thr

    naive = tpr_at_fpr(scores.ravel(), K.ravel(), fpr)
    flags_naive = scores >= naive.threshold

    fits = record_fits(scores, keep)
    halves = split_tests(scores, keep)
    flags_ps = split_flags(halves, fpr)
    return Aggregations(
        stats=st,
        fits=fits,
        pp=pp,
        halves=halves,
        z=z,
        naive=naive,
        hits={
            "naive": (flags_naive & K).sum(0),
            "post_processed": (flags_pp & K).sum(0),
            "post_processed_t": (flags_t & K).sum(0),
            "per_sample_mean": np.where(K, flags_ps, 0.0).sum(0),
        },
        false={
            "naive": (flags_naive & OUT).sum(0),
            "post_processed": (flags_pp & OUT).sum(0),
            "post_processed_t": (flags_t & OUT).sum(0),
            "per_sample_mean": np.where(OUT, flags_ps, 0.0).sum(0),
        },
        n_in=n_in,
        n_out=n_out,
    )


def rates(agg: Aggregations) -> tuple[dict[str, float], dict[str, np.ndarray]]:
    """Each rule's TPR (pooled; the per-sample average: mean of per-record TPRs) and per-record FPRs."""
    n_in, n_out = agg.n_in, agg.n_out
    tpr = {k: float(v.sum() / n_in.sum()) for k, v in agg.hits.items()}
    tpr["per_sample_mean"] = float(np.mean(agg.hits["per_sample_mean"] / n_in))
    fprs = {k: v / n_out for k, v in agg.false.items()}
    return tpr, fprs


@dataclass(frozen=True)
class Variants:
    """What the variants leave for the intervals and curves.

    Attributes
    ----------
    online, online_fixed : np.ndarray
        ``(M, N)`` online likelihood-ratio statistic, with per-record and with one pooled variance.
    hits : dict[str, np.ndarray]
        ``(N,)`` per-record in-hits of the fixed-variance and FPC rules (for the bootstrap).
    fpc : float
        1 - N/N_+ for the half-splits used.
    """

    online: np.ndarray
    online_fixed: np.ndarray
    hits: dict[str, np.ndarray]
    fpc: float


def _upper_quantile(values: np.ndarray, mask: np.ndarray, q: float) -> np.ndarray:
    """Per-column linear-interpolated q-quantile of ``values[mask]`` (``(M, N)`` -> ``(N,)``)."""
    filled = np.sort(np.where(mask, values, -np.inf), axis=0)
    m = values.shape[0]
    n = mask.sum(0)
    pos = m - n + q * (n - 1)
    lo = np.floor(pos).astype(int)
    hi = np.minimum(lo + 1, m - 1)
    frac = pos - lo
    cols = np.arange(values.shape[1])
    return filled[lo, cols] * (1 - frac) + filled[hi, cols] * frac


def _add_variants(
    scores: np.ndarray,
    keep: np.ndarray,
    agg: Aggregations,
    tpr: dict[str, float],
    per_fpr: dict[str, np.ndarray],
    *,
    fpr: float,
    population: int | None,
) -> Variants:
    """Add the variants' TPRs and per-sample FPRs to ``tpr`` / ``per_fpr`` (in place, in report order).

    The variants: online LiRA (``naive_online``), online LiRA with one pooled sigma
    (``online_fixed_variance``, the reference implementation's fixed-variance variant), one pooled sigma_out
    (``post_processed_fixed_variance``), sigma_out / sqrt(FPC) (``post_processed_fpc``),
    and the per-sample TPR from the fitted in-Gaussian and from the empirical
    out-quantile (``per_sample_mean_gaussian`` / ``_empirical``).
    """
    K, OUT = keep, ~keep
    st, fits, z = agg.stats, agg.fits, agg.z
    n_in, n_out = agg.n_in, agg.n_out

    online = gaussian_llr(scores, st.mu_in, st.sd_in, st.mu_out, st.sd_out)
    on = tpr_at_fpr(online.ravel(), K.ravel(), fpr)
    flags_on = online >= on.threshold
    tpr["naive_online"] = on.tpr
    per_fpr["naive_online"] = (flags_on & OUT).sum(0) / n_out

    # Online LiRA with one fixed variance (the reference implementation's fix_variance): the per-record
    # leave-one-out means, one pooled within-record sigma for both sides; the log-likelihood ratio is then
    # (mu_in - mu_out)(s - (mu_in + mu_out) / 2) / sigma^2, thresholded globally like the online rule.
    online_fixed = fixed_variance_llr(scores, st.mu_in, st.mu_out, pooled_sd(fits))
    fv = tpr_at_fpr(online_fixed.ravel(), K.ravel(), fpr)
    tpr["online_fixed_variance"] = fv.tpr
    per_fpr["online_fixed_variance"] = ((online_fixed >= fv.threshold) & OUT).sum(0) / n_out

    sd_fixed = float(np.sqrt(np.mean(fits["sd_out"] ** 2)))
    f_fixed = orientation(st.mu_in - st.mu_out) * (scores - st.mu_out) / sd_fixed
    tpr["post_processed_fixed_variance"] = float(((f_fixed > z) & K).sum() / K.sum())
    per_fpr["post_processed_fixed_variance"] = ((f_fixed > z) & OUT).sum(0) / n_out

    n_pool = population if population is not None else scores.shape[1]
    train_size = float(keep.sum(1).mean())
    fpc = max(1.0 - train_size / n_pool, 1e-6)
    f_fpc = agg.pp * math.sqrt(fpc)
    tpr["post_processed_fpc"] = float(((f_fpc > z) & K).sum() / K.sum())
    per_fpr["post_processed_fpc"] = ((f_fpc > z) & OUT).sum(0) / n_out

    sgn = orientation(fits["mu_in"] - fits["mu_out"])
    gauss_tpr = stats.norm.cdf((sgn * (fits["mu_in"] - fits["mu_out"]) - z * fits["sd_out"]) / fits["sd_in"])
    tpr["per_sample_mean_gaussian"] = float(gauss_tpr.mean())
    oriented = sgn * scores
    tau = _upper_quantile(oriented, OUT, 1 - fpr)
    emp_hits = ((oriented > tau) & K).sum(0)
    tpr["per_sample_mean_empirical"] = float(np.mean(emp_hits / n_in))

    hits = {
        "post_processed_fixed_variance": ((f_fixed > z) & K).sum(0),
        "post_processed_fpc": ((f_fpc > z) & K).sum(0),
    }
    return Variants(online=online, online_fixed=online_fixed, hits=hits, fpc=fpc)


@dataclass(frozen=True)
class RuleReadings:
    """Every rule read on one pool (:func:`read_rules`).

    Attributes
    ----------
    aggregations : Aggregations
    variants : Variants
    tpr : dict[str, float]
        Every rule's TPR, in report order; ``per_sample_mean`` Richardson-extrapolated,
        ``per_sample_mean_uncorrected`` the plain average.
    per_fpr : dict[str, np.ndarray]
        ``(N,)`` per-record FPR per rule.
    per_sample_tpr, corrected : np.ndarray
        ``(N,)`` plain and extrapolated per-record TPRs of the per-sample average.
    extrapolation : dict
        How the extrapolation was made (:func:`audit_core.lira.per_sample.extrapolated_record_tpr`).
    """

    aggregations: Aggregations
    variants: Variants
    tpr: dict[str, float]
    per_fpr: dict[str, np.ndarray]
    per_sample_tpr: np.ndarray
    corrected: np.ndarray
    extrapolation: dict[str, Any]


def read_rules(scores: np.ndarray, keep: np.ndarray, fpr: float, *, population: int | None, seed: int) -> RuleReadings:
    """Every rule's TPR on one pool: the four aggregations, the variants, the extrapolated per-sample average.

    ``tpr["per_sample_mean"]`` is the Richardson-extrapolated average
    (:func:`audit_core.lira.per_sample.extrapolated_record_tpr`, halves drawn with ``seed``) and
    ``tpr["per_sample_mean_uncorrected"]`` the plain one; ``per_sample_tpr`` holds the
    plain per-record TPRs and ``corrected`` the extrapolated ones (for the bootstrap).
    """
    agg = aggregate(scores, keep, fpr)
    tpr, per_fpr = rates(agg)
    variants = _add_variants(scores, keep, agg, tpr, per_fpr, fpr=fpr, population=population)
    per_sample_tpr = agg.hits["per_sample_mean"] / agg.n_in
    corrected, info = extrapolated_record_tpr(scores, keep, per_sample_tpr, fpr, seed=seed)
    tpr["per_sample_mean_uncorrected"] = tpr["per_sample_mean"]
    tpr["per_sample_mean"] = float(np.mean(corrected))
    return RuleReadings(
        aggregations=agg,
        variants=variants,
        tpr=tpr,
        per_fpr=per_fpr,
        per_sample_tpr=per_sample_tpr,
        corrected=corrected,
        extrapolation=info,
    )
