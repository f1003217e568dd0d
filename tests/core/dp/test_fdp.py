"""The f-DP one-run test (Mahloujifar et al.): by hand, against jax_privacy's numbers, valid on mechanisms of known epsilon."""

import math

import numpy as np
import pytest
from scipy import special

from audit_core.dp.fdp import boundary, fdp_audit, rejects
from audit_core.dp.onerun import epsilon_bound
from audit_core.dp.tradeoff import Curve, epsilon_delta_family, gaussian_epsilon, gaussian_family

LEVEL = 0.05 / 6  # 95 % over the six r of the grid


def _paper_rejects(g, m, r, v, tau):
    """Algorithm 3 as the paper writes it, with arrays r[0..v], h[0..v] (the max of the published code), in plain Python."""
    h, rr = [0.0] * (v + 1), [0.0] * (v + 1)
    rr[v], h[v] = tau * v / m, tau * (r - v) / m
    for i in range(v - 1, -1, -1):
        h[i] = max(h[i + 1], g(rr[i + 1]))
        rr[i] = min(rr[i + 1] + i / (r - i) * (h[i] - h[i + 1]), 1.0)
    return rr[0] + h[0] > r / m


def test_a_case_by_hand():
    # perfect privacy (f(x) = 1 - x, so g(y) = y), m = 10, 2 of 2 right, tau = 0.5:
    # rho = 0.1, eta = 0; i = 1: eta = 0.1, rho = 0.1 + 1/1 * 0.1 = 0.2; i = 0: eta = 0.2, rho = 0.2; 0.4 > 2/10: reject
    identity = Curve(y=np.array([0.0, 1.0]), g=np.array([0.0, 1.0]))
    assert rejects(identity, 10, 2, 2, 0.5)
    # 1 of 2 right: rho = 0.05, eta = 0.05; i = 0: g(0.05) = 0.05 is not above eta: 0.1 < 0.2, not rejected
    assert not rejects(identity, 10, 2, 1, 0.5)


@pytest.mark.parametrize("family", [epsilon_delta_family(1e-5), gaussian_family(1e-5)], ids=["eps-delta", "gaussian"])
def test_the_kernel_is_the_papers_algorithm(family):
    rng = np.random.default_rng(3)
    for _ in range(60):
        m = int(rng.choice([100, 1000]))
        r = int(rng.integers(2, m // 2)) * 2
        v = int(rng.integers(r // 2, r + 1))
        t = float(rng.uniform(0, 3))
        curve = family.curve(t)
        assert rejects(curve, m, r, v, LEVEL) == _paper_rejects(curve, m, r, v, LEVEL), (m, r, v, t)


# jax_privacy 2.0.0 (jax_privacy.auditing._epsilon_one_run_fdp / _epsilon_one_run, significance 0.05 / 6, delta 1e-5),
# run in a throwaway environment by benchmarks/bench_dp_bounds.py: their f-DP test uses the Gaussian curve
JAX = {(1000, 100, 100): (4.366986187723702, 2.9406192034403404), (1000, 200, 180): (2.3423550209685065, 1.634833915332875),
       (1000, 500, 300): (0.27776870552125776, 0.18226056246799288), (100, 20, 19): (1.320509192311839, 0.8582959729466865),
       (10000, 1000, 700): (0.8222129912673987, 0.6697910653353625)}  # fmt: skip


@pytest.mark.parametrize(("m", "r", "v"), list(JAX))
def test_matches_jax_privacy(m, r, v):
    fdp, steinke = JAX[(m, r, v)]
    family = gaussian_family(1e-5)
    ours = family.epsilon(boundary(family, m, r, v, LEVEL))
    assert ours == pytest.approx(fdp, abs=1e-4)  # our Gaussian curve is tabled below the true one: never above theirs
    assert ours <= fdp + 1e-6
    assert epsilon_bound(m, r, v, 1e-5, LEVEL) == pytest.approx(steinke, abs=1e-5)


def test_against_the_epsilon_delta_curve_there_is_no_gain_and_the_gaussian_curve_gains():
    # the independent simulation: 0.97-1.00x Steinke's bound against a bare (eps, delta) claim, 1.3-1.5x Gaussian
    plain, gauss = epsilon_delta_family(1e-5), gaussian_family(1e-5)
    for m, r, v in [(1000, 200, 180), (1000, 500, 330), (1000, 1000, 620)]:
        steinke = epsilon_bound(m, r, v, 1e-5, LEVEL)
        assert 0.97 <= plain.epsilon(boundary(plain, m, r, v, LEVEL)) / steinke <= 1.03
        assert 1.3 <= gauss.epsilon(boundary(gauss, m, r, v, LEVEL)) / steinke <= 1.7


def _gaussian_mechanism(mu, m, reps, rng):
    included = rng.random((reps, m)) < 0.5
    return rng.normal(size=(reps, m)) + mu * included, included


@pytest.mark.slow
def test_gaussian_mechanism_bound_is_valid_and_a_wrong_curve_is_caught():
    rng = np.random.default_rng(11)
    mu, m, reps = 1.0, 1000, 60
    truth = gaussian_epsilon(mu, 1e-5)
    scores, included = _gaussian_mechanism(mu, m, reps, rng)
    runs = list(enumerate(zip(scores, included, strict=True)))
    right = np.array([fdp_audit(s, i, gaussian_family(1e-5), seed=k).epsilon for k, (s, i) in runs])
    assert (right > truth).mean() <= 0.05
    assert right.mean() > 0.4 * truth  # and useful (about half of it at m = 1,000)
    # a curve that misstates the mechanism (it claims twice the noise) must be caught: its "bound" exceeds the truth
    wrong_family = gaussian_family(1e-5)
    wrong = [wrong_family.epsilon(2 * fdp_audit(s, i, wrong_family, seed=k).level) for k, (s, i) in
             enumerate(zip(scores[:20], included[:20], strict=True))]  # fmt: skip
    assert np.mean(np.array(wrong) > truth) > 0.5


def test_randomized_response_against_its_own_curve_is_valid():
    rng = np.random.default_rng(5)
    eps, m, reps = 1.0, 1000, 60
    family = epsilon_delta_family(0.0)
    above = 0
    for k in range(reps):
        included = rng.random(m) < 0.5
        truthful = rng.random(m) < 1 / (1 + math.exp(-eps))
        above += fdp_audit(np.where(truthful, included, ~included).astype(float), included, family, seed=k).epsilon > eps
    assert above / reps <= 0.05


def test_the_gaussian_table_is_below_the_curve():
    y = np.r_[np.linspace(0, 0.999, 20001), special.ndtr(np.linspace(-30, 3, 2001))]
    for mu in (0.2, 1.0, 3.0, 6.0):
        curve = gaussian_family(1e-5).curve(mu)
        assert np.all(curve(y) <= special.ndtr(special.ndtri(y) - mu) + 1e-15)
        assert np.max(special.ndtr(special.ndtri(y) - mu) - curve(y)) < 1e-5
