"""Gower nearest neighbours on a Dask cluster, the same numbers as :func:`audit_core.synthetic.distance.nearest_gower`.

The single-process engine scans the reference rows without a missing value and those
with one apart (with the float32 kernel; ties to the lowest row), then keeps the
better of the two candidates in float64. Here the query records are cut into blocks
and the reference rows of each kind into blocks; every (query block, reference block)
pair is one task running that same kernel on a worker, each returning its partial
minimum (float32 distance and the global row); the partial minima are reduced in the
same order (lower distance, then lower row), and the two kinds compared in float64
exactly as the engine does. With one reference block per kind (the default up to
:data:`REFERENCE_BLOCK_ROWS` rows) the result is bit-for-bit the engine's; with more,
two float32 distances that are equal after the division by the record's weight sum
go to the lower row (the engine, which compares the undivided sums, may pick the
other one; the float64 distance then differs by at most float32 rounding, ~1e-7).

Tables larger than memory are read from partitioned Parquet (a folder or a glob) with
``dask.dataframe`` (:func:`nearest_gower_parquet`): the ranges and category codes are
fitted by a distributed reduction (per partition: numeric min / max and the categories
in order of first appearance; the client fits :func:`audit_core.synthetic.encoding.encode_for_gower`
on those summaries, so the encoding is the one the whole tables would give), each
partition is encoded on its worker, and the client only ever holds the summaries and
the two result columns (distance and row).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from audit_core.common.cluster import run_tasks
from audit_core.common.column_types import ColumnTypes
from audit_core.common.errors import InputError
from audit_core.common.runtime import ProgressFn, as_progress
from audit_core.synthetic.distance import NearestNeighbours, nearest_gower, pair_distances
from audit_core.synthetic.encoding import MISSING_CODE, EncodedTable, GowerEncoding, check_same_encoding, encode_for_gower
from audit_core.synthetic.nearest_scan import scan_numba
from audit_core.synthetic.numba_runtime import match_worker_threads

__all__ = ["REFERENCE_BLOCK_ROWS", "encode_parquet", "nearest_gower_on", "nearest_gower_parquet"]

REFERENCE_BLOCK_ROWS = 2_000_000
"""Reference rows per task (about 60 MB encoded for 15 columns); more rows are split into blocks."""

_QUERY_BLOCK_ROWS = 50_000
"""Largest query block per task; smaller blocks are used to give every worker several tasks."""


def _kinds(reference: EncodedTable) -> list[np.ndarray]:
    """Rows without a missing value and rows with one (the engine scans them apart); empty kinds dropped."""
    incomplete = np.isnan(reference.numeric).any(axis=1) | (reference.codes == MISSING_CODE).any(axis=1)
    if not incomplete.any() or incomplete.all():
        return [np.arange(reference.n_rows, dtype=np.int64)]
    return [np.flatnonzero(~incomplete), np.flatnonzero(incomplete)]


def _block_minimum(query: EncodedTable, reference: EncodedTable, rows: np.ndarray, exact: bool):
    """One task: the engine's kernel over one reference block; (float32 distance, global row[, float64 distance])."""
    match_worker_threads()
    d, i = scan_numba(query, reference, block_rows=None, progress=None)
    if not exact:
        return d, rows[i]
    e = pair_distances(query, reference, query_rows=np.arange(query.n_rows), reference_rows=i)
    return d, rows[i], e


def _reduce(parts: Sequence[tuple]) -> tuple:
    """Partial minima of one query block over the reference blocks of one kind: lower distance, then lower row."""
    best = list(parts[0])
    for part in parts[1:]:
        d, i = part[0], part[1]
        take = (d < best[0]) | ((d == best[0]) & (i < best[1]))
        best = [np.where(take, new, old) for new, old in zip(part, best, strict=True)]
    return tuple(best)


def _pick_kind(a: tuple, b: tuple) -> tuple[np.ndarray, np.ndarray]:
    """The engine's last step: the two kinds' candidates compared in float64 (ties to the lower row)."""
    second = (b[2] < a[2]) | ((b[2] == a[2]) & (b[1] < a[1]))
    return np.where(second, b[2], a[2]), np.where(second, b[1], a[1])


def _query_blocks(n: int, workers: int, query_block: int | None) -> list[slice]:
    size = int(query_block or min(_QUERY_BLOCK_ROWS, max(1024, -(-n // max(1, 4 * workers)))))
    return [slice(s, min(n, s + size)) for s in range(0, n, size)]


def nearest_gower_on(
    query: EncodedTable,
    reference: EncodedTable,
    *,
    client: Any = None,
    query_block: int | None = None,
    reference_block: int | None = None,
    progress: ProgressFn | None = None,
) -> NearestNeighbours:
    """:func:`audit_core.synthetic.distance.nearest_gower` with the blocks spread over a Dask cluster.

    Parameters
    ----------
    query, reference : EncodedTable
        As for ``nearest_gower`` (same :class:`~audit_core.synthetic.encoding.GowerEncoding`).
    client : distributed.Client, optional
        Without one this *is* ``nearest_gower`` (single process).
    query_block, reference_block : int, optional
        Rows per task (defaults: a few blocks per worker, :data:`REFERENCE_BLOCK_ROWS`).
    progress : ProgressFn, optional
        Called as each task finishes.

    Returns
    -------
    NearestNeighbours
        Same ``distance`` (float64) and ``index`` as the engine (see the module notes
        on ties when the reference is cut into several blocks); ``backend`` is
        ``"dask:numba"``.
    """
    if client is None:
        return nearest_gower(query, reference, progress=progress)
    check_same_encoding(query, reference)
    if reference.n_rows == 0:
        raise InputError("The reference (synthetic) table has no rows; there is nothing to compare with.")
    n = query.n_rows
    if n == 0:
        return NearestNeighbours(distance=np.zeros(0), index=np.zeros(0, dtype=np.int64), backend="none")
    from audit_core.common.cluster import n_workers

    report = as_progress(progress)
    kinds = _kinds(reference)
    rb = int(reference_block or REFERENCE_BLOCK_ROWS)
    # Scattered under fresh keys (hash=False): a content-hashed key shared with an earlier call's block could be
    # released by that call's futures while this one's tasks need it ("lost dependencies").
    ref_blocks = []  # (kind, scattered block, its global rows)
    for k, rows in enumerate(kinds):
        for s in range(0, rows.size, rb):
            part = rows[s : s + rb]
            ref_blocks.append((k, client.scatter(reference.rows(part), broadcast=True, hash=False), part))
    q_blocks = _query_blocks(n, n_workers(client), query_block)
    exact = len(kinds) > 1
    tasks, keys, parts_of = [], [], []
    for qi, sl in enumerate(q_blocks):
        q_future = client.scatter(query.rows(np.arange(sl.start, sl.stop)), broadcast=True, hash=False)
        for k, block, rows in ref_blocks:
            tasks.append((q_future, block, rows, exact))
            keys.append((qi, k))
            parts_of.append((sl, rows))

    def inputs_again(i: int) -> tuple:  # a worker died with the scattered blocks: scatter task i's own anew
        sl, rows = parts_of[i]
        q = client.scatter(query.rows(np.arange(sl.start, sl.stop)), hash=False)
        return q, client.scatter(reference.rows(rows), hash=False), rows, exact
    total = len(tasks)
    done = [0]

    def tick(i: int, _result: Any) -> None:
        done[0] += 1
        report(done[0] / total, f"nearest synthetic record: {done[0]} of {total} blocks on the cluster")

    labels = [f"distance block {q + 1}/{len(q_blocks)}" for q, _ in keys]
    parts = run_tasks(client, _block_minimum, tasks, labels=labels, on_done=tick, inputs_again=inputs_again)
    index = np.empty(n, dtype=np.int64)
    grouped: dict[tuple[int, int], list] = {}
    for key, part in zip(keys, parts, strict=True):
        grouped.setdefault(key, []).append(part)
    for qi, sl in enumerate(q_blocks):
        best = [_reduce(grouped[(qi, k)]) for k in range(len(kinds))]
        index[sl] = best[0][1] if len(best) == 1 else _pick_kind(*best)[1]
    distance = pair_distances(query, reference, query_rows=np.arange(n), reference_rows=index)
    return NearestNeighbours(distance=distance, index=index, backend="dask:numba")


# ------------------------------------------------------------------------- Parquet datasets
def _read(path: str, columns: Sequence[str]):
    import dask.dataframe as dd

    try:
        return dd.read_parquet(path, columns=list(columns))
    except (OSError, ValueError, KeyError) as exc:
        first = (str(exc).strip().splitlines() or [""])[0]
        raise InputError(f"Could not read the Parquet dataset {path}: {first}") from exc


def _summary(part: pd.DataFrame, numeric: Sequence[str], categorical: Sequence[str]) -> pd.DataFrame:
    """A few rows carrying one partition's numeric min / max and its categories in order of first appearance."""
    cols: dict[str, list] = {}
    for col in numeric:
        values = pd.to_numeric(part[col], errors="coerce").to_numpy(dtype=np.float64)
        finite = values[np.isfinite(values)]
        cols[col] = [finite.min(), finite.max()] if finite.size else []
    for col in categorical:
        cols[col] = list(pd.unique(part[col].dropna()))
    height = max([len(v) for v in cols.values()] + [1])
    frame = {}
    for col in numeric:
        frame[col] = pd.Series(cols[col] + [np.nan] * (height - len(cols[col])), dtype="float64")
    for col in categorical:
        frame[col] = pd.Series(cols[col] + [None] * (height - len(cols[col])), dtype=object)
    return pd.DataFrame(frame)


def _constant_labels(part: pd.DataFrame, constant: Sequence[str]) -> pd.DataFrame:
    """The values of the numeric columns that are constant in the real data, in order of first appearance."""
    cols = {c: pd.unique(pd.to_numeric(part[c], errors="coerce").astype("float64").dropna()) for c in constant}
    height = max([len(v) for v in cols.values()] + [1])
    return pd.DataFrame({c: pd.Series(list(v) + [np.nan] * (height - len(v)), dtype="float64") for c, v in cols.items()})


def encode_parquet(
    client: Any, real: Sequence[str], *, types: ColumnTypes, weights: Mapping[str, float] | None = None
) -> GowerEncoding:
    """Fit the Gower encoding on partitioned Parquet datasets by a distributed reduction.

    Each partition is summarised on its worker (numeric min / max, categories in order
    of first appearance); :func:`audit_core.synthetic.encoding.encode_for_gower` fitted on the
    summaries, in partition order, gives the ranges and codes of the whole tables.
    """
    columns = list(types.columns)
    frames = [_read(path, columns) for path in real]
    parts = [part for frame in frames for part in frame.to_delayed()]
    tasks = [(p, types.numeric, types.categorical) for p in client.compute(parts)]
    summaries = run_tasks(client, _summary, tasks, labels=[f"range of partition {i + 1}" for i in range(len(tasks))])
    first = encode_for_gower(summaries, types=types, weights=weights)
    if not first.constant_numeric:
        return first
    # Numeric columns constant in the real data are compared by equality: their labels are their
    # values (NaN aside), which the summaries hold as the min and max already.
    label_tasks = [(p, first.constant_numeric) for p in client.compute(parts)]
    names = [f"labels of partition {i + 1}" for i in range(len(label_tasks))]
    labels = run_tasks(client, _constant_labels, label_tasks, labels=names)
    merged = [
        pd.concat([s.drop(columns=list(first.constant_numeric)), lab], axis=1)
        for s, lab in zip(summaries, labels, strict=True)
    ]
    return encode_for_gower([m.reindex(columns=summaries[0].columns) for m in merged], types=types, weights=weights)


def _encode_part(part: pd.DataFrame, encoding: GowerEncoding) -> EncodedTable:
    return encoding.transform(part.reset_index(drop=True))


def _kind_block(table: EncodedTable, offset: int, kind: int) -> tuple[EncodedTable, np.ndarray]:
    """Rows of one kind (0: no missing value, 1: some) of an encoded partition, with their global rows."""
    incomplete = np.isnan(table.numeric).any(axis=1) | (table.codes == MISSING_CODE).any(axis=1)
    local = np.flatnonzero(incomplete if kind else ~incomplete)
    return table.rows(local), offset + local


def _join_blocks(*blocks: tuple) -> tuple[EncodedTable, np.ndarray]:
    """Consecutive partitions' rows of one kind as one reference block."""
    tables = [t for t, _ in blocks]
    first = tables[0]
    joined = EncodedTable(
        numeric=np.concatenate([t.numeric for t in tables]),
        codes=np.concatenate([t.codes for t in tables]),
        numeric_columns=first.numeric_columns,
        categorical_columns=first.categorical_columns,
        numeric_weights=first.numeric_weights,
        categorical_weights=first.categorical_weights,
    )
    return joined, np.concatenate([rows for _, rows in blocks])


def _block_minimum_kind(query: EncodedTable, block: tuple) -> tuple:
    table, rows = block
    if rows.size == 0:
        inf = np.full(query.n_rows, np.inf)
        return inf.astype(np.float32), np.full(query.n_rows, np.iinfo(np.int64).max), inf
    return _block_minimum(query, table, rows, True)


def _reduce_kinds(cut: int, *parts: tuple) -> tuple[np.ndarray, np.ndarray]:
    """Per query partition: reduce each kind's partial minima (the first ``cut`` parts, the rest), compare in float64."""
    best = [_reduce(parts[:cut]), _reduce(parts[cut:])] if cut < len(parts) else [_reduce(parts)]
    best = [b for b in best if np.isfinite(b[2]).any()] or best[:1]
    if len(best) == 1:
        return best[0][2], best[0][1]
    return _pick_kind(*best)


def nearest_gower_parquet(
    client: Any,
    query: str,
    reference: str,
    *,
    real: Sequence[str],
    types: ColumnTypes,
    weights: Mapping[str, float] | None = None,
    progress: ProgressFn | None = None,
) -> NearestNeighbours:
    """Nearest reference record of every query record, both read from partitioned Parquet on the cluster.

    Parameters
    ----------
    client : distributed.Client
    query, reference : str
        Parquet datasets (a folder or a glob), e.g. the real records and the synthetic table.
    real : sequence of str
        The real datasets the ranges and codes are fitted on (docs/methods.md §1 step 1:
        never the synthetic one).
    types : ColumnTypes
    weights : mapping, optional

    Returns
    -------
    NearestNeighbours
        Query rows in the dataset's partition order; ``index`` is the reference row in
        its partition order. Consecutive reference partitions are joined into blocks of
        up to :data:`REFERENCE_BLOCK_ROWS` rows: up to that size the result is
        ``nearest_gower``'s on the whole tables, bit for bit; beyond, see the module
        notes on ties.
    """
    if client is None:
        raise InputError("Reading Parquet datasets larger than memory needs a Dask cluster (--scheduler or --workers).")
    report = as_progress(progress)
    report(0.0, "fitting the ranges and codes on the cluster")
    encoding = encode_parquet(client, real, types=types, weights=weights)
    columns = list(types.columns)
    q_parts = client.compute(_read(query, columns).to_delayed())
    r_parts = client.compute(_read(reference, columns).to_delayed())
    q_enc = [client.submit(_encode_part, p, encoding, pure=False) for p in q_parts]
    r_enc = [client.submit(_encode_part, p, encoding, pure=False) for p in r_parts]
    r_sizes = run_tasks(client, len, [(e,) for e in r_enc])
    q_sizes = run_tasks(client, len, [(e,) for e in q_enc])
    if sum(r_sizes) == 0:
        raise InputError("The reference (synthetic) table has no rows; there is nothing to compare with.")
    offsets = np.concatenate([[0], np.cumsum(r_sizes)[:-1]]).astype(np.int64)
    # consecutive partitions joined into blocks of up to REFERENCE_BLOCK_ROWS rows (one block per kind in
    # most cases: the engine's own scan, and its pruning works best over a large sorted reference)
    groups: list[list[int]] = [[]]
    size = 0
    for k, rows in enumerate(r_sizes):
        if groups[-1] and size + rows > REFERENCE_BLOCK_ROWS:
            groups.append([])
            size = 0
        groups[-1].append(k)
        size += rows
    blocks = [[client.submit(_join_blocks, *[client.submit(_kind_block, r_enc[k], int(offsets[k]), kind, pure=False)
                                             for k in group], pure=False) for group in groups]
              for kind in (0, 1)]  # fmt: skip
    del q_parts, r_parts
    reduced = []
    for q in q_enc:  # the partial minima of a query partition are reduced on a worker
        partial = [client.submit(_block_minimum_kind, q, b, pure=False) for kind in blocks for b in kind]
        reduced.append((len(blocks[0]), *partial))
    done = [0]

    def tick(i: int, _result: Any) -> None:
        done[0] += 1
        report(done[0] / len(reduced), f"nearest synthetic record: {done[0]} of {len(reduced)} query partitions")

    labels = [f"query partition {i + 1}" for i in range(len(reduced))]
    results = run_tasks(client, _reduce_kinds, reduced, labels=labels, on_done=tick)
    distance = np.concatenate([r[0] for r in results]) if results else np.zeros(0)
    index = np.concatenate([r[1] for r in results]).astype(np.int64) if results else np.zeros(0, dtype=np.int64)
    assert distance.size == sum(q_sizes)
    return NearestNeighbours(distance=np.asarray(distance, dtype=np.float64), index=index, backend="dask:numba")
