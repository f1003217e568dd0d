"""LiRA's risk by group (issue 18.5): the audited model's TPR at 1 % FPR per group, in the JSON and refused early."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from audit_core.__main__ import main

GERMAN = Path(__file__).resolve().parents[3] / "sample_data" / "german_credit.csv"


@pytest.mark.slow
def test_groups_cover_every_record_and_a_bad_column_is_refused_before_training(tmp_path: Path, capsys) -> None:
    out = tmp_path / "lira.json"
    base = ["--quiet", "lira", "--data", str(GERMAN), "--target", "credit", "--models", "16"]
    assert main([*base, "--groups", "purpose", "--json", str(out)]) == 0
    groups = json.loads(out.read_text())["groups"]
    assert groups["column"] == "purpose"
    table = pd.read_csv(GERMAN)
    sizes = {g: v["n_members"] + v["n_non_members"] for g, v in groups["purpose"].items()}
    assert sum(sizes.values()) == len(table)
    assert sizes == table["purpose"].astype(str).value_counts().to_dict()
    small = [v for v in groups["purpose"].values() if v["n_non_members"] < 100]
    assert small
    assert all(not v["measurable"] for v in small)
    capsys.readouterr()
    assert main([*base, "--groups", "credit", "--json", str(out)]) == 2  # the target is no feature
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "--groups" in err[0]
