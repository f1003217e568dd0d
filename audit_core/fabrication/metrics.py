"""How well a score separates positives from negatives (higher = positive): ROC, AUC, EER and the TPR at low FPR
with its interval, through :mod:`audit_core.common.roc`."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from audit_core.common.roc import DEFAULT_FPRS, AttackMetrics, RocCurve, TprAtFpr, evaluate_attack, roc_curve

__all__ = ["auc", "curve", "evaluate", "tpr_json"]


def _pos_neg(pos: np.ndarray, neg: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return np.r_[pos, neg], np.r_[np.ones(pos.size, bool), np.zeros(neg.size, bool)]


def curve(pos: np.ndarray, neg: np.ndarray) -> RocCurve:
    """ROC of positives ``pos`` against negatives ``neg`` (higher = positive)."""
    return roc_curve(*_pos_neg(pos, neg))


def auc(pos: np.ndarray, neg: np.ndarray) -> float:
    """Area under the ROC of positives ``pos`` against negatives ``neg`` (higher = positive)."""
    return float(curve(pos, neg).auc)


def evaluate(pos: np.ndarray, neg: np.ndarray, *, fprs: Sequence[float] = DEFAULT_FPRS) -> AttackMetrics:
    """AUC, EER and the TPR at each target FPR with its 95 % interval (:func:`audit_core.common.roc.evaluate_attack`).

    ``pos`` are the positives (members for an MIA, fabricated images for MFD), ``neg``
    the negatives, scores higher = positive. The interval accounts for the threshold
    being estimated from the negatives; ``supported`` is False below ``10 / fpr`` negatives.
    """
    return evaluate_attack(*_pos_neg(pos, neg), fprs=tuple(fprs))


def tpr_json(tprs: dict[str, TprAtFpr]) -> dict[str, dict]:
    """``{"0.01": {tpr, ci_low, ci_high, achieved_fpr, n_neg, supported, threshold, n_pos, target_fpr}, ...}``."""
    return {k: t.to_json() for k, t in tprs.items()}
