"""Singling out, linkability and attribute inference for a synthetic table.

Beyond membership, the European guidance on anonymisation (Article 29 Working Party,
Opinion 05/2014) asks three questions of a released table: can a person be **singled
out**, can records about the same person be **linked**, can an attribute be
**inferred**. This module answers them with the attacks of Giomi et al., "A Unified
Framework for Quantifying Privacy Risk in Synthetic Data", PoPETs 2023 (the method of
the ``anonymeter`` package), run on this project's exact Gower nearest neighbours
(:mod:`audit_core.synthetic.distance`).

Every attack is run twice, identically: against the **training** records (targets,
the people the generator saw) and against the **control** records (the holdout, the
same population, never seen). What the synthetic table lets anyone do to people it
never saw is inference from the population, not leakage; what it lets one do *more
often* to its own training people is the risk::

    risk = (rate_train - rate_control) / (1 - rate_control)

the share of the attacks that failed on the control which succeed on the targets
(0: no better than on strangers; 1: every attack that can fail, succeeds). Beside it a
**baseline** attacker who guesses at random; an attack no better than its baseline
proves nothing (the risk is then not evidence of safety either, only of a weak attack).

- **Singling out** (:func:`_singling_out`). The attacker writes predicates from the
  synthetic records over the columns it knows: univariate (a value held by one
  synthetic row, or ``<= min`` / ``>= max`` of a numeric column, or "is missing" when
  one row misses it) and multivariate (a random synthetic row and ``n_cols`` random
  known columns: equality for a category, ``>= v`` above the column's synthetic median
  and ``<= v`` below it for a number), keeping those that hold for exactly one
  distinct synthetic row. Success: the predicate holds for exactly one training
  record. The same predicates are counted on the control. The chance of isolating one
  record falls with the table's size, so the predicates are counted on training and
  control samples of the **same size** (the smaller of the two tables; anonymeter
  instead fits a size correction). Baseline: random predicates (random columns, a
  random synthetic value each, a random comparison). ``disclosure.singling_out`` is
  the multivariate attack; the univariate one is reported inside it.
- **Linkability** (:func:`_linkability`). The attacker holds two disjoint sets of
  columns about the same person (say demographics and finances). For each target it
  finds the ``k`` nearest synthetic rows of each half separately (Gower distance over
  that half only); success: the two neighbour sets share a row. Baseline: two random
  sets of ``k`` synthetic rows.
- **Attribute inference** (:func:`_inference`). For each secret column the attacker
  knows the quasi-identifiers, takes the nearest synthetic row on them and reads its
  secret. Success: the same category (or both missing), or for a numeric secret
  ``|guess - truth| <= tolerance * |truth|`` (default 5 %; anonymeter divides by the
  guess instead). Baseline: the secret of a random synthetic row.

Uncertainty. Each success rate gets a 95 % Wilson score interval from its counts. The
risk is ``1 - (1 - rate_train) / (1 - rate_control)``: one minus a *ratio of two
independent failure proportions*, so its interval is the MOVER-R interval of that
ratio (Donner & Zou 2012, "Closed-form confidence intervals for functions of the
normal mean and standard deviation", SMMR 21:347; Newcombe's method of recovering
variance estimates), built from the two Wilson intervals: both rates' uncertainty is
carried, and the interval is asymmetric where it should be (rates near 0 or 1).
anonymeter propagates the two Wilson errors by the delta method and clips to [0, 1];
its point estimate uses the Wilson centres. Here the point estimate uses the observed
rates and is not clipped (a negative risk means the control was easier); interval
limits below -1 are shown as -1. The coverage is checked by simulation in
``tests/core/test_disclosure.py``.

Singling out's interval: the permutation reference. The singling-out predicates are
all written from the same synthetic rows and counted on the same training and control
records, so they are not independent trials and the binomial (MOVER-R) interval is too
narrow (at true risk 0 it covered 89 % of 200 simulated tables). The training and
control samples are therefore pooled and re-split at random :data:`N_PERMUTATIONS`
times, and the *same* predicates recounted on each re-split: the re-split risks are
what chance alone gives with these predicates and these records. The interval is
``[risk - q97.5, risk - q2.5]`` of those re-split risks, widened to the MOVER-R
interval where that one is wider (``ci_method`` in the JSON says so). A predicate that
holds for more than ``_PERMUTATION_CAP`` (56) pooled records is counted as failing in
every re-split (its chance of isolating exactly one of half the pool is below 1e-15).

Neighbours. ``k = 1`` uses :func:`audit_core.synthetic.distance.nearest_gower` (exact, lowest
row among ties). ``k > 1`` scans the synthetic table in blocks of queries with
:func:`audit_core.synthetic.distance.pairwise_gower` (the same encoding and formula) and keeps
the ``k`` smallest distances, ties to the lower row. The synthetic rows are shuffled
(seeded) before each search, independently for the two linkability halves, so ties
are broken at random: breaking them by row order would link a person's two halves
whenever both tie with the same early row (a planted block of copies at the top of
the table would be "linked" through the ties alone). The Gower ranges
and category codes of each column set are fitted on the real records (training and
control), as for the membership audit.

Seeds: one ``seed`` drives every sample (targets, predicates, baselines); the same
inputs give the same numbers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numba
import numpy as np
import pandas as pd
from scipy import stats

from audit_core.common.errors import InputError
from audit_core.common.runtime import ProgressFn, as_progress
from audit_core.common.tables import ColumnTypes, align_tables, infer_column_types
from audit_core.synthetic import distance as gower

__all__ = [
    "ATTACK_NAMES",
    "DEFAULT_N_ATTACKS",
    "DISCLOSURE_RECORD_COLUMNS",
    "MIN_CONTROL",
    "AttackRisk",
    "DisclosureAudit",
    "DisclosureRoles",
    "add_to_records",
    "audit_disclosure",
    "default_roles",
    "knn_gower",
    "risk_interval",
    "wilson_interval",
]

DEFAULT_N_ATTACKS = 2000
"""Attacks per table (targets and control each); all records when a table is smaller."""
MIN_CONTROL = 20
"""Fewest control (holdout) and training records the attacks accept."""
SINGLING_OUT_COLUMNS = 3
"""Columns in a multivariate singling-out predicate (anonymeter's default)."""
NUMERIC_TOLERANCE = 0.05
"""Relative tolerance within which a numeric secret counts as inferred."""
CONFIDENCE = 0.95
N_PERMUTATIONS = 400
"""Re-splits of training + control behind the singling-out interval."""
_PERMUTATION_CAP = 56  # pooled records a predicate may hold for and still isolate one in a re-split

ATTACK_NAMES: dict[str, str] = {
    "singling_out": "Singling out",
    "linkability": "Linkability",
    "inference": "Attribute inference",
}

#: Columns added to the per-record table (``--records`` CSV, exposed records).
DISCLOSURE_RECORD_COLUMNS: tuple[str, ...] = ("singled_out", "linked", "inferred")

_MAX_TRIES = 200  # candidate singling-out predicates tried per predicate asked for, before giving up
_KNN_CELLS = 4_000_000  # query x synthetic cells per block of the k > 1 neighbour scan

# predicate comparison codes
_NONE, _EQ, _NE, _LT, _LE, _GT, _GE, _ISNA, _NOTNA = range(9)
_OP_TEXT = {_EQ: "==", _NE: "!=", _LT: "<", _LE: "<=", _GT: ">", _GE: ">="}


# ----------------------------------------------------------------------------- intervals
def wilson_interval(k: Any, n: Any, *, confidence: float = CONFIDENCE) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval of a binomial proportion ``k / n`` (vectorised).

    >>> lo, hi = wilson_interval(5, 10)
    >>> round(float(lo), 3), round(float(hi), 3)
    (0.237, 0.763)
    """
    k = np.asarray(k, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    z = stats.norm.ppf(0.5 + confidence / 2)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = k / n
        den = 1 + z * z / n
        centre = (p + z * z / (2 * n)) / den
        half = z * np.sqrt(np.maximum(p * (1 - p) / n + z * z / (4 * n * n), 0)) / den
    lo = np.where(k <= 0, 0.0, np.clip(centre - half, 0, 1))
    hi = np.where(k >= n, 1.0, np.clip(centre + half, 0, 1))
    return lo, hi


def risk_interval(
    k_train: Any, n_train: Any, k_control: Any, n_control: Any, *, confidence: float = CONFIDENCE
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The risk ``(a - c) / (1 - c)`` and its MOVER-R interval (vectorised).

    ``1 - risk = (1 - a) / (1 - c)`` is a ratio of two independent failure
    proportions. With Wilson intervals ``(l1, u1)`` of ``f1 = 1 - a`` and ``(l2, u2)`` of
    ``f2 = 1 - c``, Donner & Zou's (2012) MOVER-R limits of ``f1 / f2`` are::

        L = (f1 f2 - sqrt((f1 f2)^2 - l1 u2 (2 f1 - l1)(2 f2 - u2))) / (u2 (2 f2 - u2))
        U = (f1 f2 + sqrt((f1 f2)^2 - u1 l2 (2 f1 - u1)(2 f2 - l2))) / (l2 (2 f2 - l2))

    and the risk interval is ``[1 - U, 1 - L]``, its lower limit floored at -1. When
    every control attack succeeds (``f2 = 0``) nothing can be measured: risk 0,
    interval [-1, 1].

    Returns
    -------
    risk, ci_low, ci_high : numpy.ndarray
    """
    k1, n1 = np.asarray(k_train, dtype=np.float64), np.asarray(n_train, dtype=np.float64)
    k2, n2 = np.asarray(k_control, dtype=np.float64), np.asarray(n_control, dtype=np.float64)
    f1, f2 = 1 - k1 / n1, 1 - k2 / n2
    l1, u1 = wilson_interval(n1 - k1, n1, confidence=confidence)
    l2, u2 = wilson_interval(n2 - k2, n2, confidence=confidence)
    with np.errstate(invalid="ignore", divide="ignore"):
        prod = f1 * f2
        low_ratio = (prod - np.sqrt(np.maximum(prod**2 - l1 * u2 * (2 * f1 - l1) * (2 * f2 - u2), 0))) / (
            u2 * (2 * f2 - u2)
        )
        high_ratio = (prod + np.sqrt(np.maximum(prod**2 - u1 * l2 * (2 * f1 - u1) * (2 * f2 - l2), 0))) / (
            l2 * (2 * f2 - l2)
        )
        risk = 1 - f1 / f2
    dead = f2 <= 0
    risk = np.where(dead, 0.0, risk)
    ci_low = np.where(dead, -1.0, np.maximum(1 - high_ratio, -1.0))
    ci_high = np.where(dead, 1.0, np.minimum(1 - low_ratio, 1.0))
    ci_low = np.where(np.isnan(ci_low), -1.0, ci_low)
    return risk, np.minimum(ci_low, risk), np.maximum(ci_high, np.maximum(risk, ci_low))


# ----------------------------------------------------------------------------- results
@dataclass(frozen=True)
class AttackRisk:
    """One attack's outcome: success counts on targets, control and baseline, and the risk.

    Attributes
    ----------
    attack : str
        "singling_out", "singling_out_univariate", "linkability" or "inference".
    column : str or None
        The secret column (inference only).
    n_attacks, n_success : int
        Attacks on the training records and how many succeeded.
    n_control, control_success : int
        The same on the control (holdout) records.
    n_baseline, baseline_success : int
        The random-guess attacker's attacks on the training records and successes.
    risk, ci_low, ci_high : float
        ``(rate_train - rate_control) / (1 - rate_control)`` and its 95 % MOVER-R interval
        (for singling out widened to the permutation reference, see the module docstring).
    note : str
        Why the attack is weak or could not be measured, if so.
    ci_method : str
        How the interval was computed.
    """

    attack: str
    column: str | None
    n_attacks: int
    n_success: int
    n_control: int
    control_success: int
    n_baseline: int
    baseline_success: int
    risk: float
    ci_low: float
    ci_high: float
    note: str = ""
    ci_method: str = "MOVER-R (Wilson)"

    @classmethod
    def from_counts(
        cls,
        attack: str,
        *,
        n_attacks: int,
        n_success: int,
        n_control: int,
        control_success: int,
        n_baseline: int,
        baseline_success: int,
        column: str | None = None,
        note: str = "",
    ) -> AttackRisk:
        """Compute the risk and its interval from the success counts."""
        if n_attacks == 0 or n_control == 0:
            return cls(attack, column, n_attacks, n_success, n_control, control_success, n_baseline,
                       baseline_success, 0.0, -1.0, 1.0, note or "no attack could be made")  # fmt: skip
        risk, lo, hi = risk_interval(n_success, n_attacks, control_success, n_control)
        return cls(attack, column, int(n_attacks), int(n_success), int(n_control), int(control_success),
                   int(n_baseline), int(baseline_success), float(risk), float(lo), float(hi), note)  # fmt: skip

    @property
    def attack_rate(self) -> float:
        """Share of the attacks on training records that succeeded."""
        return self.n_success / self.n_attacks if self.n_attacks else 0.0

    @property
    def control_rate(self) -> float:
        """Share of the attacks on control records that succeeded."""
        return self.control_success / self.n_control if self.n_control else 0.0

    @property
    def baseline_rate(self) -> float:
        """Share of the random guesses that succeeded."""
        return self.baseline_success / self.n_baseline if self.n_baseline else 0.0

    def rate_ci(self, which: str) -> tuple[float, float]:
        """95 % Wilson interval of ``"attack"``, ``"control"`` or ``"baseline"`` rate."""
        k, n = {
            "attack": (self.n_success, self.n_attacks),
            "control": (self.control_success, self.n_control),
            "baseline": (self.baseline_success, self.n_baseline),
        }[which]
        if n == 0:
            return 0.0, 1.0
        lo, hi = wilson_interval(k, n)
        return float(lo), float(hi)

    @property
    def beats_baseline(self) -> bool:
        """Whether the attack succeeded on the targets more often than random guessing (Wilson intervals apart)."""
        return self.n_attacks > 0 and self.rate_ci("attack")[0] > self.rate_ci("baseline")[1]

    @property
    def significant(self) -> bool:
        """Whether the risk's interval excludes 0."""
        return self.ci_low > 0

    @property
    def reading(self) -> str:
        """One line for the checklist."""
        if self.note:
            return self.note[0].upper() + self.note[1:] + "."
        pct = f"{100 * self.attack_rate:.1f} % of attacks on training records vs {100 * self.control_rate:.1f} % on the control"
        if not self.beats_baseline:
            return f"No better than random guessing ({pct}); proves nothing either way."
        if self.significant:
            return f"Succeeds more often on training records ({pct}): the table discloses them."
        if self.risk < 0:
            return (f"Worse on the training records than on the control ({pct}; a negative risk): no evidence of risk, "
                    "and not extra protection either.")  # fmt: skip
        return f"No more success on training records than on strangers ({pct})."

    def to_json(self) -> dict[str, Any]:
        """``{risk, ci_low, ci_high, attack_rate, baseline_rate, control_rate, n_attacks, ...}``."""
        a_lo, a_hi = self.rate_ci("attack")
        c_lo, c_hi = self.rate_ci("control")
        b_lo, b_hi = self.rate_ci("baseline")
        out = {
            "risk": self.risk,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "attack_rate": self.attack_rate,
            "baseline_rate": self.baseline_rate,
            "control_rate": self.control_rate,
            "n_attacks": self.n_attacks,
            "n_control": self.n_control,
            "n_baseline": self.n_baseline,
            "n_success": self.n_success,
            "control_success": self.control_success,
            "baseline_success": self.baseline_success,
            "attack_rate_ci": [a_lo, a_hi],
            "control_rate_ci": [c_lo, c_hi],
            "baseline_rate_ci": [b_lo, b_hi],
            "beats_baseline": self.beats_baseline,
            "reading": self.reading,
            "ci_method": self.ci_method,
        }
        if self.column is not None:
            out["column"] = self.column
        return out


@dataclass(frozen=True)
class DisclosureRoles:
    """What the attacker knows, set by the steward.

    Attributes
    ----------
    known : tuple of str
        Quasi-identifiers the attacker knows (singling-out predicates, inference).
    link_a, link_b : tuple of str
        The two disjoint column sets of the linkability attack (both empty: no linkability).
    secrets : tuple of str
        Columns the inference attack tries to guess, one result each.
    """

    known: tuple[str, ...]
    link_a: tuple[str, ...]
    link_b: tuple[str, ...]
    secrets: tuple[str, ...]

    def to_json(self) -> dict[str, list[str]]:
        return {"known": list(self.known), "link_a": list(self.link_a), "link_b": list(self.link_b),
                "secrets": list(self.secrets)}  # fmt: skip


@dataclass(frozen=True)
class DisclosureAudit:
    """Result of :func:`audit_disclosure`.

    Attributes
    ----------
    singling_out : AttackRisk
        Multivariate singling out.
    singling_out_univariate : AttackRisk
        Univariate singling out.
    linkability : AttackRisk or None
        None when no linkability split was given and none could be made.
    inference : dict of str to AttackRisk
        One per secret column.
    records : pandas.DataFrame
        One row per attacked record: ``source`` ("train" or "holdout"), ``row`` (of that
        input table) and :data:`DISCLOSURE_RECORD_COLUMNS`: ``singled_out`` (a successful
        predicate isolates it; missing when the record was not in the evaluated sample),
        ``linked``, ``inferred`` (the secrets guessed right, ";"-separated).
    roles : DisclosureRoles
    settings : dict
        n_attacks, link_k, n_cols, tolerance, seed.
    """

    singling_out: AttackRisk
    singling_out_univariate: AttackRisk
    linkability: AttackRisk | None
    inference: dict[str, AttackRisk]
    records: pd.DataFrame = field(repr=False)
    roles: DisclosureRoles
    settings: dict[str, Any]

    def results(self) -> list[tuple[str, AttackRisk]]:
        """Every attack as ``(key, result)``, keys as in the JSON (``inference.<column>``)."""
        out = [("singling_out", self.singling_out), ("singling_out.univariate", self.singling_out_univariate)]
        if self.linkability is not None:
            out.append(("linkability", self.linkability))
        out += [(f"inference.{c}", r) for c, r in self.inference.items()]
        return out

    def worst(self) -> tuple[str, AttackRisk]:
        """The attack with the highest lower interval limit (the strongest evidence of disclosure)."""
        return max(self.results(), key=lambda kv: (kv[1].ci_low, kv[1].risk))

    def to_json(self) -> dict[str, Any]:
        """``singling_out`` (with ``univariate`` inside), ``linkability``, ``inference.<column>``, roles, settings."""
        single = self.singling_out.to_json()
        single["univariate"] = self.singling_out_univariate.to_json()
        out: dict[str, Any] = {"singling_out": single}
        if self.linkability is not None:
            out["linkability"] = self.linkability.to_json()
        out["inference"] = {c: r.to_json() for c, r in self.inference.items()}
        out["roles"] = self.roles.to_json()
        out["settings"] = dict(self.settings)
        out["method"] = "Giomi et al., PoPETs 2023 (anonymeter), on exact Gower nearest neighbours"
        return out


# ----------------------------------------------------------------------------- roles
def default_roles(
    columns: Sequence[str], *, secrets: Sequence[str] | None = None, known: Sequence[str] | None = None
) -> DisclosureRoles:
    """Sensible roles for a table whose compared columns are ``columns`` (in table order).

    The secret is the last column unless given (often the label: income, diagnosis); the
    attacker knows every other column unless told otherwise; the linkability halves are
    the first and second half of the known columns (none when fewer than two are known).
    """
    columns = tuple(columns)
    if secrets is None and len(columns) < 2:
        raise InputError("The disclosure attacks need at least two compared columns: one known, one secret.")
    secrets = columns[-1:] if secrets is None else tuple(secrets)
    known = tuple(c for c in columns if c not in secrets) if known is None else tuple(known)
    half = (len(known) + 1) // 2
    link_a, link_b = (known[:half], known[half:]) if len(known) >= 2 else ((), ())
    return DisclosureRoles(known=known, link_a=link_a, link_b=link_b, secrets=secrets)


def _quote(names: Sequence[str]) -> str:
    return ", ".join(f"'{c}'" for c in names)


def check_roles(roles: DisclosureRoles, columns: Sequence[str]) -> None:
    """Refuse impossible roles in one sentence."""
    if not roles.known:
        raise InputError("The attacker knows no column; name at least one quasi-identifier (--known).")
    if not roles.secrets:
        raise InputError("No secret column is marked; name at least one column to infer (--secrets).")
    for label, names in (("known", roles.known), ("linkability", roles.link_a + roles.link_b), ("secret", roles.secrets)):
        unknown = [c for c in names if c not in columns]
        if unknown:
            raise InputError(f"The {label} column(s) {_quote(unknown)} are not compared columns of the tables.")
        if len(set(names)) != len(names) and label != "linkability":
            raise InputError(f"A {label} column is named twice; name each once.")
    both = [c for c in roles.secrets if c in roles.known]
    if both:
        raise InputError(f"Column(s) {_quote(both)} are both secret and known to the attacker; a secret cannot be known.")
    if bool(roles.link_a) != bool(roles.link_b):
        raise InputError("The linkability split has an empty side; give columns to both halves (--link-a and --link-b).")
    shared = [c for c in roles.link_a if c in roles.link_b]
    if shared:
        raise InputError(f"Column(s) {_quote(shared)} are on both sides of the linkability split; the halves must be disjoint.")


# ----------------------------------------------------------------------------- neighbours
def _encoding(frames_real: Sequence[pd.DataFrame], types: ColumnTypes, columns: Sequence[str]) -> gower.GowerEncoding:
    sub = ColumnTypes(
        numeric=tuple(c for c in types.numeric if c in columns),
        categorical=tuple(c for c in types.categorical if c in columns),
    )
    return gower.encode_for_gower(frames_real, types=sub)


def knn_gower(query: gower.EncodedTable, reference: gower.EncodedTable, k: int) -> np.ndarray:
    """Rows of the ``k`` nearest reference records of each query, int64 ``[n_query, k]``.

    ``k = 1`` is :func:`audit_core.synthetic.distance.nearest_gower`; for ``k > 1`` the reference
    is scanned in blocks of queries with :func:`audit_core.synthetic.distance.pairwise_gower` (same
    formula, float64), keeping the ``k`` smallest distances, ties to the lower row.
    """
    if k <= 1:
        return gower.nearest_gower(query, reference).index[:, None]
    k = min(int(k), reference.n_rows)
    out = np.empty((query.n_rows, k), dtype=np.int64)
    step = max(1, _KNN_CELLS // max(reference.n_rows, 1))
    for q0 in range(0, query.n_rows, step):
        d = gower.pairwise_gower(query.rows(np.arange(q0, min(q0 + step, query.n_rows))), reference)
        part = np.argpartition(d, k - 1, axis=1)[:, :k]
        kth = np.take_along_axis(d, part, axis=1).max(axis=1, keepdims=True)
        for i in range(d.shape[0]):  # all rows within the k-th distance, lowest rows first among ties
            cand = np.flatnonzero(d[i] <= kth[i, 0])
            order = np.lexsort((cand, d[i, cand]))
            out[q0 + i] = cand[order[:k]]
    return out


# ----------------------------------------------------------------------------- singling out
@dataclass(frozen=True)
class _Matrix:
    """A table as float64 ``[n, p]``: numbers as they are, categories as shared codes, NaN missing."""

    matrix: np.ndarray
    numeric: np.ndarray  # bool [p]


def _matrices(frames: dict[str, pd.DataFrame], columns: Sequence[str], types: ColumnTypes) -> dict[str, _Matrix]:
    names = list(frames)
    is_num = np.array([c in types.numeric for c in columns])
    out = {n: np.empty((len(frames[n]), len(columns))) for n in names}
    for j, col in enumerate(columns):
        if is_num[j]:
            for n in names:
                out[n][:, j] = frames[n][col].to_numpy(dtype=np.float64)
        else:
            pooled = pd.concat([frames[n][col] for n in names], ignore_index=True)
            codes, _ = pd.factorize(pooled, use_na_sentinel=True)
            codes = np.where(codes < 0, np.nan, codes.astype(np.float64))
            start = 0
            for n in names:
                out[n][:, j] = codes[start : start + len(frames[n])]
                start += len(frames[n])
    return {n: _Matrix(out[n], is_num) for n in names}


@numba.njit(inline="always", cache=gower._numba_cache_ok())
def _holds(xt, cols, ops, vals, q, r, width):  # pragma: no cover - compiled by numba
    """Whether predicate ``q`` holds for row ``r`` (op codes: 1 ==, 2 != (not missing), 3 <, 4 <=, 5 >, 6 >=,
    7 missing, else present; 0 unused)."""
    for t in range(width):
        op = ops[q, t]
        if op == 0:
            continue
        x = xt[cols[q, t], r]
        v = vals[q, t]
        if op == 1:
            ok = x == v
        elif op == 2:
            ok = x == x and x != v
        elif op == 3:
            ok = x < v
        elif op == 4:
            ok = x <= v
        elif op == 5:
            ok = x > v
        elif op == 6:
            ok = x >= v
        elif op == 7:
            ok = x != x
        else:
            ok = x == x
        if not ok:
            return False
    return True


@numba.njit(parallel=True, cache=gower._numba_cache_ok())
def _count_kernel(xt, cols, ops, vals, stop):  # pragma: no cover - compiled by numba
    """Rows each predicate holds for, counted up to ``stop``; and the first such row."""
    n_pred, width = cols.shape
    n = xt.shape[1]
    counts = np.zeros(n_pred, dtype=np.int64)
    first = np.full(n_pred, -1, dtype=np.int64)
    for q in numba.prange(n_pred):
        c = 0
        for r in range(n):
            if _holds(xt, cols, ops, vals, q, r, width):
                if c == 0:
                    first[q] = r
                c += 1
                if c >= stop:
                    break
        counts[q] = c
    return counts, first


@numba.njit(parallel=True, cache=gower._numba_cache_ok())
def _match_kernel(xt, cols, ops, vals, cap):  # pragma: no cover - compiled by numba
    """The first ``cap`` rows each predicate holds for (-1 beyond), and how many it holds for, counted up to ``cap + 1``."""
    n_pred, width = cols.shape
    n = xt.shape[1]
    rows = np.full((n_pred, cap), -1, dtype=np.int64)
    counts = np.zeros(n_pred, dtype=np.int64)
    for q in numba.prange(n_pred):
        c = 0
        for r in range(n):
            if _holds(xt, cols, ops, vals, q, r, width):
                if c < cap:
                    rows[q, c] = r
                c += 1
                if c > cap:
                    break
        counts[q] = c
    return rows, counts


def _permutation_risks(
    xt: np.ndarray, xc: np.ndarray, cols: np.ndarray, ops: np.ndarray, vals: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """The risk of the same predicates on :data:`N_PERMUTATIONS` random re-splits of training + control (pooled)."""
    pooled = np.ascontiguousarray(np.concatenate([xt, xc], axis=1))
    m, n_pred = xt.shape[1], cols.shape[0]
    with gower._NUMBA_LOCK:
        rows, counts = _match_kernel(
            pooled,
            np.ascontiguousarray(cols, dtype=np.int64),
            np.ascontiguousarray(ops, dtype=np.int64),
            np.ascontiguousarray(vals, dtype=np.float64),
            _PERMUTATION_CAP,
        )
    usable = counts <= _PERMUTATION_CAP
    rows, counts = rows[usable], counts[usable]
    valid = rows >= 0
    safe = np.where(valid, rows, 0)
    hits_a, hits_b = np.empty(N_PERMUTATIONS, np.int64), np.empty(N_PERMUTATIONS, np.int64)
    batch = max(1, 2_000_000 // max(rows.size, 1))
    for start in range(0, N_PERMUTATIONS, batch):
        b = min(batch, N_PERMUTATIONS - start)
        in_a = np.argsort(rng.random((b, pooled.shape[1])), axis=1) < m  # each row: a random half of the pool
        k_a = (in_a[:, safe] & valid).sum(axis=2)  # [b, predicates]
        hits_a[start : start + b] = (k_a == 1).sum(axis=1)
        hits_b[start : start + b] = (counts - k_a == 1).sum(axis=1)
    return risk_interval(hits_a, n_pred, hits_b, n_pred)[0]


def _with_permutation_interval(risk: AttackRisk, reference: np.ndarray) -> AttackRisk:
    """``risk`` with its interval widened to ``[risk - q97.5, risk - q2.5]`` of the re-split risks."""
    lo_q = np.quantile(reference, (1 - CONFIDENCE) / 2, method="lower")  # ties at the quantile stay inside
    hi_q = np.quantile(reference, (1 + CONFIDENCE) / 2, method="higher")
    low, high = max(risk.risk - float(hi_q), -1.0), min(risk.risk - float(lo_q), 1.0)
    method = f"permutation reference ({N_PERMUTATIONS} re-splits of training + control)"
    if risk.ci_low < low or risk.ci_high > high:
        method += ", widened to MOVER-R"
    return replace(risk, ci_low=min(low, risk.ci_low), ci_high=max(high, risk.ci_high), ci_method=method)


def _counts(xt: np.ndarray, cols: np.ndarray, ops: np.ndarray, vals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each predicate (a conjunction of ``(column, comparison, value)``) on the table ``xt`` (``[p, n]``):
    how many rows it holds for (counted up to 2: only "exactly one" matters) and the first of them."""
    if cols.shape[0] == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    with gower._NUMBA_LOCK:
        return _count_kernel(
            xt,
            np.ascontiguousarray(cols, dtype=np.int64),
            np.ascontiguousarray(ops, dtype=np.int64),
            np.ascontiguousarray(vals, dtype=np.float64),
            2,
        )


def _univariate_predicates(syn: _Matrix, rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    cols, ops, vals = [], [], []
    x = syn.matrix
    for j in range(x.shape[1]):
        column = x[:, j]
        nan = np.isnan(column)
        if nan.sum() == 1:
            cols.append(j), ops.append(_ISNA), vals.append(np.nan)
        if (~nan).any():
            if syn.numeric[j]:
                cols += [j, j]
                ops += [_LE, _GE]
                vals += [np.nanmin(column), np.nanmax(column)]
            uniq, cnt = np.unique(column[~nan], return_counts=True)
            rare = uniq[cnt == 1]
            cols += [j] * rare.size
            ops += [_EQ] * rare.size
            vals += rare.tolist()
    c, o, v = np.array(cols, dtype=np.int64)[:, None], np.array(ops)[:, None], np.array(vals, dtype=np.float64)[:, None]
    order = rng.permutation(c.shape[0])
    c, o, v = c[order], o[order], v[order]
    keep = _counts(np.ascontiguousarray(x.T), c, o, v)[0] == 1
    return c[keep][:n], o[keep][:n], v[keep][:n]


def _multivariate_predicates(
    syn: _Matrix, rng: np.random.Generator, n: int, n_cols: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    x = syn.matrix
    p = x.shape[1]
    n_cols = min(n_cols, p)
    medians = np.zeros(p)
    for j in np.flatnonzero(syn.numeric):
        finite = x[:, j][~np.isnan(x[:, j])]
        medians[j] = np.median(finite) if finite.size else 0.0
    xt = np.ascontiguousarray(x.T)
    found: dict[bytes, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    batch = max(256, min(4 * n, 4096))
    for _ in range(max(1, _MAX_TRIES * n // batch)):
        rows = rng.integers(0, x.shape[0], size=batch)
        cols = np.argsort(rng.random((batch, p)), axis=1)[:, :n_cols]
        cols.sort(axis=1)
        vals = x[rows[:, None], cols]
        numeric = syn.numeric[cols]
        ops = np.where(numeric, np.where(vals > medians[cols], _GE, _LE), _EQ)
        ops = np.where(np.isnan(vals), _ISNA, ops)
        counts, _ = _counts(xt, cols, ops, vals)
        for i in np.flatnonzero(counts == 1):
            key = cols[i].tobytes() + ops[i].tobytes() + np.nan_to_num(vals[i], nan=-1e300).tobytes()
            if key not in found:
                found[key] = (cols[i], ops[i], vals[i])
                if len(found) >= n:
                    break
        if len(found) >= n:
            break
    if not found:
        return np.zeros((0, n_cols), np.int64), np.zeros((0, n_cols), np.int64), np.zeros((0, n_cols))
    c, o, v = (np.array(z) for z in zip(*found.values(), strict=True))
    return c, o, v


def _random_predicates(syn: _Matrix, rng: np.random.Generator, n: int, n_cols: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The baseline: random columns, a random synthetic value each, a random comparison."""
    x = syn.matrix
    p = x.shape[1]
    n_cols = min(n_cols, p)
    cols = np.argsort(rng.random((n, p)), axis=1)[:, :n_cols]
    vals = np.empty(cols.shape)
    uniques = [np.unique(x[:, j]) for j in range(p)]  # NaN (if any) sorts last, once
    for j in range(p):
        at = cols == j
        vals[at] = uniques[j][rng.integers(0, uniques[j].size, size=int(at.sum()))]
    numeric = syn.numeric[cols]
    ops = np.where(numeric, rng.choice([_EQ, _NE, _LT, _LE, _GT, _GE], size=cols.shape), rng.choice([_EQ, _NE], size=cols.shape))
    nan = np.isnan(vals)
    ops = np.where(nan, np.where(ops == _EQ, _ISNA, _NOTNA), ops)
    return cols, ops, vals


def _singling_out(
    mats: dict[str, _Matrix], rng: np.random.Generator, *, n_attacks: int, n_cols: int
) -> tuple[AttackRisk, AttackRisk, np.ndarray, np.ndarray]:
    """Both singling-out attacks; returns the two risks and the train/control rows isolated (input rows)."""
    syn = mats["synthetic"]
    _, keep = np.unique(syn.matrix, axis=0, return_index=True)  # NaN rows may stay apart: harmless
    syn = _Matrix(syn.matrix[np.sort(keep)], syn.numeric)
    m = min(mats["train"].matrix.shape[0], mats["holdout"].matrix.shape[0])
    train_rows = np.sort(rng.choice(mats["train"].matrix.shape[0], size=m, replace=False))
    control_rows = np.sort(rng.choice(mats["holdout"].matrix.shape[0], size=m, replace=False))
    xt = np.ascontiguousarray(mats["train"].matrix[train_rows].T)
    xc = np.ascontiguousarray(mats["holdout"].matrix[control_rows].T)
    out = []
    hit_train: set[int] = set()
    hit_control: set[int] = set()
    for attack, (c, o, v), width in (
        ("singling_out", _multivariate_predicates(syn, rng, n_attacks, n_cols), n_cols),
        ("singling_out_univariate", _univariate_predicates(syn, rng, n_attacks), 1),
    ):
        k_t, first_t = _counts(xt, c, o, v)
        k_c, first_c = _counts(xc, c, o, v)
        bc, bo, bv = _random_predicates(syn, rng, max(c.shape[0], 1), width)
        k_b, _ = _counts(xt, bc, bo, bv)
        hit_train |= set(train_rows[first_t[k_t == 1]].tolist())
        hit_control |= set(control_rows[first_c[k_c == 1]].tolist())
        note = "" if c.shape[0] else "the synthetic table has no row that a predicate isolates"
        risk = AttackRisk.from_counts(
            attack, n_attacks=c.shape[0], n_success=int((k_t == 1).sum()), n_control=c.shape[0],
            control_success=int((k_c == 1).sum()), n_baseline=bc.shape[0], baseline_success=int((k_b == 1).sum()),
            note=note,
        )  # fmt: skip
        if c.shape[0]:
            reference = _permutation_risks(xt, xc, c, o, v, rng.spawn(1)[0])  # spawned: the other draws stay as they were
            risk = _with_permutation_interval(risk, reference)
        out.append(risk)
    evaluated = (train_rows, control_rows)
    flags_t = np.isin(evaluated[0], list(hit_train))
    flags_c = np.isin(evaluated[1], list(hit_control))
    return out[0], out[1], np.stack([evaluated[0], flags_t]), np.stack([evaluated[1], flags_c])


# ----------------------------------------------------------------------------- the audit
def _check_settings(n_attacks: int, link_k: int, n_cols: int, tolerance: float) -> None:
    from audit_core.common.limits import DISCLOSURE_ATTACKS, LINK_K

    DISCLOSURE_ATTACKS.check(n_attacks)
    LINK_K.check(link_k)
    if not 1 <= int(n_cols) <= 10:
        raise InputError(f"The singling-out predicates must use 1 to 10 columns; got {n_cols!r}.")
    if not 0 <= float(tolerance) <= 1:
        raise InputError(f"The numeric tolerance must be from 0 to 1; got {tolerance!r}.")


def _aligned_inputs(
    train: pd.DataFrame,
    holdout: pd.DataFrame,
    synthetic: pd.DataFrame,
    types: ColumnTypes | None,
    roles: DisclosureRoles | None,
) -> tuple[dict[str, pd.DataFrame], ColumnTypes, DisclosureRoles]:
    """The aligned tables, the column types used and the checked roles (:func:`default_roles` when None).

    Default roles follow the training table's column order, without the columns alignment dropped.
    """
    if types is None:
        types = infer_column_types(train)
    order = [c for c in train.columns if c in types.columns]
    aligned = align_tables(
        {"train": train, "holdout": holdout, "synthetic": synthetic},
        types=types,
        min_rows={"train": MIN_CONTROL, "holdout": MIN_CONTROL, "synthetic": 1},
    )
    types = aligned.types
    order = [c for c in order if c in types.columns]
    roles = default_roles(order) if roles is None else roles
    check_roles(roles, order)
    return aligned.frames, types, roles


def _attacked(frames: dict[str, pd.DataFrame], targets: np.ndarray, controls: np.ndarray) -> pd.DataFrame:
    """The target rows of the training table followed by the control rows of the holdout, as one table."""
    return pd.concat([frames["train"].iloc[targets], frames["holdout"].iloc[controls]], ignore_index=True)


def _linkability(
    frames: dict[str, pd.DataFrame],
    types: ColumnTypes,
    roles: DisclosureRoles,
    targets: np.ndarray,
    controls: np.ndarray,
    link_k: int,
    rng: np.random.Generator,
) -> tuple[AttackRisk, np.ndarray, np.ndarray]:
    """The linkability attack; returns its risk and which targets and controls were linked."""
    real = [frames["train"], frames["holdout"]]
    syn = frames["synthetic"]
    n_syn = len(syn)
    both = _attacked(frames, targets, controls)
    nn = []
    for half in (roles.link_a, roles.link_b):  # targets and controls in one scan per half
        enc = _encoding(real, types, half)
        shuffled = rng.permutation(n_syn)  # ties broken at random, independently in each half
        nn.append(shuffled[knn_gower(enc.transform(both), enc.transform(syn.iloc[shuffled]), link_k)])
    hit = (nn[0][:, :, None] == nn[1][:, None, :]).any(axis=(1, 2))
    linked_t, linked_c = hit[: targets.size], hit[targets.size :]
    k = min(link_k, n_syn)
    rand_a, rand_b = _random_sets(rng, targets.size, n_syn, k), _random_sets(rng, targets.size, n_syn, k)
    base = (rand_a[:, :, None] == rand_b[:, None, :]).any(axis=(1, 2))
    risk = AttackRisk.from_counts(
        "linkability", n_attacks=targets.size, n_success=int(linked_t.sum()), n_control=controls.size,
        control_success=int(linked_c.sum()), n_baseline=targets.size, baseline_success=int(base.sum()),
    )  # fmt: skip
    return risk, linked_t, linked_c


def _inference(
    frames: dict[str, pd.DataFrame],
    types: ColumnTypes,
    roles: DisclosureRoles,
    targets: np.ndarray,
    controls: np.ndarray,
    tolerance: float,
    rng: np.random.Generator,
) -> tuple[dict[str, AttackRisk], dict[str, list[list[str]]]]:
    """The attribute-inference attack on every secret column.

    Returns
    -------
    inference : dict of str to AttackRisk
        One result per secret column.
    inferred : dict of str to list of list of str
        For ``"train"`` (each target) and ``"holdout"`` (each control), the secrets guessed right.
    """
    real = [frames["train"], frames["holdout"]]
    syn = frames["synthetic"]
    n_syn = len(syn)
    enc = _encoding(real, types, roles.known)
    shuffled = rng.permutation(n_syn)  # ties broken at random, not by the synthetic table's row order
    both = _attacked(frames, targets, controls)
    nearest = shuffled[gower.nearest_gower(enc.transform(both), enc.transform(syn.iloc[shuffled])).index]
    guesses = {"train": nearest[: targets.size], "holdout": nearest[targets.size :]}
    random_rows = rng.integers(0, n_syn, size=targets.size)
    inference: dict[str, AttackRisk] = {}
    inferred: dict[str, list[list[str]]] = {"train": [[] for _ in targets], "holdout": [[] for _ in controls]}
    for secret in roles.secrets:
        numeric = secret in types.numeric
        guess_values = syn[secret].to_numpy()
        ok = {}
        for name, rows in (("train", targets), ("holdout", controls)):
            ok[name] = _correct(guess_values[guesses[name]], frames[name][secret].to_numpy()[rows], numeric, tolerance)
            for i in np.flatnonzero(ok[name]):
                inferred[name][i].append(secret)
        base = _correct(guess_values[random_rows], frames["train"][secret].to_numpy()[targets], numeric, tolerance)
        inference[secret] = AttackRisk.from_counts(
            "inference", column=secret, n_attacks=targets.size, n_success=int(ok["train"].sum()),
            n_control=controls.size, control_success=int(ok["holdout"].sum()), n_baseline=targets.size,
            baseline_success=int(base.sum()),
        )  # fmt: skip
    return inference, inferred


def audit_disclosure(
    train: pd.DataFrame,
    holdout: pd.DataFrame,
    synthetic: pd.DataFrame,
    *,
    types: ColumnTypes | None = None,
    roles: DisclosureRoles | None = None,
    n_attacks: int = DEFAULT_N_ATTACKS,
    link_k: int = 1,
    n_cols: int = SINGLING_OUT_COLUMNS,
    tolerance: float = NUMERIC_TOLERANCE,
    seed: int = 0,
    progress: ProgressFn | None = None,
) -> DisclosureAudit:
    """Singling out, linkability and attribute inference risks of a synthetic table.

    Parameters
    ----------
    train : pandas.DataFrame
        The generator's training table (the targets).
    holdout : pandas.DataFrame
        Records of the same population the generator never saw (the control).
    synthetic : pandas.DataFrame
        The table to release.
    types : ColumnTypes, optional
        Column types; inferred from ``train`` when None.
    roles : DisclosureRoles, optional
        The attacker's knowledge; :func:`default_roles` when None.
    n_attacks : int
        Attacks on each of training and control (all records when a table is smaller);
        singling-out predicates generated.
    link_k : int
        Neighbours per half in the linkability attack.
    n_cols : int
        Columns per multivariate singling-out predicate.
    tolerance : float
        Relative tolerance for numeric secrets.
    seed : int
        Drives every sample.
    progress : ProgressFn, optional

    Returns
    -------
    DisclosureAudit
    """
    _check_settings(n_attacks, link_k, n_cols, tolerance)
    report = as_progress(progress)
    frames, types, roles = _aligned_inputs(train, holdout, synthetic, types, roles)
    n_train, n_control = len(frames["train"]), len(frames["holdout"])
    rng = np.random.default_rng(seed)

    report(0.0, "singling out")
    mats = _matrices(frames, list(roles.known), types)
    single, single_uni, so_train, so_control = _singling_out(mats, rng, n_attacks=int(n_attacks), n_cols=int(n_cols))

    targets = np.sort(rng.choice(n_train, size=min(int(n_attacks), n_train), replace=False))
    controls = np.sort(rng.choice(n_control, size=min(int(n_attacks), n_control), replace=False))
    linkability, linked_t, linked_c = None, None, None
    if roles.link_a:
        report(0.4, "linkability")
        linkability, linked_t, linked_c = _linkability(frames, types, roles, targets, controls, int(link_k), rng)

    report(0.7, "attribute inference")
    inference, inferred = _inference(frames, types, roles, targets, controls, tolerance, rng)
    records = _records(so_train, so_control, targets, controls, linked_t, linked_c, inferred)
    report(1.0, "disclosure attacks done")
    settings = {"n_attacks": int(n_attacks), "link_k": int(link_k), "n_cols": int(n_cols), "tolerance": float(tolerance),
                "seed": int(seed), "confidence": CONFIDENCE}  # fmt: skip
    return DisclosureAudit(single, single_uni, linkability, inference, records, roles, settings)


def _random_sets(rng: np.random.Generator, n: int, m: int, k: int) -> np.ndarray:
    """``n`` random sets of ``k`` distinct rows out of ``m`` (k is small next to m)."""
    out = rng.integers(0, m, size=(n, k))
    for i in range(n):
        while np.unique(out[i]).size < k:
            out[i] = rng.choice(m, size=k, replace=False)
    return out


def _correct(guess: np.ndarray, truth: np.ndarray, numeric: bool, tolerance: float) -> np.ndarray:
    """Whether each guess is the secret: same category, or within ``tolerance * |truth|`` for numbers; both missing counts."""
    g, t = pd.isna(guess), pd.isna(truth)
    both = g & t
    if numeric:
        gv = np.asarray(guess, dtype=np.float64)
        tv = np.asarray(truth, dtype=np.float64)
        with np.errstate(invalid="ignore"):
            hit = np.abs(gv - tv) <= tolerance * np.abs(tv)
    else:
        hit = (~g) & (~t) & (np.asarray(guess, dtype=object) == np.asarray(truth, dtype=object))
    return np.asarray(both | hit, dtype=bool)


def _records(so_train, so_control, targets, controls, linked_t, linked_c, inferred) -> pd.DataFrame:
    parts = []
    for source, so, rows, linked, inf in (
        ("train", so_train, targets, linked_t, inferred["train"]),
        ("holdout", so_control, controls, linked_c, inferred["holdout"]),
    ):
        a = pd.DataFrame({"source": source, "row": so[0].astype(np.int64), "singled_out": so[1].astype(bool)})
        b = pd.DataFrame({
            "source": source, "row": rows.astype(np.int64),
            "linked": pd.array(linked if linked is not None else [pd.NA] * rows.size, dtype="boolean"),
            "inferred": [";".join(x) for x in inf],
        })  # fmt: skip
        merged = a.merge(b, on=["source", "row"], how="outer")
        merged["singled_out"] = merged["singled_out"].astype("boolean")
        parts.append(merged)
    out = pd.concat(parts, ignore_index=True)
    return out[["source", "row", *DISCLOSURE_RECORD_COLUMNS]].sort_values(["source", "row"], ignore_index=True)


def add_to_records(records: pd.DataFrame, disclosure: DisclosureAudit) -> pd.DataFrame:
    """The per-record table (``source``, ``row``, ...) with :data:`DISCLOSURE_RECORD_COLUMNS` added.

    Records no disclosure attack looked at get missing values; nothing else changes.
    """
    extra = disclosure.records.rename(columns={c: f"disclosure_{c}" for c in DISCLOSURE_RECORD_COLUMNS})
    merged = records.merge(extra, on=["source", "row"], how="left")
    merged.index = records.index
    return merged
