"""The distribution of nearest-neighbour distances of one class, and P(member | d) (docs/methods.md §1.2-§1.3).

On the Gaussian KDE of :mod:`audit_core.synthetic.kde`:

* the point mass at d = 0 (records copied verbatim into the synthetic table),
  counted with add-one smoothing, and a uniform component shared by both
  classes so that the posterior is the prior wherever both densities are thin;
* the class densities of ``d > 0`` estimated on a log-like axis
  ``u = log(1 + d / c) / log(1 + 1 / c)`` (:func:`kde_axis`, ``c = 1e-4``), so the
  kernel's width grows with the distance (an adaptive bandwidth): near-copies
  of training rows at ``d ~ 0.001`` keep their own peak instead of being
  smeared into the bulk at ``d ~ 0.03`` (issue 10.3);
* the posterior ``P(member | d)`` computed in log space, never 0/0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from audit_core.common.errors import InputError
from audit_core.synthetic.kde import GRID_SIZE, BandwidthRule, GridKDE, as_unit_values, fit_kde

__all__ = [
    "LOG_AXIS_SCALE",
    "ZERO_TOL",
    "DistanceDensity",
    "MembershipPosterior",
    "fit_distance_density",
    "fit_posterior",
    "kde_axis",
]

#: Default size of the uniform floor, in records (see :func:`fit_distance_density`).
_FLOOR_RECORDS = 10.0
#: Distances at or below this value count as exact copies (the point mass at 0).
ZERO_TOL = 1e-9
#: ``c`` of the log-like KDE axis (:func:`kde_axis`): below it the axis is nearly linear.
LOG_AXIS_SCALE = 1e-4
#: Fewest records' worth of either class near a distance for ``P(member | d)`` to count as resting on data
#: (:meth:`MembershipPosterior.supported`); below it the record reads "too little data to tell".
_MIN_SUPPORT_RECORDS = 1.0


def kde_axis(d: np.ndarray, scale: float | None = LOG_AXIS_SCALE) -> tuple[np.ndarray, np.ndarray]:
    """The axis the class densities are estimated on, and its derivative: ``(u(d), du/dd)``.

    ``u = log(1 + d / c) / log(1 + 1 / c)`` maps [0, 1] onto [0, 1], is linear for
    ``d << c`` and logarithmic for ``d >> c``. A Gaussian kernel of width ``h`` on
    this axis has width about ``h * log(1 + 1/c) * (c + d)`` in distance units: a
    bandwidth that grows with the distance (a transformation KDE, Wand, Marron and
    Ruppert 1991). Nearest-neighbour distances are skewed: most records sit in a
    bulk at a few hundredths while copies with one value nudged sit at a few
    thousandths; one bandwidth fitted to the whole class smears those into the
    bulk and gives them P(member) near the prior although a plain distance
    threshold finds them (issue 10.3: Adult, 5 % of the members near-copied, TPR
    at 1 % FPR 0.029 on the linear axis against 0.034 for the threshold and 0.044
    for DOMIAS; 0.058 on this axis, with the AUC on independent data 0.510).
    ``P(member | d)`` is a ratio of the two class densities at the same ``d``, so
    the Jacobian cancels there; it matters only for densities shown in ``d``
    units. ``c = 1e-4`` is the Gower distance of one value off by 1 % of its range
    in a table of 100 columns: below that, distances are treated alike. ``None``
    or 0 gives the plain distance axis.
    """
    x = np.asarray(d, dtype=np.float64)
    if not scale:
        return x, np.ones_like(x)
    norm = np.log1p(1.0 / scale)
    return np.log1p(x / scale) / norm, 1.0 / ((scale + x) * norm)


@dataclass(frozen=True)
class DistanceDensity:
    """The distribution of one class's distances: point mass at 0, a density on (0, 1], a uniform floor.

    A mixture with weights ``1 : floor`` of the class model and the uniform
    distribution on (0, 1]::

        P(d = 0)      = p_zero / (1 + floor)
        f(d), d > 0   = ((1 - p_zero) * kde(d) + floor) / (1 + floor)

    with ``p_zero = (n_zero + a) / (n + 2a)`` (add-one smoothing by default; see
    :func:`fit_distance_density`). ``kde`` and the floor are densities on the
    axis ``u = axis(d)`` (:func:`kde_axis`); ``f`` in ``d`` units carries the factor
    ``du/dd``, the same for both classes; the floor is uniform in ``d``. The floor is a share of *total* probability,
    not of the continuous part: when two classes share the same floor
    (:func:`fit_posterior` gives them the larger of their two), their density
    ratio is exactly 1 wherever both kernel estimates vanish, so ``P(member | d)``
    is the prior there, whatever the bandwidths or the exact-copy rates
    (docs/methods.md §1.2: thin tails shrink toward the prior).

    Attributes
    ----------
    n : int
        Number of distances fitted.
    n_zero : int
        How many of them are exact copies (d <= ZERO_TOL).
    p_zero : float
        Smoothed probability of d = 0 under the class model.
    kde : GridKDE or None
        KDE of the positive distances on the KDE axis; None when there are none.
    floor : float
        Weight of the uniform component, relative to the class model's 1.
    axis_scale : float or None
        ``c`` of the KDE axis (:func:`kde_axis`); None: the plain distance axis.
    """

    n: int
    n_zero: int
    p_zero: float
    kde: GridKDE | None
    floor: float
    axis_scale: float | None = LOG_AXIS_SCALE

    @property
    def bandwidth(self) -> float:
        """The KDE bandwidth on the KDE axis (NaN when there is no continuous part)."""
        return self.kde.bandwidth if self.kde is not None else float("nan")

    def _continuous(self, x: np.ndarray) -> np.ndarray:
        u, jac = kde_axis(x, self.axis_scale)
        kde = self.kde.evaluate(u) * jac if self.kde is not None else np.zeros_like(u)
        return ((1.0 - self.p_zero) * kde + self.floor) / (1.0 + self.floor)

    def log_density(self, d: Sequence[float] | np.ndarray) -> np.ndarray:
        """Log density (w.r.t. a unit atom at 0 plus Lebesgue measure on (0, 1]).

        Returns ``log P(d = 0)`` for exact copies and ``log f(d)`` elsewhere;
        ``-inf`` where the density is 0.
        """
        x = np.clip(np.asarray(d, dtype=np.float64), 0.0, 1.0)
        with np.errstate(divide="ignore"):
            out = np.log(self._continuous(x))
            log_zero = np.log(self.p_zero) - np.log1p(self.floor)
        return np.where(x <= ZERO_TOL, log_zero, out)

    def records_near(self, d: Sequence[float] | np.ndarray) -> np.ndarray:
        """How many of this class's records the estimate rests on at each distance, in records' worth.

        At ``d > 0``: the kernel density on the KDE axis times ``sqrt(2 pi) h`` times the
        number of positive distances (a record at ``d`` itself counts 1, one a bandwidth
        away 0.61); at ``d = 0``: the number of exact copies. The uniform floor is not data
        and does not count.
        """
        x = np.clip(np.asarray(d, dtype=np.float64), 0.0, 1.0)
        if self.kde is None:
            near = np.zeros_like(x)
        else:
            u = np.clip(kde_axis(x, self.axis_scale)[0], 0.0, 1.0)
            near = self.kde.evaluate(u) * np.sqrt(2.0 * np.pi) * self.kde.bandwidth * self.kde.n
        return np.where(x <= ZERO_TOL, float(self.n_zero), near)

    def curve(self, grid: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The kernel estimate of the density of d given d > 0, in ``d`` units, on a grid (for plots).

        The uniform floor is left out: it is a shrinkage device of the
        posterior, and in ``d`` units it is a spike of height ``floor * du/dd``
        at 0 that would flatten every other feature of the figure.
        """
        x = np.linspace(0.0, 1.0, 512) if grid is None else np.asarray(grid, dtype=np.float64)
        if self.kde is None:
            return x, np.zeros_like(x)
        u, jac = kde_axis(x, self.axis_scale)
        return x, self.kde.evaluate(u) * jac

    def with_floor(self, floor: float) -> DistanceDensity:
        """The same class model with another uniform floor."""
        return replace(self, floor=float(floor))


def fit_distance_density(
    d: Sequence[float] | np.ndarray,
    *,
    bandwidth: BandwidthRule | float = "silverman",
    scale: float = 1.0,
    floor_records: float = _FLOOR_RECORDS,
    zero_pseudo_count: float = 1.0,
    grid_size: int = GRID_SIZE,
    axis_scale: float | None = LOG_AXIS_SCALE,
) -> DistanceDensity:
    """Fit the point-mass-plus-KDE model of one class's distances.

    Parameters
    ----------
    d : array of float
        Nearest-neighbour distances in [0, 1] of one class (members or non-members).
    bandwidth, scale, grid_size
        See :func:`fit_kde`; the bandwidth is chosen on the positive distances,
        on the KDE axis (a number is a bandwidth on that axis).
    floor_records : float
        Size of the uniform floor, as the peak density that this many records
        contribute: ``floor = floor_records / (sqrt(2 pi) * h * n_pos)``. A
        stretch of distances where one class has a few records and the other
        none then gets a density ratio near 1, not thousands: estimation noise
        in the tails does not outrank an exact copy (docs/methods.md §1.2). In
        :func:`fit_posterior` both classes get the larger of their two floors,
        so that far from every record the posterior is exactly the prior (with
        a floor per class it tended to the ratio of the two floors, i.e. of
        the bandwidths: P = 0.61 to 0.66 at large distances, issue 9). The
        default, 10, is small in density terms (0.1 for 8,000 distances at
        h = 0.005, against peaks of 20 to 50) and was chosen on UCI Adult
        with 5 % of the members copied into an otherwise independent
        synthetic table: with 1 (or 3) record(s), tail noise reached
        P = 0.72 (0.63) above the copies' 0.59 once the sampling weight
        column was dropped (about 10 % natural duplicates); with 10 it stayed
        at 0.57, while TPR at 1 % FPR moved from 0.0605 to 0.0592 with the
        weight column kept and the AUC on independent data stayed 0.507.
        0 turns the floor off.
    axis_scale : float or None
        ``c`` of the log-like KDE axis (:func:`kde_axis`); None for the plain
        distance axis.
    zero_pseudo_count : float
        Smoothing of the point mass: ``P(d = 0) = (n_zero + a) / (n + 2a)``;
        the default 1 is add-one (Laplace) smoothing. 0 says that this class
        cannot hold exact copies at all (used for the realistic attack's
        pseudo-non-members, which are by construction the records *far* from
        the synthetic table).

    Returns
    -------
    DistanceDensity
    """
    values = as_unit_values(d, name="distances")
    if values.size == 0:
        raise InputError("Cannot fit a distance density to an empty set of records.")
    if floor_records < 0 or not np.isfinite(floor_records):
        raise InputError(f"floor_records must be a non-negative number; got {floor_records!r}.")
    if zero_pseudo_count < 0 or not np.isfinite(zero_pseudo_count):
        raise InputError(f"zero_pseudo_count must be a non-negative number; got {zero_pseudo_count!r}.")
    zero = values <= ZERO_TOL
    n, n_zero = int(values.size), int(zero.sum())
    positive = values[~zero]
    kde = None
    floor = 0.0
    if positive.size:
        u = np.clip(kde_axis(positive, axis_scale)[0], 0.0, 1.0)
        kde = fit_kde(u, bandwidth=bandwidth, scale=scale, grid_size=grid_size)
        # The floor is uniform in d (so far beyond every record P is the prior): the peak
        # density, in d units, of floor_records records at the class's median distance.
        jac_median = kde_axis(np.array([np.median(positive)]), axis_scale)[1][0]
        floor = floor_records * jac_median / (np.sqrt(2.0 * np.pi) * kde.bandwidth * positive.size)
    if kde is None or floor == 0.0:
        floor = max(floor, 1e-12)  # a class with no positive distances: uniform on (0, 1]
    p_zero = (n_zero + zero_pseudo_count) / (n + 2.0 * zero_pseudo_count)
    return DistanceDensity(n=n, n_zero=n_zero, p_zero=p_zero, kde=kde, floor=float(floor), axis_scale=axis_scale)


@dataclass(frozen=True)
class MembershipPosterior:
    """``P(member | d)`` from the two class densities and a prior (docs/methods.md §1.3).

    Attributes
    ----------
    members, non_members : DistanceDensity
        Fitted class densities.
    prior : float
        Prior probability of membership, ``pi``.
    """

    members: DistanceDensity
    non_members: DistanceDensity
    prior: float

    def log_odds(self, d: Sequence[float] | np.ndarray) -> np.ndarray:
        """``log(pi f_m(d)) - log((1 - pi) f_n(d))``; 0 where both densities vanish."""
        lm = self.members.log_density(d) + np.log(self.prior)
        ln = self.non_members.log_density(d) + np.log1p(-self.prior)
        both = np.isneginf(lm) & np.isneginf(ln)
        with np.errstate(invalid="ignore"):
            odds = lm - ln
        prior_odds = np.log(self.prior) - np.log1p(-self.prior)
        return np.where(both, prior_odds, odds)

    def supported(self, d: Sequence[float] | np.ndarray) -> np.ndarray:
        """Whether ``P(member | d)`` rests on data: at least :data:`_MIN_SUPPORT_RECORDS` records' worth of either class near d.

        Where neither class has data, the two floors cancel and ``P(member | d)`` is the
        prior (or near it): a record there reads 0.5 as if calibrated, but there is too
        little data to tell. An exact copy (``d = 0``) is supported when either class holds
        one, or when the non-member class cannot (its point mass is 0 by construction, as
        for the realistic attack's pseudo-non-members).
        """
        x = np.asarray(d, dtype=np.float64)
        near = np.maximum(self.members.records_near(x), self.non_members.records_near(x))
        structural = (x <= ZERO_TOL) & (self.non_members.p_zero == 0.0)
        return (near >= _MIN_SUPPORT_RECORDS) | structural

    def p_member(self, d: Sequence[float] | np.ndarray) -> np.ndarray:
        """``P(member | d)`` for each distance: a number in [0, 1], never NaN."""
        z = self.log_odds(d)
        # Numerically stable logistic that also maps +-inf to 1 / 0.
        out = np.empty_like(z)
        pos = z >= 0
        out[pos] = 1.0 / (1.0 + np.exp(-z[pos]))
        ez = np.exp(z[~pos])
        out[~pos] = ez / (1.0 + ez)
        return out


def fit_posterior(
    d_members: Sequence[float] | np.ndarray,
    d_non_members: Sequence[float] | np.ndarray,
    *,
    bandwidth: BandwidthRule | float = "silverman",
    scale: float = 1.0,
    prior: float = 0.5,
    floor_records: float = _FLOOR_RECORDS,
    non_member_zero_pseudo_count: float = 1.0,
    grid_size: int = GRID_SIZE,
    axis_scale: float | None = LOG_AXIS_SCALE,
) -> MembershipPosterior:
    """Fit ``KDE_m`` and ``KDE_n`` (each with its own bandwidth) and return the posterior.

    Parameters
    ----------
    d_members, d_non_members : array of float
        Distances of the (pseudo-)members and (pseudo-)non-members.
    bandwidth, scale, floor_records, grid_size, axis_scale
        See :func:`fit_distance_density`.
    prior : float
        ``pi`` in ``P(member | d) = pi f_m / (pi f_m + (1 - pi) f_n)``.
    non_member_zero_pseudo_count : float
        Point-mass smoothing of the non-member class (1 = add-one; 0 when the
        non-members cannot be exact copies by construction, as for pseudo-labels
        defined by a positive distance threshold).

    Returns
    -------
    MembershipPosterior

    Examples
    --------
    >>> post = fit_posterior([0.0, 0.0, 0.1, 0.2], [0.3, 0.4, 0.5, 0.35], bandwidth=0.05)
    >>> bool(post.p_member([0.0])[0] > 0.5 > post.p_member([0.4])[0])
    True

    Raises
    ------
    InputError
        A bandwidth, scale or prior the tabular audit's knobs refuse, with the CLI's sentence.
    """
    from audit_core.synthetic.spec import TabularSettings  # the knobs' rules (spec imports this package)

    TabularSettings.checked(bandwidth=bandwidth, bandwidth_scale=scale, prior=prior)
    members = fit_distance_density(
        d_members, bandwidth=bandwidth, scale=scale, floor_records=floor_records, grid_size=grid_size,
        axis_scale=axis_scale,
    )  # fmt: skip
    non_members = fit_distance_density(
        d_non_members, bandwidth=bandwidth, scale=scale, floor_records=floor_records, grid_size=grid_size,
        axis_scale=axis_scale, zero_pseudo_count=non_member_zero_pseudo_count,
    )  # fmt: skip
    # One floor for both classes (the larger): where both kernel estimates vanish the
    # ratio is then exactly 1 and P(member | d) the prior (docs/methods.md §1.2).
    floor = max(members.floor, non_members.floor)
    return MembershipPosterior(members=members.with_floor(floor), non_members=non_members.with_floor(floor), prior=float(prior))
