"""The uncertainty of a disclosure risk: Wilson intervals of the success rates, the MOVER-R interval of the risk.

Each success rate gets a 95 % Wilson score interval from its counts. The risk is
``1 - (1 - rate_train) / (1 - rate_control)``: one minus a *ratio of two independent failure
proportions*, so its interval is the MOVER-R interval of that ratio (Donner & Zou 2012,
"Closed-form confidence intervals for functions of the normal mean and standard deviation",
SMMR 21:347; Newcombe's method of recovering variance estimates), built from the two Wilson
intervals: both rates' uncertainty is carried, and the interval is asymmetric where it should
be (rates near 0 or 1). anonymeter propagates the two Wilson errors by the delta method and
clips to [0, 1]; its point estimate uses the Wilson centres. Here the point estimate uses the
observed rates and is not clipped (a negative risk means the control was easier); interval
limits below -1 are shown as -1. The coverage is checked by simulation in
``tests/core/synthetic/test_disclosure.py``. Singling out's interval is widened to a
permutation reference (:mod:`audit_core.synthetic.disclosure.singling_out`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import stats

__all__ = ["CONFIDENCE", "risk_interval", "wilson_interval"]

CONFIDENCE = 0.95
"""Level of every interval of the disclosure attacks."""


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
