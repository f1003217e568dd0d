"""Which records are attacked: the members, the non-members, the auxiliary records, the folds and pseudo-labels.

docs/methods.md §1: members are drawn from the training table and non-members from the
holdout (balanced by default, :func:`draw_attack_set`); the attacker's auxiliary records are
the auxiliary table or, without one, a disjoint part of the holdout left out of the attack set.
The true-distribution attack is cross-fitted over stratified folds (:func:`stratified_folds`);
the realistic attacker pseudo-labels the auxiliary records closest to the synthetic table as
members (:func:`pseudo_labels`). A holdout that mostly repeats the training table cannot
serve as non-members and is refused (:func:`check_holdout`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from audit_core.common.alignment import AlignedTables
from audit_core.common.errors import InputError
from audit_core.synthetic.copies import Overlap, fisher_greater

__all__ = [
    "MIN_PER_CLASS",
    "AttackSet",
    "check_holdout",
    "draw_attack_set",
    "pseudo_labels",
    "stratified_folds",
]

MIN_PER_CLASS = 20
"""Fewest members (and non-members, and auxiliary records) an audit accepts."""

_HOLDOUT_OVERLAP_REFUSED = 0.5
"""A holdout with at least this share of its rows repeated verbatim in the training table is refused."""

_HOLDOUT_OVERLAP_ALPHA = 0.001  # level of the "more holdout rows in train than chance" flag


def check_holdout(overlaps: Mapping[str, Overlap]) -> str | None:
    """Refuse a holdout that is mostly the training table; a sentence when it repeats more than chance."""
    ho, dup = overlaps["holdout_in_train"], overlaps["train_in_train"]
    if ho.share >= _HOLDOUT_OVERLAP_REFUSED:
        raise InputError(
            f"{ho.rows:,} of the {ho.of:,} holdout rows also appear verbatim in the training table: the holdout must "
            "hold records the generator never saw (non-members); give a holdout disjoint from the training table."
        )
    if ho.rows and fisher_greater(ho.rows, ho.of, dup.rows, dup.of) < _HOLDOUT_OVERLAP_ALPHA:
        return (
            f"{ho.rows:,} of the {ho.of:,} holdout rows ({100 * ho.share:.1f} %) also appear verbatim in the training "
            f"table, more than the training table's own duplicate rate ({100 * dup.share:.1f} %) explains: if they are "
            "the same people they are members, and the audit understates the risk."
        )
    return None


@dataclass(frozen=True)
class AttackSet:
    """The attack set and the auxiliary records of one audit.

    Attributes
    ----------
    train_rows, holdout_rows : ndarray of int
        Rows of the aligned training and holdout tables drawn as members and non-members.
    auxiliary : pandas.DataFrame
        The attacker's auxiliary records (aligned).
    source : str
        "auxiliary" (a table was given) or "holdout" (a disjoint part of it).
    holdout_pool : ndarray of int or None
        Every holdout row that is not an auxiliary record (the non-members the whole-table
        tests read; ``holdout_rows`` is a sample of them). None: the same as ``holdout_rows``.
    """

    train_rows: np.ndarray
    holdout_rows: np.ndarray
    auxiliary: pd.DataFrame
    source: str
    holdout_pool: np.ndarray | None = None

    @property
    def non_auxiliary_holdout(self) -> np.ndarray:
        """Every holdout row that is not an auxiliary record."""
        return self.holdout_rows if self.holdout_pool is None else self.holdout_pool

    @property
    def n_members(self) -> int:
        """Members in the attack set."""
        return int(self.train_rows.size)

    @property
    def n_non_members(self) -> int:
        """Non-members in the attack set."""
        return int(self.holdout_rows.size)

    @property
    def is_member(self) -> np.ndarray:
        """Membership of each attack record: the members first, then the non-members."""
        return np.r_[np.ones(self.n_members, dtype=bool), np.zeros(self.n_non_members, dtype=bool)]


def _auxiliary_records(
    aligned: AlignedTables, aux_share: float, rng: np.random.Generator, warnings: list[str]
) -> tuple[pd.DataFrame, np.ndarray, str]:
    """The auxiliary records: the given table, or a disjoint part of the holdout.

    Returns
    -------
    auxiliary : pandas.DataFrame
    holdout_rows : ndarray of int
        Holdout rows left for the attack set (all of them when an auxiliary table was given).
    source : str
        "auxiliary" or "holdout".
    """
    ho = aligned["holdout"]
    if "auxiliary" in aligned.frames:
        return aligned["auxiliary"], np.arange(len(ho)), "auxiliary"
    perm = rng.permutation(len(ho))
    n_aux = round(aux_share * len(ho))
    n_aux = min(max(n_aux, MIN_PER_CLASS), len(ho) - MIN_PER_CLASS)
    aux = ho.iloc[np.sort(perm[:n_aux])].reset_index(drop=True)
    warnings.append(
        f"No auxiliary table was given: {n_aux} holdout records serve as the attacker's auxiliary data "
        "and are left out of the attack set."
    )
    return aux, np.sort(perm[n_aux:]), "holdout"


def draw_attack_set(
    aligned: AlignedTables,
    aux_share: float,
    balance: bool,
    max_per_class: int | None,
    rng: np.random.Generator,
    warnings: list[str],
) -> AttackSet:
    """Draw the members and non-members of the attack set (balanced by default) beside the auxiliary records.

    Appends to ``warnings`` when the holdout serves as auxiliary data and when there are too few
    non-members to measure a TPR at low FPR.
    """
    aux, ho_rows, aux_source = _auxiliary_records(aligned, aux_share, rng, warnings)
    n_m, n_n = len(aligned["train"]), ho_rows.size
    if balance:
        n_m = n_n = min(n_m, n_n)
    if max_per_class is not None:
        n_m, n_n = min(n_m, max_per_class), min(n_n, max_per_class)
    if n_m < MIN_PER_CLASS or n_n < MIN_PER_CLASS:
        raise InputError(
            f"The attack set would have {n_m} members and {n_n} non-members; at least {MIN_PER_CLASS} of each are "
            "needed, so use larger training and holdout tables."
        )
    pool = ho_rows
    tr_rows = np.sort(rng.choice(len(aligned["train"]), size=n_m, replace=False))
    ho_rows = np.sort(rng.choice(ho_rows, size=n_n, replace=False))
    if n_n < 1000:
        warnings.append(
            f"Only {n_n} non-members: a TPR at 0.1 % FPR needs at least 10,000 and one at 1 % FPR at least 1,000 to be measured."
        )
    return AttackSet(train_rows=tr_rows, holdout_rows=ho_rows, auxiliary=aux, source=aux_source, holdout_pool=np.sort(pool))


def stratified_folds(is_member: np.ndarray, n_folds: int, rng: np.random.Generator) -> np.ndarray:
    """The cross-fitting fold of each attack record: members and non-members each dealt round-robin in random order."""
    folds = np.empty(is_member.size, dtype=np.int64)
    for cls in (True, False):
        idx = np.flatnonzero(is_member == cls)
        folds[rng.permutation(idx)] = np.arange(idx.size) % n_folds
    return folds


def pseudo_labels(aux_d: np.ndarray, quantile: float, rng: np.random.Generator) -> np.ndarray:
    """The ``quantile`` share of auxiliary records closest to S, ties broken at random."""
    n = aux_d.size
    k = int(np.clip(round(quantile * n), 1, n - 1))
    order = np.lexsort((rng.random(n), aux_d))
    label = np.zeros(n, dtype=bool)
    label[order[:k]] = True
    return label
