"""Nearest-neighbour Gower distance between records, in bounded memory (docs/methods.md §1 step 1).

For a real record ``x`` and a synthetic record ``s`` over the compared columns ``j``::

    d_G(x, s) = sum_j w_j c_j delta_j / sum_j w_j c_j

with ``delta_j = min(1, |x_j - s_j| / range_j)`` for numeric columns and
``delta_j = [x_j != s_j]`` for categorical ones, ``c_j = 0`` when either value is
missing (the column is left out of that pair's average, as in R's ``gower`` and
StatMatch) and ``w_j`` optional column weights (default 1). ``range_j`` is max - min
over the *real* records (training, holdout and auxiliary together), never the
synthetic ones; a numeric column that is constant in the real data is compared by
equality (0 when equal, 1 when not). A pair with no comparable column gets distance 1.

Use it in two steps: :func:`encode_for_gower` fits the ranges and category codes once
on the real tables and returns a :class:`GowerEncoding`; its ``transform`` turns each
table into an :class:`EncodedTable` (float32 and int32 arrays, no objects); then
:func:`nearest_gower` finds, for every query record, its nearest reference record
and the distance. The n x m distance matrix is never built: the reference is scanned
in blocks with a running minimum. On CPU the scan is a compiled numba kernel
(parallel over groups of 4 queries that share each pass over a cached reference
block). For the reference rows without missing values, both tables are first sorted
by their categories so similar records share blocks, each query starts where it would
sit in the sorted reference, and a block is skipped when a lower bound of its
distance (from the block's per-column min/max and the categories it holds) already
exceeds the best found: exact, and several times faster on real data. On a GPU (or
with ``backend="torch"``) the scan is done with torch in blocks, without pruning.

>>> import pandas as pd
>>> real = pd.DataFrame({"age": [20.0, 40.0, 60.0], "sex": ["F", "M", "F"]})
>>> enc = encode_for_gower([real], types=ColumnTypes(numeric=("age",), categorical=("sex",)))
>>> syn = pd.DataFrame({"age": [40.0, 30.0], "sex": ["F", "M"]})
>>> nn = nearest_gower(enc.transform(real), enc.transform(syn))
>>> nn.distance.round(3).tolist(), nn.index.tolist()
([0.25, 0.125, 0.25], [0, 1, 0])
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numba
import numpy as np
import pandas as pd

from audit_core.common.errors import InputError
from audit_core.common.runtime import ProgressFn, as_progress, sub_progress
from audit_core.common.tables import ColumnTypes

__all__ = [
    "EncodedTable",
    "GowerEncoding",
    "NearestNeighbours",
    "column_contributions",
    "encode_for_gower",
    "nearest_gower",
    "pair_distances",
    "pairwise_gower",
    "warm_up",
]

MISSING_CODE = -1
"""Category code of a missing value."""

_CLIP = 1e30  # encoded numeric values are clipped here so float32 never overflows to inf
_PAIRWISE_MAX_CELLS = 25_000_000


# --------------------------------------------------------------------------------------
# Encoding
# --------------------------------------------------------------------------------------
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
            :func:`audit_core.common.tables.align_tables`); other columns are ignored.

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
        :func:`audit_core.common.tables.align_tables`. Never pass the synthetic table: an
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


# --------------------------------------------------------------------------------------
# Exact float64 distances for given pairs (used for the final values and explanations)
# --------------------------------------------------------------------------------------
def _pair_terms(query: EncodedTable, reference: EncodedTable, qi: np.ndarray, ri: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Weighted terms ``w_j c_j delta_j`` and weights ``w_j c_j`` for pairs, float64 ``[k, p]``."""
    xq = query.numeric[qi].astype(np.float64)
    xr = reference.numeric[ri].astype(np.float64)
    with np.errstate(invalid="ignore"):
        delta_num = np.minimum(1.0, np.abs(xq - xr))
    ok_num = ~(np.isnan(xq) | np.isnan(xr))
    cq = query.codes[qi]
    cr = reference.codes[ri]
    delta_cat = (cq != cr).astype(np.float64)
    ok_cat = (cq != MISSING_CODE) & (cr != MISSING_CODE)
    weights = np.concatenate([query.numeric_weights, query.categorical_weights])
    ok = np.concatenate([ok_num, ok_cat], axis=1)
    delta = np.concatenate([np.where(ok_num, delta_num, 0.0), np.where(ok_cat, delta_cat, 0.0)], axis=1)
    used = ok * weights[None, :]
    return delta * used, used


def _check_pair(query: EncodedTable, reference: EncodedTable) -> None:
    if not isinstance(query, EncodedTable) or not isinstance(reference, EncodedTable):
        raise InputError("Gower distances need tables encoded by encode_for_gower(...).transform(df).")
    if (
        query.numeric_columns != reference.numeric_columns
        or query.categorical_columns != reference.categorical_columns
        or not np.array_equal(query.numeric_weights, reference.numeric_weights)
        or not np.array_equal(query.categorical_weights, reference.categorical_weights)
    ):
        raise InputError("The two tables were encoded differently; encode both with the same GowerEncoding.")


def pair_distances(
    query: EncodedTable, reference: EncodedTable, *, query_rows: Sequence[int], reference_rows: Sequence[int]
) -> np.ndarray:
    """Gower distance of each pair ``(query_rows[k], reference_rows[k])``, float64.

    Parameters
    ----------
    query, reference : EncodedTable
        Tables from the same :class:`GowerEncoding`.
    query_rows, reference_rows : sequence of int
        Row indices, same length.

    Returns
    -------
    numpy.ndarray
        float64 distances in [0, 1]; 1 where no column is comparable.
    """
    _check_pair(query, reference)
    qi = np.asarray(query_rows, dtype=np.int64)
    ri = np.asarray(reference_rows, dtype=np.int64)
    if qi.shape != ri.shape:
        raise InputError("query_rows and reference_rows must have the same length.")
    terms, used = _pair_terms(query, reference, qi, ri)
    den = used.sum(axis=1)
    num = terms.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), 1.0)


def column_contributions(
    query: EncodedTable,
    reference: EncodedTable,
    *,
    query_rows: Sequence[int],
    reference_rows: Sequence[int],
    column_order: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Each column's share of the Gower distance of given pairs, for explaining a record.

    Parameters
    ----------
    query, reference : EncodedTable
        Tables from the same :class:`GowerEncoding`.
    query_rows, reference_rows : sequence of int
        The pairs, e.g. records and their nearest synthetic rows
        (``NearestNeighbours.index``).
    column_order : sequence of str, optional
        Column order of the result (e.g. ``GowerEncoding.column_order``).

    Returns
    -------
    pandas.DataFrame
        One row per pair, one column per compared column: ``w_j delta_j / sum of
        compared w``, so each row sums to the pair's distance; NaN where the column
        was not compared (missing on either side). A pair with no comparable column
        (distance 1 by convention) has all NaN.
    """
    _check_pair(query, reference)
    qi = np.asarray(query_rows, dtype=np.int64)
    ri = np.asarray(reference_rows, dtype=np.int64)
    terms, used = _pair_terms(query, reference, qi, ri)
    den = used.sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(used > 0, terms / np.where(den > 0, den, 1.0), np.nan)
    frame = pd.DataFrame(share, columns=list(query.columns))
    if column_order is not None:
        frame = frame[list(column_order)]
    return frame


def pairwise_gower(a: EncodedTable, b: EncodedTable, *, max_cells: int = _PAIRWISE_MAX_CELLS) -> np.ndarray:
    """The dense Gower distance matrix between two small tables, float64 ``[len(a), len(b)]``.

    For tests and small displays only; refuses more than ``max_cells`` entries (use
    :func:`nearest_gower` for real sizes).
    """
    _check_pair(a, b)
    n, m = a.n_rows, b.n_rows
    if n * m > max_cells:
        raise InputError(f"A {n} x {m} distance matrix is too large to build; use nearest_gower, which works in blocks.")
    num = np.zeros((n, m))
    den = np.zeros((n, m))
    for j, w in enumerate(a.numeric_weights):
        x = a.numeric[:, j].astype(np.float64)[:, None]
        s = b.numeric[:, j].astype(np.float64)[None, :]
        ok = ~(np.isnan(x) | np.isnan(s))
        with np.errstate(invalid="ignore"):
            num += w * np.where(ok, np.minimum(1.0, np.abs(x - s)), 0.0)
        den += w * ok
    for j, w in enumerate(a.categorical_weights):
        x = a.codes[:, j][:, None]
        s = b.codes[:, j][None, :]
        ok = (x != MISSING_CODE) & (s != MISSING_CODE)
        num += w * (ok & (x != s))
        den += w * ok
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), 1.0)


# --------------------------------------------------------------------------------------
# Nearest neighbours
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class NearestNeighbours:
    """For each query record, its nearest reference record under Gower distance.

    Attributes
    ----------
    distance : numpy.ndarray
        float64 ``[n_query]`` distance to the nearest reference record, in [0, 1].
    index : numpy.ndarray
        int64 ``[n_query]`` row of that reference record (the lowest row among ties,
        up to float32 rounding in the scan).
    backend : str
        ``"numba"`` or ``"torch:<device>"``, for the record.
    """

    distance: np.ndarray = field(repr=False)
    index: np.ndarray = field(repr=False)
    backend: str = "numba"

    def contributions(self, query: EncodedTable, reference: EncodedTable, rows: Sequence[int]) -> pd.DataFrame:
        """Per-column shares of the distance for query ``rows`` and their nearest records.

        See :func:`column_contributions`.
        """
        rows = np.asarray(rows, dtype=np.int64)
        return column_contributions(query, reference, query_rows=rows, reference_rows=self.index[rows])


def _prepare(query: EncodedTable, reference: EncodedTable) -> dict[str, Any]:
    """Arrays for the kernels: query values with NaN -> 0 and per-query weights, reference transposed."""
    qnum = query.numeric
    qnan = np.isnan(qnum)
    q_num = np.where(qnan, np.float32(0), qnum).astype(np.float32)
    qw_num = np.where(qnan, 0.0, query.numeric_weights[None, :]).astype(np.float32)
    q_cat = np.ascontiguousarray(query.codes, dtype=np.int32)
    qw_cat = np.where(q_cat == MISSING_CODE, 0.0, query.categorical_weights[None, :]).astype(np.float32)
    rnum = reference.numeric
    rnan = np.isnan(rnum)
    r_num_t = np.ascontiguousarray(np.where(rnan, np.float32(0), rnum).T, dtype=np.float32)
    r_cat_t = np.ascontiguousarray(reference.codes.T, dtype=np.int32)
    r_missing = bool(rnan.any() or (reference.codes == MISSING_CODE).any())
    if r_missing:
        r_num_ok = np.ascontiguousarray((~rnan).T, dtype=np.float32)
        r_cat_ok = np.ascontiguousarray((reference.codes != MISSING_CODE).T, dtype=np.float32)
    else:
        r_num_ok = np.zeros((rnum.shape[1], 0), dtype=np.float32)
        r_cat_ok = np.zeros((reference.codes.shape[1], 0), dtype=np.float32)
    return {
        "q_num": np.ascontiguousarray(q_num),
        "qw_num": np.ascontiguousarray(qw_num),
        "q_cat": q_cat,
        "qw_cat": np.ascontiguousarray(qw_cat),
        "r_num_t": r_num_t,
        "r_cat_t": r_cat_t,
        "r_num_ok": r_num_ok,
        "r_cat_ok": r_cat_ok,
        "r_missing": r_missing,
    }


_NUMBA_LOCK = threading.Lock()  # numba's default threading layer must not be entered from two threads at once
_QUERY_TILE = 4  # queries sharing one pass over a reference block (the kernel is written for 4)
_NUMBA_BLOCK = 512  # reference rows per block: 4 x 512 accumulators and a 512-row column slice stay in L1


def _numba_cache_ok() -> bool:
    """numba caches compiled kernels beside this file, or in NUMBA_CACHE_DIR; skip caching where neither is writable.

    Only asks the file system (``os.access``): nothing is written at import.
    """
    import os

    if os.environ.get("NUMBA_CACHE_DIR"):
        return True
    here = os.path.dirname(os.path.abspath(__file__))
    cache = os.path.join(here, "__pycache__")
    return os.access(cache if os.path.isdir(cache) else here, os.W_OK)


_CACHE = _numba_cache_ok()
_MASK_OVERFLOW_BIT = 62  # block code masks: bit c for codes c < 62, bit 62 for "some larger code"


@numba.njit(inline="always", fastmath=True, boundscheck=False, cache=_CACHE)
def _best_of(acc, den, width, r0, r_order, r_missing, best, arg):
    """Running minimum over one block, ties to the lowest original row; a vectorised min first."""
    one = np.float32(1.0)
    zero = np.float32(0.0)
    if r_missing:
        for k in range(width):
            v = acc[k] / den[k] if den[k] > zero else one
            if v < best or (v == best and r_order[r0 + k] < arg):
                best = v
                arg = r_order[r0 + k]
        return best, arg
    low = acc[0]
    for k in range(width):
        low = min(low, acc[k])
    if low <= best:
        for k in range(width):
            v = acc[k]
            if v < best or (v == best and r_order[r0 + k] < arg):
                best = v
                arg = r_order[r0 + k]
    return best, arg


@numba.njit(inline="always", fastmath=True, boundscheck=False, cache=_CACHE)
def _lower_bound(q, b, q_num, qw_num, q_cat, qw_cat, b_lo, b_hi, b_mask):
    """A lower bound of the numerator for query q over every row of block b (exact pruning)."""
    one = np.float32(1.0)
    zero = np.float32(0.0)
    lb = zero
    for j in range(q_num.shape[1]):
        x = q_num[q, j]
        lo = b_lo[b, j]
        hi = b_hi[b, j]
        gap = lo - x if x < lo else (x - hi if x > hi else zero)
        lb += qw_num[q, j] * min(one, gap)
    for j in range(q_cat.shape[1]):
        c = q_cat[q, j]
        if c >= 0:
            bit = min(c, _MASK_OVERFLOW_BIT)
            if ((b_mask[b, j] >> bit) & 1) == 0:
                lb += qw_cat[q, j]
    return lb


@numba.njit(parallel=True, fastmath=True, nogil=True, boundscheck=False, cache=_CACHE)
def _gower_nn_kernel(  # pragma: no cover - compiled by numba
    q_num,
    qw_num,
    q_cat,
    qw_cat,
    r_num_t,
    r_cat_t,
    r_num_ok,
    r_cat_ok,
    r_missing,
    block,
    start_block,
    r_order,
    b_lo,
    b_hi,
    b_mask,
    best_d,
    best_i,
):
    # Queries come padded to a multiple of 4 (padding rows have weight 0); group t starts its
    # scan at block start_block[t] (where similar references sit) and wraps around.
    n = q_num.shape[0]
    pn = q_num.shape[1]
    pc = q_cat.shape[1]
    m = r_order.shape[0]
    n_blocks = (m + block - 1) // block
    one = np.float32(1.0)
    zero = np.float32(0.0)
    slack = np.float32(1e-5)
    for t in numba.prange(n // 4):
        q = 4 * t
        num = np.empty((4, block), dtype=np.float32)
        den = np.empty((4, block), dtype=np.float32)
        bd = np.full(4, np.inf, dtype=np.float32)
        bi = np.full(4, m, dtype=np.int64)
        tot = np.zeros(4, dtype=np.float32)
        for i in range(4):
            for j in range(pn):
                tot[i] += qw_num[q + i, j]
            for j in range(pc):
                tot[i] += qw_cat[q + i, j]
        for bb in range(n_blocks):
            b = (start_block[t] + bb) % n_blocks
            if not r_missing:
                # skip the block when no row in it can beat (or tie) any of the 4 current bests
                skip = True
                for i in range(4):
                    lb = _lower_bound(q + i, b, q_num, qw_num, q_cat, qw_cat, b_lo, b_hi, b_mask)
                    if lb <= bd[i] + slack * (tot[i] + one):
                        skip = False
                        break
                if skip:
                    continue
            r0 = b * block
            r1 = min(m, r0 + block)
            width = r1 - r0
            a0 = num[0, :width]
            a1 = num[1, :width]
            a2 = num[2, :width]
            a3 = num[3, :width]
            d0 = den[0, :width]
            d1 = den[1, :width]
            d2 = den[2, :width]
            d3 = den[3, :width]
            for k in range(width):
                a0[k] = zero
                a1[k] = zero
                a2[k] = zero
                a3[k] = zero
            if r_missing:
                for k in range(width):
                    d0[k] = zero
                    d1[k] = zero
                    d2[k] = zero
                    d3[k] = zero
            for j in range(pn):
                w0 = qw_num[q, j]
                w1 = qw_num[q + 1, j]
                w2 = qw_num[q + 2, j]
                w3 = qw_num[q + 3, j]
                if w0 == zero and w1 == zero and w2 == zero and w3 == zero:
                    continue
                x0 = q_num[q, j]
                x1 = q_num[q + 1, j]
                x2 = q_num[q + 2, j]
                x3 = q_num[q + 3, j]
                col = r_num_t[j, r0:r1]
                if r_missing:
                    ok = r_num_ok[j, r0:r1]
                    for k in range(width):
                        v = col[k]
                        o = ok[k]
                        a0[k] += w0 * o * min(one, abs(x0 - v))
                        a1[k] += w1 * o * min(one, abs(x1 - v))
                        a2[k] += w2 * o * min(one, abs(x2 - v))
                        a3[k] += w3 * o * min(one, abs(x3 - v))
                        d0[k] += w0 * o
                        d1[k] += w1 * o
                        d2[k] += w2 * o
                        d3[k] += w3 * o
                else:
                    for k in range(width):
                        v = col[k]
                        a0[k] += w0 * min(one, abs(x0 - v))
                        a1[k] += w1 * min(one, abs(x1 - v))
                        a2[k] += w2 * min(one, abs(x2 - v))
                        a3[k] += w3 * min(one, abs(x3 - v))
            for j in range(pc):
                w0 = qw_cat[q, j]
                w1 = qw_cat[q + 1, j]
                w2 = qw_cat[q + 2, j]
                w3 = qw_cat[q + 3, j]
                if w0 == zero and w1 == zero and w2 == zero and w3 == zero:
                    continue
                c0 = q_cat[q, j]
                c1 = q_cat[q + 1, j]
                c2 = q_cat[q + 2, j]
                c3 = q_cat[q + 3, j]
                col_c = r_cat_t[j, r0:r1]
                if r_missing:
                    ok = r_cat_ok[j, r0:r1]
                    for k in range(width):
                        v = col_c[k]
                        o = ok[k]
                        a0[k] += w0 * o if v != c0 else zero
                        a1[k] += w1 * o if v != c1 else zero
                        a2[k] += w2 * o if v != c2 else zero
                        a3[k] += w3 * o if v != c3 else zero
                        d0[k] += w0 * o
                        d1[k] += w1 * o
                        d2[k] += w2 * o
                        d3[k] += w3 * o
                else:
                    for k in range(width):
                        v = col_c[k]
                        a0[k] += w0 if v != c0 else zero
                        a1[k] += w1 if v != c1 else zero
                        a2[k] += w2 if v != c2 else zero
                        a3[k] += w3 if v != c3 else zero
            bd[0], bi[0] = _best_of(a0, d0, width, r0, r_order, r_missing, bd[0], bi[0])
            bd[1], bi[1] = _best_of(a1, d1, width, r0, r_order, r_missing, bd[1], bi[1])
            bd[2], bi[2] = _best_of(a2, d2, width, r0, r_order, r_missing, bd[2], bi[2])
            bd[3], bi[3] = _best_of(a3, d3, width, r0, r_order, r_missing, bd[3], bi[3])
        for i in range(4):
            if r_missing:
                best_d[q + i] = bd[i]
            elif tot[i] > zero:
                best_d[q + i] = bd[i] / tot[i]
            else:
                best_d[q + i] = one
            best_i[q + i] = bi[i]


def _sort_keys(r_cat: np.ndarray) -> list[int]:
    """Categorical columns by number of distinct codes in the reference, most first."""
    return sorted(range(r_cat.shape[1]), key=lambda j: -np.unique(r_cat[:, j]).size)


def _block_summaries(r_num: np.ndarray, r_cat: np.ndarray, block: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per reference block: min and max of each numeric column, and a bit mask of the codes present."""
    m = r_num.shape[0] if r_num.shape[1] else r_cat.shape[0]
    starts = np.arange(0, m, block)
    if r_num.shape[1]:
        b_lo = np.minimum.reduceat(r_num, starts, axis=0).astype(np.float32)
        b_hi = np.maximum.reduceat(r_num, starts, axis=0).astype(np.float32)
    else:
        b_lo = b_hi = np.zeros((starts.size, 0), dtype=np.float32)
    if r_cat.shape[1]:
        bits = np.left_shift(np.int64(1), np.clip(r_cat, 0, _MASK_OVERFLOW_BIT).astype(np.int64))
        b_mask = np.bitwise_or.reduceat(bits, starts, axis=0)
    else:
        b_mask = np.zeros((starts.size, 0), dtype=np.int64)
    return np.ascontiguousarray(b_lo), np.ascontiguousarray(b_hi), np.ascontiguousarray(b_mask)


def warm_up() -> None:
    """Compile (or load from numba's cache) the CPU kernel on a tiny input; cheap after the first time."""
    rng = np.random.default_rng(0)
    tiny = EncodedTable(
        numeric=rng.random((3, 2)).astype(np.float32),
        codes=np.array([[0], [1], [-1]], dtype=np.int32),
        numeric_columns=("a", "b"),
        categorical_columns=("c",),
        numeric_weights=np.ones(2),
        categorical_weights=np.ones(1),
    )
    _nearest_numba(tiny, tiny, block_rows=None, progress=None)
    no_missing = tiny.rows([0, 1])
    _nearest_numba(no_missing, no_missing, block_rows=None, progress=None)


def _nearest_numba(
    query: EncodedTable, reference: EncodedTable, *, block_rows: int | None, progress: ProgressFn | None
) -> tuple[np.ndarray, np.ndarray]:
    """Scan the complete reference rows (with pruning) and those with a missing value (without), apart.

    The two candidates of each query are compared in float64 (ties to the lower row).
    """
    incomplete = np.isnan(reference.numeric).any(axis=1) | (reference.codes == MISSING_CODE).any(axis=1)
    if not incomplete.any() or incomplete.all():
        return _scan_numba(query, reference, block_rows=block_rows, progress=progress)
    complete_rows = np.flatnonzero(~incomplete)
    partial_rows = np.flatnonzero(incomplete)
    share = complete_rows.size / reference.n_rows
    _, i1 = _scan_numba(query, reference.rows(complete_rows), block_rows=block_rows, progress=sub_progress(progress, 0.0, share))
    _, i2 = _scan_numba(query, reference.rows(partial_rows), block_rows=block_rows, progress=sub_progress(progress, share, 1.0))
    i1, i2 = complete_rows[i1], partial_rows[i2]
    rows = np.arange(query.n_rows)
    e1 = pair_distances(query, reference, query_rows=rows, reference_rows=i1)
    e2 = pair_distances(query, reference, query_rows=rows, reference_rows=i2)
    second = (e2 < e1) | ((e2 == e1) & (i2 < i1))
    return np.where(second, e2, e1).astype(np.float32), np.where(second, i2, i1)


def _scan_numba(
    query: EncodedTable, reference: EncodedTable, *, block_rows: int | None, progress: ProgressFn | None
) -> tuple[np.ndarray, np.ndarray]:
    """Sort both tables so similar records sit together, then scan blocks with exact pruning.

    A reference block is skipped for a group of 4 queries only when a lower bound of
    the distance over the whole block (from its per-column min/max and the set of
    categories present) exceeds every one of their current best distances: the
    result is the same as a full scan (ties go to the lowest original row).
    """
    arrays = _prepare(query, reference)
    n, m = query.n_rows, reference.n_rows
    block = int(block_rows or _NUMBA_BLOCK)
    r_num = arrays["r_num_t"].T
    r_cat = arrays["r_cat_t"].T
    r_order, q_order, q_pos = _scan_order(arrays, r_num, r_cat, n=n, m=m)
    r_num_s = np.ascontiguousarray(r_num[r_order])
    r_cat_s = np.ascontiguousarray(r_cat[r_order])
    b_lo, b_hi, b_mask = _block_summaries(r_num_s, r_cat_s, block)
    # r_num_ok / r_cat_ok stay unsorted: they are only used when r_order is the identity
    ref_args = (np.ascontiguousarray(r_num_s.T), np.ascontiguousarray(r_cat_s.T), arrays["r_num_ok"], arrays["r_cat_ok"])
    q_sorted, start_block = _sorted_queries(arrays, q_order, q_pos, block=block, n_blocks=(m + block - 1) // block)
    kernel_args = (*ref_args, arrays["r_missing"], block, r_order, b_lo, b_hi, b_mask)
    best_d, best_i = _run_gower_kernel(q_sorted, start_block, kernel_args, n=n, progress=progress)
    out_d = np.empty(n, dtype=np.float32)
    out_i = np.empty(n, dtype=np.int64)
    out_d[q_order] = best_d[:n]
    out_i[q_order] = best_i[:n]
    return out_d, out_i


def _scan_order(
    arrays: dict[str, Any], r_num: np.ndarray, r_cat: np.ndarray, *, n: int, m: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(r_order, q_order, q_pos)``: the scan order of the reference rows and of the queries, and each query's start.

    The reference and the queries are sorted by the same keys (categorical columns with
    the most distinct codes first, then the first two numeric columns), and each query's
    scan starts at the block where it would sit in the sorted reference (``q_pos``: the
    number of reference rows before it), so the best match comes early and most other
    blocks are then skipped. Only used when the reference has no missing value; with
    missing values both orders are the identity and every scan starts at block 0.
    """
    if arrays["r_missing"]:
        return np.arange(m, dtype=np.int64), np.arange(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
    cat_order = _sort_keys(r_cat)

    def keys(cat: np.ndarray, num: np.ndarray) -> list[np.ndarray]:
        return [cat[:, j] for j in cat_order] + [num[:, j] for j in range(min(2, num.shape[1]))]

    merged_keys = [
        np.concatenate([rk, qk]) for rk, qk in zip(keys(r_cat, r_num), keys(arrays["q_cat"], arrays["q_num"]), strict=True)
    ]
    merged = np.lexsort(merged_keys[::-1])  # np.lexsort sorts by the last key first
    is_ref = merged < m
    refs_before = np.cumsum(is_ref) - is_ref
    r_order = merged[is_ref].astype(np.int64)
    q_order = (merged[~is_ref] - m).astype(np.int64)
    q_pos = refs_before[~is_ref].astype(np.int64)
    return r_order, q_order, q_pos


def _sorted_queries(
    arrays: dict[str, Any], q_order: np.ndarray, q_pos: np.ndarray, *, block: int, n_blocks: int
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """The query arrays in scan order, padded to a multiple of 4 rows, and each group of 4's first block.

    The kernel takes queries in groups of 4; padding rows have weight 0 and start where
    the last query does.
    """
    n = q_order.size
    pad = (-n) % _QUERY_TILE
    q_sorted = {}
    for key in ("q_num", "qw_num", "q_cat", "qw_cat"):
        arr = arrays[key][q_order]
        if pad:
            arr = np.concatenate([arr, np.zeros((pad, arr.shape[1]), dtype=arr.dtype)])
        q_sorted[key] = np.ascontiguousarray(arr)
    pos = np.concatenate([q_pos, np.full(pad, q_pos[-1] if n else 0, dtype=np.int64)])
    start_block = np.minimum(pos[::_QUERY_TILE] // block, n_blocks - 1).astype(np.int64)
    return q_sorted, start_block


def _run_gower_kernel(
    q_sorted: dict[str, np.ndarray], start_block: np.ndarray, kernel_args: tuple, *, n: int, progress: ProgressFn | None
) -> tuple[np.ndarray, np.ndarray]:
    """Run :func:`_gower_nn_kernel` over the sorted, padded queries in chunks, reporting progress after each.

    ``kernel_args`` are the kernel's reference arguments, from ``r_num_t`` to ``b_mask``
    except ``start_block``. Returns the best distance and row of every padded query.
    """
    ref_args, block_args = kernel_args[:6], kernel_args[6:]
    n_pad = q_sorted["q_num"].shape[0]
    best_d = np.empty(n_pad, dtype=np.float32)
    best_i = np.empty(n_pad, dtype=np.int64)
    report = as_progress(progress)
    # Chunks of queries between progress calls; each chunk keeps every core busy.
    chunk = max(2048, _QUERY_TILE * 128 * numba.get_num_threads())
    for start in range(0, n_pad, chunk):
        stop = min(n_pad, start + chunk)
        sl = slice(start, stop)
        with _NUMBA_LOCK:
            _gower_nn_kernel(
                q_sorted["q_num"][sl],
                q_sorted["qw_num"][sl],
                q_sorted["q_cat"][sl],
                q_sorted["qw_cat"][sl],
                *ref_args,
                start_block[start // _QUERY_TILE : stop // _QUERY_TILE],
                *block_args,
                best_d[sl],
                best_i[sl],
            )
        done = min(stop, n)
        report(done / n, f"nearest synthetic record: {done:,} of {n:,} records")
    return best_d, best_i


def _nearest_torch(
    query: EncodedTable,
    reference: EncodedTable,
    *,
    block_rows: int | None,
    device: Any,
    progress: ProgressFn | None,
) -> tuple[np.ndarray, np.ndarray, str]:
    """The torch scan (:func:`_torch_scan`) on ``device``, with blocks sized for it; returns the backend's name too."""
    import torch

    from audit_core.common.runtime import pick_device

    dev = pick_device(str(device)) if device is not None else pick_device()
    n = query.n_rows
    m = reference.n_rows
    tensors = _torch_arrays(_prepare(query, reference), dev)
    # Block shape: a [query x reference] tile of 2**20 cells on CPU (4 MiB per float32 temporary),
    # 2**25 on a GPU (128 MiB); a few such temporaries live at once.
    on_cpu = dev.type == "cpu"
    rb = int(block_rows or (2048 if on_cpu else 32768))
    qb = max(1, min(n, (1 << (20 if on_cpu else 25)) // max(1, min(rb, m))))
    # On CPU this path is the fallback (numba is the fast one): run it on one thread, because
    # torch's thread pool stalls on many small operations when the machine is busy.
    threads = torch.get_num_threads()
    if on_cpu:
        torch.set_num_threads(1)
    try:
        best_d, best_i = _torch_scan(tensors, n=n, m=m, qb=qb, rb=rb, progress=progress)
    finally:
        if on_cpu:
            torch.set_num_threads(threads)
    return best_d, best_i, f"torch:{dev}"


def _torch_arrays(arrays: dict[str, Any], dev) -> dict[str, Any]:
    """The kernel arrays of :func:`_prepare` as tensors on ``dev`` (the reference masks only when they are needed)."""
    import torch

    def to(x: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(np.ascontiguousarray(x)).to(dev)

    out: dict[str, Any] = {key: to(arrays[key]) for key in ("q_num", "qw_num", "q_cat", "qw_cat", "r_num_t", "r_cat_t")}
    r_missing = arrays["r_missing"]
    out["r_missing"] = r_missing
    out["r_num_ok"] = to(arrays["r_num_ok"]) if r_missing else None
    out["r_cat_ok"] = to(arrays["r_cat_ok"]) if r_missing else None
    return out


def _torch_scan(
    t: dict[str, Any], *, n: int, m: int, qb: int, rb: int, progress: ProgressFn | None
) -> tuple[np.ndarray, np.ndarray]:
    """Nearest reference row of every query, ``qb`` queries x ``rb`` reference rows at a time (float32).

    Without missing reference values the denominator is fixed per query, so numerators
    are compared; with them the distance is divided by ``sum_j w_qj ok_rj`` (1 where that is 0).
    """
    import torch

    q_num, qw_num, q_cat, qw_cat = t["q_num"], t["qw_num"], t["q_cat"], t["qw_cat"]
    r_num_t, r_cat_t, r_num_ok, r_cat_ok = t["r_num_t"], t["r_cat_t"], t["r_num_ok"], t["r_cat_ok"]
    r_missing = t["r_missing"]
    dev = q_num.device
    pn, pc = q_num.shape[1], q_cat.shape[1]
    report = as_progress(progress)
    best_d = np.empty(n, dtype=np.float32)
    best_i = np.empty(n, dtype=np.int64)
    # Preallocated tiles: fresh multi-MiB tensors per column would spend the time in the allocator.
    f32 = {"dtype": torch.float32, "device": dev}
    acc_buf = torch.empty((qb, rb), **f32)
    tmp_buf = torch.empty((qb, rb), **f32)
    den_buf = torch.empty((qb, rb), **f32) if r_missing else None
    flag_buf = torch.empty((qb, rb), dtype=torch.bool, device=dev)
    with torch.no_grad():
        for q0 in range(0, n, qb):
            q1 = min(n, q0 + qb)
            rows = q1 - q0
            run_d = torch.full((rows,), float("inf"), **f32)
            run_i = torch.zeros((rows,), dtype=torch.int64, device=dev)
            for r0 in range(0, m, rb):
                r1 = min(m, r0 + rb)
                acc = acc_buf[:rows, : r1 - r0]
                tmp = tmp_buf[:rows, : r1 - r0]
                flag = flag_buf[:rows, : r1 - r0]
                acc.zero_()
                for j in range(pn):
                    torch.sub(q_num[q0:q1, j : j + 1], r_num_t[j, r0:r1][None, :], out=tmp)
                    tmp.abs_().clamp_(max=1.0)
                    if r_missing:
                        tmp.mul_(r_num_ok[j, r0:r1][None, :])
                    acc.addcmul_(qw_num[q0:q1, j : j + 1], tmp)
                for j in range(pc):
                    torch.ne(q_cat[q0:q1, j : j + 1], r_cat_t[j, r0:r1][None, :], out=flag)
                    tmp.copy_(flag)
                    if r_missing:
                        tmp.mul_(r_cat_ok[j, r0:r1][None, :])
                    acc.addcmul_(qw_cat[q0:q1, j : j + 1], tmp)
                if r_missing:
                    # den[q, r] = sum_j w_qj * ok_rj: one matrix product
                    den = den_buf[:rows, : r1 - r0]
                    torch.mm(qw_num[q0:q1], r_num_ok[:, r0:r1], out=den)
                    den.addmm_(qw_cat[q0:q1], r_cat_ok[:, r0:r1])
                    torch.le(den, 0.0, out=flag)
                    acc.div_(den.clamp_(min=1e-30)).masked_fill_(flag, 1.0)
                # without missing reference values the denominator is fixed per query: compare numerators
                val, arg = torch.min(acc, dim=1)
                better = val < run_d
                run_d = torch.where(better, val, run_d)
                run_i = torch.where(better, arg + r0, run_i)
            best_d[q0:q1] = run_d.cpu().numpy()
            best_i[q0:q1] = run_i.cpu().numpy()
            report(q1 / n, f"nearest synthetic record: {q1:,} of {n:,} records")
    return best_d, best_i


def nearest_gower(
    query: EncodedTable,
    reference: EncodedTable,
    *,
    block_rows: int | None = None,
    backend: str = "auto",
    device: Any = None,
    progress: ProgressFn | None = None,
) -> NearestNeighbours:
    """Gower distance from every query record to its nearest reference record.

    Parameters
    ----------
    query : EncodedTable
        The records to score (e.g. the attack set: training and holdout records).
    reference : EncodedTable
        The records to search (e.g. the synthetic table). Both from the same
        :class:`GowerEncoding`.
    block_rows : int, optional
        Reference rows per block (default 512 for numba, 2048 for torch on CPU,
        32768 on a GPU). Memory stays bounded whatever the table sizes.
    backend : {"auto", "numba", "torch"}
        ``"auto"`` uses torch on a GPU when one is present (or when ``device`` is
        given), the numba kernel otherwise.
    device : str or torch.device, optional
        Torch device for the torch backend (default: :func:`audit_core.common.runtime.pick_device`).
    progress : ProgressFn, optional
        Called with the fraction of query records done.

    Returns
    -------
    NearestNeighbours
        ``distance`` (float64, recomputed exactly for the chosen pair) and ``index``.

    Notes
    -----
    docs/methods.md §1 step 1. The scan runs in float32; the returned distance of the
    chosen pair is recomputed in float64 from the encoded values, so it matches a
    direct reading of the formula to about 1e-6. An exact copy of a query record in
    the reference always gives distance 0.
    """
    _check_pair(query, reference)
    if reference.n_rows == 0:
        raise InputError("The reference (synthetic) table has no rows; there is nothing to compare with.")
    n = query.n_rows
    if n == 0:
        return NearestNeighbours(distance=np.zeros(0), index=np.zeros(0, dtype=np.int64), backend="none")
    if backend not in ("auto", "numba", "torch"):
        raise InputError(f"Unknown distance backend '{backend}'; use 'auto', 'numba' or 'torch'.")
    if block_rows is not None and int(block_rows) < 1:
        raise InputError("block_rows must be at least 1.")
    use_torch = backend == "torch"
    if backend == "auto":
        if device is not None:
            use_torch = str(device) != "cpu"
        else:
            try:
                import torch

                use_torch = bool(torch.cuda.is_available())
            except ImportError:  # pragma: no cover - torch is a hard requirement
                use_torch = False
    if use_torch:
        _, index, name = _nearest_torch(query, reference, block_rows=block_rows, device=device, progress=progress)
    else:
        _, index = _nearest_numba(query, reference, block_rows=block_rows, progress=progress)
        name = "numba"
    index = index.astype(np.int64)
    distance = pair_distances(query, reference, query_rows=np.arange(n), reference_rows=index)
    return NearestNeighbours(distance=distance, index=index, backend=name)
