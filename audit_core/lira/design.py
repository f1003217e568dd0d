"""The design: a table encoded once for LiRA's models, with the checks its target column needs (docs/methods.md §2).

:func:`prepare_design` turns the table D into the feature matrix (one-hot categoricals,
standardised numerics, fitted once on the whole table) and the encoded target. The model
audit (audit_core.model) and the DP claim check (audit_core.dp) encode their tables the same way.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from audit_core.common.alignment import refuse_infinite
from audit_core.common.errors import InputError, columns_sentence

__all__ = ["Design", "check_table", "prepare_design"]

_MIN_CLASS_ROWS = 10
_MAX_CLASSES = 20
_MAX_LEVELS = 50


@dataclass(frozen=True)
class Design:
    """Model-ready features and labels derived from one table.

    Attributes
    ----------
    X : np.ndarray
        ``(n, d)`` float32 features: standardised numerics (missing -> column
        median) and one-hot categoricals (missing is its own level; at most 50
        levels per column, the rest pooled as "other").
    y : np.ndarray
        ``(n,)`` int64 class index into ``classes``.
    classes : tuple[str, ...]
        Class labels as text, in index order.
    feature_names : tuple[str, ...]
    target : str
    """

    X: np.ndarray
    y: np.ndarray
    classes: tuple[str, ...]
    feature_names: tuple[str, ...]
    target: str

    @property
    def n_classes(self) -> int:
        """The number of classes of the target."""
        return len(self.classes)


def _check_target(col: pd.Series, *, target: str) -> None:
    """Refuse a target with missing values, one class, a continuous look, too many classes or a tiny class."""
    values = col.dropna()
    if len(values) < len(col):
        raise InputError(
            f"The target column '{target}' has {len(col) - len(values)} missing values; drop those rows or choose another target."
        )
    n_unique = values.nunique()
    if n_unique < 2:
        raise InputError(
            f"The target column '{target}' has a single class; membership inference needs "
            "a classifier, so choose a target with at least two classes."
        )
    if pd.api.types.is_float_dtype(values) and n_unique > _MAX_CLASSES:
        if not np.allclose(values, np.round(values)):
            raise InputError(
                f"The target column '{target}' looks continuous ({n_unique} distinct "
                "non-integer values); choose a categorical target or bin it into classes first."
            )
    if n_unique > _MAX_CLASSES:
        raise InputError(
            f"The target column '{target}' has {n_unique} distinct values; at most "
            f"{_MAX_CLASSES} classes are supported, so choose a categorical target or bin it."
        )
    counts = values.astype(str).value_counts()
    small = counts[counts < _MIN_CLASS_ROWS]
    if len(small):
        names = ", ".join(f"'{k}' ({v} rows)" for k, v in small.items())
        raise InputError(
            f"The target column '{target}' has classes with fewer than {_MIN_CLASS_ROWS} rows: "
            f"{names}; half-splits would leave models without them, so merge or drop those classes."
        )


def _encode_features(df: pd.DataFrame, *, target: str) -> tuple[list[np.ndarray], list[str]]:
    """Every usable column but the target as blocks of the feature matrix, with their names.

    A numeric (or boolean) column is standardised (missing -> the median; left out when
    empty or constant); any other column is one-hot encoded (missing is its own level, the
    50 most frequent levels kept and the rest pooled as "(other)"; left out with one level).
    """
    blocks: list[np.ndarray] = []
    names: list[str] = []
    for col in df.columns:
        if col == target:
            continue
        s = df[col]
        if pd.api.types.is_bool_dtype(s):
            s = s.astype(float)
        if pd.api.types.is_numeric_dtype(s):
            v = s.to_numpy(dtype=np.float64)
            if np.all(np.isnan(v)):
                continue
            v = np.where(np.isnan(v), np.nanmedian(v), v)
            sd = v.std()
            if not np.isfinite(sd) or sd == 0:
                continue
            blocks.append(((v - v.mean()) / sd)[:, None])
            names.append(str(col))
        else:
            t = s.astype("string").fillna("(missing)")
            counts = t.value_counts()
            if len(counts) < 2:
                continue
            keep = set(counts.index[:_MAX_LEVELS])
            t = t.where(t.isin(keep), "(other)")
            levels = sorted(t.unique())
            codes = pd.Categorical(t, categories=levels).codes
            onehot = np.zeros((len(t), len(levels)))
            onehot[np.arange(len(t)), codes] = 1.0
            blocks.append(onehot)
            names.extend(f"{col}={lvl}" for lvl in levels)
    return blocks, names


def check_table(df: pd.DataFrame, *, target: str, min_rows: int = 50, name: str = "data") -> None:
    """The checks :func:`prepare_design` makes before it encodes anything (an audit's ``check`` runs them before its
    first step): the target column is there and a usable class column, enough rows, no infinite numbers."""
    if target not in df.columns:
        raise InputError(f"The target column '{target}' is not in the table; {columns_sentence(df.columns, target)}")
    if len(df) < min_rows:
        raise InputError(
            f"The table has {len(df)} rows; half-splits need at least {min_rows} rows "
            "so that every model trains on a meaningful half."
        )
    _check_target(df[target], target=target)
    for col in df.columns:
        s = df[col]
        if col != target and pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s):
            refuse_infinite(s.to_numpy(dtype=np.float64), table=name, column=str(col))


def prepare_design(df: pd.DataFrame, *, target: str, min_rows: int = 50) -> Design:
    """Encode a table for the batched models; checks the target column.

    Parameters
    ----------
    df : pandas.DataFrame
        The table D of docs/methods.md §2 (all records are candidates for membership).
    target : str
        Name of the class column.
    min_rows : int
        Smallest table accepted (each model trains on half of it).

    Returns
    -------
    Design

    Raises
    ------
    InputError
        Unknown target, too few rows, a single class, a class with a handful of
        rows, a continuous target, or no usable feature column.
    """
    check_table(df, target=target, min_rows=min_rows)
    y_text = df[target].astype(str)
    classes = tuple(sorted(y_text.unique()))
    y = pd.Categorical(y_text, categories=classes).codes.astype(np.int64)
    blocks, names = _encode_features(df, target=target)
    if not blocks:
        raise InputError(
            "No usable feature column is left besides the target (all are constant or empty); add informative columns."
        )
    X = np.hstack(blocks).astype(np.float32)
    return Design(X=X, y=y, classes=classes, feature_names=tuple(names), target=target)
