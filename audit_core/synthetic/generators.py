"""Synthetic-data generators behind one interface and a registry by name.

A data steward rarely has one synthetic table: they choose a generator and its
settings. Each generator fits a real training table and samples a synthetic one;
:mod:`audit_core.synthetic.comparison` fits several side by side and audits each.

Generators (``GENERATORS``, by name; :func:`make_generator` builds one):

- ``gaussian_copula``, ``ctgan``, ``tvae``, ``copulagan``: SDV 2.0 single-table
  synthesizers (table-dict API: ``fit({name: df})``, ``sample(n)[name]``).
- ``bayesian_network``: pgmpy hill-climb structure learning (BIC, bounded
  in-degree), BDeu-smoothed CPDs and forward sampling; numeric columns are
  discretised into quantile bins and mapped back by drawing uniformly inside the
  sampled bin (columns with few distinct values are kept exact).
- ``bootstrap``: resamples training rows with replacement (optionally with
  noise). A maximally leaky reference: every synthetic row is a member.
- ``population``: returns real rows the audit never sees (the split's
  ``reserve`` part). What a perfect generator would leak: chance.

Every generator has ``fit(train, *, types, seed, progress, reserve)`` and
``sample(n, *, seed)``; outputs keep the training table's compared columns (in its
order) with numeric columns numeric (integers stay integers) and categorical ones
as text.
"""

from __future__ import annotations

import contextlib
import copy
import re
import threading
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import pandas as pd

from audit_core.common.errors import InputError
from audit_core.common.limits import MIN_TRAIN_ROWS
from audit_core.common.runtime import ProgressFn, as_progress, pick_device, seed_everything, sub_progress
from audit_core.common.tables import ColumnTypes, align_tables, infer_column_types
from audit_core.synthetic.choices import GENERATOR_INFO, GeneratorInfo

if TYPE_CHECKING:
    pass

MAX_CATEGORIES = 200
"""A categorical column with more distinct values than this is refused (free text, identifiers)."""


_DATE_PATTERN = re.compile(r"^\s*(\d{4}[-/.]\d{1,2}[-/.]\d{1,2}|\d{1,2}[-/.]\d{1,2}[-/.]\d{2,4})([ T]\d{1,2}:\d{2}.*)?\s*$")
SDV_TABLE = "real"


# --------------------------------------------------------------------------------------
# Registry entries: what audit_core.synthetic.choices says of a generator, and how to build it
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class GeneratorSpec(GeneratorInfo):
    """A registry entry: the generator's :class:`~audit_core.synthetic.choices.GeneratorInfo` and its class."""

    factory: Callable[..., TabularGenerator] | None = field(default=None, repr=False)


# --------------------------------------------------------------------------------------
# Preparing a training table
# --------------------------------------------------------------------------------------
def check_generator_input(df: pd.DataFrame, *, types: ColumnTypes) -> None:
    """Refuse column types the generators cannot model, naming the column.

    Parameters
    ----------
    df : pandas.DataFrame
        The real table (before conversion).
    types : ColumnTypes
        Which columns are numeric / categorical / ignored.

    Raises
    ------
    InputError
        A categorical column that holds dates (convert them to a number such as
        days since a reference date, or ignore the column), or one with more than
        :data:`MAX_CATEGORIES` distinct values (free text or an identifier: ignore
        it or group it into fewer categories).
    """
    for col in types.categorical:
        values = df[col].dropna()
        if values.empty:
            continue
        text = values.astype(str)
        sample = text.iloc[: min(len(text), 500)]
        if sample.str.match(_DATE_PATTERN).mean() >= 0.9:
            raise InputError(
                f"Column '{col}' holds dates, which the generators cannot model; convert it to a number "
                "(e.g. days since a reference date) or ignore the column."
            )
        n_distinct = int(text.nunique())
        if n_distinct > MAX_CATEGORIES:
            raise InputError(
                f"Column '{col}' has {n_distinct:,} distinct values (free text or an identifier?), more than "
                f"the {MAX_CATEGORIES} categories a generator can model; ignore the column or group its values."
            )
    for col in types.numeric:
        if pd.api.types.is_datetime64_any_dtype(df[col].dtype):
            raise InputError(
                f"Column '{col}' holds dates, which the generators cannot model; convert it to a number "
                "(e.g. days since a reference date) or ignore the column."
            )


@dataclass(frozen=True)
class _Prepared:
    frame: pd.DataFrame  # numeric float64 (NaN), categorical str (NaN), compared columns only
    types: ColumnTypes
    integer_columns: tuple[str, ...]


def _prepare(train: pd.DataFrame, *, types: ColumnTypes | None) -> _Prepared:
    if not isinstance(train, pd.DataFrame):
        raise InputError(f"The training table must be a table; got {type(train).__name__}.")
    if types is None:
        types = infer_column_types(train)
    check_generator_input(train, types=types)
    aligned = align_tables({"train": train}, types=types, min_rows={"train": MIN_TRAIN_ROWS})
    used = aligned.types
    order = [c for c in map(str, train.columns) if c in set(used.columns)]
    frame = aligned["train"][order].copy()
    integer = tuple(
        c for c in used.numeric
        if frame[c].notna().any() and np.all(np.mod(frame[c].dropna().to_numpy(), 1.0) == 0.0)
    )
    return _Prepared(frame=frame, types=used, integer_columns=integer)


def _restore_types(out: pd.DataFrame, prepared: _Prepared) -> pd.DataFrame:
    """Give a generator's raw output the training table's columns and dtypes."""
    result = {}
    for col in prepared.frame.columns:
        values = out[col] if col in out.columns else pd.Series(np.nan, index=out.index)
        if col in prepared.types.numeric:
            numbers = pd.to_numeric(values, errors="coerce").astype("float64")
            if col in prepared.integer_columns:
                rounded = numbers.round()
                result[col] = rounded.astype("int64") if rounded.notna().all() else rounded.astype("Int64")
            else:
                result[col] = numbers
        else:
            result[col] = pd.Series(
                [np.nan if (v is None or (isinstance(v, float) and np.isnan(v))) else str(v) for v in values],
                index=out.index, dtype=object,
            )
    return pd.DataFrame(result).reset_index(drop=True)


# --------------------------------------------------------------------------------------
# Epoch progress for CTGAN / TVAE / CopulaGAN (their loops iterate over tqdm(range(epochs)))
# --------------------------------------------------------------------------------------
_LOCAL = threading.local()
_HOOK_LOCK = threading.Lock()


class _EpochIterator:
    """Stands in for tqdm around the epoch loop; reports each epoch to this thread's callback."""

    def __init__(self, iterable: Any, callback: Callable[[int, int], None]) -> None:
        self._iterable = iterable
        self._callback = callback

    def __iter__(self) -> Iterator[Any]:
        total = len(self._iterable)
        for i, item in enumerate(self._iterable):
            self._callback(i, total)
            yield item
        self._callback(total, total)

    def set_description(self, *args: Any, **kwargs: Any) -> None:
        """Ignored (tqdm API)."""


def _install_epoch_hook() -> None:
    """Route ctgan's epoch loop through :class:`_EpochIterator` when a callback is set.

    The replacement falls back to the real tqdm when the calling thread has no
    callback, so other users of ctgan are unaffected; thread-local, so two
    sessions fitting at once each see their own epochs.
    """
    with _HOOK_LOCK:
        import ctgan.synthesizers.ctgan as ctgan_module
        import ctgan.synthesizers.tvae as tvae_module

        for module in (ctgan_module, tvae_module):
            original = module.tqdm
            if getattr(original, "_audit_core_hook", False):
                continue

            def hooked(iterable: Any = None, *args: Any, _original: Any = original, **kwargs: Any) -> Any:
                callback = getattr(_LOCAL, "epoch_callback", None)
                if callback is None or iterable is None:
                    return _original(iterable, *args, **kwargs)
                return _EpochIterator(iterable, callback)

            hooked._audit_core_hook = True  # type: ignore[attr-defined]
            module.tqdm = hooked


@contextlib.contextmanager
def _epoch_progress(progress: ProgressFn, label: str) -> Iterator[None]:
    _install_epoch_hook()

    def callback(done: int, total: int) -> None:
        progress(done / max(total, 1), f"{label}: epoch {min(done + 1, total)}/{total}")

    previous = getattr(_LOCAL, "epoch_callback", None)
    _LOCAL.epoch_callback = callback
    try:
        yield
    finally:
        _LOCAL.epoch_callback = previous


# --------------------------------------------------------------------------------------
# The interface
# --------------------------------------------------------------------------------------
class TabularGenerator:
    """Base class: a generator fitted on one real table, then sampled.

    Subclasses set ``name`` and implement ``_fit(frame, *, seed, progress, reserve)`` and
    ``_sample(n, *, seed)`` on the prepared frame (numeric float64, categorical
    str, NaN for missing); the base class validates input and restores dtypes.

    Parameters
    ----------
    **params
        The generator's parameters (see its :class:`GeneratorSpec`); unknown names
        are refused, missing ones take their defaults.
    """

    name: ClassVar[str] = ""

    def __init__(self, **params: Any) -> None:
        spec = GENERATORS[self.name]
        known = {p.name: p for p in spec.params}
        unknown = sorted(set(params) - set(known))
        if unknown:
            raise InputError(
                f"Generator '{self.name}' has no parameter(s) {', '.join(unknown)}; its parameters are "
                f"{', '.join(known) or 'none'}."
            )
        resolved = spec.defaults()
        for key, value in params.items():
            resolved[key] = known[key].check(value, generator=self.name)
        self.params: dict[str, Any] = resolved
        self._prepared: _Prepared | None = None

    def fit(
        self,
        train: pd.DataFrame,
        *,
        types: ColumnTypes | None = None,
        seed: int = 0,
        progress: ProgressFn | None = None,
        reserve: pd.DataFrame | None = None,
    ) -> TabularGenerator:
        """Fit on the real training table.

        Parameters
        ----------
        train : pandas.DataFrame
            Real training rows (the members of docs/methods.md §1).
        types : ColumnTypes, optional
            Column types; inferred from ``train`` when None. Ignored columns are
            neither learned nor generated.
        seed : int
            Seeds Python, numpy and torch before fitting.
        progress : ProgressFn, optional
            Called with (fraction, message); per epoch where the generator has epochs.
        reserve : pandas.DataFrame, optional
            Real rows never used by the audit; only the ``population`` reference needs them.

        Returns
        -------
        TabularGenerator
            ``self``, fitted.
        """
        prepared = _prepare(train, types=types)
        report = as_progress(progress)
        report(0.0, f"{self.name}: fitting on {len(prepared.frame):,} rows")
        seed_everything(seed)
        reserve_frame = None
        if reserve is not None:
            reserve_frame = align_tables({"reserve": reserve}, types=prepared.types)["reserve"][
                list(prepared.frame.columns)
            ]
        self._fit(prepared.frame, types=prepared.types, seed=seed, progress=report, reserve=reserve_frame)
        self._prepared = prepared
        report(1.0, f"{self.name}: fitted")
        return self

    def sample(self, n: int, *, seed: int = 0) -> pd.DataFrame:
        """Draw ``n`` synthetic rows (same columns and dtypes as the fitted table).

        Parameters
        ----------
        n : int
            Number of rows (at least 1).
        seed : int
            Seeds the sampling.

        Returns
        -------
        pandas.DataFrame
        """
        if self._prepared is None:
            raise InputError(f"Generator '{self.name}' has not been fitted yet; fit it before sampling.")
        if int(n) < 1:
            raise InputError(f"The number of synthetic rows must be at least 1; got {n}.")
        seed_everything(seed)
        raw = self._sample(int(n), seed=seed)
        return _restore_types(raw, self._prepared)

    # subclasses -------------------------------------------------------------------
    def _fit(
        self, frame: pd.DataFrame, *, types: ColumnTypes, seed: int, progress: ProgressFn,
        reserve: pd.DataFrame | None,
    ) -> None:
        raise NotImplementedError

    def _sample(self, n: int, *, seed: int) -> pd.DataFrame:
        raise NotImplementedError

    @property
    def types(self) -> ColumnTypes:
        """The column types the generator was fitted with."""
        if self._prepared is None:
            raise InputError(f"Generator '{self.name}' has not been fitted yet.")
        return self._prepared.types


# --------------------------------------------------------------------------------------
# SDV synthesizers
# --------------------------------------------------------------------------------------
class _SdvGenerator(TabularGenerator):
    """An SDV 2.0 single-table synthesizer with explicit metadata (no PII/id auto-detection)."""

    _has_epochs: ClassVar[bool] = True

    def _synthesizer(self, metadata: Any) -> Any:
        raise NotImplementedError

    def _fit(
        self, frame: pd.DataFrame, *, types: ColumnTypes, seed: int, progress: ProgressFn,
        reserve: pd.DataFrame | None,
    ) -> None:
        from sdv.metadata import Metadata

        columns = {c: {"sdtype": "numerical" if c in types.numeric else "categorical"} for c in frame.columns}
        metadata = Metadata.load_from_dict({"tables": {SDV_TABLE: {"columns": columns}}})
        synth = self._synthesizer(metadata)
        fit_progress = sub_progress(progress, 0.05, 0.99)
        context = _epoch_progress(fit_progress, self.name) if self._has_epochs else contextlib.nullcontext()
        with context, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            synth.fit({SDV_TABLE: frame})
        self._synth = synth

    def _sample(self, n: int, *, seed: int) -> pd.DataFrame:
        synth = copy.deepcopy(self._synth)  # sampling advances the model's RNG: keep the fitted one pristine
        with contextlib.suppress(AttributeError):
            synth._set_random_state(seed)  # SDV otherwise samples from a fixed seed
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = synth.sample(n)
        return out[SDV_TABLE] if isinstance(out, dict) else out


def _gpu() -> bool:
    return pick_device().type in {"cuda", "mps"}


def _check_batch(batch_size: int, *, pac: int, generator: str) -> None:
    if batch_size % pac or batch_size % 2:
        raise InputError(
            f"The batch size of '{generator}' must be an even multiple of {pac}; got {batch_size}."
        )


class GaussianCopulaGenerator(_SdvGenerator):
    """SDV's GaussianCopulaSynthesizer: marginal distributions + a Gaussian copula."""

    name = "gaussian_copula"
    _has_epochs = False

    def _synthesizer(self, metadata: Any) -> Any:
        from sdv.single_table import GaussianCopulaSynthesizer

        return GaussianCopulaSynthesizer(metadata, default_distribution=self.params["default_distribution"])


class CTGANGenerator(_SdvGenerator):
    """SDV's CTGANSynthesizer (conditional tabular GAN); GPU when available."""

    name = "ctgan"

    def _synthesizer(self, metadata: Any) -> Any:
        from sdv.single_table import CTGANSynthesizer

        _check_batch(self.params["batch_size"], pac=10, generator=self.name)
        return CTGANSynthesizer(
            metadata, epochs=self.params["epochs"], batch_size=self.params["batch_size"], enable_gpu=_gpu()
        )


class TVAEGenerator(_SdvGenerator):
    """SDV's TVAESynthesizer (tabular variational autoencoder); GPU when available."""

    name = "tvae"

    def _synthesizer(self, metadata: Any) -> Any:
        from sdv.single_table import TVAESynthesizer

        _check_batch(self.params["batch_size"], pac=1, generator=self.name)
        return TVAESynthesizer(
            metadata, epochs=self.params["epochs"], batch_size=self.params["batch_size"], enable_gpu=_gpu()
        )


class CopulaGANGenerator(_SdvGenerator):
    """SDV's CopulaGANSynthesizer (CTGAN on copula-transformed marginals); GPU when available."""

    name = "copulagan"

    def _synthesizer(self, metadata: Any) -> Any:
        from sdv.single_table import CopulaGANSynthesizer

        _check_batch(self.params["batch_size"], pac=10, generator=self.name)
        return CopulaGANSynthesizer(
            metadata, epochs=self.params["epochs"], batch_size=self.params["batch_size"], enable_gpu=_gpu()
        )


# --------------------------------------------------------------------------------------
# Bayesian network (pgmpy)
# --------------------------------------------------------------------------------------
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
                    edges = np.unique(np.nanquantile(values, np.linspace(0, 1, bins + 1)))
                    self._bins[col] = _Binning(exact=False, edges=edges, values=())
                    idx = np.clip(np.searchsorted(edges, values, side="right") - 1, 0, len(edges) - 2)
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


# --------------------------------------------------------------------------------------
# Reference points
# --------------------------------------------------------------------------------------
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


# --------------------------------------------------------------------------------------
# Registry
# --------------------------------------------------------------------------------------
_FACTORIES: dict[str, type[TabularGenerator]] = {
    "gaussian_copula": GaussianCopulaGenerator,
    "ctgan": CTGANGenerator,
    "tvae": TVAEGenerator,
    "copulagan": CopulaGANGenerator,
    "bayesian_network": BayesianNetworkGenerator,
    "bootstrap": BootstrapGenerator,
    "population": PopulationGenerator,
}
GENERATORS: dict[str, GeneratorSpec] = {
    name: GeneratorSpec(**{f.name: getattr(info, f.name) for f in fields(info)}, factory=_FACTORIES[name])
    for name, info in GENERATOR_INFO.items()
}
"""Registry of generators by name (the names, labels and parameters: audit_core.synthetic.choices)."""


def make_generator(name: str, **params: Any) -> TabularGenerator:
    """Build an unfitted generator by registry name.

    Parameters
    ----------
    name : str
        A key of :data:`GENERATORS`.
    **params
        Parameters of that generator (see ``GENERATORS[name].params``).

    Returns
    -------
    TabularGenerator

    Raises
    ------
    InputError
        Unknown name or parameter, or a value out of range.

    Examples
    --------
    >>> gen = make_generator("bootstrap", noise=0.0)
    >>> gen.params
    {'noise': 0.0}
    """
    if name not in GENERATORS:
        raise InputError(f"Unknown generator '{name}'; choose one of {', '.join(GENERATORS)}.")
    factory = GENERATORS[name].factory
    assert factory is not None  # every entry has its class
    return factory(**params)
