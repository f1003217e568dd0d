"""LiRA online in the model audit: the design's bookkeeping, and known answers on a model that memorizes coin flips."""

from __future__ import annotations

import json

import numpy as np
import pytest

from audit_core.__main__ import main
from audit_core.common.errors import InputError
from audit_core.common.table_files import read_table
from audit_core.model.audit import audit_model
from audit_core.model.design import offline_design, online_design
from audit_core.model.verdict import decision
from tests.model_files import memorizing_case, numeric_tables, two_class_onnx

ONLINE = ("loss", "lira_offline", "lira_online")


@pytest.fixture(scope="module")
def memo(tmp_path_factory):
    case = memorizing_case(tmp_path_factory.mktemp("memo"))
    train, pop = read_table(case["train"], name="train.csv"), read_table(case["population"], name="population.csv")
    return case, train, pop


@pytest.fixture(scope="module")
def memo_global(memo):
    case, train, pop = memo
    return audit_model(case["skops"].read_bytes(), train, pop, target="y", attacks=ONLINE, n_reference=4, family="gbdt",
                       trusted=case["trusted"], seed=0)  # fmt: skip


def test_online_design_puts_every_candidate_in_half_of_the_models_at_the_target_size():
    candidates, pool = np.arange(300), np.arange(300, 500)
    d = online_design(candidates, pool, n_models=4, train_size=200, seed=3)
    assert d.keep.shape == (4, 300)
    assert set(d.keep.sum(0)) == {2}  # 150 candidates per model: each candidate in exactly 2 of 4
    assert [len(r) for r in d.rows] == [200] * 4 == [d.train_size] * 4
    for k, rows in enumerate(d.rows):
        assert np.array_equal(np.isin(candidates, rows), d.keep[k])  # keep says which candidates a model trained on
        assert np.isin(rows, np.r_[candidates, pool]).all()
        assert len(set(rows)) == len(rows)
    assert not (d.keep[0] & d.keep[1]).any()  # consecutive models take complementary halves
    again = online_design(candidates, pool, n_models=4, train_size=200, seed=3)
    assert all(np.array_equal(a, b) for a, b in zip(d.rows, again.rows, strict=True))
    assert d.seeds == again.seeds
    offline = offline_design(pool, 300, n_models=4, train_size=200, seed=3)
    assert not offline.keep.any()
    assert all(np.isin(r, pool).all() for r in offline.rows)


def test_online_design_refuses_too_few_models_in_one_sentence():
    with pytest.raises(InputError, match="at least 2 reference models, not 1"):
        online_design(np.arange(100), np.arange(100, 150), n_models=1, train_size=100, seed=0)
    # 1,000 candidates, 100 per model (the target's training size): 4 models put a candidate in 0 or 1 of them
    with pytest.raises(InputError, match="at least 10 reference models, not 4") as err:
        online_design(np.arange(1000), np.arange(1000, 2000), n_models=4, train_size=100, seed=0)
    assert len(str(err.value).splitlines()) == 1
    with pytest.raises(InputError, match="at least 2 reference model"):  # per-sample variances need two on each side
        online_design(np.arange(100), np.arange(100, 150), n_models=2, train_size=100, seed=0, min_in=2)


@pytest.mark.slow
def test_lira_online_finds_the_memorized_members_that_loss_misses(memo_global):
    r = memo_global
    loss, offline, online = (r.attacks[n] for n in ONLINE)
    t = online.tpr_at_fpr["0.01"]
    assert t.tpr > 0.15  # a blind guess flags 1 %
    assert t.tpr > loss.tpr_at_fpr["0.01"].tpr + 0.10  # easy non-members tie with members under one global threshold
    assert online.auc > max(loss.auc, offline.auc)
    assert online.tpr_at_fpr["0.1"].ci_low > 0.3
    sigma = r.reference["online"]["sigma"]
    assert r.reference["online"] == {"models": 4, "train_size": 400, "in_models_min": 2, "in_models_max": 2,
                                     "out_models_min": 2, "variance": "global", "sigma": sigma}  # fmt: skip
    assert 0 < r.reference["online"]["sigma"] < 10
    assert r.fidelity.ok
    assert r.fidelity.online is not None
    assert decision(r).level != "low"


@pytest.mark.slow
def test_per_sample_variance_is_an_option_and_global_is_the_default_below_64(memo, memo_global):
    case, train, pop = memo
    per = audit_model(case["skops"].read_bytes(), train, pop, target="y", attacks=("loss", "lira_online"), n_reference=4,
                      family="gbdt", trusted=case["trusted"], seed=0, variance="per_sample")  # fmt: skip
    assert per.reference["online"]["variance"] == "per_sample"
    assert per.reference["online"]["sigma"] is None
    assert per.settings["lira_variance"] == "per_sample"
    # two scores a side make rough per-record spreads: with 4 reference models the global variance is clearly
    # better (the LiRA paper's Fig. 9, and why it is the default below 64), yet per-sample still finds members
    glob, local = memo_global.attacks["lira_online"], per.attacks["lira_online"]
    assert glob.auc > local.auc + 0.03
    assert glob.tpr_at_fpr["0.01"].tpr > local.tpr_at_fpr["0.01"].tpr + 0.05
    assert local.auc > 0.65
    # the same online reference models (same seed): only the variance differs
    a, b = (r.records.sort_values(["table", "row"])["lira_online_score"].to_numpy() for r in (per, memo_global))
    assert not np.allclose(a, b)


@pytest.mark.slow
def test_same_seed_gives_byte_identical_json_with_lira_online(memo, memo_global):
    case, train, pop = memo
    again = audit_model(case["skops"].read_bytes(), train, pop, target="y", attacks=ONLINE, n_reference=4, family="gbdt",
                        trusted=case["trusted"], seed=0)  # fmt: skip
    assert json.dumps(again.to_json()) == json.dumps(memo_global.to_json())
    assert {"lira_online_score", "lira_online_fpr"} <= set(memo_global.records.columns)


@pytest.mark.slow
def test_cli_lira_online_block_and_one_sentence_for_one_reference_model(tmp_path, capsys):
    tables = numeric_tables(tmp_path)
    model = tmp_path / "m.onnx"
    model.write_bytes(two_class_onnx())
    base = ["--quiet", "model", "--model", str(model), "--train", str(tables["train"]), "--population",
            str(tables["population"]), "--target", "y", "--attacks", "loss,lira_online"]  # fmt: skip
    out = tmp_path / "o.json"
    assert main([*base, "--reference-models", "4", "--lira-variance", "global", "--json", str(out)]) == 0
    body = json.loads(out.read_text())
    block = body["attacks"]["lira_online"]
    assert set(block) >= {"auc", "tpr_at_fpr", "epsilon_lower_bound"}
    assert set(block["tpr_at_fpr"]["0.01"]) >= {"tpr", "ci_low", "ci_high"}
    assert body["reference"]["online"]["variance"] == "global"
    assert set(body["attacks"]) == {"loss", "lira_online"}
    capsys.readouterr()
    assert main([*base, "--reference-models", "1", "--json", str(tmp_path / "p.json")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "LiRA online needs" in err[0]
    assert not (tmp_path / "p.json").exists()
