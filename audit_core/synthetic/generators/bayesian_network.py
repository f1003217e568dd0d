"""A discrete Bayesian network (pgmpy): hill-climbing structure, BDeu-smoothed CPDs, forward sampling."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from audit_core.common.column_types import ColumnTypes
from audit_core.common.runtime import ProgressFn
from audit_core.synthetic.generators.base import TabularGenerator

__all__ = ["BayesianNetworkGenerator"]

_MISSING_STATE = "__missing__"


@dataclass(frozen=True)
class _Binning:
    exact: bool  # True: the states are the values themselves
    edges: np.ndarray  # bin edges (len = bins + 1) when not exact
    values: tuple[float, ...]  # the distinct values when exact


class BayesianNetworkGenerator(TabularGenerator):
    """A discrete Bayesian network learned by hill climbing, sampled forward.

    Numeric columns with more than ``bins`` distinct values are cut at their
    quantiles; a sampled bin is mapped back by drawing uniformly between its
    edges (integers rounded). Numeric columns with at most ``bins`` distinct
    values, and categorical columns, are modelled value by value. Missing
    values are a state of their own. Structure: pgmpy ``HillClimbSearch`` with
    the BIC score and at most ``degree`` parents per node; CPDs: BDeu prior
    with equivalent sample size ``pseudo_count`` (so unseen combinations keep
    a small probability).
    """

    name = "bayesian_network"

    def _fit(
        self, frame: pd.DataFrame, *, types: ColumnTypes, seed: int, progress: ProgressFn,
        reserve: pd.DataFrame | None,
    ) -> None:
        with warnings.catch_warnings():  # pgmpy warns about its own deprecated modules on import
            warnings.simplefilter("ignore")
            from pgmpy.causal_discovery import HillClimbSearch
            from pgmpy.global_vars import config
            from pgmpy.models import DiscreteBayesianNetwork
            from pgmpy.parameter_estimator import DiscreteBayesianEstimator

        config.set_show_progress(False)
        bins = int(self.params["bins"])
        self._bins: dict[str, _Binning] = {}
        discrete = {}
        for col in frame.columns:
            if col in types.numeric:
                values = frame[col].to_numpy(dtype=float)
                distinct = np.unique(values[~np.isnan(values)])
                if len(distinct) <= bins:
                    self._bins[col] = _Binning(exact=True, edges=np.array([]), values=tuple(distinct))
                    states = np.array([_MISSING_STATE if np.isnan(v) else repr(float(v)) for v in values], dtype=object)
                else:
                    cuts = np.unique(np.nanquantile(values, np.linspace(0, 1, bins + 1)))
                    self._bins[col] = _Binning(exact=False, edges=cuts, values=())
                    idx = np.clip(np.searchsorted(cuts, values, side="right") - 1, 0, len(cuts) - 2)
                    states = np.array(
                        [_MISSING_STATE if np.isnan(v) else f"b{i}" for v, i in zip(values, idx, strict=True)],
                        dtype=object,
                    )
                discrete[col] = states
            else:
                discrete[col] = frame[col].fillna(_MISSING_STATE).astype(str).to_numpy(dtype=object)
        data = pd.DataFrame(discrete, columns=list(frame.columns))
        progress(0.1, f"{self.name}: learning the structure")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            degree = int(self.params["degree"])
            edges: list[tuple[str, str]] = []
            if degree > 0:
                search = HillClimbSearch(
                    scoring_method="bic-d", max_indegree=degree, return_type="dag", show_progress=False,
                ).fit(data)
                edges = [(str(a), str(b)) for a, b in search.causal_graph_.edges()]
            progress(0.7, f"{self.name}: estimating the probabilities of {len(edges)} edges")
            model = DiscreteBayesianNetwork(edges)
            model.add_nodes_from(list(data.columns))
            model.fit(
                data,
                estimator=DiscreteBayesianEstimator(
                    prior_type="BDeu", equivalent_sample_size=float(self.params["pseudo_count"])
                ),
            )
        self._model = model
        self._columns = list(frame.columns)
        self.edges: tuple[tuple[str, str], ...] = tuple(edges)

    def _sample(self, n: int, *, seed: int) -> pd.DataFrame:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from pgmpy.sampling import BayesianModelSampling

            states = BayesianModelSampling(self._model).forward_sample(
                size=n, seed=seed % (2**32), show_progress=False, n_jobs=1
            )
        rng = np.random.default_rng(seed)
        out = {}
        for col in self._columns:
            raw = states[col].astype(str).to_numpy()
            missing = raw == _MISSING_STATE
            if col in self._bins:
                binning = self._bins[col]
                values = np.full(n, np.nan)
                ok = ~missing
                if binning.exact:
                    values[ok] = raw[ok].astype(float)
                else:
                    idx = np.array([int(s[1:]) for s in raw[ok]], dtype=int)
                    lo, hi = binning.edges[idx], binning.edges[idx + 1]
                    values[ok] = lo + (hi - lo) * rng.random(int(ok.sum()))
                out[col] = values
            else:
                out[col] = np.where(missing, np.nan, raw).astype(object)
        return pd.DataFrame(out)

