"""Risk by group (issue 18.5): the group whose records were copied comes first, with its own interval."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from audit_core.__main__ import main
from audit_core.common.groups import MIN_NON_MEMBERS, risk_by_group
from audit_core.synthetic.audit import audit_synthetic
from audit_core.synthetic.spec import group_risk

ADULT = Path(__file__).resolve().parents[3] / "sample_data" / "adult"


@pytest.fixture(scope="module")
def planted():
    """150 training rows of women copied into an honest synthetic table: only that group is exposed."""
    t = {n: pd.read_csv(ADULT / f"{n}.csv") for n in ("train", "holdout", "auxiliary", "synthetic_gaussian_copula")}
    women = t["train"][t["train"]["sex"] == "Female"].sample(150, random_state=0)
    syn = pd.concat([t["synthetic_gaussian_copula"].iloc[:-150], women], ignore_index=True)
    return audit_synthetic(t["train"], t["holdout"], syn, t["auxiliary"])


@pytest.mark.slow
def test_the_copied_group_is_worst_with_its_interval(planted) -> None:
    risk = group_risk(planted, "sex")
    first, last = risk.rows[0], risk.rows[-1]
    assert first["group"] == "Female"
    assert last["group"] == "Male"
    assert first["measurable"]
    assert last["measurable"]
    assert first["tpr_at_fpr"].tpr > 0.15 > 0.02 > last["tpr_at_fpr"].tpr  # the copies stand out; the others do not
    assert last["tpr_at_fpr"].ci_low < 0.01  # the other group: no evidence
    table = risk.table()
    assert list(table["group"]) == ["Female", "Male"]
    assert table["members"].sum() == planted.n_members


@pytest.mark.slow
def test_small_groups_say_they_cannot_be_measured(planted) -> None:
    risk = group_risk(planted, "race")
    small = [r for r in risk.rows if r["n_non_members"] < MIN_NON_MEMBERS]
    assert small, "Adult has races with fewer than 100 holdout records"
    assert all(not r["measurable"] for r in small)
    text = risk.table().set_index("group").loc[small[0]["group"], "TPR at 1 % FPR [95 % interval]"]
    assert text.startswith("too few non-members to measure")
    shown = [r for r in risk.rows if r["measurable"] and not r["tpr_at_fpr"].supported]
    assert all(risk.table().set_index("group").loc[r["group"], "TPR at 1 % FPR [95 % interval]"].endswith("⚠") for r in shown)


@pytest.mark.slow
def test_without_a_column_the_one_whose_groups_differ_most_in_copies_is_chosen(planted) -> None:
    risk = group_risk(planted, None)
    assert risk.chosen
    assert risk.column == "sex"  # every copy is a woman's record
    assert risk.to_json()["chosen_by"] == "largest spread of copies"


def test_without_copies_the_largest_spread_of_risk_is_chosen() -> None:
    rng = np.random.default_rng(2)
    n = 4000
    member = rng.random(n) < 0.5
    g = rng.choice(["a", "b", "c"], n)
    scores = rng.normal(size=n) + np.where((g == "a") & member, 1.5, 0.0)  # only group a leaks
    columns = {"h": pd.Series(rng.choice(["x", "y"], n)), "g": pd.Series(g)}
    risk = risk_by_group(columns, scores, member, copied=np.zeros(n, dtype=bool), near=np.zeros(n, dtype=bool))
    assert (risk.column, risk.to_json()["chosen_by"]) == ("g", "largest spread of risk")
    assert risk.rows[0]["group"] == "a"


def test_the_default_column_is_where_the_copies_are_not_a_tiny_group_inside_it() -> None:
    """80 % of a group's members copied; 6 of them are 6 of the 7 members of a tiny group of another column (issue 28,
    seen on the full UCI Adult: the tiny group's higher rate won on spread). The copied group's column is chosen."""
    rng = np.random.default_rng(3)
    n = 4000
    member = np.zeros(n, dtype=bool)
    member[: n // 2] = True
    race = np.where(np.isin(np.arange(n), np.r_[0:50, 2000:2050]), "A", "B")  # 50 members, 50 non-members
    country = np.where(np.isin(np.arange(n), np.r_[0:7, 2000:2020]), "X", "US")  # 7 members (all of race A), 20 not
    copied = np.zeros(n, dtype=bool)
    copied[1:41] = True  # 40 of race A's 50 members, 6 of country X's 7
    copied[rng.choice(np.arange(100, 2000), 30, replace=False)] = True  # a few elsewhere
    columns = {"country": pd.Series(country), "race": pd.Series(race)}
    risk = risk_by_group(columns, rng.normal(size=n), member, copied=copied, near=np.zeros(n, dtype=bool))
    assert (risk.column, risk.rows[0]["group"]) == ("race", "A")
    assert risk.to_json()["chosen_by"] == "largest spread of copies"


@pytest.mark.slow
def test_cli_groups_in_the_json_and_a_bad_column_refused(tmp_path: Path, capsys) -> None:
    out = tmp_path / "out.json"
    base = ["--quiet", "tabular", "--train", str(ADULT / "train.csv"), "--holdout", str(ADULT / "holdout.csv"),
            "--synthetic", str(ADULT / "synthetic_leaky.csv")]  # fmt: skip
    assert main([*base, "--groups", "sex", "--json", str(out)]) == 0
    groups = json.loads(out.read_text())["groups"]
    assert groups["column"] == "sex"
    assert groups["chosen_by"] == "given"
    assert set(groups["sex"]) == {"Female", "Male"}
    assert {"tpr", "ci_low", "ci_high"} <= set(groups["sex"]["Male"]["tpr_at_fpr"]["0.01"])
    assert {"copies", "near_copies", "copy_p_value"} <= set(groups["sex"]["Male"])
    # the leaky sample: 200 training rows copied; the attack set holds 1,000 of the 2,000 training rows
    assert groups["sex"]["Male"]["copies"] + groups["sex"]["Female"]["copies"] > 50
    capsys.readouterr()
    assert main([*base, "--groups", "sexx", "--json", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "did you mean 'sex'" in err[0]
    assert np.isfinite(groups["sex"]["Male"]["auc"])


@pytest.fixture(scope="module")
def small_group_copied():
    """18 of the 21 training rows of a small group copied verbatim (18 non-members: too few for a TPR at 1 % FPR)."""
    t = {n: pd.read_csv(ADULT / f"{n}.csv") for n in ("train", "holdout", "auxiliary", "synthetic_gaussian_copula")}
    group = t["train"][t["train"]["race"] == "Amer-Indian-Eskimo"]
    assert len(group) == 21
    syn = pd.concat([t["synthetic_gaussian_copula"].iloc[:-18], group.iloc[:18]], ignore_index=True)
    return audit_synthetic(t["train"], t["holdout"], syn, t["auxiliary"])


def test_the_group_with_copies_ranks_first_whatever_its_size(small_group_copied) -> None:
    risk = group_risk(small_group_copied, "race")
    first = risk.rows[0]
    assert first["group"] == "Amer-Indian-Eskimo"
    assert first["copies"] >= 18
    assert first["non_member_copies"] == 0
    assert first["copy_p_value"] < 1e-6
    assert not first["measurable"]  # "too small to measure" is about the TPR only
    assert all(not r["evidence"] for r in risk.rows[1:])
    row = risk.table().iloc[0]
    assert row["copied verbatim: training / holdout rows"] == f"{first['copies']} of 21 / 0 of 18"
    assert row["TPR at 1 % FPR [95 % interval]"].startswith("too few non-members to measure")
    group = risk.to_json()["race"]["Amer-Indian-Eskimo"]
    assert {"copies", "near_copies", "copy_p_value"} <= set(group)
    assert group["copies"] == first["copies"]


def test_the_default_column_is_the_one_whose_groups_differ_in_copies(small_group_copied) -> None:
    risk = group_risk(small_group_copied, None)
    assert risk.column == "race"
    assert risk.to_json()["chosen_by"] == "largest spread of copies"
    assert risk.rows[0]["group"] == "Amer-Indian-Eskimo"
