"""Rarity-weighted agreement between records (Fellegi-Sunter), and each record's best-matching row.

docs/methods.md §1.8. Record linkage asks on how many columns two records agree, weighted
by how rarely two records of the population agree there by chance (Fellegi and Sunter,
JASA 1969; the weights of statistical disclosure control's record-linkage attacks). Per
column ``j`` of a record ``x`` against a row ``s``, fitted on *reference* records (the
auxiliary table, or the part of the holdout that plays it):

- **equal** values (numbers and categories alike): ``log(m / f_j(x_j))``, with
  ``f_j(v) = (count_j(v) + 1) / (n_j + 1)`` the value's frequency among the reference
  records: agreeing on a value one person in the population has weighs ``log(m n)``,
  agreeing on a value everyone has weighs nothing (floored at 0);
- numbers **close** but not equal, within ``t_k`` of the column's range
  (:data:`TOLERANCES`): ``log(m_k / u_jk(x_j))``, ``u_jk`` the share of reference values
  within ``t_k`` of ``x_j``; ``m_k`` < ``m`` (:data:`CLOSE_M`), so closeness weighs less
  than equality (and never more: capped at the equality weight, floored at 0);
- a **disagreement**: ``log((1 - m) / (1 - u_j))``, ``u_j`` the chance that two reference
  records agree on the column (within the widest tolerance for numbers), capped at 0: one
  changed field lowers the score by a few units without cancelling the rest;
- a value **missing** on either side: 0.

``m`` (:data:`AGREE_M` = 0.8) is the chance that a record and its near-copy agree on a
column (a near-copy with 3 of 14 fields changed agrees on 79 %); ``m_k`` (:data:`CLOSE_M`:
0.2, 0.1) the chance that they are merely close. The score of a pair is the sum over the columns (times the column weights of the
Gower encoding: a weight of 0 leaves the column out).

:func:`best_agreement` finds, for every query record, the reference row with the largest
score without scoring every pair, in the manner of the nearest-neighbour engine
(:mod:`audit_core.synthetic.nearest_scan`, a compiled numba kernel): both tables sorted by
their columns, fewest distinct values first, so a block of 128 reference rows holds few
values of each; per query an upper bound of its score over every block (from the block's
per-column min / max, a hashed bit mask of each number's exact values, a bit mask of its codes
and whether it has missing values), the block of the largest bound read first, then only the
blocks whose bound still reaches that best, best bound first, the scan stopped at the first
block whose bound cannot reach the best found; a block read as 64-row sub-blocks, each bounded
alone first; inside one the columns read heaviest first, and it is dropped when no row's
partial score plus the most the unread columns can add there reaches the best. Scores are
summed in float32; the pruning is exact, and the chosen pair's score is recomputed in float64
(:func:`pair_scores`). :func:`agreement_matrix` is the plain reading of the formula the tests
compare it with. With a Dask client the query and reference blocks are tasks on the cluster
(the same numbers: one reference block up to :data:`REFERENCE_BLOCK_ROWS` rows).

A record that no row copies agrees best with some row on a few common values, and many rows come
close, so the bounds prune little. Given a *floor* per record, the scan starts from it as its
best and seeks only rows at or above it: nearly every block is pruned at once. Above
:data:`EXACT_PAIRS` pairs the audit matches in full only a sample and sets the floors from it
(the record-linkage scan: the records its tests can read; the learned attacker: the best-matching
share, ``best_matches(..., top_share=...)``).

:func:`best_matches` is the public entry on data frames: per record, the score of its
best-matching synthetic row, that row, its number of exactly equal columns and the
per-column agreement pattern (:data:`EQUAL`, :data:`CLOSE`, :data:`DISAGREE`,
:data:`MISSING`).

>>> import pandas as pd
>>> ref = pd.DataFrame({"age": [30.0, 30.0, 41.0, 52.0], "job": ["a", "a", "b", "c"]})
>>> syn = pd.DataFrame({"age": [52.0, 30.0], "job": ["c", "b"]})
>>> m = best_matches(ref.iloc[[3, 0]], syn, ref)
>>> m.row.tolist(), m.n_equal.tolist(), m.pattern.tolist()
([0, 1], [2, 1], [[2, 2], [2, 0]])
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numba
import numpy as np
import pandas as pd

from audit_core.common.column_types import ColumnTypes, infer_column_types
from audit_core.common.errors import InputError
from audit_core.common.runtime import ProgressFn, as_progress
from audit_core.synthetic.encoding import MISSING_CODE, EncodedTable, GowerEncoding, check_same_encoding, encode_for_gower
from audit_core.synthetic.numba_runtime import NUMBA_CACHE, NUMBA_LOCK, match_worker_threads

__all__ = [
    "AGREE_M",
    "CLOSE",
    "CLOSE_M",
    "DISAGREE",
    "EQUAL",
    "EXACT_PAIRS",
    "FLOOR_SAMPLE",
    "MISSING",
    "REFERENCE_BLOCK_ROWS",
    "TOLERANCES",
    "AgreementWeights",
    "BestMatches",
    "MatchTable",
    "agreement_matrix",
    "best_agreement",
    "best_matches",
    "fit_weights",
    "match_table",
    "pair_scores",
]

TOLERANCES: tuple[float, float] = (0.02, 0.06)
"""Closeness levels for numbers, as shares of each column's range (near-copies move values by 1-5 %)."""

AGREE_M = 0.8
"""``m``: the chance that a record and its near-copy agree on a column (equality and disagreement weights)."""

CLOSE_M: tuple[float, float] = (0.2, 0.1)
"""``m_k`` of the two closeness levels: a number merely close weighs less than an equal one."""

EQUAL = 2
"""Agreement pattern: the two values are equal."""
CLOSE = 1
"""Agreement pattern: two numbers within the widest tolerance, not equal."""
DISAGREE = 0
"""Agreement pattern: the values differ."""
MISSING = -1
"""Agreement pattern: the value is missing on either side."""

EXACT_PAIRS = 2_000_000_000
"""Up to this many (record, row) pairs the audit seeks every record's best match; above, only the top records' (floors
set on a sample of :data:`FLOOR_SAMPLE` records: the record-linkage scan and the learned attacker)."""

FLOOR_SAMPLE = 5_000
"""Records matched in full to set the floors of a large scan."""

REFERENCE_BLOCK_ROWS = 2_000_000
"""Reference rows per Dask task; more rows are split into blocks (as the distance engine's)."""

_QUERY_BLOCK_ROWS = 50_000  # largest query block per Dask task
_BLOCK = 128  # reference rows per block: small blocks, tight bounds
_CHECK_EVERY = 3  # inside a block, a look at whether any row can still reach a best every this many columns
_SMALL_PAIRS = 4_000_000  # scans with fewer pairs run on one thread
_MASK_OVERFLOW_BIT = 62  # block code masks: bit c for codes c < 62, bit 62 for "some larger code"
_SUB_BLOCK = 64  # rows per sub-block: a block is read by sub-blocks, each bounded alone first
_VALUE_WORDS = 16  # block value masks of the numbers: bit (code mod 1024) of 16 words set when a row has that value


@dataclass(frozen=True)
class MatchTable:
    """Records ready for the agreement scan: the Gower encoding (scaled numbers, category codes) and the exact numbers.

    Attributes
    ----------
    encoded : EncodedTable
        Scaled numbers (float32, NaN missing; closeness is read on them) and category codes.
    exact : numpy.ndarray
        float64 ``[n_rows, n_numeric]``: the numbers as given (equality is read on them, so a
        value with six decimals equals only itself), NaN where missing.
    """

    encoded: EncodedTable
    exact: np.ndarray = field(repr=False)

    @property
    def n_rows(self) -> int:
        """Number of records."""
        return self.encoded.n_rows

    @property
    def columns(self) -> tuple[str, ...]:
        """The compared columns, numeric block first."""
        return self.encoded.columns

    def rows(self, index: np.ndarray | list[int]) -> MatchTable:
        """The records at ``index``."""
        index = np.asarray(index, dtype=np.int64)
        return MatchTable(self.encoded.rows(index), self.exact[index])


def match_table(encoding: GowerEncoding, frame: pd.DataFrame, encoded: EncodedTable | None = None) -> MatchTable:
    """``frame`` for the agreement scan (``encoded``: its ``encoding.transform(frame)`` when already made)."""
    enc = encoding.transform(frame) if encoded is None else encoded
    exact = np.empty((len(frame), len(encoding.numeric_columns)), dtype=np.float64)
    for j, col in enumerate(encoding.numeric_columns):
        exact[:, j] = pd.to_numeric(frame[col], errors="coerce").to_numpy(dtype=np.float64) + 0.0  # -0.0 as 0.0
    return MatchTable(enc, exact)


# ----------------------------------------------------------------------------- weights
@dataclass(frozen=True)
class AgreementWeights:
    """The agreement weights fitted on reference records (module docstring).

    Attributes
    ----------
    values : tuple of numpy.ndarray
        Per numeric column, the reference's exact values, sorted (float64, missing left out).
    scaled : tuple of numpy.ndarray
        Per numeric column, the same values scaled by the Gower range (float32 as compared), sorted.
    counts : tuple of numpy.ndarray
        Per categorical column, the reference's count of each code (codes the reference never shows count 0).
    disagree : numpy.ndarray
        float64 per column (numeric block first): the weight of a disagreement (<= 0).
    column_weights : numpy.ndarray
        float64 per column: the Gower encoding's column weights (0 leaves a column out).
    tolerances : tuple of float
        The closeness levels (shares of the range).
    """

    values: tuple[np.ndarray, ...] = field(repr=False)
    scaled: tuple[np.ndarray, ...] = field(repr=False)
    counts: tuple[np.ndarray, ...] = field(repr=False)
    disagree: np.ndarray
    column_weights: np.ndarray
    tolerances: tuple[float, ...] = TOLERANCES

    def query_weights(self, table: MatchTable) -> dict[str, np.ndarray]:
        """Each record's own weights, float64: ``equal`` ``[n, p]``, ``close`` ``[n, n_numeric, 2]``, ``disagree`` ``[n, p]``.

        A value missing in the record gives 0 everywhere in its column.
        """
        enc = table.encoded
        n, pn, pc = table.n_rows, enc.numeric.shape[1], enc.codes.shape[1]
        equal = np.zeros((n, pn + pc))
        close = np.zeros((n, pn, len(self.tolerances)))
        log_m = np.log(AGREE_M)
        for j in range(pn):
            x = table.exact[:, j]
            ok = ~np.isnan(x)
            ref = self.values[j]
            count = np.searchsorted(ref, x, side="right") - np.searchsorted(ref, x, side="left")
            eq = np.maximum(0.0, log_m - np.log((count + 1.0) / (ref.size + 1.0)))
            equal[:, j] = np.where(ok, eq, 0.0)
            xs = enc.numeric[:, j].astype(np.float64)
            for k, (tol, m_k) in enumerate(zip(self.tolerances, CLOSE_M, strict=True)):
                within = np.searchsorted(self.scaled[j], xs + tol, side="right") - np.searchsorted(
                    self.scaled[j], xs - tol, side="left"
                )
                w = np.log(m_k) - np.log((within + 1.0) / (ref.size + 1.0))
                close[:, j, k] = np.where(ok, np.clip(w, 0.0, eq), 0.0)
        for j in range(pc):
            codes = enc.codes[:, j]
            counts = self.counts[j]
            seen = (codes >= 0) & (codes < counts.size)
            count = np.where(seen, counts[np.where(seen, codes, 0)], 0)
            eq = np.maximum(0.0, log_m - np.log((count + 1.0) / (counts.sum() + 1.0)))
            equal[:, pn + j] = np.where(codes != MISSING_CODE, eq, 0.0)
        present = np.concatenate([~np.isnan(table.exact), enc.codes != MISSING_CODE], axis=1)
        scale = self.column_weights[None, :]
        return {
            "equal": equal * scale,
            "close": close * self.column_weights[None, :pn, None],
            "disagree": np.where(present, self.disagree[None, :], 0.0) * scale,
        }


def fit_weights(reference: MatchTable, *, tolerances: tuple[float, ...] = TOLERANCES) -> AgreementWeights:
    """The agreement weights of :class:`AgreementWeights`, fitted on ``reference`` (the population's records).

    Raises
    ------
    InputError
        No reference record.
    """
    if reference.n_rows == 0:
        raise InputError("The agreement weights need reference records (the auxiliary table); none was given.")
    enc = reference.encoded
    values, scaled, counts, agree = [], [], [], []
    widest = max(tolerances)
    for j in range(enc.numeric.shape[1]):
        x = reference.exact[:, j]
        ok = ~np.isnan(x)
        values.append(np.sort(x[ok]))
        s = np.sort(enc.numeric[ok, j].astype(np.float32))
        scaled.append(s)
        n = s.size
        within = np.searchsorted(s, s + np.float32(widest), side="right") - np.searchsorted(s, s - np.float32(widest))
        agree.append(float((within - 1).sum()) / max(n * (n - 1), 1))
    for j in range(enc.codes.shape[1]):
        c = enc.codes[:, j]
        c = c[c != MISSING_CODE]
        k = np.bincount(c, minlength=int(c.max()) + 1 if c.size else 0).astype(np.float64)
        counts.append(k)
        agree.append(float((k * (k - 1)).sum()) / max(c.size * (c.size - 1), 1))
    u = np.clip(np.asarray(agree, dtype=np.float64), 0.0, 1.0 - 1e-9)
    disagree = np.minimum(0.0, np.log(1.0 - AGREE_M) - np.log1p(-u))
    column_weights = np.concatenate([enc.numeric_weights, enc.categorical_weights]).astype(np.float64)
    return AgreementWeights(tuple(values), tuple(scaled), tuple(counts), disagree, column_weights, tuple(tolerances))


# ----------------------------------------------------------------------------- the formula, plainly
def _levels(query: MatchTable, reference: MatchTable, qi: np.ndarray, ri: np.ndarray, tolerances) -> np.ndarray:
    """Per pair and column: 3 equal, 2 / 1 within the first / second tolerance, 0 different, -1 missing; ``[k, p]`` int8."""
    qe, re_ = query.exact[qi], reference.exact[ri]
    qs, rs = query.encoded.numeric[qi], reference.encoded.numeric[ri]
    with np.errstate(invalid="ignore"):
        d = np.abs(qs - rs)  # float32, as the kernel compares
        num = np.where(d <= np.float32(tolerances[1]), 1, 0)
        num = np.where(d <= np.float32(tolerances[0]), 2, num)
        num = np.where(qe == re_, 3, num)
    num = np.where(np.isnan(qe) | np.isnan(re_), -1, num)
    qc, rc = query.encoded.codes[qi], reference.encoded.codes[ri]
    cat = np.where(qc == rc, 3, 0)
    cat = np.where((qc == MISSING_CODE) | (rc == MISSING_CODE), -1, cat)
    return np.concatenate([num, cat], axis=1).astype(np.int8)


def _terms(levels: np.ndarray, qw: dict[str, np.ndarray], qi: np.ndarray, pn: int) -> np.ndarray:
    """float64 weight of each (pair, column) from its level."""
    equal, dis = qw["equal"][qi], qw["disagree"][qi]
    out = np.where(levels == 3, equal, np.where(levels == 0, dis, 0.0))
    if pn:
        close = qw["close"][qi]
        num = out[:, :pn]
        num = np.where(levels[:, :pn] == 2, close[:, :, 0], num)
        out[:, :pn] = np.where(levels[:, :pn] == 1, close[:, :, 1], num)
    return out


def pair_scores(
    weights: AgreementWeights,
    query: MatchTable,
    reference: MatchTable,
    query_rows: np.ndarray,
    reference_rows: np.ndarray,
    *,
    query_weights: dict[str, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """float64 score and agreement pattern (:data:`EQUAL`, ...; int8 ``[k, p]``) of the pairs ``(query_rows[k],
    reference_rows[k])`` (``query_weights``: ``weights.query_weights(query)`` when already made)."""
    qi = np.asarray(query_rows, dtype=np.int64)
    ri = np.asarray(reference_rows, dtype=np.int64)
    levels = _levels(query, reference, qi, ri, weights.tolerances)
    if query_weights is None:
        uniq = np.unique(qi)
        qw, local = weights.query_weights(query.rows(uniq)), np.searchsorted(uniq, qi)
    else:
        qw, local = query_weights, qi
    score = _terms(levels, qw, local, query.encoded.numeric.shape[1]).sum(axis=1)
    pattern = np.select([levels == 3, levels >= 1, levels == 0], [EQUAL, CLOSE, DISAGREE], MISSING).astype(np.int8)
    return score, pattern


def agreement_matrix(weights: AgreementWeights, query: MatchTable, reference: MatchTable) -> np.ndarray:
    """Every pair's score, ``[n_query, n_reference]`` float64: the formula read plainly (small tables; tests)."""
    n, m = query.n_rows, reference.n_rows
    qi, ri = np.repeat(np.arange(n), m), np.tile(np.arange(m), n)
    return pair_scores(weights, query, reference, qi, ri)[0].reshape(n, m)


# ----------------------------------------------------------------------------- the engine
def _compact(q: np.ndarray, r: np.ndarray, missing: np.ndarray, r_missing: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """int32 codes 0..K-1 of one column's values, shared by the two tables (missing -1), and K."""
    uniq = np.unique(np.concatenate([q[~missing], r[~r_missing]]))
    qk = np.where(missing, -1, np.searchsorted(uniq, np.where(missing, uniq[0] if uniq.size else 0, q))).astype(np.int32)
    rk = np.where(r_missing, -1, np.searchsorted(uniq, np.where(r_missing, uniq[0] if uniq.size else 0, r))).astype(np.int32)
    return qk, rk, int(uniq.size)


def _exact_keys(query: MatchTable, reference: MatchTable) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """int32 codes of every column's exact values, shared by the two tables (equal values, equal codes; missing -1):
    the numbers first, then the categories; and each column's number of codes."""
    pn, pc = query.exact.shape[1], query.encoded.codes.shape[1]
    qk = np.full((query.n_rows, pn + pc), -1, dtype=np.int32)
    rk = np.full((reference.n_rows, pn + pc), -1, dtype=np.int32)
    sizes = np.zeros(pn + pc, dtype=np.int64)
    for j in range(pn):
        q, r = query.exact[:, j], reference.exact[:, j]
        qk[:, j], rk[:, j], sizes[j] = _compact(q, r, np.isnan(q), np.isnan(r))
    for j in range(pc):
        q, r = query.encoded.codes[:, j], reference.encoded.codes[:, j]
        qk[:, pn + j], rk[:, pn + j], sizes[pn + j] = _compact(q, r, q == MISSING_CODE, r == MISSING_CODE)
    return qk, rk, sizes


def _sort_columns(rk: np.ndarray) -> list[int]:
    """The columns to sort by, fewest distinct values in the reference first.

    Sorted so, a block of the reference holds one value of each of the first columns, so a query
    that differs there loses their weights in the block's bound, column after column (measured on
    Adult: 21 % of 128-row blocks must be read for the best, against 62 % sorted by the three
    most informative columns in 512-row blocks).
    """
    distinct = [np.unique(rk[:, j]).size for j in range(rk.shape[1])]
    return [int(j) for j in np.argsort(distinct, kind="stable")]


def _sort_order(keys_r: list[np.ndarray], keys_q: list[np.ndarray], m: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(r_order, q_order, q_pos)``: both tables sorted by the same keys, each query's place among the reference rows."""
    merged_keys = [np.concatenate([r, q]) for r, q in zip(keys_r, keys_q, strict=True)]
    merged = np.lexsort(merged_keys[::-1]) if merged_keys else np.arange(m + keys_q[0].size if keys_q else m)
    is_ref = merged < m
    before: np.ndarray = np.cumsum(is_ref) - is_ref
    return merged[is_ref].astype(np.int64), (merged[~is_ref] - m).astype(np.int64), before[~is_ref].astype(np.int64)


@numba.njit(cache=NUMBA_CACHE, boundscheck=False)
def _value_masks(keys_t, block, words):  # pragma: no cover - compiled by numba
    """Per column and block, bit ``key mod (64 words)`` of ``words`` int64 set for every value a row holds (missing: none)."""
    p, m = keys_t.shape
    n_blocks = (m + block - 1) // block
    out = np.zeros((p, words, n_blocks), dtype=np.int64)  # [column, word, block]: a query reads one word of every block
    size = 64 * words
    for j in range(p):
        for r in range(m):
            k = keys_t[j, r]
            if k >= 0:
                bit = k % size
                out[j, bit >> 6, r // block] |= np.int64(1) << np.int64(bit & 63)
    return out


def _block_bounds(r_num: np.ndarray, r_key_num: np.ndarray, r_cat: np.ndarray, block: int) -> tuple[np.ndarray, ...]:
    """Per column and block: numeric min / max (missing left out), whether a value is missing, a hashed bit mask of
    the exact numbers (:func:`_value_masks`: a number whose bit is unset is in no row, so the block can at most be
    close there), a bit mask of the codes."""
    m = r_num.shape[0]
    starts = np.arange(0, m, block)
    nan = np.isnan(r_num)
    if r_num.shape[1]:
        lo = np.minimum.reduceat(np.where(nan, np.inf, r_num), starts, axis=0).astype(np.float32)
        hi = np.maximum.reduceat(np.where(nan, -np.inf, r_num), starts, axis=0).astype(np.float32)
        nmiss = np.logical_or.reduceat(nan, starts, axis=0)
    else:
        lo = hi = np.zeros((starts.size, 0), dtype=np.float32)
        nmiss = np.zeros((starts.size, 0), dtype=bool)
    if r_cat.shape[1]:
        bits = np.where(r_cat >= 0, np.left_shift(np.int64(1), np.clip(r_cat, 0, _MASK_OVERFLOW_BIT).astype(np.int64)), 0)
        mask = np.bitwise_or.reduceat(bits, starts, axis=0)
        cmiss = np.logical_or.reduceat(r_cat == MISSING_CODE, starts, axis=0)
    else:
        mask = np.zeros((starts.size, 0), dtype=np.int64)
        cmiss = np.zeros((starts.size, 0), dtype=bool)
    c = np.ascontiguousarray  # transposed: [column, block], so a query's bounds over every block are one loop
    values = _value_masks(c(r_key_num.T, dtype=np.int32), block, _VALUE_WORDS)
    return c(lo.T), c(hi.T), c(nmiss.astype(np.float32).T), values, c(mask.T), c(cmiss.astype(np.float32).T)


@numba.njit(inline="always", fastmath=True, boundscheck=False, cache=NUMBA_CACHE)
def _one_minus(x):
    """1 - x (a block with a missing value can also score 0 on that column: max(u, 0) where x = 1)."""
    return np.float32(1.0) - x


@numba.njit(inline="always", fastmath=True, boundscheck=False, cache=NUMBA_CACHE)
def _upper_bounds(
    q, ub, q_num, q_key, q_cat, weq_n, wc1, wc2, wdis_n, weq_c, wdis_c, tol1, tol2, lo, hi, nmiss, values, mask, cmiss
):  # fmt: skip
    """Into ``ub``: an upper bound of query q's score over the rows of each block (exact pruning).

    A number inside the block's range scores at most the equality weight where the block's value
    mask holds its bit, else at most the first closeness weight (which never exceeds it).
    """
    zero = np.float32(0.0)
    n_blocks = ub.shape[0]
    size = 64 * values.shape[1]
    for b in range(n_blocks):
        ub[b] = zero
    for j in range(q_num.shape[1]):
        x = q_num[q, j]
        kq = q_key[q, j]
        bit = max(kq, 0) % size
        word, shift = bit >> 6, bit & 63
        e, c1, c2, d = weq_n[q, j], wc1[q, j], wc2[q, j], wdis_n[q, j]
        for b in range(n_blocks):
            gap = max(lo[j, b] - x, x - hi[j, b], zero)
            held = kq >= 0 and ((values[j, word, b] >> shift) & 1) == 1
            u = (e if held else c1) if gap <= zero else (c1 if gap <= tol1 else (c2 if gap <= tol2 else d))
            ub[b] += max(u, u * (_one_minus(nmiss[j, b])))
    for j in range(q_cat.shape[1]):
        c = q_cat[q, j]
        e, d = weq_c[q, j], wdis_c[q, j]
        bit = min(max(c, 0), _MASK_OVERFLOW_BIT)
        for b in range(n_blocks):
            present = c >= 0 and ((mask[j, b] >> bit) & 1) == 1
            u = e if present else d
            ub[b] += max(u, u * _one_minus(cmiss[j, b]))


@numba.njit(inline="always", fastmath=True, boundscheck=False, cache=NUMBA_CACHE)
def _block_rest(
    q, b, q_num, q_key, q_cat, weq_n, wc1, wc2, wdis_n, weq_c, wdis_c, tol1, tol2, lo, hi, nmiss, values, mask, cmiss,
    kinds, columns, rest_b,
):  # fmt: skip
    """Into ``rest_b[pos]``: the most the columns from reading position ``pos`` on can add to query q's score on a
    row of block ``b`` (the terms of :func:`_upper_bounds`, each column's for this block alone, summed from the
    last; a margin for float32 sums as ``rest``); returns the bound of the whole block, ``rest_b[0]``."""
    zero = np.float32(0.0)
    size = 64 * values.shape[1]
    p = kinds.shape[0]
    total = zero
    rest_b[p] = zero
    for pos in range(p - 1, -1, -1):
        j = columns[pos]
        if kinds[pos] == 0:
            x = q_num[q, j]
            kq = q_key[q, j]
            bit = max(kq, 0) % size
            e, c1, c2, d = weq_n[q, j], wc1[q, j], wc2[q, j], wdis_n[q, j]
            gap = max(lo[j, b] - x, x - hi[j, b], zero)
            held = kq >= 0 and ((values[j, bit >> 6, b] >> (bit & 63)) & 1) == 1
            u = (e if held else c1) if gap <= zero else (c1 if gap <= tol1 else (c2 if gap <= tol2 else d))
            total += max(u, u * (_one_minus(nmiss[j, b])))
        else:
            c = q_cat[q, j]
            e, d = weq_c[q, j], wdis_c[q, j]
            bit = min(max(c, 0), _MASK_OVERFLOW_BIT)
            present = c >= 0 and ((mask[j, b] >> bit) & 1) == 1
            u = e if present else d
            total += max(u, u * _one_minus(cmiss[j, b]))
        rest_b[pos] = total + np.float32(1e-5) * abs(total) + np.float32(1e-5)
    return rest_b[0]


@numba.njit(parallel=True, fastmath=True, nogil=True, boundscheck=False, cache=NUMBA_CACHE)
def _agreement_kernel(  # pragma: no cover - compiled by numba
    q_num, q_key, q_cat, weq_n, wc1, wc2, wdis_n, weq_c, wdis_c, rest,
    r_num_t, r_key_t, r_cat_t, r_num_ok_t, r_cat_ok_t, r_missing,
    tol1, tol2, block, kinds, columns, checks, r_order, lo, hi, nmiss, values, mask, cmiss,
    sub, lo_s, hi_s, nmiss_s, values_s, mask_s, cmiss_s,
    best_s, best_i,
):  # fmt: skip
    # best_s and best_i come in holding a best already found (-inf and m for none). Each query
    # bounds its score over every block (per-column min / max, hashed values, codes, missing
    # values) and reads the blocks best bound first, stopping at the first whose bound cannot
    # reach its best. A block is read by sub-blocks of ``sub`` rows, each bounded alone first
    # (the same terms on its own rows: tighter) and skipped when that bound cannot reach the
    # best. Inside a sub-block the columns are read heaviest first (kinds, columns: 0 for a
    # number, 1 for a category, and its index); at each position with checks[pos] it is dropped
    # when no row's score so far plus the most the unread columns can add (rest) reaches the best.
    n = q_num.shape[0]
    p = kinds.shape[0]
    m = r_order.shape[0]
    n_blocks = (m + block - 1) // block
    n_sub = (m + sub - 1) // sub
    per_block = block // sub
    zero = np.float32(0.0)
    for q in numba.prange(n):
        acc = np.empty(sub, dtype=np.float32)
        rest_b = np.empty(p + 1, dtype=np.float32)
        cand = np.empty(n_blocks, dtype=np.int64)
        ub = np.empty(n_blocks, dtype=np.float32)
        bs = best_s[q]
        bi = best_i[q]
        _upper_bounds(
            q, ub, q_num, q_key, q_cat, weq_n, wc1, wc2, wdis_n, weq_c, wdis_c, tol1, tol2, lo, hi, nmiss, values, mask, cmiss
        )
        cand[0] = np.argmax(ub)
        n_cand = 1
        for o in range(n_blocks):
            if o == 1:  # the largest bound's block is read: sort only the blocks that can still reach its best
                floor = bs - np.float32(1e-4) - np.float32(1e-5) * abs(bs)
                for b in range(n_blocks):
                    if b != cand[0] and ub[b] >= floor:
                        cand[n_cand] = b
                        n_cand += 1
                if n_cand > 2:
                    cand[1:n_cand] = cand[1:n_cand][np.argsort(-ub[cand[1:n_cand]])]
            if o >= n_cand:
                break
            b = cand[o]
            if ub[b] < bs - np.float32(1e-4) - np.float32(1e-5) * abs(bs):
                break  # no later block can hold a better (or tying) row
            for sb in range(b * per_block, min(n_sub, (b + 1) * per_block)):
                floor = bs - np.float32(1e-4) - np.float32(1e-5) * abs(bs)
                bound = _block_rest(q, sb, q_num, q_key, q_cat, weq_n, wc1, wc2, wdis_n, weq_c, wdis_c, tol1, tol2,
                                    lo_s, hi_s, nmiss_s, values_s, mask_s, cmiss_s, kinds, columns, rest_b)  # fmt: skip
                if bound < floor:
                    continue
                r0 = sb * sub
                r1 = min(m, r0 + sub)
                width = r1 - r0
                a = acc[:width]
                for k in range(width):
                    a[k] = zero
                dropped = False
                for pos in range(p):
                    if checks[pos]:
                        top = a[0]
                        for k in range(width):
                            top = max(top, a[k])
                        if top + min(rest[q, pos], rest_b[pos]) < floor:
                            dropped = True
                            break
                    j = columns[pos]
                    if kinds[pos] == 0:
                        x = q_num[q, j]
                        kq = q_key[q, j]
                        e, c1, c2, d = weq_n[q, j], wc1[q, j], wc2[q, j], wdis_n[q, j]
                        col = r_num_t[j, r0:r1]
                        key = r_key_t[j, r0:r1]
                        if r_missing:
                            ok = r_num_ok_t[j, r0:r1]
                            for k in range(width):
                                g = abs(x - col[k])
                                a[k] += ok[k] * (e if key[k] == kq else (c1 if g <= tol1 else (c2 if g <= tol2 else d)))
                        else:
                            for k in range(width):
                                g = abs(x - col[k])
                                a[k] += e if key[k] == kq else (c1 if g <= tol1 else (c2 if g <= tol2 else d))
                    else:
                        kq = q_cat[q, j]
                        e, d = weq_c[q, j], wdis_c[q, j]
                        col_c = r_cat_t[j, r0:r1]
                        if r_missing:
                            ok = r_cat_ok_t[j, r0:r1]
                            for k in range(width):
                                a[k] += ok[k] * (e if col_c[k] == kq else d)
                        else:
                            for k in range(width):
                                a[k] += e if col_c[k] == kq else d
                if dropped:
                    continue
                top = a[0]
                for k in range(width):
                    top = max(top, a[k])
                if top >= bs:
                    for k in range(width):
                        row = r_order[r0 + k]
                        if a[k] > bs or (a[k] == bs and row < bi):
                            bs = a[k]
                            bi = row
        best_s[q] = bs
        best_i[q] = bi


def _engine(
    query: MatchTable,
    reference: MatchTable,
    weights: AgreementWeights,
    qw: dict[str, np.ndarray],
    *,
    progress: ProgressFn | None,
    floor: np.ndarray | None = None,
) -> np.ndarray:
    """The best reference row of every query (:func:`_agreement_kernel`; ties in float32 to the lowest row); with a
    ``floor``, the best of the rows scoring at least the query's floor (less a float32 margin), ``m`` when none does.

    ``qw``: the queries' weights. Both tables are sorted by their columns, fewest distinct values
    first (:func:`_sort_columns`), so a block holds few values of each and its bound is tight (and
    queries that sit together run together, reading the same blocks).
    """
    n, m = query.n_rows, reference.n_rows
    pn = query.encoded.numeric.shape[1]
    f32 = np.float32
    t = np.ascontiguousarray
    qk, rk, _ = _exact_keys(query, reference)
    r_num = reference.encoded.numeric
    r_missing = bool(np.isnan(r_num).any() or (reference.encoded.codes == MISSING_CODE).any())
    cols = _sort_columns(rk)
    r_order, q_order, _ = _sort_order([rk[:, j] for j in cols], [qk[:, j] for j in cols], m)

    def q_arr(x: np.ndarray, dtype: Any) -> np.ndarray:
        return t(x[q_order], dtype=dtype)

    # inside a block the columns are read heaviest first, with a check every _CHECK_EVERY columns
    heaviest = np.argsort(-qw["equal"].mean(axis=0), kind="stable")
    top = qw["equal"][:, heaviest]
    rest = np.concatenate([np.cumsum(top[:, ::-1], axis=1)[:, ::-1], np.zeros((n, 1))], axis=1)
    args_q = (
        q_arr(np.nan_to_num(query.encoded.numeric), f32), q_arr(qk[:, :pn], np.int32), q_arr(qk[:, pn:], np.int32),
        q_arr(qw["equal"][:, :pn], f32), q_arr(qw["close"][:, :, 0], f32), q_arr(qw["close"][:, :, 1], f32),
        q_arr(qw["disagree"][:, :pn], f32), q_arr(qw["equal"][:, pn:], f32), q_arr(qw["disagree"][:, pn:], f32),
        q_arr(rest * (1 + 1e-5) + 1e-5, f32),  # the most the unread columns can add
    )  # fmt: skip
    r_num_s, r_cat_s = r_num[r_order], rk[r_order, pn:]
    position = np.arange(heaviest.size)
    args_r = (
        t(np.nan_to_num(r_num_s).T, dtype=f32), t(rk[r_order, :pn].T, dtype=np.int32), t(r_cat_s.T, dtype=np.int32),
        t((~np.isnan(r_num_s)).T, dtype=f32), t((r_cat_s != MISSING_CODE).T, dtype=f32), r_missing,
        f32(weights.tolerances[0]), f32(weights.tolerances[1]), _BLOCK, (heaviest >= pn).astype(np.int64),
        np.where(heaviest >= pn, heaviest - pn, heaviest).astype(np.int64), (position % _CHECK_EVERY == 0) & (position > 0),
        r_order, *_block_bounds(r_num_s, rk[r_order, :pn], r_cat_s, _BLOCK),
        _SUB_BLOCK, *_block_bounds(r_num_s, rk[r_order, :pn], r_cat_s, _SUB_BLOCK),
    )  # fmt: skip
    best_s = np.full(n, -np.inf, dtype=f32) if floor is None else q_arr(floor - 1e-4 - 1e-5 * np.abs(floor), f32)
    best_i = np.full(n, m, dtype=np.int64)
    threads = numba.get_num_threads()
    if n * m < _SMALL_PAIRS:  # waking a second thread costs more than the scan (and far more on a busy machine)
        numba.set_num_threads(1)
    try:
        _run_kernel(args_q, args_r, best_s, best_i, chunk=max(2048, 512 * threads), n=n, progress=progress)
    finally:
        numba.set_num_threads(threads)
    rows = np.empty(n, dtype=np.int64)
    rows[q_order] = best_i[:n]
    return rows


def _run_kernel(args_q, args_r, best_s, best_i, *, chunk: int, n: int, progress: ProgressFn | None) -> None:
    """:func:`_agreement_kernel` over the sorted, padded queries in chunks, reporting progress after each."""
    report = as_progress(progress)
    n_pad = best_s.size
    for s0 in range(0, n_pad, chunk):
        s1 = min(n_pad, s0 + chunk)
        sl = slice(s0, s1)
        with NUMBA_LOCK:
            _agreement_kernel(*(a[sl] for a in args_q), *args_r, best_s[sl], best_i[sl])  # type: ignore[call-arg]
        done = min(s1, n)
        report(done / max(n, 1), f"best-matching row: {done:,} of {n:,} records")


def best_agreement(
    query: MatchTable,
    reference: MatchTable,
    weights: AgreementWeights,
    *,
    client: Any = None,
    progress: ProgressFn | None = None,
    query_weights: dict[str, np.ndarray] | None = None,
    floor: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Each query record's best-matching reference row: ``(score, row)``, float64 and int64.

    The pruned, tiled float32 scan of the module docstring picks the row (ties to the lowest
    row); its score is then recomputed in float64. With a Dask ``client`` the query blocks and
    reference blocks are tasks on the cluster, reduced by score then row. ``query_weights``:
    ``weights.query_weights(query)`` when already made (several scans of the same records).

    ``floor`` (float64, per query): only rows scoring at least the query's floor are sought. The
    scan starts from the floor as its best, so a high floor prunes nearly every block (at 50k x 50k
    Adult-shaped rows, a floor at the top 5 % made the scan 5x faster). A query with such a row gets
    the same row and score as without a floor; one without gets score ``-inf`` and row ``-1`` (a best
    within float32 rounding below the floor may be kept, with its exact score).
    """
    check_same_encoding(query.encoded, reference.encoded)
    n = query.n_rows
    if n == 0 or reference.n_rows == 0:
        return np.full(n, -np.inf), np.full(n, -1, dtype=np.int64)
    qw = weights.query_weights(query) if query_weights is None else query_weights
    if client is not None:
        rows = _on_cluster(query, reference, weights, client=client, progress=progress, floor=floor)
    else:
        rows = _engine(query, reference, weights, qw, progress=progress, floor=floor)
    found = (rows >= 0) & (rows < reference.n_rows)
    if found.all():
        return pair_scores(weights, query, reference, np.arange(n), rows, query_weights=qw)[0], rows
    score, at = np.full(n, -np.inf), np.flatnonzero(found)
    score[at] = pair_scores(weights, query.rows(at), reference, np.arange(at.size), rows[at])[0]
    return score, np.where(found, rows, -1)


# ----------------------------------------------------------------------------- on a Dask cluster
def _block_best(
    query: MatchTable, reference: MatchTable, weights: AgreementWeights, rows: np.ndarray, floor: np.ndarray | None
) -> tuple:
    """One task: the engine over one reference block; (float64 score, global row; ``-inf``, ``-1`` for none)."""
    match_worker_threads()
    score, local = best_agreement(query, reference, weights, floor=floor)
    return score, np.where(local >= 0, rows[np.maximum(local, 0)], -1)


def _on_cluster(
    query: MatchTable,
    reference: MatchTable,
    weights: AgreementWeights,
    *,
    client: Any,
    progress: ProgressFn | None,
    floor: np.ndarray | None = None,
) -> np.ndarray:
    """The reference rows chosen by the engine run as (query block, reference block) tasks on the cluster (-1: none
    at or above the floor)."""
    from audit_core.common.cluster import n_workers, run_tasks

    n, m = query.n_rows, reference.n_rows
    report = as_progress(progress)
    size = min(_QUERY_BLOCK_ROWS, max(1024, -(-n // max(1, 4 * n_workers(client)))))
    q_blocks = [slice(s, min(n, s + size)) for s in range(0, n, size)]
    w_future = client.scatter(weights, broadcast=True, hash=False)
    r_blocks = []
    for s in range(0, m, REFERENCE_BLOCK_ROWS):
        part = np.arange(s, min(m, s + REFERENCE_BLOCK_ROWS))
        r_blocks.append((client.scatter(reference.rows(part), broadcast=True, hash=False), part))
    tasks, which = [], []
    for qi, sl in enumerate(q_blocks):
        q_future = client.scatter(query.rows(np.arange(sl.start, sl.stop)), broadcast=True, hash=False)
        for ref_future, part in r_blocks:
            tasks.append((q_future, ref_future, w_future, part, None if floor is None else floor[sl]))
            which.append((qi, part))

    def inputs_again(i: int) -> tuple:  # a worker died with the scattered blocks: scatter task i's own anew
        qi, part = which[i]
        sl = q_blocks[qi]
        return (client.scatter(query.rows(np.arange(sl.start, sl.stop)), hash=False),
                client.scatter(reference.rows(part), hash=False), client.scatter(weights, hash=False), part,
                None if floor is None else floor[sl])  # fmt: skip

    done = [0]

    def tick(_i: int, _result: Any) -> None:
        done[0] += 1
        report(done[0] / len(tasks), f"best-matching row: {done[0]} of {len(tasks)} blocks on the cluster")

    labels = [f"agreement block {qi + 1}/{len(q_blocks)}" for qi, _ in which]
    parts = run_tasks(client, _block_best, tasks, labels=labels, on_done=tick, inputs_again=inputs_again)
    best = np.full(n, -np.inf)
    rows = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
    for (qi, _), (score, row) in zip(which, parts, strict=True):
        sl = q_blocks[qi]
        take = (score > best[sl]) | ((score == best[sl]) & (row < rows[sl]))
        best[sl] = np.where(take, score, best[sl])
        rows[sl] = np.where(take, row, rows[sl])
    return rows


# ----------------------------------------------------------------------------- the public entry on data frames
@dataclass(frozen=True)
class BestMatches:
    """Each record's best-matching synthetic row by rarity-weighted agreement (:func:`best_matches`).

    Attributes
    ----------
    columns : tuple of str
        The compared columns, in the order of ``pattern``'s columns (numeric block first).
    score : numpy.ndarray
        float64 ``[n]``: the agreement score of the best-matching synthetic row (higher = closer; NaN where a
        ``top_share`` scan sought none: below the floor).
    row : numpy.ndarray
        int64 ``[n]``: that row's position in the synthetic table (-1: none sought).
    n_equal : numpy.ndarray
        int64 ``[n]``: its number of columns exactly equal to the record's (-1: none sought).
    pattern : numpy.ndarray
        int8 ``[n, len(columns)]``: per column :data:`EQUAL` (2), :data:`CLOSE` (1: a number
        within 6 % of the range), :data:`DISAGREE` (0) or :data:`MISSING` (-1: missing on either side).
    """

    columns: tuple[str, ...]
    score: np.ndarray = field(repr=False)
    row: np.ndarray = field(repr=False)
    n_equal: np.ndarray = field(repr=False)
    pattern: np.ndarray = field(repr=False)


def best_matches(
    records: pd.DataFrame,
    synthetic: pd.DataFrame,
    reference: pd.DataFrame,
    *,
    types: ColumnTypes | None = None,
    client: Any = None,
    progress: ProgressFn | None = None,
    top_share: float | None = None,
) -> BestMatches:
    """Per real record: the rarity-weighted agreement score of its best-matching synthetic row, and how it agrees.

    Parameters
    ----------
    records : pandas.DataFrame
        The real records to score (members, non-members or both).
    synthetic : pandas.DataFrame
        The synthetic table.
    reference : pandas.DataFrame
        Records of the population the weights are fitted on (the auxiliary table, or the
        holdout): how often each value occurs there sets how much agreeing on it weighs.
    types : ColumnTypes, optional
        Column types (inferred from ``records`` when None).
    client : distributed.Client, optional
        Run the scan on this Dask cluster (same numbers).
    progress : callable, optional
        ``progress(fraction, message)``.
    top_share : float, optional
        With more than :data:`EXACT_PAIRS` pairs, seek the best match only where its score is about among the top
        ``top_share`` of the records (the floor: that quantile of :data:`FLOOR_SAMPLE` records matched in full; a
        floor prunes most of the scan): the others get NaN, row -1, ``n_equal`` -1 and a ``MISSING`` pattern.

    Returns
    -------
    BestMatches
        ``score``, ``row``, ``n_equal`` and ``pattern``, one entry per record, in order.
        The Gower ranges are fitted on ``records`` and ``reference`` together, never on the
        synthetic table; the tables must share the compared columns (aligned as the audit
        aligns them: :func:`audit_core.common.alignment.align_tables`).
    """
    from audit_core.common.alignment import align_tables

    types = infer_column_types(records) if types is None else types
    aligned = align_tables({"records": records, "reference": reference, "synthetic": synthetic}, types=types)
    encoding = encode_for_gower([aligned["records"], aligned["reference"]], types=aligned.types)
    query, syn, ref = (match_table(encoding, aligned[name]) for name in ("records", "synthetic", "reference"))
    weights = fit_weights(ref)
    n = query.n_rows
    if top_share is None or n * syn.n_rows <= EXACT_PAIRS:
        score, row = best_agreement(query, syn, weights, client=client, progress=progress)
    else:
        sample = np.sort(np.random.default_rng(28).choice(n, size=min(n, FLOOR_SAMPLE), replace=False))
        score, row = np.full(n, -np.inf), np.full(n, -1, dtype=np.int64)
        score[sample], row[sample] = best_agreement(query.rows(sample), syn, weights, client=client)
        rest = np.setdiff1d(np.arange(n), sample)
        floor = np.full(rest.size, np.quantile(score[sample], 1.0 - top_share))
        score[rest], row[rest] = best_agreement(query.rows(rest), syn, weights, client=client, progress=progress,
                                                floor=floor)  # fmt: skip
    found = row >= 0
    pattern = np.full((n, len(query.columns)), MISSING, dtype=np.int8)
    pattern[found] = pair_scores(weights, query, syn, np.flatnonzero(found), row[found])[1]
    n_equal = np.where(found, (pattern == EQUAL).sum(axis=1), -1).astype(np.int64)
    return BestMatches(columns=query.columns, score=np.where(found, score, np.nan), row=row, n_equal=n_equal,
                       pattern=pattern)  # fmt: skip
