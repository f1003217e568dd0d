"""Tests for audit_core.synthetic.encoding and .distance against a direct, loop-by-loop reading of docs/methods.md §1 step 1."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from audit_core.common.column_types import ColumnTypes
from audit_core.common.errors import InputError
from audit_core.synthetic.distance import (
    NearestNeighbours,
    column_contributions,
    nearest_gower,
    nearest_k_gower,
    pair_distances,
    pairwise_gower,
)
from audit_core.synthetic.encoding import EncodedTable, encode_for_gower

BACKENDS = ["numba", "torch"]


# ------------------------------------------------------------------ the formula, by hand
def _missing(v: object) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def _real_ranges(real: list[pd.DataFrame], numeric: tuple[str, ...]) -> dict[str, float]:
    out = {}
    for col in numeric:
        values = [v for f in real for v in f[col].tolist() if not _missing(v)]
        out[col] = max(values) - min(values)
    return out


def _gower_loop(x: dict, s: dict, *, types: ColumnTypes, ranges: dict, weights: dict | None = None) -> float:
    """d_G(x, s) written out term by term (docs/methods.md §1 step 1)."""
    num, den = 0.0, 0.0
    for col in types.numeric + types.categorical:
        w = 1.0 if weights is None else weights.get(col, 1.0)
        a, b = x[col], s[col]
        if _missing(a) or _missing(b):
            continue  # left out of this pair's average
        if col in types.numeric:
            r = ranges[col]
            if r == 0:
                delta = 0.0 if a == b else 1.0
            else:
                delta = min(1.0, abs(a - b) / r)
        else:
            delta = 0.0 if a == b else 1.0
        num += w * delta
        den += w
    return 1.0 if den == 0 else num / den


def _nearest_loop(query: pd.DataFrame, ref: pd.DataFrame, **kw) -> tuple[np.ndarray, np.ndarray]:
    qs = query.to_dict("records")
    rs = ref.to_dict("records")
    dist = np.empty(len(qs))
    idx = np.empty(len(qs), dtype=np.int64)
    for i, x in enumerate(qs):
        best, arg = math.inf, -1
        for k, s in enumerate(rs):
            d = _gower_loop(x, s, **kw)
            if d < best:
                best, arg = d, k
        dist[i], idx[i] = best, arg
    return dist, idx


def _matrix_loop(query: pd.DataFrame, ref: pd.DataFrame, **kw) -> np.ndarray:
    qs = query.to_dict("records")
    rs = ref.to_dict("records")
    return np.array([[_gower_loop(x, s, **kw) for s in rs] for x in qs])


# ------------------------------------------------------------------ test data
TYPES = ColumnTypes(numeric=("age", "income", "const", "score"), categorical=("sex", "city", "grade"))


def _table(rng: np.random.Generator, n: int, *, synthetic: bool = False, missing: float = 0.1) -> pd.DataFrame:
    """Mixed table: numeric, a column constant in the real data, categorical with labels."""
    age = rng.integers(18, 80, n).astype(float)
    income = rng.gamma(2.0, 20_000.0, n)
    score = rng.normal(0.0, 1.0, n).round(1)
    const = np.full(n, 7.0)
    sex = rng.choice(["F", "M"], n).astype(object)
    city = rng.choice(["Seoul", "Busan", "Incheon", "Daegu"], n).astype(object)
    grade = rng.choice(["1", "2", "3"], n).astype(object)
    if synthetic:
        age[: n // 6] = rng.uniform(-50, 200, n // 6)  # outside the real range
        const[::3] = 8.0  # the real data never show 8
        city[1::5] = "Atlantis"  # a category the real data never show
    frame = pd.DataFrame({"age": age, "income": income, "const": const, "score": score, "sex": sex, "city": city, "grade": grade})
    if missing:
        for col in frame.columns:
            hit = rng.random(n) < missing
            frame.loc[hit, col] = np.nan
    return frame


@pytest.fixture(scope="module", params=[0.1, 0.0], ids=["with-missing", "complete"])
def data(request: pytest.FixtureRequest) -> dict[str, pd.DataFrame]:
    rng = np.random.default_rng(11)
    missing = request.param
    return {
        "train": _table(rng, 41, missing=missing),
        "holdout": _table(rng, 23, missing=missing),
        "synthetic": _table(rng, 57, synthetic=True, missing=missing),
    }


# ------------------------------------------------------------------ nearest_gower vs the loop
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("weights", [None, {"income": 2.5, "city": 0.0, "sex": 0.5}])
def test_nearest_matches_loop(data: dict[str, pd.DataFrame], backend: str, weights: dict | None) -> None:
    real = [data["train"], data["holdout"]]
    enc = encode_for_gower(real, types=TYPES, weights=weights)
    query = pd.concat(real, ignore_index=True)
    ranges = _real_ranges(real, TYPES.numeric)
    assert ranges["const"] == 0
    expected_d, _ = _nearest_loop(query, data["synthetic"], types=TYPES, ranges=ranges, weights=weights)
    nn = nearest_gower(enc.transform(query), enc.transform(data["synthetic"]), backend=backend, block_rows=16)
    assert isinstance(nn, NearestNeighbours)
    assert nn.distance.dtype == np.float64
    assert nn.index.dtype == np.int64
    np.testing.assert_allclose(nn.distance, expected_d, atol=1e-6)
    # the chosen reference row really is at the minimal distance
    syn_rows = data["synthetic"].to_dict("records")
    q_rows = query.to_dict("records")
    chosen = [_gower_loop(q_rows[i], syn_rows[k], types=TYPES, ranges=ranges, weights=weights) for i, k in enumerate(nn.index)]
    np.testing.assert_allclose(chosen, expected_d, atol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(("n_query", "n_ref"), [(30, 30), (13, 57), (57, 5)])
def test_sizes_and_block_edges(data: dict[str, pd.DataFrame], backend: str, n_query: int, n_ref: int) -> None:
    real = [data["train"], data["holdout"]]
    enc = encode_for_gower(real, types=TYPES)
    query = pd.concat(real, ignore_index=True).iloc[:n_query]
    ref = data["synthetic"].iloc[:n_ref]
    expected_d, expected_i = _nearest_loop(query, ref, types=TYPES, ranges=_real_ranges(real, TYPES.numeric))
    for block in (1, 3, 512):
        nn = nearest_gower(enc.transform(query), enc.transform(ref), backend=backend, block_rows=block)
        np.testing.assert_allclose(nn.distance, expected_d, atol=1e-6)
        # index equal wherever the minimum is not tied within float32 rounding
        loop_matrix = _matrix_loop(query, ref, types=TYPES, ranges=_real_ranges(real, TYPES.numeric))
        clear = (np.sort(loop_matrix, axis=1)[:, 1] - loop_matrix.min(axis=1)) > 1e-5 if n_ref > 1 else np.ones(n_query, bool)
        np.testing.assert_array_equal(nn.index[clear], expected_i[clear])


def test_pairwise_matches_loop(data: dict[str, pd.DataFrame]) -> None:
    real = [data["train"], data["holdout"]]
    weights = {"age": 3.0, "grade": 0.25}
    enc = encode_for_gower(real, types=TYPES, weights=weights)
    expected = _matrix_loop(
        data["train"], data["synthetic"], types=TYPES, ranges=_real_ranges(real, TYPES.numeric), weights=weights
    )
    got = pairwise_gower(enc.transform(data["train"]), enc.transform(data["synthetic"]))
    assert got.shape == (41, 57)
    np.testing.assert_allclose(got, expected, atol=1e-6)
    assert got.min() >= 0.0
    assert got.max() <= 1.0


# ------------------------------------------------------------------ the rules one by one
def test_rules_on_hand_made_rows() -> None:
    types = ColumnTypes(numeric=("x", "k"), categorical=("c",))
    real = pd.DataFrame({"x": [0.0, 10.0, 5.0], "k": [2.0, 2.0, 2.0], "c": ["a", "b", np.nan]})
    enc = encode_for_gower([real], types=types)
    assert enc.constant_numeric == ("k",)
    syn = pd.DataFrame(
        {
            "x": [5.0, 100.0, np.nan, 0.0],
            "k": [2.0, 3.0, 2.0, np.nan],
            "c": ["a", "z", np.nan, np.nan],
        }
    )
    q = enc.transform(real.iloc[[0]])  # x=0, k=2, c=a
    d = pairwise_gower(q, enc.transform(syn))[0]
    # row 0: |0-5|/10 = 0.5, k equal 0, c equal 0 -> 0.5/3
    # row 1: min(1, 100/10) = 1, k 2 vs 3 -> 1 (constant column), c unseen 'z' -> 1 -> 3/3
    # row 2: x missing and c missing -> only k compared -> 0
    # row 3: only x compared, equal -> 0
    np.testing.assert_allclose(d, [0.5 / 3, 1.0, 0.0, 0.0])
    # no comparable column -> 1
    empty_q = enc.transform(pd.DataFrame({"x": [np.nan], "k": [np.nan], "c": [np.nan]}))
    assert pairwise_gower(empty_q, enc.transform(syn)).tolist() == [[1.0, 1.0, 1.0, 1.0]]
    nn = nearest_gower(empty_q, enc.transform(syn))
    assert nn.distance.tolist() == [1.0]


def test_ranges_come_from_real_records_only() -> None:
    types = ColumnTypes(numeric=("x",))
    real = [pd.DataFrame({"x": [0.0, 4.0]}), pd.DataFrame({"x": [10.0]})]
    enc = encode_for_gower(real, types=types)
    assert enc.ranges.tolist() == [10.0]
    assert enc.mins.tolist() == [0.0]
    outlier = enc.transform(pd.DataFrame({"x": [1e12, 2.0]}))
    d = pairwise_gower(enc.transform(real[0]), outlier)
    np.testing.assert_allclose(d, [[1.0, 0.2], [1.0, 0.2]])


def test_unseen_categories_are_new_but_consistent() -> None:
    types = ColumnTypes(categorical=("c",))
    enc = encode_for_gower([pd.DataFrame({"c": ["a", "b"]})], types=types)
    one = enc.transform(pd.DataFrame({"c": ["zz", "a", "yy"]}))
    two = enc.transform(pd.DataFrame({"c": ["yy", "q"]}))
    assert one.codes.dtype == np.int32
    assert one.codes[1, 0] == 0
    assert one.codes[0, 0] >= 2
    assert one.codes[2, 0] >= 2
    np.testing.assert_array_equal(pairwise_gower(one, two), [[1.0, 1.0], [1.0, 1.0], [0.0, 1.0]])


def test_encoded_dtypes(data: dict[str, pd.DataFrame]) -> None:
    enc = encode_for_gower([data["train"]], types=TYPES)
    table = enc.transform(data["synthetic"])
    assert isinstance(table, EncodedTable)
    assert table.numeric.dtype == np.float32
    assert table.codes.dtype == np.int32
    assert table.n_rows == len(data["synthetic"])
    assert set(table.columns) == set(TYPES.columns)
    assert (table.codes[data["synthetic"]["sex"].isna().to_numpy(), table.categorical_columns.index("sex")] == -1).all()


# ------------------------------------------------------------------ copies, backends, explanations
@pytest.mark.parametrize("backend", BACKENDS)
def test_planted_copies_have_distance_zero(backend: str) -> None:
    rng = np.random.default_rng(5)
    real = _table(rng, 300, missing=0.05)
    synthetic = _table(rng, 400, synthetic=True, missing=0.05)
    planted = rng.choice(300, size=25, replace=False)
    slots = rng.choice(400, size=25, replace=False)
    synthetic.iloc[slots] = real.iloc[planted].to_numpy()
    enc = encode_for_gower([real], types=TYPES)
    nn = nearest_gower(enc.transform(real), enc.transform(synthetic), backend=backend)
    assert (nn.distance[planted] == 0.0).all()
    # the index points to a record identical to the query on every column compared
    recomputed = pair_distances(
        enc.transform(real), enc.transform(synthetic), query_rows=planted, reference_rows=nn.index[planted]
    )
    assert (recomputed == 0.0).all()
    others = np.setdiff1d(np.arange(300), planted)
    assert (nn.distance[others] > 0).mean() > 0.9


def test_numba_and_torch_agree() -> None:
    rng = np.random.default_rng(3)
    for missing in (0.0, 0.15):
        real = _table(rng, 700, missing=missing)
        synthetic = _table(rng, 900, synthetic=True, missing=missing)
        enc = encode_for_gower([real], types=TYPES, weights={"score": 2.0})
        q, r = enc.transform(real), enc.transform(synthetic)
        a = nearest_gower(q, r, backend="numba")
        b = nearest_gower(q, r, backend="torch", device="cpu")
        assert a.backend == "numba"
        assert b.backend.startswith("torch")
        np.testing.assert_allclose(a.distance, b.distance, atol=1e-6)
        same = a.index == b.index
        assert same.mean() > 0.95
        # where they differ, both rows are at the same distance (a tie)
        tie = pair_distances(q, r, query_rows=np.flatnonzero(~same), reference_rows=b.index[~same])
        np.testing.assert_allclose(tie, a.distance[~same], atol=1e-6)


def test_contributions_sum_to_distance(data: dict[str, pd.DataFrame]) -> None:
    enc = encode_for_gower([data["train"], data["holdout"]], types=TYPES)
    q, r = enc.transform(data["train"]), enc.transform(data["synthetic"])
    nn = nearest_gower(q, r)
    shares = nn.contributions(q, r, rows=np.arange(q.n_rows))
    assert list(column_contributions(q, r, query_rows=[0], reference_rows=[0], column_order=TYPES.columns).columns) == list(
        TYPES.columns
    )
    np.testing.assert_allclose(shares.sum(axis=1, min_count=1).fillna(1.0).to_numpy(), nn.distance, atol=1e-9)
    train_missing = data["train"].isna().to_numpy()
    for j, col in enumerate(data["train"].columns):
        assert shares[col][train_missing[:, j]].isna().all()


def test_progress_is_reported(data: dict[str, pd.DataFrame]) -> None:
    enc = encode_for_gower([data["train"]], types=TYPES)
    calls: list[tuple[float, str]] = []
    nearest_gower(enc.transform(data["train"]), enc.transform(data["synthetic"]), progress=lambda f, m: calls.append((f, m)))
    assert calls
    assert calls[-1][0] == 1.0
    assert all(0.0 <= f <= 1.0 for f, _ in calls)


# ------------------------------------------------------------------ the gower package, where its defects don't bite
def test_gower_package_agrees_on_unequal_sizes_without_missing() -> None:
    gower = pytest.importorskip("gower")
    rng = np.random.default_rng(9)
    real = _table(rng, 60, missing=0.0).drop(columns=["const"])  # its max-is-0 rule would differ
    real["score"] = real["score"] + 10.0  # every maximum > 0
    synthetic = real.sample(n=45, random_state=1, replace=True).reset_index(drop=True)
    # new combinations, values inside the real range (the package takes ranges over both tables)
    synthetic["age"] = rng.permutation(synthetic["age"].to_numpy())
    synthetic["city"] = rng.permutation(synthetic["city"].to_numpy())
    types = ColumnTypes(numeric=("age", "income", "score"), categorical=("sex", "city", "grade"))
    enc = encode_for_gower([real], types=types)
    ours = pairwise_gower(enc.transform(real), enc.transform(synthetic))
    # the package's array API, fed float arrays (categories as integer codes)
    cols = list(types.numeric + types.categorical)
    codes = {c: {v: k for k, v in enumerate(sorted(set(real[c])))} for c in types.categorical}

    def as_array(df: pd.DataFrame) -> np.ndarray:
        out = df[cols].copy()
        for c in types.categorical:
            out[c] = out[c].map(codes[c]).astype(float)
        return out.to_numpy(dtype=np.float64)

    cat = np.array([c in types.categorical for c in cols])
    theirs = gower.gower_matrix(as_array(real), as_array(synthetic), cat_features=cat)
    assert theirs.shape == (60, 45)
    np.testing.assert_allclose(ours, theirs, atol=1e-5)


# ------------------------------------------------------------------ bad input
def test_bad_input_is_refused(data: dict[str, pd.DataFrame]) -> None:
    with pytest.raises(InputError, match="'nope'"):
        encode_for_gower([data["train"]], types=TYPES, weights={"nope": 1.0})
    with pytest.raises(InputError, match="weight of column 'age'"):
        encode_for_gower([data["train"]], types=TYPES, weights={"age": -1.0})
    with pytest.raises(InputError, match="Every column weight is 0"):
        encode_for_gower([data["train"]], types=TYPES, weights=dict.fromkeys(TYPES.columns, 0.0))
    with pytest.raises(InputError, match="No real table"):
        encode_for_gower([], types=TYPES)
    with pytest.raises(InputError, match="lacks the column"):
        encode_for_gower([data["train"].drop(columns=["age"])], types=TYPES)
    enc = encode_for_gower([data["train"]], types=TYPES)
    other = encode_for_gower([data["train"]], types=TYPES, weights={"age": 2.0})
    q = enc.transform(data["train"])
    with pytest.raises(InputError, match="encoded differently"):
        nearest_gower(q, other.transform(data["synthetic"]))
    with pytest.raises(InputError, match="too large"):
        pairwise_gower(q, q, max_cells=100)
    with pytest.raises(InputError, match="Unknown distance backend"):
        nearest_gower(q, q, backend="faiss")
    with pytest.raises(InputError, match="no rows"):
        nearest_gower(q, q.rows([]))


@pytest.mark.parametrize("block_rows", [8, 64, None])
def test_pruned_scan_equals_brute_force_on_clustered_data(block_rows: int | None) -> None:
    """Sorted blocks with skipped blocks give the same nearest record as the full matrix."""
    rng = np.random.default_rng(21)
    real = _table(rng, 400, missing=0.0)
    synthetic = real.sample(n=600, replace=True, random_state=2).reset_index(drop=True)
    synthetic.loc[1::2, "age"] += rng.normal(0, 2, 300)  # near copies; the even rows hold exact copies and ties
    synthetic.loc[::7, "city"] = "Seoul"
    enc = encode_for_gower([real], types=TYPES)
    q, r = enc.transform(real), enc.transform(synthetic)
    nn = nearest_gower(q, r, backend="numba", block_rows=block_rows)
    full = pairwise_gower(q, r)
    np.testing.assert_allclose(nn.distance, full.min(axis=1), atol=1e-6)
    # ties (several synthetic rows at the same distance) go to the lowest row
    np.testing.assert_allclose(full[np.arange(400), nn.index], full.min(axis=1), atol=1e-6)
    low = full.min(axis=1, keepdims=True)
    exact_ties = full == low
    clear = ((full <= low + 1e-5) == exact_ties).all(axis=1)  # no near-tie that float32 could flip
    assert clear.mean() > 0.9
    assert (exact_ties.sum(axis=1) > 1).sum() > 10  # real ties exist in this data
    first = exact_ties.argmax(axis=1)
    np.testing.assert_array_equal(nn.index[clear], first[clear])


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("block_rows", [8, None])
def test_k_nearest_equal_the_sorted_full_matrix(data: dict[str, pd.DataFrame], backend: str, block_rows: int | None) -> None:
    """The k nearest records (with missing values, pruned blocks, exact copies and ties) are the first k of each
    sorted row of the loop's matrix; k = 1 is nearest_gower's record."""
    real = [data["train"], data["holdout"]]
    ranges = _real_ranges(real, TYPES.numeric)
    synthetic = pd.concat([data["synthetic"], data["train"].iloc[:9]], ignore_index=True)  # copies: distance 0
    enc = encode_for_gower(real, types=TYPES)
    q, r = enc.transform(data["train"]), enc.transform(synthetic)
    expected = np.sort(_matrix_loop(data["train"], synthetic, types=TYPES, ranges=ranges), axis=1)
    for k in (1, 2, 5):
        nk = nearest_k_gower(q, r, k=k, backend=backend, block_rows=block_rows)
        np.testing.assert_allclose(nk.distance, expected[:, :k], atol=1e-6)
        np.testing.assert_allclose(pair_distances(q, r, query_rows=np.repeat(np.arange(q.n_rows), k),
                                                  reference_rows=nk.index.ravel()).reshape(-1, k), nk.distance, atol=1e-12)
        assert (np.diff(nk.index[:, :2], axis=1) != 0).all()  # k different rows
    nn = nearest_gower(q, r, backend=backend)
    np.testing.assert_allclose(nearest_k_gower(q, r, k=1, backend=backend).distance[:, 0], nn.distance, atol=1e-12)
    few = nearest_k_gower(q, r.rows([0, 1]), k=4, backend=backend)  # fewer reference rows than k: padded
    assert (few.index[:, 2:] == -1).all()
    assert (few.distance[:, 2:] == 1.0).all()
