"""The privacy loss distribution of DP-SGD: T steps of the Poisson-subsampled Gaussian, composed on a grid.

One step of DP-SGD with sampling rate q and noise multiplier sigma is, for one record, the pair
``P = (1 - q) N(0, sigma^2) + q N(1, sigma^2)`` (the record in the data) and ``Q = N(0, sigma^2)``
(out), in units of the clipping norm; its privacy loss ``L = log(P / Q)`` under P has a closed
form (the distribution Opacus' PRV accountant starts from, Gopi et al. 2021). T steps compose:
the losses add, so their distribution is the T-fold convolution.

The distribution is discretised on a grid of spacing ``h`` by "connect the dots" (Doroshenko et
al., PETS 2022; :func:`dp_sgd_pld`): each grid atom's mass is chosen so that the discrete pair's
hockey-stick divergence ``delta(eps)`` equals the true one at every grid point and joins them by
chords of a function convex in ``e^eps``, so it is >= the true one at every eps in R. While
composing, losses beyond the grid's top go to +infinity and those below its bottom are raised to
it: both only raise ``delta(eps)``. The result is a pair of distributions (P on the atoms and
+infinity; Q = P e^-L on the atoms, the rest of Q on an atom of its own) whose trade-off curve is
below the mechanism's in both directions (a larger hockey-stick divergence at every eps means a
lower curve), and composition keeps that order (Dong, Roth and Su 2022): testing the mechanism
against it can only lose power, never validity.

:class:`PrivacyLoss` holds the composed atoms; :meth:`PrivacyLoss.trade_off` the Neyman-Pearson
curve of the pair, symmetrised (the lower convex hull of f and its inverse: a canary can be
in or out); :meth:`PrivacyLoss.epsilon` the epsilon at a delta, the larger of both directions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numba
import numpy as np
from scipy import signal, special

from audit_core.synthetic.numba_runtime import NUMBA_CACHE

__all__ = ["DEFAULT_SPACING", "PrivacyLoss", "dp_sgd_pld", "lower_hull"]

DEFAULT_SPACING = 1e-3
"""Grid spacing of the losses (nats). Connect-the-dots is second order in it: the epsilon of T = 1,000 steps
moves by < 0.002 between 1e-3 and 1e-4 (tests/core/dp/test_pld.py)."""
_TAIL = 1e-14
"""Mass one step may leave beyond the grid's top (it goes to +infinity, so into delta at every eps)."""
_WIDTH_SD = 14.0
"""Half-width of the composed grid in standard deviations of the composed loss (the rest goes to +infinity)."""
_POINTS_PER_SD = 1000
"""Most grid points per standard deviation of the composed loss (a coarser grid beyond: see :func:`dp_sgd_pld`)."""


def _log_sf(x: np.ndarray) -> np.ndarray:
    return special.log_ndtr(-x)


def _step_delta(eps: np.ndarray, q: float, sigma: float) -> np.ndarray:
    """The hockey-stick divergence ``H_{e^eps}(P || Q)`` of one step, exact (``1 - e^eps`` below ``log(1 - q)``)."""
    eps = np.asarray(eps, dtype=np.float64)
    out = -np.expm1(eps)
    above = eps > math.log1p(-q)
    e = eps[above]
    # the loss exceeds eps where x > x_eps; delta = q Phibar((x - 1)/sigma) - (e^eps - 1 + q) Phibar(x/sigma)
    x = sigma**2 * (np.log(np.expm1(e) + q) - math.log(q)) + 0.5
    a = np.log(q) + _log_sf((x - 1) / sigma)
    b = np.log(np.expm1(e) + q) + _log_sf(x / sigma)
    out[above] = np.exp(a) * -np.expm1(np.minimum(b - a, 0.0))
    return np.maximum(out, 0.0)


def _connect_the_dots(q: float, sigma: float, h: float) -> tuple[int, np.ndarray, float]:
    """One step's pessimistic atoms on the grid ``j h``: (index of the first atom, masses, mass at +infinity)."""
    lo = math.floor(math.log1p(-q) / h)
    hi = lo + 64
    while _step_delta(np.array([hi * h]), q, sigma)[0] > _TAIL:
        hi = lo + 2 * (hi - lo)
    grid = np.arange(lo, hi + 1) * h
    x = np.exp(grid)
    d = _step_delta(grid, q, sigma)
    slopes = np.diff(d) / np.diff(x)  # chords of delta as a function of x = e^eps
    left = (d[0] - 1.0) / x[0]  # the chord from (0, 1): delta is 1 - x there (the loss is >= log(1 - q))
    right = 0.0  # flat beyond the last point: the rest is the mass at +infinity
    s = np.r_[left, slopes, right]
    mass = x * np.diff(s)
    return lo, np.maximum(mass, 0.0), float(d[-1])


def _compose(first: int, mass: np.ndarray, inf: float, steps: int, window: tuple[int, int]) -> tuple[np.ndarray, float]:
    """The ``steps``-fold convolution of one step's atoms, kept on ``window`` (grid indices, inclusive).

    Binary powering; after each convolution the atoms above the window go to +infinity and
    those below it are raised to its first atom (both only raise delta at every eps).
    """
    lo, hi = window

    def clip(start: int, m: np.ndarray, m_inf: float) -> tuple[int, np.ndarray, float]:
        end = start + len(m) - 1
        if end > hi:
            m_inf += float(m[hi - start + 1 :].sum()) if hi >= start else float(m.sum())
            m = m[: max(hi - start + 1, 0)]
        if start < lo:
            below = float(m[: lo - start].sum())
            m = m[lo - start :]
            if len(m) == 0:
                m = np.array([below])
            else:
                m = m.copy()
                m[0] += below
            start = lo
        return start, m, m_inf

    def convolve(a: tuple[int, np.ndarray, float], b: tuple[int, np.ndarray, float]) -> tuple[int, np.ndarray, float]:
        m = signal.fftconvolve(a[1], b[1]) if min(len(a[1]), len(b[1])) > 64 else np.convolve(a[1], b[1])
        m = np.maximum(m, 0.0)
        finite_a, finite_b = 1.0 - a[2], 1.0 - b[2]
        inf = 1.0 - finite_a * finite_b
        return clip(a[0] + b[0], m, inf)

    result: tuple[int, np.ndarray, float] | None = None
    power = (first, mass, inf)
    n = steps
    while n:
        if n & 1:
            result = power if result is None else convolve(result, power)
        n >>= 1
        if n:
            power = convolve(power, power)
    assert result is not None
    start, m, m_inf = clip(*result)  # one step alone is not yet on the window
    out = np.zeros(hi - lo + 1)
    out[start - lo : start - lo + len(m)] = m
    return out, m_inf


@dataclass(frozen=True)
class PrivacyLoss:
    """A discrete privacy loss distribution: atoms ``losses`` with P-masses ``masses``, and P-mass at +infinity.

    Q's mass on an atom is ``mass * exp(-loss)``; the rest of Q (``1 - sum``) sits where P has none.
    """

    losses: np.ndarray
    masses: np.ndarray
    infinity: float

    def trade_off(self) -> tuple[np.ndarray, np.ndarray]:
        """The symmetrised trade-off curve as vertices ``(alpha, beta)``: ``conv(min(f, f^-1))`` of the pair.

        f is the Neyman-Pearson curve of P against Q (type I error alpha under P, type II beta
        under Q; reject P where the loss is lowest); f^-1 its mirror (Q against P).
        """
        keep = self.masses > 0
        p, loss = self.masses[keep], self.losses[keep]
        qmass = p * np.exp(-loss)
        q_only = max(0.0, 1.0 - float(qmass.sum()))
        alpha = np.r_[0.0, 0.0, np.cumsum(p)]
        beta = np.r_[1.0, 1.0 - q_only, np.maximum(1.0 - q_only - np.cumsum(qmass), 0.0)]
        alpha = np.r_[alpha, 1.0]
        beta = np.r_[beta, 0.0]
        return lower_hull(np.r_[alpha, beta], np.r_[beta, alpha])

    def delta(self, eps: np.ndarray) -> np.ndarray:
        """``max(H_{e^eps}(P || Q), H_{e^eps}(Q || P))`` at each eps."""
        eps = np.atleast_1d(np.asarray(eps, dtype=np.float64))
        p, loss = self.masses, self.losses
        qmass = p * np.exp(-loss)
        q_only = max(0.0, 1.0 - float(qmass.sum()))
        remove = self.infinity + np.array([float(np.sum(p * -np.expm1(np.minimum(e - loss, 0.0)))) for e in eps])
        add = q_only + np.array([float(np.sum(np.maximum(qmass - math.exp(e) * p, 0.0))) for e in eps])
        return np.maximum(remove, add)

    def epsilon(self, delta: float) -> float:
        """The smallest eps >= 0 with ``delta(eps) <= delta`` (inf when the mass at +infinity alone exceeds delta)."""
        if self.infinity > delta:
            return math.inf
        if self.delta(np.array([0.0]))[0] <= delta:
            return 0.0
        lo, hi = 0.0, 1.0
        while self.delta(np.array([hi]))[0] > delta:
            lo, hi = hi, 2 * hi
        for _ in range(60):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if self.delta(np.array([mid]))[0] > delta else (lo, mid)
            if hi - lo < 1e-7:
                break
        return hi


@numba.njit(cache=NUMBA_CACHE, nogil=True)
def _hull_kernel(xs: np.ndarray, ys: np.ndarray) -> np.ndarray:  # pragma: no cover - compiled
    keep = np.empty(len(xs), dtype=np.int64)
    n = 0
    for k in range(len(xs)):
        px, py = xs[k], ys[k]
        while n >= 2:
            ax, ay = xs[keep[n - 2]], ys[keep[n - 2]]
            bx, by = xs[keep[n - 1]], ys[keep[n - 1]]
            if (bx - ax) * (py - ay) - (by - ay) * (px - ax) <= 0:
                n -= 1
            else:
                break
        if n > 0 and px == xs[keep[n - 1]]:
            continue
        keep[n] = k
        n += 1
    return keep[:n]


def lower_hull(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The lower convex hull of points, as vertices sorted by x (Andrew's monotone chain).

    Examples
    --------
    >>> hx, hy = lower_hull(np.array([0.0, 0.5, 1.0, 0.5]), np.array([1.0, 0.8, 0.0, 0.2]))
    >>> hx.tolist(), hy.tolist()
    ([0.0, 0.5, 1.0], [1.0, 0.2, 0.0])
    """
    order = np.lexsort((y, x))
    xs, ys = np.ascontiguousarray(x[order], dtype=np.float64), np.ascontiguousarray(y[order], dtype=np.float64)
    keep = _hull_kernel(xs, ys)
    return xs[keep], ys[keep]


def _moments(losses: np.ndarray, masses: np.ndarray) -> tuple[float, float]:
    w = masses / max(masses.sum(), 1e-300)
    mean = float(np.sum(w * losses))
    return mean, math.sqrt(max(float(np.sum(w * (losses - mean) ** 2)), 0.0))


def _window(step_losses: np.ndarray, step_masses: np.ndarray, steps: int, h: float) -> tuple[int, int]:
    """The composed grid: the mean of the T-fold sum +- ``_WIDTH_SD`` of its standard deviations (grid indices)."""
    mean, sd = _moments(step_losses, step_masses)
    centre, half = steps * mean, _WIDTH_SD * sd * math.sqrt(steps) + 50 * h
    lowest = steps * float(step_losses[step_masses > 0][0])
    return math.floor(max(centre - half, lowest) / h), math.ceil((centre + half) / h)


def dp_sgd_pld(noise_multiplier: float, sample_rate: float, steps: int, *, spacing: float = DEFAULT_SPACING) -> PrivacyLoss:
    """The pessimistic privacy loss distribution of ``steps`` DP-SGD steps (see the module docstring).

    ``spacing`` is the finest grid; a composed loss spread over more than ``_POINTS_PER_SD`` of
    them per standard deviation (little noise: a leaky member of the family) gets a coarser one
    (only less tight, never less valid).
    """
    q, sigma, h = float(sample_rate), float(noise_multiplier), float(spacing)
    first, mass, inf = _connect_the_dots(q, sigma, h)
    _, sd = _moments((first + np.arange(len(mass))) * h, mass)
    coarse = sd * math.sqrt(steps) / _POINTS_PER_SD
    if coarse > 2 * h:
        h = coarse
        first, mass, inf = _connect_the_dots(q, sigma, h)
    window = _window((first + np.arange(len(mass))) * h, mass, steps, h)
    out, m_inf = _compose(first, mass, inf, steps, window)
    return PrivacyLoss(losses=np.arange(window[0], window[1] + 1) * h, masses=out, infinity=m_inf)
