"""The epsilon lower bound on mechanisms of known epsilon: valid, tighter than the half split it replaced, and its ceiling."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize, stats

from audit_core.common import privacy_bound as pb
from audit_core.common.roc import clopper_pearson


def _gaussian_epsilon(mu: float, delta: float) -> float:
    """The exact epsilon at ``delta`` of the Gaussian mechanism with sensitivity / sigma = mu (mu-GDP)."""

    def gap(eps: float) -> float:
        return stats.norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * stats.norm.cdf(-eps / mu - mu / 2) - delta

    return float(optimize.brentq(gap, 0.0, 200.0))


def _half_split_bound(s: np.ndarray, y: np.ndarray, *, seed: int, delta: float = 1e-5) -> float:
    """The construction used before: choose on half (Wilson at the half's own sizes), Clopper-Pearson on the other half."""
    a = 0.025
    rng = np.random.default_rng(seed)
    pos, neg = rng.permutation(np.flatnonzero(y)), rng.permutation(np.flatnonzero(~y))
    sel = np.zeros(s.size, dtype=bool)
    sel[pos[: pos.size // 2]] = sel[neg[: neg.size // 2]] = True
    th, tp, fp = pb._candidates(s[sel], y[sel])
    npa, nna = pos.size // 2, neg.size // 2

    def wil(hit, nh, miss, nm):
        lo, hi = pb._wilson(hit, nh, a, upper=False), np.maximum(pb._wilson(miss, nm, a, upper=True), 1e-300)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(lo > delta, np.log((lo - delta) / hi), 0.0)

    fw, bw = wil(tp, npa, fp, nna), wil(nna - fp, nna, npa - tp, npa)
    backward = bw.max() > fw.max()
    t = th[int(np.argmax(bw if backward else fw))]
    sb, yb = s[~sel], y[~sel]
    tpb, fpb, npb, nnb = int((sb[yb] >= t).sum()), int((sb[~yb] >= t).sum()), int(yb.sum()), int((~yb).sum())
    hit, nh, miss, nm = (nnb - fpb, nnb, npb - tpb, npb) if backward else (tpb, npb, fpb, nnb)
    lo = clopper_pearson(hit, nh, level=1 - a, side="lower")[0]
    hi = clopper_pearson(miss, nm, level=1 - a, side="upper")[1]
    return max(0.0, math.log((lo - delta) / hi)) if lo > delta and hi > 0 else 0.0


def _gaussian(mu: float, n: int, reps: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = np.r_[np.ones(n, dtype=bool), np.zeros(n, dtype=bool)]
    return rng.normal(size=(reps, 2 * n)) + mu * y, y


@pytest.mark.parametrize(("mu", "min_gain"), [(0.5, 1.1), (1.0, 1.1), (2.0, 1.02), (4.0, 0.97)])
def test_gaussian_mechanism_bound_is_valid_and_tighter_than_the_half_split(mu, min_gain):
    n, reps = 2000, 60
    scores, y = _gaussian(mu, n, reps, seed=int(10 * mu))
    new = np.array([pb.epsilon_lower_bound(scores[r], y, seed=r).epsilon for r in range(reps)])
    old = np.array([_half_split_bound(scores[r], y, seed=r) for r in range(reps)])
    truth = _gaussian_epsilon(mu, 1e-5)
    assert np.mean(new > truth) <= 0.05
    assert new.mean() >= min_gain * old.mean(), (new.mean(), old.mean())


@pytest.mark.slow
def test_randomized_response_bound_is_valid_at_the_truth():
    """RR is exactly eps-DP and tight at its one threshold: the bound sits just below the truth, above it <= 5 %."""
    eps, n, reps = 1.0, 20_000, 200
    rng = np.random.default_rng(11)
    y = np.r_[np.ones(n, dtype=bool), np.zeros(n, dtype=bool)]
    truthful = rng.random((reps, 2 * n)) < math.exp(eps) / (1 + math.exp(eps))
    scores = np.where(truthful, y, ~y).astype(float)
    bounds = np.array([pb.epsilon_lower_bound(scores[r], y, delta=0.0, seed=r).epsilon for r in range(reps)])
    assert np.mean(bounds > eps) <= 0.05
    assert bounds.mean() > 0.93 * eps  # 80 % of 20,000 per class evaluated


def test_no_signal_is_a_false_alarm_at_most_five_percent():
    n, reps = 1000, 200
    scores, y = _gaussian(0.0, n, reps, seed=12)
    bounds = np.array([pb.epsilon_lower_bound(scores[r], y, delta=0.0, seed=r).epsilon for r in range(reps)])
    assert np.mean(bounds > 0) <= 0.05


def test_ceiling_is_what_a_perfect_attack_shows_and_is_reported():
    y = np.r_[np.ones(500, dtype=bool), np.zeros(500, dtype=bool)]
    perfect = pb.epsilon_lower_bound(y.astype(float), y, seed=3)
    assert perfect.n_pos == perfect.n_neg == 400  # 20 % of each class chose the threshold
    assert perfect.epsilon == pytest.approx(perfect.ceiling)
    assert perfect.ceiling == pytest.approx(pb.ceiling(400, 400))
    assert 4.5 < perfect.ceiling < 4.9  # about ln(400 / 3.69)
    js = perfect.to_json()
    assert js["ceiling"] == perfect.ceiling
    assert js["selection_fraction"] == 0.2
    assert {"epsilon", "delta", "confidence", "threshold", "n_members_evaluated", "method"} <= set(js)
    # a random attack on the same records: bound 0, but the sentence says how far these records could go
    weak = pb.epsilon_lower_bound(np.random.default_rng(0).random(1000), y, seed=3)
    assert weak.epsilon == 0.0
    assert f"{weak.ceiling:.2f}" in weak.sentence()
    assert "does not mean" in weak.sentence()
    assert pb.ceiling(40_000, 40_000) > pb.ceiling(400, 400) + 4  # the ceiling grows like ln n
