"""DP-SGD with canaries: a run at epsilon 1 never beats its accountant, the same model without DP leaks; bad input."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from audit_core.__main__ import main
from audit_core.common.errors import InputError
from audit_core.dp.audit import run_dp_audit
from audit_core.dp.canaries import draw_canaries
from audit_core.dp.spec import DP_AUDIT

ROOT = Path(__file__).resolve().parents[3]
GERMAN = ROOT / "sample_data" / "german_credit.csv"


@pytest.fixture(scope="module")
def german():
    return pd.read_csv(GERMAN)


@pytest.fixture(scope="module")
def runs(german):
    # mislabelled canaries on a small table: an MLP without DP memorises them, DP-SGD at epsilon 1 must not
    return [run_dp_audit(german, target="credit", epsilon=1.0, delta=1e-5, m=400, kind="mislabelled", model="mlp",
                         epochs=100, seed=seed) for seed in range(3)]  # fmt: skip


@pytest.mark.slow
def test_dp_sgd_never_beats_its_accountant_and_no_dp_leaks(runs):
    for r in runs:
        assert r.accountant_epsilon <= 1.0 + 1e-9  # Opacus chose the noise for the claim
        assert r.dp.bound.epsilon <= r.accountant_epsilon
        assert not r.disproved
        assert r.noise_multiplier > 1
    dp = np.mean([r.dp.bound.epsilon for r in runs])
    plain = np.mean([r.non_dp.bound.epsilon for r in runs])
    assert plain >= 0.7, (dp, plain)
    assert plain > dp + 0.5, (dp, plain)
    assert all(r.non_dp.bound.epsilon > r.dp.bound.epsilon for r in runs)
    assert runs[0].to_json()["non_dp"]["train_accuracy"] > runs[0].to_json()["train_accuracy"]


@pytest.mark.slow
def test_json_contract_and_decision(runs):
    r = runs[0]
    j = r.to_json()
    assert j["claimed"] == {"epsilon": 1.0, "delta": 1e-5}
    assert set(j["epsilon_lower_bound"]) >= {"epsilon", "confidence", "r", "correct", "m"}
    assert j["epsilon_lower_bound"]["m"] == 400
    assert j["epsilon_lower_bound"]["confidence"] == 0.95
    assert set(j["non_dp"]) == {"epsilon_lower_bound", "train_accuracy", "test_accuracy"}
    bound = j["epsilon_lower_bound"]
    assert bound["reported"]["method"] == "fdp"  # trained here: the claim names its mechanism (the rule in bounds.py)
    assert bound["epsilon"] == bound["fdp"]["epsilon"] == bound["reported"]["epsilon"]
    assert j["ceiling"] == bound["reported"]["ceiling"] == bound["fdp"]["ceiling"]
    assert 0 < bound["steinke"]["ceiling"] < 5  # 400 canaries cannot prove much with Steinke's bound...
    assert bound["fdp"]["ceiling"] > bound["steinke"]["ceiling"] + 2  # ...and more against the DP-SGD run's own curve
    assert bound["fdp"]["curve"]["curve"] == "dp-sgd"
    assert bound["fdp"]["curve"]["steps"] == r.steps
    assert j["white_box"] is None
    assert {"accountant_epsilon", "train_accuracy", "test_accuracy"} <= set(j)
    d = DP_AUDIT.decision(r)
    assert d.kind == "dp_claim"
    if r.non_dp.bound.epsilon > r.epsilon:  # the audit can tell a model without DP: the claim is not disproved
        assert d.level == "low"
        assert "does not prove" in " ".join(d.reasons)
        assert f"{r.ceiling:.2f}" in d.headline
    else:  # the model without DP passes too: this run could not tell
        assert d.level == "inconclusive"
        assert d.title == "DP claim: THIS RUN COULD NOT TELL"
        assert "could not tell DP from no DP" in d.headline


def test_a_run_whose_no_dp_model_passes_too_could_not_tell(runs):
    # the same run read against a claim above what the model without DP shows: it cannot tell DP from no DP
    from dataclasses import replace

    r = runs[0]
    weak = replace(r, epsilon=max(r.non_dp.bound.epsilon, r.accountant_epsilon) + 0.5)
    assert not weak.disproved
    d = DP_AUDIT.decision(weak)
    assert d.level == "inconclusive"
    assert d.reaches("inconclusive")
    assert not d.reaches("elevated")
    assert "--canary-kind mislabelled" in d.next_steps[0]
    strong = replace(r, epsilon=r.non_dp.bound.epsilon / 2, accountant_epsilon=r.non_dp.bound.epsilon / 2)
    assert DP_AUDIT.decision(strong).level in ("low", "elevated", "high")  # the model without DP would be disproved


@pytest.mark.slow
def test_a_leaky_claim_is_disproved(runs):
    # the non-DP model trained on these canaries is not (0.1, 1e-5)-DP: read as a claim of 0.1, the decision is high
    from dataclasses import replace

    r = runs[0]
    leaky = replace(r, epsilon=0.1, accountant_epsilon=0.1, dp=r.non_dp)
    assert leaky.disproved
    d = DP_AUDIT.decision(leaky)
    assert d.level == "high"
    assert "disproved" in d.headline


@pytest.mark.slow
def test_same_seed_same_json(german):
    a, b = (run_dp_audit(german, target="credit", epsilon=2.0, delta=1e-5, m=100, epochs=3, seed=5) for _ in range(2))
    assert json.dumps(a.to_json()) == json.dumps(b.to_json())
    c = run_dp_audit(german, target="credit", epsilon=2.0, delta=1e-5, m=100, epochs=3, seed=6)
    assert json.dumps(c.to_json()) != json.dumps(a.to_json())


def _cli(capsys, *args):
    try:
        status = main(["dp-audit", "--data", str(GERMAN), "--target", "credit", *args])
    except SystemExit as exc:  # argparse's own refusals
        status = exc.code
    err = capsys.readouterr().err.strip()
    return status, err


@pytest.mark.slow
@pytest.mark.parametrize(("args", "says"), [
    (["--epsilon", "0"], "--epsilon"),
    (["--epsilon", "-1"], "--epsilon"),
    (["--epsilon", "1", "--delta", "0"], "--delta"),
    (["--epsilon", "1", "--delta", "1"], "--delta"),
    (["--epsilon", "1", "--canaries", "401"], "at most 400"),
    (["--epsilon", "1", "--canary-kind", "random"], "--canary-kind"),
    (["--quiet", "--epsilon", "0.01", "--canaries", "100", "--epochs", "1"], "cannot reach epsilon 0.01 at delta 1e-05 in 1 "
     "epoch:"),
])  # fmt: skip
def test_bad_input_is_one_sentence_exit_2(capsys, tmp_path, args, says):
    out = tmp_path / "r.json"
    status, err = _cli(capsys, *args, "--json", str(out))
    assert status == 2
    assert len(err.splitlines()) == 1
    assert says in err
    assert not out.exists()


def test_a_draw_with_no_canary_included_is_refused(capsys):
    y = pd.read_csv(GERMAN)["credit"].astype("category").cat.codes.to_numpy()
    for seed in range(20_000):  # about 1 in 1,024 draws of 10 canaries includes none
        try:
            draw_canaries(y, m=10, kind="population", n_classes=2, seed=seed)
        except InputError as exc:
            if "No canary was included" in str(exc):
                break
    else:  # pragma: no cover
        pytest.fail("no such seed")
    status, err = _cli(capsys, "--epsilon", "1", "--canaries", "10", "--seed", str(seed))
    assert status == 2
    assert len(err.splitlines()) == 1
    assert "No canary was included" in err


@pytest.mark.slow
def test_report_states_the_claim_the_bound_and_the_ceiling(runs):
    from audit_core.dp.verdict import build_report

    r = runs[0]
    report = build_report(r)
    assert report.metrics["ceiling"] == r.ceiling
    html = report.to_html()
    assert "claimed" in html  # the title and question come from the registry (tests/core/test_contract.py)
    assert f"{r.ceiling:.2f}" in report.verdict
    assert "does not prove the claim" in report.verdict
    assert len(r.canary_table()) == 400
