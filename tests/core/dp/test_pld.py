"""DP-SGD's privacy loss distribution: below the exact curve of one step, its epsilon where Opacus' PRV accountant puts it."""

import numpy as np
import pytest
from scipy import special

from audit_core.dp.pld import dp_sgd_pld, lower_hull
from audit_core.dp.tradeoff import Curve, dp_sgd_epsilon


def _exact_one_step(q, sigma):
    """The exact symmetrised curve of one step: Neyman-Pearson on x (the likelihood ratio rises with x: reject P below a
    threshold t), its mirror, and their lower hull."""
    t = np.linspace(-12 * sigma, 1 + 12 * sigma, 400_001)
    a = (1 - q) * special.ndtr(t / sigma) + q * special.ndtr((t - 1) / sigma)  # P(x < t)
    b = special.ndtr(-t / sigma)  # Q(x >= t)
    return lower_hull(np.r_[a, b], np.r_[b, a])


@pytest.mark.parametrize(("q", "sigma"), [(0.01, 0.8), (0.2, 1.5), (0.5, 0.6)])
def test_one_step_curve_is_just_below_the_exact_one(q, sigma):
    alpha, beta = dp_sgd_pld(sigma, q, 1).trade_off()
    x = np.linspace(0, 1, 4001)
    ours, exact = np.interp(x, alpha, beta), np.interp(x, *_exact_one_step(q, sigma))
    assert np.all(ours <= exact + 1e-6)  # pessimistic (the exact curve is itself drawn through 400,001 thresholds)
    assert np.max(exact - ours) < 3e-3  # and close


@pytest.mark.parametrize(("sigma", "q", "steps"), [(1.0, 0.01, 1000), (0.7, 0.01, 1000), (2.0, 0.1, 100), (0.9, 0.004, 2500)])
def test_epsilon_is_where_the_prv_accountant_puts_it(sigma, q, steps):
    from opacus.accountants import PRVAccountant

    accountant = PRVAccountant()
    accountant.history = [(sigma, q, steps)]
    lower, estimate, upper = accountant._get_dprv(eps_error=0.01, delta_error=1e-8).compute_epsilon(1e-5, 1e-8, 0.01)
    ours = dp_sgd_pld(sigma, q, steps).epsilon(1e-5)
    assert lower <= ours <= upper  # the accountant's own error bounds
    assert ours == pytest.approx(estimate, abs=3e-3)
    assert dp_sgd_epsilon(sigma, q, steps, 1e-5) == pytest.approx(lower)  # what a rejected level stands for: the lower end


def test_the_symmetrised_curve_is_convex_symmetric_and_tighter_with_more_noise():
    a1, b1 = dp_sgd_pld(1.0, 0.02, 300).trade_off()
    a2, b2 = dp_sgd_pld(1.3, 0.02, 300).trade_off()
    x = np.linspace(0, 1, 2001)
    f1, f2 = np.interp(x, a1, b1), np.interp(x, a2, b2)
    assert np.all(f2 >= f1 - 1e-9)  # more noise, more private
    assert np.all(np.diff(f1, 2) >= -1e-9)  # convex
    assert np.allclose(np.interp(f1, a1, b1), x, atol=2e-3)  # symmetric: f(f(x)) = x
    g = Curve.from_trade_off(a1, b1)
    assert g(0.3) == pytest.approx(np.interp(0.7, a1, b1))


def test_lower_hull():
    x = np.array([0.0, 0.2, 0.4, 0.6, 1.0, 0.5])
    y = np.array([1.0, 0.5, 0.45, 0.1, 0.0, 0.6])
    hx, hy = lower_hull(x, y)
    assert hx.tolist() == [0.0, 0.2, 0.6, 1.0]
    assert hy.tolist() == [1.0, 0.5, 0.1, 0.0]
