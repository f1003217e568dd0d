"""Who trains which reference model: the offline and the online designs of the model audit.

Records are indexed in one array, the members first (``0 .. n_members - 1``), then the
population table. The **candidates** (what every attack scores) are all the members and the
candidate half of the population; the **pool** is the population's other half (never scored).

- :func:`offline_design`: K models, each on a random sample of the pool of the target's training
  size (at most half the pool, so that the models differ). No candidate is in any of them
  (RMIA offline, LiRA offline).
- :func:`online_design` (LiRA online, Carlini et al. 2022): K models, each on the target's training
  size drawn from the candidates *and* the pool, such that every candidate is IN about half of
  the models and OUT of the others. Each model takes ``c = min(train_size, n_candidates // 2)``
  candidates: those IN the fewest models so far, ties broken at random (so two consecutive models
  take complementary halves, and every candidate is IN ``floor`` or ``ceil`` of ``K c / n``
  models), then pool records up to the training size. A candidate member is thus IN some
  reference models although it is a member of the target: the IN and OUT Gaussians of each
  candidate are fitted on models whose membership of it is known, whatever its membership of
  the target.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from audit_core.common.errors import InputError

__all__ = ["Design", "offline_design", "online_design"]


@dataclass(frozen=True)
class Design:
    """The training rows of each reference model and which candidates they hold.

    Attributes
    ----------
    rows : list of ndarray of int
        Per model, the sorted indices (into members + population) it is trained on.
    seeds : list of int
        Per model, the seed of its training.
    keep : ndarray of bool, shape (K, n_candidates)
        ``keep[k, i]``: candidate ``i`` is in model ``k``'s training rows (all False offline).
    train_size : int
        Rows per model (the same for every model).
    """

    rows: list[np.ndarray]
    seeds: list[int]
    keep: np.ndarray
    train_size: int

    @property
    def n_models(self) -> int:
        return len(self.rows)

    def take(self, models: slice) -> Design:
        """The same design restricted to some of its models (rows, seeds and keep alike)."""
        return Design(rows=self.rows[models], seeds=self.seeds[models], keep=self.keep[models], train_size=self.train_size)


def offline_design(pool: np.ndarray, n_candidates: int, *, n_models: int, train_size: int, seed: int) -> Design:
    """K models on random samples of ``pool`` (global indices, sorted) of ``min(train_size, len(pool) // 2)`` rows."""
    rng = np.random.default_rng([seed, 7])
    size = min(train_size, len(pool) // 2)
    rows, seeds = [], []
    for _ in range(n_models):
        rows.append(pool[np.sort(rng.choice(len(pool), size=size, replace=False))])
        seeds.append(int(rng.integers(2**31 - 1)))
    return Design(rows=rows, seeds=seeds, keep=np.zeros((n_models, n_candidates), dtype=bool), train_size=size)


def _online_in_counts(n_candidates: int, *, n_models: int, train_size: int) -> tuple[int, int]:
    """The fewest and most reference models any candidate is IN under :func:`online_design`."""
    c = min(train_size, n_candidates // 2)
    return (n_models * c) // n_candidates, -(-(n_models * c) // n_candidates)


def online_design(
    candidates: np.ndarray, pool: np.ndarray, *, n_models: int, train_size: int, seed: int, min_in: int = 1
) -> Design:
    """K models, each on ``c`` candidates (the least used so far) and pool records up to ``train_size`` (module docstring).

    Raises :class:`InputError` (one sentence) when a candidate would be IN fewer than ``min_in``
    models or OUT of fewer than ``min_in``: the IN and OUT Gaussians need that many scores each.
    """
    n = len(candidates)
    c = min(train_size, n // 2)
    low, high = _online_in_counts(n, n_models=n_models, train_size=train_size)
    if n_models < 2 or low < min_in or n_models - high < min_in:
        need = max(2 * min_in, -(-min_in * n // max(c, 1)))
        raise InputError(
            f"LiRA online needs every candidate in at least {min_in} reference model(s) and out of as many; with "
            f"{n:,} candidates and {c:,} of them per model ({train_size:,} records, the target's training size) that "
            f"takes at least {need} reference models, not {n_models} (or a smaller population table)."
        )
    rng = np.random.default_rng([seed, 11])
    pad = min(train_size - c, len(pool))
    used = np.zeros(n, dtype=np.int64)
    keep = np.zeros((n_models, n), dtype=bool)
    rows, seeds = [], []
    for k in range(n_models):
        chosen = np.lexsort((rng.random(n), used))[:c]  # the least used candidates first, ties at random
        keep[k, chosen] = True
        used[chosen] += 1
        extra = pool[rng.choice(len(pool), size=pad, replace=False)] if pad else pool[:0]
        rows.append(np.sort(np.r_[candidates[chosen], extra]))
        seeds.append(int(rng.integers(2**31 - 1)))
    return Design(rows=rows, seeds=seeds, keep=keep, train_size=c + pad)
