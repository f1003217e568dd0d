"""The learned attacker (issue 29.1): what sets members apart in the synthetic table, learned from the audit's labels.

The auditor knows who is a member (training) and who is not (holdout), so instead of guessing the
leak's shape (a distance, a density ratio, a copy) it can *learn* it. Per audited record, against
the synthetic table:

- the Gower distances to its 1st, 2nd and 5th nearest synthetic rows (on a log scale);
- how many of those 5 rows lie within the auxiliary records' 1 % distance (the near-copy
  tolerance of :mod:`audit_core.synthetic.copies`; at most 5);
- the rarity-weighted agreement score of its best-matching synthetic row, that row's number of
  exactly equal columns and the per-column agreement pattern with it
  (:func:`audit_core.synthetic.agreement.best_matches`); the same score and count for its
  best-matching auxiliary record, and the differences (how much better the synthetic table
  matches it than a stranger of the population does), and the record-linkage scan's relative
  statistic when the audit has it (:mod:`audit_core.synthetic.linkage`);
- the DOMIAS density ratio (:func:`audit_core.synthetic.scoring.density_ratio_score`).

A histogram gradient-boosting classifier (scikit-learn) learns members against non-members,
**cross-fitted** on the audit's folds: each record is scored by the model fitted on the other
folds, so its score never saw its own label, and the out-of-fold scores go through the same
log-ROC, TPR intervals, epsilon bound and release decision as every other attack. Members and
non-members are exchangeable when the generator leaks nothing, and so are their out-of-fold
scores: the attack holds its level (docs/methods.md §1.11, the simulation there).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from audit_core.common.column_types import ColumnTypes
from audit_core.synthetic.agreement import BestMatches, best_matches
from audit_core.synthetic.density import LOG_AXIS_SCALE
from audit_core.synthetic.distance import NearestK, nearest_gower, nearest_k_gower
from audit_core.synthetic.encoding import GowerEncoding

__all__ = [
    "LEARNED_NEIGHBOURS",
    "LearnedAttack",
    "LearnedFeatures",
    "cross_fit_learned",
    "learned_attack",
    "learned_features",
]

LEARNED_NEIGHBOURS = (1, 2, 5)
"""The nearest synthetic rows whose distances are features."""

_TOP_SHARE = 0.1
"""On large tables (more than agreement.EXACT_PAIRS pairs) the best matches are sought only for about this share of
the records, those that match best (the rest read as missing): the part that tells near-copies apart."""

_TRAIN_PER_CLASS = 4000
"""Each fold's classifier learns from at most this many members and as many non-members (a seeded sample; every
record is still scored): the audit stays fast on large tables."""


@dataclass(frozen=True)
class LearnedFeatures:
    """The learned attacker's features: ``matrix`` ``[n, F]`` and the name of each column."""

    matrix: np.ndarray
    names: tuple[str, ...]


def learned_features(
    near: NearestK,
    tolerance: float,
    matches: BestMatches,
    *,
    density_ratio: np.ndarray | None = None,
    linkage: np.ndarray | None = None,
    population: BestMatches | None = None,
) -> LearnedFeatures:
    """The features of each audited record (module docstring).

    Parameters
    ----------
    near : NearestK
        Each record's 5 nearest synthetic rows (:func:`audit_core.synthetic.distance.nearest_k_gower`).
    tolerance : float
        The near-copy tolerance: the auxiliary records' 1 % quantile of distance to the synthetic table.
    matches : BestMatches
        Each record's best-matching synthetic row by rarity-weighted agreement.
    density_ratio, linkage : ndarray, optional
        The DOMIAS score and the linkage scan's relative statistic of each record.
    population : BestMatches, optional
        Each record's best-matching auxiliary record: how well a stranger of the population matches it (a record of a
        crowded part of the population matches someone anyway; a near-copy matches the synthetic table far better).
    """
    d = near.distance
    columns = [np.log(d[:, k - 1] + LOG_AXIS_SCALE) for k in LEARNED_NEIGHBOURS]
    names = [f"log distance to the {k}{'st' if k == 1 else 'nd' if k == 2 else 'th'} nearest synthetic row"
             for k in LEARNED_NEIGHBOURS]  # fmt: skip
    columns.append((d <= tolerance + 1e-12).sum(axis=1).astype(np.float64))
    names.append(f"synthetic rows within the near-copy tolerance ({tolerance:.3g}; at most {d.shape[1]})")
    columns += [matches.score, _sought(matches, matches.n_equal)]
    names += ["agreement score of the best-matching synthetic row", "columns exactly equal to that row"]
    columns += [_sought(matches, matches.pattern[:, j]) for j in range(matches.pattern.shape[1])]
    names += [f"agreement with that row on {c} (2 equal, 1 close, 0 not, -1 missing)" for c in matches.columns]
    if population is not None:
        columns += [population.score, _sought(population, population.n_equal), matches.score - population.score,
                    _sought(matches, matches.n_equal) - _sought(population, population.n_equal)]  # fmt: skip
        names += ["agreement score of the best-matching auxiliary record", "columns exactly equal to that record",
                  "agreement score: synthetic minus auxiliary", "equal columns: synthetic minus auxiliary"]  # fmt: skip
    if density_ratio is not None:
        columns.append(np.asarray(density_ratio, dtype=np.float64))
        names.append("DOMIAS density ratio")
    if linkage is not None:
        columns.append(np.asarray(linkage, dtype=np.float64))
        names.append("record-linkage relative statistic")
    return LearnedFeatures(matrix=np.column_stack(columns), names=tuple(names))


def _sought(matches: BestMatches, values: np.ndarray) -> np.ndarray:
    """``values`` as floats, NaN where a large scan sought no match (the classifier reads NaN as missing)."""
    return np.where(matches.row >= 0, values, np.nan).astype(np.float64)


def cross_fit_learned(features: np.ndarray, is_member: np.ndarray, folds: np.ndarray, *, seed: int) -> np.ndarray:
    """Out-of-fold P(member) of every record: fold f scored by a classifier fitted on the other folds.

    Histogram gradient boosting (scikit-learn; 100 rounds of 8-leaf trees, at least 10 records per leaf, L2 1.0:
    small leaves, so that a few dozen exposed members can make one; at 40 per leaf 3-field near-copies of 5 % of the
    members reached TPR 2.1 % at 1 % FPR, at 10 per leaf 3.3 %, the best single feature 3.5 %), fitted on at most
    :data:`_TRAIN_PER_CLASS` members and as many non-members of the other folds, on one thread: its OpenMP threads
    on a busy 2-core machine took 29 s where one thread took 2 s (20,000 records).
    """
    from sklearn.ensemble import HistGradientBoostingClassifier

    from audit_core.common.runtime import blas_threads

    member = np.asarray(is_member, dtype=bool)
    out = np.empty(member.size)
    rng = np.random.default_rng([seed, 291])
    for f in np.unique(folds):
        test, train = folds == f, np.flatnonzero(folds != f)
        fit_rows = np.concatenate([_at_most(rng, train[member[train] == cls], _TRAIN_PER_CLASS) for cls in (True, False)])
        model = HistGradientBoostingClassifier(max_iter=100, learning_rate=0.1, max_leaf_nodes=8, min_samples_leaf=10,
                                               l2_regularization=1.0, early_stopping=False, random_state=seed)  # fmt: skip
        with blas_threads(1):
            model.fit(features[fit_rows], member[fit_rows])
            out[test] = model.predict_proba(features[test])[:, 1]
    return out


def _at_most(rng: np.random.Generator, rows: np.ndarray, n: int) -> np.ndarray:
    return rows if rows.size <= n else np.sort(rng.choice(rows, size=n, replace=False))


@dataclass(frozen=True)
class LearnedAttack:
    """The learned attacker's out-of-fold ``score`` (P(member)) of every audited record and its feature ``names``."""

    score: np.ndarray
    names: tuple[str, ...]


def learned_attack(
    records: pd.DataFrame,
    is_member: np.ndarray,
    synthetic: pd.DataFrame,
    auxiliary: pd.DataFrame,
    *,
    types: ColumnTypes,
    encoding: GowerEncoding,
    folds: np.ndarray,
    seed: int,
    linkage: np.ndarray | None = None,
    distances: tuple[np.ndarray, np.ndarray] | None = None,
    client: Any = None,
) -> LearnedAttack:
    """Features of every audited record (module docstring) and their cross-fitted scores.

    Parameters
    ----------
    records : pandas.DataFrame
        The audited members and non-members (aligned, as :func:`audit_core.common.alignment.align_tables` gives them).
    is_member : ndarray of bool
    synthetic, auxiliary : pandas.DataFrame
        The synthetic table and the attacker's auxiliary records (aligned): the near-copy tolerance, the density
        ratio and the agreement weights come from the auxiliary records.
    types : ColumnTypes
    encoding : GowerEncoding
        The audit's Gower encoding (fitted on the real records).
    folds : ndarray of int
        The cross-fitting fold of each record (members and non-members dealt alike).
    seed : int
    linkage : ndarray, optional
        The record-linkage scan's relative statistic of each record, when the audit ran it.
    distances : (ndarray, ndarray), optional
        What the audit already measured: each auxiliary record's distance to the synthetic table and each audited
        record's distance to its nearest auxiliary record (None: measured here).
    client : distributed.Client, optional
        Seek the best matches on this Dask cluster (the same numbers).
    """
    from audit_core.synthetic.copies import near_copy_test
    from audit_core.synthetic.scoring import density_ratio_score

    query, syn, aux = encoding.transform(records), encoding.transform(synthetic), encoding.transform(auxiliary)
    near = nearest_k_gower(query, syn, k=max(LEARNED_NEIGHBOURS))
    aux_d, to_aux = distances if distances is not None else (nearest_gower(aux, syn).distance, nearest_gower(query, aux).distance)
    tolerance = near_copy_test(near.distance[:, 0], is_member, aux_d).tolerance
    matches = best_matches(records, synthetic, auxiliary, types=types, client=client, top_share=_TOP_SHARE)
    population = best_matches(records, auxiliary, auxiliary, types=types, client=client, top_share=_TOP_SHARE)
    features = learned_features(near, tolerance, matches, density_ratio=density_ratio_score(near.distance[:, 0], to_aux),
                                linkage=linkage, population=population)  # fmt: skip
    return LearnedAttack(score=cross_fit_learned(features.matrix, is_member, folds, seed=seed), names=features.names)
