"""Which target goes into which shadow training set, and what else each set holds.

K shadow training sets, each as large as the training table, are drawn from the population
(records that are not training records). They come in pairs (2p, 2p + 1), and a fair coin per
pair and target puts the target into one set of the pair and not the other: each target is in a
set with probability 1/2 and in exactly K / 2 sets, independently of every other target (the
permutation test of :mod:`audit_core.synthetic.shadow.scoring` re-draws exactly these coins, so
its p-values are exact). The rest of each set is a fresh draw of population records without
replacement. The cross-fitting folds keep each pair together, so every fold holds as many sets
with a target as without it, for every target.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["ShadowDesign", "design_shadows", "pair_coins"]


def pair_coins(coins: np.ndarray) -> np.ndarray:
    """The keep-matrix ``[..., K, T]`` from coins ``[..., K / 2, T]``: a target is in set 2p when its coin is 1, else in 2p + 1.

    >>> pair_coins(np.array([[1, 0]])).astype(int).tolist()
    [[1, 0], [0, 1]]
    """
    c = np.asarray(coins, dtype=bool)
    return np.stack([c, ~c], axis=-2).reshape(*c.shape[:-2], 2 * c.shape[-2], c.shape[-1])


@dataclass(frozen=True)
class ShadowDesign:
    """The shadow training sets of one attack.

    Attributes
    ----------
    keep : ndarray of bool
        ``[K, T]``: target t is in shadow set k.
    population_rows : tuple of ndarray
        Per shadow set, the population rows it holds besides its targets.
    folds : ndarray of int
        ``[K]``: the cross-fitting fold of each set (a complementary pair shares one).
    seeds : ndarray of int
        ``[K]``: the generator's seed for each set.
    n_rows : int
        Rows of each shadow training set (targets included).
    """

    keep: np.ndarray
    population_rows: tuple[np.ndarray, ...]
    folds: np.ndarray
    seeds: np.ndarray
    n_rows: int

    @property
    def n_shadows(self) -> int:
        return int(self.keep.shape[0])

    @property
    def n_folds(self) -> int:
        return int(self.folds.max()) + 1

    def training_set(self, k: int, population: pd.DataFrame, targets: pd.DataFrame) -> pd.DataFrame:
        """Shadow training set ``k``: its population rows, then its targets, shuffled by the set's seed."""
        frame = pd.concat([population.iloc[self.population_rows[k]], targets.iloc[np.flatnonzero(self.keep[k])]],
                          ignore_index=True)  # fmt: skip
        order = np.random.default_rng(int(self.seeds[k])).permutation(len(frame))
        return frame.iloc[order].reset_index(drop=True)


def design_shadows(
    n_targets: int, n_population: int, *, n_rows: int, n_shadows: int, n_folds: int, seed: int
) -> ShadowDesign:
    """Draw the keep-matrix, each set's population rows, the folds and the seeds (all from ``seed``).

    Parameters
    ----------
    n_targets, n_population : int
        Targets and population records available.
    n_rows : int
        Rows of each shadow training set (the training table's size); a population too small to
        fill it gives smaller sets (the caller says so).
    n_shadows : int
        K, even (the knob guarantees it).
    n_folds : int
        Cross-fitting folds, at most K / 2.
    seed : int

    Examples
    --------
    >>> d = design_shadows(4, 100, n_rows=10, n_shadows=8, n_folds=2, seed=0)
    >>> d.keep.sum(axis=0).tolist(), sorted({len(r) + int(k) for r, k in zip(d.population_rows, d.keep.sum(axis=1))})
    ([4, 4, 4, 4], [10])
    >>> bool((d.keep[0::2] ^ d.keep[1::2]).all())  # each pair: the target in exactly one of its two sets
    True
    >>> [int(d.keep[d.folds == f].sum(axis=0).min()) for f in range(2)]
    [2, 2]
    """
    rng = np.random.default_rng([seed, 29])
    keep = pair_coins(rng.random((n_shadows // 2, n_targets)) < 0.5)
    rows = []
    for k in range(n_shadows):
        fill = max(0, min(n_rows - int(keep[k].sum()), n_population))
        rows.append(np.sort(rng.choice(n_population, size=fill, replace=False)))
    folds = np.repeat(rng.permutation(n_shadows // 2) % n_folds, 2)  # sets 2p and 2p + 1 (a pair) share a fold
    seeds = rng.integers(0, 2**31 - 1, size=n_shadows)
    return ShadowDesign(keep=keep, population_rows=tuple(rows), folds=folds.astype(np.int64), seeds=seeds, n_rows=n_rows)
