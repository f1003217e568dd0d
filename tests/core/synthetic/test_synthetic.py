"""Tests for the membership audit of a synthetic table (docs/methods.md §1) on data with a known answer.

The population is a seeded mixed-type table with continuous columns, so natural
duplicates are (almost) absent: a synthetic table that copies training rows must
expose exactly those rows, and one drawn independently of the members must not
tell members from non-members.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from audit_core.common.column_types import infer_column_types
from audit_core.common.errors import InputError
from audit_core.registry import REGISTRY
from audit_core.synthetic.audit import AuditOptions, audit_synthetic
from audit_core.synthetic.explanations import exposed_records, record_comparison
from audit_core.synthetic.result import RECORD_COLUMNS
from audit_core.synthetic.scoring import rescore

N = 1200  # per table: 1 % FPR is measurable (>= 1000 non-members)


def _population(n: int, rng: np.random.Generator) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "age": rng.integers(18, 90, size=n),
            "income": np.round(rng.lognormal(10.0, 0.6, size=n), 2),
            "hours": np.round(rng.normal(40.0, 9.0, size=n), 1),
            "city": rng.choice([f"city_{i}" for i in range(8)], size=n),
            "job": rng.choice([f"job_{i}" for i in range(12)], size=n),
            "smoker": rng.choice(["yes", "no"], size=n, p=[0.2, 0.8]),
        }
    )


@pytest.fixture(scope="module")
def tables() -> dict[str, pd.DataFrame]:
    rng = np.random.default_rng(12345)
    pop = _population(5 * N, rng)
    parts = {
        name: pop.iloc[i * N : (i + 1) * N].reset_index(drop=True)
        for i, name in enumerate(["train", "holdout", "auxiliary", "independent", "spare"])
    }
    copied = np.sort(rng.choice(N, size=N // 10, replace=False))
    leaky = pd.concat([parts["independent"].iloc[: N - copied.size], parts["train"].iloc[copied]], ignore_index=True)
    return {**parts, "leaky": leaky, "copied_rows": pd.DataFrame({"row": copied})}


@pytest.fixture(scope="module")
def leaky_audit(tables):
    return audit_synthetic(tables["train"], tables["holdout"], tables["leaky"], tables["auxiliary"], seed=0)


@pytest.fixture(scope="module")
def independent_audit(tables):
    return audit_synthetic(tables["train"], tables["holdout"], tables["independent"], tables["auxiliary"], seed=0)


@pytest.mark.slow
def test_copies_come_out_on_top_with_p_near_one(tables, leaky_audit) -> None:
    copied = set(tables["copied_rows"]["row"])
    recs = leaky_audit.records
    is_copy = (recs["source"] == "train") & recs["row"].isin(copied)
    n_copies = int(is_copy.sum())
    assert n_copies == len(copied)  # balanced attack set uses every training row here
    assert np.all(recs.loc[is_copy, "distance"] == 0.0)
    assert recs.loc[is_copy, "p_member_true"].min() > 0.95
    assert recs.loc[is_copy, "p_member_realistic"].min() > 0.95
    # The copies are the most exposed records, under both attacks.
    for by in ("p_member_true", "p_member_realistic"):
        top = exposed_records(leaky_audit, k=n_copies, by=by)
        assert (top["source"] == "train").all()
        assert set(top["row"]) == copied
        assert (top["differs_in"] == "nothing (exact copy)").all()
    # High TPR at low FPR: ~10 % of members flagged while 1 % of non-members are.
    for name in ("true_distribution", "realistic", "domias"):
        low = leaky_audit.attacks[name].tpr_at_fpr["0.01"]
        assert low.supported
        assert low.tpr >= 0.09
        assert low.ci_low > 0.05
    assert leaky_audit.exact_copies == {"members": len(copied), "non_members": 0}


@pytest.mark.slow
def test_independent_synthetic_gives_chance(independent_audit) -> None:
    for name in ("true_distribution", "realistic", "domias"):
        m = independent_audit.attacks[name]
        assert abs(m.auc - 0.5) < 0.05, name
        assert m.tpr_at_fpr["0.1"].tpr < 0.2
    m1 = independent_audit.distance_threshold.metrics
    assert abs(m1.tpr - m1.fpr) < 0.08
    assert independent_audit.exact_copies == {"members": 0, "non_members": 0}


def test_records_and_json_follow_the_contract(tables, leaky_audit) -> None:
    recs = leaky_audit.records
    assert tuple(recs.columns[: len(RECORD_COLUMNS)]) == RECORD_COLUMNS
    assert set(recs["source"]) == {"train", "holdout"}
    assert leaky_audit.n_members == leaky_audit.n_non_members == N  # balanced
    assert recs["p_member_true"].between(0, 1).all()
    assert recs["p_member_realistic"].between(0, 1).all()
    assert recs["nearest_synthetic_row"].between(0, N - 1).all()
    j = leaky_audit.to_json()
    assert j["n_members"] == N
    assert j["n_non_members"] == N
    assert j["n_synthetic"] == N
    for name in ("true_distribution", "realistic"):
        a = j["attacks"][name]
        for key in ("auc", "tpr_at_fpr", "accuracy", "precision", "recall", "f1"):
            assert key in a
        assert set(a["tpr_at_fpr"]) == {"0.001", "0.01", "0.1"}
    for key in ("threshold", "accuracy", "precision", "recall", "f1"):
        assert key in j["attacks"]["distance_threshold"]


def test_method_one_uses_the_non_member_median(leaky_audit) -> None:
    recs = leaky_audit.records
    d_non = recs.loc[~recs["is_member"], "distance"]
    m1 = leaky_audit.distance_threshold
    assert m1.threshold == pytest.approx(float(np.median(d_non)))
    assert m1.metrics.fpr == pytest.approx(float((d_non < m1.threshold).mean()))
    assert m1.metrics.tpr > m1.metrics.fpr  # the copies are all below the threshold


def test_rescore_reuses_distances_and_moves_only_the_scores(leaky_audit) -> None:
    same = rescore(leaky_audit)
    pd.testing.assert_frame_equal(same.records, leaky_audit.records)
    assert same.attacks["domias"] is leaky_audit.attacks["domias"]  # no bandwidth or prior in it
    low_prior = rescore(leaky_audit, prior=0.1)
    pd.testing.assert_series_equal(low_prior.records["distance"], leaky_audit.records["distance"])
    # A lower prior lowers every probability but keeps the ranking (AUC unchanged).
    assert (low_prior.records["p_member_true"] <= leaky_audit.records["p_member_true"] + 1e-12).all()
    assert low_prior.attacks["true_distribution"].auc == pytest.approx(leaky_audit.attacks["true_distribution"].auc)
    wide = rescore(leaky_audit, bandwidth_scale=3.0)
    assert wide.posterior_true.members.bandwidth == pytest.approx(3 * leaky_audit.posterior_true.members.bandwidth)
    assert wide.settings["bandwidth_scale"] == 3.0


def test_without_auxiliary_a_disjoint_part_of_holdout_is_used(tables) -> None:
    audit = audit_synthetic(tables["train"], tables["holdout"], tables["leaky"], seed=1)
    assert audit.auxiliary_source == "holdout"
    assert audit.n_non_members + audit.n_auxiliary == N
    assert audit.n_members == audit.n_non_members
    # The auxiliary part is left out of the attack set: the non-members' rows are distinct and
    # their count matches the holdout minus the auxiliary records.
    rows = audit.records.loc[audit.records["source"] == "holdout", "row"]
    assert rows.is_unique
    assert len(rows) == N - audit.n_auxiliary
    assert any("auxiliary" in w for w in audit.warnings)


def test_record_comparison_explains_the_distance(leaky_audit) -> None:
    recs = leaky_audit.records
    copy_pos = int(np.flatnonzero(recs["distance"].to_numpy() == 0.0)[0])
    table = record_comparison(leaky_audit, copy_pos)
    assert (table["contribution"] == 0).all()
    assert (table["record"].astype(str) == table["nearest_synthetic"].astype(str)).all()
    other = int(np.flatnonzero(recs["distance"].to_numpy() > 0.05)[0])
    table = record_comparison(leaky_audit, other)
    assert table["contribution"].sum() == pytest.approx(recs["distance"].iloc[other], abs=1e-6)
    assert table["share_of_distance"].sum() == pytest.approx(1.0, abs=1e-6)
    assert list(table["column"]) == list(leaky_audit.types.columns)


@pytest.mark.slow
def test_user_column_types_are_respected(tables) -> None:
    types = infer_column_types(tables["train"], categorical=["age"], ignore=["hours"])
    audit = audit_synthetic(tables["train"], tables["holdout"], tables["leaky"], tables["auxiliary"], types=types)
    assert "age" in audit.types.categorical
    assert "hours" in audit.types.ignored
    assert audit.to_json()["columns"]["ignored"] == ["hours"]


@pytest.mark.parametrize("audit", ["tabular", "compare"])
@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"prior": 1.5}, "prior"),
        ({"prior": 0.0}, "prior"),
        ({"bandwidth": "wide"}, "bandwidth"),
        ({"bandwidth": -0.1}, "bandwidth"),
    ],
)
def test_bad_rescore_settings_are_refused_by_their_knobs(audit, change, match) -> None:
    """The prior and the bandwidth are checked once, by their knobs, before any audit code runs."""
    with pytest.raises(InputError, match=match):
        REGISTRY[audit].settings(**change).validate()


def test_bad_bandwidth_scale_is_refused_by_its_knob() -> None:
    for scale in (0.0, -1.0, float("nan")):
        with pytest.raises(InputError, match="bandwidth-scale"):
            REGISTRY["tabular"].settings(bandwidth_scale=scale).validate()


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"n_folds": 1}, "folds"),
        ({"n_folds": 2.5}, "folds"),
        ({"aux_quantile": 0.0}, "quantile"),
        ({"aux_share": 1.0}, "aux_share"),
        ({"max_per_class": 5}, "max_per_class"),
    ],
)
def test_bad_options_without_a_tabular_knob_are_refused_by_their_own(change, match) -> None:
    with pytest.raises(InputError, match=match):
        AuditOptions(**change).validate()  # audit_synthetic calls it once


def test_bad_tables_are_refused(tables) -> None:
    with pytest.raises(InputError, match="column"):
        audit_synthetic(tables["train"], tables["holdout"].drop(columns=["city"]), tables["leaky"])
    with pytest.raises(InputError, match="row"):
        audit_synthetic(tables["train"].head(5), tables["holdout"], tables["leaky"])


def test_density_ratio_uses_the_auxiliary_distances(leaky_audit) -> None:
    recs = leaky_audit.records
    expected = np.log(recs["distance_auxiliary"] + 1e-6) - np.log(recs["distance"] + 1e-6)
    np.testing.assert_allclose(recs["domias_score"], expected)
    assert "domias" in leaky_audit.to_json()["attacks"]


def test_json_reports_an_epsilon_lower_bound_per_attack(leaky_audit, independent_audit) -> None:
    """Copied training rows prove a privacy loss; an independent synthetic table proves none."""
    leaky, independent = leaky_audit.to_json()["attacks"], independent_audit.to_json()["attacks"]
    for name in ("true_distribution", "realistic", "distance_threshold"):
        assert set(leaky[name]["epsilon_lower_bound"]) >= {"epsilon", "delta", "confidence", "threshold"}
        assert independent[name]["epsilon_lower_bound"]["epsilon"] < 0.3
    assert leaky["true_distribution"]["epsilon_lower_bound"]["epsilon"] > 0.3


@pytest.mark.slow
def test_stored_tables_hold_categories_and_explain_records_as_strings_do(tables) -> None:
    # Issue 10 (memory): the result keeps its tables with categorical columns as pandas
    # "category"; explanations and disclosure attacks must be those of the string tables.
    from dataclasses import replace

    from audit_core.synthetic.disclosure.audit import DisclosureOptions, audit_disclosure

    rng = np.random.default_rng(7)
    with_missing = {}
    for name in ("train", "holdout", "leaky", "auxiliary"):
        df = tables[name].copy()
        df.loc[rng.random(len(df)) < 0.05, "city"] = np.nan
        with_missing[name] = df
    audit = audit_synthetic(
        with_missing["train"], with_missing["holdout"], with_missing["leaky"], with_missing["auxiliary"], seed=0
    )
    cats = list(audit.types.categorical)
    assert all(isinstance(audit.frames[n][c].dtype, pd.CategoricalDtype) for n in audit.frames for c in cats)
    as_strings = replace(audit, frames={n: f.astype(dict.fromkeys(cats, object)) for n, f in audit.frames.items()})
    assert audit.frames["train"]["city"].isna().sum() == as_strings.frames["train"]["city"].isna().sum() > 0
    stored = sum(int(f.memory_usage(deep=True).sum()) for f in audit.frames.values())
    strings = sum(int(f.memory_usage(deep=True).sum()) for f in as_strings.frames.values())
    assert stored < strings / 3

    pd.testing.assert_frame_equal(exposed_records(audit, k=40), exposed_records(as_strings, k=40))
    for i in range(0, len(audit.records), 400):
        pd.testing.assert_frame_equal(record_comparison(audit, i), record_comparison(as_strings, i))
    runs = [
        audit_disclosure(a.frames["train"], a.frames["holdout"], a.frames["synthetic"], types=a.types,
                         options=DisclosureOptions(n_attacks=100), seed=3)
        for a in (audit, as_strings)
    ]
    assert runs[0].to_json() == runs[1].to_json()
