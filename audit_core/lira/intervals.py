"""95 % intervals of every rule's TPR from a bootstrap over records (docs/methods.md §2).

The pooled (x, m) entries are not independent (a record's M scores share its parameters),
so binomial intervals would be too narrow: records are resampled instead, and the
global-threshold rules re-derive their threshold in each replicate.
"""

from __future__ import annotations

import numpy as np

from audit_core.lira.rules import RuleReadings

__all__ = ["bootstrap_intervals"]


def _bootstrap_global(values: np.ndarray, keep: np.ndarray, fpr: float, W: np.ndarray) -> np.ndarray:
    """Bootstrap TPRs of a global-threshold rule with record weights ``W (B, N)``.

    Each replicate re-derives the threshold as the weighted pooled (1 - alpha) quantile
    of the out-scores. Only the top of the sorted pool (where any replicate's threshold
    can fall) is scanned; a replicate whose threshold leaves that window is redone on
    the whole pool.
    """
    M, N = values.shape
    flat = values.ravel()
    order = np.argsort(-flat, kind="stable")
    rec_all = np.tile(np.arange(N), M)[order]
    in_all = keep.ravel()[order]
    n_out_rec = (~keep).sum(0).astype(np.float64)
    n_in_rec = keep.sum(0).astype(np.float64)
    cum_out_plain = np.cumsum(~in_all)
    limit = min(1.0, 4 * fpr + 50.0 / max(cum_out_plain[-1], 1)) * cum_out_plain[-1]
    cut = int(np.searchsorted(cum_out_plain, limit, side="right")) + 1
    out = np.empty(W.shape[0])
    rec_win, in_win = rec_all[:cut], in_all[:cut]
    total_out, total_in = W @ n_out_rec, W @ n_in_rec
    chunk = max(1, 4_000_000 // max(cut, 1))
    for start in range(0, W.shape[0], chunk):
        block = W[start : start + chunk][:, rec_win]
        cum_out = np.cumsum(np.where(in_win, 0.0, block), axis=1)
        cum_in = np.cumsum(np.where(in_win, block, 0.0), axis=1)
        for j in range(block.shape[0]):
            b = start + j
            pos = int(np.searchsorted(cum_out[j], fpr * total_out[b] + 1e-9, side="right")) - 1
            if pos < cut - 1 or cut == flat.size:
                out[b] = cum_in[j, pos] / total_in[b] if pos >= 0 else 0.0
                continue
            w = W[b][rec_all]  # threshold outside the window: whole pool
            c_out = np.cumsum(np.where(in_all, 0.0, w))
            p_full = int(np.searchsorted(c_out, fpr * total_out[b] + 1e-9, side="right")) - 1
            out[b] = np.cumsum(np.where(in_all, w, 0.0))[p_full] / total_in[b] if p_full >= 0 else 0.0
    return out


def _percentile_interval(reps: np.ndarray) -> tuple[float, float]:
    """The 2.5 % and 97.5 % quantiles of the replicates."""
    return (float(np.quantile(reps, 0.025)), float(np.quantile(reps, 0.975)))


def bootstrap_intervals(
    scores: np.ndarray, keep: np.ndarray, readings: RuleReadings, *, fpr: float, n_bootstrap: int, seed: int
) -> dict[str, tuple[float, float]]:
    """95 % percentile intervals of the TPRs from a bootstrap over records (empty when ``n_bootstrap`` is 0).

    The rules counted per record (post-processed, fixed variance, FPC) resample their
    per-record in-hits; the per-sample average the extrapolated per-record TPRs
    (``readings.corrected``), widened on both sides by the extrapolation's error allowance
    (:func:`audit_core.lira.per_sample.extrapolated_record_tpr`); the global-threshold rules (naive, naive_online,
    online_fixed_variance) re-derive their threshold in each of the first 200 replicates
    (:func:`_bootstrap_global`).
    """
    ci: dict[str, tuple[float, float]] = {}
    if n_bootstrap <= 0:
        return ci
    N = keep.shape[1]
    n_in = keep.sum(0)
    rng = np.random.default_rng(seed)
    W = rng.multinomial(N, np.full(N, 1.0 / N), size=n_bootstrap).astype(np.float64)
    hits = {**readings.aggregations.hits, **readings.variants.hits}
    for key, h in hits.items():
        ci[key] = _percentile_interval((W @ h) / (W @ n_in))
    lo, hi = _percentile_interval((W @ readings.corrected) / N)
    allowance = float(readings.extrapolation.get("error_allowance", 0.0))  # the extrapolation's own error
    ci["per_sample_mean"] = (max(lo - allowance, 0.0), min(hi + allowance, 1.0))
    global_rules = [("naive", scores), ("naive_online", readings.variants.online),
                    ("online_fixed_variance", readings.variants.online_fixed)]  # fmt: skip
    for key, vals in global_rules:
        ci[key] = _percentile_interval(_bootstrap_global(vals, keep, fpr, W[: min(n_bootstrap, 200)]))
    return ci
