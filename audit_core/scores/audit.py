"""Score check: the honest evaluation of membership scores made by any other tool.

Many stewards already hold membership scores (ML Privacy Meter, their own attack).
This audit takes a table with one row per (attack, record): ``score`` (higher =
more member-like), ``is_member`` (0/1 ground truth), optionally ``attack`` (several
attacks in one file, compared on one log-ROC) and ``record_id``. For each attack it
reports what the three built-in audits report for theirs:

- the ROC and its AUC (:func:`audit_core.common.roc.roc_curve`);
- the TPR at each target FPR with its 95 % interval, the threshold, the achieved
  FPR and the "supported" flag (at least ``10 / alpha`` non-members), all from
  :func:`audit_core.common.roc.tpr_at_fpr`, the one place those numbers are made;
- the empirical epsilon lower bound (:mod:`audit_core.common.privacy_bound`): with 95 %
  confidence, the process behind the scores is not (eps, delta)-DP for any smaller
  eps, provided the members were chosen at random from the same pool as the
  non-members;
- a per-record table: each record's rank within its attack and the share of
  non-members scoring at least as high (the FPR at which it would be flagged).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from audit_core.common.errors import InputError, columns_sentence
from audit_core.common.privacy_bound import DEFAULT_DELTA, EpsilonBound, epsilon_lower_bound
from audit_core.common.roc import DEFAULT_FPRS, RocCurve, TprAtFpr, _fpr_key, roc_curve, tpr_at_fpr
from audit_core.common.table_files import read_table
from audit_core.common.yes_no import table_row, yes_no_flags, yes_no_note

__all__ = ["RECORD_COLUMNS", "REQUIRED", "AttackCheck", "ScoreCheck", "read_scores", "reversed_p_value", "score_check"]

REQUIRED = ("score", "is_member")
_OPTIONAL = ("attack", "record_id")
_DEFAULT_ATTACK = "attack"
"""Name of the single attack in a file without an ``attack`` column."""
RECORD_COLUMNS = ("attack", "record_id", "score", "is_member", "rank", "fpr_if_flagged")
"""Columns of the per-record table (followed by one ``flagged_at_<fpr>`` column per target FPR)."""

def _membership_note(frame: pd.DataFrame) -> str | None:
    """The sentence saying how a text ``is_member`` column was read (yes/no, true/false), or None for 0/1 or booleans."""
    column = next((c for c in frame.columns if str(c).strip().lower() == "is_member"), None)
    if column is None:
        return None
    return yes_no_note(frame[column], column="is_member", yes="member", no="non-member")


def _membership(values: pd.Series, *, table: str) -> np.ndarray:
    """``is_member`` as bool; anything but 0/1, yes/no or true/false (any case) is refused with the first bad cell."""
    return yes_no_flags(values, column="is_member", table=table, yes="member", no="non-member")


def _scores(values: pd.Series, *, table: str) -> np.ndarray:
    """``score`` as finite float64; text, empty cells, NaN and infinities are refused."""
    if pd.api.types.is_bool_dtype(values.dtype):
        return values.to_numpy(dtype=np.float64)
    if pd.api.types.is_numeric_dtype(values.dtype):
        arr = values.to_numpy(dtype=np.float64)
    else:
        parsed = pd.to_numeric(values.astype("string").str.strip(), errors="coerce")
        text = parsed.isna() & values.notna()
        if text.any():
            i = int(np.flatnonzero(text.to_numpy())[0])
            raise InputError(
                f"Column 'score' must hold numbers, but {table_row(table, i)} is {str(values.iloc[i])!r} "
                f"({int(text.sum())} such rows); fix those cells."
            )
        arr = parsed.to_numpy(dtype=np.float64, na_value=np.nan)
    bad = ~np.isfinite(arr)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        what = "empty or NaN" if np.isnan(arr[i]) else "infinite"
        raise InputError(
            f"Column 'score' must hold finite numbers, but {table_row(table, i)} is {what} ({int(bad.sum())} such rows); "
            "drop those records or give them a score."
        )
    return arr


def _validate_scores(frame: pd.DataFrame, *, name: str = "scores") -> pd.DataFrame:
    """Check a score table and return it in canonical form.

    Returns a DataFrame with ``attack`` (str), ``record_id`` (str; the row number
    when the column is absent), ``score`` (float64) and ``is_member`` (bool), in
    the file's row order. Raises :class:`InputError` (one sentence) for a missing
    column, text / NaN / infinite scores, ``is_member`` other than 0/1, an attack
    with only members or only non-members, or a ``record_id`` repeated within an
    attack (the same record scored twice by one attack).
    """
    if not isinstance(frame, pd.DataFrame):
        raise InputError(f"Table '{name}' is not a table (got {type(frame).__name__}).")
    columns = [str(c) for c in frame.columns]
    lowered = {c.strip().lower(): c for c in columns}
    missing = [c for c in REQUIRED if c not in lowered]
    if missing:
        raise InputError(
            f"Table '{name}' has no column " + " or ".join(f"'{c}'" for c in missing) + "; a score file needs 'score' "
            "(higher = more member-like) and 'is_member' (0 or 1), optionally 'attack' and 'record_id'; "
            + columns_sentence(columns, missing[0])
        )
    col = {k: frame[lowered[k]].reset_index(drop=True) for k in (*REQUIRED, *_OPTIONAL) if k in lowered}
    scores = _scores(col["score"], table=name)
    member = _membership(col["is_member"], table=name)
    if "attack" in col:
        attack = col["attack"]
        if attack.isna().any():
            i = int(np.flatnonzero(attack.isna().to_numpy())[0])
            raise InputError(f"Column 'attack' names the attack of each row, but {table_row(name, i)} is empty; fill it in.")
        attack = attack.map(lambda v: str(int(v)) if isinstance(v, float) and v.is_integer() else str(v).strip())
    else:
        attack = pd.Series([_DEFAULT_ATTACK] * len(scores))
    if "record_id" in col:
        rid = col["record_id"]
        if rid.isna().any():
            i = int(np.flatnonzero(rid.isna().to_numpy())[0])
            raise InputError(f"Column 'record_id' is empty in {table_row(name, i)}; give every row its record's id.")
        rid = rid.map(lambda v: str(int(v)) if isinstance(v, float) and v.is_integer() else str(v).strip())
    else:
        rid = pd.Series(np.arange(len(scores)).astype(str))
    out = pd.DataFrame({"attack": attack.to_numpy(), "record_id": rid.to_numpy(), "score": scores, "is_member": member})
    dup = out.duplicated(["attack", "record_id"], keep="first").to_numpy()
    if dup.any():
        i = int(np.flatnonzero(dup)[0])
        raise InputError(
            f"record_id {out['record_id'].iloc[i]!r} appears more than once for attack {out['attack'].iloc[i]!r} "
            f"({table_row(name, i)}, {int(dup.sum())} repeated rows); each attack scores each record once."
        )
    for attack_name, group in out.groupby("attack", sort=False):
        n_pos = int(group["is_member"].sum())
        if n_pos == 0 or n_pos == len(group):
            only = "members" if n_pos else "non-members"
            raise InputError(
                f"Attack {attack_name!r} has only {only} ({len(group):,} rows); an evaluation needs both members "
                "(is_member = 1) and non-members (is_member = 0)."
            )
    return out


def read_scores(source: Any, *, name: str = "scores") -> pd.DataFrame:
    """Read a CSV or Parquet score file (:func:`audit_core.common.table_files.read_table`) and :func:`_validate_scores` it."""
    return _validate_scores(read_table(source, name=name), name=name)


_REVERSED_ALPHA = 0.025
"""One-sided level at which an attack's scores are called reversed (members ranked *below* non-members
beyond chance): the AUC's two-sided 95 % band would lie wholly below 0.5."""


def reversed_p_value(scores: np.ndarray, is_member: np.ndarray) -> float:
    """One-sided Mann-Whitney p-value that members score *lower* than non-members (AUC < 0.5 beyond chance).

    The U statistic is the AUC times (members x non-members), so this is the rank test of the AUC
    itself: exact for small samples without ties, the normal approximation with tie correction otherwise.
    """
    from scipy.stats import mannwhitneyu

    s, y = np.asarray(scores, dtype=np.float64), np.asarray(is_member, dtype=bool)
    return float(mannwhitneyu(s[y], s[~y], alternative="less").pvalue)


@dataclass(frozen=True)
class AttackCheck:
    """One attack's evaluation: ROC, AUC, TPR at each FPR, the epsilon lower bound.

    ``reversed_p`` is :func:`reversed_p_value`; below :data:`_REVERSED_ALPHA` the scores look reversed
    (lower = more member-like): the check says so and reads them as given, never flipped silently.
    """

    name: str
    curve: RocCurve = field(repr=False)
    tpr_at_fpr: dict[str, TprAtFpr]
    epsilon: EpsilonBound
    reversed_p: float = 1.0

    @property
    def auc(self) -> float:
        return self.curve.auc

    @property
    def reversed(self) -> bool:
        """Members score lower than non-members beyond chance: the scores look reversed."""
        return self.reversed_p < _REVERSED_ALPHA

    def reversed_sentence(self) -> str:
        """What a reversed score means for this check (empty when the scores are not reversed)."""
        if not self.reversed:
            return ""
        return (
            f"Attack '{self.name}' ranks members below non-members (AUC {self.auc:.3f}, one-sided Mann-Whitney "
            f"p = {self.reversed_p:.2g}): its scores look reversed. This check needs higher = more member-like; "
            "its numbers read the scores as given, so negate them (score = -score) and check again."
        )

    def to_json(self) -> dict[str, Any]:
        """``auc``, ``tpr_at_fpr.<fpr> = {tpr, ci_low, ci_high, achieved_fpr, n_neg, supported, ...}``,
        ``epsilon_lower_bound`` (:meth:`audit_core.common.privacy_bound.EpsilonBound.to_json`)."""
        return {
            "auc": self.auc,
            "n_members": self.curve.n_pos,
            "n_non_members": self.curve.n_neg,
            "tpr_at_fpr": {k: t.to_json() for k, t in self.tpr_at_fpr.items()},
            "epsilon_lower_bound": self.epsilon.to_json(),
            "reversed": self.reversed,
            "reversed_p_value": self.reversed_p,
        }


@dataclass(frozen=True)
class ScoreCheck:
    """The score check of every attack in one file, with the settings that made it."""

    attacks: dict[str, AttackCheck]
    records: pd.DataFrame = field(repr=False)
    fprs: tuple[float, ...]
    delta: float
    seed: int
    notes: tuple[str, ...] = ()
    """How the file was read where it was not plain 0/1 (``is_member`` given as yes/no text)."""

    def to_json(self) -> dict[str, Any]:
        """``attacks.<name>`` blocks (see :meth:`AttackCheck.to_json`), the settings and ``notes``."""
        return {
            "audit": "scores",
            "attacks": {name: a.to_json() for name, a in self.attacks.items()},
            "settings": {"fpr": list(self.fprs), "delta": self.delta, "seed": self.seed},
            "n_rows": len(self.records),
            "notes": list(self.notes),
        }


def _records(table: pd.DataFrame, thresholds: dict[str, dict[str, float]], fprs: Sequence[float]) -> pd.DataFrame:
    parts = []
    for name, group in table.groupby("attack", sort=False):
        s = group["score"].to_numpy()
        neg = np.sort(s[~group["is_member"].to_numpy()])
        # share of non-members with score >= s: the FPR at which this record would just be flagged
        fpr_if = (neg.size - np.searchsorted(neg, s, side="left")) / neg.size
        part = group.assign(
            rank=pd.Series(-s, index=group.index).rank(method="min").astype(int).to_numpy(),
            fpr_if_flagged=fpr_if,
        )
        for f in fprs:
            part[f"flagged_at_{_fpr_key(f)}"] = s >= thresholds[name][_fpr_key(f)]
        parts.append(part)
    out = pd.concat(parts, ignore_index=True)
    return out.sort_values(["attack", "rank"], kind="mergesort").reset_index(drop=True)


def score_check(
    table: pd.DataFrame,
    *,
    fprs: Sequence[float] = DEFAULT_FPRS,
    delta: float = DEFAULT_DELTA,
    seed: int = 0,
    name: str = "scores",
) -> ScoreCheck:
    """Evaluate every attack in a score table (see the module docstring).

    Parameters
    ----------
    table : pandas.DataFrame
        As read by :func:`audit_core.common.table_files.read_table`; validated here by :func:`_validate_scores`.
    fprs : sequence of float
        Target false-positive rates, at least one (their bounds are the settings' knobs', audit_core.scores.spec).
    delta : float
        The delta of the (epsilon, delta) statement; 1e-5 by default.
    seed : int
        Seed of the stratified split behind the epsilon bound.

    Raises
    ------
    InputError
        A score table that fails :func:`_validate_scores`, or an FPR or delta the ``--fpr`` / ``--delta``
        knobs refuse (``ScoreSettings``), with the CLI's sentence.
    """
    from audit_core.scores.spec import ScoreSettings

    fprs = tuple(float(f) for f in fprs)
    ScoreSettings.checked(fpr=fprs, delta=delta)
    clean = _validate_scores(table, name=name)
    attacks: dict[str, AttackCheck] = {}
    thresholds: dict[str, dict[str, float]] = {}
    for attack_name, group in clean.groupby("attack", sort=False):
        s, y = group["score"].to_numpy(), group["is_member"].to_numpy()
        at = {_fpr_key(f): tpr_at_fpr(s, y, f) for f in fprs}
        attacks[str(attack_name)] = AttackCheck(
            name=str(attack_name),
            curve=roc_curve(s, y),
            tpr_at_fpr=at,
            epsilon=epsilon_lower_bound(s, y, delta=delta, seed=seed),
            reversed_p=reversed_p_value(s, y),
        )
        thresholds[str(attack_name)] = {k: t.threshold for k, t in at.items()}
    note = _membership_note(table)
    return ScoreCheck(attacks=attacks, records=_records(clean, thresholds, fprs), fprs=fprs, delta=delta, seed=seed,
                      notes=(note,) if note else ())  # fmt: skip
