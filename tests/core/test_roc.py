import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from audit_core.errors import InputError
from audit_core.roc import (
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
