"""Leaks the synthetic-table audit must never call safe (issue 10), on tables with a known answer.

Each attacker-style case builds small mixed-type tables in the test: a population with
continuous columns (no natural duplicates) or one with a few coarse columns (many natural
duplicates, where exact copies also happen by chance), split at random into training,
holdout, auxiliary and synthetic tables, then leaks planted on purpose.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from audit_core.errors import InputError
from audit_core.plots.synthetic import risk_level, verdict
from audit_core.synthetic import audit_synthetic, copy_test, table_overlaps
from audit_core.tables import infer_column_types

N = 1200


def _continuous(n: int, rng: np.random.Generator) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "age": rng.integers(18, 90, size=n),
            "income": np.round(rng.lognormal(10.0, 0.6, size=n), 2),
            "hours": np.round(rng.normal(40.0, 9.0, size=n), 1),
            "city": rng.choice([f"city_{i}" for i in range(8)], size=n),
            "smoker": rng.choice(["yes", "no"], size=n, p=[0.2, 0.8]),
        }
    )


def _coarse(n: int, rng: np.random.Generator) -> pd.DataFrame:
    """Few coarse columns: a quarter of the rows of one table occur verbatim in another by chance."""
    return pd.DataFrame(
        {
            "band": rng.integers(0, 20, size=n),
            "sex": rng.choice(["F", "M"], size=n),
            "region": rng.choice(["north", "south", "east", "west"], size=n, p=[0.4, 0.3, 0.2, 0.1]),
            "job": rng.choice([f"j{i}" for i in range(10)], size=n),
        }
    )


@pytest.fixture(scope="module")
def parts() -> dict[str, pd.DataFrame]:
    rng = np.random.default_rng(2026)
    pop = _continuous(4 * N, rng)
    names = ["train", "holdout", "aux", "indep"]
    return {name: pop.iloc[i * N : (i + 1) * N].reset_index(drop=True) for i, name in enumerate(names)}


def _with_rows(synthetic: pd.DataFrame, rows: pd.DataFrame) -> pd.DataFrame:
    return pd.concat([synthetic.iloc[: len(synthetic) - len(rows)], rows], ignore_index=True)


# ----------------------------------------------------------------------------- 1. one file in several roles
def test_one_file_as_train_holdout_and_synthetic_is_refused(parts) -> None:
    t = parts["train"]
    with pytest.raises(InputError, match=r"1,200 of the 1,200 holdout rows also appear verbatim in the training table"):
        audit_synthetic(t, t, t)
    with pytest.raises(InputError, match="disjoint"):
        audit_synthetic(t, t.sample(frac=1.0, random_state=0), parts["indep"], parts["aux"])  # holdout = train, reordered


def test_training_table_released_as_synthetic_is_unsafe_with_the_count(parts) -> None:
    audit = audit_synthetic(parts["train"], parts["holdout"], parts["train"], parts["aux"])
    text = verdict(audit)
    assert risk_level(audit) == "high"
    assert text.startswith("UNSAFE to release as it is: 1,200 of the 1,200 training rows appear verbatim")
    test = audit.to_json()["exact_copies"]
    assert test["train_copies"] == 1200
    assert test["holdout_copies"] == 0
    assert test["p_value"] < 1e-100
    assert test["excess"]


def test_a_holdout_sharing_some_training_rows_is_flagged_in_one_sentence(parts) -> None:
    holdout = _with_rows(parts["holdout"], parts["train"].iloc[:150])  # 12.5 % of the "non-members" are members
    audit = audit_synthetic(parts["train"], holdout, parts["indep"], parts["aux"])
    flag = audit.holdout_flag
    assert flag is not None
    assert flag.startswith("150 of the 1,200 holdout rows (12.5 %) also appear verbatim in the training")
    assert flag in audit.warnings
    assert flag in verdict(audit)
    clean = audit_synthetic(parts["train"], parts["holdout"], parts["indep"], parts["aux"])
    assert clean.holdout_flag is None


def test_overlaps_between_all_tables_are_counted(parts) -> None:
    tr, ho, aux = parts["train"], parts["holdout"], parts["aux"]
    synthetic = pd.concat([parts["indep"].iloc[:1000], tr.iloc[:7], ho.iloc[:3], aux.iloc[:5]], ignore_index=True)
    auxiliary = _with_rows(aux, tr.iloc[100:111])  # the attacker holds 11 members' records
    audit = audit_synthetic(tr, ho, synthetic, auxiliary)
    o = audit.to_json()["overlaps"]
    assert o["train_in_synthetic"] == {"rows": 7, "of": N, "share": 7 / N}
    assert o["holdout_in_synthetic"]["rows"] == 3
    assert o["auxiliary_in_synthetic"]["rows"] == 5
    assert o["auxiliary_in_train"]["rows"] == 11
    assert o["holdout_in_train"]["rows"] == 0
    assert o["auxiliary_in_holdout"]["rows"] == 0
    assert o["train_in_train"]["rows"] == 0


def test_overlaps_compare_values_not_dtypes() -> None:
    types = infer_column_types(pd.DataFrame({"x": [1.0], "c": ["a"]}))
    a = pd.DataFrame({"x": [1.0, 2.0, -0.0, np.nan], "c": ["a", "b", "c", None]})
    b = pd.DataFrame({"x": [1.0, 0.0, np.nan, 2.0], "c": ["a", "c", None, "z"]})
    o = table_overlaps({"train": a, "holdout": b, "synthetic": b}, types)
    assert o["train_in_synthetic"].rows == 3  # 1/a, 0/c (-0.0 == 0.0), missing/missing


# ----------------------------------------------------------------------------- 2. a few verbatim copies
@pytest.mark.parametrize("k", [6, 15])
def test_a_few_verbatim_copies_make_the_verdict_unsafe_with_the_count(parts, k: int) -> None:
    synthetic = _with_rows(parts["indep"], parts["train"].iloc[::61].head(k))  # 0.5 % or 1.25 % of the rows
    audit = audit_synthetic(parts["train"], parts["holdout"], synthetic, parts["aux"])
    assert audit.copy_test.train_copies == k
    assert audit.copy_test.holdout_copies == 0
    assert audit.copy_test.excess
    assert risk_level(audit) == "high"
    assert verdict(audit).startswith(f"UNSAFE to release as it is: {k} of the 1,200 training rows appear verbatim")
    assert "Fisher exact test" in verdict(audit)


def test_copy_test_keeps_its_level_when_copies_happen_by_chance() -> None:
    """Natural duplicates: training and holdout rows match synthetic rows equally often (null true).

    A random split of a population where a third of the records have twins, and a synthetic
    table drawn independently of the split: the one-sided Fisher test at 5 % must reject in at
    most 5 % of repetitions (plus Monte Carlo slack). With 40 copies planted among 400
    training rows (on top of about 100 chance matches) it must reject in most of them.
    """
    rng = np.random.default_rng(99)
    types = infer_column_types(_coarse(10, rng), categorical=["band"])
    n, reps = 400, 200
    null_rejects = planted_rejects = 0
    chance_copies = []
    for _ in range(reps):
        pop = _coarse(3 * n, rng)
        train, holdout, synthetic = (pop.iloc[i * n : (i + 1) * n].reset_index(drop=True) for i in range(3))
        tables = {"train": train, "holdout": holdout, "synthetic": synthetic}
        test = copy_test(table_overlaps(tables, types))
        chance_copies.append(test.holdout_copies)
        null_rejects += test.excess
        tables["synthetic"] = _with_rows(synthetic, train.sample(40, random_state=int(rng.integers(1 << 30))))
        planted_rejects += copy_test(table_overlaps(tables, types)).excess
    assert np.mean(chance_copies) > 50  # copies by chance are common here: a count alone would mislead
    assert null_rejects / reps <= 0.05 + 2.5 * np.sqrt(0.05 * 0.95 / reps)
    assert planted_rejects / reps >= 0.6


def test_no_copies_gives_no_copy_sentence(parts) -> None:
    audit = audit_synthetic(parts["train"], parts["holdout"], parts["indep"], parts["aux"])
    assert audit.copy_test.train_copies == 0
    assert not audit.copy_test.excess
    assert risk_level(audit) == "low"
    assert "verbatim" not in verdict(audit)
