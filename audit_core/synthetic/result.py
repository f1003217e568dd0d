"""The result of a membership audit of a synthetic table (docs/methods.md §1): :class:`SyntheticAudit`.

Made by :func:`audit_core.synthetic.audit.audit_synthetic` and re-made by
:func:`audit_core.synthetic.scoring.rescore`; its ``to_json()`` is the ``--json`` document's
membership part (docs/contract.md), its ``records`` the ``--records`` CSV.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from audit_core.common.column_types import ColumnTypes
from audit_core.common.privacy_bound import epsilon_bound_json
from audit_core.common.roc import AttackMetrics, HardLabelMetrics
from audit_core.synthetic.copies import CopyTest, NearCopyTest, Overlap, VerbatimRecords
from audit_core.synthetic.density import ZERO_TOL, MembershipPosterior
from audit_core.synthetic.encoding import GowerEncoding
from audit_core.synthetic.linkage import LinkageTest

__all__ = ["RECORD_COLUMNS", "DistanceThreshold", "SyntheticAudit"]

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
    "linkage_score",
    "near_copy",
    "copied",
)


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
    """Result of :func:`audit_core.synthetic.audit.audit_synthetic` (and of :func:`audit_core.synthetic.scoring.rescore`).

    Attributes
    ----------
    records : pandas.DataFrame
        One row per attack record with :data:`RECORD_COLUMNS`: ``source``
        ("train" or "holdout"), ``row`` (0-based row of that input table),
        ``is_member``, ``distance`` (Gower distance to the nearest synthetic
        record), ``p_member_true`` (cross-fitted), ``p_member_realistic``,
        ``nearest_synthetic_row`` and ``p_member_true_supported`` /
        ``p_member_realistic_supported`` (False: neither class has data near that
        distance, the probability reads near the prior; "too little data to tell"),
        ``linkage_score`` (the record-linkage scan's relative statistic: how much more the
        record agrees with its best synthetic match than with any auxiliary record; empty where a
        large scan left the record out, below every cut-off: docs/methods.md §1.8) and
        ``near_copy`` (flagged by the scan's strongest test) and ``copied`` (an identical row,
        categories folded for case and whitespace, is in the synthetic table).
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
    copy_test : CopyTest
        Exact copies of the whole training and holdout tables in the synthetic
        table, with the one-sided Fisher exact test.
    overlaps : dict of str to Overlap
        Rows repeated verbatim between the tables (:func:`audit_core.synthetic.copies.table_overlaps`).
    holdout_flag : str or None
        A sentence when the holdout repeats training rows more often than chance.
    near_copies : NearCopyTest
        Members and non-members within a small tolerance of a synthetic record,
        with the one-sided Fisher exact test.
    verbatim : VerbatimRecords
        Synthetic rows equal to training, holdout or auxiliary records (whole tables).
    linkage : LinkageTest
        The record-linkage scan of near-copies beyond a fixed tolerance
        (:mod:`audit_core.synthetic.linkage`).
    frames : dict of str to pandas.DataFrame
        The aligned train, holdout and synthetic tables (for the exposed-records view and
        the disclosure attacks), categorical columns as pandas ``category`` (same labels).
    encoding : GowerEncoding
        The Gower ranges and codes fitted on the real tables (for per-column shares).
    learned_features : tuple of str
        The learned attacker's features (``attacks["learned"]``, :mod:`audit_core.synthetic.learned`).
    pool_holdout_rows : ndarray of int or None
        The holdout rows that are not auxiliary records: with every training row, the records the
        record-linkage scan tested (``linkage.near`` and ``linkage.statistic`` are in that order,
        training rows first) and risk by group counts copies over.
    pool_copied : ndarray of bool or None
        Each of those records copied verbatim into the synthetic table (categories folded).
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
    copy_test: CopyTest
    overlaps: dict[str, Overlap]
    near_copies: NearCopyTest
    verbatim: VerbatimRecords
    linkage: LinkageTest
    frames: dict[str, pd.DataFrame] = field(repr=False)
    encoding: GowerEncoding = field(repr=False)
    learned_features: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    holdout_flag: str | None = None
    pool_holdout_rows: np.ndarray | None = field(default=None, repr=False)
    pool_copied: np.ndarray | None = field(default=None, repr=False)

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

    @property
    def verbatim_copies(self) -> dict[str, int]:
        """Attack-set members / non-members whose record appears verbatim in the synthetic table.

        Verbatim is the copy tests' rule (every compared column equal, missing equal to missing:
        ``copies.row_keys``), so these are the headline's copies among the attack set: a subset of
        :attr:`exact_copies` (distance 0 also when the two rows differ only where one is missing).
        """
        from audit_core.synthetic.copies import row_keys

        synthetic = row_keys(self.frames["synthetic"], self.types)
        out = {}
        for key, source in (("members", "train"), ("non_members", "holdout")):
            rows = self.records.loc[self.records["source"] == source, "row"].to_numpy()
            out[key] = int(np.isin(row_keys(self.frames[source].iloc[rows], self.types), synthetic).sum())
        return out

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
        if "learned" in self.attacks:
            extra["learned"] = {
                **self.attacks["learned"].to_json(),
                "score": "out-of-fold P(member) of a histogram gradient-boosting classifier fitted on the other folds' "
                "members and non-members; member iff score >= 0.5",
                "features": list(self.learned_features),
                "n_folds": int(self.settings.get("n_folds", 0)),
            }
        d = self.records["distance"].to_numpy()
        member = self.records["is_member"].to_numpy(dtype=bool)
        # Empirical epsilon lower bound of each scored attack (audit_core.common.privacy_bound; members vs non-members).
        seed = int(self.settings.get("seed", 0))
        bound_scores = {"true_distribution": "p_member_true", "realistic": "p_member_realistic", "domias": "domias_score",
                        "learned": "learned_score"}  # fmt: skip
        blocks = (true_json, real_json, extra.get("domias"), extra.get("learned"))
        for block, column in zip(blocks, bound_scores.values(), strict=True):
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
            "exact_copies": {**self.exact_copies, **{f"{k}_verbatim": v for k, v in self.verbatim_copies.items()},
                             **self.copy_test.to_json(),
                             "counted_over": "members / non_members: attack-set records at Gower distance 0 (equal on every "
                             "column both rows fill in); members_verbatim / non_members_verbatim: of them, those equal "
                             "on every column, missing equal to missing; train_copies / holdout_copies: rows of the "
                             "whole training and holdout tables equal on every column, missing equal to missing"},
            "overlaps": {k: v.to_json() for k, v in self.overlaps.items()},
            "near_copies": self.near_copies.to_json(),
            "verbatim": self.verbatim.to_json(),
            "linkage": self.linkage.to_json(),
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
