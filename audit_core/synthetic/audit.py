"""Membership risk of a synthetic table (docs/methods.md §1): the audit, step by step.

One call, :func:`audit_synthetic`, runs the whole audit on the same attack set:

1. the attack set (:mod:`audit_core.synthetic.attack_set`): members from the training table,
   non-members from the holdout table (balanced by default) and the attacker's auxiliary
   records; a holdout that mostly repeats the training table is refused;
2. the Gower distance of every attack record and of every auxiliary record to its nearest
   synthetic record, computed **once** (:mod:`audit_core.synthetic.distance`; on a Dask
   cluster with :mod:`audit_core.synthetic.distributed_distance`);
3. the attacks on those distances (:mod:`audit_core.synthetic.scoring`): the
   true-distribution attack (cross-fitted KDEs on the true labels, an upper bound on risk),
   the realistic attack (KDEs on the auxiliary records' pseudo-labels), the hard-label
   baseline "Method 1" (member iff d < tau) and the DOMIAS-style density ratio;
4. the copy tests (:mod:`audit_core.synthetic.copies`): rows of one table repeated
   verbatim in another, with a one-sided Fisher exact test of whether the synthetic table
   copies training rows more often than holdout rows, and the same for near-copies;
5. the record-linkage scan of near-copies beyond a fixed tolerance (:mod:`audit_core.synthetic.linkage`);
6. the learned attacker (:mod:`audit_core.synthetic.learned`): a classifier on every record's distances,
   agreement and density ratio, cross-fitted on the folds of step 3.

The result is a :class:`audit_core.synthetic.result.SyntheticAudit`;
:func:`audit_core.synthetic.scoring.rescore` re-fits only the densities for a new
bandwidth or prior, and :mod:`audit_core.synthetic.explanations` explains single records.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from audit_core.common.alignment import AlignedTables, align_tables
from audit_core.common.column_types import ColumnTypes, infer_column_types
from audit_core.common.errors import InputError
from audit_core.common.limits import Bound
from audit_core.common.roc import AttackMetrics, evaluate_attack
from audit_core.common.runtime import ProgressFn, as_progress, sub_progress
from audit_core.contract import Settings, knob
from audit_core.synthetic.agreement import MatchTable, match_table
from audit_core.synthetic.attack_set import (
    MIN_PER_CLASS,
    AttackSet,
    check_holdout,
    draw_attack_set,
    pseudo_labels,
    stratified_folds,
)
from audit_core.synthetic.copies import (
    copied_rows,
    copy_test,
    near_copy_test,
    row_keys,
    table_overlaps,
    verbatim_records,
)
from audit_core.synthetic.density import LOG_AXIS_SCALE
from audit_core.synthetic.distributed_distance import nearest_gower_on
from audit_core.synthetic.encoding import GowerEncoding, encode_for_gower
from audit_core.synthetic.learned import learned_attack
from audit_core.synthetic.linkage import LinkageTest, linkage_test
from audit_core.synthetic.result import SyntheticAudit
from audit_core.synthetic.scoring import AttackScores, density_ratio_score, score_attacks

__all__ = ["AuditOptions", "audit_synthetic"]


_SHARE = Bound("a share", 0.0, 1.0, integer=False, open_low=True, open_high=True)


@dataclass(frozen=True)
class AuditOptions(Settings):
    """The settings of one membership audit (:func:`audit_synthetic`), with their defaults.

    ``prior``, ``bandwidth`` and ``bandwidth_scale`` are the tabular audit's re-score knobs
    (``audit_core.synthetic.spec.TabularSettings``): :meth:`validate` checks them by those knobs,
    with the CLI's sentences. The others are knobs of these options (one parameter system, the
    knobs'); all are checked once per audit, in :func:`audit_synthetic`.

    Attributes
    ----------
    prior : float
        ``pi`` in ``P(member | d)`` (docs/methods.md §1.3).
    bandwidth : str or float
        The KDE bandwidth rule (``silverman``, ``scott``, ``cv``) or a fixed bandwidth.
    bandwidth_scale : float
        A multiplier on the bandwidth (docs/methods.md §1.2).
    n_folds : int
        Cross-fitting folds of the true-distribution attack (at least 2).
    aux_quantile : float
        Share of the auxiliary records the realistic attacker pseudo-labels as members (the closest ones).
    aux_share : float
        Without an auxiliary table, the share of the holdout that plays that role (left out of the attack set).
    balance : bool
        As many members as non-members.
    max_per_class : int or None
        A cap on the members and on the non-members (a random sample); at least
        :data:`~audit_core.synthetic.attack_set.MIN_PER_CLASS`.
    density_ratio : bool
        Also run the DOMIAS-style attack (van Breugel et al., 2023): ``log(d_aux) - log(d_syn)``
        from 1-nearest-neighbour distances (one more nearest-neighbour search).
    learned : bool
        Also run the learned attacker (:mod:`audit_core.synthetic.learned`): a gradient-boosting classifier on
        each record's distances, agreement and density ratio, cross-fitted on the folds.
    """

    prior: float = 0.5
    bandwidth: str | float = "silverman"
    bandwidth_scale: float = 1.0
    n_folds: int = knob(5, "Cross-fitting folds", flag="n_folds", bound=Bound("the number of cross-fitting folds", 2, 100))
    aux_quantile: float = knob(0.5, "Auxiliary distance quantile", flag="aux_quantile", bound=_SHARE)
    aux_share: float = knob(0.5, "Share of the holdout used as auxiliary data", flag="aux_share",
                             bound=_SHARE)  # fmt: skip
    balance: bool = True
    max_per_class: int | None = knob(None, "Records per class", flag="max_per_class",
                                       bound=Bound("max_per_class", MIN_PER_CLASS, 10**9))  # fmt: skip
    density_ratio: bool = True
    learned: bool = True

    def validate(self) -> None:
        """Its own knobs, then the prior and bandwidth by the tabular audit's knobs (nothing downstream clamps them)."""
        from audit_core.synthetic.spec import TabularSettings

        super().validate()
        TabularSettings.checked(prior=self.prior, bandwidth=self.bandwidth, bandwidth_scale=self.bandwidth_scale)

    def to_json(self, seed: int) -> dict[str, Any]:
        """The settings an audit records (:attr:`SyntheticAudit.settings`), as plain JSON values."""
        return {
            "prior": float(self.prior),
            "bandwidth": self.bandwidth if isinstance(self.bandwidth, str) else float(self.bandwidth),
            "bandwidth_scale": float(self.bandwidth_scale),
            "kde_axis": f"log(1 + d / {LOG_AXIS_SCALE:g}), normalised to [0, 1]",
            "n_folds": int(self.n_folds),
            "aux_quantile": float(self.aux_quantile),
            "balance": bool(self.balance),
            "max_per_class": self.max_per_class,
            "seed": int(seed),
        }


def audit_synthetic(
    train: pd.DataFrame,
    holdout: pd.DataFrame,
    synthetic: pd.DataFrame,
    auxiliary: pd.DataFrame | None = None,
    *,
    types: ColumnTypes | None = None,
    options: AuditOptions = AuditOptions(),
    seed: int = 0,
    progress: ProgressFn | None = None,
    client: Any = None,
) -> SyntheticAudit:
    """Audit a synthetic table for membership risk (docs/methods.md §1).

    Parameters
    ----------
    train, holdout, synthetic : pandas.DataFrame
        The generator's training table (members), records of the same population it never
        saw (non-members) and its output.
    auxiliary : pandas.DataFrame, optional
        Population data the attacker holds; without it a random ``options.aux_share`` of the
        holdout plays that role and is left out of the attack set.
    types : ColumnTypes, optional
        Column types; inferred from ``train`` when None.
    options : AuditOptions
        The prior, the bandwidth, the folds, the attack set's sampling, the density ratio.
    seed, progress
        Seeds the sampling, the folds and the tie-breaking; ``progress(fraction, message)``.
    client : distributed.Client, optional
        Run the nearest-neighbour searches on this Dask cluster (same numbers); None: here.

    Raises
    ------
    InputError
        Mismatched or invalid tables, too few rows, a holdout that repeats the training table.
    """
    options.validate()  # every option, by its knob, once per audit
    report = as_progress(progress)
    report(0.0, "checking the tables")
    rng = np.random.default_rng(seed)
    aligned = _align_inputs(train, holdout, synthetic, auxiliary, types)
    keys = {name: row_keys(frame, aligned.types) for name, frame in aligned.frames.items()}
    overlaps = table_overlaps(aligned.frames, aligned.types, keys=keys)
    holdout_flag = check_holdout(overlaps)
    warnings = [*aligned.warnings, *([holdout_flag] if holdout_flag else [])]
    attack = draw_attack_set(aligned, options.aux_share, options.balance, options.max_per_class, rng, warnings)

    report(0.05, "encoding the tables")
    dist = _attack_distances(aligned, attack, density_ratio=options.density_ratio, progress=progress, client=client)

    report(0.86, "record-linkage scan of near-copies")
    linkage = _linkage(aligned, attack, dist, seed=seed, client=client, progress=sub_progress(progress, 0.86, 0.9))
    report(0.9, "fitting the densities")
    folds = stratified_folds(attack.is_member, int(options.n_folds), rng)
    pseudo = pseudo_labels(dist.auxiliary, float(options.aux_quantile), rng)
    settings = options.to_json(seed)
    scored = score_attacks(dist.attack, attack.is_member, folds, dist.auxiliary, pseudo, settings)
    pool = attack.non_auxiliary_holdout
    pool_copied = np.r_[np.isin(keys["train"], keys["synthetic"]), np.isin(keys["holdout"][pool], keys["synthetic"])]
    at = np.r_[attack.train_rows, len(aligned["train"]) + np.searchsorted(pool, attack.holdout_rows)]
    records, attacks = _attack_records(attack, dist, scored, linkage, pool_copied[at])
    learned_names: tuple[str, ...] = ()
    if options.learned:
        report(0.92, "the learned attacker (cross-fitted gradient boosting)")
        learned_names = _learned(aligned, attack, dist, records, attacks, folds, seed=seed, client=client)
    report(1.0, "done")
    return SyntheticAudit(
        records=records,
        attacks=attacks,
        distance_threshold=scored.distance_threshold,
        distance_threshold_realistic=scored.distance_threshold_realistic,
        posterior_true=scored.posterior_true,
        posterior_realistic=scored.posterior_real,
        aux_distances=dist.auxiliary,
        aux_pseudo_member=pseudo,
        folds=folds,
        auxiliary_source=attack.source,
        n_synthetic=len(aligned["synthetic"]),
        settings=settings,
        types=aligned.types,
        warnings=tuple(warnings),
        copy_test=copy_test(overlaps, unfolded_train_copies=int(copied_rows(aligned["train"], aligned["synthetic"],
                                                                             aligned.types, fold=False).sum())),
        overlaps=overlaps,
        holdout_flag=holdout_flag,
        near_copies=near_copy_test(dist.attack, attack.is_member, dist.auxiliary),
        verbatim=verbatim_records(aligned.frames, aligned.types, keys=keys),
        linkage=linkage,
        frames={name: _compact(aligned[name], aligned.types) for name in ("train", "holdout", "synthetic")},
        encoding=dist.encoder,
        learned_features=learned_names,
        pool_holdout_rows=pool,
        pool_copied=pool_copied,
    )


def _align_inputs(
    train: pd.DataFrame,
    holdout: pd.DataFrame,
    synthetic: pd.DataFrame,
    auxiliary: pd.DataFrame | None,
    types: ColumnTypes | None,
) -> AlignedTables:
    """The input tables aligned by role (``train``, ``holdout``, ``synthetic``, optionally ``auxiliary``).

    Types are inferred from ``train`` when None. Without an auxiliary table the holdout
    must hold enough rows for both the attack set and the auxiliary records.
    """
    if types is None:
        if not isinstance(train, pd.DataFrame):
            raise InputError("The training table must be a table (pandas DataFrame).")
        types = infer_column_types(train)
    frames_in: dict[str, pd.DataFrame] = {"train": train, "holdout": holdout, "synthetic": synthetic}
    if auxiliary is not None:
        frames_in["auxiliary"] = auxiliary
    holdout_min = MIN_PER_CLASS if auxiliary is not None else 2 * MIN_PER_CLASS
    return align_tables(
        frames_in,
        types=types,
        min_rows={"train": MIN_PER_CLASS, "holdout": holdout_min, "synthetic": MIN_PER_CLASS, "auxiliary": MIN_PER_CLASS},
    )


@dataclass(frozen=True)
class _Distances:
    """Nearest-neighbour distances of the attack set and the auxiliary records.

    Attributes
    ----------
    attack, auxiliary : ndarray of float
        Gower distance of each attack / auxiliary record to its nearest synthetic record.
    nearest : ndarray of int
        Row of that nearest synthetic record, for each attack record.
    to_auxiliary : ndarray of float or None
        Distance of each attack record to its nearest auxiliary record (density ratio only).
    encoder : GowerEncoding
        The Gower ranges and codes fitted on the real tables.
    query, synthetic : MatchTable
        The attack records followed by the auxiliary records, and the synthetic table, encoded with
        their exact numbers (the record-linkage scan reads both).
    """

    attack: np.ndarray
    auxiliary: np.ndarray
    nearest: np.ndarray
    to_auxiliary: np.ndarray | None
    encoder: GowerEncoding
    query: MatchTable
    synthetic: MatchTable

    def attack_and_auxiliary(self) -> tuple[MatchTable, MatchTable, MatchTable]:
        """The attack records, the auxiliary records (the query holds the attack set first) and the synthetic rows."""
        n = self.attack.size
        return self.query.rows(np.arange(n)), self.query.rows(np.arange(n, self.query.n_rows)), self.synthetic


def _attack_distances(
    aligned: AlignedTables,
    attack: AttackSet,
    *,
    density_ratio: bool,
    progress: ProgressFn | None,
    client: Any,
) -> _Distances:
    """Distances, once, for attack records and auxiliary records together (and to the auxiliary records)."""
    tr, ho, aux = aligned["train"], aligned["holdout"], attack.auxiliary
    real_parts = [tr, ho] + ([aux] if attack.source == "auxiliary" else [])
    encoder = encode_for_gower(real_parts, types=aligned.types)
    query = pd.concat([tr.iloc[attack.train_rows], ho.iloc[attack.holdout_rows], aux], ignore_index=True)
    query_enc = encoder.transform(query)
    stop = 0.7 if density_ratio else 0.85
    syn_enc = encoder.transform(aligned["synthetic"])
    nn = nearest_gower_on(query_enc, syn_enc, client=client, progress=sub_progress(progress, 0.05, stop))
    dist = np.clip(np.asarray(nn.distance, dtype=np.float64), 0.0, 1.0)
    nearest = np.asarray(nn.index, dtype=np.int64)
    n_attack = attack.n_members + attack.n_non_members
    aux_nn_d = None
    if density_ratio:
        as_progress(progress)(0.7, "nearest auxiliary record (density ratio)")
        aux_nn = nearest_gower_on(
            query_enc.rows(np.arange(n_attack)),
            query_enc.rows(np.arange(n_attack, len(query))),
            progress=sub_progress(progress, 0.7, 0.85),
            client=client,
        )
        aux_nn_d = np.clip(np.asarray(aux_nn.distance, dtype=np.float64), 0.0, 1.0)
    return _Distances(
        attack=dist[:n_attack], auxiliary=dist[n_attack:], nearest=nearest[:n_attack], to_auxiliary=aux_nn_d, encoder=encoder,
        query=match_table(encoder, query, query_enc), synthetic=match_table(encoder, aligned["synthetic"], syn_enc),
    )


def _linkage(
    aligned: AlignedTables, attack: AttackSet, dist: _Distances, *, seed: int, client: Any, progress: ProgressFn | None
) -> LinkageTest:
    """The record-linkage scan over every training row and every holdout row that is not an auxiliary record."""
    _, aux_m, syn_m = dist.attack_and_auxiliary()
    members = match_table(dist.encoder, aligned["train"])
    non_members = match_table(dist.encoder, aligned["holdout"].iloc[attack.non_auxiliary_holdout])
    return linkage_test(members, non_members, aux_m, syn_m, seed=seed, client=client, progress=progress)


def _attack_records(
    attack: AttackSet, dist: _Distances, scored: AttackScores, linkage: LinkageTest, copied: np.ndarray
) -> tuple[pd.DataFrame, dict[str, AttackMetrics]]:
    """The per-record table (:data:`~audit_core.synthetic.result.RECORD_COLUMNS`) and the scored attacks, density ratio too."""
    is_member = attack.is_member
    n_train = linkage.statistic.size - attack.non_auxiliary_holdout.size
    at = np.r_[attack.train_rows, n_train + np.searchsorted(attack.non_auxiliary_holdout, attack.holdout_rows)]
    records = pd.DataFrame(
        {
            "source": np.r_[
                np.full(attack.n_members, "train", dtype=object), np.full(attack.n_non_members, "holdout", dtype=object)
            ],
            "row": np.r_[attack.train_rows, attack.holdout_rows].astype(np.int64),
            "is_member": is_member,
            "distance": dist.attack,
            "p_member_true": scored.p_true,
            "p_member_realistic": scored.p_real,
            "nearest_synthetic_row": dist.nearest,
            "p_member_true_supported": scored.supported_true,
            "p_member_realistic_supported": scored.supported_real,
            "linkage_score": linkage.statistic[at],
            "near_copy": linkage.near[at],
            "copied": copied,
        }
    )
    attacks = dict(scored.attacks)
    if dist.to_auxiliary is not None:
        score = density_ratio_score(dist.attack, dist.to_auxiliary)
        records["distance_auxiliary"] = dist.to_auxiliary
        records["domias_score"] = score
        attacks["domias"] = evaluate_attack(score, is_member, threshold=0.0)
    return records, attacks


def _learned(
    aligned: AlignedTables, attack: AttackSet, dist: _Distances, records: pd.DataFrame, attacks: dict[str, AttackMetrics],
    folds: np.ndarray, *, seed: int, client: Any = None,
) -> tuple[str, ...]:
    """The learned attacker (:mod:`audit_core.synthetic.learned`): its out-of-fold scores into ``records`` and
    ``attacks``; returns its feature names."""
    frame = pd.concat([aligned["train"].iloc[attack.train_rows], aligned["holdout"].iloc[attack.holdout_rows]],
                      ignore_index=True)  # fmt: skip
    measured = (dist.auxiliary, dist.to_auxiliary) if dist.to_auxiliary is not None else None
    learned = learned_attack(frame, attack.is_member, aligned["synthetic"], attack.auxiliary, types=aligned.types,
                             encoding=dist.encoder, folds=folds, seed=seed, linkage=records["linkage_score"].to_numpy(),
                             distances=measured, client=client)  # fmt: skip
    records["learned_score"] = learned.score
    attacks["learned"] = evaluate_attack(learned.score, attack.is_member, threshold=0.5)
    return learned.names


def _compact(frame: pd.DataFrame, types: ColumnTypes) -> pd.DataFrame:
    """``frame`` with its categorical columns as pandas ``category``: the same labels, one small code per cell.

    A result keeps its aligned tables; as Python strings a million-row Adult table holds
    ~110 MB of pointers (and ``memory_usage(deep=True)``, the result store's measure, counts
    ~600 MB), as categories ~50 MB (issue 10, memory). Encoding and re-aligning read labels,
    so every distance and every number derived from these tables is unchanged.
    """
    return frame.astype({c: "category" for c in types.categorical if c in frame.columns})
