"""Trade-off curves of the claims the f-DP one-run test checks, and their ordered families (Dong, Roth and Su 2022).

A mechanism is f-DP when no test telling "a canary in" from "out" has type II error below
``f(alpha)`` at type I error alpha, in both directions. The f-DP test
(:mod:`audit_core.dp.fdp`, Mahloujifar, Melis and Chaudhuri 2024) reads a curve only
through its inverse blow-up ``g(y) = f(1 - y)`` (for a symmetric f), so a :class:`Curve` is
that function as a piecewise-linear table, always **at or below** the true one: a lower g
rejects less, so a table never makes the test claim more than the curve allows.

Three families, each ordered by a leakage level ``t >= 0`` (0: a mechanism that leaks
nothing; larger: less private) with the epsilon each level stands for at the claim's delta:

- :func:`epsilon_delta_family`: a bare (epsilon, delta) claim, ``f = max(0, 1 - delta -
  e^eps a, e^-eps (1 - delta - a))``; ``t = epsilon``. Exact (four vertices).
- :func:`gaussian_family`: a Gaussian mechanism, ``G_mu(a) = Phi(Phi^-1(1 - a) - mu)``;
  ``t = mu``, epsilon from mu and delta exactly (Balle and Wang 2018). Tabled by tangent lines
  (a convex function lies above its tangents).
- :func:`dp_sgd_family`: DP-SGD at sampling rate q for T steps, ``t = 1 / noise multiplier``;
  the curve of the composed subsampled Gaussian from its pessimistic privacy loss distribution
  (:mod:`audit_core.dp.pld`), epsilon from Opacus' PRV accountant's *lower* error bound (so
  a rejected level never stands for more epsilon than the mechanism it names has).
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import optimize, special, stats

__all__ = [
    "Curve",
    "Family",
    "dp_sgd_epsilon",
    "dp_sgd_family",
    "epsilon_delta_family",
    "gaussian_epsilon",
    "gaussian_family",
]


@dataclass(frozen=True)
class Curve:
    """``g(y) = f(1 - y)`` as a piecewise-linear table: ``y`` increasing from 0 to 1, ``g`` from 0 (or more) to 1."""

    y: np.ndarray
    g: np.ndarray

    def __call__(self, y: float | np.ndarray) -> float | np.ndarray:
        return np.interp(y, self.y, self.g)

    @classmethod
    def from_trade_off(cls, alpha: np.ndarray, beta: np.ndarray) -> Curve:
        """From the vertices of a symmetric convex trade-off curve ``beta = f(alpha)`` (alpha increasing)."""
        return cls(y=np.ascontiguousarray(1.0 - alpha[::-1]), g=np.ascontiguousarray(beta[::-1]))


@dataclass(frozen=True)
class Family:
    """An ordered family of curves: ``curve(t)`` is less private as t grows; ``epsilon(t)`` what level t stands for.

    ``parameters(t)`` names the member for the JSON (mu, the noise multiplier...).
    """

    name: str
    delta: float
    curve: Callable[[float], Curve]
    epsilon: Callable[[float], float]
    parameters: Callable[[float], dict[str, Any]] = field(default=lambda t: {})
    description: dict[str, Any] = field(default_factory=dict)
    relative_tolerance: float = 1e-6
    """How close the search brackets a boundary level (relative to t)."""


# ------------------------------------------------------------------------------------------ (epsilon, delta)
def _epsilon_delta_curve(eps: float, delta: float) -> Curve:
    # vertices of f: (0, 1 - delta), the symmetric kink, (1 - delta, 0), (1, 0)
    k = (1.0 - delta) / (1.0 + math.exp(eps))
    return Curve.from_trade_off(np.array([0.0, k, 1.0 - delta, 1.0]), np.array([1.0 - delta, k, 0.0, 0.0]))


def epsilon_delta_family(delta: float) -> Family:
    """A bare (epsilon, delta) claim: the level is epsilon itself."""
    return Family(name="epsilon-delta", delta=delta, curve=lambda t: _epsilon_delta_curve(t, delta),
                  epsilon=lambda t: t, parameters=lambda t: {"epsilon": t},
                  description={"curve": "epsilon-delta", "delta": delta})  # fmt: skip


# ------------------------------------------------------------------------------------------ Gaussian
def gaussian_epsilon(mu: float, delta: float) -> float:
    """The epsilon at ``delta`` of mu-GDP (the Gaussian mechanism with sensitivity / sigma = mu), exactly."""
    if mu <= 0:
        return 0.0

    def gap(eps: float) -> float:
        return float(stats.norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * stats.norm.cdf(-eps / mu - mu / 2) - delta)

    if gap(0.0) <= 0:
        return 0.0
    hi = 1.0
    while gap(hi) > 0:
        hi *= 2
    return float(optimize.brentq(gap, 0.0, hi, xtol=1e-12))


@functools.lru_cache(maxsize=4096)
def _gaussian_curve(mu: float) -> Curve:
    """``g(y) = Phi(Phi^-1(y) - mu)`` tabled below g: each point lowered by its chords' largest possible gap.

    g is convex, so on [y_k, y_k+1] its chord exceeds it by at most ``(y_k+1 - y_k)(g'(y_k+1) - g'(y_k)) / 4``;
    lowering both ends of every chord by that much keeps the table at or below g everywhere.
    """
    if mu <= 0:
        return Curve(y=np.array([0.0, 1.0]), g=np.array([0.0, 1.0]))
    # Phi(z) is distinct from 0 in float64 above -37; the top stops where one unit in the last place of y (1e-16)
    # moves g by less than 1e-13 (the slope there is e^(mu z - mu^2 / 2)); above it the table is flat at g(y_top)
    top = min(8.0, (math.log(1e3) + mu * mu / 2) / mu)
    z = np.r_[-np.inf, np.linspace(-37.0, top, 9001)]
    y, g = special.ndtr(z), special.ndtr(z - mu)
    slope = np.exp(mu * z - mu * mu / 2)  # g'(y) = phi(z - mu) / phi(z)
    gap = np.diff(y) * np.diff(slope) / 4
    lower = np.maximum(np.r_[gap, 0.0], np.r_[0.0, gap])
    return Curve(y=np.r_[y, 1.0], g=np.r_[g - lower, g[-1]] * (1 - 1e-12) - 1e-15)


def gaussian_family(delta: float) -> Family:
    """A Gaussian mechanism (mu-GDP): the level is mu."""
    return Family(name="gaussian", delta=delta, curve=_gaussian_curve, epsilon=lambda t: gaussian_epsilon(t, delta),
                  parameters=lambda t: {"mu": t}, description={"curve": "gaussian", "delta": delta},
                  relative_tolerance=1e-5)  # fmt: skip


# ------------------------------------------------------------------------------------------ DP-SGD
def dp_sgd_epsilon(noise_multiplier: float, sample_rate: float, steps: int, delta: float) -> float:
    """A lower bound on the epsilon at ``delta`` of DP-SGD: Opacus' PRV accountant's estimate minus its error bound."""
    if noise_multiplier == math.inf:
        return 0.0
    if sample_rate >= 1:  # no subsampling: the Gaussian mechanism composed T times is mu-GDP with mu = sqrt(T) / sigma
        return gaussian_epsilon(math.sqrt(steps) / noise_multiplier, delta)
    from opacus.accountants import PRVAccountant

    accountant = PRVAccountant()
    accountant.history = [(noise_multiplier, sample_rate, steps)]
    error = delta / 1000
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):  # overflow in its tails for large epsilon
            warnings.simplefilter("ignore")
            prv = accountant._get_dprv(eps_error=0.01, delta_error=error)  # the accountant's own discretisation
            lower = float(prv.compute_epsilon(delta, error, 0.01)[0])
    except (RuntimeError, ValueError):  # the PRV cannot resolve this delta (nothing to subtract from): claim nothing
        return 0.0
    return max(lower, 0.0)


@functools.lru_cache(maxsize=256)
def _dp_sgd_curve(noise_multiplier: float, sample_rate: float, steps: int) -> Curve:
    from audit_core.dp.pld import dp_sgd_pld

    if sample_rate >= 1:
        return _gaussian_curve(math.sqrt(steps) / noise_multiplier)
    alpha, beta = dp_sgd_pld(noise_multiplier, sample_rate, steps).trade_off()
    return Curve.from_trade_off(alpha, beta)


def dp_sgd_family(*, sample_rate: float, steps: int, delta: float) -> Family:
    """DP-SGD with this sampling rate and number of steps: the level is 1 / noise multiplier."""

    def sigma(t: float) -> float:
        return math.inf if t <= 0 else round(1.0 / t, 9)

    def curve(t: float) -> Curve:
        if t <= 0:
            return Curve(y=np.array([0.0, 1.0]), g=np.array([0.0, 1.0]))
        return _dp_sgd_curve(sigma(t), float(sample_rate), int(steps))

    return Family(name="dp-sgd", delta=delta, curve=curve,
                  epsilon=lambda t: dp_sgd_epsilon(sigma(t), sample_rate, steps, delta),
                  parameters=lambda t: {"noise_multiplier": sigma(t)},
                  description={"curve": "dp-sgd", "delta": delta, "sample_rate": sample_rate, "steps": steps},
                  relative_tolerance=2e-3)  # fmt: skip
