"""Synthetic-data generators behind one interface, and a side-by-side privacy/utility comparison.

A data steward rarely has one synthetic table: they choose a generator and its
settings. This module fits several generators on the same real training table,
audits each synthetic table with the METHODS.md §1 attacks and scores its
utility, so that privacy is read against what the data is still good for (the
paper behind §1 compared six generators on the same real data this way).

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
import hashlib
import io
import math
import re
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import pandas as pd

from audit_core.errors import InputError
from audit_core.runtime import ProgressFn, as_progress, pick_device, seed_everything, sub_progress
from audit_core.tables import ColumnTypes, align_tables, infer_column_types

if TYPE_CHECKING:
    from audit_core.synthetic import SyntheticAudit

MAX_CATEGORIES = 200
"""A categorical column with more distinct values than this is refused (free text, identifiers)."""

MIN_TRAIN_ROWS = 20
"""Fewest training rows a generator is fitted on."""

_DATE_PATTERN = re.compile(r"^\s*(\d{4}[-/.]\d{1,2}[-/.]\d{1,2}|\d{1,2}[-/.]\d{1,2}[-/.]\d{2,4})([ T]\d{1,2}:\d{2}.*)?\s*$")
_TABLE = "real"


# --------------------------------------------------------------------------------------
# Parameters and registry entries
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ParamSpec:
    """One user-settable parameter of a generator.

    Attributes
    ----------
    name : str
        Keyword accepted by :func:`make_generator`.
    label : str
        Short human label (pages use it for the widget).
    kind : str
        ``"int"``, ``"float"`` or ``"choice"``.
    default : int, float or str
        Default chosen so that a fit on 5,000 rows takes under two minutes on two CPU cores.
    low, high : float, optional
        Inclusive bounds for ``int`` / ``float``.
    choices : tuple of str
        Allowed values for ``choice``.
    help : str
        One sentence on what the parameter does.
    """

    name: str
    label: str
    kind: str
    default: Any
    low: float | None = None
    high: float | None = None
    choices: tuple[str, ...] = ()
    help: str = ""

    def check(self, value: Any, *, generator: str) -> Any:
        """Return ``value`` converted to the parameter's type, or raise InputError."""
        if self.kind == "choice":
            if value not in self.choices:
                raise InputError(
                    f"Parameter '{self.name}' of generator '{generator}' must be one of "
                    f"{', '.join(self.choices)}; got {value!r}."
                )
            return value
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise InputError(
                f"Parameter '{self.name}' of generator '{generator}' must be a number; got {value!r}."
            ) from None
        if self.kind == "int":
            if not float(number).is_integer():
                raise InputError(
                    f"Parameter '{self.name}' of generator '{generator}' must be a whole number; got {value!r}."
                )
            number = int(number)
        if (self.low is not None and number < self.low) or (self.high is not None and number > self.high):
            raise InputError(
                f"Parameter '{self.name}' of generator '{generator}' must lie between {self.low:g} and "
                f"{self.high:g}; got {value!r}."
            )
        return number


@dataclass(frozen=True)
class GeneratorSpec:
    """A registry entry: how to build a generator and what it exposes.

    Attributes
    ----------
    name, label, summary : str
        Registry key, display name, one-sentence description.
    factory : callable
        The :class:`TabularGenerator` subclass.
    params : tuple of ParamSpec
        Settable parameters with defaults.
    has_epochs : bool
        True when fitting runs in epochs (progress is then reported per epoch).
    reference : bool
        True for the two reference points (``bootstrap``, ``population``).
    """

    name: str
    label: str
    summary: str
    factory: Callable[..., TabularGenerator] = field(repr=False)
    params: tuple[ParamSpec, ...] = ()
    has_epochs: bool = False
    reference: bool = False

    def defaults(self) -> dict[str, Any]:
        """The default value of every parameter."""
        return {p.name: p.default for p in self.params}


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
            Real training rows (the members of METHODS.md §1).
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
        metadata = Metadata.load_from_dict({"tables": {_TABLE: {"columns": columns}}})
        synth = self._synthesizer(metadata)
        fit_progress = sub_progress(progress, 0.05, 0.99)
        context = _epoch_progress(fit_progress, self.name) if self._has_epochs else contextlib.nullcontext()
        with context, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            synth.fit({_TABLE: frame})
        self._synth = synth

    def _sample(self, n: int, *, seed: int) -> pd.DataFrame:
        synth = copy.deepcopy(self._synth)  # sampling advances the model's RNG: keep the fitted one pristine
        with contextlib.suppress(AttributeError):
            synth._set_random_state(seed)  # SDV otherwise samples from a fixed seed
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = synth.sample(n)
        return out[_TABLE] if isinstance(out, dict) else out


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
def _epochs(default: int) -> ParamSpec:
    return ParamSpec("epochs", "Epochs", "int", default, 1, 2000, "Passes over the training table.")


def _batch(default: int) -> ParamSpec:
    return ParamSpec(
        "batch_size", "Batch size", "int", default, 10, 10000,
        "Rows per gradient step (an even multiple of 10 for the GANs).",
    )


GENERATORS: dict[str, GeneratorSpec] = {
    "gaussian_copula": GeneratorSpec(
        "gaussian_copula", "Gaussian copula (SDV)",
        "Fits each column's distribution and a Gaussian copula for their dependence.",
        GaussianCopulaGenerator,
        (ParamSpec(
            "default_distribution", "Marginal distribution", "choice", "beta",
            choices=("norm", "beta", "truncnorm", "gamma", "uniform", "gaussian_kde"),
            help="Family fitted to each numeric column.",
        ),),
    ),
    "ctgan": GeneratorSpec(
        "ctgan", "CTGAN (SDV)", "Conditional GAN for mixed tabular data.", CTGANGenerator,
        (_epochs(30), _batch(500)), has_epochs=True,
    ),
    "tvae": GeneratorSpec(
        "tvae", "TVAE (SDV)", "Variational autoencoder for mixed tabular data.", TVAEGenerator,
        (_epochs(60), _batch(500)), has_epochs=True,
    ),
    "copulagan": GeneratorSpec(
        "copulagan", "CopulaGAN (SDV)", "CTGAN trained on copula-transformed marginals.", CopulaGANGenerator,
        (_epochs(30), _batch(500)), has_epochs=True,
    ),
    "bayesian_network": GeneratorSpec(
        "bayesian_network", "Bayesian network (pgmpy)",
        "Hill-climbing structure (BIC), smoothed CPDs, forward sampling; numeric columns binned.",
        BayesianNetworkGenerator,
        (
            ParamSpec("degree", "Max parents per node", "int", 2, 0, 6, "Bayesian-network degree (in-degree bound)."),
            ParamSpec("bins", "Bins per numeric column", "int", 10, 2, 100, "Quantile bins for numeric columns."),
            ParamSpec(
                "pseudo_count", "Prior strength", "float", 1.0, 0.0, 1000.0,
                "BDeu equivalent sample size: larger smooths the probabilities more.",
            ),
        ),
    ),
    "bootstrap": GeneratorSpec(
        "bootstrap", "Bootstrap (leaky reference)",
        "Resamples training rows: every synthetic row is a member (maximal leakage).",
        BootstrapGenerator,
        (ParamSpec(
            "noise", "Noise", "float", 0.0, 0.0, 1.0,
            "Numeric noise in column standard deviations / probability of swapping a category.",
        ),),
        reference=True,
    ),
    "population": GeneratorSpec(
        "population", "Population (chance reference)",
        "Returns real rows nobody trained on: what a perfect generator would leak.",
        PopulationGenerator, (), reference=True,
    ),
}
"""Registry of generators by name; adding one is one entry."""


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
    return GENERATORS[name].factory(**params)


# --------------------------------------------------------------------------------------
# Splitting the real table
# --------------------------------------------------------------------------------------
DEFAULT_FRACTIONS: dict[str, float] = {"train": 0.4, "holdout": 0.2, "auxiliary": 0.2, "reserve": 0.2}
"""Default split: train (members), holdout (non-members), auxiliary (attacker's data), reserve (population reference)."""


@dataclass(frozen=True)
class RealSplit:
    """A real table cut into disjoint parts (METHODS.md §1 inputs R, U, A, plus a reserve).

    Attributes
    ----------
    train, holdout, auxiliary, reserve : pandas.DataFrame
        Disjoint row sets; ``auxiliary`` / ``reserve`` may be empty.
    rows : dict of str to numpy.ndarray
        0-based row numbers of each part in the original table.
    fractions : dict of str to float
        The fractions asked for.
    seed : int
    """

    train: pd.DataFrame = field(repr=False)
    holdout: pd.DataFrame = field(repr=False)
    auxiliary: pd.DataFrame = field(repr=False)
    reserve: pd.DataFrame = field(repr=False)
    rows: dict[str, np.ndarray] = field(repr=False)
    fractions: dict[str, float]
    seed: int

    def sizes(self) -> dict[str, int]:
        """Rows in each part."""
        return {k: len(v) for k, v in self.rows.items()}


def split_real_table(
    df: pd.DataFrame, *, fractions: Mapping[str, float] | None = None, seed: int = 0
) -> RealSplit:
    """Shuffle a real table and cut it into train / holdout / auxiliary / reserve.

    Parameters
    ----------
    df : pandas.DataFrame
        The steward's real table.
    fractions : mapping, optional
        Keys among ``train``, ``holdout``, ``auxiliary``, ``reserve`` (default
        :data:`DEFAULT_FRACTIONS`); missing keys count 0, except that when
        ``reserve`` is missing it takes whatever the others leave. The sum must not
        exceed 1. Generators are fitted on ``train``; the audit uses ``holdout`` as
        non-members and ``auxiliary`` as the attacker's population data; the
        ``population`` reference samples ``reserve``.
    seed : int
        Seeds the shuffle.

    Returns
    -------
    RealSplit

    Raises
    ------
    InputError
        Unknown part names, negative fractions or a sum above 1, or a train /
        holdout part with fewer than 20 rows.
    """
    if not isinstance(df, pd.DataFrame) or len(df) == 0:
        raise InputError("The real table is empty; upload a table with rows.")
    parts = ("train", "holdout", "auxiliary", "reserve")
    given = dict(DEFAULT_FRACTIONS if fractions is None else fractions)
    unknown = sorted(set(given) - set(parts))
    if unknown:
        raise InputError(f"Unknown split part(s) {', '.join(unknown)}; use {', '.join(parts)}.")
    values = {k: float(given.get(k, 0.0)) for k in parts[:3]}
    if "reserve" in given:
        values["reserve"] = float(given["reserve"])
    else:
        values["reserve"] = max(0.0, 1.0 - sum(values.values()))
    if any(v < 0 or not math.isfinite(v) for v in values.values()):
        raise InputError("Split fractions must be between 0 and 1.")
    total = sum(values.values())
    if total > 1.0 + 1e-9:
        raise InputError(
            f"The split fractions add up to {total:.2f}, more than 1; lower the train, holdout or auxiliary share."
        )
    n = len(df)
    order = np.random.default_rng(seed).permutation(n)
    counts = {k: math.floor(values[k] * n + 1e-9) for k in parts}
    for k in ("train", "holdout"):
        if counts[k] < MIN_TRAIN_ROWS:
            raise InputError(
                f"The {k} part would hold {counts[k]} rows of {n}; at least {MIN_TRAIN_ROWS} are needed, so "
                f"raise its fraction or use a larger table."
            )
    rows: dict[str, np.ndarray] = {}
    start = 0
    for k in parts:
        rows[k] = np.sort(order[start:start + counts[k]])
        start += counts[k]
    frames = {k: df.iloc[rows[k]].reset_index(drop=True) for k in parts}
    return RealSplit(**frames, rows=rows, fractions=values, seed=seed)


# --------------------------------------------------------------------------------------
# Utility
# --------------------------------------------------------------------------------------
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
    Privacy (METHODS.md §1) is read against utility: a generator that leaks
    little because it learned nothing is no better than the ``population``
    reference's chance level bought for free.
    """
    from sdmetrics.reports import QualityReport

    aligned = align_tables({"real": real, "synthetic": synthetic}, types=types)
    cols = list(aligned.types.columns)
    columns = {c: {"sdtype": "numerical" if c in aligned.types.numeric else "categorical"} for c in cols}
    metadata = {"tables": {_TABLE: {"columns": columns}}}
    report = QualityReport()
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        report.generate(
            {_TABLE: aligned["real"][cols]}, {_TABLE: aligned["synthetic"][cols]}, metadata, verbose=False
        )
    props = report.get_properties().set_index("Property")["Score"]

    def _get(name: str) -> float:
        value = props.get(name, np.nan)
        return float(value) if value is not None else float("nan")

    return UtilityScore(
        overall=float(report.get_score()), column_shapes=_get("Column Shapes"),
        column_pair_trends=_get("Column Pair Trends"),
    )


# --------------------------------------------------------------------------------------
# The comparison
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class GeneratorRun:
    """One generator's row in the comparison: its audit, utility and sample, or its error.

    Attributes
    ----------
    name, label : str
    params : dict
        Parameters used (defaults filled in).
    audit : SyntheticAudit or None
        The METHODS.md §1 audit of its synthetic table; None when it failed.
    utility : UtilityScore or None
    synthetic : pandas.DataFrame or None
        The synthetic table (for download).
    fit_seconds, sample_seconds : float
        Wall time (0 when served from the cache).
    error : str or None
        The generator's own error message when it failed; the other rows still complete.
    """

    name: str
    label: str
    params: dict[str, Any]
    audit: SyntheticAudit | None = None
    utility: UtilityScore | None = None
    synthetic: pd.DataFrame | None = field(default=None, repr=False)
    fit_seconds: float = 0.0
    sample_seconds: float = 0.0
    error: str | None = None

    @property
    def ok(self) -> bool:
        """True when the generator fitted, sampled and was audited."""
        return self.error is None and self.audit is not None


@dataclass(frozen=True)
class GeneratorComparison:
    """Several generators fitted on one real training table, each audited (METHODS.md §1).

    Attributes
    ----------
    runs : tuple of GeneratorRun
        One per generator, in the order asked.
    split : RealSplit
        The train / holdout / auxiliary / reserve parts used.
    types : ColumnTypes
    rows : int
        Synthetic rows drawn per generator.
    seed : int
    """

    runs: tuple[GeneratorRun, ...]
    split: RealSplit = field(repr=False)
    types: ColumnTypes
    rows: int
    seed: int

    def __getitem__(self, name: str) -> GeneratorRun:
        for run in self.runs:
            if run.name == name:
                return run
        raise KeyError(name)

    def table(self) -> pd.DataFrame:
        """The paper's table: one row per generator (AUC, TPR at low FPR with CIs, F1, utility)."""
        records = []
        for run in self.runs:
            rec: dict[str, Any] = {"generator": run.name, "label": run.label}
            if run.ok:
                true = run.audit.attacks["true_distribution"]
                real = run.audit.attacks["realistic"]
                rec["auc_true"] = true.auc
                rec["auc_realistic"] = real.auc
                for key, tag in (("0.001", "0.1%"), ("0.01", "1%")):
                    t = true.tpr_at_fpr[key]
                    rec[f"tpr@{tag}"] = t.tpr
                    rec[f"tpr@{tag}_ci"] = f"[{t.ci_low:.3f}, {t.ci_high:.3f}]"
                    rec[f"tpr@{tag}_supported"] = bool(t.supported)
                rec["f1_true"] = true.f1
                rec["f1_realistic"] = real.f1
                rec["f1_method1"] = _method1_f1(run.audit)
                rec["utility"] = run.utility.overall if run.utility is not None else np.nan
            rec["fit_s"] = run.fit_seconds
            rec["error"] = run.error or ""
            records.append(rec)
        return pd.DataFrame.from_records(records)

    def to_json(self) -> dict[str, Any]:
        """Plain-JSON summary: settings and, per generator, its audit JSON or error."""
        return {
            "split": {"fractions": self.split.fractions, "sizes": self.split.sizes(), "seed": self.split.seed},
            "rows": self.rows,
            "seed": self.seed,
            "generators": {
                run.name: {
                    "label": run.label,
                    "params": run.params,
                    "error": run.error,
                    "fit_seconds": run.fit_seconds,
                    "audit": run.audit.to_json() if run.ok else None,
                    "utility": run.utility.to_json() if run.utility is not None else None,
                }
                for run in self.runs
            },
        }


def _method1_f1(audit: SyntheticAudit) -> float:
    """F1 of the hard-label distance rule (METHODS.md §1 step 5, tau = non-members' median)."""
    return float(audit.distance_threshold.metrics.f1)


def rescore_comparison(
    comparison: GeneratorComparison, *, bandwidth: str | float | None = None, prior: float | None = None
) -> GeneratorComparison:
    """Re-score every audit for a new bandwidth or prior without refitting or recomputing distances.

    Parameters
    ----------
    comparison : GeneratorComparison
    bandwidth, prior : optional
        New KDE bandwidth rule / membership prior (METHODS.md §1 steps 2-3); None keeps each audit's.

    Returns
    -------
    GeneratorComparison
    """
    from audit_core.synthetic import rescore

    runs = tuple(
        replace(run, audit=rescore(run.audit, bandwidth=bandwidth, prior=prior)) if run.ok else run
        for run in comparison.runs
    )
    return replace(comparison, runs=runs)


def frame_fingerprint(df: pd.DataFrame) -> str:
    """A short hash of a table's content (cache keys)."""
    digest = hashlib.sha256()
    digest.update(repr(list(df.columns)).encode())
    digest.update(pd.util.hash_pandas_object(df, index=False).to_numpy().tobytes())
    return digest.hexdigest()[:16]


def _error_text(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    first = text[0] if text else ""
    return first if isinstance(exc, InputError) else f"{type(exc).__name__}: {first}".rstrip(": ")


def fit_and_sample(
    name: str,
    split: RealSplit,
    *,
    types: ColumnTypes,
    params: Mapping[str, Any] | None = None,
    rows: int,
    seed: int = 0,
    progress: ProgressFn | None = None,
    cache: MutableMapping[Any, Any] | None = None,
) -> tuple[pd.DataFrame, float, float]:
    """Fit one generator on ``split.train`` and draw ``rows`` rows, reusing ``cache``.

    The cache holds fitted generators under (name, params, train, types, seed) and
    samples under that key plus the row count. An entry is written only after
    its step completed, so a cancelled or failed fit leaves nothing half-written.

    Returns
    -------
    (synthetic, fit_seconds, sample_seconds)
    """
    gen = make_generator(name, **dict(params or {}))
    report = as_progress(progress)
    fit_key = (
        "fit", name, tuple(sorted(gen.params.items())), frame_fingerprint(split.train),
        frame_fingerprint(split.reserve) if name == "population" else "", types, seed,
    )
    sample_key = ("sample", *fit_key[1:], int(rows))
    if cache is not None and sample_key in cache:
        report(1.0, f"{name}: from cache")
        return cache[sample_key], 0.0, 0.0
    fit_seconds = 0.0
    if cache is not None and fit_key in cache:
        gen = cache[fit_key]
    else:
        start = time.perf_counter()
        gen.fit(split.train, types=types, seed=seed, progress=sub_progress(report, 0.0, 0.95), reserve=split.reserve)
        fit_seconds = time.perf_counter() - start
        if cache is not None:
            cache[fit_key] = gen
    start = time.perf_counter()
    synthetic = gen.sample(int(rows), seed=seed)
    sample_seconds = time.perf_counter() - start
    if cache is not None:
        cache[sample_key] = synthetic
    report(1.0, f"{name}: {len(synthetic):,} rows sampled")
    return synthetic, fit_seconds, sample_seconds


def compare_generators(
    real_df: pd.DataFrame,
    *,
    names: Sequence[str],
    params: Mapping[str, Mapping[str, Any]] | None = None,
    types: ColumnTypes | None = None,
    fractions: Mapping[str, float] | None = None,
    rows: int | None = None,
    seed: int = 0,
    prior: float = 0.5,
    bandwidth: str | float = "silverman",
    progress: ProgressFn | None = None,
    cache: MutableMapping[Any, Any] | None = None,
    per_generator_progress: Callable[[str], ProgressFn | None] | None = None,
) -> GeneratorComparison:
    """Fit several generators on one real table and audit each (METHODS.md §1).

    Parameters
    ----------
    real_df : pandas.DataFrame
        The steward's real table; it is split by :func:`split_real_table`.
    names : sequence of str
        Generator names (keys of :data:`GENERATORS`), at least one.
    params : mapping, optional
        ``{name: {param: value}}``; missing ones take defaults.
    types : ColumnTypes, optional
        Column types; inferred from the real table when None.
    fractions : mapping, optional
        Split fractions (see :func:`split_real_table`).
    rows : int, optional
        Synthetic rows per generator (default: as many as the train part).
    seed : int
        Seeds the split, every fit, every sample and the audits.
    prior, bandwidth
        Passed to :func:`audit_core.synthetic.audit_synthetic`.
    progress : ProgressFn, optional
        Overall progress.
    cache : mutable mapping, optional
        Where fitted generators and samples are kept between calls (a dict the
        page keeps in session state); see :func:`fit_and_sample`.
    per_generator_progress : callable, optional
        ``name -> ProgressFn`` for a progress bar per generator (epochs where
        the generator has them).

    Returns
    -------
    GeneratorComparison
        One run per generator. A generator that fails (cannot fit, diverges,
        bad parameter) gets its own error message in its row; the others still complete.

    Raises
    ------
    InputError
        Bad real table or split (these concern every generator alike).
    """
    from audit_core.synthetic import audit_synthetic

    names = list(dict.fromkeys(names))
    if not names:
        raise InputError("Choose at least one generator to compare.")
    unknown = [n for n in names if n not in GENERATORS]
    if unknown:
        raise InputError(f"Unknown generator(s) {', '.join(unknown)}; choose among {', '.join(GENERATORS)}.")
    if types is None:
        types = infer_column_types(real_df)
    check_generator_input(real_df, types=types)
    split = split_real_table(real_df, fractions=fractions, seed=seed)
    n_rows = len(split.train) if rows is None else int(rows)
    if n_rows < 1:
        raise InputError(f"The number of synthetic rows must be at least 1; got {rows}.")
    overall = as_progress(progress)
    auxiliary = split.auxiliary if len(split.auxiliary) else None
    runs = []
    share = 1.0 / len(names)
    for i, name in enumerate(names):
        spec = GENERATORS[name]
        step = sub_progress(overall, i * share, (i + 1) * share)
        own = per_generator_progress(name) if per_generator_progress is not None else None

        def both(fraction: float, message: str, _step: ProgressFn = step, _own: ProgressFn | None = own) -> None:
            _step(fraction, message)
            if _own is not None:
                _own(fraction, message)

        gen_params = dict((params or {}).get(name, {}))
        try:
            shown = make_generator(name, **gen_params).params
            synthetic, fit_s, sample_s = fit_and_sample(
                name, split, types=types, params=gen_params, rows=n_rows, seed=seed,
                progress=sub_progress(both, 0.0, 0.6), cache=cache,
            )
            audit_key = ("audit", name, tuple(sorted(shown.items())), frame_fingerprint(synthetic),
                         frame_fingerprint(split.train), frame_fingerprint(split.holdout), types, seed, prior,
                         bandwidth)
            if cache is not None and audit_key in cache:
                audit, utility = cache[audit_key]
            else:
                audit = audit_synthetic(
                    split.train, split.holdout, synthetic, auxiliary, types=types, prior=prior,
                    bandwidth=bandwidth, seed=seed, progress=sub_progress(both, 0.6, 0.95),
                )
                both(0.95, f"{name}: utility")
                utility = utility_score(split.train, synthetic, types=types)
                if cache is not None:
                    cache[audit_key] = (audit, utility)
            both(1.0, f"{name}: done")
            runs.append(GeneratorRun(
                name=name, label=spec.label, params=shown, audit=audit, utility=utility, synthetic=synthetic,
                fit_seconds=fit_s, sample_seconds=sample_s,
            ))
        except Exception as exc:  # one generator failing must not stop the others
            both(1.0, f"{name}: failed")
            runs.append(GeneratorRun(name=name, label=spec.label, params=gen_params, error=_error_text(exc)))
    overall(1.0, "comparison done")
    return GeneratorComparison(runs=tuple(runs), split=split, types=types, rows=n_rows, seed=seed)
