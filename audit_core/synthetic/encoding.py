"""The Gower encoding: ranges and category codes fitted once on the real records (docs/methods.md §1 step 1).

:func:`encode_for_gower` fits, on the real tables only (training, holdout and auxiliary together,
never the synthetic one), each numeric column's min and range and each categorical column's
codes, and returns a :class:`GowerEncoding`; its ``transform`` turns any table (real or
synthetic) into an :class:`EncodedTable` (float32 and int32 arrays, no objects) that the
distance formula (:mod:`audit_core.synthetic.distance`) and the scans
(:mod:`audit_core.synthetic.nearest_scan`) read. A numeric column that is constant in the real
data is compared by equality and is encoded with the categorical ones.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from audit_core.common.column_types import ColumnTypes
from audit_core.common.errors import InputError

__all__ = ["MISSING_CODE", "EncodedTable", "GowerEncoding", "check_same_encoding", "encode_for_gower"]

MISSING_CODE = -1
"""Category code of a missing value."""

_CLIP = 1e30  # encoded numeric values are clipped here so float32 never overflows to inf


@dataclass(frozen=True)
class EncodedTable:
    """A table ready for the distance kernels (made by :meth:`GowerEncoding.transform`).

    Attributes
    ----------
    numeric : numpy.ndarray
        float32 ``[n_rows, n_numeric]``: ``(x - min_j) / range_j`` with the real
        records' min and range, NaN where missing.
    codes : numpy.ndarray
        int32 ``[n_rows, n_categorical]``: category codes shared by every table of
        the same encoding, ``-1`` where missing. Numeric columns that are constant in
        the real data are compared by equality and therefore sit here.
    numeric_columns, categorical_columns : tuple of str
        Column names of the two blocks.
    numeric_weights, categorical_weights : numpy.ndarray
        float64 column weights of the two blocks.
    """

    numeric: np.ndarray = field(repr=False)
    codes: np.ndarray = field(repr=False)
    numeric_columns: tuple[str, ...]
    categorical_columns: tuple[str, ...]
    numeric_weights: np.ndarray = field(repr=False)
    categorical_weights: np.ndarray = field(repr=False)

    @property
    def n_rows(self) -> int:
        """Number of records."""
        return int(self.numeric.shape[0])

    def __len__(self) -> int:
        return self.n_rows

    @property
    def columns(self) -> tuple[str, ...]:
        """All compared columns, numeric block first."""
        return self.numeric_columns + self.categorical_columns

    def rows(self, index: np.ndarray | Sequence[int]) -> EncodedTable:
        """The records at ``index`` as a new :class:`EncodedTable`."""
        index = np.asarray(index, dtype=np.int64)
        return EncodedTable(
            numeric=self.numeric[index],
            codes=self.codes[index],
            numeric_columns=self.numeric_columns,
            categorical_columns=self.categorical_columns,
            numeric_weights=self.numeric_weights,
            categorical_weights=self.categorical_weights,
        )


def _label_code(label: str, offset: int) -> int:
    """A stable code >= offset for a category the real data never showed.

    The same label gets the same code in every table (so two tables with the same
    unseen label still match); different unseen labels collide with probability
    about 2**-31 per pair.
    """
    digest = hashlib.blake2b(label.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    span = np.iinfo(np.int32).max - offset
    return offset + int.from_bytes(digest, "little") % span


def _as_labels(series: pd.Series, *, constant_numeric: bool) -> tuple[np.ndarray, list[Any]]:
    """Factorize a column into (codes, labels-as-str); missing -> code -1."""
    if constant_numeric:
        values = pd.to_numeric(series, errors="coerce").astype("float64")
        codes, uniques = pd.factorize(values, use_na_sentinel=True)
        return codes, [repr(float(u)) for u in uniques]
    codes, uniques = pd.factorize(series, use_na_sentinel=True)
    return codes, [str(u) for u in uniques]


@dataclass(frozen=True)
class GowerEncoding:
    """Ranges and category codes fitted once on the real records (docs/methods.md §1 step 1).

    Attributes
    ----------
    numeric_columns : tuple of str
        Numeric columns compared by scaled absolute difference.
    mins, ranges : numpy.ndarray
        float64 per numeric column: min and (max - min) over the real records.
    categorical_columns : tuple of str
        Columns compared by equality: the categorical ones, then numeric columns that
        are constant in the real data.
    categories : tuple of tuple of str
        Per categorical column, the labels seen in the real data; label ``k`` has code ``k``.
    constant_numeric : tuple of str
        The numeric columns compared by equality because their real range is 0.
    numeric_weights, categorical_weights : numpy.ndarray
        float64 column weights.
    column_order : tuple of str
        The compared columns in the order of the :class:`ColumnTypes` given.
    """

    numeric_columns: tuple[str, ...]
    mins: np.ndarray = field(repr=False)
    ranges: np.ndarray = field(repr=False)
    categorical_columns: tuple[str, ...]
    categories: tuple[tuple[str, ...], ...] = field(repr=False)
    constant_numeric: tuple[str, ...]
    numeric_weights: np.ndarray = field(repr=False)
    categorical_weights: np.ndarray = field(repr=False)
    column_order: tuple[str, ...]

    def transform(self, df: pd.DataFrame) -> EncodedTable:
        """Encode a table (real or synthetic) with the fitted ranges and codes.

        Parameters
        ----------
        df : pandas.DataFrame
            Must hold every compared column (as aligned by
            :func:`audit_core.common.alignment.align_tables`); other columns are ignored.

        Returns
        -------
        EncodedTable
            Numeric values scaled by the real ranges (values outside the real range
            are kept: the distance clips each term at 1), category codes with unseen
            labels mapped to fresh codes that match no real category.
        """
        missing = [c for c in self.column_order if c not in df.columns]
        if missing:
            raise InputError(
                "The table to encode lacks the column(s) " + ", ".join(f"'{c}'" for c in missing) + "; align the tables first."
            )
        n = len(df)
        numeric = np.empty((n, len(self.numeric_columns)), dtype=np.float32)
        for j, col in enumerate(self.numeric_columns):
            try:
                values = np.asarray(df[col], dtype=np.float64)
            except (TypeError, ValueError) as exc:
                raise InputError(f"Column '{col}' must be numeric; align the tables before encoding.") from exc
            with np.errstate(invalid="ignore", over="ignore"):
                scaled = (values - self.mins[j]) / self.ranges[j]
            numeric[:, j] = np.clip(scaled, -_CLIP, _CLIP)  # NaN stays NaN
        codes = np.empty((n, len(self.categorical_columns)), dtype=np.int32)
        for j, col in enumerate(self.categorical_columns):
            raw, labels = _as_labels(df[col].reset_index(drop=True), constant_numeric=col in self.constant_numeric)
            known = {label: k for k, label in enumerate(self.categories[j])}
            offset = len(self.categories[j])
            table = np.array(
                [known[label] if label in known else _label_code(label, offset) for label in labels] + [MISSING_CODE],
                dtype=np.int32,
            )
            codes[:, j] = table[raw]  # raw == -1 picks the trailing MISSING_CODE
        return EncodedTable(
            numeric=numeric,
            codes=codes,
            numeric_columns=self.numeric_columns,
            categorical_columns=self.categorical_columns,
            numeric_weights=self.numeric_weights,
            categorical_weights=self.categorical_weights,
        )


def _check_weights(weights: Mapping[str, float] | None, columns: Sequence[str]) -> dict[str, float]:
    out = dict.fromkeys(columns, 1.0)
    if weights is None:
        return out
    unknown = [c for c in weights if c not in out]
    if unknown:
        raise InputError("Weights were given for column(s) " + ", ".join(f"'{c}'" for c in unknown) + " that are not compared.")
    for col, value in weights.items():
        w = float(value)
        if not np.isfinite(w) or w < 0:
            raise InputError(f"The weight of column '{col}' is {value}; weights must be finite and at least 0.")
        out[col] = w
    if not any(v > 0 for v in out.values()):
        raise InputError("Every column weight is 0; give at least one column a positive weight.")
    return out


def encode_for_gower(
    frames_real: Sequence[pd.DataFrame],
    *,
    types: ColumnTypes,
    weights: Mapping[str, float] | None = None,
) -> GowerEncoding:
    """Fit the Gower ranges and category codes on the real records.

    Parameters
    ----------
    frames_real : sequence of pandas.DataFrame
        The real tables (training, holdout, auxiliary), already aligned by
        :func:`audit_core.common.alignment.align_tables`. Never pass the synthetic table: an
        outlier there must not rescale everyone (docs/methods.md §1 step 1).
    types : ColumnTypes
        Which columns are numeric and which categorical.
    weights : mapping of str to float, optional
        Column weights (default 1 for every column; 0 leaves a column out).

    Returns
    -------
    GowerEncoding
        Call ``.transform(df)`` on each table to compare.
    """
    if not frames_real:
        raise InputError("No real table was given to fit the Gower ranges; pass the training table at least.")
    columns = list(types.columns)
    if not columns:
        raise InputError("No column is compared; mark at least one column numeric or categorical.")
    for k, frame in enumerate(frames_real):
        lacking = [c for c in columns if c not in frame.columns]
        if lacking:
            raise InputError(
                f"Real table {k} lacks the column(s) " + ", ".join(f"'{c}'" for c in lacking) + "; align the tables first."
            )
    w = _check_weights(weights, columns)
    num_cols: list[str] = []
    mins: list[float] = []
    ranges: list[float] = []
    constant: list[str] = []
    for col in types.numeric:
        try:
            values = np.concatenate([np.asarray(f[col], dtype=np.float64) for f in frames_real])
        except (TypeError, ValueError) as exc:
            raise InputError(f"Column '{col}' must be numeric; align the tables before encoding.") from exc
        finite = values[np.isfinite(values)]
        if finite.size == 0:
            raise InputError(f"Column '{col}' has no values in the real tables; drop it or align the tables first.")
        lo, hi = float(finite.min()), float(finite.max())
        if hi > lo:
            num_cols.append(col)
            mins.append(lo)
            ranges.append(hi - lo)
        else:
            constant.append(col)
    cat_cols = list(types.categorical) + constant
    categories: list[tuple[str, ...]] = []
    for col in cat_cols:
        pooled = pd.concat([f[col].reset_index(drop=True) for f in frames_real], ignore_index=True)
        _, labels = _as_labels(pooled, constant_numeric=col in constant)
        categories.append(tuple(labels))
    return GowerEncoding(
        numeric_columns=tuple(num_cols),
        mins=np.asarray(mins, dtype=np.float64),
        ranges=np.asarray(ranges, dtype=np.float64),
        categorical_columns=tuple(cat_cols),
        categories=tuple(categories),
        constant_numeric=tuple(constant),
        numeric_weights=np.asarray([w[c] for c in num_cols], dtype=np.float64),
        categorical_weights=np.asarray([w[c] for c in cat_cols], dtype=np.float64),
        column_order=tuple(columns),
    )


def check_same_encoding(query: EncodedTable, reference: EncodedTable) -> None:
    """Refuse two tables that were not encoded by the same :class:`GowerEncoding` (their distances would mean nothing)."""
    if not isinstance(query, EncodedTable) or not isinstance(reference, EncodedTable):
        raise InputError("Gower distances need tables encoded by encode_for_gower(...).transform(df).")
    if (
        query.numeric_columns != reference.numeric_columns
        or query.categorical_columns != reference.categorical_columns
        or not np.array_equal(query.numeric_weights, reference.numeric_weights)
        or not np.array_equal(query.categorical_weights, reference.categorical_weights)
    ):
        raise InputError("The two tables were encoded differently; encode both with the same GowerEncoding.")
