"""ROC curves, TPR at low FPR with confidence intervals, and hard-label metrics.

Every attack in the dashboard is scored here, so the three audits report the same
quantities the same way. Scores are oriented higher = more member-like; ``is_member``
is the ground truth (members are positives).

Honest statistics (DESIGN.md): a TPR at FPR ``alpha`` is only supported by the data
when there are at least ``10 / alpha`` negatives; :class:`TprAtFpr` carries that flag,
the number of negatives behind it and a Clopper-Pearson interval.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy import stats

from audit_core.errors import InputError

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


def clopper_pearson(successes: int, trials: int, *, level: float = 0.95) -> tuple[float, float]:
    """Exact binomial confidence interval for ``successes / trials``.

    >>> lo, hi = clopper_pearson(0, 10)
    >>> lo == 0.0 and round(hi, 3) == 0.308
    True
    """
    if trials <= 0:
        return (0.0, 1.0)
    a = (1 - level) / 2
    lo = 0.0 if successes == 0 else float(stats.beta.ppf(a, successes, trials - successes + 1))
    hi = 1.0 if successes == trials else float(stats.beta.ppf(1 - a, successes + 1, trials - successes))
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
    (ties never push the FPR past it). ``supported`` is False when there are fewer
    than ``10 / target_fpr`` negatives: the FPR itself is then not measurable.
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

    def ci(self) -> tuple[float, float]:
        """The 95 % Clopper-Pearson interval of the TPR."""
        return (self.ci_low, self.ci_high)


def tpr_at_fpr(scores: np.ndarray, is_member: np.ndarray, fpr: float) -> TprAtFpr:
    """TPR when the threshold lets through at most ``fpr`` of the non-members.

    >>> r = tpr_at_fpr(np.r_[np.arange(100.0) + 1000, np.arange(1000.0)], np.r_[np.ones(100), np.zeros(1000)], 0.01)
    >>> r.tpr, r.supported
    (1.0, True)
    """
    if not 0 < fpr < 1:
        raise InputError(f"The target false-positive rate must be between 0 and 1, got {fpr}.")
    curve = roc_curve(scores, is_member)
    ok = np.flatnonzero(curve.fpr <= fpr + 1e-12)
    i = int(ok[-1])
    tp = round(curve.tpr[i] * curve.n_pos)
    lo, hi = clopper_pearson(tp, curve.n_pos)
    return TprAtFpr(
        target_fpr=fpr,
        tpr=float(curve.tpr[i]),
        ci_low=lo,
        ci_high=hi,
        threshold=float(curve.thresholds[i]),
        achieved_fpr=float(curve.fpr[i]),
        n_pos=curve.n_pos,
        n_neg=curve.n_neg,
        supported=curve.n_neg >= 10.0 / fpr,
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
    """Everything reported for one scored attack (METHODS.md §1.6)."""

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
        """Plain-JSON summary with DESIGN.md's keys (``auc``, ``tpr_at_fpr``...)."""
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
        tpr_at_fpr={_fpr_key(f): tpr_at_fpr(s, y, f) for f in fprs},
        threshold=threshold,
        accuracy=hard.accuracy,
        precision=hard.precision,
        recall=hard.recall,
        f1=hard.f1,
        curve=curve,
    )
