"""Score check and the empirical epsilon lower bound, proved on mechanisms of known epsilon."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from audit_core.common.errors import InputError
from audit_core.common.privacy_bound import epsilon_lower_bound
from audit_core.common.roc import tpr_at_fpr
from audit_core.scores.audit import read_scores, score_check

ROOT = Path(__file__).resolve().parents[3]
SAMPLE = ROOT / "sample_data" / "scores.csv"


def _rr_bounds(eps: float, n: int, reps: int, seed: int) -> np.ndarray:
    """Bounds from randomized response with ``eps``: a record reports its true membership w.p. e^eps / (1 + e^eps).

    RR is exactly eps-DP (delta = 0) and tight: TPR / FPR = TNR / FNR = e^eps at its one threshold.
    """
    rng = np.random.default_rng(seed)
    p = np.exp(eps) / (1 + np.exp(eps))
    y = np.r_[np.ones(n, dtype=bool), np.zeros(n, dtype=bool)]
    truthful = rng.random((reps, 2 * n)) < p  # all repetitions drawn at once
    scores = np.where(truthful, y, ~y).astype(float)
    return np.array([epsilon_lower_bound(scores[r], y, delta=1e-5, seed=r).epsilon for r in range(reps)])


def test_bound_on_randomized_response_is_valid_and_tight():
    bounds = _rr_bounds(2.0, n=10_000, reps=200, seed=1)
    assert np.mean(bounds <= 2.0) >= 0.95  # a 95 % lower bound: above the truth at most 5 % of the time
    assert bounds.mean() > 1.5  # and close to it with 10,000 per class
    assert bounds.mean() < 2.0


def test_bound_on_a_weaker_mechanism_tracks_its_epsilon():
    bounds = _rr_bounds(0.5, n=10_000, reps=100, seed=2)
    assert np.mean(bounds <= 0.5) >= 0.95
    assert bounds.mean() > 0.3


def test_bound_on_laplace_scores_stays_below_the_mechanism_epsilon():
    """Laplace(b) noise on a 0/1 membership bit is (1/b)-DP; the bound may not exceed it, the split picks a threshold."""
    rng = np.random.default_rng(3)
    n, b, reps = 5_000, 0.5, 60  # eps = 2
    y = np.r_[np.ones(n, dtype=bool), np.zeros(n, dtype=bool)]
    scores = y + rng.laplace(scale=b, size=(reps, 2 * n))
    bounds = np.array([epsilon_lower_bound(scores[r], y, seed=r).epsilon for r in range(reps)])
    assert np.mean(bounds <= 2.0) >= 0.95
    assert bounds.mean() > 1.0


def test_independent_scores_give_a_bound_near_zero():
    rng = np.random.default_rng(4)
    n, reps = 2_000, 100
    y = np.r_[np.ones(n, dtype=bool), np.zeros(n, dtype=bool)]
    scores = rng.normal(size=(reps, 2 * n))
    bounds = np.array([epsilon_lower_bound(scores[r], y, seed=r).epsilon for r in range(reps)])
    assert np.mean(bounds == 0.0) >= 0.95
    assert bounds.max() < 0.5


def test_bound_is_seeded_and_uses_the_mirrored_inequality():
    rng = np.random.default_rng(5)
    y = np.r_[np.ones(3000, dtype=bool), np.zeros(3000, dtype=bool)]
    # 30 % of the non-members score very low and no member does: only TNR <= e^eps FNR + delta shows it
    s = rng.normal(size=y.size) - 4.0 * (~y & (rng.random(y.size) < 0.3))
    a, b = epsilon_lower_bound(s, y, seed=7), epsilon_lower_bound(s, y, seed=7)
    assert a == b
    assert a.direction == "tnr_fnr"
    assert a.epsilon > 0.1


def test_score_check_json_contract_on_the_sample():
    check = score_check(read_scores(SAMPLE), fprs=(0.01, 0.1), delta=1e-5, seed=0)
    js = check.to_json()
    assert set(js["attacks"]) == {"lira", "loss"}
    for name, block in js["attacks"].items():
        assert 0.5 < block["auc"] < 1.0
        t = block["tpr_at_fpr"]["0.01"]
        assert set(t) >= {"tpr", "ci_low", "ci_high", "achieved_fpr", "n_neg", "supported"}
        assert t["ci_low"] <= t["tpr"] <= t["ci_high"]
        assert t["n_neg"] == 2500
        assert t["supported"]
        e = block["epsilon_lower_bound"]
        assert set(e) >= {"epsilon", "delta", "confidence", "threshold"}
        assert e["delta"] == 1e-5
        assert e["confidence"] == 0.95
        table = pd.read_csv(SAMPLE)
        group = table[table["attack"] == name]
        same = tpr_at_fpr(group["score"].to_numpy(), group["is_member"].to_numpy(), 0.01)
        assert t["tpr"] == same.tpr
        assert t["ci_low"] == same.ci_low
    # the strong per-record attack proves a privacy loss, the weak one not
    assert js["attacks"]["lira"]["epsilon_lower_bound"]["epsilon"] > 1.0
    assert js["attacks"]["lira"]["epsilon_lower_bound"]["epsilon"] > js["attacks"]["loss"]["epsilon_lower_bound"]["epsilon"]
    rec = check.records
    assert len(rec) == 10_000
    top = rec[rec["attack"] == "lira"].iloc[0]
    assert top["rank"] == 1
    assert top["flagged_at_0.01"]


def _frame(**overrides) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    df = pd.DataFrame(
        {"record_id": [f"r{i}" for i in range(40)], "score": rng.normal(size=40), "is_member": np.tile([0, 1], 20)}
    )
    for k, v in overrides.items():
        if v is None:
            df = df.drop(columns=k)
        else:
            df[k] = v
    return df


BAD = {
    "nan score": (_frame(score=[np.nan] + [0.0] * 39), "finite"),
    "infinite score": (_frame(score=[np.inf] + [0.0] * 39), "infinite"),
    "text in score": (_frame(score=["high"] + ["0.5"] * 39), "'high'"),
    "is_member 2": (_frame(is_member=[2] + [0, 1] * 19 + [1]), "0 (non-member) or 1"),
    "is_member text": (_frame(is_member=["maybe"] + ["1"] * 39), "'maybe'"),
    "one class": (_frame(is_member=[1] * 40), "only members"),
    "duplicate ids": (_frame(record_id=["a", "a"] + [f"r{i}" for i in range(38)]), "more than once"),
    "missing column": (_frame(is_member=None), "'is_member'"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_is_one_sentence(case):
    frame, words = BAD[case]
    with pytest.raises(InputError, match=None) as info:
        score_check(frame)
    assert words in str(info.value)
    assert "\n" not in str(info.value)


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "audit_core", *args], cwd=ROOT, capture_output=True, text=True, timeout=120)


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(BAD))
def test_cli_bad_input_exits_2_with_one_line(case, tmp_path):
    path = tmp_path / "scores.csv"
    BAD[case][0].to_csv(path, index=False)
    r = _run("scores", "--scores", str(path), "--quiet")
    assert r.returncode == 2, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert r.stderr.startswith("error: ")
    assert BAD[case][1] in r.stderr


@pytest.mark.slow
def test_cli_writes_json_and_html_on_the_sample(tmp_path):
    out, html = tmp_path / "s.json", tmp_path / "s.html"
    r = _run("scores", "--scores", str(SAMPLE), "--fpr", "0.01,0.1", "--delta", "1e-5", "--seed", "3",
             "--json", str(out), "--html", str(html), "--quiet")
    assert r.returncode == 0, r.stderr
    js = json.loads(out.read_text())
    direct = score_check(read_scores(SAMPLE), fprs=(0.01, 0.1), delta=1e-5, seed=3).to_json()
    assert js["attacks"]["lira"]["epsilon_lower_bound"] == direct["attacks"]["lira"]["epsilon_lower_bound"]
    assert js["attacks"]["lira"]["tpr_at_fpr"]["0.1"]["tpr"] == direct["attacks"]["lira"]["tpr_at_fpr"]["0.1"]["tpr"]
    text = html.read_text()
    assert "Score check" in text
    assert "same pool" in text
    assert "epsilon" in r.stdout


@pytest.mark.slow
@pytest.mark.parametrize("flags", [("--fpr", "0.7"), ("--fpr", "x"), ("--delta", "0.5"), ("--seed", "-1")])
def test_cli_bad_settings_exit_2_before_reading(flags, tmp_path):
    r = _run("scores", "--scores", str(tmp_path / "absent.csv"), *flags)
    assert r.returncode == 2
    assert len(r.stderr.strip().splitlines()) == 1
    assert "absent" not in r.stderr  # refused on the setting, before the file is looked at


def test_sample_file_is_what_the_script_makes():
    sys.path.insert(0, str(ROOT / "sample_data"))
    try:
        from make_scores import make_scores
    finally:
        sys.path.pop(0)
    made = make_scores()
    committed = pd.read_csv(SAMPLE)
    pd.testing.assert_frame_equal(made.reset_index(drop=True), committed, check_dtype=False)


def _pool(n_models: int, n_records: int, signal: float, exposed: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A simulated LiRA pool: each record in a random half of the models; in-scores shifted for the exposed records."""
    rng = np.random.default_rng(seed)
    keep = np.zeros((n_models, n_records), dtype=bool)
    for j in range(n_records):
        keep[rng.permutation(n_models)[: n_models // 2], j] = True
    record_mean = rng.normal(size=n_records)  # records differ: the reason for per-record calibration
    shift = signal * (rng.random(n_records) < exposed)
    return record_mean + rng.normal(size=(n_models, n_records)) + keep * shift, keep


@pytest.mark.slow
def test_lira_target_model_bound_is_zero_without_signal_and_positive_with_it():
    from audit_core.common.privacy_bound import target_model_scores

    none = [epsilon_lower_bound(*target_model_scores(*_pool(16, 2000, 0.0, 0.0, seed=r)), seed=r).epsilon for r in range(40)]
    assert np.mean(np.array(none) == 0.0) >= 0.95
    strong = epsilon_lower_bound(*target_model_scores(*_pool(16, 4000, 5.0, 0.2, seed=99)), seed=0)
    assert strong.epsilon > 0.5


@pytest.mark.slow
def test_lira_json_reports_the_bound():
    from audit_core.lira.result import run_lira

    table = pd.read_csv(ROOT / "sample_data" / "german_credit.csv")
    js = run_lira(table, target="credit", n_models=8, fpr=0.05, seed=0, n_bootstrap=0).to_json()
    e = js["epsilon_lower_bound"]
    assert set(e) >= {"epsilon", "delta", "confidence", "threshold"}
    assert e["n_members_evaluated"] + e["n_non_members_evaluated"] == 800  # one target model, 80 % of 1,000 records
    assert e["epsilon"] >= 0.0


# ----------------------------------------------------------------------------- issue 21: reversed scores, text labels
def _reversed_frame(shift: float | None, n: int = 400, seed: int = 0) -> pd.DataFrame:
    """Members score lower: perfectly separated (``shift=None``) or shifted down by ``shift`` standard deviations."""
    rng = np.random.default_rng(seed)
    y = np.arange(2 * n) % 2
    score = np.where(y == 1, -1.0 - rng.random(2 * n), rng.random(2 * n)) if shift is None else rng.normal(size=2 * n) - shift * y
    return pd.DataFrame({"score": score, "is_member": y})


@pytest.mark.parametrize(("shift", "auc_range"), [(None, (0.0, 0.0)), (1.53, (0.10, 0.18))])
def test_reversed_scores_are_flagged_in_the_json_and_never_flipped(shift, auc_range):
    """The probe's two cases (AUC 0.000 and 0.139) once read "no privacy loss is demonstrated" and nothing else."""
    frame = _reversed_frame(shift)
    check = score_check(frame)
    attack = check.attacks["attack"]
    assert auc_range[0] <= attack.auc <= auc_range[1]
    assert attack.to_json()["reversed"] is True
    assert attack.to_json()["reversed_p_value"] < 1e-20
    assert "its scores look reversed" in attack.reversed_sentence()
    flipped = score_check(frame.assign(score=-frame["score"])).attacks["attack"]
    assert flipped.auc == pytest.approx(1 - attack.auc)  # read as given: the check itself never flips
    assert not flipped.reversed
    assert flipped.reversed_sentence() == ""
    assert flipped.epsilon.epsilon > 0.5  # negated, the same scores prove a privacy loss


@pytest.mark.slow
def test_scores_without_signal_are_rarely_called_reversed():
    """The rule is a one-sided 2.5 % test: on independent scores about 2.5 % of files are flagged, not more."""
    from audit_core.scores.audit import reversed_p_value

    rng = np.random.default_rng(3)
    y = np.arange(400) % 2
    flagged = [reversed_p_value(rng.normal(size=400), y) < 0.025 for _ in range(400)]
    assert 0.005 <= np.mean(flagged) <= 0.05


def test_is_member_as_yes_no_text_is_accepted_and_noted():
    frame = _frame(is_member=["no", "Yes"] * 20)  # the same labels as _frame()'s 0, 1, 0, 1, ...
    check = score_check(frame)
    as_numbers = score_check(_frame())
    assert check.attacks["attack"].auc == as_numbers.attacks["attack"].auc
    note = "Column 'is_member' holds text: 'Yes' read as member (1) and 'no' as non-member (0)"
    assert check.to_json()["notes"][0].startswith(note)
    assert as_numbers.to_json()["notes"] == []
    mixed = score_check(_frame(is_member=["false", "TRUE", "No", "yes"] * 10))
    assert "'TRUE', 'yes' read as member (1) and 'false', 'No' as non-member (0)" in mixed.notes[0]
    with pytest.raises(InputError, match=r"or yes/no or true/false, but row 2 of 'scores'.* is 'y'"):
        score_check(_frame(is_member=["y", "n"] * 20))


@pytest.mark.slow
def test_cli_reports_reversed_scores_in_the_json(tmp_path):
    path = tmp_path / "scores.csv"
    _reversed_frame(None).to_csv(path, index=False)
    out = tmp_path / "s.json"
    r = _run("scores", "--scores", str(path), "--json", str(out), "--quiet")
    assert r.returncode == 0, r.stderr
    assert json.loads(out.read_text())["attacks"]["attack"]["reversed"] is True


def test_the_verdict_says_reversed_scores_look_reversed_and_what_text_labels_meant():
    from audit_core.scores.verdict import verdict

    frame = _reversed_frame(1.53)
    text = verdict(score_check(frame))
    assert "its scores look reversed" in text
    assert "negate them (score = -score)" in text
    assert "says nothing about privacy until they are negated" in text
    assert "reversed" not in verdict(score_check(frame.assign(score=-frame["score"])))
    labelled = verdict(score_check(_frame(is_member=["no", "Yes"] * 20)))
    assert "Column 'is_member' holds text: 'Yes' read as member (1) and 'no' as non-member (0)" in labelled
    assert "holds text" not in verdict(score_check(_frame()))


@pytest.mark.slow
def test_cli_prints_the_reversed_reading(tmp_path):
    path = tmp_path / "scores.csv"
    _reversed_frame(None).to_csv(path, index=False)
    r = _run("scores", "--scores", str(path), "--quiet")
    assert r.returncode == 0, r.stderr
    assert "its scores look reversed" in r.stdout


def test_reversed_scores_are_never_a_low_decision() -> None:
    """Lower = member, perfectly separating: the decision says so instead of reading the scores as safe."""
    from audit_core.scores.verdict import decision

    rng = np.random.default_rng(5)
    member = np.r_[np.ones(500, dtype=int), np.zeros(500, dtype=int)]
    table = pd.DataFrame({"score": -member + 0.01 * rng.standard_normal(1000), "is_member": member})
    d = decision(score_check(table, fprs=(0.01,), delta=1e-5, seed=0))
    assert d.level == "elevated"
    assert "reversed" in d.headline
