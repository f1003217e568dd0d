"""The real table cut into train (members), holdout (non-members), auxiliary (the attacker's data) and a reserve.

The generator comparison (:mod:`audit_core.synthetic.comparison`) fits every generator on
``train`` and audits each synthetic table against ``holdout`` and ``auxiliary``; the
``population`` reference samples ``reserve``, rows nobody sees (docs/methods.md §1).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from audit_core.common.errors import InputError
from audit_core.common.limits import MIN_TRAIN_ROWS

__all__ = ["DEFAULT_FRACTIONS", "RealSplit", "split_real_table"]

# --------------------------------------------------------------------------------------
DEFAULT_FRACTIONS: dict[str, float] = {"train": 0.4, "holdout": 0.2, "auxiliary": 0.2, "reserve": 0.2}
"""Default split: train (members), holdout (non-members), auxiliary (attacker's data), reserve (population reference)."""

_SPLIT_PARTS = ("train", "holdout", "auxiliary", "reserve")  # the parts of a split, in the order their rows are drawn


@dataclass(frozen=True)
class RealSplit:
    """A real table cut into disjoint parts (docs/methods.md §1 inputs R, U, A, plus a reserve).

    Attributes
    ----------
    train, holdout, auxiliary, reserve : pandas.DataFrame
        Disjoint row sets; ``auxiliary`` / ``reserve`` may be empty.
    rows : dict of str to numpy.ndarray
        0-based row numbers of each part in the original table.
    fractions : dict of str to float
        The fractions asked for.
    seed : int
    """

    train: pd.DataFrame = field(repr=False)
    holdout: pd.DataFrame = field(repr=False)
    auxiliary: pd.DataFrame = field(repr=False)
    reserve: pd.DataFrame = field(repr=False)
    rows: dict[str, np.ndarray] = field(repr=False)
    fractions: dict[str, float]
    seed: int

    def sizes(self) -> dict[str, int]:
        """Rows in each part."""
        return {k: len(v) for k, v in self.rows.items()}


def split_real_table(
    df: pd.DataFrame, *, fractions: Mapping[str, float] | None = None, seed: int = 0
) -> RealSplit:
    """Shuffle a real table and cut it into train / holdout / auxiliary / reserve.

    Parameters
    ----------
    df : pandas.DataFrame
        The steward's real table.
    fractions : mapping, optional
        Keys among ``train``, ``holdout``, ``auxiliary``, ``reserve`` (default
        :data:`DEFAULT_FRACTIONS`); missing keys count 0, except that when
        ``reserve`` is missing it takes whatever the others leave; the sum is at most 1
        (``CompareSettings.validate`` checks it). Generators are fitted on ``train``; the audit uses ``holdout`` as
        non-members and ``auxiliary`` as the attacker's population data; the
        ``population`` reference samples ``reserve``.
    seed : int
        Seeds the shuffle.

    Returns
    -------
    RealSplit

    Raises
    ------
    InputError
        An empty table, or a train / holdout part with fewer than 20 rows.
    """
    if not isinstance(df, pd.DataFrame) or len(df) == 0:
        raise InputError("The real table is empty; upload a table with rows.")
    values = _split_fractions(fractions)
    rows = _split_rows(len(df), values, seed)
    frames = {k: df.iloc[rows[k]].reset_index(drop=True) for k in _SPLIT_PARTS}
    return RealSplit(**frames, rows=rows, fractions=values, seed=seed)


def _split_fractions(fractions: Mapping[str, float] | None) -> dict[str, float]:
    """The fraction of each part: a missing part counts 0, a missing ``reserve`` takes what is left.

    The comparison's knobs checked the fractions (each within its bound, the sum at most 1:
    ``CompareSettings.validate``).
    """
    given = dict(DEFAULT_FRACTIONS if fractions is None else fractions)
    values = {k: float(given.get(k, 0.0)) for k in _SPLIT_PARTS[:3]}
    if "reserve" in given:
        values["reserve"] = float(given["reserve"])
    else:
        values["reserve"] = max(0.0, 1.0 - sum(values.values()))
    return values


def _split_rows(n: int, values: Mapping[str, float], seed: int) -> dict[str, np.ndarray]:
    """Sorted row numbers of each part: consecutive runs of one seeded shuffle of the ``n`` rows."""
    order = np.random.default_rng(seed).permutation(n)
    counts = {k: math.floor(values[k] * n + 1e-9) for k in _SPLIT_PARTS}
    for k in ("train", "holdout"):
        if counts[k] < MIN_TRAIN_ROWS:
            raise InputError(
                f"The {k} part would hold {counts[k]} rows of {n}; at least {MIN_TRAIN_ROWS} are needed, so "
                f"raise its fraction or use a larger table."
            )
    rows: dict[str, np.ndarray] = {}
    start = 0
    for k in _SPLIT_PARTS:
        rows[k] = np.sort(order[start:start + counts[k]])
        start += counts[k]
    return rows
