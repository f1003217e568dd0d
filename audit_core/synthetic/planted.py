"""The near-copy catalogue: training rows planted into a synthetic table with known changes (docs/methods.md §1.8).

Each kind is a way a generator, or a careless release, turns a training record into a
"synthetic" row that still discloses it. The tests, the self-check and
``benchmarks/measure_near_copies.py`` plant them at 0.5 %, 1 % and 2 % of the synthetic rows
and read the release decision (a known answer: at least ``elevated``).

- ``changed_1`` ... ``changed_4``: k fields changed, each one a number moved by 1-5 % of its
  range (up or down, whole numbers stay whole) or a category swapped for another one of the
  column (drawn as often as the training table has it); which fields, at random, so numbers,
  categories and mixes of both occur;
- ``two_numbers_one_category``: two numbers moved by 3 % of their range and one category
  changed (the case of issue 28);
- ``rounded``: one number rounded to a coarser step (5 % of the range, read as 1, 2 or 5 times a
  power of ten), in a column where that changes it;
- ``swapped``: two columns' values exchanged between two planted records, in columns where
  they differ;
- ``emptied``: one value left empty.

Beside the catalogue, :func:`noise_masked`: the whole training table released with noise on every number
and 5 % of every categorical column's values swapped (the learned attacker's known answer).

>>> import pandas as pd
>>> train = pd.DataFrame({"age": [20, 35, 50, 65], "job": ["a", "b", "a", "c"]})
>>> out = plant_near_copies(train.iloc[:2], train, kind="emptied", share=0.5, seed=0)
>>> int(out.synthetic.isna().sum().sum()), out.train_rows.size
(1, 1)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from audit_core.common.column_types import ColumnTypes, infer_column_types
from audit_core.common.errors import InputError

__all__ = ["NEAR_COPY_KINDS", "PlantedCopies", "noise_masked", "plant_near_copies"]


@dataclass(frozen=True)
class PlantedCopies:
    """A synthetic table with near-copies of training rows planted in it.

    Attributes
    ----------
    synthetic : pandas.DataFrame
        The table, its other rows unchanged.
    train_rows : numpy.ndarray
        The training rows planted (positions in the training table), in the order planted.
    synthetic_rows : numpy.ndarray
        The synthetic rows they replaced.
    """

    synthetic: pd.DataFrame = field(repr=False)
    train_rows: np.ndarray
    synthetic_rows: np.ndarray


@dataclass(frozen=True)
class _Columns:
    train: pd.DataFrame
    numeric: tuple[str, ...]
    categorical: tuple[str, ...]

    def move(self, value: object, column: str, share: float, rng: np.random.Generator) -> object:
        """``value`` moved by ``share`` of the column's range, away from the nearer end; whole numbers stay whole."""
        x = pd.to_numeric(self.train[column], errors="coerce")
        lo, hi = float(x.min()), float(x.max())
        v = float(value)  # type: ignore[arg-type]
        if not np.isfinite(v):
            return value
        step = share * (hi - lo)
        up = rng.random() < 0.5
        if (up and v + step > hi) or (not up and v - step < lo):
            up = not up
        out = v + step if up else v - step
        whole = bool((x.dropna() % 1 == 0).all())
        if whole:
            out = float(np.round(out))
            if out == v:
                out = v + (1.0 if up else -1.0)
        return out

    def swap(self, value: object, column: str, rng: np.random.Generator) -> object:
        """Another category of the column, drawn as often as the training table has it."""
        counts = self.train[column].dropna().astype(object).value_counts()
        counts = counts[counts.index != value]
        if counts.empty:
            return value
        return counts.index[rng.choice(counts.size, p=(counts / counts.sum()).to_numpy())]

    def change(self, row: pd.Series, column: str, rng: np.random.Generator, share: float | None = None) -> None:
        if column in self.numeric:
            row[column] = self.move(row[column], column, rng.uniform(0.01, 0.05) if share is None else share, rng)
        else:
            row[column] = self.swap(row[column], column, rng)


def _changed(k: int) -> Callable[[list[pd.Series], _Columns, np.random.Generator], None]:
    def plant(rows: list[pd.Series], cols: _Columns, rng: np.random.Generator) -> None:
        columns = [*cols.numeric, *cols.categorical]
        for row in rows:
            for c in rng.choice(len(columns), size=min(k, len(columns)), replace=False):
                cols.change(row, columns[c], rng)

    return plant


def _two_numbers_one_category(rows: list[pd.Series], cols: _Columns, rng: np.random.Generator) -> None:
    for row in rows:
        for c in rng.choice(len(cols.numeric), size=min(2, len(cols.numeric)), replace=False):
            cols.change(row, cols.numeric[c], rng, share=0.03)
        if cols.categorical:
            cols.change(row, cols.categorical[int(rng.integers(len(cols.categorical)))], rng)


def _nice_step(span: float) -> float:
    """5 % of ``span`` read as 1, 2 or 5 times a power of ten."""
    target = 0.05 * span
    power = 10.0 ** np.floor(np.log10(target))
    return float(min((m * power for m in (1.0, 2.0, 5.0, 10.0)), key=lambda s: abs(np.log(s / target))))


def _rounded(rows: list[pd.Series], cols: _Columns, rng: np.random.Generator) -> None:
    """One number per record rounded, among the columns where rounding changes it (if any)."""
    steps = {c: _nice_step(float(np.ptp(pd.to_numeric(cols.train[c], errors="coerce").dropna()))) for c in cols.numeric}
    for row in rows:
        values = {c: float(row[c]) for c in cols.numeric}
        rounded = {c: float(np.round(v / steps[c]) * steps[c]) for c, v in values.items() if np.isfinite(v)}
        changes = [c for c, r in rounded.items() if r != values[c]]
        if changes:
            column = changes[int(rng.integers(len(changes)))]
            row[column] = rounded[column]


def _swapped(rows: list[pd.Series], cols: _Columns, rng: np.random.Generator) -> None:
    """Two columns' values exchanged between consecutive planted records (columns where the two differ, if any)."""
    columns = [*cols.numeric, *cols.categorical]
    for a, b in zip(rows[0::2], rows[1::2], strict=False):
        differ = [c for c in columns if not (a[c] == b[c] or (pd.isna(a[c]) and pd.isna(b[c])))]
        pick = differ if len(differ) >= 2 else columns
        for c in rng.choice(len(pick), size=min(2, len(pick)), replace=False):
            a[pick[c]], b[pick[c]] = b[pick[c]], a[pick[c]]


def _emptied(rows: list[pd.Series], cols: _Columns, rng: np.random.Generator) -> None:
    columns = [*cols.numeric, *cols.categorical]
    for row in rows:
        row[columns[int(rng.integers(len(columns)))]] = np.nan


NEAR_COPY_KINDS: dict[str, Callable[[list[pd.Series], _Columns, np.random.Generator], None]] = {
    "changed_1": _changed(1),
    "changed_2": _changed(2),
    "changed_3": _changed(3),
    "changed_4": _changed(4),
    "two_numbers_one_category": _two_numbers_one_category,
    "rounded": _rounded,
    "swapped": _swapped,
    "emptied": _emptied,
}
"""The kinds of near-copy, by name (module docstring)."""


def plant_near_copies(
    synthetic: pd.DataFrame,
    train: pd.DataFrame,
    *,
    kind: str,
    share: float,
    seed: int,
    types: ColumnTypes | None = None,
) -> PlantedCopies:
    """Replace ``share`` of the synthetic rows by near-copies of random training rows, of one ``kind``.

    Parameters
    ----------
    synthetic, train : pandas.DataFrame
        Tables with the same columns.
    kind : str
        A key of :data:`NEAR_COPY_KINDS`.
    share : float
        Share of the synthetic rows replaced (at least one row).
    seed : int
    types : ColumnTypes, optional
        Which columns are numbers and which categories (inferred from ``train`` when None).
    """
    if kind not in NEAR_COPY_KINDS:
        raise InputError(f"Unknown near-copy kind '{kind}'; choose one of {', '.join(NEAR_COPY_KINDS)}.")
    rng = np.random.default_rng(seed)
    types = infer_column_types(train) if types is None else types
    numeric = tuple(c for c in types.numeric if pd.to_numeric(train[c], errors="coerce").nunique() > 2)
    cols = _Columns(train, numeric, tuple(types.categorical))
    k = min(max(1, round(share * len(synthetic))), len(train), len(synthetic))
    train_rows = rng.choice(len(train), size=k, replace=False)
    rows = [train.iloc[int(i)].astype(object).copy() for i in train_rows]
    NEAR_COPY_KINDS[kind](rows, cols, rng)
    target = rng.choice(len(synthetic), size=k, replace=False)
    out = synthetic.copy()
    for col in out.columns:
        values = out[col].to_numpy(dtype=object, copy=True)
        values[target] = [row[col] for row in rows]
        out[col] = pd.Series(values, index=out.index).infer_objects()
        if pd.api.types.is_numeric_dtype(synthetic[col]) and not pd.api.types.is_numeric_dtype(out[col]):
            out[col] = pd.to_numeric(out[col], errors="coerce")
    return PlantedCopies(synthetic=out, train_rows=train_rows, synthetic_rows=target)


def noise_masked(train: pd.DataFrame, rng: np.random.Generator, *, scale: float = 0.05,
                 swap: float = 0.05) -> pd.DataFrame:  # fmt: skip
    """``train`` as a noise-masked "synthetic" table: every numeric column plus Gaussian noise of ``scale`` times its
    standard deviation (rounded to whole numbers), a share ``swap`` of every other column's values replaced by values
    the column has. Every row still stands for one training record."""
    masked = train.copy()
    for col in masked.columns:
        if pd.api.types.is_numeric_dtype(masked[col]):
            masked[col] = masked[col] + rng.normal(0, scale * masked[col].std(), len(masked)).round()
        else:
            chosen = rng.random(len(masked)) < swap
            masked.loc[chosen, col] = rng.choice(train[col].unique(), int(chosen.sum()))
    return masked
