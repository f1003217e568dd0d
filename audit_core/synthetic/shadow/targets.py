"""Which training records the shadow attack targets (Meeus et al., ESORICS 2023, "Achilles' heels").

Meeus et al. found that the records a generator exposes are the unusual ones, and that a
simple distance rule finds them: a record's *isolation* is its mean Gower distance to its 5
nearest other real records (training and population together); the T records with the
largest isolation are the targets. A steward may name the records instead (rows of the
training table).
"""

from __future__ import annotations

import numpy as np

from audit_core.common.errors import InputError
from audit_core.synthetic.distance import nearest_k_gower
from audit_core.synthetic.encoding import EncodedTable

__all__ = ["ISOLATION_NEIGHBOURS", "isolation", "select_targets"]

ISOLATION_NEIGHBOURS = 5
"""Neighbours behind a record's isolation (Meeus et al. use k = 5)."""


def isolation(train: EncodedTable, population: EncodedTable, *, k: int = ISOLATION_NEIGHBOURS) -> np.ndarray:
    """Each training record's mean Gower distance to its ``k`` nearest other real records (training and population).

    The record itself is left out (one copy of it: a duplicate row elsewhere still counts, at distance 0).

    Examples
    --------
    >>> import pandas as pd
    >>> from audit_core.common.column_types import ColumnTypes
    >>> from audit_core.synthetic.encoding import encode_for_gower
    >>> real = pd.DataFrame({"x": [0.0, 1.0, 2.0, 3.0, 50.0, 100.0]})
    >>> enc = encode_for_gower([real], types=ColumnTypes(numeric=("x",)))
    >>> table = enc.transform(real)
    >>> isolation(table.rows([0, 5]), table.rows([1, 2, 3, 4]), k=2).round(3).tolist()
    [0.015, 0.735]
    """
    reference = _concat(train, population)
    near = nearest_k_gower(train, reference, k=k + 1)
    own = near.index == np.arange(train.n_rows)[:, None]
    drop = np.where(own.any(axis=1), own.argmax(axis=1), k)  # the record itself, or else the farthest of the k + 1
    keep = np.ones_like(own)
    keep[np.arange(train.n_rows), drop] = False
    return near.distance[keep].reshape(train.n_rows, k).mean(axis=1)


def _concat(a: EncodedTable, b: EncodedTable) -> EncodedTable:
    return EncodedTable(
        numeric=np.concatenate([a.numeric, b.numeric]), codes=np.concatenate([a.codes, b.codes]),
        numeric_columns=a.numeric_columns, categorical_columns=a.categorical_columns,
        numeric_weights=a.numeric_weights, categorical_weights=a.categorical_weights,
    )  # fmt: skip


def select_targets(scores: np.ndarray, *, n_targets: int, named: tuple[int, ...] | None = None) -> np.ndarray:
    """The target rows of the training table: the ``named`` ones (in that order), or the ``n_targets`` most isolated (most first).

    Ties in isolation go to the lower row. Named rows are checked against the table's size.
    """
    n = scores.size
    if named:
        rows = np.asarray(named, dtype=np.int64)
        bad = [int(r) for r in rows if not 0 <= r < n]
        if bad:
            raise InputError(f"--target-rows: row {bad[0]} is not a row of the training table (rows 0 to {n - 1}).")
        if np.unique(rows).size < rows.size:
            raise InputError("--target-rows names a row twice; name each target once.")
        return rows
    if n_targets > n:
        raise InputError(f"--targets asks for {n_targets} targets but the training table has {n} rows.")
    order = np.lexsort((np.arange(n), -scores))
    return order[:n_targets]
