"""Risk by group (issues 18.5 and 28): uncommon records are hit hardest, and an average hides them.

For one column of the audited records, each group (a category, or a quartile of a numeric
column) gets its own TPR at 1 % FPR with the interval every audit uses
(:func:`audit_core.common.roc.tpr_at_fpr`, threshold from that group's own non-members),
its AUC and its sizes. A group with too few non-members to resolve a 1 % FPR at all (fewer
than :data:`MIN_NON_MEMBERS`) says so instead of showing a TPR; one with fewer than 1,000 (the
tool's rule for a supported TPR at 1 % FPR) shows it marked ⚠, its interval as wide as its
sample.

Where the audit counted copies (the synthetic-table audit), each group also shows its training
records copied verbatim, its near-copies found by the record-linkage scan and its own
exact-copy test (one-sided Fisher, members against non-members of the group). Groups are ranked
by evidence: a group whose copies or near-copies exceed chance (:data:`EVIDENCE_ALPHA`) comes
first, strongest first, whatever its size ("too small to measure" applies to the TPR only);
then the others by TPR at 1 % FPR, worst first. Without a column named, the column whose groups
differ most in copies (a chi-square test that its groups' members are copied at one rate, the
smallest p-value, when some group's excess over its non-members is significant) is chosen, else
the one whose groups differ most in risk (the spread of their AUCs, over groups with at least
:data:`_MIN_GROUP` members and non-members).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from audit_core.common.errors import InputError
from audit_core.common.roc import TprAtFpr, roc_curve, tpr_at_fpr

__all__ = ["EVIDENCE_ALPHA", "MIN_NON_MEMBERS", "GroupRisk", "risk_by_group"]

MIN_NON_MEMBERS = 100
"""Fewest non-members a group needs for a TPR at 1 % FPR to be shown at all (one false positive in 100)."""

EVIDENCE_ALPHA = 0.05
"""A group's copies or near-copies exceeding chance at this level (one-sided Fisher) rank it first."""

_MIN_GROUP = 10
"""Fewest members and non-members a group needs for its AUC to count when choosing the column."""

_MAX_GROUPS = 30  # categories beyond the 29 largest are pooled as "other"
_FPR = 0.01


def _group_labels(values: pd.Series) -> pd.Series:
    """Group labels of one column: its categories (the largest 29, the rest "other"), or quartiles of a number."""
    if pd.api.types.is_float_dtype(values) and np.isinf(values.to_numpy()).any():
        values = values.where(np.isfinite(values))  # +-inf: no quartile holds it; grouped with the missing
    if pd.api.types.is_numeric_dtype(values) and values.nunique(dropna=True) > 8:
        bins = pd.qcut(values, 4, duplicates="drop")
        return bins.astype(str).where(values.notna(), "missing")
    labels = values.astype(object).where(values.notna(), "missing").astype(str)
    keep = labels.value_counts().index[: _MAX_GROUPS - 1]
    return labels.where(labels.isin(keep), "other")


def _auc(scores: np.ndarray, member: np.ndarray) -> float:
    return float(roc_curve(scores, member).auc) if member.any() and (~member).any() else float("nan")


def _fisher(a: int, n_a: int, b: int, n_b: int) -> float:
    """One-sided Fisher exact p-value that ``a / n_a`` exceeds ``b / n_b`` (1 when ``a`` is 0)."""
    if a == 0 or n_a == 0:
        return 1.0
    return float(stats.fisher_exact([[a, n_a - a], [b, n_b - b]], alternative="greater").pvalue)


@dataclass(frozen=True)
class GroupRisk:
    """The per-group risk of one column.

    Attributes
    ----------
    column : str
    chosen : bool
        True when the column was picked automatically (largest spread of copies or risk).
    rows : tuple of dict
        Per group, strongest evidence first: ``group``, ``n_members``, ``n_non_members``, ``auc``,
        ``tpr_at_fpr`` (a TprAtFpr; its ``supported`` says whether 1,000 non-members back it),
        ``measurable`` (at least :data:`MIN_NON_MEMBERS` non-members); where copies were counted
        also ``copies`` / ``non_member_copies`` (records copied verbatim), ``near_copies`` /
        ``non_member_near`` (near-copies found by the record-linkage scan), out of
        ``members_tested`` / ``non_members_tested`` (every training row of the group, and its
        holdout rows that are not auxiliary records), ``copy_p_value`` and ``near_copy_p_value``
        (one-sided Fisher, members against non-members of the group) and ``evidence`` (either below
        :data:`EVIDENCE_ALPHA`).
    chosen_by : str
        How the column was chosen ("given", "largest spread of copies", "largest spread of risk").
    """

    column: str
    chosen: bool
    rows: tuple[dict[str, Any], ...]
    chosen_by: str = ""

    def table(self) -> pd.DataFrame:
        """One row per group: sizes, copies and near-copies with their test, TPR at 1 % FPR with its interval, AUC."""
        out = []
        for r in self.rows:
            t: TprAtFpr | None = r["tpr_at_fpr"]
            if r["measurable"] and t is not None:
                tpr = f"{100 * t.tpr:.1f} % [{100 * t.ci_low:.1f}, {100 * t.ci_high:.1f}]" + ("" if t.supported else " ⚠")
            else:
                tpr = f"too few non-members to measure ({r['n_non_members']} < {MIN_NON_MEMBERS})"
            row = {"group": r["group"], "members": r["n_members"], "non-members": r["n_non_members"]}
            if "copies" in r:
                of_m, of_n = r["members_tested"], r["non_members_tested"]
                row["copied verbatim: training / holdout rows"] = (f"{r['copies']} of {of_m} / "
                                                                      f"{r['non_member_copies']} of {of_n}")  # fmt: skip
                row["copy test p"] = float(f"{r['copy_p_value']:.2g}")
                row["near-copies: training / holdout rows"] = f"{r['near_copies']} / {r['non_member_near']}"
            row |= {"TPR at 1 % FPR [95 % interval]": tpr, "AUC": round(r["auc"], 3)}
            out.append(row)
        return pd.DataFrame(out)

    def to_json(self) -> dict[str, Any]:
        """``{column: {group: {n_members, n_non_members, auc, measurable, tpr_at_fpr: {"0.01": ...}[, copies, ...]}}}``."""
        groups = {}
        for r in self.rows:
            t = r["tpr_at_fpr"]
            auc = r["auc"] if np.isfinite(r["auc"]) else None  # no members or no non-members in the group
            groups[r["group"]] = {"n_members": r["n_members"], "n_non_members": r["n_non_members"], "auc": auc,
                                  "measurable": r["measurable"],
                                  "tpr_at_fpr": {"0.01": t.to_json()} if t is not None else {}}  # fmt: skip
            if "copies" in r:
                groups[r["group"]] |= {k: r[k] for k in _COPY_KEYS}
        chosen_by = self.chosen_by or ("largest spread of risk" if self.chosen else "given")
        return {self.column: groups, "column": self.column, "chosen_by": chosen_by}


_COPY_KEYS = ("copies", "non_member_copies", "near_copies", "non_member_near", "copy_p_value", "near_copy_p_value",
              "evidence", "members_tested", "non_members_tested")  # fmt: skip


def _copy_counts(mask: np.ndarray, member: np.ndarray, copied: np.ndarray | None, near: np.ndarray | None) -> dict[str, Any]:
    """A group's copies and near-copies, members against non-members, with their one-sided Fisher tests."""
    if copied is None or near is None:
        return {}
    n_m, n_n = int((mask & member).sum()), int((mask & ~member).sum())
    c_m, c_n = int((mask & member & copied).sum()), int((mask & ~member & copied).sum())
    k_m, k_n = int((mask & member & near).sum()), int((mask & ~member & near).sum())
    p_copy, p_near = _fisher(c_m, n_m, c_n, n_n), _fisher(k_m, n_m, k_n, n_n)
    return {"copies": c_m, "non_member_copies": c_n, "near_copies": k_m, "non_member_near": k_n, "copy_p_value": p_copy,
            "near_copy_p_value": p_near, "evidence": bool(min(p_copy, p_near) < EVIDENCE_ALPHA), "members_tested": n_m,
            "non_members_tested": n_n}  # fmt: skip


def _spread(labels: pd.Series, scores: np.ndarray, member: np.ndarray) -> float:
    aucs = []
    for g in labels.unique():
        mask = (labels == g).to_numpy()
        if (mask & member).sum() >= _MIN_GROUP and (mask & ~member).sum() >= _MIN_GROUP:
            aucs.append(_auc(scores[mask], member[mask]))
    return float(np.nanmax(aucs) - np.nanmin(aucs)) if len(aucs) >= 2 else -1.0


def _copy_spread(labels: pd.Series, member: np.ndarray, copied: np.ndarray, near: np.ndarray) -> float:
    """How much the groups differ in copies: ``-log p`` of a chi-square test that the groups' members are copied at
    the same rate (copies, then near-copies: the larger), where some group's excess over its non-members is
    significant; -1 where none is. A large group copied at 80 % outweighs a group of 7 copied at 86 %: evidence, not
    the rate alone, tells where the copies are."""
    best = -1.0
    groups = labels.unique()
    for flags in (copied, near):
        significant, rows = False, []
        for g in groups:
            mask = (labels == g).to_numpy()
            n_m, n_n = int((mask & member).sum()), int((mask & ~member).sum())
            if not n_m:
                continue
            a = int((mask & member & flags).sum())
            rows.append((a, n_m - a))
            if n_n:
                significant |= _fisher(a, n_m, int((mask & ~member & flags).sum()), n_n) < EVIDENCE_ALPHA
        table = np.array(rows, dtype=np.float64)
        if not significant or len(rows) < 2 or not table[:, 0].any() or not table[:, 1].any():
            continue
        expected = table.sum(axis=1, keepdims=True) * table.sum(axis=0, keepdims=True) / table.sum()
        statistic = float(((table - expected) ** 2 / expected).sum())
        best = max(best, float(-stats.chi2.logsf(statistic, len(rows) - 1)))
    return best


def _pick_column(
    columns: Mapping[str, pd.Series],
    scores: np.ndarray,
    member: np.ndarray,
    copied: np.ndarray | None,
    near: np.ndarray | None,
    at: np.ndarray,
) -> tuple[str, str]:
    """The column whose groups differ most in copies, else in risk (AUC spread of the scored records ``at``); ties:
    the first. And why."""
    if not columns:
        raise InputError("There is no column to group the records by.")
    labels = {name: _group_labels(values.reset_index(drop=True)) for name, values in columns.items()}
    if copied is not None and near is not None and (copied.any() or near.any()):
        spreads = {name: _copy_spread(lab, member, copied, near) for name, lab in labels.items()}
        top = max(spreads, key=lambda c: spreads[c])
        if spreads[top] > 0:
            return top, "largest spread of copies"
    spreads = {name: _spread(pd.Series(lab.to_numpy()[at]), scores, member[at]) for name, lab in labels.items()}
    return max(spreads, key=lambda c: spreads[c]), "largest spread of risk"


def risk_by_group(
    columns: Mapping[str, pd.Series],
    scores: np.ndarray,
    is_member: np.ndarray,
    *,
    column: str | None = None,
    copied: np.ndarray | None = None,
    near: np.ndarray | None = None,
    scored: np.ndarray | None = None,
) -> GroupRisk:
    """Per-group risk for ``column`` (None: :func:`_pick_column`), strongest evidence first.

    Parameters
    ----------
    columns : mapping of str to pandas.Series
        The records' values, one series per column.
    scores : array
        The attack score (higher = more member-like) of each scored record.
    is_member : array of bool
        Membership of every record of ``columns``.
    copied, near : array of bool, optional
        Each record copied verbatim into the synthetic table, and flagged as a near-copy by the
        record-linkage scan (the synthetic-table audit, over every training row and holdout record):
        the groups then show them and rank by them.
    scored : array of int, optional
        The records that carry ``scores`` (the attack set: their TPR and AUC); None: all of them.
    """
    member = np.asarray(is_member, dtype=bool)
    at = np.arange(member.size) if scored is None else np.asarray(scored, dtype=np.int64)
    scores = np.asarray(scores, dtype=np.float64)
    copied = None if copied is None else np.asarray(copied, dtype=bool)
    near = None if near is None else np.asarray(near, dtype=bool)
    if column is not None and column not in columns:
        raise InputError(f"--groups: there is no column '{column}'; choose one of {', '.join(columns)}.")
    chosen = column is None
    name, why = _pick_column(columns, scores, member, copied, near, at) if column is None else (column, "given")
    labels = _group_labels(columns[name].reset_index(drop=True))
    labels_at, member_at = labels.to_numpy()[at], member[at]
    rows: list[dict[str, Any]] = []
    for g in labels.unique():
        mask = (labels == g).to_numpy()
        m = labels_at == g
        n_pos, n_neg = int((m & member_at).sum()), int((m & ~member_at).sum())
        point = tpr_at_fpr(scores[m], member_at[m], _FPR) if n_pos and n_neg else None
        rows.append({"group": str(g), "n_members": n_pos, "n_non_members": n_neg, "auc": _auc(scores[m], member_at[m]),
                     "tpr_at_fpr": point, "measurable": bool(point is not None and n_neg >= MIN_NON_MEMBERS),
                     **_copy_counts(mask, member, copied, near)})  # fmt: skip
    rows.sort(key=_rank)
    return GroupRisk(column=name, chosen=chosen, rows=tuple(rows), chosen_by=why)


def _rank(r: dict[str, Any]) -> tuple:
    """Evidence of copies first (strongest first), then measurable TPRs (highest first), then the rest (by AUC)."""
    if r.get("evidence"):
        return (0, min(r["copy_p_value"], r["near_copy_p_value"]), 0.0)
    if r["measurable"]:
        return (1, -r["tpr_at_fpr"].tpr, -np.nan_to_num(r["auc"], nan=0.0))
    return (2, -float(r.get("copies", 0) + r.get("near_copies", 0)), -np.nan_to_num(r["auc"], nan=0.0))
