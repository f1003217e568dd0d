"""The generators' interface (:class:`TabularGenerator`) and what it does to every training table and sample.

:func:`check_generator_input` refuses columns no generator can model (dates, free text); the
base class aligns the training table (compared columns only, numeric float64, categorical
text, NaN missing) before a subclass's ``_fit`` and gives a subclass's raw ``_sample`` the
training table's columns and dtypes back.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from audit_core.common.alignment import align_tables
from audit_core.common.column_types import ColumnTypes, infer_column_types
from audit_core.common.errors import InputError
from audit_core.common.limits import MIN_TRAIN_ROWS
from audit_core.common.runtime import ProgressFn, as_progress, seed_everything
from audit_core.synthetic.choices import GENERATOR_INFO

__all__ = ["TabularGenerator", "check_generator_input"]

_MAX_CATEGORIES = 200
"""A categorical column with more distinct values than this is refused (free text, identifiers)."""


_DATE_PATTERN = re.compile(r"^\s*(\d{4}[-/.]\d{1,2}[-/.]\d{1,2}|\d{1,2}[-/.]\d{1,2}[-/.]\d{2,4})([ T]\d{1,2}:\d{2}.*)?\s*$")


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
        :data:`_MAX_CATEGORIES` distinct values (free text or an identifier: ignore
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
        if n_distinct > _MAX_CATEGORIES:
            raise InputError(
                f"Column '{col}' has {n_distinct:,} distinct values (free text or an identifier?), more than "
                f"the {_MAX_CATEGORIES} categories a generator can model; ignore the column or group its values."
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


class TabularGenerator:
    """Base class: a generator fitted on one real table, then sampled.

    Subclasses set ``name`` and implement ``_fit(frame, *, seed, progress, reserve)`` and
    ``_sample(n, *, seed)`` on the prepared frame (numeric float64, categorical
    str, NaN for missing); the base class validates input and restores dtypes.

    Parameters
    ----------
    **params
        The generator's parameters (see its :class:`~audit_core.synthetic.choices.GeneratorInfo`); unknown names
        are refused, missing ones take their defaults.
    """

    name: ClassVar[str] = ""

    def __init__(self, **params: Any) -> None:
        spec = GENERATOR_INFO[self.name]
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

