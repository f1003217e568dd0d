"""One membership test per target, learned from the shadow outputs, cross-fitted, with an exact permutation p-value.

For target t the K shadow outputs give feature vectors (:mod:`audit_core.synthetic.shadow.features`)
labelled by whether t was in the set. The test is LiRA's (Carlini et al., 2022) on one feature:
on the training folds the feature whose in and out means differ most (Welch's t) is chosen, its
in and out values are fitted by two Gaussians (each variance at least :data:`_VAR_FLOOR` of the
pooled one), and a held-out output is scored by the log-likelihood ratio (higher = "t was in").
Each output is scored by the model of the folds that did not see it (a pair of sets shares a
fold), so the out-of-fold scores are an honest ROC of the attack on fresh outputs, and the
target's AUC is read off them.

**Level.** Out-of-fold scores share their fold's model, so they are not independent and a
rank test on them is anti-conservative (on the population reference, 12 % of Mann-Whitney
p-values fell below 5 %). The p-value is instead a permutation test that re-draws the design's
own coins (:func:`audit_core.synthetic.shadow.design.pair_coins`) and repeats the whole
cross-fitting, feature choice included: under "the output does not depend on whether t was in"
the observed AUC is exchangeable with the :data:`PERMUTATIONS` re-drawn ones, so
``p = (1 + #{AUC_b >= AUC}) / (1 + B)`` is exact (drawn sequentially: a target stops once
20 re-drawn AUCs reached its own, Besag and Clifford's valid p-value). A random-forest classifier per target
(Groundhog's) scored the same AUC on GaussianCopula outputs at this budget, at a thousand times
the cost, and cannot be permuted at that cost: it is the benchmark's peer, not the audit's test.

The release (the real synthetic table) is scored by every fold's model; its p-value counts, fold
by fold, the held-out outputs *without* the target that score at least as high (under "the
release does not show t" it is exchangeable with them).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

from audit_core.synthetic.shadow.design import pair_coins

__all__ = ["PERMUTATIONS", "TargetScores", "auc_by_ranks", "cross_fit"]

PERMUTATIONS = 1999
"""Re-drawn designs behind each target's p-value (resolution 1 / 2000)."""

_VAR_FLOOR = 0.05  # a class variance is at least this share of the pooled one (and 1e-8)
_BATCH = 100  # permutations cross-fitted at once
_EXCEEDANCES = 20  # a target's permutations stop after this many re-drawn AUCs reach its own


@dataclass(frozen=True)
class TargetScores:
    """The cross-fitted scores and tests of every target.

    Attributes
    ----------
    shadow : ndarray of float
        ``[K, T]``: each shadow output's out-of-fold score for each target.
    auc : ndarray of float
        ``[T]``: the AUC of those scores (outputs with the target against outputs without).
    p_value : ndarray of float
        ``[T]``: the permutation p-value of that AUC (module docstring).
    release : ndarray of float
        ``[T]``: the release's score, averaged over the fold models.
    release_p : ndarray of float
        ``[T]``: ``(1 + #{held-out outputs without t scoring >= the release under the same model}) / (1 + #out)``.
    feature : ndarray of int
        ``[T]``: the feature the test chose most often over the folds.
    permutations : int
    """

    shadow: np.ndarray
    auc: np.ndarray
    p_value: np.ndarray
    release: np.ndarray
    release_p: np.ndarray
    feature: np.ndarray
    permutations: int


def auc_by_ranks(scores: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """AUC (ties count half) along axis -2 of ``scores`` / ``labels`` ``[..., K, T]``: Mann-Whitney U / (n_in n_out).

    >>> auc_by_ranks(np.array([[0.9], [0.1], [0.5], [0.5]]), np.array([[1], [0], [1], [0]], dtype=bool)).tolist()
    [0.875]
    """
    ranks = stats.rankdata(scores, axis=-2)
    n_in = labels.sum(axis=-2)
    n_out = labels.shape[-2] - n_in
    u = (ranks * labels).sum(axis=-2) - n_in * (n_in + 1) / 2.0
    return u / np.maximum(n_in * n_out, 1)


def _fit(x: np.ndarray, x2: np.ndarray, lab: np.ndarray) -> tuple[np.ndarray, ...]:
    """Feature choice and Gaussians from training outputs: ``x``, ``x2`` ``[k, T, F]``, labels ``lab`` ``[B, k, T]``."""
    lab_t = lab.astype(np.float64).transpose(2, 0, 1)  # [T, B, k]
    xt, x2t = x.transpose(1, 0, 2), x2.transpose(1, 0, 2)  # [T, k, F]
    n_in = lab_t.sum(axis=2)[..., None]  # [T, B, 1]
    n_out = lab_t.shape[2] - n_in
    s1, s2 = xt.sum(axis=1)[:, None, :], x2t.sum(axis=1)[:, None, :]  # [T, 1, F]
    s1_in, s2_in = lab_t @ xt, lab_t @ x2t  # [T, B, F]
    mu_in, mu_out = s1_in / n_in, (s1 - s1_in) / n_out
    var_in = np.maximum(s2_in - n_in * mu_in**2, 0.0) / np.maximum(n_in - 1, 1)
    var_out = np.maximum(s2 - s2_in - n_out * mu_out**2, 0.0) / np.maximum(n_out - 1, 1)
    n = lab_t.shape[2]
    pooled = np.maximum(s2 - s1**2 / n, 0.0) / max(n - 1, 1)
    welch = (mu_in - mu_out) ** 2 / (var_in / n_in + var_out / n_out + 1e-12)
    best = np.argmax(welch, axis=2)[..., None]  # [T, B, 1]; ties to the first feature

    def pick(a: np.ndarray) -> np.ndarray:  # [T, B] -> [B, T]
        return np.take_along_axis(np.broadcast_to(a, welch.shape), best, axis=2)[..., 0].T

    floor = np.maximum(_VAR_FLOOR * pick(pooled), 1e-8)
    return best[..., 0].T, pick(mu_in), np.maximum(pick(var_in), floor), pick(mu_out), np.maximum(pick(var_out), floor)


def _score(x: np.ndarray, fit: tuple[np.ndarray, ...]) -> np.ndarray:
    """Log-likelihood ratio of outputs ``x`` ``[k, T, F]`` on each (permutation, target)'s feature: ``[B, k, T]``."""
    best, mi, vi, mo, vo = fit
    t = np.arange(x.shape[1])
    v = x[:, t[None, :], best].transpose(1, 0, 2)  # [B, k, T]
    mi, vi, mo, vo = (a[:, None, :] for a in (mi, vi, mo, vo))
    return -0.5 * ((v - mi) ** 2 / vi + np.log(vi)) + 0.5 * ((v - mo) ** 2 / vo + np.log(vo))


def _oof(x: np.ndarray, labels: np.ndarray, folds: np.ndarray) -> np.ndarray:
    """Out-of-fold scores ``[B, K, T]`` for labellings ``[B, K, T]`` (the feature chosen afresh in every fold)."""
    x2 = x**2
    out = np.empty(labels.shape)
    for f in range(int(folds.max()) + 1):
        test, train = folds == f, folds != f
        out[:, test] = _score(x[test], _fit(x[train], x2[train], labels[:, train]))
    return out


def _permutation_p(
    x: np.ndarray, folds: np.ndarray, auc: np.ndarray, k_sets: int, *, seed: int, permutations: int
) -> np.ndarray:
    """Each target's permutation p-value, sequential (Besag and Clifford, 1991): a target stops once
    :data:`_EXCEEDANCES` re-drawn AUCs reached its own, with ``p = h / l`` (``l`` the draws up to the h-th); one
    that never does gets ``(1 + #exceedances) / (1 + B)``. Both are valid p-values; the targets far from significance
    (most of them) stop after a few dozen draws, the exposed ones get all :data:`PERMUTATIONS`.
    """
    n_t = auc.size
    rng = np.random.default_rng([seed, 2929])
    exceed = np.zeros(n_t, dtype=np.int64)
    p = np.full(n_t, np.nan)
    drawn = 0
    while drawn < permutations and np.isnan(p).any():
        b = min(_BATCH, permutations - drawn)
        coins = rng.random((b, k_sets // 2, n_t)) < 0.5  # drawn for every target: the stream does not depend on who stopped
        active = np.flatnonzero(np.isnan(p))
        labels = pair_coins(coins[:, :, active])
        hits = auc_by_ranks(_oof(x[:, active], labels, folds), labels) >= auc[None, active] - 1e-12  # [b, active]
        running = exceed[active][None, :] + np.cumsum(hits, axis=0)
        for j, t in enumerate(active):
            reached = np.flatnonzero(running[:, j] >= _EXCEEDANCES)
            if reached.size:
                p[t] = _EXCEEDANCES / (drawn + reached[0] + 1)
        exceed[active] = running[-1]
        drawn += b
    return np.where(np.isnan(p), (1 + exceed) / (1 + permutations), p)


def cross_fit(
    features: np.ndarray,
    keep: np.ndarray,
    folds: np.ndarray,
    release: np.ndarray,
    *,
    seed: int,
    permutations: int = PERMUTATIONS,
) -> TargetScores:
    """Out-of-fold scores, AUCs and permutation p-values of every target, and the release's score and p-value.

    Parameters
    ----------
    features : ndarray
        ``[K, T, F]``: each shadow output's features for each target.
    keep : ndarray of bool
        ``[K, T]``: target t was in shadow set k (pairs 2p, 2p + 1 complementary).
    folds : ndarray of int
        ``[K]``: each output's fold (a pair's two sets share one).
    release : ndarray
        ``[T, F]``: the release's features.
    seed : int
        Seeds the re-drawn coins.
    permutations : int
        B, the re-drawn designs.
    """
    x = np.asarray(features, dtype=np.float64)
    keep = np.asarray(keep, dtype=bool)
    rel_x = np.asarray(release, dtype=np.float64)[None]
    n_folds = int(folds.max()) + 1
    k_sets, n_t = keep.shape
    shadow, rel, above = np.empty((k_sets, n_t)), np.zeros(n_t), np.zeros(n_t)
    chosen = np.empty((n_folds, n_t), dtype=np.int64)
    for f in range(n_folds):
        test, train = folds == f, folds != f
        fit = _fit(x[train], x[train] ** 2, keep[None, train])
        held, here = _score(x[test], fit)[0], _score(rel_x, fit)[0, 0]
        shadow[test], chosen[f] = held, fit[0][0]
        rel += here
        above += ((held >= here[None, :] - 1e-12) & ~keep[test]).sum(axis=0)
    auc = auc_by_ranks(shadow, keep)
    p_value = _permutation_p(x, folds, auc, k_sets, seed=seed, permutations=permutations)
    feature = np.array([np.bincount(chosen[:, t]).argmax() for t in range(n_t)], dtype=np.int64)
    return TargetScores(shadow=shadow, auc=auc, p_value=p_value, release=rel / n_folds,
                        release_p=(1 + above) / (1 + (~keep).sum(axis=0)), feature=feature,
                        permutations=int(permutations))  # fmt: skip
