"""Reliable low-FPR evaluation of LiRA: aggregation, per-sample calibration, FPC.

Implements docs/methods.md §2. The heavy part, :func:`train_pool`, trains M target/shadow
models as one batched computation (:mod:`audit_core.lira.training`) and keeps the
``(M, N)`` matrix of LiRA scores ``s = log(p_y / (1 - p_y))`` with the keep-matrix that
says which record trained which model. Everything else is cheap and re-runs when the
FPR alpha changes:

- :func:`evaluate_lira`: naive concatenation, post-processed concatenation (PP) with the
  N(0,1) and the Student-t threshold, the per-sample average (a per-record Student-t test
  that never fits its direction or threshold on the score it counts; the empirical-
  quantile version beside it), plus the online-LiRA, fixed-variance and FPC-corrected variants; the
  distribution of per-sample FPRs; bootstrap-over-records intervals; log-ROC curves.
- :func:`models_sweep`: the what-if "TPR at alpha as M grows", subsampling whole
  complementary pairs of models from the trained pool.
- :func:`fpc_simulation` / :func:`fpc_sweep`: the Gaussian simulation of the
  finite-population correction.

Every leave-one-model-out estimate uses, for the score of model m on record x, only the
other models' scores on x, so a score is never standardised with itself.
"""

from __future__ import annotations

import functools
import math
import time
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from audit_core.common.errors import InputError
from audit_core.common.limits import MIN_MODELS
from audit_core.common.privacy_bound import epsilon_bound_json, target_model_scores
from audit_core.common.roc import RocCurve, TprAtFpr, roc_curve, tpr_at_fpr
from audit_core.common.runtime import ProgressFn, as_progress, sub_progress
from audit_core.lira.batched_models import BatchedModels
from audit_core.lira.design import Design, prepare_design
from audit_core.lira.keep_matrix import balanced_keep_matrix
from audit_core.lira.training import TrainingDivergedError, TrainOptions, train_models

SD_FLOOR = 1e-4


def required_models(fpr: float) -> int:
    """Models needed so that every record has ``>= 10/alpha`` scores (docs/methods.md §2), even.

    >>> required_models(0.01), required_models(0.05)
    (1000, 200)
    """
    m = math.ceil(10.0 / fpr - 1e-9)
    return m + (m % 2)


def lira_warnings(n_models: int, fpr: float) -> tuple[str, ...]:
    """Plain sentences for settings that work but cannot be read record by record (too few models for alpha).

    The settings themselves are checked once, by their knobs (audit_core.lira.spec).
    """
    need = required_models(fpr)
    if n_models < need:
        return (
            f"With M = {n_models} models each record has only {n_models // 2} out-scores, so a "
            f"per-record FPR of {fpr:g} cannot be checked record by record: that needs "
            f"M >= 10/alpha = {need} models. The per-record numbers below rest on the Gaussian "
            "fit; read them as estimates.",
        )
    return ()


# --------------------------------------------------------------------------- training


@dataclass(frozen=True)
class ModelPool:
    """The trained pool: LiRA scores of every model on every record.

    Attributes
    ----------
    scores : np.ndarray
        ``(M, N)`` float64 logit-scaled confidences on the true label.
    keep : np.ndarray
        ``(M, N)`` bool, True where record x trained model m. Rows come in
        complementary pairs (2k, 2k+1).
    model : str
    target : str
    classes : tuple[str, ...]
    n_features : int
    train_accuracy, test_accuracy : np.ndarray
        ``(M,)`` accuracy of each model on its own half and on the other half.
    seconds : float
        Wall time of the batched training.
    """

    scores: np.ndarray = field(repr=False)
    keep: np.ndarray = field(repr=False)
    model: str
    target: str
    classes: tuple[str, ...]
    n_features: int
    train_accuracy: np.ndarray = field(repr=False)
    test_accuracy: np.ndarray = field(repr=False)
    seconds: float

    @property
    def n_models(self) -> int:
        return int(self.scores.shape[0])

    @property
    def n_samples(self) -> int:
        return int(self.scores.shape[1])


def train_pool(
    df: pd.DataFrame,
    *,
    target: str,
    model: str = "logistic",
    n_models: int = 16,
    seed: int = 0,
    device=None,
    progress: ProgressFn | None = None,
    client=None,
    options: TrainOptions = TrainOptions(),
) -> ModelPool:
    """Train M models on balanced random halves of ``df`` and score every record.

    Parameters
    ----------
    df : pandas.DataFrame
        The data set D (N_+ records) of docs/methods.md §2.
    target : str
        Class column.
    model : {"logistic", "mlp"}
    n_models : int
        M, even, at least ``MIN_MODELS``.
    seed : int
    device : torch.device, optional
    progress : callable, optional
    client : distributed.Client, optional
        Train the M models in batches on this Dask cluster (same keep-matrix, same
        models: :func:`audit_core.lira.training.train_models`); None: in this process.
    options : TrainOptions
        How the models are trained (:class:`audit_core.lira.training.TrainOptions`: MLP size,
        epochs, learning rate...); the audit uses the defaults.

    Returns
    -------
    ModelPool

    Raises
    ------
    InputError
        Bad target, table or settings; ``TrainingDivergedError`` (a subclass) when
        training produces a non-finite loss.
    """
    report = as_progress(progress)
    report(0.0, "Encoding the table")
    design = prepare_design(df, target=target)
    keep = balanced_keep_matrix(len(design.y), n_models=n_models, seed=seed)
    models, seconds = _train_timed(
        design, keep, kind=model, seed=seed, device=device, progress=progress, client=client, options=options
    )
    report(0.97, "Scoring every record with every model")
    pool = _score_pool(models, design, keep, model=model, target=target, seconds=seconds)
    report(1.0, "Done")
    return pool


def _train_timed(
    design: Design, keep: np.ndarray, *, kind, seed: int, device, progress: ProgressFn | None, client, options: TrainOptions
) -> tuple[BatchedModels, float]:
    """Train the M models of ``keep`` on ``design`` (progress 0.02 to 0.97); return them and the wall time."""
    t0 = time.perf_counter()
    models = train_models(
        design.X,
        design.y,
        keep,
        kind=kind,
        n_classes=design.n_classes,
        seed=seed,
        device=device,
        progress=sub_progress(progress, 0.02, 0.97),
        client=client,
        options=options,
    )
    return models, time.perf_counter() - t0


def _score_pool(models: BatchedModels, design: Design, keep: np.ndarray, *, model: str, target: str, seconds: float) -> ModelPool:
    """Score every record with every trained model, and measure each model on its own half and on the other."""
    scores = models.scores(design.X, design.y)
    if not np.all(np.isfinite(scores)):
        raise TrainingDivergedError("Training produced non-finite scores; lower the learning rate or check the features.")
    correct = models.predict(design.X) == design.y[None, :]
    train_acc = (correct & keep).sum(1) / keep.sum(1)
    test_acc = (correct & ~keep).sum(1) / (~keep).sum(1)
    return ModelPool(
        scores=scores,
        keep=keep,
        model=model,
        target=target,
        classes=design.classes,
        n_features=design.X.shape[1],
        train_accuracy=train_acc,
        test_accuracy=test_acc,
        seconds=seconds,
    )


# --------------------------------------------------------------------------- statistics


@dataclass(frozen=True)
class _Stats:
    """Per-entry leave-one-model-out Gaussian parameters, each ``(M, N)``."""

    mu_in: np.ndarray
    sd_in: np.ndarray
    mu_out: np.ndarray
    sd_out: np.ndarray
    n_out: np.ndarray


def _moments(D: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n = mask.sum(0).astype(np.float64)
    s1 = np.where(mask, D, 0.0).sum(0)
    s2 = np.where(mask, D * D, 0.0).sum(0)
    return n, s1, s2


def _mean_sd(n, s1, s2) -> tuple[np.ndarray, np.ndarray]:
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = s1 / n
        var = (s2 - s1 * s1 / n) / (n - 1)
    return mean, np.sqrt(np.maximum(var, SD_FLOOR**2))


def record_fits(scores: np.ndarray, keep: np.ndarray) -> dict[str, np.ndarray]:
    """Per-record Gaussian fits over all models: ``mu_in, sd_in, mu_out, sd_out`` (ddof = 1)."""
    c = scores.mean(0)
    D = scores - c
    mi, si = _mean_sd(*_moments(D, keep))
    mo, so = _mean_sd(*_moments(D, ~keep))
    return {"mu_in": mi + c, "sd_in": si, "mu_out": mo + c, "sd_out": so}


def loo_stats(scores: np.ndarray, keep: np.ndarray) -> _Stats:
    """Leave-one-model-out in/out Gaussian parameters for every entry (docs/methods.md §2).

    For the score of model m on record x, the in- and out-parameters of x are estimated
    from the other M - 1 models only (the side m belongs to loses one score).
    """
    c = scores.mean(0)
    D = scores - c
    n_i, s1_i, s2_i = _moments(D, keep)
    n_o, s1_o, s2_o = _moments(D, ~keep)
    K = keep
    # in-side parameters: drop m when m is in
    ni = np.where(K, n_i - 1, n_i)
    mu_in, sd_in = _mean_sd(ni, np.where(K, s1_i - D, s1_i), np.where(K, s2_i - D * D, s2_i))
    no = np.where(K, n_o, n_o - 1)
    mu_out, sd_out = _mean_sd(no, np.where(K, s1_o, s1_o - D), np.where(K, s2_o, s2_o - D * D))
    return _Stats(mu_in=mu_in + c, sd_in=sd_in, mu_out=mu_out + c, sd_out=sd_out, n_out=no)


def gaussian_llr(scores: np.ndarray, mu_in, sd_in, mu_out, sd_out) -> np.ndarray:
    """Online LiRA's statistic: ``log N(s; mu_in, sd_in) - log N(s; mu_out, sd_out)`` (Carlini et al. 2022)."""
    return stats.norm.logpdf(scores, mu_in, sd_in) - stats.norm.logpdf(scores, mu_out, sd_out)


def pooled_sd(fits: dict[str, np.ndarray]) -> float:
    """One within-record sigma for both sides: the root mean of every record's in- and out-variance (NaN ignored).

    ``fits`` holds per-record ``sd_in`` and ``sd_out`` (:func:`record_fits`); NaN when no record has two scores on a side.
    """
    return float(np.sqrt(np.nanmean(np.r_[fits["sd_in"] ** 2, fits["sd_out"] ** 2]))) + 1e-12


def fixed_variance_llr(scores: np.ndarray, mu_in, mu_out, sd: float) -> np.ndarray:
    """Online LiRA with one fixed variance: ``log N(s; mu_in, sd) - log N(s; mu_out, sd)``, which is
    ``(mu_in - mu_out)(s - (mu_in + mu_out) / 2) / sd^2`` (the reference implementation's ``fix_variance``)."""
    return (mu_in - mu_out) * (scores - (mu_in + mu_out) / 2) / sd**2


def _sign(x: np.ndarray) -> np.ndarray:
    return np.where(x >= 0, 1.0, -1.0)


def _summary(values: np.ndarray) -> dict[str, float]:
    v = np.asarray(values, dtype=np.float64)
    return {
        "mean": float(v.mean()),
        "std": float(v.std()),
        "p10": float(np.quantile(v, 0.1)),
        "p90": float(np.quantile(v, 0.9)),
    }


def _t_quantile(n_ref: np.ndarray, q: float) -> np.ndarray:
    """``t_{n-1}^-1(q)`` for each entry of the integer array ``n_ref`` (n >= 2; +inf below).

    Looked up in a table over 0..max(n) instead of one ``t.ppf`` call per entry.
    """
    n_ref = np.asarray(n_ref).astype(np.int64)
    top = int(n_ref.max(initial=0))
    table = np.full(top + 1, np.inf)
    if top >= 2:
        table[2:] = stats.t.ppf(q, np.arange(1, top))
    return table[np.clip(n_ref, 0, None)]


def _t_cut(n_ref: np.ndarray, fpr: float) -> np.ndarray:
    """Student-t predictive cut ``t_{n-1}^-1(1 - alpha) sqrt(1 + 1/n)`` for a score standardised by n others."""
    n_ref = np.asarray(n_ref, dtype=np.float64)
    with np.errstate(divide="ignore"):
        return _t_quantile(n_ref, 1 - fpr) * np.sqrt(1 + 1 / n_ref)


@dataclass(frozen=True)
class _SplitTest:
    """One half of the per-sample test for every entry: statistic, reference size, validity.

    ``t`` is ``sign(mu_in - mu_A) (s - mu_B) / (sd_B sqrt(1 + 1/n_B))``, Student-t with
    ``n_B - 1`` degrees of freedom for every out-score (and for every in-score of a record
    without signal) when the out-scores are Gaussian.
    """

    t: np.ndarray
    n_ref: np.ndarray
    valid: np.ndarray


def _split_tests(scores: np.ndarray, keep: np.ndarray) -> tuple[_SplitTest, _SplitTest]:
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
    n_i, s1_i, _ = _moments(D, K)
    Kf = K.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        mu_in = (s1_i - D * Kf) / (n_i - Kf)
    loo = []
    for G in groups:
        n, s1, s2 = _moments(D, G)
        Gf = G.astype(np.float64)
        loo.append((n - Gf, s1 - D * Gf, s2 - D * D * Gf))
    halves = []
    for a, b in ((0, 1), (1, 0)):
        n_a, s1_a, _ = loo[a]
        n_b, s1_b, s2_b = loo[b]
        with np.errstate(invalid="ignore", divide="ignore"):
            direction = _sign(mu_in - s1_a / n_a)
        mu_b, sd_b = _mean_sd(n_b, s1_b, s2_b)
        valid = (n_b >= 2) & (n_a >= 1)
        with np.errstate(invalid="ignore", divide="ignore"):
            t = np.where(valid, direction * (D - mu_b) / (sd_b * np.sqrt(1 + 1 / n_b)), -np.inf)
        halves.append(_SplitTest(t=t, n_ref=n_b.astype(np.int64), valid=valid))
    return halves[0], halves[1]


def _split_flags(halves: tuple[_SplitTest, _SplitTest], fpr: float) -> np.ndarray:
    """``(M, N)`` share of the valid halves that flag each entry at alpha (0, 0.5 or 1)."""
    hits = sum(((h.t > _t_quantile(h.n_ref, 1 - fpr)) & h.valid).astype(np.float64) for h in halves)
    return hits / sum(h.valid.astype(np.float64) for h in halves)


def _split_curve(halves: tuple[_SplitTest, _SplitTest], keep: np.ndarray, grid: np.ndarray) -> np.ndarray:
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


#: Random halves of the model pairs behind theta(M/2) in the Richardson extrapolation.
EXTRAPOLATION_HALVES = 4


def _split_record_tpr(scores: np.ndarray, keep: np.ndarray, fpr: float) -> np.ndarray:
    """``(N,)`` per-record TPR of the split test: share of the record's in-entries it flags.

    An in-entry counts each of its valid halves equally (:func:`_split_flags`); in-entries
    with no valid half (a record with only 2 out-scores) are left out, and a record with
    none at all reads NaN.
    """
    halves = _split_tests(scores, keep)
    n_valid = sum((h.valid & keep).astype(np.float64) for h in halves)
    hits = sum(((h.t > _t_quantile(h.n_ref, 1 - fpr)) & h.valid & keep).astype(np.float64) for h in halves)
    share = np.divide(hits, n_valid, out=np.zeros_like(hits), where=n_valid > 0)
    counted = (n_valid > 0).sum(0)
    return np.divide(share.sum(0), counted, out=np.full(counted.shape, np.nan), where=counted > 0)


#: Fewest models for the extrapolation: below, the smaller pool's split test has the same 2-score halves.
EXTRAPOLATION_MIN_MODELS = 16


def _extrapolated_record_tpr(
    scores: np.ndarray, keep: np.ndarray, per_record: np.ndarray, fpr: float, *, seed: int
) -> tuple[np.ndarray, dict]:
    """Richardson-extrapolated per-record TPRs of the split test, and how they were made.

    The split test's TPR with M models sits below the known-distribution TPR by about
    c / M (each half of the out-scores is small). With theta(M') the same average over
    random subsets of M' = 2 * floor(M / 4) models (whole complementary pairs, so
    each record keeps M'/2 in-scores; ``EXTRAPOLATION_HALVES`` subsets drawn with
    ``seed``), ``(M theta(M) - M' theta(M')) / (M - M')`` cancels the c / M term: for
    M' = M/2 that is ``2 theta(M) - theta(M/2)``. Both terms are alpha with no signal,
    so the extrapolation is too. Returned per record (for the bootstrap over records);
    a record the smaller pools cannot test keeps its uncorrected value. Below
    ``EXTRAPOLATION_MIN_MODELS`` the values are returned unchanged: with 6 or 4 models the
    split test's halves hold the same 2 out-scores as with 8, so there is no trend to
    extrapolate (simulated, truth 0.228: -0.132 uncorrected, -0.123 extrapolated from 6).
    """
    M = scores.shape[0]
    pairs = M // 2
    info: dict[str, Any] = {"method": "none", "n_models_half": None, "n_halves": 0, "tpr_m": None, "tpr_half": None}
    if M < EXTRAPOLATION_MIN_MODELS:
        return per_record, info
    m_half = 2 * (pairs // 2)
    rng = np.random.default_rng(seed)
    halves = []
    for _ in range(EXTRAPOLATION_HALVES):
        chosen = rng.choice(pairs, size=m_half // 2, replace=False)
        rows = np.sort(np.r_[2 * chosen, 2 * chosen + 1])
        halves.append(_split_record_tpr(scores[rows], keep[rows], fpr))
    stacked = np.vstack(halves)
    tested = (~np.isnan(stacked)).sum(0)
    q = np.divide(np.nansum(stacked, axis=0), tested, out=per_record.astype(np.float64).copy(), where=tested > 0)
    out = (M * per_record - m_half * q) / (M - m_half)
    info = {
        "method": f"Richardson: (M theta(M) - M' theta(M')) / (M - M'), M' = {m_half}",
        "n_models_half": m_half,
        "n_halves": EXTRAPOLATION_HALVES,
        "tpr_m": float(np.mean(per_record)),
        "tpr_half": float(np.mean(q)),
    }
    return out, info


def _core(scores: np.ndarray, keep: np.ndarray, fpr: float) -> dict:
    """The four aggregations of docs/methods.md §2 (no curves, no bootstrap)."""
    K, OUT = keep, ~keep
    n_in = K.sum(0)
    n_out = OUT.sum(0)
    st = loo_stats(scores, keep)
    z = float(stats.norm.ppf(1 - fpr))
    pp = _sign(st.mu_in - st.mu_out) * (scores - st.mu_out) / st.sd_out
    t_thr = _t_cut(st.n_out, fpr)
    flags_pp, flags_t = pp > z, pp > t_thr

    naive = tpr_at_fpr(scores.ravel(), K.ravel(), fpr)
    flags_naive = scores >= naive.threshold

    fits = record_fits(scores, keep)
    halves = _split_tests(scores, keep)
    flags_ps = _split_flags(halves, fpr)
    return {
        "stats": st,
        "fits": fits,
        "pp": pp,
        "halves": halves,
        "z": z,
        "t_thr": t_thr,
        "naive": naive,
        "hits": {
            "naive": (flags_naive & K).sum(0),
            "post_processed": (flags_pp & K).sum(0),
            "post_processed_t": (flags_t & K).sum(0),
            "per_sample_mean": np.where(K, flags_ps, 0.0).sum(0),
        },
        "false": {
            "naive": (flags_naive & OUT).sum(0),
            "post_processed": (flags_pp & OUT).sum(0),
            "post_processed_t": (flags_t & OUT).sum(0),
            "per_sample_mean": np.where(OUT, flags_ps, 0.0).sum(0),
        },
        "n_in": n_in,
        "n_out": n_out,
    }


def _rates(core: dict) -> tuple[dict[str, float], dict[str, np.ndarray]]:
    n_in, n_out = core["n_in"], core["n_out"]
    tpr = {k: float(v.sum() / n_in.sum()) for k, v in core["hits"].items()}
    tpr["per_sample_mean"] = float(np.mean(core["hits"]["per_sample_mean"] / n_in))
    fprs = {k: v / n_out for k, v in core["false"].items()}
    return tpr, fprs


# --------------------------------------------------------------------------- evaluation


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
      score being counted (:func:`_split_tests`): the record's out-scores are split in
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
      models (:func:`_extrapolated_record_tpr`; bias -0.014 at M = 16, within 0.002 at
      M >= 32, still alpha with no signal; not below 16 models), and
      ``tpr["per_sample_mean_uncorrected"]`` is the plain average. Its interval is the
      bootstrap over records of the mean of the extrapolated per-record TPRs.
    - ``no_signal_tpr`` / ``holds_alpha``: every rule re-run on simulated scores without
      signal at the same M (:func:`no_signal_readings`); a rule reading clearly above
      alpha there (:func:`alpha_tolerance`) is flagged, and the verdict and the rules'
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
    extrapolation: dict = field(default_factory=dict)

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
            "interval": "95 % percentile bootstrap over records (of the extrapolated per-record TPRs)",
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


def _add_variants(
    scores: np.ndarray,
    keep: np.ndarray,
    core: dict,
    tpr: dict[str, float],
    per_fpr: dict[str, np.ndarray],
    *,
    fpr: float,
    population: int | None,
) -> tuple[np.ndarray, dict[str, np.ndarray], float]:
    """Add the variants' TPRs and per-sample FPRs to ``tpr`` / ``per_fpr`` (in place, in report order).

    The variants: online LiRA (``naive_online``), online LiRA with one pooled sigma
    (``online_fixed_variance``, the reference implementation's fixed-variance variant), one pooled sigma_out
    (``post_processed_fixed_variance``), sigma_out / sqrt(FPC) (``post_processed_fpc``),
    and the per-sample TPR from the fitted in-Gaussian and from the empirical
    out-quantile (``per_sample_mean_gaussian`` / ``_empirical``).

    Returns ``(online, hits, fpc)``: the online likelihood-ratio statistic ``(M, N)``,
    the per-record in-hits ``(N,)`` of the fixed-variance and FPC rules (for the
    bootstrap) and the FPC.
    """
    K, OUT = keep, ~keep
    st, fits, z = core["stats"], core["fits"], core["z"]
    n_in, n_out = core["n_in"], core["n_out"]

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
    core["online_fixed"] = online_fixed

    sd_fixed = float(np.sqrt(np.mean(fits["sd_out"] ** 2)))
    f_fixed = _sign(st.mu_in - st.mu_out) * (scores - st.mu_out) / sd_fixed
    tpr["post_processed_fixed_variance"] = float(((f_fixed > z) & K).sum() / K.sum())
    per_fpr["post_processed_fixed_variance"] = ((f_fixed > z) & OUT).sum(0) / n_out

    n_pool = population if population is not None else scores.shape[1]
    train_size = float(keep.sum(1).mean())
    fpc = max(1.0 - train_size / n_pool, 1e-6)
    f_fpc = core["pp"] * math.sqrt(fpc)
    tpr["post_processed_fpc"] = float(((f_fpc > z) & K).sum() / K.sum())
    per_fpr["post_processed_fpc"] = ((f_fpc > z) & OUT).sum(0) / n_out

    sgn = _sign(fits["mu_in"] - fits["mu_out"])
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
    return online, hits, fpc


def _percentile_interval(reps: np.ndarray) -> tuple[float, float]:
    return (float(np.quantile(reps, 0.025)), float(np.quantile(reps, 0.975)))


def _bootstrap_intervals(
    scores: np.ndarray,
    keep: np.ndarray,
    online: np.ndarray,
    hits: dict[str, np.ndarray],
    per_sample_tpr: np.ndarray,
    *,
    fpr: float,
    n_bootstrap: int,
    seed: int,
    online_fixed: np.ndarray | None = None,
) -> dict[str, tuple[float, float]]:
    """95 % percentile intervals of the TPRs from a bootstrap over records (empty when ``n_bootstrap`` is 0).

    ``hits`` holds each rule's per-record in-hits; the global-threshold rules (naive,
    naive_online) re-derive their threshold in each of the first 200 replicates
    (:func:`_bootstrap_global`).
    """
    ci: dict[str, tuple[float, float]] = {}
    if n_bootstrap <= 0:
        return ci
    N = keep.shape[1]
    n_in = keep.sum(0)
    rng = np.random.default_rng(seed)
    W = rng.multinomial(N, np.full(N, 1.0 / N), size=n_bootstrap).astype(np.float64)
    for key, h in hits.items():
        ci[key] = _percentile_interval((W @ h) / (W @ n_in))
    ci["per_sample_mean"] = _percentile_interval((W @ per_sample_tpr) / N)
    global_rules = [("naive", scores), ("naive_online", online)]
    if online_fixed is not None:
        global_rules.append(("online_fixed_variance", online_fixed))
    for key, vals in global_rules:
        ci[key] = _percentile_interval(_bootstrap_global(vals, keep, fpr, W[: min(n_bootstrap, 200)]))
    return ci


def _curves(scores: np.ndarray, keep: np.ndarray, core: dict, online: np.ndarray) -> dict[str, RocCurve]:
    """Pooled ROC of the raw, PP and online scores, and the per-sample average curve."""
    K, OUT = keep, ~keep
    grid = np.logspace(np.log10(max(1.0 / (core["n_out"].min() * 10), 1e-4)), 0, 80)
    ps_curve = _split_curve(core["halves"], keep, grid)
    return {
        "naive": _thin(roc_curve(scores.ravel(), K.ravel())),
        "post_processed": _thin(roc_curve(core["pp"].ravel(), K.ravel())),
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


def _thresholds(core: dict, keep: np.ndarray, fpr: float) -> dict[str, float]:
    """The cut of each rule: naive (score scale), normal, and Student-t for the typical reference sizes."""
    typical_n_out = int(np.median(core["stats"].n_out[~keep]))
    typical_half = int(np.median(core["halves"][0].n_ref[keep]))
    return {
        "naive": core["naive"].threshold,
        "normal": core["z"],
        "student_t": float(_t_cut(np.array([typical_n_out]), fpr)[0]),
        "per_sample_student_t": float(_t_cut(np.array([typical_half]), fpr)[0]),
    }


def _few_out_scores_warning(n_out_min: int, fpr: float) -> tuple[str, ...]:
    """The warning when the empirical per-record threshold rests on too few out-scores (else none)."""
    if n_out_min > 1.0 / fpr:
        return ()
    return (
        f"The empirical per-record threshold uses only {n_out_min} out-scores, so its '{fpr:g}' "
        f"quantile really sits near 1/{n_out_min}: the empirical per-sample TPR is inflated; "
        "use the Gaussian one.",
    )


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
    r = _rules(scores, keep, fpr, population=population, seed=seed)
    core, tpr, per_fpr = r["core"], r["tpr"], r["per_fpr"]
    pooled_fpr = {k: float(v.mean()) for k, v in per_fpr.items()}
    hits = {**core["hits"], **r["variant_hits"]}
    ci = _bootstrap_intervals(
        scores, keep, r["online"], hits, r["corrected"], fpr=fpr, n_bootstrap=n_bootstrap, seed=seed,
        online_fixed=core.get("online_fixed"),
    )
    null = no_signal_readings(M, fpr, seed=seed)
    holds = {k: k in EXACT_RULES or bool(v <= fpr + alpha_tolerance(M, fpr)) for k, v in null.items()}
    return LiraEvaluation(
        fpr=fpr,
        n_models=M,
        n_samples=N,
        tpr=tpr,
        tpr_ci=ci,
        per_sample_fpr=per_fpr,
        pooled_fpr=pooled_fpr,
        per_sample_tpr=r["per_sample_tpr"],
        fits=core["fits"],
        naive_detail=core["naive"],
        thresholds=_thresholds(core, keep, fpr),
        curves=_curves(scores, keep, core, r["online"]),
        fpc=r["fpc"],
        required_models=required_models(fpr),
        warnings=tuple(warnings)
        + _few_out_scores_warning(n_out_min, fpr)
        + _small_m_warning(M),
        no_signal_tpr=null,
        holds_alpha=holds,
        extrapolation=r["extrapolation"],
    )


def _rules(scores: np.ndarray, keep: np.ndarray, fpr: float, *, population: int | None, seed: int) -> dict:
    """Every rule's TPR on one pool: the four aggregations, the variants, the extrapolated per-sample average.

    ``tpr["per_sample_mean"]`` is the Richardson-extrapolated average
    (:func:`_extrapolated_record_tpr`, halves drawn with ``seed``) and
    ``tpr["per_sample_mean_uncorrected"]`` the plain one; ``per_sample_tpr`` holds the
    plain per-record TPRs and ``corrected`` the extrapolated ones (for the bootstrap).
    """
    core = _core(scores, keep, fpr)
    tpr, per_fpr = _rates(core)
    online, variant_hits, fpc = _add_variants(scores, keep, core, tpr, per_fpr, fpr=fpr, population=population)
    per_sample_tpr = core["hits"]["per_sample_mean"] / core["n_in"]
    corrected, info = _extrapolated_record_tpr(scores, keep, per_sample_tpr, fpr, seed=seed)
    tpr["per_sample_mean_uncorrected"] = tpr["per_sample_mean"]
    tpr["per_sample_mean"] = float(np.mean(corrected))
    return {
        "core": core,
        "tpr": tpr,
        "per_fpr": per_fpr,
        "online": online,
        "variant_hits": variant_hits,
        "fpc": fpc,
        "per_sample_tpr": per_sample_tpr,
        "corrected": corrected,
        "extrapolation": info,
    }


#: Rules whose FPR is alpha by construction for Gaussian out-scores at every M (the split test).
EXACT_RULES = ("per_sample_mean", "per_sample_mean_uncorrected")


def _null_records(n_models: int) -> int:
    """Records of the no-signal pool: about 600,000 scores, 2,000 to 20,000 records."""
    return min(20_000, max(2_000, 600_000 // n_models))


def alpha_tolerance(n_models: int, fpr: float) -> float:
    """How far above alpha a rule's no-signal reading may sit and still count as holding alpha.

    10 % of alpha plus two standard errors of the simulation itself (a count over the
    no-signal pool's in-scores, with a design effect of 2 for the records' shared
    parameters). At alpha = 0.05: 0.057 at M = 16 (the post-processed Student-t rule reads
    0.067 there, fails) and 0.057 at M = 64 (0.059, fails), 0.057 at M = 256 (0.055, holds).
    """
    m = max(n_models - n_models % 2, MIN_MODELS)
    entries = _null_records(m) * m / 2
    return 0.1 * fpr + 2 * 2 * math.sqrt(fpr * (1 - fpr) / entries)


def no_signal_readings(n_models: int, fpr: float, *, seed: int = 0) -> dict[str, float]:
    """:func:`_no_signal_readings`, remembered per ``(n_models, fpr, seed)`` (a fresh dict each call)."""
    return dict(_no_signal_readings(n_models, fpr, seed))


@functools.lru_cache(maxsize=64)
def _no_signal_readings(n_models: int, fpr: float, seed: int) -> tuple[tuple[str, float], ...]:
    """Every rule's TPR at alpha on simulated scores with no membership signal, at this M.

    Gaussian scores whose in- and out-scores share one distribution per record
    (heterogeneous records: means N(0, 2^2), sds U(0.3, 2)), on a balanced keep-matrix of
    ``n_models`` models and 2,000-20,000 records (about 600,000 scores). A rule that holds
    alpha reads alpha here (the per-sample average exactly, in expectation); one that
    reads clearly more (:func:`alpha_tolerance`) overstates the exposure at this M.
    Seeded: the same M, alpha and seed give the same readings.
    """
    m = max(n_models - n_models % 2, MIN_MODELS)
    n = _null_records(m)
    keep = balanced_keep_matrix(n, n_models=m, seed=seed)
    rng = np.random.default_rng(seed)
    scores = rng.normal(rng.normal(0.0, 2.0, n), rng.uniform(0.3, 2.0, n), size=(m, n))
    return tuple(_rules(scores, keep, fpr, population=None, seed=seed)["tpr"].items())


def _small_m_warning(n_models: int) -> tuple[str, ...]:
    """The warning that the per-sample average stays biased low below 16 models (else none)."""
    if n_models >= 16:
        return ()
    return (
        f"With M = {n_models} the per-sample average stays a lower estimate: its extrapolation needs the split test "
        "on fewer models, which cannot give either half of the out-scores more than 2 scores (simulated with signal, "
        "truth 0.228: about 55 % low at M = 8, 6 % at M = 16, within 1 % at M >= 32).",
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


# --------------------------------------------------------------------------- what-if over M


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
            core = _core(scores[rows], keep[rows], fpr)
            t, f = _rates(core)
            plain = core["hits"]["per_sample_mean"] / core["n_in"]
            t["per_sample_mean"] = float(np.mean(_extrapolated_record_tpr(scores[rows], keep[rows], plain, fpr, seed=seed)[0]))
            for rule in rules:
                tpr[rule][i, r] = t[rule]
            for rule in spread:
                spread[rule][i, r] = f[rule].std()
        report((i + 1) / len(sizes), f"What-if with {m} models")
    return ModelsSweep(n_models=np.array(sizes), tpr=tpr, fpr_spread=spread, fpr=fpr, required_models=required_models(fpr))


# --------------------------------------------------------------------------- one call


@dataclass(frozen=True)
class LiraResult:
    """Pool + evaluation + what-if, as shown by the page and written by the CLI."""

    pool: ModelPool
    evaluation: LiraEvaluation
    sweep: ModelsSweep
    columns: dict[str, pd.Series] | None = field(default=None, repr=False)  # the records' values, for risk by group
    groups: Any = None  # audit_core.common.groups.GroupRisk of model 0 (the audited target)
    seed: int = 0

    @functools.cached_property
    def fpc_sims(self) -> list:
        """The finite-population what-if at this M (the page's tab and the report; not part of the JSON)."""
        from audit_core.lira.fpc import fpc_sweep

        return fpc_sweep(n_models=self.pool.n_models, repeats=100, seed=self.seed)

    def with_groups(self, column: str | None) -> LiraResult:
        """This result with its risk by group: model 0's offline LiRA score per record, grouped by ``column``."""
        from audit_core.common.groups import risk_by_group

        if not self.columns:
            return self
        scores, members = target_model_scores(self.pool.scores, self.pool.keep, target=0)
        return replace(self, groups=risk_by_group(self.columns, scores, members, column=column))

    def to_json(self) -> dict:
        """The reproducible result: the same data, settings and seed give the same JSON, byte for byte.

        The wall-clock training time is not part of it (see :meth:`timing`).
        """
        out = self.evaluation.to_json()
        out.update(
            {
                "model": self.pool.model,
                "target": self.pool.target,
                "train_accuracy": float(self.pool.train_accuracy.mean()),
                "test_accuracy": float(self.pool.test_accuracy.mean()),
                "models_sweep": self.sweep.table().to_dict(orient="records"),
            }
        )
        # Empirical epsilon lower bound of model 0 as the audited target (offline LiRA score, one per record).
        target_scores, target_members = target_model_scores(self.pool.scores, self.pool.keep, target=0)
        out["epsilon_lower_bound"] = epsilon_bound_json(target_scores, target_members, seed=0) | {"target_model": 0}
        if self.groups is not None:
            out["groups"] = self.groups.to_json()
        return out

    def scores_table(self) -> pd.DataFrame:
        """Every model's score on every record and the keep-matrix, long: ``model``, ``record``, ``score``, ``in_training``.

        ``record`` is the record's 0-based row in the table; ``in_training`` says whether it
        trained that model (the keep-matrix). What ``lira --scores-out FILE`` writes as Parquet,
        so that any other membership tool can be run on the same models.
        """
        m, n = self.pool.scores.shape
        return pd.DataFrame({
            "model": np.repeat(np.arange(m, dtype=np.int64), n),
            "record": np.tile(np.arange(n, dtype=np.int64), m),
            "score": self.pool.scores.ravel(),
            "in_training": self.pool.keep.ravel(),
        })  # fmt: skip

    def scores_parquet(self) -> bytes:
        """:meth:`scores_table` as Parquet bytes (``--scores-out``)."""
        return self.scores_table().to_parquet(index=False)

    def timing(self) -> dict[str, float]:
        """Wall-clock seconds of the batched training: varies run to run, so kept out of :meth:`to_json`."""
        return {"train_seconds": self.pool.seconds}


def evaluate_pool(
    pool: ModelPool,
    *,
    fpr: float,
    seed: int = 0,
    n_bootstrap: int = 200,
    progress: ProgressFn | None = None,
) -> LiraResult:
    """Evaluate a trained pool at alpha and run the what-if over M: the cheap, re-run part.

    The page calls it each time alpha moves and ``run_lira`` (the CLI) calls it once, with
    the same seed for the record bootstrap and the model subsets, so both show the same
    numbers.
    """
    report = as_progress(progress)
    report(0.0, "Evaluating naive, post-processed and per-sample rules")
    ev = evaluate_lira(pool.scores, pool.keep, fpr=fpr, n_bootstrap=n_bootstrap, seed=seed)
    sw = models_sweep(pool.scores, pool.keep, fpr=fpr, seed=seed, progress=sub_progress(progress, 0.3, 1.0))
    return LiraResult(pool=pool, evaluation=ev, sweep=sw, seed=seed)


def run_lira(
    df: pd.DataFrame,
    *,
    target: str,
    model: str = "logistic",
    n_models: int = 16,
    fpr: float = 0.01,
    seed: int = 0,
    n_bootstrap: int = 200,
    device=None,
    progress: ProgressFn | None = None,
    options: TrainOptions = TrainOptions(),
) -> LiraResult:
    """Train the pool, evaluate at alpha, and run the what-if over M (docs/methods.md §2)."""
    pool = train_pool(
        df,
        target=target,
        model=model,
        n_models=n_models,
        seed=seed,
        device=device,
        progress=sub_progress(progress, 0.0, 0.85),
        options=options,
    )
    return evaluate_pool(pool, fpr=fpr, seed=seed, n_bootstrap=n_bootstrap, progress=sub_progress(progress, 0.85, 1.0))
