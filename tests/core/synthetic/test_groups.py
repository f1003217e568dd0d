"""Risk by group (issue 18.5): the group whose records were copied comes first, with its own interval."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from audit_core.__main__ import main
from audit_core.common.groups import MIN_NON_MEMBERS
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
def test_without_a_column_the_largest_spread_is_chosen(planted) -> None:
    risk = group_risk(planted, None)
    assert risk.chosen
    aucs = [r["auc"] for r in risk.rows if r["n_members"] >= 10 and r["n_non_members"] >= 10]
    spread = max(aucs) - min(aucs)
    for col in ("sex", "race", "workclass"):
        other = [r["auc"] for r in group_risk(planted, col).rows if r["n_members"] >= 10 and r["n_non_members"] >= 10]
        assert spread >= max(other) - min(other) - 1e-12


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
    capsys.readouterr()
    assert main([*base, "--groups", "sexx", "--json", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "did you mean 'sex'" in err[0]
    assert np.isfinite(groups["sex"]["Male"]["auc"])
