"""Singling out: can a predicate written from the synthetic table isolate one training record?

The attacker writes predicates from the synthetic records over the columns it knows
(:mod:`audit_core.synthetic.disclosure.predicates`): multivariate ones (``disclosure.singling_out``
in the JSON) and univariate ones (reported inside it). Success: the predicate holds for
exactly one training record. The same predicates are counted on the control. The chance of
isolating one record falls with the table's size, so the predicates are counted on training
and control samples of the **same size** (the smaller of the two tables; anonymeter instead
fits a size correction). Baseline: random predicates (random columns, a random synthetic
value each, a random comparison).

The interval: the permutation reference. The singling-out predicates are all written from
the same synthetic rows and counted on the same training and control records, so they are
not independent trials and the binomial (MOVER-R) interval is too narrow (at true risk 0 it
covered 89 % of 200 simulated tables). The training and control samples are therefore pooled
and re-split at random :data:`_N_PERMUTATIONS` times, and the *same* predicates recounted on
each re-split: the re-split risks are what chance alone gives with these predicates and
these records. The interval is ``[risk - q97.5, risk - q2.5]`` of those re-split risks,
widened to the MOVER-R interval where that one is wider (``ci_method`` in the JSON says so).
A predicate that holds for more than ``_PERMUTATION_CAP`` (56) pooled records is counted as
failing in every re-split (its chance of isolating exactly one of half the pool is below 1e-15).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from audit_core.synthetic.disclosure.attack_risk import AttackRisk
from audit_core.synthetic.disclosure.intervals import CONFIDENCE, risk_interval
from audit_core.synthetic.disclosure.predicates import (
    PredicateTable,
    count_matches,
    first_matches,
    multivariate_predicates,
    random_predicates,
    univariate_predicates,
)

__all__ = ["SINGLING_OUT_COLUMNS", "SinglingOut", "singling_out"]

SINGLING_OUT_COLUMNS = 3
"""Columns in a multivariate singling-out predicate (anonymeter's default)."""
_N_PERMUTATIONS = 400
"""Re-splits of training + control behind the singling-out interval."""
_PERMUTATION_CAP = 56  # pooled records a predicate may hold for and still isolate one in a re-split


def _permutation_risks(
    xt: np.ndarray, xc: np.ndarray, cols: np.ndarray, ops: np.ndarray, vals: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """The risk of the same predicates on :data:`_N_PERMUTATIONS` random re-splits of training + control (pooled)."""
    pooled = np.ascontiguousarray(np.concatenate([xt, xc], axis=1))
    m, n_pred = xt.shape[1], cols.shape[0]
    rows, counts = first_matches(pooled, cols, ops, vals, _PERMUTATION_CAP)
    usable = counts <= _PERMUTATION_CAP
    rows, counts = rows[usable], counts[usable]
    valid = rows >= 0
    safe = np.where(valid, rows, 0)
    hits_a, hits_b = np.empty(_N_PERMUTATIONS, np.int64), np.empty(_N_PERMUTATIONS, np.int64)
    batch = max(1, 2_000_000 // max(rows.size, 1))
    for start in range(0, _N_PERMUTATIONS, batch):
        b = min(batch, _N_PERMUTATIONS - start)
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
    method = f"permutation reference ({_N_PERMUTATIONS} re-splits of training + control)"
    if risk.ci_low < low or risk.ci_high > high:
        method += ", widened to MOVER-R"
    return replace(risk, ci_low=min(low, risk.ci_low), ci_high=max(high, risk.ci_high), ci_method=method)


@dataclass(frozen=True)
class SinglingOut:
    """Both singling-out attacks and the records they isolated.

    Attributes
    ----------
    multivariate, univariate : AttackRisk
        The two attacks' counts and risks.
    train, control : ndarray of int
        ``[2, m]``: the evaluated rows of the training table (of the holdout) and, for each,
        whether a successful predicate isolates it (0 / 1).
    """

    multivariate: AttackRisk
    univariate: AttackRisk
    train: np.ndarray
    control: np.ndarray


def singling_out(mats: dict[str, PredicateTable], rng: np.random.Generator, *, n_attacks: int, n_cols: int) -> SinglingOut:
    """Both singling-out attacks on the ``train`` and ``holdout`` tables with predicates from the ``synthetic`` one.

    ``n_attacks`` predicates of each kind are asked for; multivariate ones use ``n_cols`` columns.
    """
    syn = mats["synthetic"]
    _, keep = np.unique(syn.matrix, axis=0, return_index=True)  # NaN rows may stay apart: harmless
    syn = PredicateTable(syn.matrix[np.sort(keep)], syn.numeric)
    m = min(mats["train"].matrix.shape[0], mats["holdout"].matrix.shape[0])
    train_rows = np.sort(rng.choice(mats["train"].matrix.shape[0], size=m, replace=False))
    control_rows = np.sort(rng.choice(mats["holdout"].matrix.shape[0], size=m, replace=False))
    xt = np.ascontiguousarray(mats["train"].matrix[train_rows].T)
    xc = np.ascontiguousarray(mats["holdout"].matrix[control_rows].T)
    out = []
    hit_train: set[int] = set()
    hit_control: set[int] = set()
    for attack, (c, o, v), width in (
        ("singling_out", multivariate_predicates(syn, rng, n_attacks, n_cols), n_cols),
        ("singling_out_univariate", univariate_predicates(syn, rng, n_attacks), 1),
    ):
        k_t, first_t = count_matches(xt, c, o, v)
        k_c, first_c = count_matches(xc, c, o, v)
        bc, bo, bv = random_predicates(syn, rng, max(c.shape[0], 1), width)
        k_b, _ = count_matches(xt, bc, bo, bv)
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
    return SinglingOut(out[0], out[1], np.stack([evaluated[0], flags_t]), np.stack([evaluated[1], flags_c]))
