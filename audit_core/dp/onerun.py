"""One-run privacy auditing (Steinke, Nasr and Jagielski, NeurIPS 2023: "Privacy Auditing with One (1) Training Run").

m canaries are each included in training independently with probability 1/2. After
training, the auditor guesses "in" for the ``r/2`` canaries with the highest scores and
"out" for the ``r/2`` with the lowest, abstaining on the rest, and counts its correct
guesses ``v``. If training is (epsilon, 0)-DP, ``v`` is stochastically dominated by
``Binomial(r, e^eps / (1 + e^eps))`` (the paper's Theorem 3); for (epsilon, delta)-DP the
paper's Theorem / Algorithm 2 adds ``2 m delta alpha`` to the binomial tail, where

    alpha = max_{1 <= i <= v} P[v - i <= Binomial(r, q) < v] / i.

:func:`p_value` is that bound; :func:`epsilon_bound` the largest epsilon whose p-value
is below a level (the claim "(epsilon, delta)-DP" is rejected for every smaller epsilon).

Choosing r honestly. The best r of one run is optimistic, so :func:`one_run_audit` tries a
grid of r fixed before seeing any score (:data:`_GUESS_FRACTIONS` of m) and pays for the
choice with a Bonferroni correction: each r is tested at ``(1 - confidence) / len(grid)``,
so the largest bound over the grid holds with the full confidence. (Splitting the
canaries to choose r would halve m; with six r the correction costs about 0.6 in the
ceiling at m = 1,000.) :func:`ceiling` is what a perfect attack (every guess right) gives.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import optimize, stats

__all__ = [
    "CONFIDENCE",
    "OneRunBound",
    "ceiling",
    "correct_guesses",
    "epsilon_bound",
    "guess_grid",
    "one_run_audit",
    "p_value",
]

CONFIDENCE = 0.95
"""The confidence of every bound the DP claim check reports (both modes)."""
_GUESS_FRACTIONS = (0.02, 0.05, 0.1, 0.2, 0.5, 1.0)
"""The numbers of guesses tried, as fractions of m, fixed before any score is seen (half "in", half "out")."""


def p_value(m: int, r: int, v: int, eps: float, delta: float) -> float:
    """P[at least v of r guesses correct] under (eps, delta)-DP with m canaries (the paper's Algorithm 2).

    Examples
    --------
    >>> round(p_value(1000, 100, 100, 0.0, 0.0), 6) == round(0.5 ** 100, 6)
    True
    """
    if not 0 <= v <= r <= m:
        raise ValueError(f"need 0 <= v <= r <= m, got m={m}, r={r}, v={v}")
    q = 1.0 / (1.0 + math.exp(-eps))  # accuracy of eps-DP randomized response
    beta = float(stats.binom.sf(v - 1, r, q))  # P[Binomial(r, q) >= v]
    if delta == 0 or v == 0:
        return beta
    i = np.arange(1, v + 1)
    below = stats.binom.sf(v - i - 1, r, q) - beta  # P[v - i <= Binomial(r, q) < v]
    alpha = float(np.max(below / i))
    return min(beta + alpha * delta * 2 * m, 1.0)


def epsilon_bound(m: int, r: int, v: int, delta: float, level: float) -> float:
    """The largest epsilon at which ``p_value(m, r, v, eps, delta) <= level`` (0 when even eps = 0 is not rejected)."""
    if r == 0 or p_value(m, r, v, 0.0, delta) > level:
        return 0.0

    def gap(eps: float) -> float:
        return level - p_value(m, r, v, eps, delta)

    hi = 1.0
    while gap(hi) > 0:  # the p-value rises to 1 as eps grows, so this ends
        hi *= 2
    return float(optimize.brentq(gap, hi / 2 if hi > 1 else 0.0, hi, xtol=1e-9))


def guess_grid(m: int) -> tuple[int, ...]:
    """The numbers of guesses r tried for m canaries: even, at least 2, at most m, distinct."""
    grid = sorted({min(m - m % 2, max(2, 2 * round(f * m / 2))) for f in _GUESS_FRACTIONS})
    return tuple(r for r in grid if r >= 2)


@dataclass(frozen=True)
class OneRunBound:
    """The audited lower bound on epsilon from one training run.

    Attributes
    ----------
    epsilon : float
        The largest epsilon rejected, at ``confidence``, over every r of the grid (Bonferroni).
    confidence : float
    r, correct : int
        The number of guesses and correct guesses behind ``epsilon``.
    m : int
        Canaries.
    delta : float
    grid : tuple of (r, correct, epsilon)
        Every r tried, each tested at ``(1 - confidence) / len(grid)``.
    """

    epsilon: float
    confidence: float
    r: int
    correct: int
    m: int
    delta: float
    grid: tuple[tuple[int, int, float], ...]

    def to_json(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "confidence": self.confidence, "r": self.r, "correct": self.correct,
                "m": self.m, "delta": self.delta, "level_per_r": (1 - self.confidence) / len(self.grid),
                "guesses": [{"r": r, "correct": v, "epsilon": e} for r, v, e in self.grid]}  # fmt: skip


def correct_guesses(scores: np.ndarray, included: np.ndarray, r: int, *, seed: int) -> int:
    """Correct guesses when the r/2 highest scores are guessed "in" and the r/2 lowest "out" (ties broken at random, seeded)."""
    scores = np.asarray(scores, dtype=np.float64)
    included = np.asarray(included, dtype=bool)
    tiebreak = np.random.default_rng(seed).random(len(scores))
    order = np.lexsort((tiebreak, scores))  # ascending score
    half = r // 2
    return int((~included[order[:half]]).sum() + included[order[len(order) - half :]].sum())


def one_run_audit(scores: np.ndarray, included: np.ndarray, *, delta: float, confidence: float = 0.95,
                  seed: int = 0) -> OneRunBound:  # fmt: skip
    """The one-run lower bound on epsilon from canary scores (higher = more likely included)."""
    m = len(scores)
    grid = guess_grid(m)
    level = (1 - confidence) / len(grid)
    rows = []
    for r in grid:
        v = correct_guesses(scores, included, r, seed=seed)
        rows.append((r, v, epsilon_bound(m, r, v, delta, level)))
    best = max(rows, key=lambda row: (row[2], -row[0]))
    return OneRunBound(epsilon=best[2], confidence=confidence, r=best[0], correct=best[1], m=m, delta=delta,
                       grid=tuple(rows))  # fmt: skip


def ceiling(m: int, delta: float, *, confidence: float = 0.95) -> float:
    """The largest bound :func:`one_run_audit` can give with m canaries: every guess right, at every r of the grid."""
    grid = guess_grid(m)
    level = (1 - confidence) / len(grid)
    return max(epsilon_bound(m, r, r, delta, level) for r in grid)
