"""How well a synthetic table keeps the real one's statistics: SDMetrics' quality report (:func:`utility_score`).

Privacy (docs/methods.md §1) is read against utility: a generator that leaks little because
it learned nothing is no better than the ``population`` reference's chance level bought for
free. The generator comparison (:mod:`audit_core.synthetic.comparison`) scores every
generator's table with it.
"""

from __future__ import annotations

import contextlib
import io
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from audit_core.common.alignment import align_tables
from audit_core.common.column_types import ColumnTypes
from audit_core.synthetic.generators.sdv import SDV_TABLE

__all__ = ["UtilityScore", "utility_score"]


@dataclass(frozen=True)
class UtilityScore:
    """How well the synthetic table keeps the real one's statistics (higher = better).

    Attributes
    ----------
    overall : float
        SDMetrics QualityReport score: the mean of ``column_shapes`` and ``column_pair_trends``.
    column_shapes : float
        Mean per-column similarity (KSComplement for numeric, TVComplement for categorical).
    column_pair_trends : float
        Mean per-pair similarity (CorrelationSimilarity for numeric pairs,
        ContingencySimilarity otherwise).
    method : str
        Which metric produced the numbers.
    """

    overall: float
    column_shapes: float
    column_pair_trends: float
    method: str = "SDMetrics QualityReport (column shapes + column pair trends) against the training table"

    def to_json(self) -> dict[str, float | str]:
        """Plain-JSON view."""
        return {
            "overall": self.overall, "column_shapes": self.column_shapes,
            "column_pair_trends": self.column_pair_trends, "method": self.method,
        }


def utility_score(real: pd.DataFrame, synthetic: pd.DataFrame, *, types: ColumnTypes) -> UtilityScore:
    """Score the synthetic table's fidelity to the real one with SDMetrics' quality report.

    Parameters
    ----------
    real, synthetic : pandas.DataFrame
        The real table the generator was fitted on and its synthetic output.
    types : ColumnTypes
        Column types (ignored columns are left out).

    Returns
    -------
    UtilityScore
        Column-shape and column-pair-trend scores in [0, 1] and their mean.

    Notes
    -----
    Privacy (docs/methods.md §1) is read against utility: a generator that leaks
    little because it learned nothing is no better than the ``population``
    reference's chance level bought for free.
    """
    from sdmetrics.reports import QualityReport

    aligned = align_tables({"real": real, "synthetic": synthetic}, types=types)
    cols = list(aligned.types.columns)
    columns = {c: {"sdtype": "numerical" if c in aligned.types.numeric else "categorical"} for c in cols}
    metadata = {"tables": {SDV_TABLE: {"columns": columns}}}
    report = QualityReport()
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        report.generate(
            {SDV_TABLE: aligned["real"][cols]}, {SDV_TABLE: aligned["synthetic"][cols]}, metadata, verbose=False
        )
    props = report.get_properties().set_index("Property")["Score"]

    def _get(name: str) -> float:
        value = props.get(name, np.nan)
        return float(value) if value is not None else float("nan")

    return UtilityScore(
        overall=float(report.get_score()), column_shapes=_get("Column Shapes"),
        column_pair_trends=_get("Column Pair Trends"),
    )
