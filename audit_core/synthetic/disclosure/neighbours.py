"""The nearest synthetic rows of the attacked records over a set of columns (linkability and inference).

``k = 1`` uses :func:`audit_core.synthetic.distance.nearest_gower` (exact, lowest row among
ties). ``k > 1`` scans the synthetic table in blocks of queries with
:func:`audit_core.synthetic.distance.pairwise_gower` (the same encoding and formula) and keeps
the ``k`` smallest distances, ties to the lower row. The attacks shuffle the synthetic rows
(seeded) before each search, independently for the two linkability halves, so ties are
broken at random: breaking them by row order would link a person's two halves whenever both
tie with the same early row (a planted block of copies at the top of the table would be
"linked" through the ties alone). The Gower ranges and category codes of each column set are
fitted on the real records (training and control), as for the membership audit
(:func:`column_encoding`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from audit_core.common.column_types import ColumnTypes
from audit_core.synthetic.distance import nearest_gower, pairwise_gower
from audit_core.synthetic.encoding import EncodedTable, GowerEncoding, encode_for_gower

__all__ = ["attacked_table", "column_encoding", "knn_gower"]

_KNN_CELLS = 4_000_000  # query x synthetic cells per block of the k > 1 neighbour scan


def attacked_table(frames: dict[str, pd.DataFrame], targets: np.ndarray, controls: np.ndarray) -> pd.DataFrame:
    """The target rows of the training table followed by the control rows of the holdout, as one table."""
    return pd.concat([frames["train"].iloc[targets], frames["holdout"].iloc[controls]], ignore_index=True)


def column_encoding(frames_real: Sequence[pd.DataFrame], types: ColumnTypes, columns: Sequence[str]) -> GowerEncoding:
    """The Gower encoding of ``columns`` only, fitted on the real tables ``frames_real``."""
    sub = ColumnTypes(
        numeric=tuple(c for c in types.numeric if c in columns),
        categorical=tuple(c for c in types.categorical if c in columns),
    )
    return encode_for_gower(frames_real, types=sub)


def knn_gower(query: EncodedTable, reference: EncodedTable, k: int) -> np.ndarray:
    """Rows of the ``k`` nearest reference records of each query, int64 ``[n_query, k]``.

    ``k = 1`` is :func:`audit_core.synthetic.distance.nearest_gower`; for ``k > 1`` the reference
    is scanned in blocks of queries with :func:`audit_core.synthetic.distance.pairwise_gower` (same
    formula, float64), keeping the ``k`` smallest distances, ties to the lower row.
    """
    if k <= 1:
        return nearest_gower(query, reference).index[:, None]
    k = min(int(k), reference.n_rows)
    out = np.empty((query.n_rows, k), dtype=np.int64)
    step = max(1, _KNN_CELLS // max(reference.n_rows, 1))
    for q0 in range(0, query.n_rows, step):
        d = pairwise_gower(query.rows(np.arange(q0, min(q0 + step, query.n_rows))), reference)
        part = np.argpartition(d, k - 1, axis=1)[:, :k]
        kth = np.take_along_axis(d, part, axis=1).max(axis=1, keepdims=True)
        for i in range(d.shape[0]):  # all rows within the k-th distance, lowest rows first among ties
            cand = np.flatnonzero(d[i] <= kth[i, 0])
            order = np.lexsort((cand, d[i, cand]))
            out[q0 + i] = cand[order[:k]]
    return out
