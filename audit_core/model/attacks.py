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
"""

from __future__ import annotations

import numpy as np

from audit_core.model.reference import PROB_FLOOR

RMIA_A = 0.3
"""The offline ``a`` of RMIA (privacy_meter's default; the paper tunes it on a reference model)."""
RMIA_GAMMA = 1.0
"""RMIA's threshold on the pairwise likelihood ratio."""

ATTACKS = ("loss", "rmia", "lira_offline")
REFERENCE_ATTACKS = ("rmia", "lira_offline")
"""The attacks that rest on the reference models (the fidelity check speaks for them)."""


def _clip(p: np.ndarray) -> np.ndarray:
    return np.clip(np.asarray(p, dtype=np.float64), PROB_FLOOR, 1.0)


def loss_scores(p_target: np.ndarray) -> np.ndarray:
    """LOSS: ``log Pr(y | x, theta)``; a member has been fitted, so its loss is low."""
    return np.log(_clip(p_target))


def rmia_scores(
    p_target: np.ndarray, p_ref: np.ndarray, z_index: np.ndarray, *, a: float = RMIA_A, gamma: float = RMIA_GAMMA
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
