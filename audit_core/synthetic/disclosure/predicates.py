"""Singling-out predicates: conjunctions of ``(column, comparison, value)``, written from synthetic rows and counted.

A table is a float64 matrix (:class:`PredicateTable`: numbers as they are, categories as codes
shared by every table, NaN missing). A predicate of width ``w`` is ``w`` columns, ``w``
comparison codes (``==``, ``!=``, ``<``, ``<=``, ``>``, ``>=``, missing, present) and ``w``
values; compiled kernels count the rows each predicate holds for (:func:`count_matches`, up to
2: only "exactly one" matters) or list the first rows (:func:`first_matches`). The attacker
writes them from the synthetic records over the columns it knows: univariate
(:func:`univariate_predicates`: a value held by one synthetic row, or ``<= min`` / ``>= max``
of a numeric column, or "is missing" when one row misses it) and multivariate
(:func:`multivariate_predicates`: a random synthetic row and ``n_cols`` random known columns:
equality for a category, ``>= v`` above the column's synthetic median and ``<= v`` below it
for a number), keeping those that hold for exactly one distinct synthetic row. The baseline
writes random ones (:func:`random_predicates`: random columns, a random synthetic value each,
a random comparison).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numba
import numpy as np
import pandas as pd

from audit_core.common.column_types import ColumnTypes
from audit_core.synthetic.numba_runtime import NUMBA_CACHE, NUMBA_LOCK

__all__ = [
    "PredicateTable",
    "Predicates",
    "count_matches",
    "first_matches",
    "multivariate_predicates",
    "predicate_tables",
    "random_predicates",
    "univariate_predicates",
]

_MAX_TRIES = 200  # candidate singling-out predicates tried per predicate asked for, before giving up
_STALE_BATCHES = 3
"""Batches in a row without a new isolating predicate after which the search stops (60 synthetic rows offer a few
thousand; asking for 200,000 took 2 minutes before this)."""

# predicate comparison codes (0: unused)
_NONE, _EQ, _NE, _LT, _LE, _GT, _GE, _ISNA, _NOTNA = range(9)

Predicates = tuple[np.ndarray, np.ndarray, np.ndarray]
"""``(cols, ops, vals)``: int64, int64 and float64 arrays ``[n_predicates, width]``."""


@dataclass(frozen=True)
class PredicateTable:
    """A table as float64 ``[n, p]``: numbers as they are, categories as shared codes, NaN missing."""

    matrix: np.ndarray
    numeric: np.ndarray  # bool [p]


def predicate_tables(frames: dict[str, pd.DataFrame], columns: Sequence[str], types: ColumnTypes) -> dict[str, PredicateTable]:
    """Each table's ``columns`` as a :class:`PredicateTable`, category codes shared by all the tables."""
    names = list(frames)
    is_num = np.array([c in types.numeric for c in columns])
    out = {n: np.empty((len(frames[n]), len(columns))) for n in names}
    for j, col in enumerate(columns):
        if is_num[j]:
            for n in names:
                out[n][:, j] = frames[n][col].to_numpy(dtype=np.float64)
        else:
            pooled = pd.concat([frames[n][col] for n in names], ignore_index=True)
            codes, _ = pd.factorize(pooled, use_na_sentinel=True)
            codes = np.where(codes < 0, np.nan, codes.astype(np.float64))
            start = 0
            for n in names:
                out[n][:, j] = codes[start : start + len(frames[n])]
                start += len(frames[n])
    return {n: PredicateTable(out[n], is_num) for n in names}


@numba.njit(inline="always", cache=NUMBA_CACHE)
def _holds(xt, cols, ops, vals, q, r, width):  # pragma: no cover - compiled by numba
    """Whether predicate ``q`` holds for row ``r`` (op codes: 1 ==, 2 != (not missing), 3 <, 4 <=, 5 >, 6 >=,
    7 missing, else present; 0 unused)."""
    for t in range(width):
        op = ops[q, t]
        if op == 0:
            continue
        x = xt[cols[q, t], r]
        v = vals[q, t]
        if op == 1:
            ok = x == v
        elif op == 2:
            ok = x == x and x != v
        elif op == 3:
            ok = x < v
        elif op == 4:
            ok = x <= v
        elif op == 5:
            ok = x > v
        elif op == 6:
            ok = x >= v
        elif op == 7:
            ok = x != x
        else:
            ok = x == x
        if not ok:
            return False
    return True


@numba.njit(parallel=True, cache=NUMBA_CACHE)
def _count_kernel(xt, cols, ops, vals, stop):  # pragma: no cover - compiled by numba
    """Rows each predicate holds for, counted up to ``stop``; and the first such row."""
    n_pred, width = cols.shape
    n = xt.shape[1]
    counts = np.zeros(n_pred, dtype=np.int64)
    first = np.full(n_pred, -1, dtype=np.int64)
    for q in numba.prange(n_pred):
        c = 0
        for r in range(n):
            if _holds(xt, cols, ops, vals, q, r, width):
                if c == 0:
                    first[q] = r
                c += 1
                if c >= stop:
                    break
        counts[q] = c
    return counts, first


@numba.njit(parallel=True, cache=NUMBA_CACHE)
def _match_kernel(xt, cols, ops, vals, cap):  # pragma: no cover - compiled by numba
    """The first ``cap`` rows each predicate holds for (-1 beyond), and how many it holds for, counted up to ``cap + 1``."""
    n_pred, width = cols.shape
    n = xt.shape[1]
    rows = np.full((n_pred, cap), -1, dtype=np.int64)
    counts = np.zeros(n_pred, dtype=np.int64)
    for q in numba.prange(n_pred):
        c = 0
        for r in range(n):
            if _holds(xt, cols, ops, vals, q, r, width):
                if c < cap:
                    rows[q, c] = r
                c += 1
                if c > cap:
                    break
        counts[q] = c
    return rows, counts


def count_matches(xt: np.ndarray, cols: np.ndarray, ops: np.ndarray, vals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each predicate (a conjunction of ``(column, comparison, value)``) on the table ``xt`` (``[p, n]``):
    how many rows it holds for (counted up to 2: only "exactly one" matters) and the first of them."""
    if cols.shape[0] == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    with NUMBA_LOCK:
        return _count_kernel(
            xt,
            np.ascontiguousarray(cols, dtype=np.int64),
            np.ascontiguousarray(ops, dtype=np.int64),
            np.ascontiguousarray(vals, dtype=np.float64),
            2,
        )


def univariate_predicates(syn: PredicateTable, rng: np.random.Generator, n: int) -> Predicates:
    """Up to ``n`` one-column predicates that each hold for exactly one synthetic row, in random order."""
    cols, ops, vals = [], [], []
    x = syn.matrix
    for j in range(x.shape[1]):
        column = x[:, j]
        nan = np.isnan(column)
        if nan.sum() == 1:
            cols.append(j)
            ops.append(_ISNA)
            vals.append(np.nan)
        if (~nan).any():
            if syn.numeric[j]:
                cols += [j, j]
                ops += [_LE, _GE]
                vals += [np.nanmin(column), np.nanmax(column)]
            uniq, cnt = np.unique(column[~nan], return_counts=True)
            rare = uniq[cnt == 1]
            cols += [j] * rare.size
            ops += [_EQ] * rare.size
            vals += rare.tolist()
    c, o, v = np.array(cols, dtype=np.int64)[:, None], np.array(ops)[:, None], np.array(vals, dtype=np.float64)[:, None]
    order = rng.permutation(c.shape[0])
    c, o, v = c[order], o[order], v[order]
    keep = count_matches(np.ascontiguousarray(x.T), c, o, v)[0] == 1
    return c[keep][:n], o[keep][:n], v[keep][:n]


def multivariate_predicates(
    syn: PredicateTable, rng: np.random.Generator, n: int, n_cols: int
) -> Predicates:
    """Up to ``n`` distinct ``n_cols``-column predicates, each written from a random synthetic row, that hold for exactly one."""
    x = syn.matrix
    p = x.shape[1]
    n_cols = min(n_cols, p)
    medians = np.zeros(p)
    for j in np.flatnonzero(syn.numeric):
        finite = x[:, j][~np.isnan(x[:, j])]
        medians[j] = np.median(finite) if finite.size else 0.0
    xt = np.ascontiguousarray(x.T)
    found: dict[bytes, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    batch = max(256, min(4 * n, 4096))
    stale = 0  # batches in a row that found no new predicate: a small table has no more to give
    for _ in range(max(1, _MAX_TRIES * n // batch)):
        before = len(found)
        rows = rng.integers(0, x.shape[0], size=batch)
        cols = np.argsort(rng.random((batch, p)), axis=1)[:, :n_cols]
        cols.sort(axis=1)
        vals = x[rows[:, None], cols]
        numeric = syn.numeric[cols]
        ops = np.where(numeric, np.where(vals > medians[cols], _GE, _LE), _EQ)
        ops = np.where(np.isnan(vals), _ISNA, ops)
        counts, _ = count_matches(xt, cols, ops, vals)
        for i in np.flatnonzero(counts == 1):
            key = cols[i].tobytes() + ops[i].tobytes() + np.nan_to_num(vals[i], nan=-1e300).tobytes()
            if key not in found:
                found[key] = (cols[i], ops[i], vals[i])
                if len(found) >= n:
                    break
        stale = stale + 1 if len(found) == before else 0
        if len(found) >= n or stale >= _STALE_BATCHES:
            break
    if not found:
        return np.zeros((0, n_cols), np.int64), np.zeros((0, n_cols), np.int64), np.zeros((0, n_cols))
    c, o, v = (np.array(z) for z in zip(*found.values(), strict=True))
    return c, o, v


def random_predicates(syn: PredicateTable, rng: np.random.Generator, n: int, n_cols: int) -> Predicates:
    """The baseline: random columns, a random synthetic value each, a random comparison."""
    x = syn.matrix
    p = x.shape[1]
    n_cols = min(n_cols, p)
    cols = np.argsort(rng.random((n, p)), axis=1)[:, :n_cols]
    vals = np.empty(cols.shape)
    uniques = [np.unique(x[:, j]) for j in range(p)]  # NaN (if any) sorts last, once
    for j in range(p):
        at = cols == j
        vals[at] = uniques[j][rng.integers(0, uniques[j].size, size=int(at.sum()))]
    numeric = syn.numeric[cols]
    ops = np.where(numeric, rng.choice([_EQ, _NE, _LT, _LE, _GT, _GE], size=cols.shape), rng.choice([_EQ, _NE], size=cols.shape))
    nan = np.isnan(vals)
    ops = np.where(nan, np.where(ops == _EQ, _ISNA, _NOTNA), ops)
    return cols, ops, vals


def first_matches(x: np.ndarray, cols: np.ndarray, ops: np.ndarray, vals: np.ndarray, cap: int) -> tuple[np.ndarray, np.ndarray]:
    """The first ``cap`` rows of ``x`` (``[p, n]``) each predicate holds for (-1 beyond), and how many (up to ``cap + 1``)."""
    with NUMBA_LOCK:
        return _match_kernel(
            x,
            np.ascontiguousarray(cols, dtype=np.int64),
            np.ascontiguousarray(ops, dtype=np.int64),
            np.ascontiguousarray(vals, dtype=np.float64),
            cap,
        )
