"""What one synthetic table says about one target record: the features a shadow attack learns from.

As Groundhog (Stadler et al., 2022) and TAPAS (Houssiau et al., 2022) do for a targeted attack, the
features of an output S for a target x are statistics of S *around x*:

- the Gower distances from x to its 1st, 2nd and 5th nearest rows of S (on a log scale);
- the shares of S within ``r / 2``, ``r`` and ``2 r`` of x, with ``r`` the target's isolation (its
  mean distance to its 5 nearest real records, :mod:`audit_core.synthetic.shadow.targets`);
- the marginal query answers: per column, the share of S that agrees with x there (equal
  category; a number within :data:`AGREE_TOLERANCE` of the column's range);
- the pairwise query answers: per pair of columns, the share of S that agrees with x on both
  (among the :data:`MAX_PAIR_COLUMNS` columns where x's value is rarest in the population, for a
  wide table).

A missing value agrees with a missing value only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from audit_core.synthetic.density import LOG_AXIS_SCALE
from audit_core.synthetic.distance import pairwise_gower
from audit_core.synthetic.encoding import EncodedTable

__all__ = ["AGREE_TOLERANCE", "MAX_PAIR_COLUMNS", "TargetFeatures", "describe_targets", "target_features"]

AGREE_TOLERANCE = 0.02
"""A number agrees with the target's when it is within this share of the column's range."""

MAX_PAIR_COLUMNS = 20
"""Pairwise query answers over at most this many columns per target (190 pairs)."""

_NEIGHBOURS = (1, 2, 5)
_RADII = (0.5, 1.0, 2.0)
_CHUNK_CELLS = 4_000_000  # targets x synthetic rows per distance block


@dataclass(frozen=True)
class TargetFeatures:
    """How each target's features are read: the radii around it and the columns of its pairwise answers.

    Attributes
    ----------
    radius : ndarray of float
        ``[T]``: each target's isolation (the unit of its neighbourhood counts).
    pair_columns : ndarray of int
        ``[T, c]``: per target, the columns (positions in the encoded table) its pairwise answers use.
    columns : tuple of str
        The encoded table's columns (numeric block first).
    """

    radius: np.ndarray
    pair_columns: np.ndarray
    columns: tuple[str, ...]

    def names(self, t: int) -> list[str]:
        """Target ``t``'s feature names, in the order of :func:`target_features`' columns."""
        near = [f"log distance to the {k}{'st' if k == 1 else 'nd' if k == 2 else 'th'} nearest row" for k in _NEIGHBOURS]
        counts = [f"share within {f:g} x its isolation" for f in _RADII]
        marginal = [f"share agreeing on {c}" for c in self.columns]
        cols = [self.columns[j] for j in self.pair_columns[t]]
        pairs = [f"share agreeing on {a} and {b}" for i, a in enumerate(cols) for b in cols[i + 1 :]]
        return near + counts + marginal + pairs


def _agreement(targets: EncodedTable, table: EncodedTable) -> np.ndarray:
    """``[T, m, p]`` booleans: row s of ``table`` agrees with target t on column j."""
    x, s = targets.numeric[:, None, :], table.numeric[None, :, :]
    with np.errstate(invalid="ignore"):
        num = (np.abs(x - s) <= AGREE_TOLERANCE + 1e-7) | (np.isnan(x) & np.isnan(s))
    cat = targets.codes[:, None, :] == table.codes[None, :, :]  # missing (-1) agrees with missing only
    return np.concatenate([num, cat], axis=2)


def describe_targets(targets: EncodedTable, population: EncodedTable, radius: np.ndarray) -> TargetFeatures:
    """The radii and, per target, the columns of its pairwise answers (its rarest values in ``population``)."""
    p = targets.numeric.shape[1] + targets.codes.shape[1]
    share = np.zeros((targets.n_rows, p))  # how common each target value is in the population
    step = max(1, _CHUNK_CELLS // max(targets.n_rows * max(p, 1), 1))
    for start in range(0, population.n_rows, step):
        share += _agreement(targets, population.rows(np.arange(start, min(population.n_rows, start + step)))).sum(axis=1)
    keep = min(p, MAX_PAIR_COLUMNS)
    pair_columns = np.sort(np.argsort(share, axis=1, kind="stable")[:, :keep], axis=1)
    return TargetFeatures(radius=np.asarray(radius, dtype=np.float64), pair_columns=pair_columns,
                          columns=targets.numeric_columns + targets.categorical_columns)  # fmt: skip


def target_features(targets: EncodedTable, table: EncodedTable, how: TargetFeatures) -> np.ndarray:
    """``[T, F]``: every target's features in the synthetic ``table`` (module docstring).

    The distances are read in blocks of rows (never a targets x rows matrix larger than a few
    million cells); a table of fewer than 5 rows repeats its farthest distance.
    """
    n_t, m = targets.n_rows, table.n_rows
    p = len(how.columns)
    top = np.full((n_t, max(_NEIGHBOURS)), np.inf)
    counts = np.zeros((n_t, len(_RADII)))
    marginal = np.zeros((n_t, p))
    c = how.pair_columns.shape[1]
    iu = np.triu_indices(c, 1)
    pairs = np.zeros((n_t, iu[0].size))
    step = max(1, _CHUNK_CELLS // max(n_t * max(p, 1), 1))
    for start in range(0, m, step):
        block = table.rows(np.arange(start, min(m, start + step)))
        d = pairwise_gower(targets, block, max_cells=_CHUNK_CELLS * 4)
        top = np.sort(np.concatenate([top, d], axis=1), axis=1)[:, : top.shape[1]]
        counts += (d[:, :, None] <= how.radius[:, None, None] * np.asarray(_RADII)[None, None, :]).sum(axis=1)
        agree = _agreement(targets, block)
        marginal += agree.sum(axis=1)
        for t in range(n_t):
            a = agree[t][:, how.pair_columns[t]].astype(np.float64)
            pairs[t] += (a.T @ a)[iu]
    top = np.where(np.isinf(top), np.nanmax(np.where(np.isinf(top), np.nan, top), axis=1, keepdims=True), top)
    near = np.log(top[:, [k - 1 for k in _NEIGHBOURS]] + LOG_AXIS_SCALE)
    return np.concatenate([near, counts / m, marginal / m, pairs / m], axis=1)
