import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import roc_auc_score

from audit_core.common.errors import InputError
from audit_core.common.roc import (
    clopper_pearson,
    equal_error_rate,
    evaluate_attack,
    hard_label_metrics,
    roc_curve,
    tpr_at_fpr,
)


def test_auc_matches_sklearn_with_ties():
    rng = np.random.default_rng(0)
    y = rng.random(3000) < 0.4
    s = np.round(rng.normal(size=3000) + 0.7 * y, 1)  # many ties
    assert roc_curve(s, y).auc == pytest.approx(roc_auc_score(y, s), abs=1e-12)


def test_independent_scores_give_chance():
    rng = np.random.default_rng(1)
    y = rng.random(20_000) < 0.5
    m = evaluate_attack(rng.random(20_000), y)
    assert m.auc == pytest.approx(0.5, abs=0.02)
    assert m.eer == pytest.approx(0.5, abs=0.02)
    assert m.tpr_at_fpr["0.01"].tpr == pytest.approx(0.01, abs=0.006)


def test_tpr_at_fpr_never_exceeds_target_fpr_with_ties():
    # 5 members with a unique top score, then a big tie between members and non-members.
    s = np.r_[np.full(5, 10.0), np.full(95, 1.0), np.full(1000, 1.0)]
    y = np.r_[np.ones(100), np.zeros(1000)]
    r = tpr_at_fpr(s, y, 0.01)
    assert r.achieved_fpr <= 0.01
    assert r.tpr == pytest.approx(0.05)


def test_support_flag_counts_negatives():
    s = np.arange(600.0)
    y = np.r_[np.ones(100), np.zeros(500)]
    assert tpr_at_fpr(s, y, 0.1).supported
    assert not tpr_at_fpr(s, y, 0.01).supported  # needs 1000 negatives


def test_clopper_pearson_covers_at_nominal_rate():
    rng = np.random.default_rng(2)
    p, n = 0.03, 200
    hits = 0
    for k in rng.binomial(n, p, size=2000):
        lo, hi = clopper_pearson(int(k), n)
        hits += lo <= p <= hi
    assert hits / 2000 >= 0.95


def test_one_sided_clopper_pearson_covers_at_nominal_rate():
    rng = np.random.default_rng(3)
    p, n = 0.2, 150
    ks = rng.binomial(n, p, size=4000)
    lows = np.array([clopper_pearson(int(k), n, level=0.975, side="lower") for k in ks])
    highs = np.array([clopper_pearson(int(k), n, level=0.975, side="upper") for k in ks])
    assert (lows[:, 1] == 1.0).all()
    assert (highs[:, 0] == 0.0).all()
    assert np.mean(lows[:, 0] <= p) >= 0.975
    assert np.mean(highs[:, 1] >= p) >= 0.975
    # one-sided at 97.5 % is the same bound as each end of the two-sided 95 % interval
    assert clopper_pearson(17, n, level=0.975, side="lower")[0] == pytest.approx(clopper_pearson(17, n)[0])


def _simulate_tpr_at_fpr(
    n: int, fpr: float, shift: float, reps: int, seed: int, step: float = 0.0, df: float = 0.0, atom: float = 0.0
):
    """Members ``shift`` + noise, non-members noise (N(0, 1), or Student-t with ``df`` degrees of freedom).

    ``step``: scores rounded to a grid of ``step`` (plateaus). ``atom``: a share ``atom`` of
    each class copied onto one value where the non-members above it hold 0.6 ``fpr``, so
    the atom straddles the target FPR and the best rule flags strictly above it.
    Returns the known TPR of the best threshold with FPR <= fpr, the point estimates,
    the intervals, the old members-only Clopper-Pearson intervals and which interval
    each result used.
    """
    noise = stats.t(df) if df else stats.norm
    if step:
        # rounded scores: flagging round(s) >= t is flagging s >= t - step / 2 on the grid t = j * step
        grid = np.arange(-10, 10, step)
        t = grid[np.flatnonzero(noise.sf(grid - step / 2) <= fpr)[0]] - step / 2
        truth = float(noise.sf(t - shift))
    elif atom:
        t = noise.isf(0.6 * fpr / (1 - atom))
        truth = float((1 - atom) * noise.sf(t - shift))
    else:
        truth = float(noise.sf(noise.isf(fpr) - shift))
    rng = np.random.default_rng(seed)
    y = np.r_[np.ones(n, bool), np.zeros(n, bool)]
    est, new, old, kinds = np.empty(reps), np.empty((reps, 2)), np.empty((reps, 2)), set()
    for r in range(reps):
        s = noise.rvs(size=2 * n, random_state=rng) + shift * y
        if step:
            s = np.round(s / step) * step
        if atom:
            s[rng.random(2 * n) < atom] = t
        res = tpr_at_fpr(s, y, fpr)
        est[r], new[r] = res.tpr, res.ci()
        kinds.add(res.interval)
        old[r] = clopper_pearson(round(res.tpr * n), n)  # the threshold treated as known
    return truth, est, new, old, kinds


def _coverage(truth: float, ci: np.ndarray) -> float:
    return float(np.mean((ci[:, 0] <= truth) & (truth <= ci[:, 1])))


def _spread(est: np.ndarray) -> float:
    """The estimator's own spread: the 2.5-97.5 % range of the point estimate across repetitions."""
    lo, hi = np.quantile(est, [0.025, 0.975])
    return float(hi - lo)


CONTINUOUS = [  # n per class, FPR, shift, Student-t degrees of freedom (0: Gaussian)
    (1000, 0.1, 1.0, 0),
    (1000, 0.01, 2.0, 0),
    (2000, 0.01, 2.0, 3),
    (300, 0.05, 1.0, 0),
]


@pytest.mark.slow
def test_rank_mixture_interval_covers_95_at_the_width_of_the_estimate():
    # 4 x 600 = 2400 repetitions: at a true coverage of 93 % the pooled count passes 94.5 % with probability ~0.3 %
    covered, reps = [], 600
    for i, (n, fpr, shift, df) in enumerate(CONTINUOUS):
        truth, est, new, old, kinds = _simulate_tpr_at_fpr(n, fpr, shift, reps=reps, seed=40 + i, df=df)
        assert kinds == {"rank-mixture"}  # continuous scores, measurable FPR
        # The simulation can tell a bad interval: the members-only interval misses (measured 23-76 %).
        assert _coverage(truth, old) < 0.85
        covered.append(_coverage(truth, new))
        assert covered[-1] >= 0.93, (n, fpr, covered[-1])
        # ... and the interval is no wider than the estimate's own spread needs (the exact band: 1.5-1.7x)
        assert np.mean(new[:, 1] - new[:, 0]) <= 1.1 * _spread(est), (n, fpr)
        assert ((new[:, 0] <= est) & (est <= new[:, 1])).all()
    assert np.mean(covered) >= 0.945


@pytest.mark.parametrize(
    ("ties", "sds"),
    # an ideal 95 % interval is 3.92 sd of the estimate wide, [0, 1] would be 30-50; a copy atom at the threshold
    # pins the estimate (sd 0.016 here), and the exact band, blind to it, measured 8.1 sd
    [({"step": 0.25}, 2 * 3.92), ({"atom": 0.02}, 10)],
    ids=["plateaus", "copy atom"],
)
def test_tied_scores_fall_back_to_the_exact_interval_which_covers(ties, sds):
    truth, est, new, _, kinds = _simulate_tpr_at_fpr(1000, 0.01, 2.0, reps=400, seed=12, **ties)
    assert abs(truth - stats.norm.sf(stats.norm.isf(0.01) - 2.0)) > 0.01  # the ties move the best threshold
    assert kinds == {"exact band"}
    assert _coverage(truth, new) >= 0.95
    assert np.mean(new[:, 1] - new[:, 0]) < sds * est.std()


def test_ties_among_members_only_keep_the_rank_mixture():
    # members' ties change no count the interval uses; a non-member tie inside the band does
    rng = np.random.default_rng(13)
    s = np.r_[np.round(rng.normal(2.0, size=1000), 1), rng.normal(size=1000)]
    y = np.r_[np.ones(1000), np.zeros(1000)]
    r = tpr_at_fpr(s, y, 0.01)
    assert r.interval == "rank-mixture"
    neg_sorted = np.sort(s[1000:])[::-1]
    s[1000 + np.flatnonzero(s[1000:] == neg_sorted[9])] = neg_sorted[8]  # two non-members tie near the threshold
    assert tpr_at_fpr(s, y, 0.01).interval == "exact band"
    assert tpr_at_fpr(s, y, 0.5).interval == "rank-mixture"  # far from that band


def test_tpr_interval_is_honest_when_the_fpr_is_not_measurable():
    # 500 non-members cannot locate a 0.1 % threshold: nothing excludes a TPR of 0.
    rng = np.random.default_rng(4)
    s = np.r_[rng.normal(3.0, size=500), rng.normal(size=500)]
    y = np.r_[np.ones(500), np.zeros(500)]
    r = tpr_at_fpr(s, y, 0.001)
    assert not r.supported
    assert r.interval == "exact band"
    assert r.ci_low == 0.0
    assert r.ci_high > r.tpr
    assert tpr_at_fpr(s, y, 0.001) == r  # no resampling: same inputs, same numbers


def test_evaluate_attack_intervals_equal_tpr_at_fpr():
    rng = np.random.default_rng(5)
    y = rng.random(5000) < 0.5
    s = rng.normal(size=5000) + y
    m = evaluate_attack(s, y)
    for f in (0.001, 0.01, 0.1):
        assert m.tpr_at_fpr[f"{f:g}"] == tpr_at_fpr(s, y, f)
    assert m.to_json()["tpr_at_fpr_ci"]["0.01"] == [m.tpr_at_fpr["0.01"].ci_low, m.tpr_at_fpr["0.01"].ci_high]
    j = m.tpr_at_fpr["0.01"].to_json()
    assert j["interval"] == "rank-mixture"
    assert {"tpr", "ci_low", "ci_high", "threshold", "achieved_fpr", "n_pos", "n_neg", "supported"} <= set(j)


def test_eer_of_separated_scores_is_zero():
    assert equal_error_rate(np.r_[np.ones(10), np.zeros(10)], np.r_[np.ones(10), np.zeros(10)]) == 0.0


def test_hard_labels():
    m = hard_label_metrics(np.array([1, 1, 0, 0, 1]), np.array([1, 0, 0, 0, 1]))
    assert (m.tpr, m.fpr) == (1.0, pytest.approx(1 / 3))
    assert m.precision == pytest.approx(2 / 3)
    assert m.f1 == pytest.approx(0.8)


def test_bad_inputs_are_sentences():
    with pytest.raises(InputError, match="both members and non-members"):
        roc_curve(np.arange(5.0), np.ones(5))
    with pytest.raises(InputError, match="must match"):
        roc_curve(np.arange(5.0), np.ones(4))
    with pytest.raises(InputError, match="not finite"):
        roc_curve(np.array([0.1, np.nan]), np.array([1, 0]))
