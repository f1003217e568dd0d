"""ROC curves, TPR at low FPR with confidence intervals, and hard-label metrics.

Every attack in the dashboard is scored here, so the three audits report the same
quantities the same way. Scores are oriented higher = more member-like; ``is_member``
is the ground truth (members are positives).

Honest statistics (docs/methods.md §5): a TPR at FPR ``alpha`` is only supported by the data
when there are at least ``10 / alpha`` negatives; :class:`TprAtFpr` carries that flag,
the number of negatives behind it and a 95 % interval that accounts for both samples:
the threshold is estimated from the non-members, the hits are counted among the
members, and both are uncertain (:func:`tpr_at_fpr`: a rank-mixture interval where the
scores are continuous near the threshold, the exact band where they tie).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np
from scipy import optimize, special, stats

from audit_core.common.errors import InputError

__all__ = [
    "DEFAULT_FPRS",
    "INTERVAL_LIMIT",
    "AttackMetrics",
    "HardLabelMetrics",
    "RocCurve",
    "TprAtFpr",
    "clopper_pearson",
    "equal_error_rate",
    "evaluate_attack",
    "hard_label_metrics",
    "roc_curve",
    "tpr_at_fpr",
]

DEFAULT_FPRS = (0.001, 0.01, 0.1)


def _fpr_key(fpr: float) -> str:
    """JSON key for a target FPR: ``0.001 -> "0.001"``."""
    return f"{fpr:g}"


def _check(scores: np.ndarray, is_member: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    s = np.asarray(scores, dtype=np.float64).ravel()
    y = np.asarray(is_member).astype(bool).ravel()
    if s.shape != y.shape:
        raise InputError(f"Got {s.size} scores but {y.size} membership labels; they must match.")
    if not np.all(np.isfinite(s)):
        raise InputError("Some attack scores are not finite numbers (NaN or infinite).")
    if y.all() or not y.any():
        raise InputError("An ROC needs both members and non-members; only one group was given.")
    return s, y


def clopper_pearson(
    successes: int, trials: int, *, level: float = 0.95, side: str = "two-sided"
) -> tuple[float, float]:
    """Exact (Clopper-Pearson) binomial confidence bounds for ``successes / trials``.

    ``side="two-sided"`` puts ``(1 - level) / 2`` in each tail; ``side="lower"`` gives
    the one-sided bound ``(lo, 1.0)`` with ``P(lo > p) <= 1 - level``, and ``"upper"``
    gives ``(0.0, hi)`` with ``P(hi < p) <= 1 - level``. No trials: ``(0.0, 1.0)``.

    >>> lo, hi = clopper_pearson(0, 10)
    >>> lo == 0.0 and round(hi, 3) == 0.308
    True
    >>> round(clopper_pearson(5, 10, level=0.975, side="lower")[0], 3) == round(clopper_pearson(5, 10)[0], 3)
    True
    """
    if side not in ("two-sided", "lower", "upper"):
        raise ValueError(f"side must be 'two-sided', 'lower' or 'upper', got {side!r}")
    if trials <= 0:
        return (0.0, 1.0)
    a = (1 - level) / 2 if side == "two-sided" else 1 - level
    # betaincinv(x, y, .) is the Beta(x, y) quantile function (scipy.stats.beta.ppf without its overhead).
    lo = 0.0 if successes <= 0 or side == "upper" else float(special.betaincinv(successes, trials - successes + 1, a))
    hi = 1.0 if successes >= trials or side == "lower" else float(special.betaincinv(successes + 1, trials - successes, 1 - a))
    return lo, hi


@dataclass(frozen=True)
class RocCurve:
    """An ROC curve: ``tpr[i]`` and ``fpr[i]`` when flagging ``score >= thresholds[i]``."""

    fpr: np.ndarray
    tpr: np.ndarray
    thresholds: np.ndarray
    auc: float
    n_pos: int
    n_neg: int


def roc_curve(scores: np.ndarray, is_member: np.ndarray) -> RocCurve:
    """ROC curve and AUC (ties handled as in scikit-learn; AUC by the trapezoid).

    >>> c = roc_curve(np.array([0.9, 0.8, 0.2, 0.1]), np.array([1, 1, 0, 0]))
    >>> c.auc
    1.0
    """
    s, y = _check(scores, is_member)
    order = np.argsort(-s, kind="mergesort")
    s_sorted, y_sorted = s[order], y[order]
    distinct = np.flatnonzero(np.diff(s_sorted)) if s.size > 1 else np.array([], dtype=int)
    ends = np.r_[distinct, s.size - 1]
    tps = np.cumsum(y_sorted)[ends]
    fps = (ends + 1) - tps
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    tpr = np.r_[0.0, tps / n_pos]
    fpr = np.r_[0.0, fps / n_neg]
    thresholds = np.r_[np.inf, s_sorted[ends]]
    auc = float(np.trapezoid(tpr, fpr))
    return RocCurve(fpr=fpr, tpr=tpr, thresholds=thresholds, auc=auc, n_pos=n_pos, n_neg=n_neg)


@dataclass(frozen=True)
class TprAtFpr:
    """TPR at a target FPR, with the evidence behind it.

    The threshold is the lowest score whose empirical FPR does not exceed the target
    (ties never push the FPR past it). ``[ci_low, ci_high]`` is the 95 % interval of
    :func:`tpr_at_fpr`; ``interval`` says which one: ``"rank-mixture"`` (no non-member
    ties a score inside the threshold band and the FPR is measurable) or ``"exact band"``
    (threshold band from the non-members + Clopper-Pearson bounds on the members,
    Bonferroni-combined). ``supported`` is False when there are fewer than
    ``10 / target_fpr`` negatives: the FPR itself is then not measurable.
    """

    target_fpr: float
    tpr: float
    ci_low: float
    ci_high: float
    threshold: float
    achieved_fpr: float
    n_pos: int
    n_neg: int
    supported: bool
    interval: str = "exact band"

    def ci(self) -> tuple[float, float]:
        """The 95 % interval of the TPR at the target FPR (see :func:`tpr_at_fpr`)."""
        return (self.ci_low, self.ci_high)

    def to_json(self) -> dict[str, float | int | bool]:
        """Every field, as plain JSON: ``{tpr, ci_low, ci_high, interval, achieved_fpr, n_neg, supported, ...}``."""
        return dataclasses.asdict(self)


INTERVAL_LIMIT = (
    "Each TPR at a target FPR comes with a 95 % interval that accounts for both samples, because at low FPR the "
    "threshold estimated from the non-members is the larger source of error. Where the scores near the threshold "
    "are continuous (no non-member ties another score there) it is the rank-mixture interval: the true "
    "threshold's rank among the non-members is Binomial(n, FPR), and the TPR there has a Jeffreys Beta "
    "distribution; the interval is the 2.5-97.5 % range of that mixture (simulated coverage 95-97 %, about as "
    "wide as the estimate's own spread). Where scores tie there (plateaus, copies), or the FPR is not measurable, "
    "it is the exact band: a distribution-free band for the threshold from the non-members' order statistics "
    "combined with one-sided Clopper-Pearson bounds on the members at its two ends, conservative for any score "
    "distributions (about 1.5x as wide). The JSON key 'interval' says which one each number used."
)

#: Share of the 5 % error given to the threshold band; the rest goes to the members' counts.
_BAND_SHARE = 0.5


def _binom_lower_rank(m: int, p: float, q: float) -> int:
    """Largest ``k`` with ``P(Binomial(m, p) <= k - 1) <= q`` (0 when even ``k = 1`` fails)."""
    guess = special.bdtrik(q, m, p)  # real-valued inverse of the CDF in k; exact check below
    j = int(np.floor(guess)) if np.isfinite(guess) else 0
    j = min(max(j, -1), m)
    while j >= 0 and special.bdtr(j, m, p) > q:
        j -= 1
    while j + 1 < m and special.bdtr(j + 1, m, p) <= q:
        j += 1
    return j + 1


def _binom_upper_rank(m: int, p: float, q: float) -> int:
    """Smallest ``k`` with ``P(Binomial(m, p) >= k + 1) <= q``."""
    guess = special.bdtrik(1 - q, m, p)
    k = int(np.ceil(guess)) if np.isfinite(guess) else m
    k = min(max(k, 0), m)
    while k < m and special.bdtrc(k, m, p) > q:
        k += 1
    while k > 0 and special.bdtrc(k - 1, m, p) <= q:
        k -= 1
    return k


def _members_above_kth_negative(curve: RocCurve, k: int) -> int:
    """Members scoring strictly above the ``k``-th highest non-member score (1 <= k <= n_neg).

    The ROC's points are at its descending distinct thresholds (index 0 = +inf); the
    ``k``-th highest negative sits at the first point with ``k`` or more false positives
    (FPR a multiple of ``1 / n_neg``, hence the half-step), and "strictly above it" is
    the point just before.
    """
    i = int(np.searchsorted(curve.fpr, (k - 0.5) / curve.n_neg, side="left"))
    return round(curve.tpr[i - 1] * curve.n_pos)


def _binom_rank_weights(m: int, p: float) -> tuple[np.ndarray, np.ndarray]:
    """Ranks ``k`` holding all but ``1e-12`` of Binomial(``m``, ``p``) and their weights (summing to 1)."""
    lo = special.bdtrik(1e-12, m, p)
    hi = special.bdtrik(1 - 1e-12, m, p)
    k_lo = int(np.floor(lo)) - 1 if np.isfinite(lo) else 0
    k_hi = int(np.ceil(hi)) + 1 if np.isfinite(hi) else m
    ks = np.arange(max(k_lo, 0), min(k_hi, m) + 1)
    w = stats.binom.pmf(ks, m, p)
    return ks, w / w.sum()


def _ties_with_a_non_member(curve: RocCurve, k_first: int, k_last: int) -> bool:
    """Whether a non-member shares its score with another score, from the ``k_first``-th to the ``k_last``-th highest non-member.

    Each ROC point past the first is one distinct score; it holds one score unless there
    are ties. A tie among members only changes no count the intervals use.
    """
    fps = np.rint(curve.fpr * curve.n_neg).astype(np.int64)
    tps = np.rint(curve.tpr * curve.n_pos).astype(np.int64)
    size = np.diff(fps) + np.diff(tps)
    neg = np.diff(fps)
    first = int(np.searchsorted(fps, k_first, side="left"))
    last = int(np.searchsorted(fps, min(k_last, curve.n_neg), side="left"))
    band = slice(max(first - 1, 0), last)
    return bool(np.any((size[band] > 1) & (neg[band] > 0)))


def _rank_mixture_interval(curve: RocCurve, fpr: float, level: float) -> tuple[float, float]:
    """The 2.5 / 97.5 % quantiles (for ``level`` 0.95) of the rank-mixture distribution of the TPR.

    For continuous scores the number ``K`` of non-members above the true threshold is
    Binomial(``n_neg``, ``fpr``); given ``K = k`` the threshold sits just above the
    ``(k + 1)``-th highest non-member, where ``x_k`` members score (the point estimate is
    the same count at ``k = floor(fpr * n_neg)``), and the TPR there is given the Jeffreys
    distribution Beta(``x_k + 1/2``, ``n_pos - x_k + 1/2``). The mixture's CDF,
    ``sum_k P(K = k) I_p(x_k + 1/2, n_pos - x_k + 1/2)``, is summed exactly over the ranks
    that carry all but 1e-12 of the binomial and inverted by root finding: no random
    draws, so the same scores give the same interval.
    """
    ks, w = _binom_rank_weights(curve.n_neg, fpr)
    x = np.full(ks.size, float(curve.n_pos))
    inside = ks + 1 <= curve.n_neg
    x[inside] = _members_above_kth_negatives(curve, ks[inside] + 1)
    a, b = x + 0.5, curve.n_pos - x + 0.5

    def cdf(p: float) -> float:
        return float(np.dot(w, special.betainc(a, b, p)))

    tail = (1 - level) / 2
    lo = optimize.brentq(lambda p: cdf(p) - tail, 0.0, 1.0, xtol=1e-12)
    hi = optimize.brentq(lambda p: cdf(p) - (1 - tail), 0.0, 1.0, xtol=1e-12)
    return float(lo), float(hi)


def _members_above_kth_negatives(curve: RocCurve, ks: np.ndarray) -> np.ndarray:
    """:func:`_members_above_kth_negative` for an array of ranks (each in ``1..n_neg``)."""
    i = np.searchsorted(curve.fpr, (ks - 0.5) / curve.n_neg, side="left")
    return np.rint(curve.tpr[i - 1] * curve.n_pos)


def tpr_at_fpr(
    scores: np.ndarray, is_member: np.ndarray, fpr: float, *, level: float = 0.95, interval: str = "auto"
) -> TprAtFpr:
    """TPR when the threshold lets through at most ``fpr`` of the non-members, with an interval.

    The estimand is the TPR of the best threshold rule whose true FPR is at most
    ``fpr`` (for continuous scores ``1 - F_member(F_nonmember^-1(1 - fpr))``). The point
    estimate is the empirical TPR at the lowest score whose empirical FPR is at most
    ``fpr``. Its error has two sources: the threshold is an estimated upper quantile of
    the non-members' scores (at low FPR the larger one: 1,000 non-members at FPR 1 %
    put it on about 10 of them) and the hits are a binomial count among the members.

    Two intervals, and ``interval`` in the result says which one was used:

    - ``"rank-mixture"`` (:func:`_rank_mixture_interval`), when the FPR is measurable
      (``n_neg >= 10 / fpr``) and no non-member ties another score inside the threshold
      band below: the true threshold's rank among the non-members is Binomial(``n_neg``,
      ``fpr``) for continuous scores, the TPR at each rank is Jeffreys Beta, and the
      interval is the ``(1 - level) / 2`` and ``(1 + level) / 2`` quantiles of that
      mixture, computed exactly (binomial weights times Beta CDFs, inverted by root
      finding). Simulated on Gaussian and Student-t scores (200 to 10,000 per class, FPR
      0.2-10 %): coverage 95-97 % at 0.98-1.1x the 2.5-97.5 % spread of the estimate
      (tests/core/common/test_roc.py).
    - ``"exact band"``, everywhere else (ties at the threshold: plateaus, copies; too
      few non-members). Exact and conservative, with no assumption on either score
      distribution (Bonferroni over the two samples; ``a = 1 - level``, half to each):

      1. *Threshold band* (level ``1 - a/2``): the number of non-members at or above the
         true threshold is Binomial(``n_neg``, ``fpr``), so with ``k_lo`` / ``k_hi`` its
         ``a/4`` and ``1 - a/4`` binomial ranks, the rule "score > ``k_lo``-th highest
         non-member" has FPR <= ``fpr`` and every rule with FPR <= ``fpr`` flags only
         scores above the ``(k_hi + 1)``-th highest non-member, each with probability
         >= ``1 - a/4`` (with tied scores the counts are only more favourable).
      2. *Members* (level ``1 - a/2``): those two thresholds depend on the non-members
         only, so the members above each are binomial; the one-sided ``1 - a/4``
         Clopper-Pearson lower bound at the first and upper bound at the second bracket
         the TPR.

      Each side fails with probability at most ``a/2``, the interval with at most ``a``
      (simulated coverage 99.5-99.9 % at 1.5-1.7x the estimate's spread). With fewer than
      about ``4.4 / fpr`` non-members the band reaches past the top score and the lower
      bound is 0: the data cannot exclude no attack at all.

    ``interval="exact band"`` asks for the exact band everywhere (``"auto"``: as above).
    Deterministic (no resampling); three target FPRs on 100,000 + 100,000 scores take
    well under a second (benchmarks/bench_roc.py).

    >>> r = tpr_at_fpr(np.r_[np.arange(100.0) + 1000, np.arange(1000.0)], np.r_[np.ones(100), np.zeros(1000)], 0.01)
    >>> r.tpr, r.supported, r.ci_high, r.interval
    (1.0, True, 1.0, 'rank-mixture')
    """
    return _tpr_at_fpr_on_curve(roc_curve(scores, is_member), fpr, level=level, interval=interval)


def _tpr_at_fpr_on_curve(curve: RocCurve, fpr: float, *, level: float = 0.95, interval: str = "auto") -> TprAtFpr:
    """:func:`tpr_at_fpr` on an ROC already computed (one sort for several target FPRs)."""
    if not 0 < fpr < 1:
        raise InputError(f"The target false-positive rate must be between 0 and 1, got {fpr}.")
    if interval not in ("auto", "exact band"):
        raise ValueError(f"interval must be 'auto' or 'exact band', got {interval!r}")
    n_pos, n_neg = curve.n_pos, curve.n_neg
    ok = np.flatnonzero(curve.fpr <= fpr + 1e-12)
    i = int(ok[-1])
    tpr = float(curve.tpr[i])
    supported = n_neg >= 10.0 / fpr

    q = (1 - level) * _BAND_SHARE / 2  # each tail of the threshold band
    level_members = 1 - (1 - level) * (1 - _BAND_SHARE) / 2  # each one-sided member bound
    k_lo = _binom_lower_rank(n_neg, fpr, q)
    k_hi = _binom_upper_rank(n_neg, fpr, q)
    if interval == "auto" and supported and not _ties_with_a_non_member(curve, max(k_lo, 1), k_hi + 1):
        kind = "rank-mixture"
        lo, hi = _rank_mixture_interval(curve, fpr, level)
    else:
        kind = "exact band"
        lo = 0.0
        if k_lo >= 1:
            lo = clopper_pearson(_members_above_kth_negative(curve, k_lo), n_pos, level=level_members, side="lower")[0]
        hi = 1.0
        if k_hi + 1 <= n_neg:
            hi = clopper_pearson(_members_above_kth_negative(curve, k_hi + 1), n_pos, level=level_members, side="upper")[1]
    return TprAtFpr(
        target_fpr=fpr,
        tpr=tpr,
        ci_low=min(lo, tpr),
        ci_high=max(hi, tpr),
        threshold=float(curve.thresholds[i]),
        achieved_fpr=float(curve.fpr[i]),
        n_pos=n_pos,
        n_neg=n_neg,
        supported=supported,
        interval=kind,
    )


def equal_error_rate(scores: np.ndarray, is_member: np.ndarray) -> float:
    """Equal error rate: where FPR = 1 - TPR (linear interpolation on the ROC)."""
    c = roc_curve(scores, is_member)
    fnr = 1.0 - c.tpr
    diff = c.fpr - fnr
    j = int(np.flatnonzero(diff >= 0)[0])
    if j == 0 or diff[j] == 0:
        return float(c.fpr[j])
    # Interpolate between points j-1 and j where the sign changes.
    t = -diff[j - 1] / (diff[j] - diff[j - 1])
    return float(c.fpr[j - 1] + t * (c.fpr[j] - c.fpr[j - 1]))


@dataclass(frozen=True)
class HardLabelMetrics:
    """Metrics of a yes/no membership decision (one ROC point)."""

    tpr: float
    fpr: float
    accuracy: float
    precision: float
    recall: float
    f1: float
    n_pos: int
    n_neg: int

    def to_json(self) -> dict[str, float]:
        return {
            "tpr": self.tpr,
            "fpr": self.fpr,
            "accuracy": self.accuracy,
            "precision": self.precision,
            "recall": self.recall,
            "f1": self.f1,
        }


def hard_label_metrics(predicted_member: np.ndarray, is_member: np.ndarray) -> HardLabelMetrics:
    """Accuracy, precision, recall and F1 of hard membership predictions.

    >>> m = hard_label_metrics(np.array([1, 0, 1, 0]), np.array([1, 1, 0, 0]))
    >>> (m.accuracy, m.precision, m.recall)
    (0.5, 0.5, 0.5)
    """
    p = np.asarray(predicted_member).astype(bool).ravel()
    y = np.asarray(is_member).astype(bool).ravel()
    if p.shape != y.shape:
        raise InputError(f"Got {p.size} predictions but {y.size} membership labels; they must match.")
    tp = int((p & y).sum())
    fp = int((p & ~y).sum())
    fn = int((~p & y).sum())
    tn = int((~p & ~y).sum())
    n_pos, n_neg = tp + fn, fp + tn
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / n_pos if n_pos else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return HardLabelMetrics(
        tpr=recall,
        fpr=fp / n_neg if n_neg else 0.0,
        accuracy=(tp + tn) / max(p.size, 1),
        precision=precision,
        recall=recall,
        f1=f1,
        n_pos=n_pos,
        n_neg=n_neg,
    )


@dataclass(frozen=True)
class AttackMetrics:
    """Everything reported for one scored attack (docs/methods.md §1.6)."""

    auc: float
    eer: float
    tpr_at_fpr: dict[str, TprAtFpr]
    threshold: float
    accuracy: float
    precision: float
    recall: float
    f1: float
    curve: RocCurve = field(repr=False)

    def to_json(self) -> dict:
        """Plain-JSON summary with docs/contract.md's keys (``auc``, ``tpr_at_fpr``...)."""
        return {
            "auc": self.auc,
            "eer": self.eer,
            "tpr_at_fpr": {k: v.tpr for k, v in self.tpr_at_fpr.items()},
            "tpr_at_fpr_ci": {k: [v.ci_low, v.ci_high] for k, v in self.tpr_at_fpr.items()},
            "tpr_at_fpr_supported": {k: v.supported for k, v in self.tpr_at_fpr.items()},
            "n_positives": self.curve.n_pos,
            "n_negatives": self.curve.n_neg,
            "threshold": self.threshold,
            "accuracy": self.accuracy,
            "precision": self.precision,
            "recall": self.recall,
            "f1": self.f1,
        }


def evaluate_attack(
    scores: np.ndarray,
    is_member: np.ndarray,
    *,
    threshold: float = 0.5,
    fprs: tuple[float, ...] = DEFAULT_FPRS,
) -> AttackMetrics:
    """Score an attack: AUC, EER, TPR at each FPR in ``fprs``, and hard-label metrics.

    Parameters
    ----------
    scores : array
        Membership scores, higher = more member-like (e.g. ``P(member | d)``).
    is_member : array of bool
        Ground truth.
    threshold : float
        Decision threshold for accuracy/precision/recall/F1 (``score >= threshold``).
    fprs : tuple of float
        Target false-positive rates.
    """
    s, y = _check(scores, is_member)
    curve = roc_curve(s, y)
    hard = hard_label_metrics(s >= threshold, y)
    return AttackMetrics(
        auc=curve.auc,
        eer=equal_error_rate(s, y),
        tpr_at_fpr={_fpr_key(f): _tpr_at_fpr_on_curve(curve, f) for f in fprs},
        threshold=threshold,
        accuracy=hard.accuracy,
        precision=hard.precision,
        recall=hard.recall,
        f1=hard.f1,
        curve=curve,
    )
