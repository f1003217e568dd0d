"""The release decision never understates a leak (issue 18): verbatim real records and near-copies.

Known answers on the bundled Adult sample (sample_data/adult: a GaussianCopula table fitted
on train.csv, which copies no real record) with leaks planted on purpose, and on simulated
populations where the generator did not copy (the tests must then stay at their level).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from audit_core.common.column_types import infer_column_types
from audit_core.synthetic.agreement import match_table
from audit_core.synthetic.audit import audit_synthetic
from audit_core.synthetic.encoding import encode_for_gower
from audit_core.synthetic.linkage import LINKAGE_ALPHA, linkage_test
from audit_core.synthetic.verdict import decision

ADULT = Path(__file__).resolve().parents[3] / "sample_data" / "adult"


@pytest.fixture(scope="module")
def adult() -> dict[str, pd.DataFrame]:
    names = ("train", "holdout", "auxiliary", "synthetic_gaussian_copula")
    return {name: pd.read_csv(ADULT / f"{name}.csv") for name in names}


def _replace(synthetic: pd.DataFrame, rows: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
    """``synthetic`` with random rows replaced by ``rows`` (same columns and dtypes)."""
    out = synthetic.copy()
    idx = rng.choice(len(out), size=len(rows), replace=False)
    for col in out.columns:
        values = out[col].to_numpy(copy=True)
        values[idx] = rows[col].to_numpy()
        out[col] = values
    return out


def _audit(t: dict[str, pd.DataFrame], synthetic: pd.DataFrame, seed: int = 0):
    return audit_synthetic(t["train"], t["holdout"], synthetic, t["auxiliary"], seed=seed)


# ----------------------------------------------------------------------------- 1. verbatim real records
@pytest.mark.slow
def test_the_honest_sample_copies_no_real_record_and_reads_low(adult) -> None:
    audit = _audit(adult, adult["synthetic_gaussian_copula"])
    v = audit.verbatim
    assert (v.in_train, v.in_holdout, v.in_auxiliary, v.real_not_train, v.rare_train_copied) == (0, 0, 0, 0, 0)
    d = decision(audit)
    assert d.level == "low"
    assert d.headline.startswith("No measurable risk at this sample size")
    assert "does not prove anonymity" in d.headline


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_four_rare_training_rows_copied_verbatim_are_named_in_the_headline(adult, seed) -> None:
    rng = np.random.default_rng(seed)
    rows = adult["train"].iloc[rng.choice(len(adult["train"]), size=4, replace=False)]
    audit = _audit(adult, _replace(adult["synthetic_gaussian_copula"], rows, rng), seed=seed)
    assert audit.copy_test is not None
    assert not audit.copy_test.excess
    d = decision(audit)
    assert d.level in ("elevated", "high")
    v = audit.to_json()["verbatim"]
    assert v["train_rows_copied"] >= 4  # Adult has natural duplicates: a copied row may have a twin in the training table
    assert 1 <= v["rare_train_rows_copied"] <= 4
    assert d.headline.startswith(f"Elevated risk: review before release: {v['train_rows_copied']} training records are "
                                 "copied verbatim")  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_half_the_rows_verbatim_holdout_records_is_not_synthetic_data(adult, seed) -> None:
    rng = np.random.default_rng(seed)
    half = len(adult["synthetic_gaussian_copula"]) // 2
    rows = adult["holdout"].iloc[rng.choice(len(adult["holdout"]), size=half, replace=False)]
    audit = _audit(adult, _replace(adult["synthetic_gaussian_copula"], rows, rng), seed=seed)
    d = decision(audit)
    assert d.level == "high"
    assert "this is not synthetic data" in " ".join(d.reasons)
    assert audit.verbatim.real_not_train >= half - audit.verbatim.natural_matches


@pytest.mark.slow
def test_training_plus_holdout_rows_as_the_synthetic_table_is_high(adult) -> None:
    synthetic = pd.concat([adult["train"], adult["holdout"]], ignore_index=True)
    audit = _audit(adult, synthetic)
    assert not audit.copy_test.excess  # as many holdout copies as training copies: no excess for the copy test
    d = decision(audit)
    assert d.level == "high"
    assert audit.verbatim.in_train >= len(adult["train"])  # every training row, and holdout rows equal to one


def test_a_mostly_real_table_of_another_population_is_high() -> None:
    """German-credit-like: 52 % of the synthetic rows verbatim real (250 holdout, 9 training) reads high."""
    rng = np.random.default_rng(7)
    n = 250
    pop = pd.DataFrame({
        "amount": np.round(rng.lognormal(8, 0.7, size=4 * n + 250)), "months": rng.integers(4, 72, size=4 * n + 250),
        "purpose": rng.choice([f"p{i}" for i in range(10)], size=4 * n + 250), "age": rng.integers(19, 75, size=4 * n + 250),
    })  # fmt: skip
    train, holdout, aux, fresh = pop.iloc[:n], pop.iloc[n : 2 * n], pop.iloc[2 * n : 3 * n], pop.iloc[3 * n : 3 * n + 241]
    synthetic = pd.concat([holdout, train.iloc[:9], fresh], ignore_index=True)  # 259 real of 500
    audit = audit_synthetic(train, holdout, synthetic, aux)
    d = decision(audit)
    assert d.level == "high"
    assert audit.verbatim.real_not_train == 250


def test_natural_duplicates_of_a_coarse_population_are_not_called_copies() -> None:
    """Few coarse columns: honest synthetic rows equal real records as often as real records equal each other."""
    rng = np.random.default_rng(3)

    def draw(n: int) -> pd.DataFrame:
        return pd.DataFrame({"band": rng.integers(0, 20, size=n), "sex": rng.choice(["F", "M"], size=n),
                             "region": rng.choice(["n", "s", "e", "w"], size=n, p=[0.4, 0.3, 0.2, 0.1]),
                             "job": rng.choice([f"j{i}" for i in range(10)], size=n)})  # fmt: skip

    train, holdout, aux, synthetic = draw(600), draw(600), draw(600), draw(600)
    audit = audit_synthetic(train, holdout, synthetic, aux)
    v = audit.verbatim
    assert v.real_not_train > 20  # honest rows that happen to equal real records
    assert v.natural_rate > 0.2  # a fifth of the records have a twin among the non-members
    assert not v.not_synthetic
    assert not v.beyond_natural
    assert decision(audit).level != "high"


# ----------------------------------------------------------------------------- 2. near-copies past a fixed tolerance
def _nudged(adult: dict[str, pd.DataFrame], shape: str, seed: int):
    """2 % of the training rows planted with age +-1 and hours +-2, or age moved by 2 % of its range and one category changed."""
    rng = np.random.default_rng(seed)
    train = adult["train"]
    rows = train.iloc[rng.choice(len(train), size=round(0.02 * len(train)), replace=False)].copy()
    k = len(rows)
    if shape == "age_hours":
        rows["age"] += rng.choice([-1, 1], size=k)
        rows["hours_per_week"] += rng.choice([-2, 2], size=k)
    else:
        rows["age"] += round(0.02 * (train["age"].max() - train["age"].min())) * rng.choice([-1, 1], size=k)
        categorical = [c for c in train.columns if train[c].dtype == object]
        col = categorical[int(rng.integers(len(categorical)))]
        levels = train[col].unique()
        rows[col] = [rng.choice([x for x in levels if x != v]) for v in rows[col]]
    return _audit(adult, _replace(adult["synthetic_gaussian_copula"], rows, rng), seed=seed)


@pytest.mark.slow
@pytest.mark.parametrize("shape", ["age_hours", "one_numeric_one_category"])
def test_near_copies_past_the_tolerance_are_found_in_most_seeds(adult, shape) -> None:
    audits = [_nudged(adult, shape, seed) for seed in range(10)]
    levels = [decision(a).level for a in audits]
    found = sum(a.linkage.excess for a in audits)
    assert found >= 8, [a.linkage.p_value for a in audits]
    assert sum(level != "low" for level in levels) >= 8, levels


def _population(n: int, rng: np.random.Generator) -> pd.DataFrame:
    """Mixed columns with ties (integers, skewed categories): records often agree on several columns by chance."""
    return pd.DataFrame({
        "age": rng.integers(18, 80, size=n), "hours": np.round(rng.normal(40, 8, size=n)),
        "job": rng.choice([f"j{i}" for i in range(12)], size=n, p=np.r_[0.3, np.full(11, 0.7 / 11)]),
        "sex": rng.choice(["F", "M"], size=n), "city": rng.choice([f"c{i}" for i in range(5)], size=n),
    })  # fmt: skip


@pytest.mark.slow
def test_the_linkage_scan_holds_its_false_alarm_rate_when_nothing_is_copied() -> None:
    """400 independent populations (members, non-members, auxiliary and synthetic rows all fresh draws):
    the scan rejects at most at its level (a rate twice the level fails this test)."""
    rng = np.random.default_rng(18)
    rejected = 0
    reps = 400
    for rep in range(reps):
        tables = [_population(n, rng) for n in (150, 150, 200, 200)]
        types = infer_column_types(tables[0])
        enc = encode_for_gower(tables[:3], types=types)
        m = [match_table(enc, t) for t in tables]
        rejected += linkage_test(*m, seed=rep).excess
    assert rejected / reps <= 1.5 * LINKAGE_ALPHA, rejected


@pytest.mark.slow
def test_the_linkage_scan_finds_planted_near_copies_in_the_same_simulation() -> None:
    """The same populations with 10 % of the members copied into the synthetic rows, one column changed."""
    rng = np.random.default_rng(19)
    found = 0
    for rep in range(20):
        train, holdout, aux, synthetic = (_population(n, rng) for n in (150, 150, 200, 200))
        copies = train.iloc[:15].copy()
        copies["city"] = [f"c{(int(c[1]) + 1) % 5}" for c in copies["city"]]
        synthetic.iloc[:15] = copies.to_numpy()
        synthetic = synthetic.astype(train.dtypes.to_dict())
        types = infer_column_types(train)
        enc = encode_for_gower([train, holdout, aux], types=types)
        found += linkage_test(*(match_table(enc, t) for t in (train, holdout, aux, synthetic)), seed=rep).excess
    assert found >= 16


# ----------------------------------------------------------------------------- 3. copies behind a change of coding
def test_copies_in_a_table_that_writes_its_categories_differently_are_counted_and_the_decision_says_recode() -> None:
    """German Credit: 2 % of the synthetic rows verbatim training rows, every category upper-cased with its spaces doubled."""
    folder = ADULT.parent / "german_credit"
    t = {n: pd.read_csv(folder / f"{n}.csv") for n in ("train", "holdout", "auxiliary", "synthetic_gaussian_copula")}
    rng = np.random.default_rng(4)
    synthetic = _replace(t["synthetic_gaussian_copula"], t["train"].iloc[rng.choice(400, size=8, replace=False)], rng)
    for col in synthetic.select_dtypes(include="object").columns:
        synthetic[col] = synthetic[col].str.upper().str.replace(" ", "  ")
    audit = audit_synthetic(t["train"], t["holdout"], synthetic, t["auxiliary"])
    assert audit.copy_test.train_copies >= 8
    assert audit.copy_test.unfolded_train_copies == 0
    assert audit.copy_test.excess
    assert "folding case and whitespace" in audit.to_json()["exact_copies"]["compared"]
    assert any("coded differently" in w for w in audit.warnings)  # the warning stays
    d = decision(audit)
    assert d.level == "high"
    copies = audit.copy_test.train_copies
    assert d.headline.startswith(f"UNSAFE to release as it is: {copies} of the 400 training rows ({100 * copies / 400:.1f} %) "
                                 "appear verbatim in the synthetic table (counted with the categories' case and spaces "
                                 "folded")  # fmt: skip
    recode = [r for r in d.reasons if "coded differently" in r]
    assert len(recode) == 1
    assert "compare codes, not records" in recode[0]
    assert any(step.startswith("Recode the tables the same way") for step in d.next_steps)


def test_a_table_coded_differently_without_copies_is_not_low() -> None:
    """Nothing copied, but the categories are written differently: the audit cannot vouch for the table (elevated)."""
    folder = ADULT.parent / "german_credit"
    t = {n: pd.read_csv(folder / f"{n}.csv") for n in ("train", "holdout", "auxiliary", "synthetic_gaussian_copula")}
    synthetic = t["synthetic_gaussian_copula"].copy()
    synthetic["purpose"] = synthetic["purpose"].str.upper()
    d = decision(audit_synthetic(t["train"], t["holdout"], synthetic, t["auxiliary"]))
    assert d.level == "elevated"
    assert d.headline.startswith("Elevated risk: review before release: the column(s) 'purpose' are coded differently")
