"""The keep-matrix: which record trains which of LiRA's M models (docs/methods.md §2)."""

from __future__ import annotations

import numpy as np

__all__ = ["balanced_keep_matrix"]


def balanced_keep_matrix(n_samples: int, *, n_models: int, seed: int) -> np.ndarray:
    """Which record trains which model: every record in exactly M/2 models.

    Models come in complementary pairs (2k, 2k+1): model 2k takes a uniformly random
    half of the records and model 2k+1 the other half. Hence each record is in exactly
    M/2 models, each model holds ``floor(n/2)`` or ``ceil(n/2)`` records, and any
    subset of whole pairs is balanced as well (used by the what-if over M).

    Parameters
    ----------
    n_samples : int
    n_models : int
        Even number of models M (the audit's ``--models`` knob, ``LIRA_MODELS``, guarantees it).
    seed : int

    Returns
    -------
    np.ndarray
        ``(M, n)`` boolean; ``keep[m, i]`` is True when record i trains model m.

    Examples
    --------
    >>> k = balanced_keep_matrix(10, n_models=4, seed=0)
    >>> k.sum(axis=0).tolist() == [2] * 10, sorted(k.sum(axis=1).tolist())
    (True, [5, 5, 5, 5])
    """
    rng = np.random.default_rng(seed)
    keep = np.zeros((n_models, n_samples), dtype=bool)
    half = (n_samples + 1) // 2
    for k in range(n_models // 2):
        perm = rng.permutation(n_samples)
        first = 2 * k if k % 2 == 0 else 2 * k + 1  # alternate which twin gets ceil(n/2)
        keep[first, perm[:half]] = True
        keep[first ^ 1, perm[half:]] = True
    return keep
