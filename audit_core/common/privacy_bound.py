"""Empirical lower bound on the differential-privacy epsilon implied by membership scores.

Any membership attack is a hypothesis test between "the record was in the training
data" and "it was not". If the training procedure is (epsilon, delta)-differentially
private and the members were chosen at random from the same pool as the non-members,
then at **every** threshold ``t`` (flag ``score >= t`` as member)

    TPR(t) <= e^eps * FPR(t) + delta     and     TNR(t) <= e^eps * FNR(t) + delta

(Kairouz et al. 2015; the second is the same inequality for the complementary
decision). Hence ``eps >= ln((TPR - delta) / FPR)`` and ``eps >= ln((TNR - delta) / FNR)``
for the true rates. An audit sees only estimates, so :func:`epsilon_lower_bound`
replaces them by one-sided Clopper-Pearson bounds: ``TPR_low`` (members) and
``FPR_high`` (non-members), each at level ``1 - (1 - confidence) / 2`` (Bonferroni
over the two binomials, no independence needed), giving

    eps_low = max(0, ln((TPR_low - delta) / FPR_high))

which is below the true epsilon of any mechanism consistent with the data with
probability at least ``confidence`` (Jagielski et al. 2020; Nasr et al. 2021).

Choosing the threshold honestly. The inequality holds at a *fixed* threshold; the
best-looking threshold of a sample is optimistic. We split the records, stratified
by membership with a seeded permutation, into a selection part (:data:`_SELECT_FRACTION`,
20 %) and an evaluation part (the other 80 %). On the selection part every distinct
score and both inequalities are tried and the one with the largest *predicted*
evaluation bound is kept: the selection part's rates, smoothed (Jeffreys,
``(k + 1/2) / (n + 1)``, so a threshold resting on a handful of records is not
preferred), turned into one-sided Wilson limits at the evaluation part's sizes (a
closed form, fast over thousands of candidates). The bound is then computed once,
on the evaluation part only, at that threshold and direction. The evaluation part
never influenced the choice, so the Clopper-Pearson guarantee holds exactly, for any
score distribution, ties included. (Half and half, used before, spent half the
records on the choice: on Gaussian mechanisms with 1,000 to 5,000 records per class
the 20 / 80 split gives a 25-41 % higher bound at mu = 0.5, 12-14 % at mu = 1 and
4-6 % at mu = 2, the same within 1 % where the bound is at its ceiling; the tests
measure it. All records with a Bonferroni correction over a grid of candidate
thresholds is only exact for a grid fixed before seeing the scores and pays ``ln K``
in every quantile.)

The ceiling. With ``n`` evaluated records per class no attack can show more than a
perfect one would (every member flagged, no non-member):
``ln((CP_low(n_pos of n_pos) - delta) / CP_high(0 of n_neg))``, about ``ln(n / 3.7)``
at 95 %. :attr:`EpsilonBound.ceiling` reports it next to the bound, so a small bound
from few records is not read as "private": it is all these records could ever show.

The bound is a statement about the *mechanism that produced these scores*, not a
guarantee for the model: a weak attack gives a low bound whatever the model's true
epsilon. It needs ``delta`` below the TPR to say anything; ``delta = 1e-5`` is the
usual choice for tables of up to ~100,000 records.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from audit_core.common.errors import InputError
from audit_core.common.roc import clopper_pearson

__all__ = [
    "ASSUMPTION",
    "DEFAULT_DELTA",
    "STRONG_EPSILON",
    "USUAL_EPSILON",
    "EpsilonBound",
    "ceiling",
    "epsilon_bound_json",
    "epsilon_lower_bound",
    "epsilon_scale",
    "target_model_scores",
]

DEFAULT_DELTA = 1e-5
_DEFAULT_CONFIDENCE = 0.95
_SELECT_FRACTION = 0.2
"""The share of each class spent on choosing the threshold; the bound is computed on the rest."""
ASSUMPTION = (
    "The epsilon lower bound assumes the members were chosen at random from the same pool as the non-members; "
    "if they differ in another way (time, source, selection), the bound measures that difference, not privacy."
)
"""The one-sentence assumption every page and report states next to the bound."""

STRONG_EPSILON = 1.0
"""Epsilon at or below which DP is called strong (Ponomareva et al., 2023, "How to DP-fy ML", JAIR)."""
USUAL_EPSILON = 10.0
"""Epsilon up to which that guide calls a DP guarantee reasonable; most deployed DP models claim no more."""


def epsilon_scale(epsilon: float) -> str:
    """An epsilon lower bound in words, beside what DP models claim ("more privacy loss than ...").

    >>> epsilon_scale(2.76)
    'more privacy loss than a model with strong DP (epsilon <= 1) may have; within the epsilon <= 10 most DP models claim'
    """
    if not epsilon > 0:
        return "no privacy loss shown, which proves nothing"
    if epsilon <= STRONG_EPSILON:
        return f"a privacy loss that even a model with strong DP (epsilon <= {STRONG_EPSILON:g}) may have"
    if epsilon <= USUAL_EPSILON:
        return (f"more privacy loss than a model with strong DP (epsilon <= {STRONG_EPSILON:g}) may have; within the "
                f"epsilon <= {USUAL_EPSILON:g} most DP models claim")  # fmt: skip
    return f"more privacy loss than most DP models claim (epsilon <= {USUAL_EPSILON:g})"


def _wilson(k: np.ndarray, n: int, a: float, *, upper: bool) -> np.ndarray:
    """One-sided Wilson score bound at level ``1 - a``: closed form, used only to *choose* the threshold."""
    z = float(stats.norm.ppf(1 - a))
    p = np.asarray(k, dtype=np.float64) / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return np.clip(centre + half if upper else centre - half, 0.0, 1.0)


def _selection_bound(
    hit_pos: np.ndarray, n_pos: int, hit_neg: np.ndarray, n_neg: int, *, delta: float, a: float, n_eval: tuple[int, int]
) -> np.ndarray:
    """The bound predicted on the evaluation part (sizes ``n_eval``) from the selection part's counts.

    Jeffreys-smoothed rates of the selection part, Wilson limits at the evaluation sizes
    instead of Clopper-Pearson (fast over thousands of candidate thresholds).
    """
    e_pos, e_neg = n_eval
    p_low = _wilson((np.asarray(hit_pos) + 0.5) / (n_pos + 1) * e_pos, e_pos, a, upper=False)
    q_high = np.maximum(_wilson((np.asarray(hit_neg) + 0.5) / (n_neg + 1) * e_neg, e_neg, a, upper=True), 1e-300)
    with np.errstate(divide="ignore", invalid="ignore"):
        eps = np.log((p_low - delta) / q_high)
    return np.where(p_low > delta, np.maximum(eps, 0.0), 0.0)


@dataclass(frozen=True)
class EpsilonBound:
    """An empirical epsilon lower bound and the evidence behind it.

    ``epsilon`` holds with probability ``confidence`` for the stated ``delta``.
    ``threshold`` is the score cut (flag ``score >= threshold``) chosen on the
    selection part; ``direction`` says which inequality it tests: ``"tpr_fpr"``
    (TPR <= e^eps FPR + delta) or ``"tnr_fnr"`` (TNR <= e^eps FNR + delta).
    ``rate_low`` / ``rate_high`` are the Clopper-Pearson bounds on the evaluation part
    (TPR_low and FPR_high, or TNR_low and FNR_high), over ``n_pos`` members and
    ``n_neg`` non-members there. ``threshold`` is None when there was nothing to
    choose (fewer than two records in a class). ``ceiling`` is the largest bound
    these evaluated records could show, with a perfect attack (:func:`ceiling`).
    """

    epsilon: float
    delta: float
    confidence: float
    threshold: float | None
    direction: str
    rate_low: float
    rate_high: float
    n_pos: int
    n_neg: int
    seed: int
    ceiling: float = 0.0

    def to_json(self) -> dict[str, Any]:
        """``epsilon``, ``delta``, ``confidence``, ``threshold`` (the contract), then the evidence."""
        return {
            "epsilon": self.epsilon,
            "delta": self.delta,
            "confidence": self.confidence,
            "threshold": self.threshold,
            "direction": self.direction,
            "rate_low": self.rate_low,
            "rate_high": self.rate_high,
            "n_members_evaluated": self.n_pos,
            "n_non_members_evaluated": self.n_neg,
            "method": (
                f"threshold chosen on a stratified {100 * _SELECT_FRACTION:g} % of each class, "
                "one-sided Clopper-Pearson bounds on the other records"
            ),
            "seed": self.seed,
            "ceiling": self.ceiling,
            "selection_fraction": _SELECT_FRACTION,
        }

    def sentence(self) -> str:
        """One plain sentence: the bound, its confidence and what it rests on."""
        if self.threshold is None or self.epsilon <= 0:
            return (
                f"No privacy loss is demonstrated: the empirical epsilon lower bound is 0 at delta = {self.delta:g} "
                f"({100 * self.confidence:g} % confidence); any epsilon is consistent with these scores"
                f"{self._ceiling_clause()}."
            )
        which = "TPR / FPR" if self.direction == "tpr_fpr" else "TNR / FNR"
        return (
            f"With {100 * self.confidence:g} % confidence the process that produced these scores is not "
            f"(epsilon, {self.delta:g})-differentially private for any epsilon below {self.epsilon:.2f} "
            f"({which} at score threshold {self.threshold:.4g}, on {self.n_pos:,} members and {self.n_neg:,} "
            f"non-members held out from choosing it){self._ceiling_clause()}."
        )

    def _ceiling_clause(self) -> str:
        if self.n_pos == 0 or self.n_neg == 0:
            return ""
        return (
            f"; with these records no attack, even a perfect one, could show more than {self.ceiling:.2f}, "
            "so a small bound alone does not mean the process is private"
        )


def _check(scores: np.ndarray, is_member: np.ndarray, delta: float, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    s = np.asarray(scores, dtype=np.float64).ravel()
    y = np.asarray(is_member).astype(bool).ravel()
    if s.shape != y.shape:
        raise InputError(f"Got {s.size} scores but {y.size} membership labels; they must match.")
    if not np.all(np.isfinite(s)):
        raise InputError("Some attack scores are not finite numbers (NaN or infinite).")
    if not (np.isfinite(delta) and 0 <= delta < 1):
        raise InputError(f"delta must be a number from 0 to below 1, got {delta!r}.")
    if not 0 < confidence < 1:
        raise InputError(f"The confidence level must be between 0 and 1, got {confidence!r}.")
    return s, y


def _candidates(s: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each distinct score as a threshold: (thresholds, members >= t, non-members >= t)."""
    thresholds = np.unique(s)
    order = np.argsort(s, kind="mergesort")
    sorted_s = s[order]
    # records with score >= t = those from the first index of t in the sorted scores
    start = np.searchsorted(sorted_s, thresholds, side="left")
    above_pos = np.r_[np.cumsum(y[order][::-1])[::-1], 0][start]
    above_neg = (s.size - start) - above_pos
    return thresholds, above_pos, above_neg


def ceiling(n_pos: int, n_neg: int, *, delta: float = DEFAULT_DELTA, confidence: float = _DEFAULT_CONFIDENCE) -> float:
    """The largest bound ``n_pos`` members and ``n_neg`` non-members could show: a perfect attack, either inequality.

    >>> round(ceiling(4000, 4000), 2)   # about ln(4000 / 3.69)
    6.99
    """
    if n_pos < 1 or n_neg < 1:
        return 0.0
    a = (1 - confidence) / 2
    best = 0.0
    for n_hit, n_miss in ((n_pos, n_neg), (n_neg, n_pos)):
        low = clopper_pearson(n_hit, n_hit, level=1 - a, side="lower")[0]
        high = clopper_pearson(0, n_miss, level=1 - a, side="upper")[1]
        if low > delta:
            best = max(best, math.log((low - delta) / high))
    return best


def epsilon_lower_bound(
    scores: np.ndarray,
    is_member: np.ndarray,
    *,
    delta: float = DEFAULT_DELTA,
    confidence: float = _DEFAULT_CONFIDENCE,
    seed: int = 0,
) -> EpsilonBound:
    """Empirical epsilon lower bound from membership scores (higher = more member-like).

    See the module docstring for the method: a seeded stratified split, the threshold
    and direction chosen on 20 % of each class, one-sided Clopper-Pearson bounds on the rest,
    ``eps = max(0, ln((rate_low - delta) / rate_high))``.

    >>> rng = np.random.default_rng(0)
    >>> y = np.r_[np.ones(5000), np.zeros(5000)]
    >>> b = epsilon_lower_bound(rng.random(10000), y)   # scores unrelated to membership
    >>> b.epsilon < 0.1
    True
    """
    s, y = _check(scores, is_member, delta, confidence)
    a = (1 - confidence) / 2
    pos, neg = np.flatnonzero(y), np.flatnonzero(~y)
    if pos.size < 2 or neg.size < 2:
        return EpsilonBound(0.0, delta, confidence, None, "tpr_fpr", 0.0, 1.0, 0, 0, seed)
    rng = np.random.default_rng(seed)
    pos, neg = rng.permutation(pos), rng.permutation(neg)
    select = np.zeros(s.size, dtype=bool)
    k_pos = min(pos.size - 1, max(1, round(_SELECT_FRACTION * pos.size)))
    k_neg = min(neg.size - 1, max(1, round(_SELECT_FRACTION * neg.size)))
    select[pos[:k_pos]] = True
    select[neg[:k_neg]] = True

    # --- choose on the selection part
    sa, ya = s[select], y[select]
    n_pos_a, n_neg_a = k_pos, k_neg
    e_pos, e_neg = pos.size - k_pos, neg.size - k_neg
    thresholds, tp, fp = _candidates(sa, ya)
    forward = _selection_bound(tp, n_pos_a, fp, n_neg_a, delta=delta, a=a, n_eval=(e_pos, e_neg))
    backward = _selection_bound(n_neg_a - fp, n_neg_a, n_pos_a - tp, n_pos_a, delta=delta, a=a, n_eval=(e_neg, e_pos))
    i_f, i_b = int(np.argmax(forward)), int(np.argmax(backward))
    if backward[i_b] > forward[i_f]:
        direction, threshold = "tnr_fnr", float(thresholds[i_b])
    else:
        direction, threshold = "tpr_fpr", float(thresholds[i_f])

    # --- evaluate once on the other records
    sb, yb = s[~select], y[~select]
    n_pos_b, n_neg_b = int(yb.sum()), int((~yb).sum())
    flagged = sb >= threshold
    tp_b, fp_b = int((flagged & yb).sum()), int((flagged & ~yb).sum())
    if direction == "tpr_fpr":
        hit, n_hit, miss, n_miss = tp_b, n_pos_b, fp_b, n_neg_b
    else:
        hit, n_hit, miss, n_miss = n_neg_b - fp_b, n_neg_b, n_pos_b - tp_b, n_pos_b
    low = clopper_pearson(hit, n_hit, level=1 - a, side="lower")[0]
    high = clopper_pearson(miss, n_miss, level=1 - a, side="upper")[1]
    eps = max(0.0, math.log((low - delta) / high)) if low > delta and high > 0 else 0.0
    top = ceiling(n_pos_b, n_neg_b, delta=delta, confidence=confidence)
    return EpsilonBound(eps, delta, confidence, threshold, direction, low, high, n_pos_b, n_neg_b, seed, top)


def epsilon_bound_json(scores: np.ndarray, is_member: np.ndarray, *, delta: float = DEFAULT_DELTA, seed: int = 0) -> dict:
    """:func:`epsilon_lower_bound` as the JSON block ``epsilon_lower_bound`` every audit reports."""
    return epsilon_lower_bound(scores, is_member, delta=delta, seed=seed).to_json()


def target_model_scores(scores: np.ndarray, keep: np.ndarray, *, target: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """One target model's scores for a bound over independent records: ``(scores, is_member)`` of length N.

    A pool of M models gives M x N (model, record) scores that are not independent
    (each record appears M times), so the binomial bounds above do not apply to them
    pooled. As in a DP audit of one training run, model ``target`` is the audited
    model: each record's score under it is standardised by the mean and standard
    deviation of that record's scores under the *other* models it was out of
    (offline LiRA, leave-one-model-out; higher = more member-like), and its
    membership is whether it was in ``target``'s training half.
    """
    s = np.asarray(scores, dtype=np.float64)
    out = ~np.asarray(keep, dtype=bool)
    out[target] = False
    n = np.maximum(out.sum(0), 2)
    mean = np.where(out, s, 0.0).sum(0) / n
    sd = np.sqrt(np.where(out, (s - mean) ** 2, 0.0).sum(0) / (n - 1)) + 1e-12
    return (s[target] - mean) / sd, np.asarray(keep, dtype=bool)[target]
