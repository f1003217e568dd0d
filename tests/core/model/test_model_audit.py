"""The model audit on known answers: an overfit forest leaks, the same family on disjoint data does not."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from audit_core.common.table_files import read_table
from audit_core.model.attacks import ATTACKS
from audit_core.model.audit import audit_model
from audit_core.model.verdict import decision, verdict
from tests.model_files import TARGET, TRUST_TREE, disjoint_case, german_case


@pytest.fixture(scope="module")
def german(tmp_path_factory):
    return german_case(tmp_path_factory.mktemp("german"))


@pytest.fixture(scope="module")
def tables(german):
    return read_table(german["train"], name="train.csv"), read_table(german["population"], name="population.csv")


@pytest.fixture(scope="module")
def onnx_k4(german, tables):
    return audit_model(german["onnx"].read_bytes(), *tables, target=TARGET, n_reference=4, family="gbdt", seed=0)


@pytest.mark.slow
def test_onnx_and_skops_files_of_one_forest_give_the_same_scores(german, tables, onnx_k4):
    sk = audit_model(german["skops"].read_bytes(), *tables, target=TARGET, n_reference=4, family="gbdt", seed=0,
                     trusted=[TRUST_TREE])  # fmt: skip
    a = onnx_k4.records.sort_values(["table", "row"]).reset_index(drop=True)
    b = sk.records.sort_values(["table", "row"]).reset_index(drop=True)
    assert a[["table", "row", "is_member", "label"]].equals(b[["table", "row", "is_member", "label"]])
    np.testing.assert_allclose(a["p_target"], b["p_target"], atol=1e-6, rtol=0)  # ONNX computes in float32
    np.testing.assert_allclose(a["rmia_score"], b["rmia_score"], atol=1e-6, rtol=0)
    np.testing.assert_allclose(a["loss_score"][a["p_target"] > 0.01], b["loss_score"][b["p_target"] > 0.01], atol=1e-4)
    assert abs(onnx_k4.attacks["rmia"].auc - sk.attacks["rmia"].auc) < 1e-9
    # sklearn says exactly 1.0 for hundreds of records, ONNX's float32 sums 1 +- 6e-8: LOSS and LiRA break those ties
    # in another order, which moves their AUC by a few thousandths (RMIA compares ratios, which do not tie)
    for name in ("loss", "lira_offline"):
        assert abs(onnx_k4.attacks[name].auc - sk.attacks[name].auc) < 0.01


@pytest.mark.slow
def test_overfit_forest_is_found_by_rmia_with_four_reference_models(onnx_k4):
    rmia = onnx_k4.attacks["rmia"]
    assert onnx_k4.n_members == 500
    assert onnx_k4.n_non_members == 250
    assert rmia.auc > 0.75
    assert rmia.tpr_at_fpr["0.01"].tpr > 0.08  # far above the 1 % a blind guess gets
    assert decision(onnx_k4).level != "low"
    assert onnx_k4.fidelity.ok  # gradient-boosted trees fit the training data as fully as the forest does
    assert f"'{onnx_k4.best().name}'" in verdict(onnx_k4)
    assert set(onnx_k4.rmia_by_k) == {"1", "2", "4"}


@pytest.mark.slow
def test_rmia_with_one_reference_model_beats_loss_at_low_fpr(german, tables):
    r = audit_model(german["onnx"].read_bytes(), *tables, target=TARGET, attacks=("loss", "rmia"), n_reference=1,
                    family="gbdt", seed=0)  # fmt: skip
    loss, rmia = r.attacks["loss"].tpr_at_fpr["0.01"], r.attacks["rmia"].tpr_at_fpr["0.01"]
    # a fully grown forest gives many non-members probability 1 too: LOSS ties them with the members at the top
    assert rmia.tpr > loss.tpr + 0.05


@pytest.mark.slow
def test_same_family_on_disjoint_data_is_at_chance(tmp_path):
    case = disjoint_case(tmp_path)
    train, pop = read_table(case["train"], name="train"), read_table(case["population"], name="population")
    r = audit_model(case["onnx"].read_bytes(), train, pop, target=TARGET, attacks=ATTACKS, n_reference=4, family="gbdt",
                    seed=0)  # fmt: skip
    assert set(r.attacks) == {"loss", "rmia", "lira_offline", "lira_online", "supervised"}
    for a in r.attacks.values():
        assert abs(a.auc - 0.5) < 0.08, (a.name, a.auc)  # sd of an AUC at chance here is about 0.03
        assert a.tpr_at_fpr["0.01"].ci_low <= 0.03
    measurable = all(a.tpr_at_fpr["0.01"].supported for a in r.attacks.values())
    assert decision(r).level == ("low" if measurable else "inconclusive")  # at chance: never a finding


def test_fidelity_check_fails_for_a_family_that_cannot_overfit(german, tables):
    r = audit_model(german["onnx"].read_bytes(), *tables, target=TARGET, attacks=("loss",), n_reference=2,
                    family="logistic", seed=0)  # fmt: skip
    assert not r.fidelity.ok
    assert r.fidelity.target["train_accuracy"] == 1.0
    assert "not trustworthy" in verdict(r)
    assert json.loads(json.dumps(r.to_json()))["fidelity"]["ok"] is False


@pytest.mark.slow
def test_same_seed_same_json_and_records_cover_every_candidate(german, tables, onnx_k4):
    again = audit_model(german["onnx"].read_bytes(), *tables, target=TARGET, n_reference=4, family="gbdt", seed=0)
    assert json.dumps(again.to_json()) == json.dumps(onnx_k4.to_json())
    rec = onnx_k4.records
    assert len(rec) == 750
    assert rec["is_member"].sum() == 500
    assert set(rec.columns) >= {"loss_score", "rmia_score", "lira_offline_score", "rmia_fpr"}
    non = rec[~rec["is_member"]]
    assert not pd.Series(list(zip(non["table"], non["row"], strict=True))).duplicated().any()
    assert list(onnx_k4.exposed.columns[:4]) == ["row", f"{onnx_k4.best().name}_score", f"{onnx_k4.best().name}_fpr", "label"]


@pytest.mark.slow
def test_onnx_and_skops_files_of_a_forest_with_rounding_below_zero_agree_on_every_attack(tmp_path):
    """Issue 33: a 20-tree forest whose ONNX export puts pure leaves at -1.2e-07 (the case the softmax misread)."""
    case = german_case(tmp_path, trees=20)
    tables = read_table(case["train"], name="train.csv"), read_table(case["population"], name="population.csv")
    runs = {fmt: audit_model(case[fmt].read_bytes(), *tables, target=TARGET, attacks=ATTACKS, n_reference=2,
                             family="random_forest", seed=0) for fmt in ("onnx", "skops")}  # fmt: skip
    for name in ATTACKS:
        a, b = (runs[fmt].attacks[name].tpr_at_fpr["0.01"] for fmt in ("onnx", "skops"))
        assert b.ci_low <= a.tpr <= b.ci_high, (name, a, b)
        assert a.ci_low <= b.tpr <= a.ci_high, (name, a, b)
        assert abs(runs["onnx"].attacks[name].auc - runs["skops"].attacks[name].auc) < 0.02, name
    # read as logits, the pure leaves' [1, 0] became [0.731, 0.269]: no member would have p_target near 1
    assert (runs["onnx"].records["p_target"] > 0.999).sum() == (runs["skops"].records["p_target"] > 0.999).sum() > 50
