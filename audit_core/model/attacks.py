"""The membership attacks on an uploaded model, each a score per candidate record (higher = more member-like).

Inputs are probabilities of each candidate's true label: ``p_target`` (shape ``(n,)``) from
the audited model and ``p_ref`` (shape ``(K, n)``) from the reference models, every candidate
OUT of every reference model (:mod:`audit_core.model.reference` explains the bookkeeping).

- :func:`loss_scores`: LOSS, ``log Pr(y | x, theta)`` (minus the cross-entropy; no reference model).
- :func:`rmia_scores`: RMIA (Zarifzadeh, Liu and Shokri, ICML 2024), offline. The likelihood
  ratio of a record against the population is ``ratio(x) = Pr(x | theta) / Pr(x)``, where
  ``Pr(x)``, the probability averaged over models trained without and with ``x``, is estimated
  from OUT models only with the paper's offline correction
  ``Pr(x) = ((1 + a) mean_k Pr(x | theta_k) + (1 - a)) / 2`` (``a = 0.3``, the reference
  implementation's default). The score is the share of population samples ``z`` with
  ``ratio(x) / ratio(z) > gamma`` (``gamma = 1``). The ``z`` are the candidate non-members; a
  non-member is never compared with itself (leave-one-out), so members and non-members are
  both compared with non-members they are not.
- :func:`lira_offline_scores`: LiRA offline with a global (fixed) variance (Carlini et al. 2022,
  the default below 64 reference models, their Fig. 9): ``(phi(x) - mean_k phi_k(x)) / sigma``
  with ``phi = log(p / (1 - p))`` and ``sigma`` the OUT scores' spread pooled over all
  records (1 with a single reference model, which leaves the ranking unchanged).
- :func:`lira_online_scores`: LiRA online (Carlini et al. 2022): reference models trained with
  and without each candidate (:func:`audit_core.model.design.online_design`), a Gaussian fitted
  to ``phi`` over the models holding the candidate (IN) and over the others (OUT), and the
  log-likelihood ratio ``log N(phi(x); mu_in, sd_in) - log N(phi(x); mu_out, sd_out)`` of the
  target's ``phi(x)``. ``variance="global"``: one pooled within-record sigma for both sides
  (the default below 64 reference models, their Fig. 9); ``"per_sample"``: each candidate's own
  IN and OUT spreads. The fits and the ratio are the LiRA page's
  (:func:`audit_core.lira.fits.record_fits`, :func:`~audit_core.lira.fits.pooled_sd`,
  :func:`~audit_core.lira.fits.fixed_variance_llr`, :func:`~audit_core.lira.fits.gaussian_llr`);
  the target is not one of the reference models, so nothing is left out of the fits.
- :func:`supervised_scores`: a learned attacker, as ART's black-box membership attack
  (``MembershipInferenceBlackBox``): an attacker who knows some members and some non-members
  trains a classifier on what the model says about them and applies it to others. Here the
  classifier is cross-fitted: the candidates are split into :data:`SUPERVISED_FOLDS` folds,
  stratified by membership and seeded, and each record is scored by the classifier trained on the
  other folds (so it knows four fifths of the members and non-members, never the record itself).
  Its features (:func:`supervised_features`) are the model's whole output and the label (ART's
  features) and, where the offline reference models ran, what they say about the record: their
  mean and spread of ``phi``, LiRA offline's difference and RMIA's ratio ``Pr(x | theta) / Pr(x)``
  (each a property of the record alone; RMIA's rank among the non-members is left out, since its
  denominator depends on the record's own label). The classifier is scikit-learn's
  HistGradientBoosting (100 rounds of 15 leaves, at least 20 records a leaf).
"""

from __future__ import annotations

import numpy as np

from audit_core.model.reference import PROB_FLOOR

__all__ = [
    "ATTACKS",
    "DEFAULT_ATTACKS",
    "OFFLINE_ATTACKS",
    "REFERENCE_ATTACKS",
    "RMIA_A",
    "SUPERVISED_FOLDS",
    "VARIANCES",
    "lira_offline_scores",
    "lira_online_scores",
    "lira_variance",
    "loss_scores",
    "rmia_scores",
    "supervised_features",
    "supervised_scores",
]

RMIA_A = 0.3
"""The offline ``a`` of RMIA (privacy_meter's default; the paper tunes it on a reference model)."""
_RMIA_GAMMA = 1.0
"""RMIA's threshold on the pairwise likelihood ratio."""

ATTACKS = ("loss", "rmia", "lira_offline", "lira_online", "supervised")
DEFAULT_ATTACKS = ("loss", "rmia", "lira_offline", "supervised")
"""The attacks run when none are named: LiRA online trains K more reference models, so it is asked for by name."""
SUPERVISED_FOLDS = 5
"""Folds of the supervised attack's cross-fitting: each record is scored by a classifier that never saw it."""
_MAX_CLASS_COLUMNS = 20
"""Above this many classes the supervised attack gets the three largest probabilities, not the whole output."""
REFERENCE_ATTACKS = ("rmia", "lira_offline", "lira_online")
"""The attacks that rest on the reference models (the fidelity check speaks for them)."""
OFFLINE_ATTACKS = ("rmia", "lira_offline")
"""The attacks whose reference models never saw a candidate (:func:`audit_core.model.design.offline_design`)."""
VARIANCES = ("auto", "global", "per_sample")
_PER_SAMPLE_FROM = 64
"""``variance="auto"`` fits per-sample variances from this many reference models on (LiRA paper, Fig. 9)."""


def _clip(p: np.ndarray) -> np.ndarray:
    return np.clip(np.asarray(p, dtype=np.float64), PROB_FLOOR, 1.0)


def loss_scores(p_target: np.ndarray) -> np.ndarray:
    """LOSS: ``log Pr(y | x, theta)``; a member has been fitted, so its loss is low."""
    return np.log(_clip(p_target))


def rmia_scores(
    p_target: np.ndarray, p_ref: np.ndarray, z_index: np.ndarray, *, a: float = RMIA_A, gamma: float = _RMIA_GAMMA
) -> np.ndarray:
    """RMIA offline: for each candidate, the share of population samples ``z`` it dominates.

    Parameters
    ----------
    p_target : ndarray (n,)
        ``Pr(y_x | x, theta)`` of every candidate under the audited model.
    p_ref : ndarray (K, n)
        The same under each reference model (every candidate OUT of every one).
    z_index : ndarray of int
        Which candidates are the population samples ``z`` (the non-members).
    """
    p_x = 0.5 * ((1.0 + a) * _clip(p_ref).mean(0) + (1.0 - a))
    ratio = _clip(p_target) / p_x
    z = np.sort(ratio[z_index])
    beaten = np.searchsorted(z, ratio / gamma, side="left").astype(np.float64)  # z with ratio(x) / ratio(z) > gamma
    n_z = np.full(ratio.shape, float(z.size))
    in_z = np.zeros(ratio.shape, dtype=bool)
    in_z[z_index] = True
    if gamma < 1:  # with gamma >= 1 a record never beats itself; below 1 it does, so take it out
        beaten[in_z] -= 1
    n_z[in_z] -= 1
    return beaten / np.maximum(n_z, 1.0)


def _logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(np.asarray(p, dtype=np.float64), PROB_FLOOR, 1.0 - PROB_FLOOR)
    return np.log(p) - np.log1p(-p)


def lira_offline_scores(p_target: np.ndarray, p_ref: np.ndarray) -> tuple[np.ndarray, float]:
    """LiRA offline, global variance: ``((phi(x) - mean_k phi_k(x)) / sigma``, and ``sigma``."""
    phi_ref = _logit(p_ref)
    mu = phi_ref.mean(0)
    k = phi_ref.shape[0]
    sigma = float(np.sqrt(((phi_ref - mu) ** 2).sum() / (phi_ref.size - phi_ref.shape[1]))) if k > 1 else 1.0
    sigma = max(sigma, 1e-6)
    return (_logit(p_target) - mu) / sigma, sigma


def lira_variance(variance: str, n_models: int) -> str:
    """``"auto"`` -> ``"global"`` below :data:`_PER_SAMPLE_FROM` reference models, ``"per_sample"`` from there on."""
    if variance == "auto":
        return "per_sample" if n_models >= _PER_SAMPLE_FROM else "global"
    return variance


def lira_online_scores(p_target: np.ndarray, p_ref: np.ndarray, keep: np.ndarray, *, variance: str) -> tuple[np.ndarray, dict]:
    """LiRA online (module docstring): the log-likelihood ratio per candidate, and what was fitted.

    Parameters
    ----------
    p_target : ndarray (n,)
        ``Pr(y_x | x, theta)`` under the audited model.
    p_ref : ndarray (K, n)
        The same under each online reference model.
    keep : ndarray of bool (K, n)
        Which candidates each reference model was trained on.
    variance : {"global", "per_sample"}

    Returns
    -------
    scores, info
        ``info``: ``variance``, ``sigma`` (the pooled one; null per sample), the fewest IN and OUT models of a candidate.
    """
    from audit_core.lira.fits import fixed_variance_llr, gaussian_llr, pooled_sd, record_fits

    phi, phi_ref = _logit(p_target), _logit(p_ref)
    fits = record_fits(phi_ref, keep)
    info: dict = {"variance": variance, "min_in": int(keep.sum(0).min()), "min_out": int((~keep).sum(0).min())}
    if variance == "per_sample":
        info["sigma"] = None
        return gaussian_llr(phi, fits["mu_in"], fits["sd_in"], fits["mu_out"], fits["sd_out"]), info
    sigma = pooled_sd(fits) if np.isfinite(fits["sd_in"]).any() or np.isfinite(fits["sd_out"]).any() else 1.0
    info["sigma"] = sigma  # 1 when no candidate has two scores on a side (K = 2): the ranking does not depend on it
    return fixed_variance_llr(phi, fits["mu_in"], fits["mu_out"], sigma), info


def supervised_features(prob: np.ndarray, y: np.ndarray, p_ref: np.ndarray | None) -> tuple[np.ndarray, list[str]]:
    """The supervised attack's features per candidate, and their names (module docstring).

    Parameters
    ----------
    prob : ndarray (n, C)
        The audited model's class probabilities.
    y : ndarray of int (n,)
        Each candidate's label (class index).
    p_ref : ndarray (K, n) or None
        ``Pr(y_x | x, theta_k)`` under the offline reference models, when they ran.
    """
    n, c = prob.shape
    p_true = _clip(prob[np.arange(n), y])
    top = np.sort(prob, axis=1)[:, ::-1]
    columns = {"phi": _logit(p_true), "log_p_max": np.log(_clip(top[:, 0])), "correct": (prob.argmax(1) == y) * 1.0,
               "entropy": -np.sum(prob * np.log(_clip(prob)), axis=1)}  # fmt: skip
    if c <= _MAX_CLASS_COLUMNS:
        columns |= {f"p_{j}": prob[:, j] for j in range(c)} | {f"label_{j}": (y == j) * 1.0 for j in range(c)}
    else:
        columns |= {f"p_top{j + 1}": top[:, j] for j in range(3)}
    if p_ref is not None:
        phi_ref = _logit(p_ref)
        p_x = 0.5 * ((1.0 + RMIA_A) * _clip(p_ref).mean(0) + (1.0 - RMIA_A))
        columns |= {"ref_phi_mean": phi_ref.mean(0), "ref_phi_sd": phi_ref.std(0),
                    "lira_offline_difference": columns["phi"] - phi_ref.mean(0),
                    "rmia_log_ratio": np.log(p_true / p_x)}  # fmt: skip
    return np.column_stack(list(columns.values())), list(columns)


def supervised_scores(features: np.ndarray, member: np.ndarray, *, seed: int, folds: int = SUPERVISED_FOLDS) -> np.ndarray:
    """Cross-fitted ``P(member)`` per candidate: each fold scored by a classifier trained on the other folds."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    from audit_core.common.runtime import blas_threads

    rng = np.random.default_rng([seed, 29])
    fold = np.empty(member.size, dtype=np.int64)
    for side in (True, False):  # stratified: every fold holds members and non-members in the same shares
        idx = np.flatnonzero(member == side)
        fold[idx[rng.permutation(idx.size)]] = np.arange(idx.size) % folds
    scores = np.empty(member.size, dtype=np.float64)
    with blas_threads(1):
        for f in range(folds):
            test = fold == f
            model = HistGradientBoostingClassifier(max_iter=100, max_leaf_nodes=15, min_samples_leaf=20,
                                                   l2_regularization=1.0, early_stopping=False,
                                                   random_state=int(rng.integers(2**31 - 1)))  # fmt: skip
            model.fit(features[~test], member[~test])
            scores[test] = model.predict_proba(features[test])[:, list(model.classes_).index(True)]
    return scores
