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
by membership with a seeded permutation, into a selection half and an evaluation
half. On the selection half every distinct score and both inequalities are tried
and the one with the largest bound (computed there with one-sided Wilson limits at
the same levels, a closed form that is fast over thousands of candidates and, like
Clopper-Pearson, does not prefer thresholds resting on a handful of records) is kept;
the bound is then computed once, on the evaluation half only, at that threshold
and direction. The evaluation half never influenced the choice, so the
Clopper-Pearson guarantee holds exactly, for any score distribution, ties included.
(The alternative, all records with a Bonferroni correction over a grid of
candidate thresholds, is only exact for a grid fixed before seeing the scores and
pays ``ln K`` in every quantile; on the randomized-response benchmark of the tests
both give about the same bound, so the split, exact without conditions, is used.)

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

DEFAULT_DELTA = 1e-5
DEFAULT_CONFIDENCE = 0.95
ASSUMPTION = (
    "The epsilon lower bound assumes the members were chosen at random from the same pool as the non-members; "
    "if they differ in another way (time, source, selection), the bound measures that difference, not privacy."
)
"""The one-sentence assumption every page and report states next to the bound."""


def _wilson(k: np.ndarray, n: int, a: float, *, upper: bool) -> np.ndarray:
    """One-sided Wilson score bound at level ``1 - a``: closed form, used only to *choose* the threshold."""
    z = float(stats.norm.ppf(1 - a))
    p = np.asarray(k, dtype=np.float64) / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return np.clip(centre + half if upper else centre - half, 0.0, 1.0)


def _selection_bound(hit_pos: np.ndarray, n_pos: int, hit_neg: np.ndarray, n_neg: int, *, delta: float, a: float) -> np.ndarray:
    """The bound with Wilson instead of Clopper-Pearson limits (fast over thousands of candidate thresholds)."""
    p_low = _wilson(hit_pos, n_pos, a, upper=False)
    q_high = np.maximum(_wilson(hit_neg, n_neg, a, upper=True), 1e-300)
    with np.errstate(divide="ignore", invalid="ignore"):
        eps = np.log((p_low - delta) / q_high)
    return np.where(p_low > delta, np.maximum(eps, 0.0), 0.0)


@dataclass(frozen=True)
class EpsilonBound:
    """An empirical epsilon lower bound and the evidence behind it.

    ``epsilon`` holds with probability ``confidence`` for the stated ``delta``.
    ``threshold`` is the score cut (flag ``score >= threshold``) chosen on the
    selection half; ``direction`` says which inequality it tests: ``"tpr_fpr"``
    (TPR <= e^eps FPR + delta) or ``"tnr_fnr"`` (TNR <= e^eps FNR + delta).
    ``rate_low`` / ``rate_high`` are the Clopper-Pearson bounds on the evaluation half
    (TPR_low and FPR_high, or TNR_low and FNR_high), over ``n_pos`` members and
    ``n_neg`` non-members there. ``threshold`` is None when there was nothing to
    choose (fewer than two records in a class).
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
            "method": "threshold chosen on a stratified half, one-sided Clopper-Pearson bounds on the other half",
            "seed": self.seed,
        }

    def sentence(self) -> str:
        """One plain sentence: the bound, its confidence and what it rests on."""
        if self.threshold is None or self.epsilon <= 0:
            return (
                f"No privacy loss is demonstrated: the empirical epsilon lower bound is 0 at delta = {self.delta:g} "
                f"({100 * self.confidence:g} % confidence); any epsilon is consistent with these scores."
            )
        which = "TPR / FPR" if self.direction == "tpr_fpr" else "TNR / FNR"
        return (
            f"With {100 * self.confidence:g} % confidence the process that produced these scores is not "
            f"(epsilon, {self.delta:g})-differentially private for any epsilon below {self.epsilon:.2f} "
            f"({which} at score threshold {self.threshold:.4g}, on {self.n_pos:,} members and {self.n_neg:,} "
            "non-members held out from choosing it)."
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


def epsilon_lower_bound(
    scores: np.ndarray,
    is_member: np.ndarray,
    *,
    delta: float = DEFAULT_DELTA,
    confidence: float = DEFAULT_CONFIDENCE,
    seed: int = 0,
) -> EpsilonBound:
    """Empirical epsilon lower bound from membership scores (higher = more member-like).

    See the module docstring for the method: a seeded stratified split, the threshold
    and direction chosen on one half, one-sided Clopper-Pearson bounds on the other,
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
    select[pos[: pos.size // 2]] = True
    select[neg[: neg.size // 2]] = True

    # --- choose on the selection half
    sa, ya = s[select], y[select]
    n_pos_a, n_neg_a = int(ya.sum()), int((~ya).sum())
    thresholds, tp, fp = _candidates(sa, ya)
    forward = _selection_bound(tp, n_pos_a, fp, n_neg_a, delta=delta, a=a)
    backward = _selection_bound(n_neg_a - fp, n_neg_a, n_pos_a - tp, n_pos_a, delta=delta, a=a)
    i_f, i_b = int(np.argmax(forward)), int(np.argmax(backward))
    if backward[i_b] > forward[i_f]:
        direction, threshold = "tnr_fnr", float(thresholds[i_b])
    else:
        direction, threshold = "tpr_fpr", float(thresholds[i_f])

    # --- evaluate once on the other half
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
    return EpsilonBound(eps, delta, confidence, threshold, direction, low, high, n_pos_b, n_neg_b, seed)


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
