"""The one-run p-value routine (Steinke, Nasr and Jagielski 2023) against values computed independently here."""

import math

import numpy as np
import pytest
from scipy import stats

from audit_core.dp.onerun import ceiling, correct_guesses, epsilon_bound, guess_grid, one_run_audit, p_value

CASES = [(1000, 100, 100), (1000, 1000, 1000), (1000, 200, 180)]


def _logit(q: float) -> float:
    return math.log(q / (1 - q))


def _paper_p_value(m, r, v, eps, delta):
    """The paper's Algorithm 2 written as a plain loop over binomial masses (not the routine's vectorised tails)."""
    q = math.exp(eps) / (1 + math.exp(eps))
    pmf = stats.binom.pmf(np.arange(r + 1), r, q)
    beta = float(pmf[v:].sum())
    alpha, mass = 0.0, 0.0
    for i in range(1, v + 1):
        mass += pmf[v - i]
        alpha = max(alpha, mass / i)
    return min(beta + alpha * delta * 2 * m, 1.0)


def _bisect(m, r, v, delta, level):
    lo, hi = 0.0, 20.0
    for _ in range(45):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if _paper_p_value(m, r, v, mid, delta) <= level else (lo, mid)
    return lo


@pytest.mark.parametrize(("m", "r", "v"), CASES)
def test_pure_dp_bound_is_the_exact_binomial_one(m, r, v):
    # P[Binomial(r, q) >= v] = 0.05 exactly at the lower Clopper-Pearson limit q = Beta(0.05; v, r - v + 1)
    q = 0.05 ** (1 / r) if v == r else stats.beta.ppf(0.05, v, r - v + 1)
    assert epsilon_bound(m, r, v, 0.0, 0.05) == pytest.approx(_logit(q), abs=1e-6)


@pytest.mark.parametrize(("m", "r", "v"), CASES)
def test_bound_with_delta_matches_the_papers_formula(m, r, v):
    expected = _bisect(m, r, v, 1e-5, 0.05)
    got = epsilon_bound(m, r, v, 1e-5, 0.05)
    assert got == pytest.approx(expected, abs=1e-6)
    assert got < epsilon_bound(m, r, v, 0.0, 0.05)  # delta only weakens what the run proves
    for eps in (0.5, 2.0, 4.0):
        assert p_value(m, r, v, eps, 1e-5) == pytest.approx(_paper_p_value(m, r, v, eps, 1e-5), rel=1e-9, abs=1e-15)


def test_ceiling_for_1000_canaries():
    # the "roughly 5.8": one pre-set r = m = 1,000, every guess right, delta 1e-5, 95 %
    single = epsilon_bound(1000, 1000, 1000, 1e-5, 0.05)
    assert single == pytest.approx(_bisect(1000, 1000, 1000, 1e-5, 0.05), abs=1e-6)
    assert round(single, 2) == 5.78
    # the audit tries six r and pays a Bonferroni correction for picking the best, so its ceiling is lower
    grid = guess_grid(1000)
    assert grid == (20, 50, 100, 200, 500, 1000)
    expected = max(_bisect(1000, r, r, 1e-5, 0.05 / len(grid)) for r in grid)
    assert ceiling(1000, 1e-5) == pytest.approx(expected, abs=1e-6)
    assert 5.0 < ceiling(1000, 1e-5) < single


def test_guesses_are_counted_from_both_ends():
    scores = np.arange(10.0)
    included = np.array([0, 0, 1, 0, 1, 0, 1, 1, 0, 1], dtype=bool)
    # r = 4: "out" for scores 0, 1 (both out: 2 right), "in" for 8, 9 (9 in: 1 right)
    assert correct_guesses(scores, included, 4, seed=0) == 3
    # r = 10: "out" for 0..4 (0, 1, 3 are out: 3 right), "in" for 5..9 (6, 7, 9 are in: 3 right)
    assert correct_guesses(scores, included, 10, seed=0) == 6


def _randomized_response(eps: float, m: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    included = rng.random(m) < 0.5
    truthful = rng.random(m) < math.exp(eps) / (1 + math.exp(eps))
    return np.where(truthful, included, ~included).astype(float), included


@pytest.mark.slow
@pytest.mark.parametrize("eps", [1.0, 2.0])
def test_randomized_response_bound_is_valid_and_useful(eps):
    rng = np.random.default_rng(7)
    bounds = np.array([one_run_audit(*_randomized_response(eps, 1000, rng), delta=1e-5, seed=k).epsilon
                       for k in range(100)])  # fmt: skip
    assert (bounds > eps).mean() <= 0.05  # a valid 95 % lower bound
    assert bounds.mean() >= eps / 2  # and not a useless one at m = 1,000
