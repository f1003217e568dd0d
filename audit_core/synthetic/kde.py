"""A Gaussian kernel density estimate of values on [0, 1], by binning and FFT, and its bandwidth (docs/methods.md §1.2).

* linear binning on a fixed grid (2048 points), FFT convolution and linear interpolation,
  so fitting and evaluating cost O(n + m + G log G) instead of the O(n x m) of a direct sum
  (``scipy.stats.gaussian_kde``);
* reflection at both ends of [0, 1], where Gower distances live, so that the density does
  not leak out of the support;
* bandwidth by Scott's or Silverman's rule *scaled by the data's spread*
  ``min(std, IQR / 1.34)``, or by leave-one-out likelihood cross-validation.

The class densities of distances and ``P(member | d)`` built on it are in
:mod:`audit_core.synthetic.density`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from audit_core.common.errors import InputError

__all__ = [
    "BANDWIDTH_RULES",
    "GRID_SIZE",
    "BandwidthRule",
    "GridKDE",
    "as_unit_values",
    "fit_kde",
    "select_bandwidth",
]

BandwidthRule = Literal["silverman", "scott", "cv"]
"""A bandwidth rule by name (a float is a fixed bandwidth)."""
BANDWIDTH_RULES: tuple[str, ...] = ("silverman", "scott", "cv")
"""The KDE bandwidth rules by name (the bandwidth knob's choices; a number is a fixed bandwidth)."""
_RULE_FACTOR = {"silverman": 0.9, "scott": 1.06}  # h = factor * spread * n^(-1/5)

GRID_SIZE = 2048
"""Points of the grid a KDE is tabulated on."""
_TRUNCATE = 8.0  # kernel truncated at 8 bandwidths: dropped mass < 1e-15
_LOG_2PI_HALF = 0.5 * np.log(2.0 * np.pi)


def as_unit_values(values: Sequence[float] | np.ndarray, *, name: str) -> np.ndarray:
    """``values`` as a flat float64 array in [0, 1] (a rounding excess clipped); missing, infinite or outside: refused."""
    x = np.asarray(values, dtype=np.float64).ravel()
    if x.size == 0:
        return x
    lo, hi = float(x.min()), float(x.max())  # NaN and inf propagate into min / max
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise InputError(f"The {name} contain missing or infinite values; pass finite distances in [0, 1].")
    if lo < -1e-12 or hi > 1.0 + 1e-12:
        raise InputError(f"The {name} must lie in [0, 1] (Gower distances); got values outside that range.")
    return np.clip(x, 0.0, 1.0) if (lo < 0.0 or hi > 1.0) else x


_EXACT_QUANTILES_MAX = 200_000
_QUANTILE_BINS = 1 << 20


def _quartiles(x: np.ndarray) -> tuple[float, float]:
    """25th and 75th percentiles of values in [0, 1].

    Exact (``np.percentile``) up to 200,000 values; above that, read off a
    2^20-bin histogram of [0, 1] (error below 1e-6, a fraction of the cost of a
    selection on millions of values).
    """
    if x.size <= _EXACT_QUANTILES_MAX:
        q25, q75 = np.percentile(x, [25.0, 75.0])
        return float(q25), float(q75)
    idx = np.minimum((x * _QUANTILE_BINS).astype(np.int64), _QUANTILE_BINS - 1)
    cum = np.cumsum(np.bincount(idx, minlength=_QUANTILE_BINS))
    out = []
    for q in (0.25, 0.75):
        k = int(np.searchsorted(cum, q * (x.size - 1) + 1.0))  # bin holding the order statistic
        out.append((k + 0.5) / _QUANTILE_BINS)
    return out[0], out[1]


def _spread(x: np.ndarray) -> float:
    """``min(std, IQR / 1.34)``, falling back to whichever is positive."""
    if x.size < 2:
        return 0.0
    std = float(np.std(x, ddof=1))
    q25, q75 = _quartiles(x)
    iqr = (q75 - q25) / 1.34
    positive = [s for s in (std, iqr) if s > 0]
    return min(positive) if positive else 0.0


def _min_bandwidth(grid_size: int) -> float:
    """Smallest bandwidth the grid resolves: two grid steps."""
    return 2.0 / (grid_size - 1)


def select_bandwidth(
    x: Sequence[float] | np.ndarray,
    *,
    method: BandwidthRule | float = "silverman",
    scale: float = 1.0,
    grid_size: int = GRID_SIZE,
) -> float:
    """Bandwidth of a Gaussian KDE of distances on [0, 1].

    Parameters
    ----------
    x : array of float
        The distances the density is fitted to.
    method : {"silverman", "scott", "cv"} or float
        ``"silverman"``: ``0.9 * s * n^(-1/5)``; ``"scott"``: ``1.06 * s * n^(-1/5)``,
        both with ``s = min(std, IQR / 1.34)`` the data's spread (docs/methods.md §1.2:
        an unscaled rule over-smooths distances that occupy a small part of
        [0, 1]). ``"cv"``: the bandwidth that maximises the leave-one-out
        log-likelihood over a grid from 0.2x to 3x Silverman's. A float is used
        as given.
    scale : float
        Multiplier applied to the chosen bandwidth (the dashboard's slider).
    grid_size : int
        Grid of the binned estimate; the bandwidth is never smaller than two
        grid steps (about 1e-3 for the default grid), which is also the
        fallback when the data have no spread.

    Returns
    -------
    float
        The bandwidth, in distance units.

    Raises
    ------
    InputError
        A rule, fixed bandwidth or scale the ``--bandwidth`` / ``--bandwidth-scale`` knobs refuse (an
        unknown rule, a bandwidth or scale of zero or below), with their sentence: never clamped.
    """
    from audit_core.synthetic.spec import TabularSettings  # the knobs' rules (spec imports this module)

    TabularSettings.checked(bandwidth=method, bandwidth_scale=scale)
    h_min = _min_bandwidth(grid_size)
    if not isinstance(method, str):  # a fixed bandwidth
        return max(float(method) * scale, h_min)
    values = as_unit_values(x, name="distances")
    n = values.size
    spread = _spread(values)
    if n < 2 or spread == 0.0:
        return max(h_min * scale, h_min)
    if method == "cv":
        h = _cv_bandwidth(values, start=max(_RULE_FACTOR["silverman"] * spread * n ** (-0.2), h_min), grid_size=grid_size)
    else:
        h = _RULE_FACTOR[method] * spread * n ** (-0.2)
    return max(h * scale, h_min)


def _cv_bandwidth(x: np.ndarray, *, start: float, grid_size: int, n_candidates: int = 24) -> float:
    """Leave-one-out likelihood cross-validation on a log grid around ``start``.

    The grid is bounded below by 0.2x the rule-of-thumb bandwidth: tied values
    (common among Gower distances of mixed tables) make the leave-one-out
    likelihood grow without bound as the bandwidth shrinks, and that bound keeps
    the search away from the degenerate solution.
    """
    candidates = start * np.geomspace(0.2, 3.0, n_candidates)
    rng = np.random.default_rng(0)
    sample = x if x.size <= 20_000 else rng.choice(x, size=20_000, replace=False)
    n = x.size
    best_h, best_ll = start, -np.inf
    for h in candidates:
        h = max(float(h), _min_bandwidth(grid_size))
        kde = fit_kde(x, bandwidth=h, grid_size=grid_size)
        full = kde.evaluate(sample) * n * h  # sum of kernel values (unnormalised by n h)
        own = np.exp(-0.5 * (2.0 * sample / h) ** 2) + np.exp(-0.5 * (2.0 * (1.0 - sample) / h) ** 2)
        own = (own + 1.0) / np.sqrt(2.0 * np.pi)
        loo = np.maximum(full - own, 1e-300) / ((n - 1) * h)
        ll = float(np.mean(np.log(loo)))
        if ll > best_ll:
            best_h, best_ll = h, ll
    return best_h


@dataclass(frozen=True)
class GridKDE:
    """A Gaussian KDE on [0, 1] tabulated on a regular grid (reflected at 0 and 1).

    Attributes
    ----------
    grid : ndarray
        ``grid_size`` equally spaced points from 0 to 1.
    density : ndarray
        The density at each grid point; integrates to 1 over [0, 1].
    bandwidth : float
        Kernel standard deviation, in distance units.
    n : int
        Number of values fitted.
    """

    grid: np.ndarray
    density: np.ndarray
    bandwidth: float
    n: int

    def evaluate(self, x: Sequence[float] | np.ndarray) -> np.ndarray:
        """Density at ``x`` by linear interpolation between grid points (0 outside [0, 1])."""
        x = np.asarray(x, dtype=np.float64)
        m = self.density.size
        if x.size and not (x.min() >= 0.0 and x.max() <= 1.0):  # NaN and out-of-range: slow, masked path
            inside = (x >= 0.0) & (x <= 1.0)
            out = np.zeros(x.shape)
            out[inside] = self.evaluate(x[inside])
            return out
        # The grid is regular on [0, 1]: index arithmetic beats np.interp's binary search.
        t = x * (m - 1)
        lo = np.minimum(t.astype(np.intp), m - 2)
        t -= lo
        slope = np.diff(self.density)
        out = self.density[lo]
        out += slope[lo] * t
        return out

    __call__ = evaluate


def fit_kde(
    x: Sequence[float] | np.ndarray,
    *,
    bandwidth: BandwidthRule | float = "silverman",
    scale: float = 1.0,
    grid_size: int = GRID_SIZE,
) -> GridKDE:
    """Fit a reflected Gaussian KDE to values on [0, 1] by binning and FFT.

    Linear binning puts each value's unit mass on its two neighbouring grid
    points; the binned counts are convolved with the Gaussian kernel (FFT); the
    parts that spill beyond 0 and 1 are folded back (reflection). Cost is
    O(n + G log G) for G grid points, independent of how many points are then
    evaluated (docs/methods.md §1.2).

    Parameters
    ----------
    x : array of float
        Values in [0, 1]; at least one.
    bandwidth : {"silverman", "scott", "cv"} or float
        See :func:`select_bandwidth`.
    scale : float
        Multiplier on the bandwidth.
    grid_size : int
        Number of grid points (default 2048).

    Returns
    -------
    GridKDE

    Examples
    --------
    >>> kde = fit_kde([0.2, 0.3, 0.4], bandwidth=0.05)
    >>> round(float(kde.density.sum() * (kde.grid[1] - kde.grid[0])), 2)
    1.0
    """
    values = as_unit_values(x, name="distances")
    if values.size == 0:
        raise InputError("Cannot fit a density to an empty set of distances.")
    if grid_size < 16:
        raise InputError(f"The KDE grid needs at least 16 points; got {grid_size}.")
    h = select_bandwidth(values, method=bandwidth, scale=scale, grid_size=grid_size)
    m = grid_size
    delta = 1.0 / (m - 1)
    grid = np.linspace(0.0, 1.0, m)

    # Linear binning.
    t = values * (m - 1)
    lo = np.minimum(t.astype(np.intp), m - 2)  # values are >= 0, so truncation is floor
    t -= lo  # now the fraction of the way to the next grid point
    upper = np.bincount(lo, weights=t, minlength=m)
    counts = np.bincount(lo, minlength=m) - upper
    counts[1:] += upper[:-1]

    # Kernel over lags -L..L (L never beyond the grid, so one reflection per side).
    lags = min(m - 1, int(np.ceil(_TRUNCATE * h / delta)))
    u = np.arange(-lags, lags + 1) * delta / h
    kernel = np.exp(-0.5 * u * u - _LOG_2PI_HALF)
    size = m + 2 * lags  # full linear convolution; y[i] is position i - lags (in grid steps)
    nfft = 1 << int(np.ceil(np.log2(size)))
    y = np.fft.irfft(np.fft.rfft(counts, nfft) * np.fft.rfft(kernel, nfft), nfft)[:size]
    y = np.maximum(y, 0.0)  # FFT round-off can leave tiny negatives

    k = np.arange(m)
    dens = y[k + lags].copy()
    # Reflection at 0: mass at position -k folds onto k.
    left = k <= lags
    dens[left] += y[lags - k[left]]
    # Reflection at 1: mass at position 2(m-1) - k folds onto k.
    right = (m - 1 - k) <= lags
    dens[right] += y[lags + 2 * (m - 1) - k[right]]
    dens /= values.size * h
    return GridKDE(grid=grid, density=dens, bandwidth=h, n=int(values.size))

