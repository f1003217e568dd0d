"""The per-sample average: each record tested against its own out-scores, honestly, and extrapolated in M.

Implements the per-sample average of docs/methods.md §2: the split test (:func:`split_tests`:
direction and Student-t threshold from disjoint halves of a record's out-scores, never from
the counted score), its flags and its curve over alpha, and the Richardson extrapolation
of its per-record TPRs from M and M/2 models (:func:`extrapolated_record_tpr`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from audit_core.lira.fits import mean_sd, moments, orientation, t_quantile

__all__ = [
    "SplitTest",
    "extrapolated_record_tpr",
    "split_curve",
    "split_flags",
    "split_tests",
]

#: Random halves of the model pairs behind theta(M/2) in the Richardson extrapolation.
_EXTRAPOLATION_HALVES = 4

#: Fewest models for the extrapolation: below, the smaller pool's split test has the same 2-score halves.
_EXTRAPOLATION_MIN_MODELS = 16

#: The extrapolation's error allowance, in units of its own correction at M = 16 (scaled by 16 / M above): the
#: simulated error reached 0.9 of the correction at M = 16 and 0.35 at M = 32 (docstring of extrapolated_record_tpr).
_ALLOWANCE = 1.25


@dataclass(frozen=True)
class SplitTest:
    """One half of the per-sample test for every entry: statistic, reference size, validity.

    ``t`` is ``sign(mu_in - mu_A) (s - mu_B) / (sd_B sqrt(1 + 1/n_B))``, Student-t with
    ``n_B - 1`` degrees of freedom for every out-score (and for every in-score of a record
    without signal) when the out-scores are Gaussian.
    """

    t: np.ndarray
    n_ref: np.ndarray
    valid: np.ndarray


def split_tests(scores: np.ndarray, keep: np.ndarray) -> tuple[SplitTest, SplitTest]:
    """The two halves of the honest per-sample test (docs/methods.md §2, per-sample average).

    Each record's out-scores are dealt alternately (by model index) into two groups G0
    and G1. For the score s of model m on record x, with m itself removed from whatever
    group it belongs to:

    - direction: ``sign(mu_in - mu_A)``, the mean of x's *other* in-scores against the
      mean of group A;
    - threshold: s standardised by group B's mean and sd (ddof = 1) and compared with
      the Student-t predictive cut ``t_{n_B-1}^-1(1 - alpha) sqrt(1 + 1/n_B)``;

    once with (A, B) = (G0, G1) and once with (G1, G0). The scored value never enters its
    own direction or threshold, and the direction and the threshold come from disjoint
    out-scores, so for Gaussian out-scores the flag rate of an out-score (and of an
    in-score of a record without signal) is exactly alpha for every record and every M.
    Using all out-scores for both (as PP does) lets the direction follow the noise of
    mu_out: 0.066 instead of 0.05 at M = 16 with no signal. A half whose B has fewer than
    2 scores (an out-score of a record with 4 or 5 out-scores) is marked invalid.
    """
    K = keep
    OUT = ~keep
    c = scores.mean(0)
    D = scores - c
    rank_odd = (np.cumsum(OUT, axis=0) % 2).astype(bool)
    groups = (OUT & rank_odd, OUT & ~rank_odd)
    n_i, s1_i, _ = moments(D, K)
    Kf = K.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        mu_in = (s1_i - D * Kf) / (n_i - Kf)
    loo = []
    for G in groups:
        n, s1, s2 = moments(D, G)
        Gf = G.astype(np.float64)
        loo.append((n - Gf, s1 - D * Gf, s2 - D * D * Gf))
    halves = []
    for a, b in ((0, 1), (1, 0)):
        n_a, s1_a, _ = loo[a]
        n_b, s1_b, s2_b = loo[b]
        with np.errstate(invalid="ignore", divide="ignore"):
            direction = orientation(mu_in - s1_a / n_a)
        mu_b, sd_b = mean_sd(n_b, s1_b, s2_b)
        valid = (n_b >= 2) & (n_a >= 1)
        with np.errstate(invalid="ignore", divide="ignore"):
            t = np.where(valid, direction * (D - mu_b) / (sd_b * np.sqrt(1 + 1 / n_b)), -np.inf)
        halves.append(SplitTest(t=t, n_ref=n_b.astype(np.int64), valid=valid))
    return halves[0], halves[1]


def split_flags(halves: tuple[SplitTest, SplitTest], fpr: float) -> np.ndarray:
    """``(M, N)`` share of the valid halves that flag each entry at alpha (0, 0.5 or 1)."""
    hits = sum(((h.t > t_quantile(h.n_ref, 1 - fpr)) & h.valid).astype(np.float64) for h in halves)
    return hits / sum(h.valid.astype(np.float64) for h in halves)


def split_curve(halves: tuple[SplitTest, SplitTest], keep: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """Mean over records of the per-record TPR of the split test at each alpha of ``grid``.

    Each valid half of each in-entry carries the weight ``1 / (halves * n_in * N)``; the
    curve at alpha is the weight of the halves whose Student-t p-value is below alpha.
    """
    N = keep.shape[1]
    n_valid = sum(h.valid.astype(np.float64) for h in halves)
    weight = 1.0 / (np.maximum(n_valid, 1.0) * keep.sum(0) * N)
    p_all, w_all = [], []
    for h in halves:
        sel = h.valid & keep
        p_all.append(stats.t.sf(h.t[sel], h.n_ref[sel] - 1))
        w_all.append(np.broadcast_to(weight, keep.shape)[sel])
    p, w = np.concatenate(p_all), np.concatenate(w_all)
    order = np.argsort(p, kind="stable")
    cum = np.r_[0.0, np.cumsum(w[order])]
    return cum[np.searchsorted(p[order], grid, side="left")]


def _split_record_tpr(scores: np.ndarray, keep: np.ndarray, fpr: float) -> np.ndarray:
    """``(N,)`` per-record TPR of the split test: share of the record's in-entries it flags.

    An in-entry counts each of its valid halves equally (:func:`split_flags`); in-entries
    with no valid half (a record with only 2 out-scores) are left out, and a record with
    none at all reads NaN.
    """
    halves = split_tests(scores, keep)
    n_valid = sum((h.valid & keep).astype(np.float64) for h in halves)
    hits = sum(((h.t > t_quantile(h.n_ref, 1 - fpr)) & h.valid & keep).astype(np.float64) for h in halves)
    share = np.divide(hits, n_valid, out=np.zeros_like(hits), where=n_valid > 0)
    counted = (n_valid > 0).sum(0)
    return np.divide(share.sum(0), counted, out=np.full(counted.shape, np.nan), where=counted > 0)


def _subset_tpr(scores: np.ndarray, keep: np.ndarray, fpr: float, pairs_kept: int, rng: np.random.Generator,
                per_record: np.ndarray) -> np.ndarray:  # fmt: skip
    """``(N,)`` theta(M') per record: the split test on ``_EXTRAPOLATION_HALVES`` random subsets of whole model pairs."""
    pairs = scores.shape[0] // 2
    subsets = []
    for _ in range(_EXTRAPOLATION_HALVES):
        chosen = rng.choice(pairs, size=pairs_kept, replace=False)
        rows = np.sort(np.r_[2 * chosen, 2 * chosen + 1])
        subsets.append(_split_record_tpr(scores[rows], keep[rows], fpr))
    stacked = np.vstack(subsets)
    tested = (~np.isnan(stacked)).sum(0)
    return np.divide(np.nansum(stacked, axis=0), tested, out=per_record.astype(np.float64).copy(), where=tested > 0)


def extrapolated_record_tpr(
    scores: np.ndarray, keep: np.ndarray, per_record: np.ndarray, fpr: float, *, seed: int
) -> tuple[np.ndarray, dict[str, Any]]:
    """Richardson-extrapolated per-record TPRs of the split test, how they were made, and their error allowance.

    The split test's TPR with M models sits below the known-distribution TPR by about
    c / M (each half of the out-scores is small). With theta(M') the same average over
    random subsets of M' = 2 * floor(M / 4) models (whole complementary pairs, so
    each record keeps M'/2 in-scores; ``_EXTRAPOLATION_HALVES`` subsets drawn with
    ``seed``), ``(M theta(M) - M' theta(M')) / (M - M')`` cancels the c / M term: for
    M' = M/2 that is ``2 theta(M) - theta(M/2)``. Both terms are alpha with no signal,
    so the extrapolation is too. Returned per record (for the bootstrap over records);
    a record the smaller pools cannot test keeps its uncorrected value. Below
    ``_EXTRAPOLATION_MIN_MODELS`` the values are returned unchanged: with 6 or 4 models the
    split test's halves hold the same 2 out-scores as with 8, so there is no trend to
    extrapolate (simulated, truth 0.228: -0.132 uncorrected, -0.123 extrapolated from 6).

    Its error (``info["error_allowance"]``). What is left is the next term, of order 1/M^2,
    whose sign and size depend on the records: simulated at alpha = 5 % and M = 16 (25-80
    pools each), -0.015 to -0.018 with the self-check's pools, +0.026 with strong signal,
    -0.019 with weak, which is up to 0.9 times the correction itself (``R(M) - theta(M)``);
    at M = 32 at most 0.35 times it. The allowance is ``_ALLOWANCE`` times the correction,
    scaled by ``16 / M`` above 16 models; the interval of the per-sample average is widened by
    it on both sides (:func:`audit_core.lira.intervals.bootstrap_intervals`).
    """
    M = scores.shape[0]
    pairs = M // 2
    info: dict[str, Any] = {"method": "none", "n_models_half": None, "n_halves": 0, "tpr_m": None, "tpr_half": None,
                            "error_allowance": 0.0}  # fmt: skip
    if M < _EXTRAPOLATION_MIN_MODELS:
        return per_record, info
    m_half = 2 * (pairs // 2)
    q = _subset_tpr(scores, keep, fpr, m_half // 2, np.random.default_rng(seed), per_record)
    out = (M * per_record - m_half * q) / (M - m_half)
    correction = abs(float(np.mean(out) - np.mean(per_record)))
    info = {
        "method": f"Richardson: (M theta(M) - M' theta(M')) / (M - M'), M' = {m_half}",
        "n_models_half": m_half,
        "n_halves": _EXTRAPOLATION_HALVES,
        "tpr_m": float(np.mean(per_record)),
        "tpr_half": float(np.mean(q)),
        "error_allowance": _ALLOWANCE * correction * min(1.0, _EXTRAPOLATION_MIN_MODELS / M),
    }
    return out, info
