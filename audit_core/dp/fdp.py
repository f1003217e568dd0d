"""The f-DP one-run test (Mahloujifar, Melis and Chaudhuri, ICML 2025: "Auditing f-Differential Privacy in One Run").

The same game as :mod:`audit_core.dp.onerun`: m canaries each in with probability 1/2,
``r`` guesses (the r/2 highest scores "in", the r/2 lowest "out"), ``v`` of them right. Where
Steinke et al. bound the tail of v through (epsilon, delta), this test uses the claimed
mechanism's whole trade-off curve f (:mod:`audit_core.dp.tradeoff`). With ``g(y) = f(1 - y)``
(the inverse of the blow-up ``1 - f``) and ``tau`` the level, the paper's Algorithm 3 starts
from ``rho = tau v / m`` and ``eta = tau (r - v) / m`` and for ``i = v - 1, ..., 0`` sets

    eta' = max(eta, g(rho)),   rho' = rho + i / (r - i) (eta' - eta);

if ``rho + eta > r / m`` at the end, P[v or more right] <= tau for every f-DP mechanism (their
Theorem 3.2): the claim "f-DP" is rejected at level tau. (``rho`` is capped at 1, as in
``jax_privacy.auditing``: only a smaller sum, a more cautious test.)

:func:`boundary` finds, within a family ordered by leakage, the largest level the observation
rejects; :func:`fdp_audit` does it for every r of the same pre-set grid as Steinke's test,
each at ``(1 - confidence) / len(grid)`` (Bonferroni), and reports the epsilon the largest
rejected level stands for. :func:`fdp_ceiling` is the bound with every guess right.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numba
import numpy as np

from audit_core.dp.onerun import correct_guesses, guess_grid
from audit_core.dp.tradeoff import Curve, Family
from audit_core.synthetic.numba_runtime import NUMBA_CACHE

__all__ = ["FdpBound", "boundary", "fdp_audit", "fdp_ceiling", "rejects"]


@numba.njit(cache=NUMBA_CACHE, nogil=True)
def _rejects(y: np.ndarray, g: np.ndarray, m: int, r: int, v: int, level: float) -> bool:  # pragma: no cover - compiled
    rho = level * v / m
    eta = level * (r - v) / m
    for i in range(v - 1, -1, -1):
        new = np.interp(rho, y, g)
        if new <= eta:  # eta, and so rho, can no longer change
            break
        rho = min(rho + i / (r - i) * (new - eta), 1.0)
        eta = new
    return rho + eta > r / m


def rejects(curve: Curve, m: int, r: int, v: int, level: float) -> bool:
    """Whether v right of r guesses on m canaries rejects "f-DP" at ``level`` (the paper's Algorithm 3).

    Examples
    --------
    >>> from audit_core.dp.tradeoff import epsilon_delta_family
    >>> family = epsilon_delta_family(1e-5)
    >>> rejects(family.curve(0.0), 1000, 100, 100, 0.05), rejects(family.curve(10.0), 1000, 100, 100, 0.05)
    (True, False)
    """
    if not 0 <= v <= r <= m or r == 0:
        raise ValueError(f"need 0 <= v <= r <= m and r > 0, got m={m}, r={r}, v={v}")
    return bool(_rejects(curve.y, curve.g, int(m), int(r), int(v), float(level)))


def boundary(family: Family, m: int, r: int, v: int, level: float, *, above: float = 0.0) -> float | None:
    """The largest leakage level of ``family`` that the observation rejects, to the family's tolerance.

    0.0 when it rejects not even level 0 (a mechanism that leaks nothing). With ``above`` > 0,
    None when the observation does not reject ``above`` itself (it cannot beat that level:
    the search is skipped). The returned level is always one the test rejected.
    """

    def rejected(t: float) -> bool:
        return rejects(family.curve(t), m, r, v, level)

    lo = above
    if not rejected(lo):
        return None if above > 0 else 0.0
    hi = max(2.0 * lo, 1.0)
    while rejected(hi):
        lo, hi = hi, 2.0 * hi
        if hi > 1e6:  # every level rejected: only possible with a curve that is no trade-off curve
            raise ValueError(f"the observation rejects every level of the {family.name} family")
    while hi - lo > family.relative_tolerance * hi:
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if rejected(mid) else (lo, mid)
    return lo


@dataclass(frozen=True)
class FdpBound:
    """The f-DP one-run bound of one run: the largest epsilon whose member of the family is rejected.

    Attributes
    ----------
    epsilon : float
        What the largest rejected level stands for, over every r of the grid (Bonferroni).
    level : float
        That level (epsilon, mu or 1 / noise multiplier: ``family``).
    family : str
    parameters : dict
        The rejected member's parameters (its noise multiplier...).
    grid : tuple of (r, correct, epsilon)
        Every r tried, each tested at ``(1 - confidence) / len(grid)``.
    """

    epsilon: float
    level: float
    family: str
    parameters: dict[str, Any]
    description: dict[str, Any]
    confidence: float
    r: int
    correct: int
    m: int
    delta: float
    grid: tuple[tuple[int, int, float], ...]

    def to_json(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "confidence": self.confidence, "r": self.r, "correct": self.correct,
                "m": self.m, "delta": self.delta, "curve": self.description, "rejected": self.parameters,
                "guesses": [{"r": r, "correct": v, "epsilon": e} for r, v, e in self.grid]}  # fmt: skip


def _bound(family: Family, m: int, counts: list[tuple[int, int]], level: float, confidence: float, *,
           every_r: bool = True) -> FdpBound:  # fmt: skip
    """The bound over the grid; ``every_r`` False: the epsilon of the best level only (the others read NaN)."""
    levels = [boundary(family, m, r, v, level) or 0.0 for r, v in counts]
    best = max(range(len(levels)), key=lambda i: (levels[i], -counts[i][0]))
    t_best = levels[best]
    eps = {t: family.epsilon(t) if t > 0 else 0.0 for t in (levels if every_r else [t_best])}
    rows = tuple((r, v, eps.get(t, float("nan"))) for (r, v), t in zip(counts, levels, strict=True))
    return FdpBound(epsilon=eps[t_best], level=t_best, family=family.name, parameters=family.parameters(t_best),
                    description=family.description, confidence=confidence, r=rows[best][0], correct=rows[best][1],
                    m=m, delta=family.delta, grid=rows)  # fmt: skip


def fdp_audit(scores: np.ndarray, included: np.ndarray, family: Family, *, confidence: float = 0.95,
              seed: int = 0) -> FdpBound:  # fmt: skip
    """The f-DP one-run lower bound on epsilon from canary scores (higher = more likely included)."""
    m = len(scores)
    grid = guess_grid(m)
    counts = [(r, correct_guesses(scores, included, r, seed=seed)) for r in grid]
    return _bound(family, m, counts, (1 - confidence) / len(grid), confidence)


def fdp_ceiling(m: int, family: Family, *, confidence: float = 0.95) -> float:
    """The largest bound :func:`fdp_audit` can give with m canaries: every guess right, at every r of the grid.

    Kept per (m, family, confidence): a family is named by its description (curve, delta and parameters).
    """
    key = (m, repr(sorted(family.description.items())), confidence)
    if key not in _CEILINGS:
        grid = guess_grid(m)
        _CEILINGS[key] = _bound(family, m, [(r, r) for r in grid], (1 - confidence) / len(grid), confidence,
                               every_r=False).epsilon
    return _CEILINGS[key]


_CEILINGS: dict[tuple[Any, ...], float] = {}
"""The ceilings computed so far (pure functions of their key)."""
