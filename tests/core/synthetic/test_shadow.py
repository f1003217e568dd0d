"""Tests for audit_core.synthetic.shadow: the per-target test's level, known answers end to end, the refusals."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from audit_core.__main__ import main
from audit_core.common.errors import InputError
from audit_core.synthetic.shadow.audit import ShadowOptions, shadow_attack
from audit_core.synthetic.shadow.design import design_shadows
from audit_core.synthetic.shadow.result import holm
from audit_core.synthetic.shadow.scoring import auc_by_ranks, cross_fit

ROOT = Path(__file__).resolve().parents[3]
GERMAN = ROOT / "sample_data" / "german_credit"


@pytest.fixture(scope="module")
def german() -> dict[str, pd.DataFrame]:
    return {name: pd.read_csv(GERMAN / f"{name}.csv") for name in ("train", "holdout", "auxiliary")}


def _null_features(rng: np.random.Generator, k: int, t: int, f: int) -> np.ndarray:
    """Shadow-output features that do not depend on any target's presence: skewed, tied and shared across targets."""
    shared = rng.standard_t(3, size=(k, 1, f))  # every target sees the same outputs
    own = rng.exponential(size=(k, t, f)).round(1)  # ties
    return shared + own


@pytest.mark.slow
def test_permutation_p_values_hold_their_level() -> None:
    """With features independent of membership, P(p <= alpha) <= alpha for every target and Holm's family-wise error
    too (a Mann-Whitney test on the same out-of-fold scores rejected 12 % at 5 %: fold models share their errors)."""
    rng = np.random.default_rng(3)
    k, t, reps = 12, 8, 120
    design = design_shadows(t, 100, n_rows=10, n_shadows=k, n_folds=3, seed=0)
    ps = []
    for r in range(reps):
        keep = design_shadows(t, 100, n_rows=10, n_shadows=k, n_folds=3, seed=r).keep
        x = _null_features(rng, k, t, 6)
        ps.append(cross_fit(x, keep, design.folds, x[0], seed=r, permutations=199).p_value)
    p = np.array(ps)
    # binomial 99.9 % upper limits for 960 p-values at 10 % and 5 %, 120 families at 5 %
    assert (p <= 0.1).mean() <= 0.131
    assert (p <= 0.05).mean() <= 0.074
    assert (holm_min := np.array([holm(row).min() for row in p]) <= 0.05).mean() <= 0.14, holm_min.mean()
    assert 0.35 < np.median(p) < 0.65  # not merely conservative: uniform-ish


def test_a_planted_shift_is_told_apart_and_the_release_scored() -> None:
    """Target 0's presence moves one feature by 5 sd: its AUC is near 1, its p-value the smallest possible, the
    release (which holds it) gets the smallest release p; the other targets stay at chance."""
    rng = np.random.default_rng(5)
    k, t = 24, 6
    design = design_shadows(t, 100, n_rows=10, n_shadows=k, n_folds=6, seed=1)
    x = rng.normal(size=(k, t, 5))
    x[:, 0, 2] += 5.0 * design.keep[:, 0]
    release = rng.normal(size=(t, 5))
    release[0, 2] += 5.0
    s = cross_fit(x, design.keep, design.folds, release, seed=0, permutations=999)
    assert s.auc[0] > 0.95
    assert s.p_value[0] <= 0.003  # 1 in 1,000, or a re-drawn design (1 in 4,096 each) equal to the real one
    assert s.feature[0] == 2
    assert s.release_p[0] == pytest.approx(1 / 13)
    assert np.median(s.p_value[1:]) > 0.1
    np.testing.assert_allclose(auc_by_ranks(s.shadow, design.keep), s.auc)


@pytest.mark.slow
def test_bootstrap_tells_every_target_apart(german: dict[str, pd.DataFrame]) -> None:
    """Known answer: resampling the training rows (5x as many as it has) copies each target into nearly every output
    that had it: AUC about 1 for every target, every one told apart, the release scored as holding them."""
    pop = pd.concat([german["holdout"], german["auxiliary"]], ignore_index=True)
    options = ShadowOptions(n_targets=5, n_shadows=16, rows=2000, permutations=199)
    a = shadow_attack(german["train"], pop, generator="bootstrap", options=options, seed=0)
    assert a.scores.auc.min() > 0.95
    assert a.told_apart.all()
    assert (a.scores.release_p <= 1 / 9 + 1e-9).all()
    assert a.to_json()["told_apart"] == 5


@pytest.mark.slow
def test_population_reference_is_at_chance(german: dict[str, pd.DataFrame]) -> None:
    """Known answer: rows nobody trained on say nothing about any target: AUCs around 0.5, at most one target told
    apart (each is wrongly with probability 5 % / 8), the pooled TPR interval at 10 % FPR covers 10 %."""
    pop, reserve = german["holdout"], german["auxiliary"]
    a = shadow_attack(german["train"], pop, generator="population", options=ShadowOptions(n_targets=8, n_shadows=20),
                      seed=2, reserve=reserve)  # fmt: skip
    assert abs(float(np.mean(a.scores.auc)) - 0.5) < 0.1
    assert a.told_apart.sum() <= 1
    t10 = a.pooled().tpr_at_fpr["0.1"]
    assert t10.ci_low <= 0.1 <= t10.ci_high


@pytest.mark.slow
def test_named_targets_and_refusals(german: dict[str, pd.DataFrame], tmp_path: Path, capsys) -> None:
    a = shadow_attack(german["train"], german["holdout"], generator="bootstrap",
                      options=ShadowOptions(n_shadows=4, target_rows=(3, 7)), seed=0)  # fmt: skip
    assert a.target_rows.tolist() == [3, 7]
    with pytest.raises(InputError, match="row 400 is not a row"):
        shadow_attack(german["train"], german["holdout"], generator="bootstrap",
                      options=ShadowOptions(n_shadows=4, target_rows=(400,)))  # fmt: skip
    with pytest.raises(InputError, match="would fit ctgan 33 times"):  # refused before any fit
        shadow_attack(german["train"], german["holdout"], generator="ctgan", params={"epochs": 2000},
                      options=ShadowOptions(n_shadows=32))  # fmt: skip
    base = ["shadow", "--train", str(GERMAN / "train.csv"), "--population", str(GERMAN / "holdout.csv")]
    for extra, said in ((["--generator", "population"], "invalid choice"),
                        (["--generator", "ctgan", "--generator-settings", '{"epoch": 3}'], "has no setting 'epoch'"),
                        (["--generator", "bootstrap", "--shadow-models", "7"], "even number"),
                        (["--generator", "tvae", "--generator-settings", "epochs=3"], "JSON object")):  # fmt: skip
        try:
            code = main([*base, *extra, "--json", str(tmp_path / "x.json")])
        except SystemExit as exc:  # argparse's own refusals
            code = exc.code
        assert code == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert said in err[-1]
    assert not (tmp_path / "x.json").exists()


def test_the_comparison_refuses_slow_shadow_fits_before_any_fit(tmp_path: Path, capsys) -> None:
    """compare --shadow with CTGAN at 2,000 epochs on a CPU: one sentence, exit 2, before any table is split or fitted."""
    code = main(["compare", "--data", str(ROOT / "sample_data" / "german_credit.csv"), "--generators", "bootstrap,ctgan",
                 "--params", "ctgan.epochs=2000", "--shadow", "--json", str(tmp_path / "c.json")])  # fmt: skip
    assert code == 2
    assert "would fit ctgan 32 times" in capsys.readouterr().err
    assert not (tmp_path / "c.json").exists()
