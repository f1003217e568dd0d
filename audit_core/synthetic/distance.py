"""Gower distance between records, and each record's nearest neighbour (docs/methods.md §1 step 1).

For a real record ``x`` and a synthetic record ``s`` over the compared columns ``j``::

    d_G(x, s) = sum_j w_j c_j delta_j / sum_j w_j c_j

with ``delta_j = min(1, |x_j - s_j| / range_j)`` for numeric columns and
``delta_j = [x_j != s_j]`` for categorical ones, ``c_j = 0`` when either value is
missing (the column is left out of that pair's average, as in R's ``gower`` and
StatMatch) and ``w_j`` optional column weights (default 1). ``range_j`` is max - min
over the *real* records (training, holdout and auxiliary together), never the
synthetic ones; a numeric column that is constant in the real data is compared by
equality (0 when equal, 1 when not). A pair with no comparable column gets distance 1.

Use it in two steps: :func:`audit_core.synthetic.encoding.encode_for_gower` fits the ranges
and category codes once on the real tables; its ``transform`` turns each table into an
:class:`~audit_core.synthetic.encoding.EncodedTable`; then :func:`nearest_gower` finds, for
every query record, its nearest reference record and the distance (the blockwise scans are in
:mod:`audit_core.synthetic.nearest_scan`). :func:`pair_distances` and
:func:`column_contributions` read the formula in float64 for given pairs (the final values
and the explanations).

>>> import pandas as pd
>>> from audit_core.common.column_types import ColumnTypes
>>> from audit_core.synthetic.encoding import encode_for_gower
>>> real = pd.DataFrame({"age": [20.0, 40.0, 60.0], "sex": ["F", "M", "F"]})
>>> enc = encode_for_gower([real], types=ColumnTypes(numeric=("age",), categorical=("sex",)))
>>> syn = pd.DataFrame({"age": [40.0, 30.0], "sex": ["F", "M"]})
>>> nn = nearest_gower(enc.transform(real), enc.transform(syn))
>>> nn.distance.round(3).tolist(), nn.index.tolist()
([0.25, 0.125, 0.25], [0, 1, 0])
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from audit_core.common.errors import InputError
from audit_core.common.runtime import ProgressFn, sub_progress
from audit_core.synthetic.encoding import MISSING_CODE, EncodedTable, check_same_encoding
from audit_core.synthetic.nearest_scan import scan_numba, scan_numba_k, scan_torch, scan_torch_k

__all__ = [
    "NearestK",
    "NearestNeighbours",
    "Rows",
    "column_contributions",
    "nearest_gower",
    "nearest_k_gower",
    "pair_distances",
    "pairwise_gower",
    "warm_up",
]

_PAIRWISE_MAX_CELLS = 25_000_000

Rows = np.ndarray | Sequence[int]
"""Row positions in an encoded table: an integer array or a sequence of ints."""


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


def pair_distances(
    query: EncodedTable, reference: EncodedTable, *, query_rows: Rows, reference_rows: Rows
) -> np.ndarray:
    """Gower distance of each pair ``(query_rows[k], reference_rows[k])``, float64.

    Parameters
    ----------
    query, reference : EncodedTable
        Tables from the same :class:`~audit_core.synthetic.encoding.GowerEncoding`.
    query_rows, reference_rows : sequence of int
        Row indices, same length.

    Returns
    -------
    numpy.ndarray
        float64 distances in [0, 1]; 1 where no column is comparable.
    """
    check_same_encoding(query, reference)
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
    query_rows: Rows,
    reference_rows: Rows,
    column_order: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Each column's share of the Gower distance of given pairs, for explaining a record.

    Parameters
    ----------
    query, reference : EncodedTable
        Tables from the same :class:`~audit_core.synthetic.encoding.GowerEncoding`.
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
    check_same_encoding(query, reference)
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
    check_same_encoding(a, b)
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

    def contributions(self, query: EncodedTable, reference: EncodedTable, rows: Rows) -> pd.DataFrame:
        """Per-column shares of the distance for query ``rows`` and their nearest records.

        See :func:`column_contributions`.
        """
        index = np.asarray(rows, dtype=np.int64)
        return column_contributions(query, reference, query_rows=index, reference_rows=self.index[index])


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
        return scan_numba(query, reference, block_rows=block_rows, progress=progress)
    complete_rows = np.flatnonzero(~incomplete)
    partial_rows = np.flatnonzero(incomplete)
    share = complete_rows.size / reference.n_rows
    _, i1 = scan_numba(query, reference.rows(complete_rows), block_rows=block_rows, progress=sub_progress(progress, 0.0, share))
    _, i2 = scan_numba(query, reference.rows(partial_rows), block_rows=block_rows, progress=sub_progress(progress, share, 1.0))
    i1, i2 = complete_rows[i1], partial_rows[i2]
    rows = np.arange(query.n_rows)
    e1 = pair_distances(query, reference, query_rows=rows, reference_rows=i1)
    e2 = pair_distances(query, reference, query_rows=rows, reference_rows=i2)
    second = (e2 < e1) | ((e2 == e1) & (i2 < i1))
    return np.where(second, e2, e1).astype(np.float32), np.where(second, i2, i1)


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
        :class:`~audit_core.synthetic.encoding.GowerEncoding`.
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
    check_same_encoding(query, reference)
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
        _, index, name = scan_torch(query, reference, block_rows=block_rows, device=device, progress=progress)
    else:
        _, index = _nearest_numba(query, reference, block_rows=block_rows, progress=progress)
        name = "numba"
    index = index.astype(np.int64)
    distance = pair_distances(query, reference, query_rows=np.arange(n), reference_rows=index)
    return NearestNeighbours(distance=distance, index=index, backend=name)


@dataclass(frozen=True)
class NearestK:
    """For each query record, its ``k`` nearest reference records under Gower distance, nearest first.

    Attributes
    ----------
    distance : numpy.ndarray
        float64 ``[n_query, k]`` distances (recomputed exactly for the chosen pairs), ascending per row.
    index : numpy.ndarray
        int64 ``[n_query, k]`` reference rows (ties to the lower row, up to float32 rounding in the scan).
    """

    distance: np.ndarray = field(repr=False)
    index: np.ndarray = field(repr=False)


def _exact_top_k(query: EncodedTable, reference: EncodedTable, index: np.ndarray, k: int) -> NearestK:
    """Candidates ``index`` (``[n, c]``, c >= k) re-scored in float64 and the ``k`` best kept (distance, then row)."""
    n, c = index.shape
    rows = np.repeat(np.arange(n), c)
    d = pair_distances(query, reference, query_rows=rows, reference_rows=index.ravel()).reshape(n, c)
    order = np.lexsort((index, d), axis=1)[:, :k]
    return NearestK(distance=np.take_along_axis(d, order, axis=1), index=np.take_along_axis(index, order, axis=1))


def nearest_k_gower(
    query: EncodedTable,
    reference: EncodedTable,
    *,
    k: int,
    block_rows: int | None = None,
    backend: str = "auto",
    progress: ProgressFn | None = None,
) -> NearestK:
    """The ``k`` nearest reference records of every query record (:func:`nearest_gower` for ``k`` > 1).

    The same scans (the pruned numba kernel on a CPU, torch on a GPU) keep a running top-k
    instead of a running minimum; the chosen pairs' distances are recomputed in float64. A
    reference with fewer than ``k`` rows gives its rows and then distance 1 at row -1.
    Reference rows with a missing value are scanned apart (as :func:`nearest_gower` does) and
    the two candidate lists merged in float64.
    """
    check_same_encoding(query, reference)
    k = int(k)
    if k < 1:
        raise InputError(f"k must be at least 1; got {k}.")
    if reference.n_rows == 0:
        raise InputError("The reference (synthetic) table has no rows; there is nothing to compare with.")
    n, m = query.n_rows, reference.n_rows
    kk = min(k, m)
    if n == 0:
        return NearestK(distance=np.zeros((0, k)), index=np.zeros((0, k), dtype=np.int64))
    use_torch = backend == "torch"
    if backend == "auto":
        import torch

        use_torch = bool(torch.cuda.is_available())
    if use_torch:
        _, index, _ = scan_torch_k(query, reference, k=kk, block_rows=block_rows, device=None, progress=progress)
        result = _exact_top_k(query, reference, index, kk)
    else:
        incomplete = np.isnan(reference.numeric).any(axis=1) | (reference.codes == MISSING_CODE).any(axis=1)
        kinds = [np.arange(m)] if not incomplete.any() or incomplete.all() else [np.flatnonzero(~incomplete),
                                                                                  np.flatnonzero(incomplete)]  # fmt: skip
        found, start = [], 0.0
        for rows in kinds:
            share = start + rows.size / m
            _, i = scan_numba_k(query, reference.rows(rows), k=min(kk, rows.size), block_rows=block_rows,
                                progress=sub_progress(progress, start, share))  # fmt: skip
            found.append(rows[i])
            start = share
        result = _exact_top_k(query, reference, np.concatenate(found, axis=1), kk)
    if kk == k:
        return result
    pad = k - kk
    return NearestK(distance=np.concatenate([result.distance, np.ones((n, pad))], axis=1),
                    index=np.concatenate([result.index, np.full((n, pad), -1, dtype=np.int64)], axis=1))  # fmt: skip
