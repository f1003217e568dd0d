"""Tests for audit_core.synthetic.generators: every generator, the split, utility and the comparison."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from audit_core.__main__ import main
from audit_core.common.column_types import infer_column_types
from audit_core.common.errors import InputError
from audit_core.registry import REGISTRY
from audit_core.synthetic.comparison import ComparisonPlan, compare_generators, fit_and_sample, rescore_comparison
from audit_core.synthetic.generators.registry import GENERATORS, make_generator
from audit_core.synthetic.split import split_real_table
from audit_core.synthetic.utility import utility_score

ROOT = Path(__file__).resolve().parents[3]
SAMPLE = ROOT / "sample_data" / "adult.csv"

# Small but real settings so every generator runs in seconds.
FAST = {
    "ctgan": {"epochs": 1, "batch_size": 100},
    "tvae": {"epochs": 1, "batch_size": 100},
    "copulagan": {"epochs": 1, "batch_size": 100},
    "gaussian_copula": {"default_distribution": "norm"},
}


@pytest.fixture(scope="module")
def adult() -> pd.DataFrame:
    return pd.read_csv(SAMPLE).sample(2400, random_state=7).reset_index(drop=True)


@pytest.fixture(scope="module")
def small_split(adult: pd.DataFrame):
    return split_real_table(adult.iloc[:1000], fractions={"train": 0.3, "holdout": 0.3, "reserve": 0.4}, seed=1)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(GENERATORS))
def test_every_generator_fits_and_samples_with_the_right_columns_and_types(name, small_split):
    train = small_split.train
    types = infer_column_types(train)
    gen = make_generator(name, **FAST.get(name, {}))
    messages: list[tuple[float, str]] = []
    gen.fit(train, types=types, seed=0, reserve=small_split.reserve, progress=lambda f, m: messages.append((f, m)))
    out = gen.sample(123, seed=5)
    assert list(out.columns) == list(train.columns)
    assert len(out) == 123
    for col in types.numeric:
        assert pd.api.types.is_integer_dtype(out[col].dtype), (name, col, out[col].dtype)  # Adult's numbers are integers
        lo, hi = train[col].min(), train[col].max()
        if name != "population":
            assert out[col].between(lo, hi).all(), (name, col)
    for col in types.categorical:
        assert out[col].dtype == object
        values = set(out[col].dropna())
        assert all(isinstance(v, str) for v in values)
        if name != "population":  # every other generator draws categories seen in training
            assert values <= set(train[col].dropna().astype(str)), (name, col)
    fractions = [f for f, _ in messages]
    assert fractions[0] == 0.0
    assert fractions[-1] == 1.0
    assert fractions == sorted(fractions)
    if GENERATORS[name].has_epochs:
        assert any("epoch 1/1" in m for _, m in messages)


@pytest.mark.slow
def test_sampling_is_seeded(small_split):
    gen = make_generator("bayesian_network").fit(small_split.train, seed=0)
    pd.testing.assert_frame_equal(gen.sample(50, seed=3), gen.sample(50, seed=3))
    assert not gen.sample(50, seed=3).equals(gen.sample(50, seed=4))


@pytest.mark.slow
def test_bootstrap_is_leaky_and_population_is_chance(adult):
    plan = ComparisonPlan(("bootstrap", "population"), fractions={"train": 0.3, "holdout": 0.3, "auxiliary": 0.2, "reserve": 0.2})
    comparison = compare_generators(adult, plan, seed=0)
    boot = comparison["bootstrap"].audit
    pop = comparison["population"].audit
    assert boot.attacks["true_distribution"].auc > 0.7
    assert abs(pop.attacks["true_distribution"].auc - 0.5) < 0.08
    assert boot.exact_copies["members"] > 5 * max(boot.exact_copies["non_members"], 1)
    # copies come out on top: the highest-scored members are exact copies
    records = boot.records.sort_values("p_member_true", ascending=False)
    top = records[records["is_member"].astype(bool)].head(50)
    assert (top["distance"] == 0).all()
    # the population reference copied no training row
    assert pop.exact_copies["members"] <= pop.exact_copies["non_members"] + 10


@pytest.mark.slow
def test_comparison_headless_with_a_failing_generator_and_cache(adult):
    cache: dict = {}
    plan = ComparisonPlan(
        ("bootstrap", "bayesian_network", "ctgan"),
        params={"ctgan": {"batch_size": 15}},  # not a multiple of 10: CTGAN refuses it
        rows=500,
    )
    first = compare_generators(adult.iloc[:1500], plan, cache=cache, seed=2)
    table = first.table()
    assert list(table["generator"]) == ["bootstrap", "bayesian_network", "ctgan"]
    assert "batch_size must be a multiple of 10" in first["ctgan"].error
    assert first["bootstrap"].ok
    assert first["bayesian_network"].ok
    assert table.loc[table["generator"] == "bootstrap", "auc_true"].item() > table.loc[
        table["generator"] == "bayesian_network", "auc_true"
    ].item()
    for col in ("tpr@0.1%", "tpr@1%", "f1_true", "f1_realistic", "f1_method1", "utility"):
        assert table.loc[:1, col].notna().all()
    assert len(first["bayesian_network"].synthetic) == 500
    # a second call reuses the fitted generators and samples
    second = compare_generators(adult.iloc[:1500], plan, cache=cache, seed=2)
    assert second["bayesian_network"].fit_seconds == 0.0
    pd.testing.assert_frame_equal(second["bayesian_network"].synthetic, first["bayesian_network"].synthetic)
    # re-scoring with another prior changes the scores, not the distances
    rescored = rescore_comparison(first, prior=0.2)
    np.testing.assert_array_equal(
        rescored["bootstrap"].audit.records["distance"], first["bootstrap"].audit.records["distance"]
    )
    assert rescored["bootstrap"].audit.settings["prior"] == 0.2


class _Cancelled(BaseException):
    """Stands in for Streamlit's stop/rerun exception (a BaseException)."""


@pytest.mark.slow
def test_cancelling_mid_fit_leaves_no_cache_entry(small_split):
    cache: dict = {}
    types = infer_column_types(small_split.train)

    def cancel_at_second_epoch(fraction: float, message: str) -> None:
        if "epoch 2/" in message:
            raise _Cancelled

    with pytest.raises(_Cancelled):
        fit_and_sample(
            "tvae", small_split, types=types, params={"epochs": 3, "batch_size": 100}, rows=20,
            progress=cancel_at_second_epoch, cache=cache,
        )
    assert cache == {}
    fit_and_sample("bootstrap", small_split, types=types, rows=20, cache=cache)
    assert len(cache) == 2  # the fitted generator and its sample


def test_split_is_disjoint_seeded_and_checked(adult):
    split = split_real_table(adult, seed=3)
    sizes = split.sizes()
    assert sizes == {"train": 960, "holdout": 480, "auxiliary": 480, "reserve": 480}
    all_rows = np.concatenate(list(split.rows.values()))
    assert len(np.unique(all_rows)) == len(all_rows)
    pd.testing.assert_frame_equal(split.train, adult.iloc[split.rows["train"]].reset_index(drop=True))
    again = split_real_table(adult, seed=3)
    np.testing.assert_array_equal(again.rows["holdout"], split.rows["holdout"])
    with pytest.raises(InputError, match=r"add up to 1\.50"):  # the knobs refuse it, before any file is read
        REGISTRY["compare"].settings(train=0.8, holdout=0.5).validate()
    with pytest.raises(InputError, match="holdout part"):
        split_real_table(adult.iloc[:50], fractions={"train": 0.9, "holdout": 0.1})


def test_unsupported_columns_are_refused_by_name(adult):
    df = adult.iloc[:300].copy()
    df["visit_date"] = pd.date_range("2020-01-01", periods=len(df), freq="D").strftime("%Y-%m-%d")
    with pytest.raises(InputError, match="'visit_date' holds dates"):
        make_generator("bootstrap").fit(df)
    df = adult.iloc[:300].copy()
    df["comment"] = [f"free text note number {i}" for i in range(len(df))]
    with pytest.raises(InputError, match="'comment' has 300 distinct values"):
        compare_generators(df, ComparisonPlan(("bootstrap",)))
    # ignoring the column is the way out
    types = infer_column_types(df, ignore=["comment"])
    out = make_generator("bootstrap").fit(df, types=types).sample(10)
    assert "comment" not in out.columns


def test_the_comparison_knob_refuses_no_generator_or_an_unknown_one():
    """compare_generators trusts its names: the generators knob checks them once (at least one, each known)."""
    for names, match in (((), "at least 1 value"), (("bootstrap", "gan9000"), "gan9000")):
        with pytest.raises(InputError, match=match):
            REGISTRY["compare"].settings(generators=names).validate()


def test_bad_names_and_parameters_are_refused():
    with pytest.raises(InputError, match="Unknown generator 'gan9000'"):
        make_generator("gan9000")
    with pytest.raises(InputError, match="no parameter"):
        make_generator("ctgan", epoch=3)
    with pytest.raises(InputError, match="from 0 to 6"):
        make_generator("bayesian_network", degree=-1)
    with pytest.raises(InputError, match="whole number"):
        make_generator("tvae", epochs=2.5)
    with pytest.raises(InputError, match="a multiple of 10"):  # the GANs' pac, once an inner check, now the knob's
        make_generator("ctgan", batch_size=55)
    with pytest.raises(InputError, match="reserve"):
        make_generator("population").fit(pd.DataFrame({"a": range(30), "b": ["x", "y"] * 15}))


@pytest.mark.slow
def test_utility_score_ranks_faithful_above_broken(adult):
    train, other = adult.iloc[:1200], adult.iloc[1200:]
    types = infer_column_types(train)
    faithful = utility_score(train, other, types=types)
    rng = np.random.default_rng(0)
    broken = train.apply(lambda col: col.to_numpy()[rng.permutation(len(col))])  # marginals kept, pairs destroyed
    shuffled = utility_score(train, broken, types=types)
    assert faithful.overall > 0.85
    assert shuffled.column_shapes == pytest.approx(1.0)
    assert shuffled.column_pair_trends < faithful.column_pair_trends - 0.05
    assert faithful.overall == pytest.approx((faithful.column_shapes + faithful.column_pair_trends) / 2)


@pytest.mark.slow
def test_cli_generate_writes_parquet(tmp_path, small_split):
    train = tmp_path / "train.csv"
    small_split.train.to_csv(train, index=False)
    out = tmp_path / "synthetic.parquet"
    code = main(["--quiet", "generate", "--train", str(train), "--generator", "bayesian_network",
                 "--rows", "40", "--seed", "1", "--out", str(out)])
    assert code == 0
    back = pd.read_parquet(out)
    assert list(back.columns) == list(small_split.train.columns)
    assert len(back) == 40
    assert not (tmp_path / "synthetic.parquet.partial").exists()


def test_cli_generate_refuses_bad_input(tmp_path, small_split, capsys):
    train = tmp_path / "train.csv"
    small_split.train.to_csv(train, index=False)
    with pytest.raises(SystemExit) as exc:  # argparse refuses a name outside the knob's choices, in one line
        main(["generate", "--train", str(train), "--generator", "nope", "--rows", "5", "--out", str(tmp_path / "s.csv")])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "invalid choice: 'nope'" in err[0]
    assert "bayesian_network" in err[0]
    assert main(["generate", "--train", str(train), "--generator", "bootstrap", "--rows", "5", "--out",
                 str(tmp_path / "s.xlsx")]) == 2


def test_a_comparison_where_every_generator_fails_is_a_refusal_naming_each_reason(adult):
    from audit_core.common.errors import InputError

    with pytest.raises(InputError, match=r"^No generator completed \(.*batch.size.*\); fix that and run the comparison again\.$"):
        compare_generators(adult.iloc[:300], ComparisonPlan(("ctgan",), params={"ctgan": {"batch_size": 15}}, rows=100))
