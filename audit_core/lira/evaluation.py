"""The evaluation of one pool at FPR alpha: every rule's TPR, its interval, its per-record FPRs (docs/methods.md §2).

:func:`evaluate_lira` reads the rules (:mod:`audit_core.lira.rules`: naive, post-processed
N(0,1) and Student-t, FPC, fixed variance, online; :mod:`audit_core.lira.per_sample`: the
per-sample average with its Richardson extrapolation), their bootstrap intervals
(:mod:`audit_core.lira.intervals`), the no-signal check (:mod:`audit_core.lira.no_signal`),
log-ROC curves and the warnings into one :class:`LiraEvaluation`; :func:`vulnerable_records`
lists the records most exposed under it. Cheap: it re-runs whenever alpha moves.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from audit_core.common.errors import InputError
from audit_core.common.limits import MIN_MODELS
from audit_core.common.roc import RocCurve, TprAtFpr, roc_curve
from audit_core.lira.cautions import few_out_scores_warning, lira_warnings, required_models, small_m_warning
from audit_core.lira.fits import t_cut
from audit_core.lira.intervals import bootstrap_intervals
from audit_core.lira.no_signal import holds_alpha, no_signal_readings
from audit_core.lira.per_sample import split_curve
from audit_core.lira.rules import Aggregations, read_rules

__all__ = ["LiraEvaluation", "evaluate_lira", "vulnerable_records"]


def _summary(values: np.ndarray) -> dict[str, float]:
    """``mean, std, p10, p90`` of ``values``."""
    v = np.asarray(values, dtype=np.float64)
    return {
        "mean": float(v.mean()),
        "std": float(v.std()),
        "p10": float(np.quantile(v, 0.1)),
        "p90": float(np.quantile(v, 0.9)),
    }


@dataclass(frozen=True)
class LiraEvaluation:
    """Every way of reporting TPR at FPR alpha from one model pool (docs/methods.md §2).

    Attributes
    ----------
    fpr : float
        alpha.
    n_models, n_samples : int
    tpr : dict[str, float]
        ``naive``, ``post_processed``, ``post_processed_t``, ``per_sample_mean`` and the
        variants ``naive_online`` (global threshold on the online likelihood ratio),
        ``post_processed_fixed_variance`` (one pooled sigma_out), ``post_processed_fpc``
        (sigma_out inflated by 1/sqrt(FPC), FPC = 1 - N/N_+, the efficient-LiRA
        correction), ``per_sample_mean_gaussian`` (TPR from the fitted in-Gaussian),
        ``per_sample_mean_empirical`` (empirical out-quantile threshold: inflated).
    tpr_ci : dict[str, tuple[float, float]]
        95 % percentile intervals from a bootstrap over records (the pooled (x, m)
        entries are not independent, so binomial intervals would be too narrow).
    per_sample_fpr : dict[str, np.ndarray]
        ``(N,)`` share of each record's out-scores flagged, per rule (``per_sample_mean``:
        the per-sample test applied leave-one-out to each out-score).
    pooled_fpr : dict[str, float]
        Share of all pooled out-scores flagged, per rule.
    per_sample_tpr : np.ndarray
        ``(N,)`` TPR of each record at its own alpha-threshold (split test: direction and
        Student-t threshold from disjoint halves of its out-scores, never from the
        counted in-score).
    fits : dict[str, np.ndarray]
        ``mu_in, sd_in, mu_out, sd_out`` per record (all models).
    naive_detail : TprAtFpr
        The pooled naive operating point (threshold, achieved FPR, n_neg...).
    thresholds : dict[str, float]
        ``naive`` (score scale), ``normal`` (Phi^-1(1 - alpha)), ``student_t`` (for the
        typical number of leave-one-out out-scores), ``per_sample_student_t`` (the
        per-sample test's cut for the typical half of the out-scores).
    curves : dict[str, RocCurve]
        Pooled ROC of the raw score (naive), of the PP score, of the online LiRA
        statistic, and the per-sample average curve (mean per-record TPR at each alpha).
    fpc : float
        1 - N/N_+ for the half-splits used.
    required_models : int
        10/alpha, rounded up to even.
    warnings : tuple[str, ...]

    Notes
    -----
    - Naive: the raw score pooled over all (x, m), one global threshold at pooled FPR alpha.
    - PP: ``f = sign(mu_in - mu_out) * (s - mu_out) / sd_out`` with leave-one-model-out
      parameters, flagged when ``f > Phi^-1(1 - alpha)`` (normal) or
      ``f > t_{n_out-1}^-1(1 - alpha) sqrt(1 + 1/n_out)`` (Student-t; n_out is the number
      of out-scores behind the estimate, which differs by one between in- and out-entries).
      The t threshold is exact for Gaussian out-scores when the direction is known. PP
      never uses the scored value itself (leave-one-out), but the spec's direction
      sign(mu_in - mu_out) shares mu_out with the standardisation, so records with no
      signal are flagged a little more often than alpha at small M (simulated, alpha =
      0.05, no signal: 0.066 at M = 16, 0.060 at M = 64, 0.055 at M = 256); the
      per-sample average below removes that by taking the two from disjoint halves.
    - Per-sample average: each record is tested against its own
      out-distribution and its TPR averaged over records, with nothing fitted on the
      score being counted (:func:`audit_core.lira.per_sample.split_tests`): the record's out-scores are split in
      two halves, the direction sign(mu_in - mu_A) compares the record's *other*
      in-scores with one half, the score is standardised by the other half (ddof = 1)
      and flagged above the Student-t predictive cut
      ``t_{n_B-1}^-1(1 - alpha) sqrt(1 + 1/n_B)``; both assignments of the halves are
      averaged. Out-scores are counted the same way, leave-one-out, which gives
      ``per_sample_fpr["per_sample_mean"]``. For Gaussian scores its FPR is exactly
      alpha at every M, and with no signal its TPR is alpha (simulated, alpha = 0.05:
      0.050 at M = 16, 64 and 256, where fitting direction and threshold on the counted
      in-score and cutting at Phi^-1 gave 0.134, 0.079, 0.063). With signal it is the
      TPR of a test that the M models can actually run, so at small M it sits below the
      known-distribution TPR and converges to it from below (exponential shifts of mean
      0.8 sd, known truth 0.236: 0.158 at M = 16, 0.217 at M = 64, 0.231 at M = 256).
      ``tpr["per_sample_mean"]`` is therefore Richardson-extrapolated from M and M/2
      models (:func:`audit_core.lira.per_sample.extrapolated_record_tpr`; bias -0.014 at M = 16, within 0.002 at
      M >= 32, still alpha with no signal; not below 16 models), and
      ``tpr["per_sample_mean_uncorrected"]`` is the plain average. Its interval is the
      bootstrap over records of the mean of the extrapolated per-record TPRs.
    - ``no_signal_tpr`` / ``holds_alpha``: every rule re-run on simulated scores without
      signal at the same M (:func:`audit_core.lira.no_signal.no_signal_readings`); a rule reading clearly above
      alpha there (:func:`audit_core.lira.no_signal.alpha_tolerance`) is flagged, and the verdict and the rules'
      table say so.
    - FPC variant: sd_out / sqrt(FPC). Within a pool where targets are drawn from the
      same records as the shadows it is conservative (FPR below alpha); it is the
      right threshold when the target was trained on a fresh draw from the population.
    """

    fpr: float
    n_models: int
    n_samples: int
    tpr: dict[str, float]
    tpr_ci: dict[str, tuple[float, float]]
    per_sample_fpr: dict[str, np.ndarray] = field(repr=False)
    pooled_fpr: dict[str, float]
    per_sample_tpr: np.ndarray = field(repr=False)
    fits: dict[str, np.ndarray] = field(repr=False)
    naive_detail: TprAtFpr
    thresholds: dict[str, float]
    curves: dict[str, RocCurve] = field(repr=False)
    fpc: float
    required_models: int
    warnings: tuple[str, ...]
    no_signal_tpr: dict[str, float] = field(default_factory=dict)
    holds_alpha: dict[str, bool] = field(default_factory=dict)
    extrapolation: dict[str, Any] = field(default_factory=dict)

    def fpr_summary(self, rule: str) -> dict[str, float]:
        """``mean, std, p10, p90`` of the per-sample FPRs under ``rule``."""
        return _summary(self.per_sample_fpr[rule])

    def to_json(self) -> dict:
        """The docs/contract.md ``lira`` JSON (keys ``n_models`` ... ``per_sample_fpr``), plus extras."""
        return {
            "n_models": self.n_models,
            "n_samples": self.n_samples,
            "fpr": self.fpr,
            "tpr": dict(self.tpr),
            "tpr_ci": {k: [float(a), float(b)] for k, (a, b) in self.tpr_ci.items()},
            "per_sample_fpr": {k: self.fpr_summary(k) for k in self.per_sample_fpr},
            "pooled_fpr": dict(self.pooled_fpr),
            "thresholds": dict(self.thresholds),
            "n_negatives_pooled": self.naive_detail.n_neg,
            "naive_supported": self.naive_detail.supported,
            "required_models": self.required_models,
            "fpc": self.fpc,
            "per_sample_mean": self.per_sample_summary(),
            "warnings": list(self.warnings),
            "no_signal_tpr": dict(self.no_signal_tpr),
            "holds_alpha": dict(self.holds_alpha),
        }

    def per_sample_summary(self) -> dict:
        """The per-sample average with its 95 % interval and the FPR its test achieves.

        ``ci_low`` / ``ci_high`` are the percentile bootstrap over records (None when the
        evaluation ran without bootstrap); ``fpr_mean`` is the mean per-record FPR of the
        same test applied leave-one-out to the out-scores (alpha when it is honest).
        """
        lo, hi = self.tpr_ci.get("per_sample_mean", (None, None))
        return {
            "tpr": self.tpr["per_sample_mean"],
            "ci_low": lo,
            "ci_high": hi,
            "interval": "95 % percentile bootstrap over records (of the extrapolated per-record TPRs), widened on both "
            "sides by the extrapolation's error allowance",
            "uncorrected_tpr": self.tpr.get("per_sample_mean_uncorrected"),
            "extrapolation": dict(self.extrapolation),
            "holds_alpha": self.holds_alpha.get("per_sample_mean"),
            "fpr_mean": self.pooled_fpr["per_sample_mean"],
            "n_records": self.n_samples,
            "test": "per-record Student-t predictive test; direction and threshold from disjoint halves of the "
            "record's out-scores, never from the counted score",
        }


def _thin(curve: RocCurve, n: int = 300) -> RocCurve:
    """Keep about ``n`` points, log-spaced in FPR, so plots stay light; AUC unchanged."""
    if curve.fpr.size <= 2 * n:
        return curve
    floor = max(1.0 / max(curve.n_neg, 1), 1e-6)
    grid = np.r_[0.0, np.logspace(np.log10(floor), 0, n)]
    idx = np.unique(np.r_[0, np.searchsorted(curve.fpr, grid, side="right") - 1, curve.fpr.size - 1])
    return RocCurve(
        fpr=curve.fpr[idx],
        tpr=curve.tpr[idx],
        thresholds=curve.thresholds[idx],
        auc=curve.auc,
        n_pos=curve.n_pos,
        n_neg=curve.n_neg,
    )


def _checked_pool(scores: np.ndarray, keep: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """``scores`` as float64 and ``keep`` as bool, checked; with the fewest out-scores of any record.

    Raises
    ------
    InputError
        Shapes differ or are not 2-D, a score is not finite, or a record has fewer than
        2 in-scores or 4 out-scores.
    """
    scores = np.asarray(scores, dtype=np.float64)
    keep = np.asarray(keep, dtype=bool)
    if scores.shape != keep.shape or scores.ndim != 2:
        raise InputError("Scores and keep-matrix must both be (models x records) and the same shape.")
    if not np.all(np.isfinite(scores)):
        raise InputError("Some LiRA scores are not finite; training probably diverged.")
    n_out_min = int((~keep).sum(0).min())
    if int(keep.sum(0).min()) < 2 or n_out_min < 4:
        raise InputError("Every record needs at least 2 in-scores and 4 out-scores for leave-one-out fits; train more models.")
    return scores, keep, n_out_min


def _curves(scores: np.ndarray, keep: np.ndarray, agg: Aggregations, online: np.ndarray) -> dict[str, RocCurve]:
    """Pooled ROC of the raw, PP and online scores, and the per-sample average curve."""
    K, OUT = keep, ~keep
    grid = np.logspace(np.log10(max(1.0 / (agg.n_out.min() * 10), 1e-4)), 0, 80)
    ps_curve = split_curve(agg.halves, keep, grid)
    return {
        "naive": _thin(roc_curve(scores.ravel(), K.ravel())),
        "post_processed": _thin(roc_curve(agg.pp.ravel(), K.ravel())),
        "naive_online": _thin(roc_curve(online.ravel(), K.ravel())),
        "per_sample_mean": RocCurve(
            fpr=np.r_[0.0, grid],
            tpr=np.r_[0.0, ps_curve],
            thresholds=np.r_[0.0, grid],  # each record's own cut: the Student-t p-value below alpha
            auc=float(np.trapezoid(np.r_[0.0, ps_curve], np.r_[0.0, grid])),
            n_pos=int(K.sum()),
            n_neg=int(OUT.sum()),
        ),
    }


def _thresholds(agg: Aggregations, keep: np.ndarray, fpr: float) -> dict[str, float]:
    """The cut of each rule: naive (score scale), normal, and Student-t for the typical reference sizes."""
    typical_n_out = int(np.median(agg.stats.n_out[~keep]))
    typical_half = int(np.median(agg.halves[0].n_ref[keep]))
    return {
        "naive": agg.naive.threshold,
        "normal": agg.z,
        "student_t": float(t_cut(np.array([typical_n_out]), fpr)[0]),
        "per_sample_student_t": float(t_cut(np.array([typical_half]), fpr)[0]),
    }


def evaluate_lira(
    scores: np.ndarray,
    keep: np.ndarray,
    *,
    fpr: float,
    n_bootstrap: int = 200,
    population: int | None = None,
    seed: int = 0,
) -> LiraEvaluation:
    """Naive, post-processed and per-sample TPR at FPR alpha, with per-sample FPRs.

    Parameters
    ----------
    scores : np.ndarray
        ``(M, N)`` LiRA scores (higher = the model is more confident in the label).
    keep : np.ndarray
        ``(M, N)`` bool keep-matrix (each record in some and out of some models; at
        least 4 out-scores per record).
    fpr : float
        alpha.
    n_bootstrap : int
        Record-bootstrap replicates for the intervals (0 disables them).
    population : int, optional
        N_+ of the finite pool for the FPC variant; defaults to N (the half-splits
        are drawn from the table itself, so FPC = 1 - (N/2)/N = 0.5).
    seed : int

    Returns
    -------
    LiraEvaluation
        Its Notes describe each rule (naive, PP, per-sample average, FPC) and its
        known small-M behaviour.
    """
    scores, keep, n_out_min = _checked_pool(scores, keep)
    M, N = scores.shape
    warnings = lira_warnings(M, fpr) if M >= MIN_MODELS else ()
    r = read_rules(scores, keep, fpr, population=population, seed=seed)
    agg = r.aggregations
    ci = bootstrap_intervals(scores, keep, r, fpr=fpr, n_bootstrap=n_bootstrap, seed=seed)
    null = no_signal_readings(M, fpr, seed=seed)
    return LiraEvaluation(
        fpr=fpr,
        n_models=M,
        n_samples=N,
        tpr=r.tpr,
        tpr_ci=ci,
        per_sample_fpr=r.per_fpr,
        pooled_fpr={k: float(v.mean()) for k, v in r.per_fpr.items()},
        per_sample_tpr=r.per_sample_tpr,
        fits=agg.fits,
        naive_detail=agg.naive,
        thresholds=_thresholds(agg, keep, fpr),
        curves=_curves(scores, keep, agg, r.variants.online),
        fpc=r.variants.fpc,
        required_models=required_models(fpr),
        warnings=tuple(warnings) + few_out_scores_warning(n_out_min, fpr) + small_m_warning(M),
        no_signal_tpr=null,
        holds_alpha=holds_alpha(null, M, fpr),
        extrapolation=r.extrapolation,
    )


def vulnerable_records(evaluation: LiraEvaluation, *, top: int = 20) -> pd.DataFrame:
    """The records most exposed at alpha: highest per-record TPR, then largest separation.

    Columns: ``row`` (0-based row of the table), ``per_sample_tpr``, ``separation``
    ((mu_in - mu_out) / sd_out), ``mu_in``, ``mu_out``, ``sd_out``,
    ``fpr_naive`` (how often the naive threshold flags this record when it is out).
    """
    f = evaluation.fits
    sep = (f["mu_in"] - f["mu_out"]) / f["sd_out"]
    table = pd.DataFrame(
        {
            "row": np.arange(evaluation.n_samples),
            "per_sample_tpr": evaluation.per_sample_tpr,
            "separation": sep,
            "mu_in": f["mu_in"],
            "mu_out": f["mu_out"],
            "sd_out": f["sd_out"],
            "fpr_naive": evaluation.per_sample_fpr["naive"],
        }
    )
    return table.sort_values(["per_sample_tpr", "separation"], ascending=False).head(top).reset_index(drop=True)
