"""The DP claim check of an uploaded model with its canary file, on known answers.

- An overfit forest trained on half of 500 mislabelled canaries: ONNX and skops give the same bound, far above a
  claim of 0.5 (disproved).
- The same forest trained on none of them (the file still says half were included): bound 0, and over 100 fresh
  coin flips the bound exceeds 0 (the truth: nothing leaks) in at most 5 of them.
- A model trained here (the train-here path's own scores) and written out as ONNX with its canaries gives the same
  bound through the upload path.
- Hostile inputs: one sentence, exit 2, no output.
"""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pandas as pd
import pytest

from audit_core.__main__ import main
from audit_core.common.errors import InputError
from audit_core.common.figures import MEMBER, NON_MEMBER
from audit_core.common.table_files import read_table
from audit_core.dp.bounds import audit_bounds
from audit_core.dp.canaries import draw_canaries
from audit_core.dp.figures import uploaded_score_figure
from audit_core.dp.onerun import ceiling, one_run_audit
from audit_core.dp.spec import DP_MODEL
from audit_core.dp.tradeoff import dp_sgd_family
from audit_core.dp.training import train
from audit_core.dp.uploaded import audit_uploaded_model
from audit_core.fabrication.threads import cpu_threads
from audit_core.lira.design import prepare_design
from tests.canary_files import INCLUDED, M, canary_frame, disjoint_case, leaky_case, torch_onnx
from tests.model_files import GERMAN, TARGET, TRUST_TREE, pickle_bytes


@pytest.fixture(scope="module")
def leaky(tmp_path_factory):
    return leaky_case(tmp_path_factory.mktemp("leaky"))


@pytest.fixture(scope="module")
def disjoint(tmp_path_factory):
    return disjoint_case(tmp_path_factory.mktemp("disjoint"))


def _audit(paths, fmt="onnx", *, epsilon=0.5, seed=0, table=None):
    table = read_table(paths["canaries"], name="canaries.csv") if table is None else table
    return audit_uploaded_model(paths[fmt].read_bytes(), table, target=TARGET, epsilon=epsilon, delta=1e-5,
                                trusted=[TRUST_TREE], seed=seed, names=(paths[fmt].name, "canaries.csv"))  # fmt: skip


@pytest.mark.slow
def test_an_overfit_forest_disproves_a_small_claim_the_same_from_onnx_and_skops(leaky):
    onnx, skops = _audit(leaky, "onnx"), _audit(leaky, "skops")
    assert onnx.bound.to_json() == skops.bound.to_json()  # every r of the grid: the same guesses right
    assert onnx.bound.m == M
    assert onnx.ceiling == ceiling(M, 1e-5)
    assert onnx.bound.epsilon > 3.0  # 4.61 is the most 500 canaries can show
    assert onnx.disproved
    assert skops.disproved
    inc = onnx.canaries.included
    assert np.median(onnx.scores[inc]) > np.median(onnx.scores[~inc]) + 1  # members are fitted, the others not
    members, non_members = uploaded_score_figure(onnx).data
    assert (members.marker.color, non_members.marker.color) == (MEMBER, NON_MEMBER)  # the dashboard's colours
    decision = DP_MODEL.decision(onnx)
    assert decision.level == "high"
    assert "disproved" in decision.headline
    assert (onnx.model["format"], skops.model["format"]) == ("onnx", "skops")
    assert onnx.model["sha256"] == hashlib.sha256(leaky["onnx"].read_bytes()).hexdigest()


@pytest.mark.slow
def test_a_model_that_saw_no_canary_proves_nothing(disjoint):
    r = _audit(disjoint, "skops", epsilon=1.0)
    assert r.bound.epsilon == 0.0
    assert not r.disproved
    assert DP_MODEL.decision(r).level == "low"
    # the truth is "no leak at all": over fresh fair coins the 95 % bound may exceed 0 in at most 5 % of them
    table = read_table(disjoint["canaries"], name="canaries.csv")
    bounds = []
    for rep in range(100):
        coins = np.random.default_rng([rep, 7]).random(len(table)) < 0.5
        bounds.append(_audit(disjoint, "onnx", epsilon=1.0, seed=rep, table=table.assign(**{INCLUDED: coins.astype(int)})
                             ).bound.epsilon)  # fmt: skip
    bounds = np.array(bounds)
    assert (bounds > 0).sum() <= 5, bounds[bounds > 0]
    assert bounds.max() < 1.0


@pytest.mark.slow
@pytest.mark.parametrize(("dp", "epochs"), [(None, 100), ((1.0, 1e-5), 30)], ids=["no DP", "DP-SGD at epsilon 1"])
def test_a_model_trained_here_and_written_out_gives_the_same_bound(dp, epochs):
    design = prepare_design(pd.read_csv(GERMAN), target=TARGET)
    X, y = design.X, design.y
    c = draw_canaries(y, m=400, kind="mislabelled", n_classes=design.n_classes, seed=0)
    rows = np.concatenate([c.base, c.rows[c.included]])
    with cpu_threads(1):
        model = train(X[rows], np.concatenate([y[c.base], c.y[c.included]]), n_classes=design.n_classes, model="mlp",
                      epochs=epochs, dp=dp, seed=0)  # fmt: skip
    here = one_run_audit(model.scores(X[c.rows], c.y), c.included, delta=1e-5, seed=0)  # Steinke's, as dp-audit computes it
    table = canary_frame(pd.DataFrame(X[c.rows], columns=[f"x{i}" for i in range(X.shape[1])]), c.y, c.included)
    onnx = torch_onnx(model.module, X.shape[1])
    uploaded = audit_uploaded_model(onnx, table, target=TARGET, epsilon=1.0, delta=1e-5, seed=0)
    assert uploaded.bound.steinke == here
    assert uploaded.bound.primary == "steinke"  # a bare (epsilon, delta) claim
    assert (here.epsilon > 0.8) == (dp is None)
    if dp is not None:  # the claim states its DP-SGD run: the f-DP bound against its curve, as dp-audit reports it
        mechanism = (model.noise_multiplier, model.sample_rate, model.steps)
        stated = audit_uploaded_model(onnx, table, target=TARGET, epsilon=1.0, delta=1e-5, mechanism=mechanism, seed=0)
        family = dp_sgd_family(sample_rate=model.sample_rate, steps=model.steps, delta=1e-5)
        assert stated.bound == audit_bounds(model.scores(X[c.rows], c.y), c.included, delta=1e-5, mechanism=family)
        assert stated.bound.primary == "fdp"
        assert stated.to_json()["claimed_mechanism"]["steps"] == model.steps


def _cli(capsys, *args):
    try:
        status = main(["--quiet", "dp-audit-model", *args])
    except SystemExit as exc:  # argparse's own refusals
        status = exc.code
    captured = capsys.readouterr()
    return status, captured.out, captured.err.strip()


def _args(paths, fmt="skops", canaries=None, *extra):
    return ["--model", str(paths[fmt]), "--canaries-file", str(canaries or paths["canaries"]), "--target", TARGET,
            "--trust-skops-types", TRUST_TREE, *extra]  # fmt: skip


@pytest.mark.slow
def test_same_inputs_and_seed_give_byte_identical_json(capsys, leaky, tmp_path):
    outs = [tmp_path / f"{i}.json" for i in range(3)]
    for out, seed in zip(outs, (3, 3, 4), strict=True):
        status, stdout, _ = _cli(capsys, *_args(leaky), "--epsilon", "0.5", "--seed", str(seed), "--json", str(out))
        assert status == 0
        assert stdout.strip().endswith("release decision: high")
    assert outs[0].read_bytes() == outs[1].read_bytes()
    assert outs[0].read_bytes() != outs[2].read_bytes()  # the seed breaks ties and is in the JSON
    j = json.loads(outs[0].read_text())
    assert j["claimed"] == {"epsilon": 0.5, "delta": 1e-5}
    assert {k: j[k] for k in ("accountant_epsilon", "train_accuracy", "test_accuracy", "non_dp")} == dict.fromkeys(
        ("accountant_epsilon", "train_accuracy", "test_accuracy", "non_dp"))  # fmt: skip
    assert set(j["epsilon_lower_bound"]) >= {"epsilon", "confidence", "r", "correct", "m"}
    assert j["canaries"]["m"] == M
    assert j["canaries"]["kind"] is None
    assert set(j["model"]) >= {"file", "format", "sha256"}
    assert j["verdict"]["level"] == "high"


@pytest.mark.slow
def test_yes_no_text_reads_as_1_0_and_is_said(leaky, tmp_path):
    table = read_table(leaky["canaries"], name="canaries.csv")
    worded = table.assign(**{INCLUDED: np.where(table[INCLUDED] == 1, "Yes", "no")})
    a, b = _audit(leaky, table=table), _audit(leaky, table=worded)
    assert a.bound == b.bound
    assert "'Yes' read as included (1) and 'no' as left out (0)" in b.canaries.notes[0]


@pytest.mark.slow
def test_a_lopsided_coin_is_a_warning(leaky):
    table = read_table(leaky["canaries"], name="canaries.csv")
    lopsided = table.assign(**{INCLUDED: (np.arange(len(table)) % 10 != 0).astype(int)})  # 90 % included
    r = _audit(leaky, table=lopsided)
    assert any("unlikely with a fair coin" in n for n in r.canaries.notes)
    assert any("fair coin" in reason for reason in DP_MODEL.decision(r).reasons)


@pytest.mark.slow
def test_a_delta_too_large_to_check_is_said(leaky):
    from audit_core.dp.verdict import uploaded_verdict

    r = audit_uploaded_model(leaky["onnx"].read_bytes(), read_table(leaky["canaries"], name="c.csv"), target=TARGET,
                             epsilon=1.0, delta=0.01)  # fmt: skip
    assert r.ceiling == r.bound.epsilon == 0.0  # 2 m delta = 10: not even a perfect attack proves anything
    assert "cannot disprove any claim: the test's delta term (2 m delta = 10) swamps it" in uploaded_verdict(r)


def _write(tmp_path, frame, name="bad.csv"):
    path = tmp_path / name
    frame.to_csv(path, index=False)
    return path


def _hostile(leaky, tmp_path, case):
    """(canary file, model file) for one hostile case; None keeps the good one."""
    table = read_table(leaky["canaries"], name="canaries.csv")
    pick = {
        "no canary included": lambda: (_write(tmp_path, table.assign(**{INCLUDED: 0})), None),
        "every canary included": lambda: (_write(tmp_path, table.assign(**{INCLUDED: "yes"})), None),
        "too few canaries": lambda: (_write(tmp_path, table.head(6)), None),
        "missing included column": lambda: (_write(tmp_path, table.drop(columns=INCLUDED)), None),
        "bad included value": lambda: (_write(tmp_path, table.assign(**{INCLUDED: table[INCLUDED].replace(1, "maybe")})), None),
        "unknown label": lambda: (_write(tmp_path, table.assign(**{TARGET: table[TARGET].replace("bad", "awful")})), None),
        "empty label": lambda: (_write(tmp_path, table.assign(**{TARGET: table[TARGET].where(table.index != 3)})), None),
        "a pickle": lambda: (None, _pickle(tmp_path)),
    }  # fmt: skip
    return pick[case]()


def _pickle(tmp_path):
    path = tmp_path / "model.skops"
    path.write_bytes(pickle_bytes())
    return path


@pytest.mark.slow
@pytest.mark.parametrize(("case", "says"), [
    ("no canary included", "No canary of 'bad.csv' is marked included (1)"),
    ("every canary included", "is marked left out (0)"),
    ("too few canaries", "has 6 canaries; the one-run test takes 10"),
    ("missing included column", "The inclusion column 'included' (--included-column) is not in canary file"),
    ("bad included value", "Column 'included' must be 0 (left out) or 1 (included), or yes/no"),
    ("unknown label", "'awful' are not among the model's classes ('bad', 'good')"),
    ("empty label", "has 1 empty cell; every canary needs"),
    ("a pickle", "is a Python pickle"),
])  # fmt: skip
def test_hostile_input_is_one_sentence_exit_2(capsys, leaky, tmp_path, case, says):
    canaries, model = _hostile(leaky, tmp_path, case)
    out = tmp_path / "r.json"
    paths = {**leaky, **({"skops": model} if model else {})}
    status, _, err = _cli(capsys, *_args(paths, "skops", canaries), "--epsilon", "1", "--json", str(out))
    assert status == 2
    assert len(err.splitlines()) == 1, err
    assert says in err
    assert not out.exists()


@pytest.mark.slow
@pytest.mark.parametrize(("args", "says"), [
    (["--epsilon", "0"], "--epsilon"),
    (["--epsilon", "-1"], "--epsilon"),
    (["--epsilon", "1", "--delta", "0"], "--delta"),
    (["--epsilon", "1", "--delta", "1"], "--delta"),
    (["--epsilon", "1", "--included-column", TARGET], "both 'credit'"),
])  # fmt: skip
def test_a_bad_claim_is_one_sentence_exit_2(capsys, leaky, tmp_path, args, says):
    out = tmp_path / "r.json"
    status, _, err = _cli(capsys, *_args(leaky), *args, "--json", str(out))
    assert status == 2
    assert len(err.splitlines()) == 1, err
    assert says in err
    assert not out.exists()


def test_a_model_with_unnamed_classes_refuses_a_third_label():
    from tests.model_files import two_class_onnx

    rng = np.random.default_rng(0)
    table = canary_frame(pd.DataFrame(rng.normal(size=(40, 3)), columns=["a", "b", "c"]), rng.integers(0, 3, 40),
                         rng.random(40) < 0.5)  # fmt: skip
    with pytest.raises(InputError, match="output has 2 classes but the label column has 3"):
        audit_uploaded_model(two_class_onnx(3), table, target=TARGET, epsilon=1.0, delta=1e-5)
