"""Real records in a synthetic table: verbatim copies, the copy tests and the overlaps between the tables.

A synthetic row equal to a real person's record publishes that record, whatever a
membership test says (issue 18). This module counts them and tests them:

- :func:`table_overlaps`: rows of each table repeated verbatim in each other one;
- :func:`copy_test` (:class:`CopyTest`): are training rows copied more often than holdout rows
  (one-sided Fisher exact test)?
- :func:`verbatim_records` (:class:`VerbatimRecords`): synthetic rows equal to a training, holdout
  or auxiliary record, the training records copied that no non-member shares (rare copies) and
  the synthetic rows equal to real records the generator should never have seen;
- :func:`near_copy_test` (:class:`NearCopyTest`): members against non-members within the auxiliary
  data's 1 % distance quantile of a synthetic record. The record-linkage scan of near-copies
  beyond that tolerance is :mod:`audit_core.synthetic.linkage`.

Two rows are the same when every compared column is equal (numbers as float64, -0.0 as
0.0, missing equal to missing, categories compared after folding case and whitespace, so a
table that writes 'PRIVATE' for 'Private' still shows its copies): one normalisation
(:func:`row_keys`) for every count here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from audit_core.common.column_types import ColumnTypes
from audit_core.synthetic.density import ZERO_TOL

__all__ = [
    "COPY_TEST_ALPHA",
    "CopyTest",
    "NearCopyTest",
    "Overlap",
    "VerbatimRecords",
    "copied_rows",
    "copy_test",
    "fisher_greater",
    "near_copy_test",
    "row_keys",
    "table_overlaps",
    "verbatim_records",
]

COPY_TEST_ALPHA = 0.05
"""Level of the one-sided Fisher exact test on exact copies (:class:`CopyTest`)."""

_NEAR_COPY_QUANTILE = 0.01
"""Near-copy tolerance: this quantile of the auxiliary records' distances (:func:`near_copy_test`)."""

_NEAR_COPY_ALPHA = 0.01
"""Level of the near-copy test (below the exact-copy test's 5 %, so that the two together stay under 6 %)."""


@dataclass(frozen=True)
class Overlap:
    """How many rows of one table appear verbatim (every compared column equal) in another.

    Attributes
    ----------
    table, other : str
        Roles, e.g. ``"holdout"`` in ``"train"``.
    rows : int
        Rows of ``table`` that have an identical row in ``other``.
    of : int
        Rows of ``table``.
    """

    table: str
    other: str
    rows: int
    of: int

    @property
    def share(self) -> float:
        """``rows / of``."""
        return self.rows / self.of if self.of else 0.0

    def to_json(self) -> dict[str, Any]:
        """``rows``, ``of``, ``share``."""
        return {"rows": self.rows, "of": self.of, "share": self.share}


@dataclass(frozen=True)
class CopyTest:
    """Do training rows appear verbatim in the synthetic table more often than holdout rows?

    Counts over the *whole* training and holdout tables (not only the attack
    set): ``train_copies`` of the ``n_train`` training rows and
    ``holdout_copies`` of the ``n_holdout`` holdout rows have an identical row
    in the synthetic table. Holdout rows show how often a record occurs in the
    synthetic table by chance (tables with few columns have natural
    duplicates). ``p_value`` is the one-sided Fisher exact test of the 2 x 2
    table (copied or not, training or holdout) against "training rows are
    copied no more often than holdout rows": exact under the null that the
    split into training and holdout was random and the generator did not copy
    (given the tables, the number of copied training rows is then
    hypergeometric, whatever the natural duplicates). ``excess`` is
    ``p_value < alpha``.
    """

    train_copies: int
    n_train: int
    holdout_copies: int
    n_holdout: int
    p_value: float
    alpha: float = COPY_TEST_ALPHA
    unfolded_train_copies: int | None = None

    @property
    def folding_matters(self) -> bool:
        """Some training copies are found only once case and whitespace are folded (the tables are coded differently)."""
        return self.unfolded_train_copies is not None and self.unfolded_train_copies < self.train_copies

    @property
    def train_rate(self) -> float:
        """Share of training rows copied verbatim."""
        return self.train_copies / self.n_train if self.n_train else 0.0

    @property
    def holdout_rate(self) -> float:
        """Share of holdout rows that occur verbatim (the chance rate)."""
        return self.holdout_copies / self.n_holdout if self.n_holdout else 0.0

    @property
    def excess(self) -> bool:
        """True when the excess of training copies is unlikely by chance (``p_value < alpha``)."""
        return self.p_value < self.alpha

    def to_json(self) -> dict[str, Any]:
        """Counts, rates, the test and its p-value."""
        return {
            "train_copies": self.train_copies,
            "n_train": self.n_train,
            "train_rate": self.train_rate,
            "holdout_copies": self.holdout_copies,
            "n_holdout": self.n_holdout,
            "holdout_rate": self.holdout_rate,
            "test": "one-sided Fisher exact test: training rows copied more often than holdout rows",
            "p_value": self.p_value,
            "alpha": self.alpha,
            "excess": self.excess,
            "compared": "every compared column equal, missing equal to missing, categories compared after folding case "
            "and whitespace",
            "train_copies_unfolded": self.unfolded_train_copies,
        }


@dataclass(frozen=True)
class NearCopyTest(CopyTest):
    """Do members sit within ``tolerance`` of a synthetic record more often than non-members?

    Counts over the attack set: ``train_copies`` of the ``n_train`` members and
    ``holdout_copies`` of the ``n_holdout`` non-members have a synthetic record
    at Gower distance ``<= tolerance`` (exact copies included), with the same
    one-sided Fisher exact test as :class:`CopyTest`. ``tolerance`` is read off
    the auxiliary records only (:data:`_NEAR_COPY_QUANTILE`), never off the attack
    set, so under "the generator did not copy" members and non-members are
    exchangeable given it and the test is exact (issue 10.3: training rows copied
    with one value nudged, age +-1 or hours +-2, sit at d ~ 0.001, below almost
    every non-member, and no exact-copy count sees them).
    """

    tolerance: float = 0.0
    quantile: float = _NEAR_COPY_QUANTILE

    def to_json(self) -> dict[str, Any]:
        """Counts, rates, the tolerance, the test and its p-value."""
        out = super().to_json()
        del out["compared"], out["train_copies_unfolded"]  # distances, not verbatim rows
        out["test"] = (
            "one-sided Fisher exact test: members within the tolerance of a synthetic record more often than non-members"
        )
        return {**out, "tolerance": self.tolerance, "tolerance_rule": f"{self.quantile:g} quantile of the auxiliary distances"}


def near_copy_test(
    distance: np.ndarray,
    is_member: np.ndarray,
    aux_distances: np.ndarray,
    *,
    quantile: float = _NEAR_COPY_QUANTILE,
    alpha: float = _NEAR_COPY_ALPHA,
) -> NearCopyTest:
    """The near-copy test on the attack set (docs/methods.md §1, issue 10.3); see :class:`NearCopyTest`."""
    d = np.asarray(distance, dtype=np.float64)
    member = np.asarray(is_member, dtype=bool)
    tol = float(np.quantile(np.asarray(aux_distances, dtype=np.float64), quantile))
    near = d <= tol + ZERO_TOL
    a, b = int((near & member).sum()), int((near & ~member).sum())
    n_a, n_b = int(member.sum()), int((~member).sum())
    p = fisher_greater(a, n_a, b, n_b)
    return NearCopyTest(
        train_copies=a, n_train=n_a, holdout_copies=b, n_holdout=n_b, p_value=p, alpha=alpha, tolerance=tol, quantile=quantile
    )


def fisher_greater(a: int, n_a: int, b: int, n_b: int) -> float:
    """One-sided Fisher exact p-value that ``a / n_a`` exceeds ``b / n_b``."""
    if a == 0:
        return 1.0
    return float(stats.fisher_exact([[a, n_a - a], [b, n_b - b]], alternative="greater").pvalue)


def _fold(series: pd.Series) -> pd.Series:
    """Category labels with case and whitespace folded ('  Self-Emp ' and 'self-emp' are one label), missing kept."""
    codes, uniques = pd.factorize(series.astype(object), use_na_sentinel=True)
    folded = np.array([" ".join(str(u).split()).casefold() for u in uniques] + [None], dtype=object)
    return pd.Series(folded[codes], index=series.index, dtype=object)


def row_keys(frame: pd.DataFrame, types: ColumnTypes, *, fold: bool = True) -> np.ndarray:
    """One 64-bit hash per row over the compared columns (numbers as float64, -0.0 as 0.0; categories case- and
    whitespace-folded unless ``fold`` is False)."""
    parts = {f"n{i}": pd.to_numeric(frame[c], errors="coerce").astype("float64") + 0.0 for i, c in enumerate(types.numeric)}
    parts |= {f"c{i}": _fold(frame[c]) if fold else frame[c].astype(object) for i, c in enumerate(types.categorical)}
    return pd.util.hash_pandas_object(pd.DataFrame(parts), index=False).to_numpy()


def table_overlaps(
    frames: Mapping[str, pd.DataFrame], types: ColumnTypes, *, keys: Mapping[str, np.ndarray] | None = None
) -> dict[str, Overlap]:
    """Rows of each table repeated verbatim in each other one (docs/methods.md §1, issue 10).

    Parameters
    ----------
    frames : mapping of str to pandas.DataFrame
        Aligned tables by role (``train``, ``holdout``, ``synthetic``, optionally
        ``auxiliary``).
    types : ColumnTypes
        The compared columns; two rows are the same when all of them are equal
        (missing equals missing).
    keys : mapping of str to numpy.ndarray, optional
        Each table's :func:`row_keys`, when already made.

    Returns
    -------
    dict of str to Overlap
        Keyed ``"<table>_in_<other>"``: ``train_in_synthetic``,
        ``holdout_in_synthetic``, ``holdout_in_train``, and with an auxiliary
        table ``auxiliary_in_synthetic``, ``auxiliary_in_train``,
        ``auxiliary_in_holdout``; plus ``train_in_train``: training rows with a
        duplicate elsewhere in the training table (the natural duplicate rate).
    """
    keys = keys if keys is not None else {name: row_keys(df, types) for name, df in frames.items()}
    pairs = [("train", "synthetic"), ("holdout", "synthetic"), ("holdout", "train")]
    if "auxiliary" in keys:
        pairs += [("auxiliary", "synthetic"), ("auxiliary", "train"), ("auxiliary", "holdout")]
    out = {
        f"{a}_in_{b}": Overlap(a, b, int(np.isin(keys[a], keys[b]).sum()), int(keys[a].size)) for a, b in pairs
    }
    train = keys["train"]
    out["train_in_train"] = Overlap("train", "train", int(pd.Series(train).duplicated(keep=False).sum()), int(train.size))
    return out


def copy_test(
    overlaps: Mapping[str, Overlap], *, alpha: float = COPY_TEST_ALPHA, unfolded_train_copies: int | None = None
) -> CopyTest:
    """The exact-copy test from the overlaps of the training and holdout tables with the synthetic one.

    ``unfolded_train_copies``: the training rows copied when categories are compared as written
    (without folding case and whitespace), to say when the folding found copies.
    """
    tr, ho = overlaps["train_in_synthetic"], overlaps["holdout_in_synthetic"]
    p = fisher_greater(tr.rows, tr.of, ho.rows, ho.of)
    return CopyTest(train_copies=tr.rows, n_train=tr.of, holdout_copies=ho.rows, n_holdout=ho.of, p_value=p, alpha=alpha,
                    unfolded_train_copies=unfolded_train_copies)  # fmt: skip


def copied_rows(frame: pd.DataFrame, synthetic: pd.DataFrame, types: ColumnTypes, *, fold: bool = True) -> np.ndarray:
    """Per row of ``frame``: an identical row is in ``synthetic`` (bool; the same normalisation as every count here)."""
    return np.isin(row_keys(frame, types, fold=fold), row_keys(synthetic, types, fold=fold))


_NATURAL_ALPHA = 0.05
"""Level at which real records in the synthetic table are more than the population's own duplicates explain."""

_NOT_SYNTHETIC_SHARE = 0.01
"""Synthetic rows equal to non-training real records at or above this share: "this is not synthetic data"."""

_NOT_SYNTHETIC_ALPHA = 0.001  # the "high" level asks for strong evidence beyond the natural duplicate rate


@dataclass(frozen=True)
class VerbatimRecords:
    """Synthetic rows that equal a real record, counted by the real table they equal.

    Attributes
    ----------
    n_synthetic, n_train : int
        Rows of the synthetic and the training table.
    in_train, in_holdout, in_auxiliary : int
        Synthetic rows equal to some training / holdout / auxiliary record (``in_auxiliary`` None
        without an auxiliary table). A synthetic row can equal records of several tables.
    real_not_train : int
        Synthetic rows equal to a holdout or auxiliary record and to no training record: real
        records the generator should never have seen.
    train_copied : int
        Training rows with a verbatim copy in the synthetic table (the copy test's count).
    rare_train_copied : int
        Of those, the training rows whose values no holdout or auxiliary record shares: a copy
        that the population's own duplicates cannot explain.
    natural_matches : int
        Training rows equal to a holdout or auxiliary record: how often two real records of
        this population coincide (natural duplicates), the reference for ``real_not_train``.
    natural_p_value : float
        One-sided Fisher exact test that synthetic rows equal non-training real records more
        often than training rows equal them (1 when none does).
    """

    n_synthetic: int
    n_train: int
    in_train: int
    in_holdout: int
    in_auxiliary: int | None
    real_not_train: int
    train_copied: int
    rare_train_copied: int
    natural_matches: int
    natural_p_value: float

    @property
    def real_share(self) -> float:
        """Share of the synthetic rows that equal non-training real records."""
        return self.real_not_train / self.n_synthetic if self.n_synthetic else 0.0

    @property
    def natural_rate(self) -> float:
        """Share of training rows that equal a holdout or auxiliary record."""
        return self.natural_matches / self.n_train if self.n_train else 0.0

    @property
    def beyond_natural(self) -> bool:
        """Real records occur in the synthetic table more often than two real records coincide."""
        return self.real_not_train > 0 and (self.natural_matches == 0 or self.natural_p_value < _NATURAL_ALPHA)

    @property
    def not_synthetic(self) -> bool:
        """At least 1 % of the synthetic rows are real non-training records, well beyond the natural rate."""
        return self.real_share >= _NOT_SYNTHETIC_SHARE and (
            self.natural_matches == 0 or self.natural_p_value < _NOT_SYNTHETIC_ALPHA
        )

    def to_json(self) -> dict[str, Any]:
        """Every count, the shares and the natural-duplicate test."""
        return {
            "n_synthetic": self.n_synthetic,
            "synthetic_rows_equal_to_train": self.in_train,
            "synthetic_rows_equal_to_holdout": self.in_holdout,
            "synthetic_rows_equal_to_auxiliary": self.in_auxiliary,
            "synthetic_rows_equal_to_non_training_real": self.real_not_train,
            "non_training_real_share": self.real_share,
            "train_rows_copied": self.train_copied,
            "rare_train_rows_copied": self.rare_train_copied,
            "natural_matches": self.natural_matches,
            "natural_rate": self.natural_rate,
            "natural_test": "one-sided Fisher exact test: synthetic rows equal non-training real records more often "
            "than training rows do",
            "natural_p_value": self.natural_p_value,
            "beyond_natural": self.beyond_natural,
            "not_synthetic": self.not_synthetic,
        }


def verbatim_records(
    frames: Mapping[str, pd.DataFrame], types: ColumnTypes, *, keys: Mapping[str, np.ndarray] | None = None
) -> VerbatimRecords:
    """Count the synthetic rows equal to real records (see :class:`VerbatimRecords`).

    ``frames`` holds the aligned ``train``, ``holdout``, ``synthetic`` and optionally
    ``auxiliary`` tables; ``keys`` their :func:`row_keys` when already made.
    """
    keys = keys if keys is not None else {name: row_keys(df, types) for name, df in frames.items()}
    syn, train = keys["synthetic"], keys["train"]
    others = np.concatenate([keys["holdout"], *([keys["auxiliary"]] if "auxiliary" in keys else [])])
    in_train = np.isin(syn, train)
    in_other = np.isin(syn, others)
    copied = np.isin(train, syn)
    real_not_train = int((in_other & ~in_train).sum())
    natural = int(np.isin(train, others).sum())
    return VerbatimRecords(
        n_synthetic=int(syn.size),
        n_train=int(train.size),
        in_train=int(in_train.sum()),
        in_holdout=int(np.isin(syn, keys["holdout"]).sum()),
        in_auxiliary=int(np.isin(syn, keys["auxiliary"]).sum()) if "auxiliary" in keys else None,
        real_not_train=real_not_train,
        train_copied=int(copied.sum()),
        rare_train_copied=int((copied & ~np.isin(train, others)).sum()),
        natural_matches=natural,
        natural_p_value=fisher_greater(real_not_train, int(syn.size), natural, int(train.size)),
    )
