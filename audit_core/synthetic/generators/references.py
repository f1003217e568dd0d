"""The two reference points of a comparison: ``bootstrap`` (maximal leakage) and ``population`` (chance)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from audit_core.common.column_types import ColumnTypes
from audit_core.common.errors import InputError
from audit_core.common.runtime import ProgressFn
from audit_core.synthetic.generators.base import TabularGenerator

__all__ = ["BootstrapGenerator", "PopulationGenerator"]


class BootstrapGenerator(TabularGenerator):
    """Resample training rows with replacement: the maximally leaky reference.

    With ``noise`` > 0 each numeric cell gets Gaussian noise with standard
    deviation ``noise`` times the column's standard deviation, and each
    categorical cell is, with probability ``noise``, replaced by a value drawn
    from the column's training distribution.
    """

    name = "bootstrap"

    def _fit(
        self, frame: pd.DataFrame, *, types: ColumnTypes, seed: int, progress: ProgressFn,
        reserve: pd.DataFrame | None,
    ) -> None:
        self._frame = frame.reset_index(drop=True)
        self._types = types

    def _sample(self, n: int, *, seed: int) -> pd.DataFrame:
        rng = np.random.default_rng(seed)
        out = self._frame.iloc[rng.integers(0, len(self._frame), size=n)].reset_index(drop=True).copy()
        noise = float(self.params["noise"])
        if noise > 0:
            types = self._types
            for col in types.numeric:
                sd = float(np.nanstd(self._frame[col].to_numpy(dtype=float)))
                out[col] = out[col].to_numpy(dtype=float) + rng.normal(0.0, noise * sd, size=n)
            for col in types.categorical:
                flip = rng.random(n) < noise
                pool = self._frame[col].to_numpy(dtype=object)
                values = out[col].to_numpy(dtype=object)
                values[flip] = pool[rng.integers(0, len(pool), size=int(flip.sum()))]
                out[col] = values
        return out


class PopulationGenerator(TabularGenerator):
    """Return real rows that neither the generator nor the audit saw: the chance reference.

    Needs ``reserve`` at fit time (the split's reserve part). Rows are drawn
    without replacement while the reserve lasts, then with replacement.
    """

    name = "population"

    def _fit(
        self, frame: pd.DataFrame, *, types: ColumnTypes, seed: int, progress: ProgressFn,
        reserve: pd.DataFrame | None,
    ) -> None:
        if reserve is None or len(reserve) == 0:
            raise InputError(
                "The 'population' reference needs real rows that the audit never sees; give the comparison a "
                "reserve fraction above 0 (on the command line, use another generator)."
            )
        self._frame = reserve.reset_index(drop=True)

    def _sample(self, n: int, *, seed: int) -> pd.DataFrame:
        rng = np.random.default_rng(seed)
        m = len(self._frame)
        idx = rng.permutation(m)[:n] if n <= m else np.concatenate([rng.permutation(m), rng.integers(0, m, n - m)])
        return self._frame.iloc[idx].reset_index(drop=True)

