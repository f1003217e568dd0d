"""Tests for audit_core.synthetic.kde and .density (docs/methods.md §1.2-3): binned FFT KDE and P(member | d)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import gaussian_kde

from audit_core.common.errors import InputError
from audit_core.synthetic.density import fit_distance_density, fit_posterior
from audit_core.synthetic.kde import fit_kde, select_bandwidth


def _reflected_scipy(x: np.ndarray, h: float, at: np.ndarray) -> np.ndarray:
    """Direct O(n x m) reflected Gaussian KDE through scipy, as the reference."""
    augmented = np.r_[x, -x, 2.0 - x]
    kde = gaussian_kde(augmented, bw_method=h / np.std(augmented, ddof=1))
    return 3.0 * kde(at)


@pytest.mark.parametrize(
    ("a", "b", "n", "h"),
    [(2.0, 8.0, 500, 0.02), (1.0, 30.0, 300, 0.005), (5.0, 5.0, 1000, 0.05), (8.0, 1.5, 200, 0.01)],
)
def test_kde_matches_scipy_reflected(a: float, b: float, n: int, h: float) -> None:
    rng = np.random.default_rng(1)
    x = rng.beta(a, b, size=n)
    at = np.linspace(0.0, 1.0, 997)
    ours = fit_kde(x, bandwidth=h).evaluate(at)
    ref = _reflected_scipy(x, h, at)
    assert np.max(np.abs(ours - ref)) <= 1e-3 * ref.max()


def test_kde_integrates_to_one_and_is_zero_free_inside_support() -> None:
    x = np.random.default_rng(2).beta(2, 20, size=2000)
    kde = fit_kde(x)
    step = kde.grid[1] - kde.grid[0]
    assert np.trapezoid(kde.density, dx=step) == pytest.approx(1.0, abs=1e-3)
    assert kde.density.min() >= 0.0
    # Reflection keeps mass near 0 instead of losing half of it.
    plain = gaussian_kde(x, bw_method=kde.bandwidth / np.std(x, ddof=1))
    assert kde.evaluate([0.0])[0] > 1.5 * plain(0.0)[0]


def test_silverman_and_scott_use_the_spread() -> None:
    x = np.random.default_rng(3).beta(2, 30, size=4000)
    std = np.std(x, ddof=1)
    q75, q25 = np.percentile(x, [75, 25])
    spread = min(std, (q75 - q25) / 1.34)
    n = x.size
    assert select_bandwidth(x, method="silverman") == pytest.approx(0.9 * spread * n**-0.2)
    assert select_bandwidth(x, method="scott") == pytest.approx(1.06 * spread * n**-0.2)
    assert select_bandwidth(x, method="silverman", scale=2.0) == pytest.approx(1.8 * spread * n**-0.2)
    assert select_bandwidth(x, method=0.03) == pytest.approx(0.03)


def test_cv_bandwidth_is_near_the_rule_on_smooth_data() -> None:
    x = np.random.default_rng(4).normal(0.4, 0.05, size=3000)
    rule = select_bandwidth(x, method="silverman")
    cv = select_bandwidth(x, method="cv")
    assert rule / 2.5 < cv < rule * 2.5


def test_copies_are_a_point_mass_and_rank_first() -> None:
    rng = np.random.default_rng(5)
    members = np.r_[np.zeros(50), rng.beta(2, 12, size=950)]
    non_members = rng.beta(2, 12, size=1000)
    post = fit_posterior(members, non_members)
    p_copy = post.p_member([0.0])[0]
    assert p_copy > 0.95
    grid = np.linspace(1e-6, 1.0, 5000)
    assert post.p_member(grid).max() < p_copy
    # Without the point mass a plain KDE puts the copies near P = 0.5: check the atom is counted.
    dens = fit_distance_density(members)
    assert dens.n_zero == 50
    assert dens.p_zero == pytest.approx(51 / 1002)


def test_floor_keeps_tail_noise_near_the_prior() -> None:
    rng = np.random.default_rng(6)
    members = np.r_[rng.beta(2, 12, size=999), 0.9]  # one lone member far in the tail
    non_members = rng.beta(2, 12, size=1000)
    floored = fit_posterior(members, non_members)
    bare = fit_posterior(members, non_members, floor_records=0.0)
    assert bare.p_member([0.9])[0] > 0.99  # the raw ratio is noise that looks certain
    assert floored.p_member([0.9])[0] < 0.6
    # Far away from every record both densities vanish without the floor: prior, never NaN.
    p = bare.p_member(np.linspace(0.0, 1.0, 1001))
    assert np.all(np.isfinite(p))
    assert np.all((p >= 0.0) & (p <= 1.0))


@pytest.mark.parametrize("prior", [0.5, 0.2])
@pytest.mark.parametrize("zero_share", [0.0, 0.1])
def test_posterior_is_the_prior_far_outside_both_samples(prior: float, zero_share: float) -> None:
    # Members concentrated near 0 (small bandwidth, some exact copies), non-members spread
    # wider (a larger bandwidth): the two floors used to differ, and far out P(member | d)
    # tended to their ratio (0.61-0.66 in issue 9), not to the prior.
    rng = np.random.default_rng(11)
    n_zero = int(zero_share * 2000)
    members = np.r_[np.zeros(n_zero), 0.3 * rng.beta(2, 20, size=2000 - n_zero)]
    non_members = 0.5 * rng.beta(3, 12, size=2000)
    far = np.linspace(max(members.max(), non_members.max()) + 0.1, 1.0, 50)
    post = fit_posterior(members, non_members, prior=prior)
    assert np.all(np.abs(post.p_member(far) - prior) <= 0.02)
    # The realistic attack's shape: pseudo-members are the closest half, pseudo-non-members
    # the farthest (no exact copies by construction).
    d = rng.beta(2, 14, size=4000)
    cut = np.median(d)
    real = fit_posterior(d[d <= cut], d[d > cut], prior=prior, non_member_zero_pseudo_count=0.0)
    far = np.linspace(d.max() + 0.1, 1.0, 50)
    assert np.all(np.abs(real.p_member(far) - prior) <= 0.02)


def test_disjoint_supports_give_certain_but_finite_answers() -> None:
    post = fit_posterior(np.full(100, 0.05), np.full(100, 0.95), bandwidth=0.005, floor_records=0.0)
    p = post.p_member([0.05, 0.5, 0.95])
    assert np.all(np.isfinite(p))
    assert p[0] > 0.999
    assert p[2] < 0.001


def test_prior_shifts_the_log_odds_exactly() -> None:
    rng = np.random.default_rng(7)
    m, n = rng.beta(2, 10, 800), rng.beta(3, 10, 800)
    d = np.linspace(0.0, 0.6, 50)
    base = fit_posterior(m, n, prior=0.5).log_odds(d)
    shifted = fit_posterior(m, n, prior=0.2).log_odds(d)
    np.testing.assert_allclose(shifted - base, np.log(0.2 / 0.8), atol=1e-9)


def test_same_distribution_gives_posterior_near_prior() -> None:
    rng = np.random.default_rng(8)
    post = fit_posterior(rng.beta(2, 10, 20000), rng.beta(2, 10, 20000))
    p = post.p_member(np.linspace(0.02, 0.4, 100))
    assert np.all(np.abs(p - 0.5) < 0.08)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: fit_kde([]), "empty"),
        (lambda: fit_kde([0.1, np.nan]), "missing or infinite"),
        (lambda: fit_kde([0.1, 1.5]), r"\[0, 1\]"),
        (lambda: fit_distance_density([0.1], floor_records=-1.0), "floor_records"),
    ],
)
def test_bad_input_is_refused_with_a_sentence(call, match: str) -> None:
    with pytest.raises(InputError, match=match):
        call()
