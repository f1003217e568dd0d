"""The supervised attack (ART's black-box attack, cross-fitted): at chance without a leak, and it learns a leak's shape.

The known answers are built on the attack's own inputs (the model's class probabilities, the
labels and the reference models' probabilities), so each is cheap and exact about what is planted.
"""

from __future__ import annotations

import numpy as np
import pytest

from audit_core.common.roc import roc_curve, tpr_at_fpr
from audit_core.model.attacks import loss_scores, supervised_features, supervised_scores


def _outputs(n: int, rng: np.random.Generator, *, classes: int = 3) -> tuple[np.ndarray, np.ndarray]:
    logits = rng.normal(scale=1.5, size=(n, classes))
    prob = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    return prob, rng.integers(0, classes, n)


@pytest.mark.slow
def test_at_chance_when_outputs_say_nothing_of_membership():
    rng = np.random.default_rng(11)
    prob, y = _outputs(3000, rng)
    member = rng.permutation(np.r_[np.ones(1500, bool), np.zeros(1500, bool)])
    p_ref = np.clip(prob[np.arange(y.size), y] + rng.normal(scale=0.05, size=(4, y.size)), 1e-3, 1.0)
    scores = supervised_scores(supervised_features(prob, y, p_ref)[0], member, seed=0)
    assert abs(roc_curve(scores, member).auc - 0.5) < 0.04  # sd of an AUC at chance here: 0.011
    t = tpr_at_fpr(scores, member, 0.01)
    assert t.ci_low <= 0.01 <= t.ci_high


@pytest.mark.slow
def test_it_learns_a_leak_no_single_score_shows():
    """Members of class 0 are over-confident, members of class 1 under-confident: LOSS sees nothing, a classifier does."""
    rng = np.random.default_rng(12)
    n = 2000
    member = rng.random(n) < 0.5
    y = rng.integers(0, 2, n)
    base = rng.uniform(0.6, 0.8, n)
    shift = np.where(y == 0, 0.1, -0.1) * member  # the best classifier has AUC 0.875
    p_true = np.clip(base + shift, 0.5, 0.99)
    prob = np.where(y[:, None] == np.arange(2), p_true[:, None], 1 - p_true[:, None])
    features, names = supervised_features(prob, y, None)
    assert "label_0" in names  # the label is a feature (as in ART's attack)
    assert abs(roc_curve(loss_scores(p_true), member).auc - 0.5) < 0.05
    assert roc_curve(supervised_scores(features, member, seed=0), member).auc > 0.8
