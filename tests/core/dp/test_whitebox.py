"""White-box gradient canaries in Opacus' DP-SGD: their scores are what the mechanism says, and they prove more than the
black-box audit of the same run."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from audit_core.dp.audit import run_dp_audit
from audit_core.dp.whitebox import canary_scores

ROOT = Path(__file__).resolve().parents[3]
pytestmark = pytest.mark.slow  # one DP-SGD run with gradient canaries (the module fixture)


@pytest.fixture(scope="module")
def run():
    german = pd.read_csv(ROOT / "sample_data" / "german_credit.csv")
    return run_dp_audit(german, target="credit", epsilon=8.0, delta=1e-5, m=400, kind="population", model="logistic",
                        epochs=30, white_box=True, seed=0)  # fmt: skip


def test_scores_follow_the_mechanism(run):
    wb = run.white_box
    q, steps, sigma = run.sample_rate, run.steps, run.noise_multiplier
    inc = wb.canaries.included
    scores = wb.scores  # sum statistic: steps in the batch + N(0, sigma^2 T); the data never touches the audit weights
    sd_out = sigma * np.sqrt(steps)
    sd_in = np.sqrt(sd_out**2 + steps * q * (1 - q))
    assert abs(scores[~inc].mean()) < 4 * sd_out / np.sqrt((~inc).sum())
    assert abs(scores[inc].mean() - q * steps) < 4 * sd_in / np.sqrt(inc.sum())
    assert scores[~inc].std() == pytest.approx(sd_out, rel=0.15)


def test_white_box_proves_more_than_the_black_box_audit_of_the_same_run(run):
    black, white = run.dp.bound, run.white_box.bound
    assert white.epsilon > black.epsilon + 1.0
    assert white.epsilon <= run.accountant_epsilon  # never above the accountant
    assert white.fdp.epsilon >= white.steinke.epsilon  # against the run's own curve the bound is tighter
    j = json.loads(json.dumps(run.to_json()))
    assert j["white_box"]["epsilon_lower_bound"]["epsilon"] == white.epsilon
    assert j["white_box"]["share_of_accountant_epsilon"] == pytest.approx(white.epsilon / run.accountant_epsilon)
    assert j["white_box"]["canaries"]["m"] == 400
    assert {"score_white_box", "white_box_included"} <= set(run.canary_table().columns)
    from audit_core.dp.spec import DP_AUDIT
    from audit_core.dp.verdict import build_report

    assert "White-box, on the same run" in build_report(run).verdict
    assert any("White-box" in name for name, _ in build_report(run).figures)
    assert any("white-box audit" in r for r in DP_AUDIT.decision(run).reasons)


def test_likelihood_ratio_statistic_by_hand():
    steps = np.array([[1.2, -0.3], [0.1, 0.4], [0.9, 2.0]])
    q, sigma = 0.1, 1.5
    by_hand = [sum(np.log(1 - q + q * np.exp((x - 0.5) / sigma**2)) for x in steps[:, j]) for j in range(2)]
    assert canary_scores(steps, statistic="likelihood-ratio", noise_multiplier=sigma, sample_rate=q) == pytest.approx(by_hand)
    assert canary_scores(steps, statistic="sum", noise_multiplier=sigma, sample_rate=q) == pytest.approx(steps.sum(0))
