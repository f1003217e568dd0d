"""Thin KDE tails (issue 20.6): where neither class has data, P(member | d) is the prior and the record says so."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from audit_core.synthetic.audit import audit_synthetic
from audit_core.synthetic.density import fit_posterior
from audit_core.synthetic.explanations import TOO_LITTLE_DATA, exposed_records
from audit_core.synthetic.result import RECORD_COLUMNS
from audit_core.synthetic.scoring import rescore


def test_posterior_far_from_every_record_is_the_prior_and_unsupported():
    rng = np.random.default_rng(0)
    members, non_members = rng.normal(0.10, 0.01, 500).clip(0.01), rng.normal(0.12, 0.01, 500).clip(0.01)
    post = fit_posterior(members, non_members, prior=0.5)
    d = np.array([0.10, 0.12, 0.6, 0.9, 0.0])
    supported = post.supported(d)
    assert supported.tolist() == [True, True, False, False, False]  # no exact copy in either class
    assert post.p_member(d[2:4]) == pytest.approx(0.5, abs=0.02)  # reads 0.5 "as if calibrated"
    # one exact copy in the members makes d = 0 rest on data
    assert fit_posterior(np.r_[members, 0.0], non_members).supported([0.0]).tolist() == [True]


def _table(rng: np.random.Generator, n: int) -> pd.DataFrame:
    return pd.DataFrame({
        "city": rng.choice([f"c{i}" for i in range(6)], n),
        "job": rng.choice([f"j{i}" for i in range(6)], n),
        "age": rng.integers(20, 70, n),
    })


@pytest.fixture(scope="module")
def outlier_audit():
    """Members, non-members and synthetic rows from one population, plus one training record unlike any synthetic row."""
    rng = np.random.default_rng(1)
    train, holdout, synthetic, aux = (_table(rng, 400) for _ in range(4))
    train.loc[0, ["city", "job"]] = ["nowhere", "none"]  # distance 2/3, every other record below 0.1
    return audit_synthetic(train, holdout, synthetic, aux, seed=0)


def test_records_flag_the_outliers_and_only_a_few_others(outlier_audit):
    recs = outlier_audit.records
    assert set(RECORD_COLUMNS) <= set(recs.columns)
    assert recs["p_member_true_supported"].dtype == bool
    outliers = (recs["source"] == "train") & (recs["row"] == 0)
    assert not recs.loc[outliers, "p_member_true_supported"].any()  # held out of its fold: nobody near it
    assert not recs.loc[outliers, "p_member_realistic_supported"].any()
    assert recs.loc[outliers, "p_member_true"].to_numpy() == pytest.approx(0.5, abs=0.05)
    assert recs["p_member_true_supported"].mean() > 0.95


def test_exposed_records_and_rescore_carry_the_flag(outlier_audit):
    top = exposed_records(outlier_audit, k=len(outlier_audit.records), members_only=True)
    flagged = top[top["note"] == TOO_LITTLE_DATA]
    assert 0 in set(flagged["row"])
    assert (top["note"][top["p_member_true_supported"]] == "").all()
    wider = rescore(outlier_audit, bandwidth_scale=3.0)
    assert wider.records["p_member_true_supported"].mean() >= outlier_audit.records["p_member_true_supported"].mean()


def test_the_report_says_too_little_data_for_the_outlier(outlier_audit):
    from audit_core.synthetic.verdict import build_report

    html = build_report(outlier_audit, top_k=len(outlier_audit.records)).to_html()
    assert TOO_LITTLE_DATA in html  # the reader gets the sentence, not the internal flag column
    assert "p_member_true_supported" not in html.split("<details")[0]
