"""Near-copies under any change: the record-linkage scan (docs/methods.md §1.8).

A training record copied with a few values changed (numbers moved by a few per cent of
their range, a category swapped, a number rounded, a value left empty) sits past any fixed
Gower tolerance: one changed category costs 1/p of the distance, as much as the median
nearest-neighbour distance. Record linkage asks another question: how strongly does the
record *agree* with its best synthetic match, weighted by how rarely two records of this
population agree there by chance (:mod:`audit_core.synthetic.agreement`: Fellegi-Sunter
weights, equality on a value one person has weighs ``log(m n)``, a disagreement
``log((1 - m) / (1 - u))``)?

- Per audited record, two statistics: its best agreement with the synthetic rows
  (*absolute*), and that minus its best agreement with the auxiliary records (*relative*:
  the member against the best-matching non-member; a record of a crowded part of the
  population agrees with someone by chance, a copied record agrees with the synthetic
  table far more than with anyone of the population).
- The records tested: every training row (members), every holdout row that is not an
  auxiliary record, and a seeded half of the auxiliary records (non-members: the other half
  fits the weights and is the relative statistic's comparison). With more non-members than
  members, a member among the top records is stronger evidence.
- "Near" = among the top 4, 8, 16, ... records by a statistic, up to :data:`_TOP_SHARE` of
  them (ties included; the cut-offs use the statistics alone, never the labels). Per
  statistic and cut-off a one-sided Fisher exact test of members against non-members, read
  as a mid-p value (``P(X > x) + P(X = x) / 2``: the plain Fisher p-value is 1 whenever no
  member is near, which wastes the level).
- The scan's p-value is the mid-rank of the observed smallest mid-p among
  :data:`_PERMUTATIONS` random relabellings of the tested records. Under "the generator
  did not copy" members and non-members are exchangeable given the statistics, so the scan's
  false-alarm rate is its level (400 simulated populations: tests), without Bonferroni's
  slack over these correlated tests.

The scan runs through the agreement engine (blocks read best bound first and pruned, float32,
the chosen pair in float64) and on the Dask cluster when one is given. Above
:data:`~audit_core.synthetic.agreement.EXACT_PAIRS` (records x synthetic rows) only the records
that can reach a cut-off are matched (:func:`_top_matches`): the tests read nothing else, so
their cut-offs, counts and p-values are the full scan's (tested), and each other record's
statistic is NaN (below every cut-off).

Measured: docs/methods.md §1.8 and README (the near-copy catalogue's power on the bundled
Adult and German Credit samples).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from scipy import stats

from audit_core.common.runtime import ProgressFn, sub_progress
from audit_core.synthetic.agreement import (
    AGREE_M,
    CLOSE_M,
    EXACT_PAIRS,
    FLOOR_SAMPLE,
    TOLERANCES,
    AgreementWeights,
    MatchTable,
    best_agreement,
    fit_weights,
)

__all__ = ["LINKAGE_ALPHA", "LinkageTest", "linkage_test"]

LINKAGE_ALPHA = 0.05
"""Level of the scan (its p-value from relabellings): below it the verdict is at least elevated."""

_LINKAGE_STRONG = 0.01
"""Below this p-value the near-copies make the verdict high, as the other copy tests do."""

_TOP_SHARE = 0.05
"""The largest cut-off: a record is "near" when its statistic is among the top 4, 8, 16, ... records, up to this share."""

_FEWEST = 4  # the smallest cut-off
_PERMUTATION_CELLS = 4_000_000  # relabellings x near records drawn at once

_PERMUTATIONS = 999
"""Relabellings of the attack set behind the scan's p-value (resolution 0.001)."""


@dataclass(frozen=True)
class LinkageTest:
    """The record-linkage scan of near-copies (module docstring).

    Attributes
    ----------
    tolerances : tuple of float
        The closeness levels of the agreement weights (shares of each column's range).
    tests : tuple of str
        The scanned tests, in order ("relative, top 1 %", ...).
    members_near, non_members_near : tuple of int
        Members / non-members near by each test.
    n_members, n_non_members : int
    thresholds : tuple of float
        Each test's cut-off on its statistic (records at or above it are near).
    p_values : tuple of float
        One-sided Fisher exact mid-p value per test.
    p_value : float
        The scan's p-value (relabellings); ``excess`` is ``p_value < alpha``.
    best : int
        The test with the smallest mid-p value (index into ``tests``).
    synthetic_rows_compared : int
        Synthetic rows the best matches were sought among (all of them).
    statistic : numpy.ndarray
        Per audited record, the relative statistic (float64; NaN: below every cut-off, not computed in a large scan).
    near : numpy.ndarray
        Per audited record, near by the best test (bool).
    best_row : numpy.ndarray
        Per audited record, its best-matching synthetic row (-1 where the statistic is NaN).
    n_auxiliary_non_members : int
        Auxiliary records counted among the non-members (the half that neither fits the weights nor compares).
    n_reference : int
        Auxiliary records the weights are fitted on and the relative statistic compares with.
    """

    tolerances: tuple[float, ...]
    tests: tuple[str, ...]
    members_near: tuple[int, ...]
    non_members_near: tuple[int, ...]
    n_members: int
    n_non_members: int
    thresholds: tuple[float, ...]
    p_values: tuple[float, ...]
    p_value: float
    best: int
    synthetic_rows_compared: int
    statistic: np.ndarray = field(repr=False)
    near: np.ndarray = field(repr=False)
    best_row: np.ndarray = field(repr=False)
    n_auxiliary_non_members: int = 0
    n_reference: int = 0
    alpha: float = LINKAGE_ALPHA

    @property
    def excess(self) -> bool:
        """More members than non-members link to a synthetic record beyond chance (``p_value < alpha``)."""
        return self.p_value < self.alpha

    @property
    def strong(self) -> bool:
        """The excess is strong evidence (``p_value < _LINKAGE_STRONG``)."""
        return self.p_value < _LINKAGE_STRONG

    def to_json(self) -> dict[str, Any]:
        """Per test counts and mid-p values, the scan's p-value and its verdict."""
        return {
            "test": "record-linkage near-copy scan: members among the audited records that agree most with a synthetic "
            "record (rarity-weighted Fellegi-Sunter agreement, absolute and relative to the best-matching auxiliary "
            "record) more often than non-members (one-sided Fisher exact mid-p per test, scan p-value by relabelling)",
            "weights": "equal value: log(m / f(value)); number within a tolerance: log(m_k / u_k(value)), below the "
            f"equal weight; disagreement: log((1 - m) / (1 - u)); frequencies from the auxiliary records; m = {AGREE_M:g}, "
            f"m_k = {', '.join(f'{m:g}' for m in CLOSE_M)}",
            "tolerances": list(self.tolerances),
            "tests": list(self.tests),
            "members_near": list(self.members_near),
            "non_members_near": list(self.non_members_near),
            "n_members": self.n_members,
            "n_non_members": self.n_non_members,
            "thresholds": list(self.thresholds),
            "p_values": list(self.p_values),
            "p_value": self.p_value,
            "alpha": self.alpha,
            "excess": self.excess,
            "strong": self.strong,
            "best_test": self.tests[self.best],
            "synthetic_rows_compared": self.synthetic_rows_compared,
            "auxiliary_non_members": self.n_auxiliary_non_members,
            "auxiliary_reference": self.n_reference,
        }


def _cut_offs(n: int) -> list[int]:
    """Numbers of top records tested: 4, 8, 16, ... up to :data:`_TOP_SHARE` of the ``n`` records (at least one cut-off).

    Fewer than 4 cannot be significant: with members a minority of the records, even the top 3 all
    members happens by chance more often than 5 % of the time.
    """
    most = max(_FEWEST, int(_TOP_SHARE * n))
    return [k for k in (1 << i for i in range(2, most.bit_length())) if k <= most]


def linkage_test(
    members: MatchTable,
    non_members: MatchTable,
    auxiliary: MatchTable,
    synthetic: MatchTable,
    *,
    seed: int = 0,
    alpha: float = LINKAGE_ALPHA,
    client: Any = None,
    progress: ProgressFn | None = None,
) -> LinkageTest:
    """Run the scan (module docstring) on every given member and non-member.

    Parameters
    ----------
    members, non_members : MatchTable
        The training records, and the holdout records that are not auxiliary records.
    auxiliary : MatchTable
        The population's records: a seeded half fits the weights and is the comparison of the
        relative statistic; the other half joins the non-members (so a member among the top
        weighs more than against the holdout alone).
    synthetic : MatchTable
    seed, alpha, client, progress
        The split of the auxiliary records and the relabellings; the level; a Dask client; progress.
    """
    perm = np.random.default_rng(seed + 1).permutation(auxiliary.n_rows)
    half = max(1, auxiliary.n_rows // 2)
    reference, extra = auxiliary.rows(np.sort(perm[:half])), auxiliary.rows(np.sort(perm[half:]))
    pool = _stack([members, non_members, extra])
    member = np.r_[np.ones(members.n_rows, dtype=bool), np.zeros(non_members.n_rows + extra.n_rows, dtype=bool)]
    weights = fit_weights(reference)
    qw = weights.query_weights(pool)
    to_aux, _ = best_agreement(pool, reference, weights, client=client, progress=sub_progress(progress, 0.0, 0.3),
                               query_weights=qw)  # fmt: skip
    if pool.n_rows * synthetic.n_rows <= EXACT_PAIRS:
        to_syn, rows = best_agreement(pool, synthetic, weights, client=client, progress=sub_progress(progress, 0.3, 1.0),
                                      query_weights=qw)  # fmt: skip
    else:
        to_syn, rows = _top_matches(pool, synthetic, weights, qw, to_aux, seed=seed, client=client,
                                    progress=sub_progress(progress, 0.3, 1.0))  # fmt: skip
    statistics = {"absolute": to_syn, "relative": to_syn - to_aux}  # -inf: below every cut-off (_top_matches)
    n = member.size
    masks, thresholds, names = [], [], []
    for name, stat in statistics.items():
        ordered = np.sort(stat)[::-1]
        for k in _cut_offs(n):
            cut = float(ordered[k - 1])
            masks.append(stat >= cut)
            thresholds.append(cut)
            names.append(f"{name}, top {k} record{'s' if k > 1 else ''}")
    near = np.array(masks)
    near_m, near_n = (near & member).sum(axis=1), (near & ~member).sum(axis=1)
    ps = _mid_p(near_m, near.sum(axis=1), n, int(member.sum()))
    best = int(np.argmin(ps))
    given = members.n_rows + non_members.n_rows
    return LinkageTest(
        tolerances=tuple(TOLERANCES), tests=tuple(names), members_near=tuple(int(x) for x in near_m),
        non_members_near=tuple(int(x) for x in near_n), n_members=int(member.sum()), n_non_members=int((~member).sum()),
        thresholds=tuple(thresholds), p_values=tuple(float(p) for p in ps),
        p_value=_scan_p_value(near, member, float(ps[best]), seed=seed), best=best,
        synthetic_rows_compared=synthetic.n_rows, near=near[best][:given],
        statistic=np.where(np.isfinite(to_syn), statistics["relative"], np.nan)[:given],
        best_row=rows[:given], n_auxiliary_non_members=extra.n_rows, n_reference=reference.n_rows, alpha=alpha,
    )  # fmt: skip


def _top_matches(
    pool: MatchTable,
    synthetic: MatchTable,
    weights: AgreementWeights,
    qw: dict[str, np.ndarray],
    to_aux: np.ndarray,
    *,
    seed: int,
    client: Any,
    progress: ProgressFn | None,
) -> tuple[np.ndarray, np.ndarray]:
    """Each record's best agreement with the synthetic rows where it can reach a cut-off, ``-inf`` (row -1) elsewhere.

    The tests read only the records among the top :data:`_TOP_SHARE` by either statistic. A seeded
    sample of :data:`FLOOR_SAMPLE` records is scanned in full; the floors are its quantiles at
    twice that share (absolute, and relative plus the record's own best auxiliary agreement), and
    every other record is scanned above its floor only (:func:`best_agreement` with ``floor``: most
    blocks pruned at once). A record below its floor is below both floors' cut-offs, so once at least
    as many records as the largest cut-off are found at or above each floor, every cut-off, every
    near record and every p-value is the full scan's. Otherwise (a rare sample) the records left
    are scanned in full.
    """
    n, most = pool.n_rows, _cut_offs(pool.n_rows)[-1]
    sample = np.sort(np.random.default_rng([seed, 28]).choice(n, size=min(n, FLOOR_SAMPLE), replace=False))
    rest = np.setdiff1d(np.arange(n), sample)
    to_syn, rows = np.full(n, -np.inf), np.full(n, -1, dtype=np.int64)
    local_qw = {k: v[sample] for k, v in qw.items()}
    to_syn[sample], rows[sample] = best_agreement(pool.rows(sample), synthetic, weights, client=client,
                                                  query_weights=local_qw)  # fmt: skip
    level = 1.0 - min(1.0, 2.0 * most / n)
    floor_abs = float(np.quantile(to_syn[sample], level))
    floor_rel = float(np.quantile(to_syn[sample] - to_aux[sample], level))
    floor = np.minimum(floor_abs, floor_rel + to_aux[rest])
    rest_qw = {k: v[rest] for k, v in qw.items()}
    to_syn[rest], rows[rest] = best_agreement(pool.rows(rest), synthetic, weights, client=client, progress=progress,
                                              query_weights=rest_qw, floor=floor)  # fmt: skip
    if (to_syn >= floor_abs).sum() < most or (to_syn - to_aux >= floor_rel).sum() < most:
        left = np.flatnonzero(rows < 0)
        to_syn[left], rows[left] = best_agreement(pool.rows(left), synthetic, weights, client=client,
                                                  query_weights={k: v[left] for k, v in qw.items()})  # fmt: skip
    return to_syn, rows


def _stack(tables: list[MatchTable]) -> MatchTable:
    """The records of several tables of the same encoding, one after the other."""
    first = tables[0].encoded
    encoded = replace(first, numeric=np.concatenate([t.encoded.numeric for t in tables]),
                      codes=np.concatenate([t.encoded.codes for t in tables]))  # fmt: skip
    return MatchTable(encoded, np.concatenate([t.exact for t in tables]))


def _mid_p(hits: np.ndarray, drawn: np.ndarray, n_total: int, n_members: int) -> np.ndarray:
    """One-sided Fisher exact mid-p value, ``P(X > hits) + P(X = hits) / 2`` for X hypergeometric, elementwise."""
    law = stats.hypergeom
    return np.clip(law.sf(hits, n_total, n_members, drawn) + 0.5 * law.pmf(hits, n_total, n_members, drawn), 0.0, 1.0)


def _mid_p_table(drawn: int, n_total: int, n_members: int) -> np.ndarray:
    """The mid-p value of every number of members near, 0..drawn (one hypergeometric pmf, summed from the top)."""
    from scipy.special import gammaln

    h = np.arange(drawn + 1)
    log_pmf = (gammaln(n_members + 1) - gammaln(h + 1) - gammaln(n_members - h + 1)
               + gammaln(n_total - n_members + 1) - gammaln(drawn - h + 1) - gammaln(n_total - n_members - drawn + h + 1)
               - gammaln(n_total + 1) + gammaln(drawn + 1) + gammaln(n_total - drawn + 1))  # fmt: skip
    possible = (h <= n_members) & (drawn - h <= n_total - n_members)
    pmf = np.where(possible, np.exp(np.where(possible, log_pmf, 0.0)), 0.0)
    above = np.concatenate([np.cumsum(pmf[::-1])[::-1][1:], [0.0]])  # P(X > h)
    return np.clip(above + 0.5 * pmf, 0.0, 1.0)


def _scan_p_value(near: np.ndarray, member: np.ndarray, observed: float, *, seed: int) -> float:
    """The scan's p-value: the mid-rank of the observed smallest mid-p among random relabellings.

    Under "the generator did not copy", members and non-members are exchangeable given the
    statistics (the cut-offs never read the labels), so permuting the labels draws from the
    null of the whole scan: the minimum over correlated tests is calibrated without
    Bonferroni's slack. Only the records near by some test matter: a relabelling draws how
    many of them are members (hypergeometric), then which. Ties count half, so the level is
    spent rather than lost to ties. Seeded: the same inputs give the same p-value.
    """
    rng = np.random.default_rng(seed + 2)
    n, n_members = member.size, int(member.sum())
    union = np.flatnonzero(near.any(axis=0))
    sub = near[:, union].astype(np.float32)  # [tests, u]
    drawn = near.sum(axis=1)
    table = np.ones((drawn.size, int(drawn.max()) + 1))  # mid-p by test and members near
    for t, d in enumerate(drawn):
        table[t, : d + 1] = _mid_p_table(int(d), n, n_members)
    u = union.size
    null = np.empty(_PERMUTATIONS)
    chunk = max(1, _PERMUTATION_CELLS // max(u, 1))
    for start in range(0, _PERMUTATIONS, chunk):
        b = min(chunk, _PERMUTATIONS - start)
        k = rng.hypergeometric(n_members, n - n_members, u, size=b)  # members among the near records
        keys = rng.random((b, u))
        kth = np.sort(keys, axis=1)[np.arange(b), np.maximum(k - 1, 0)]
        labels = (keys <= kth[:, None]) & (k[:, None] > 0)  # a random k of the near records are members
        hits = np.rint(labels.astype(np.float32) @ sub.T).astype(np.int64)  # [b, tests]
        null[start : start + b] = table[np.arange(drawn.size)[None, :], hits].min(axis=1)
    tol = observed * 1e-9
    below = np.sum(null < observed - tol)
    ties = np.sum(np.abs(null - observed) <= tol)
    return float((below + 0.5 * (ties + 1)) / (_PERMUTATIONS + 1))
