"""Membership risk of a synthetic table (docs/methods.md §1).

One call, :func:`audit_synthetic`, runs the whole audit on the same attack set:

1. Gower distance of every attack record (members from the training table,
   non-members from the holdout table, balanced by default) and of every
   auxiliary record to its nearest synthetic record, computed **once**
   (``audit_core.synthetic.distance``);
2. the *true-distribution attack* (KDEs fitted on the true labels, cross-fitted
   over ``n_folds`` folds so no record scores itself: an upper bound on risk);
3. the *realistic attack* (KDEs fitted on auxiliary records pseudo-labelled by a
   distance quantile; without an auxiliary table a disjoint part of the holdout
   plays that role and is left out of the attack set);
4. the hard-label baseline "Method 1" (member iff d < tau);
5. the overlaps between the tables (rows of one repeated verbatim in another)
   and a one-sided Fisher exact test of whether the synthetic table copies
   training rows more often than holdout rows (:class:`CopyTest`). A holdout
   that mostly repeats the training table is refused;
6. the same test for near-copies (:func:`near_copy_test`): members against
   non-members closer to the synthetic table than all but 1 % of the auxiliary
   records.

:func:`rescore` re-fits only the 1-D densities for a new bandwidth or prior; the
distances are reused, so the dashboard's sliders answer at once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from audit_core.common.errors import InputError
from audit_core.common.privacy_bound import epsilon_bound_json
from audit_core.common.roc import AttackMetrics, HardLabelMetrics, evaluate_attack, hard_label_metrics
from audit_core.common.runtime import ProgressFn, as_progress, sub_progress
from audit_core.common.tables import AlignedTables, ColumnTypes, align_tables, infer_column_types
from audit_core.synthetic import distance as gower
from audit_core.synthetic.copies import (
    COPY_TEST_ALPHA,
    CopyTest,
    NearCopyTest,
    Overlap,
    VerbatimRecords,
    copy_test,
    fisher_greater,
    near_copy_test,
    table_overlaps,
    verbatim_records,
)
from audit_core.synthetic.density import BANDWIDTH_RULES, LOG_AXIS_SCALE, ZERO_TOL, MembershipPosterior, fit_posterior
from audit_core.synthetic.distributed_distance import nearest_gower_on
from audit_core.synthetic.linkage import LinkageTest, linkage_test

__all__ = [
    "COPY_TEST_ALPHA",
    "RECORD_COLUMNS",
    "CopyTest",
    "DistanceThreshold",
    "Overlap",
    "SyntheticAudit",
    "audit_synthetic",
    "copy_test",
    "exposed_records",
    "near_copy_test",
    "record_comparison",
    "rescore",
    "table_overlaps",
]

#: Columns of :attr:`SyntheticAudit.records`, in order (the CLI's ``--records`` CSV).
RECORD_COLUMNS: tuple[str, ...] = (
    "source",
    "row",
    "is_member",
    "distance",
    "p_member_true",
    "p_member_realistic",
    "nearest_synthetic_row",
    "p_member_true_supported",
    "p_member_realistic_supported",
)

#: What a record whose P(member | d) does not rest on data says (records ``..._supported`` False).
TOO_LITTLE_DATA = "too little data to tell"

_EPS = 1e-6  # added to distances before taking logs in the density-ratio score


MIN_PER_CLASS = 20
"""Fewest members (and non-members, and auxiliary records) an audit accepts."""

HOLDOUT_OVERLAP_REFUSED = 0.5
"""A holdout with at least this share of its rows repeated verbatim in the training table is refused."""

_HOLDOUT_OVERLAP_ALPHA = 0.001  # level of the "more holdout rows in train than chance" flag

def _compact(frame: pd.DataFrame, types: ColumnTypes) -> pd.DataFrame:
    """``frame`` with its categorical columns as pandas ``category``: the same labels, one small code per cell.

    A result keeps its aligned tables; as Python strings a million-row Adult table holds
    ~110 MB of pointers (and ``memory_usage(deep=True)``, the result store's measure, counts
    ~600 MB), as categories ~50 MB (issue 10, memory). Encoding and re-aligning read labels,
    so every distance and every number derived from these tables is unchanged.
    """
    return frame.astype({c: "category" for c in types.categorical if c in frame.columns})


def _check_holdout(overlaps: Mapping[str, Overlap]) -> str | None:
    """Refuse a holdout that is mostly the training table; a sentence when it repeats more than chance."""
    ho, dup = overlaps["holdout_in_train"], overlaps["train_in_train"]
    if ho.share >= HOLDOUT_OVERLAP_REFUSED:
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
class DistanceThreshold:
    """The hard-label baseline "Method 1": member iff ``distance < threshold`` (docs/methods.md §1.5).

    Attributes
    ----------
    threshold : float
        ``tau``, the distance below which a record is called a member.
    rule : str
        Where ``tau`` comes from, in words.
    metrics : HardLabelMetrics
        TPR, FPR, accuracy, precision, recall and F1 on the attack set (one ROC point).
    """

    threshold: float
    rule: str
    metrics: HardLabelMetrics

    def to_json(self) -> dict[str, Any]:
        """``threshold``, ``rule``, ``tpr``, ``fpr``, ``accuracy``, ``precision``, ``recall``, ``f1``."""
        return {"threshold": self.threshold, "rule": self.rule, **self.metrics.to_json()}


@dataclass(frozen=True)
class SyntheticAudit:
    """Result of :func:`audit_synthetic` (and of :func:`rescore`).

    Attributes
    ----------
    records : pandas.DataFrame
        One row per attack record with :data:`RECORD_COLUMNS`: ``source``
        ("train" or "holdout"), ``row`` (0-based row of that input table),
        ``is_member``, ``distance`` (Gower distance to the nearest synthetic
        record), ``p_member_true`` (cross-fitted), ``p_member_realistic``,
        ``nearest_synthetic_row`` and ``p_member_true_supported`` /
        ``p_member_realistic_supported`` (False: neither class has data near that
        distance, the probability reads near the prior; "too little data to tell").
    attacks : dict of str to AttackMetrics
        ``"true_distribution"`` and ``"realistic"``, scored by ``P(member | d)``;
        ``"domias"`` (when ``density_ratio``), scored by
        ``log(d_aux + eps) - log(d + eps)``.
    distance_threshold : DistanceThreshold
        Method 1 with ``tau`` = the non-members' median distance.
    distance_threshold_realistic : DistanceThreshold
        Method 1 with ``tau`` = the auxiliary records' median distance.
    posterior_true, posterior_realistic : MembershipPosterior
        The densities behind each attack, fitted on all records (for plots; the
        true-distribution scores themselves are cross-fitted).
    aux_distances : ndarray
        Distances of the auxiliary records to the synthetic table.
    aux_pseudo_member : ndarray of bool
        The realistic attack's pseudo-labels of the auxiliary records.
    folds : ndarray of int
        Cross-fitting fold of each attack record.
    auxiliary_source : str
        "auxiliary" (a table was given) or "holdout" (a disjoint part of it).
    n_synthetic : int
        Rows of the synthetic table.
    settings : dict
        prior, bandwidth, bandwidth_scale, kde_axis (the axis the KDEs and their
        bandwidths live on, ``audit_core.synthetic.density.kde_axis``), n_folds, aux_quantile, seed, balance.
    types : ColumnTypes
        Column types used for the distance.
    warnings : tuple of str
        Notes on the input (dropped columns, small samples...).
    copy_test : CopyTest or None
        Exact copies of the whole training and holdout tables in the synthetic
        table, with the one-sided Fisher exact test.
    overlaps : dict of str to Overlap
        Rows repeated verbatim between the tables (:func:`table_overlaps`).
    holdout_flag : str or None
        A sentence when the holdout repeats training rows more often than chance.
    near_copies : NearCopyTest or None
        Members and non-members within a small tolerance of a synthetic record,
        with the one-sided Fisher exact test.
    verbatim : VerbatimRecords or None
        Synthetic rows equal to training, holdout or auxiliary records (whole tables).
    linkage : LinkageTest or None
        The record-linkage scan of near-copies beyond a fixed tolerance
        (:mod:`audit_core.synthetic.linkage`).
    frames : dict of str to pandas.DataFrame
        The aligned train, holdout and synthetic tables (for the exposed-records view and
        the disclosure attacks), categorical columns as pandas ``category`` (same labels).
    encoding : GowerEncoding or None
        The Gower ranges and codes fitted on the real tables (for per-column shares).
    """

    records: pd.DataFrame
    attacks: dict[str, AttackMetrics]
    distance_threshold: DistanceThreshold
    distance_threshold_realistic: DistanceThreshold
    posterior_true: MembershipPosterior
    posterior_realistic: MembershipPosterior
    aux_distances: np.ndarray
    aux_pseudo_member: np.ndarray
    folds: np.ndarray
    auxiliary_source: str
    n_synthetic: int
    settings: dict[str, Any]
    types: ColumnTypes
    warnings: tuple[str, ...] = ()
    copy_test: CopyTest | None = None
    overlaps: dict[str, Overlap] = field(default_factory=dict)
    holdout_flag: str | None = None
    near_copies: NearCopyTest | None = None
    verbatim: VerbatimRecords | None = None
    linkage: LinkageTest | None = None
    frames: dict[str, pd.DataFrame] = field(default_factory=dict, repr=False)
    encoding: gower.GowerEncoding | None = field(default=None, repr=False)

    @property
    def n_members(self) -> int:
        """Members in the attack set."""
        return int(self.records["is_member"].sum())

    @property
    def n_non_members(self) -> int:
        """Non-members in the attack set."""
        return int((~self.records["is_member"].astype(bool)).sum())

    @property
    def n_auxiliary(self) -> int:
        """Auxiliary records the realistic attack used."""
        return int(self.aux_distances.size)

    @property
    def exact_copies(self) -> dict[str, int]:
        """How many members / non-members have an exact copy (d = 0) in the synthetic table."""
        zero = self.records["distance"].to_numpy() <= ZERO_TOL
        member = self.records["is_member"].to_numpy(dtype=bool)
        return {"members": int((zero & member).sum()), "non_members": int((zero & ~member).sum())}

    def to_json(self) -> dict[str, Any]:
        """The summary with docs/contract.md's keys (``n_members``, ``attacks.true_distribution``...)."""
        true_json = self.attacks["true_distribution"].to_json()
        true_json["upper_bound"] = True
        true_json["bandwidth"] = {
            "members": self.posterior_true.members.bandwidth,
            "non_members": self.posterior_true.non_members.bandwidth,
        }
        real_json = self.attacks["realistic"].to_json()
        real_json["bandwidth"] = {
            "members": self.posterior_realistic.members.bandwidth,
            "non_members": self.posterior_realistic.non_members.bandwidth,
        }
        extra = {}
        if "domias" in self.attacks:
            extra["domias"] = {
                **self.attacks["domias"].to_json(),
                "score": "log(d_auxiliary + 1e-6) - log(d_synthetic + 1e-6); member iff score >= 0",
            }
        d = self.records["distance"].to_numpy()
        member = self.records["is_member"].to_numpy(dtype=bool)
        # Empirical epsilon lower bound of each scored attack (audit_core.common.privacy_bound; members vs non-members).
        seed = int(self.settings.get("seed", 0))
        bound_scores = {"true_distribution": "p_member_true", "realistic": "p_member_realistic", "domias": "domias_score"}
        for block, column in zip((true_json, real_json, extra.get("domias")), bound_scores.values(), strict=True):
            if block is not None:
                block["epsilon_lower_bound"] = epsilon_bound_json(self.records[column].to_numpy(), member, seed=seed)
        threshold_json = self.distance_threshold.to_json()
        threshold_json["epsilon_lower_bound"] = epsilon_bound_json(-d, member, seed=seed)
        return {
            "n_members": self.n_members,
            "n_non_members": self.n_non_members,
            "n_synthetic": self.n_synthetic,
            "n_auxiliary": self.n_auxiliary,
            "auxiliary_source": self.auxiliary_source,
            "attacks": {
                "true_distribution": true_json,
                "realistic": real_json,
                "distance_threshold": threshold_json,
                "distance_threshold_realistic": self.distance_threshold_realistic.to_json(),
                **extra,
            },
            "exact_copies": {**self.exact_copies, **(self.copy_test.to_json() if self.copy_test else {}),
                             "counted_over": "members / non_members: attack-set records at Gower distance 0 (equal on every "
                             "column both rows fill in); train_copies / holdout_copies: rows of the whole training and "
                             "holdout tables equal on every column, missing equal to missing"},
            "overlaps": {k: v.to_json() for k, v in self.overlaps.items()},
            **({"near_copies": self.near_copies.to_json()} if self.near_copies else {}),
            **({"verbatim": self.verbatim.to_json()} if self.verbatim else {}),
            **({"linkage": self.linkage.to_json()} if self.linkage else {}),
            "median_distance": {
                "members": float(np.median(d[member])),
                "non_members": float(np.median(d[~member])),
                "auxiliary": float(np.median(self.aux_distances)),
            },
            "settings": dict(self.settings),
            "columns": {
                "numeric": list(self.types.numeric),
                "categorical": list(self.types.categorical),
                "ignored": list(self.types.ignored),
            },
            "warnings": list(self.warnings),
        }


# ----------------------------------------------------------------------------- helpers
def _check_settings(*, prior: float, bandwidth: Any, bandwidth_scale: float, n_folds: int, aux_quantile: float) -> None:
    if not 0.0 < float(prior) < 1.0:
        raise InputError(f"The membership prior must be strictly between 0 and 1; got {prior!r}.")
    if isinstance(bandwidth, str):
        if bandwidth not in BANDWIDTH_RULES:
            raise InputError(f"Unknown bandwidth {bandwidth!r}; use one of {', '.join(BANDWIDTH_RULES)} or a positive number.")
    elif not (isinstance(bandwidth, (int, float, np.floating)) and np.isfinite(bandwidth) and bandwidth > 0):
        raise InputError(f"The bandwidth must be a rule name or a positive number; got {bandwidth!r}.")
    if not (np.isfinite(bandwidth_scale) and bandwidth_scale > 0):
        raise InputError(f"The bandwidth scale must be a positive number; got {bandwidth_scale!r}.")
    if int(n_folds) != n_folds or n_folds < 2:
        raise InputError(f"Cross-fitting needs at least 2 folds; got {n_folds!r}.")
    if not 0.0 < float(aux_quantile) < 1.0:
        raise InputError(f"The auxiliary distance quantile must be strictly between 0 and 1; got {aux_quantile!r}.")


def _stratified_folds(is_member: np.ndarray, n_folds: int, rng: np.random.Generator) -> np.ndarray:
    folds = np.empty(is_member.size, dtype=np.int64)
    for cls in (True, False):
        idx = np.flatnonzero(is_member == cls)
        folds[rng.permutation(idx)] = np.arange(idx.size) % n_folds
    return folds


def _pseudo_labels(aux_d: np.ndarray, quantile: float, rng: np.random.Generator) -> np.ndarray:
    """The ``quantile`` share of auxiliary records closest to S, ties broken at random."""
    n = aux_d.size
    k = int(np.clip(round(quantile * n), 1, n - 1))
    order = np.lexsort((rng.random(n), aux_d))
    label = np.zeros(n, dtype=bool)
    label[order[:k]] = True
    return label


def _fit(
    d_m: np.ndarray, d_n: np.ndarray, settings: Mapping[str, Any], *, non_member_zero_pseudo_count: float = 1.0
) -> MembershipPosterior:
    return fit_posterior(
        d_m,
        d_n,
        bandwidth=settings["bandwidth"],
        scale=settings["bandwidth_scale"],
        prior=settings["prior"],
        non_member_zero_pseudo_count=non_member_zero_pseudo_count,
    )


def _score(
    distance: np.ndarray,
    is_member: np.ndarray,
    folds: np.ndarray,
    aux_d: np.ndarray,
    pseudo: np.ndarray,
    settings: Mapping[str, Any],
) -> dict[str, Any]:
    """Everything that depends on the bandwidth and the prior, from fixed distances."""
    p_true = np.empty(distance.size)
    supported_true = np.zeros(distance.size, dtype=bool)
    for f in range(int(settings["n_folds"])):
        test = folds == f
        if not test.any():
            continue
        fit_on = ~test
        post = _fit(distance[fit_on & is_member], distance[fit_on & ~is_member], settings)
        p_true[test] = post.p_member(distance[test])
        supported_true[test] = post.supported(distance[test])  # fitted without the record itself
    posterior_true = _fit(distance[is_member], distance[~is_member], settings)
    # The pseudo-non-members are by definition the auxiliary records farthest from S: when
    # all of them have d > 0, an exact copy cannot be one of them (structural zero, not
    # an unseen event), so their point mass gets no add-one smoothing. Otherwise the
    # realistic attacker, whose auxiliary data hold no copies, would score copies at the
    # prior, below near-copies (docs/methods.md §1.6: a copy must come out at the top).
    far = aux_d[~pseudo]
    posterior_real = _fit(aux_d[pseudo], far, settings, non_member_zero_pseudo_count=1.0 if np.any(far <= ZERO_TOL) else 0.0)
    p_real = posterior_real.p_member(distance)
    supported_real = posterior_real.supported(distance)

    tau_true = float(np.median(distance[~is_member]))
    tau_real = float(np.median(aux_d))
    return {
        "p_true": p_true,
        "p_real": p_real,
        "supported_true": supported_true,
        "supported_real": supported_real,
        "posterior_true": posterior_true,
        "posterior_real": posterior_real,
        "attacks": {
            "true_distribution": evaluate_attack(p_true, is_member, threshold=0.5),
            "realistic": evaluate_attack(p_real, is_member, threshold=0.5),
        },
        "distance_threshold": DistanceThreshold(
            threshold=tau_true,
            rule="median distance of the non-members",
            metrics=hard_label_metrics(distance < tau_true, is_member),
        ),
        "distance_threshold_realistic": DistanceThreshold(
            threshold=tau_real,
            rule="median distance of the auxiliary records",
            metrics=hard_label_metrics(distance < tau_real, is_member),
        ),
    }


# ----------------------------------------------------------------------------- audit steps
@dataclass(frozen=True)
class _AttackSet:
    """The attack set and the auxiliary records of one audit (step 1 of the module docstring).

    Attributes
    ----------
    train_rows, holdout_rows : ndarray of int
        Rows of the aligned training and holdout tables drawn as members and non-members.
    auxiliary : pandas.DataFrame
        The attacker's auxiliary records (aligned).
    source : str
        "auxiliary" (a table was given) or "holdout" (a disjoint part of it).
    """

    train_rows: np.ndarray
    holdout_rows: np.ndarray
    auxiliary: pd.DataFrame
    source: str

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
    """

    attack: np.ndarray
    auxiliary: np.ndarray
    nearest: np.ndarray
    to_auxiliary: np.ndarray | None
    encoder: gower.GowerEncoding
    query: gower.EncodedTable | None = None
    synthetic: gower.EncodedTable | None = None

    def attack_and_auxiliary(self) -> tuple[gower.EncodedTable, gower.EncodedTable, gower.EncodedTable]:
        """The encoded attack records, auxiliary records (the query holds the attack set first) and synthetic rows."""
        if self.query is None or self.synthetic is None:  # pragma: no cover - _attack_distances always sets both
            raise ValueError("the distances were computed without their encoded tables")
        n = self.attack.size
        return self.query.rows(np.arange(n)), self.query.rows(np.arange(n, self.query.n_rows)), self.synthetic


def _check_audit_settings(
    *,
    prior: float,
    bandwidth: Any,
    bandwidth_scale: float,
    n_folds: int,
    aux_quantile: float,
    aux_share: float,
    max_per_class: int | None,
) -> None:
    """Refuse invalid settings of :func:`audit_synthetic` (the scoring ones and the sampling ones)."""
    _check_settings(prior=prior, bandwidth=bandwidth, bandwidth_scale=bandwidth_scale, n_folds=n_folds, aux_quantile=aux_quantile)
    if not 0.0 < aux_share < 1.0:
        raise InputError(f"The share of the holdout used as auxiliary data must be between 0 and 1; got {aux_share!r}.")
    if max_per_class is not None and max_per_class < MIN_PER_CLASS:
        raise InputError(f"max_per_class must be at least {MIN_PER_CLASS}; got {max_per_class}.")


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


def _attack_set(
    aligned: AlignedTables,
    aux_share: float,
    balance: bool,
    max_per_class: int | None,
    rng: np.random.Generator,
    warnings: list[str],
) -> _AttackSet:
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
    tr_rows = np.sort(rng.choice(len(aligned["train"]), size=n_m, replace=False))
    ho_rows = np.sort(rng.choice(ho_rows, size=n_n, replace=False))
    if n_n < 1000:
        warnings.append(
            f"Only {n_n} non-members: a TPR at 0.1 % FPR needs at least 10,000 and one at 1 % FPR at least 1,000 to be measured."
        )
    return _AttackSet(train_rows=tr_rows, holdout_rows=ho_rows, auxiliary=aux, source=aux_source)


def _attack_distances(
    aligned: AlignedTables,
    attack: _AttackSet,
    *,
    density_ratio: bool,
    progress: ProgressFn | None,
    client: Any,
) -> _Distances:
    """Distances, once, for attack records and auxiliary records together (and to the auxiliary records)."""
    tr, ho, aux = aligned["train"], aligned["holdout"], attack.auxiliary
    real_parts = [tr, ho] + ([aux] if attack.source == "auxiliary" else [])
    encoder = gower.encode_for_gower(real_parts, types=aligned.types)
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
        query=query_enc, synthetic=syn_enc,
    )


def _audit_settings(
    *,
    prior: float,
    bandwidth: str | float,
    bandwidth_scale: float,
    n_folds: int,
    aux_quantile: float,
    balance: bool,
    max_per_class: int | None,
    seed: int,
) -> dict[str, Any]:
    """The settings an audit records (:attr:`SyntheticAudit.settings`), as plain JSON values."""
    return {
        "prior": float(prior),
        "bandwidth": bandwidth if isinstance(bandwidth, str) else float(bandwidth),
        "bandwidth_scale": float(bandwidth_scale),
        "kde_axis": f"log(1 + d / {LOG_AXIS_SCALE:g}), normalised to [0, 1]",
        "n_folds": int(n_folds),
        "aux_quantile": float(aux_quantile),
        "balance": bool(balance),
        "max_per_class": max_per_class,
        "seed": int(seed),
    }


def _attack_records(
    attack: _AttackSet, dist: _Distances, scored: Mapping[str, Any]
) -> tuple[pd.DataFrame, dict[str, AttackMetrics]]:
    """The per-record table (:data:`RECORD_COLUMNS`) and the scored attacks, the density ratio included."""
    is_member = attack.is_member
    records = pd.DataFrame(
        {
            "source": np.r_[
                np.full(attack.n_members, "train", dtype=object), np.full(attack.n_non_members, "holdout", dtype=object)
            ],
            "row": np.r_[attack.train_rows, attack.holdout_rows].astype(np.int64),
            "is_member": is_member,
            "distance": dist.attack,
            "p_member_true": scored["p_true"],
            "p_member_realistic": scored["p_real"],
            "nearest_synthetic_row": dist.nearest,
            "p_member_true_supported": scored["supported_true"],
            "p_member_realistic_supported": scored["supported_real"],
        }
    )
    attacks = dict(scored["attacks"])
    if dist.to_auxiliary is not None:
        score = np.log(dist.to_auxiliary + _EPS) - np.log(dist.attack + _EPS)
        records["distance_auxiliary"] = dist.to_auxiliary
        records["domias_score"] = score
        attacks["domias"] = evaluate_attack(score, is_member, threshold=0.0)
    return records, attacks


# ----------------------------------------------------------------------------- the audit
def audit_synthetic(
    train: pd.DataFrame,
    holdout: pd.DataFrame,
    synthetic: pd.DataFrame,
    auxiliary: pd.DataFrame | None = None,
    *,
    types: ColumnTypes | None = None,
    prior: float = 0.5,
    bandwidth: str | float = "silverman",
    bandwidth_scale: float = 1.0,
    n_folds: int = 5,
    aux_quantile: float = 0.5,
    aux_share: float = 0.5,
    balance: bool = True,
    max_per_class: int | None = None,
    density_ratio: bool = True,
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
        Population data the attacker holds; without it a random ``aux_share`` of the
        holdout plays that role and is left out of the attack set.
    types : ColumnTypes, optional
        Column types; inferred from ``train`` when None.
    prior, bandwidth, bandwidth_scale
        ``pi`` in ``P(member | d)``; the KDE bandwidth rule (``silverman``, ``scott``,
        ``cv``) or a fixed bandwidth, and a multiplier on it (docs/methods.md §1.2-1.3).
    n_folds, aux_quantile
        Cross-fitting folds of the true-distribution attack; the share of auxiliary records
        the realistic attacker pseudo-labels as members (the closest ones).
    balance, max_per_class
        As many members as non-members; a cap on each (random sample).
    density_ratio : bool
        Also run a DOMIAS-style attack (van Breugel et al., 2023): ``log(d_aux) - log(d_syn)``
        from 1-nearest-neighbour distances (one more nearest-neighbour search).
    seed, progress
        Seeds the sampling, the folds and the tie-breaking; ``progress(fraction, message)``.
    client : distributed.Client, optional
        Run the nearest-neighbour searches on this Dask cluster (same numbers); None: here.

    Raises
    ------
    InputError
        Mismatched or invalid tables, too few rows, invalid settings.
    """
    _check_audit_settings(
        prior=prior, bandwidth=bandwidth, bandwidth_scale=bandwidth_scale, n_folds=n_folds, aux_quantile=aux_quantile,
        aux_share=aux_share, max_per_class=max_per_class,
    )  # fmt: skip
    report = as_progress(progress)
    report(0.0, "checking the tables")
    rng = np.random.default_rng(seed)
    aligned = _align_inputs(train, holdout, synthetic, auxiliary, types)
    overlaps = table_overlaps(aligned.frames, aligned.types)
    holdout_flag = _check_holdout(overlaps)
    warnings = [*aligned.warnings, *([holdout_flag] if holdout_flag else [])]
    attack = _attack_set(aligned, aux_share, balance, max_per_class, rng, warnings)

    report(0.05, "encoding the tables")
    dist = _attack_distances(aligned, attack, density_ratio=density_ratio, progress=progress, client=client)

    report(0.86, "record-linkage scan of near-copies")
    attack_enc, aux_enc, syn_enc = dist.attack_and_auxiliary()
    linkage = linkage_test(attack_enc, attack.is_member, aux_enc, syn_enc, seed=seed)
    report(0.9, "fitting the densities")
    folds = _stratified_folds(attack.is_member, int(n_folds), rng)
    pseudo = _pseudo_labels(dist.auxiliary, float(aux_quantile), rng)
    settings = _audit_settings(
        prior=prior, bandwidth=bandwidth, bandwidth_scale=bandwidth_scale, n_folds=n_folds, aux_quantile=aux_quantile,
        balance=balance, max_per_class=max_per_class, seed=seed,
    )  # fmt: skip
    scored = _score(dist.attack, attack.is_member, folds, dist.auxiliary, pseudo, settings)
    report(1.0, "done")
    return _audit_result(
        aligned, attack, dist, scored, folds=folds, pseudo=pseudo, settings=settings, overlaps=overlaps,
        holdout_flag=holdout_flag, warnings=warnings, linkage=linkage,
    )  # fmt: skip


def _audit_result(
    aligned: AlignedTables,
    attack: _AttackSet,
    dist: _Distances,
    scored: Mapping[str, Any],
    *,
    folds: np.ndarray,
    pseudo: np.ndarray,
    settings: dict[str, Any],
    overlaps: dict[str, Overlap],
    holdout_flag: str | None,
    warnings: list[str],
    linkage: LinkageTest | None = None,
) -> SyntheticAudit:
    """Assemble the :class:`SyntheticAudit` from the attack set, its distances and the scored attacks."""
    records, attacks = _attack_records(attack, dist, scored)
    return SyntheticAudit(
        records=records,
        attacks=attacks,
        distance_threshold=scored["distance_threshold"],
        distance_threshold_realistic=scored["distance_threshold_realistic"],
        posterior_true=scored["posterior_true"],
        posterior_realistic=scored["posterior_real"],
        aux_distances=dist.auxiliary,
        aux_pseudo_member=pseudo,
        folds=folds,
        auxiliary_source=attack.source,
        n_synthetic=len(aligned["synthetic"]),
        settings=settings,
        types=aligned.types,
        warnings=tuple(warnings),
        copy_test=copy_test(overlaps),
        overlaps=overlaps,
        holdout_flag=holdout_flag,
        near_copies=near_copy_test(dist.attack, attack.is_member, dist.auxiliary),
        verbatim=verbatim_records(aligned.frames, aligned.types),
        linkage=linkage,
        frames={name: _compact(aligned[name], aligned.types) for name in ("train", "holdout", "synthetic")},
        encoding=dist.encoder,
    )


def rescore(
    audit: SyntheticAudit,
    *,
    bandwidth: str | float | None = None,
    prior: float | None = None,
    bandwidth_scale: float | None = None,
) -> SyntheticAudit:
    """Re-fit the densities for a new bandwidth or prior, reusing the distances.

    Costs a few 1-D KDE fits on the stored distances (milliseconds for tens of
    thousands of records); the folds and pseudo-labels stay the same, so only the
    changed setting moves the numbers.

    Parameters
    ----------
    audit : SyntheticAudit
        A result of :func:`audit_synthetic`.
    bandwidth, prior, bandwidth_scale : optional
        New values; None keeps the audit's.

    Returns
    -------
    SyntheticAudit
    """
    settings = dict(audit.settings)
    if bandwidth is not None:
        settings["bandwidth"] = bandwidth if isinstance(bandwidth, str) else float(bandwidth)
    if prior is not None:
        settings["prior"] = float(prior)
    if bandwidth_scale is not None:
        settings["bandwidth_scale"] = float(bandwidth_scale)
    _check_settings(
        prior=settings["prior"],
        bandwidth=settings["bandwidth"],
        bandwidth_scale=settings["bandwidth_scale"],
        n_folds=settings["n_folds"],
        aux_quantile=settings["aux_quantile"],
    )
    d = audit.records["distance"].to_numpy(dtype=np.float64)
    is_member = audit.records["is_member"].to_numpy(dtype=bool)
    scored = _score(d, is_member, audit.folds, audit.aux_distances, audit.aux_pseudo_member, settings)
    records = audit.records.copy()
    records["p_member_true"] = scored["p_true"]
    records["p_member_realistic"] = scored["p_real"]
    records["p_member_true_supported"] = scored["supported_true"]
    records["p_member_realistic_supported"] = scored["supported_real"]
    return replace(
        audit,
        records=records,
        attacks={**audit.attacks, **scored["attacks"]},
        distance_threshold=scored["distance_threshold"],
        distance_threshold_realistic=scored["distance_threshold_realistic"],
        posterior_true=scored["posterior_true"],
        posterior_realistic=scored["posterior_real"],
        settings=settings,
    )


# ----------------------------------------------------------------------------- explanations
_SOURCES = ("train", "holdout")


def _contributions(audit: SyntheticAudit, records: pd.DataFrame) -> pd.DataFrame:
    """Per-column contributions to each record's distance (rows sum to the distance)."""
    if audit.encoding is None or not audit.frames:
        raise InputError("This audit result does not carry its tables; re-run the audit to explain records.")
    enc = audit.encoding
    syn = enc.transform(audit.frames["synthetic"].iloc[records["nearest_synthetic_row"].to_numpy()])
    parts = []
    for source in _SOURCES:
        mask = (records["source"] == source).to_numpy()
        if not mask.any():
            continue
        query = enc.transform(audit.frames[source].iloc[records["row"].to_numpy()[mask]])
        pos = np.flatnonzero(mask)
        contrib = gower.column_contributions(
            query,
            syn.rows(pos),
            query_rows=np.arange(pos.size),
            reference_rows=np.arange(pos.size),
            column_order=enc.column_order,
        )
        contrib.index = records.index[mask]
        parts.append(contrib)
    return pd.concat(parts).loc[records.index]


def exposed_records(
    audit: SyntheticAudit,
    *,
    k: int = 20,
    by: str = "p_member_true",
    members_only: bool = False,
) -> pd.DataFrame:
    """The ``k`` records with the highest membership probability, explained.

    Records are ranked by ``by`` (``p_member_true`` or ``p_member_realistic``),
    ties by the smaller distance. Each row names the record, its nearest
    synthetic record, how many compared columns match exactly and which columns
    make up the distance (largest contribution first). docs/methods.md §1.6.

    Parameters
    ----------
    audit : SyntheticAudit
    k : int
        Number of records.
    by : {"p_member_true", "p_member_realistic"}
        The score to rank by.
    members_only : bool
        Rank training records only (the ones whose exposure matters).

    Returns
    -------
    pandas.DataFrame
        Columns ``rank``, ``source``, ``row``, ``is_member``, ``p_member_true``,
        ``p_member_realistic``, ``distance``, ``nearest_synthetic_row``, the two ``..._supported`` flags,
        ``matching_columns`` ("12 of 14"), ``differs_in`` ("age 0.021, hours_per_week 0.014") and
        ``note`` ("too little data to tell" where the ranked probability does not rest on data:
        neither class has records near that distance, so it reads near the prior).
    """
    if by not in ("p_member_true", "p_member_realistic"):
        raise InputError(f"Rank exposed records by p_member_true or p_member_realistic, not {by!r}.")
    recs = audit.records
    if members_only:
        recs = recs[recs["is_member"]]
    top = recs.sort_values([by, "distance"], ascending=[False, True], kind="mergesort").head(max(int(k), 0))
    out = top.reset_index(drop=True)
    out.insert(0, "rank", np.arange(1, len(out) + 1))
    if out.empty:
        out["matching_columns"] = pd.Series(dtype=object)
        out["differs_in"] = pd.Series(dtype=object)
        out["note"] = pd.Series(dtype=object)
        return out
    contrib = _contributions(audit, top).reset_index(drop=True)
    n_cols = contrib.shape[1]
    out["matching_columns"] = [f"{int((row == 0).sum())} of {n_cols}" for row in contrib.to_numpy()]
    differs = []
    for _, row in contrib.iterrows():
        nz = row[row > 0].sort_values(ascending=False)
        differs.append(", ".join(f"{col} {val:.3f}" for col, val in nz.items()) or "nothing (exact copy)")
    out["differs_in"] = differs
    out["note"] = np.where(out[f"{by}_supported"].to_numpy(dtype=bool), "", TOO_LITTLE_DATA)
    return out


def record_comparison(audit: SyntheticAudit, record: int) -> pd.DataFrame:
    """One attack record beside its nearest synthetic record, column by column.

    Parameters
    ----------
    audit : SyntheticAudit
    record : int
        Row position in ``audit.records``.

    Returns
    -------
    pandas.DataFrame
        One row per compared column: ``column``, ``record``, ``nearest_synthetic``,
        ``contribution`` (adds up to the distance) and ``share_of_distance``
        (adds up to 1; 0 for an exact copy).
    """
    if not 0 <= int(record) < len(audit.records):
        raise InputError(f"There is no record {record}; choose one between 0 and {len(audit.records) - 1}.")
    rec = audit.records.iloc[[int(record)]]
    contrib = _contributions(audit, rec).iloc[0]
    cols = list(contrib.index)
    real = audit.frames[str(rec["source"].iloc[0])].iloc[int(rec["row"].iloc[0])]
    syn = audit.frames["synthetic"].iloc[int(rec["nearest_synthetic_row"].iloc[0])]
    d = float(rec["distance"].iloc[0])
    values = contrib.to_numpy(dtype=np.float64)
    return pd.DataFrame(
        {
            "column": cols,
            "record": [real[c] for c in cols],
            "nearest_synthetic": [syn[c] for c in cols],
            "contribution": values,
            "share_of_distance": values / d if d > 0 else np.zeros_like(values),
        }
    )
