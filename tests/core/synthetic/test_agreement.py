"""Rarity-weighted agreement (audit_core.synthetic.agreement): the weights, the pruned engine against brute force,
and the public per-record best match (issue 28)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from audit_core.common.column_types import ColumnTypes, infer_column_types
from audit_core.synthetic.agreement import (
    AGREE_M,
    CLOSE,
    DISAGREE,
    EQUAL,
    MISSING,
    agreement_matrix,
    best_agreement,
    best_matches,
    fit_weights,
    match_table,
)
from audit_core.synthetic.encoding import encode_for_gower

ADULT = Path(__file__).resolve().parents[3] / "sample_data" / "adult"
TYPES = ColumnTypes(numeric=("x", "y"), categorical=("c", "d"))


def _mixed(n: int, rng: np.random.Generator, missing: float = 0.0) -> pd.DataFrame:
    """Ties everywhere (few integers, rounded numbers, skewed categories), a rare category, optional missing values."""
    frame = pd.DataFrame({
        "x": rng.integers(0, 30, n).astype(float), "y": np.round(rng.normal(0, 1, n), 2),
        "c": rng.choice(list("abcd"), n, p=[0.7, 0.2, 0.09, 0.01]), "d": rng.choice([f"k{i}" for i in range(90)], n),
    })  # fmt: skip
    for col in frame.columns:
        frame.loc[rng.random(n) < missing, col] = np.nan
    return frame


@pytest.mark.parametrize(("missing", "seed"), [(0.0, 0), (0.0, 1), (0.1, 2), (0.3, 3)])
def test_the_pruned_engine_finds_the_brute_force_best(missing, seed) -> None:
    rng = np.random.default_rng(seed)
    query, reference, population = _mixed(150, rng, missing), _mixed(2500, rng, missing), _mixed(400, rng, missing)
    reference.loc[:40, "d"] = "unseen"  # a category the real data never shows
    enc = encode_for_gower([query, population], types=TYPES)
    q, r, ref = (match_table(enc, t) for t in (query, reference, population))
    weights = fit_weights(ref)
    score, row = best_agreement(q, r, weights)
    full = agreement_matrix(weights, q, r)
    np.testing.assert_allclose(score, full.max(axis=1), rtol=1e-6, atol=1e-5)  # nothing missed
    np.testing.assert_allclose(full[np.arange(q.n_rows), row], score, rtol=0, atol=1e-12)


@pytest.mark.parametrize("seed", [4, 5])
def test_value_masks_and_sub_blocks_prune_nothing_the_brute_force_keeps(seed) -> None:
    """A number with more distinct values than a block's value mask has bits (hash collisions), queries that copy a
    row exactly, copy it with one number moved, or are new: the block and sub-block bounds still miss no best row."""
    rng = np.random.default_rng(seed)
    reference = _mixed(3000, rng, 0.05)
    reference["y"] = np.round(rng.normal(0, 1, 3000), 4)  # ~3000 distinct values: bits of the 1024-bit masks collide
    query = pd.concat([reference.sample(50, random_state=seed), reference.sample(50, random_state=seed + 1), _mixed(50, rng)])
    query = query.reset_index(drop=True)
    query.loc[50:99, "y"] += 0.01  # near-copies: equal elsewhere, close on y
    enc = encode_for_gower([query, reference], types=TYPES)
    q, r = match_table(enc, query), match_table(enc, reference)
    weights = fit_weights(match_table(enc, _mixed(400, rng)))
    score, row = best_agreement(q, r, weights)
    full = agreement_matrix(weights, q, r)
    np.testing.assert_allclose(score, full.max(axis=1), rtol=1e-6, atol=1e-5)
    np.testing.assert_allclose(full[np.arange(q.n_rows), row], score, rtol=0, atol=1e-12)


@pytest.mark.parametrize(("missing", "seed"), [(0.0, 6), (0.1, 7)])
def test_a_floor_keeps_every_best_at_or_above_it_and_only_those(missing, seed) -> None:
    """Floors per query set between scores (some queries' best is below, some equal, some above): a query whose best
    reaches its floor gets the brute-force best row and score, the others -inf and row -1."""
    rng = np.random.default_rng(seed)
    reference = _mixed(2500, rng, missing)
    query = pd.concat([reference.sample(60, random_state=seed), _mixed(140, rng, missing)]).reset_index(drop=True)
    enc = encode_for_gower([query, reference], types=TYPES)
    q, r = match_table(enc, query), match_table(enc, reference)
    weights = fit_weights(match_table(enc, _mixed(400, rng, missing)))
    full = agreement_matrix(weights, q, r)
    top = full.max(axis=1)
    floor = np.quantile(top, 0.6) + rng.normal(0, 0.5, q.n_rows)
    floor[:10] = top[:10]  # exactly at the best: still found
    score, row = best_agreement(q, r, weights, floor=floor)
    found = row >= 0
    assert np.all(found[top >= floor])
    assert not np.any(found[top < floor - 1e-3])
    assert 20 < found.sum() < q.n_rows - 20  # both kinds present
    np.testing.assert_allclose(score[found], top[found], rtol=1e-6, atol=1e-5)
    np.testing.assert_array_equal(row[found], best_agreement(q, r, weights)[1][found])
    assert np.all(np.isneginf(score[~found]))


def test_the_engine_matches_brute_force_on_the_adult_sample() -> None:
    """Real data, where the sort and the block bounds prune most blocks: still exactly the best score."""
    t = {n: pd.read_csv(ADULT / f"{n}.csv") for n in ("train", "auxiliary", "synthetic_gaussian_copula")}
    types = infer_column_types(t["train"])
    enc = encode_for_gower([t["train"], t["auxiliary"]], types=types)
    q = match_table(enc, t["train"].iloc[:150])
    r, ref = match_table(enc, t["synthetic_gaussian_copula"]), match_table(enc, t["auxiliary"])
    weights = fit_weights(ref)
    score, _ = best_agreement(q, r, weights)
    np.testing.assert_allclose(score, agreement_matrix(weights, q, r).max(axis=1), rtol=1e-6, atol=1e-5)


def test_rare_values_weigh_more_and_one_changed_field_does_not_cancel_the_rest() -> None:
    population = pd.DataFrame({"x": [1.0] * 60 + [2.0] * 39 + [3.123456], "c": ["a"] * 50 + ["b"] * 50})
    types = ColumnTypes(numeric=("x",), categorical=("c",))
    enc = encode_for_gower([population], types=types)
    weights = fit_weights(match_table(enc, population))
    q = match_table(enc, pd.DataFrame({"x": [1.0, 3.123456, 3.123456, np.nan], "c": ["a", "a", "a", "a"]}))
    w = weights.query_weights(q)
    n = 100
    np.testing.assert_allclose(w["equal"][:, 0], [np.log(AGREE_M * (n + 1) / 61), np.log(AGREE_M * (n + 1) / 2),
                                                  np.log(AGREE_M * (n + 1) / 2), 0.0])  # fmt: skip
    assert w["equal"][1, 0] > 4 * w["equal"][0, 0] > 0  # the value one person has weighs far more
    assert (w["close"][:3, 0, 0] <= w["equal"][:3, 0]).all()  # closeness never weighs more than equality
    assert (w["disagree"][:3] < 0).all()
    assert w["disagree"][3, 0] == 0
    common = w["equal"][0].sum()  # a record of the crowd agreeing on every column
    copy = pd.DataFrame({"x": [3.123456], "c": ["b"]})  # the rare value kept, the category changed
    score = agreement_matrix(weights, q.rows([1]), match_table(enc, copy))[0, 0]
    assert score == pytest.approx(w["equal"][1, 0] + w["disagree"][1, 1])
    assert score > 3 * common > 0  # one changed field lowers the score without cancelling the rare agreement


def test_best_matches_gives_each_record_its_row_equal_columns_and_pattern() -> None:
    rng = np.random.default_rng(5)
    real = _mixed(200, rng)
    reference = _mixed(300, rng)
    synthetic = _mixed(500, rng)
    copy = real.iloc[[7]].copy()
    copy["x"] += 1.0  # within 6 % of the range: close
    copy["c"] = "d" if copy["c"].iloc[0] != "d" else "a"
    synthetic.iloc[123] = copy.iloc[0]
    empty = real.iloc[[9]].copy()
    empty["y"] = np.nan
    synthetic.iloc[321] = empty.iloc[0]
    synthetic = synthetic.astype(real.dtypes.to_dict())
    m = best_matches(real, synthetic, reference, types=TYPES)
    assert m.columns == ("x", "y", "c", "d")
    assert (m.row[7], m.row[9]) == (123, 321)
    assert m.pattern[7].tolist() == [CLOSE, EQUAL, DISAGREE, EQUAL]
    assert m.pattern[9].tolist() == [EQUAL, MISSING, EQUAL, EQUAL]
    assert (m.n_equal[7], m.n_equal[9]) == (2, 3)
    assert m.score.shape == m.row.shape == m.n_equal.shape == (200,)
    others = np.delete(m.score, [7, 9])
    assert m.score[7] > np.quantile(others, 0.9)
    assert m.score[9] > np.quantile(others, 0.9)
    again = best_matches(real, synthetic, reference, types=TYPES)
    np.testing.assert_array_equal(again.score, m.score)


def test_a_large_best_matches_seeks_only_the_best_matching_share(monkeypatch) -> None:
    """Above EXACT_PAIRS with a top share: the records that match best get their full-scan match, the others none
    (NaN, row -1, n_equal -1, a missing pattern), and none of those left out is among the best-matching records."""
    from audit_core.synthetic import agreement

    rng = np.random.default_rng(8)
    real, reference, synthetic = _mixed(1200, rng), _mixed(300, rng), _mixed(3000, rng)
    synthetic.iloc[:40] = real.iloc[:40].to_numpy()  # copies: they must be kept
    synthetic = synthetic.astype(real.dtypes.to_dict())
    full = best_matches(real, synthetic, reference, types=TYPES)
    monkeypatch.setattr(agreement, "EXACT_PAIRS", 0)
    monkeypatch.setattr(agreement, "FLOOR_SAMPLE", 300)
    top = best_matches(real, synthetic, reference, types=TYPES, top_share=0.1)
    kept = top.row >= 0
    assert 0.03 < kept.mean() < 0.6
    assert kept[:40].all()
    np.testing.assert_array_equal(top.row[kept], full.row[kept])
    np.testing.assert_array_equal(top.score[kept], full.score[kept])
    np.testing.assert_array_equal(top.pattern[kept], full.pattern[kept])
    assert np.isnan(top.score[~kept]).all()
    assert (top.n_equal[~kept] == -1).all()
    assert (top.pattern[~kept] == MISSING).all()
    assert full.score[~kept].max() < np.quantile(full.score, 0.97)  # those left out are below the floor (~ the top 10 %)
