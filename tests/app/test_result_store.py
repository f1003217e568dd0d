"""The server's result store is bounded in entries and bytes, and drops large results of sessions that ended."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest

from ui.store import SESSION_BOUND_BYTES, ResultStore, StoreView, approx_nbytes


def _table(mb: float) -> pd.DataFrame:
    return pd.DataFrame({"x": np.zeros(int(mb * 2**20) // 8)})


def test_bytes_are_counted_through_containers_and_dataclasses() -> None:
    @dataclass(frozen=True)
    class Result:
        records: pd.DataFrame
        distances: np.ndarray
        label: str

    df = _table(4)
    nested = {"audit": [df, Result(_table(0.5), np.zeros(2**20 // 16), "x")], "n": 3}
    assert approx_nbytes(df) >= 4 * 2**20
    assert 5 * 2**20 <= approx_nbytes(nested) < 5 * 2**20 + 10_000


def test_entries_and_bytes_are_bounded_least_recently_used_first() -> None:
    store = ResultStore(max_entries=3, max_bytes=10 * 2**20)
    for key in "abcd":
        store.put(key, _table(1))
    assert len(store) == 3
    assert "a" not in store  # the oldest went first
    store.get("b")  # b is now the most recent
    store.put("e", _table(8.5))  # a fourth entry evicts c; 10.5 MB > 10 MB evicts d
    assert "b" in store
    assert "e" in store
    assert "c" not in store
    assert "d" not in store
    assert store.nbytes <= 10 * 2**20 + 1000
    store.put("huge", _table(11))  # larger than the whole budget: kept alone, so that the page can show it
    assert list(store.keys()) == ["huge"]
    store.put("next", _table(1))  # the next result evicts it
    assert list(store.keys()) == ["next"]
    assert store.nbytes <= 10 * 2**20 + 1000


def test_large_results_of_ended_sessions_are_dropped_small_ones_kept() -> None:
    store = ResultStore(max_entries=8, max_bytes=2**30)
    big = SESSION_BOUND_BYTES / 2**20 + 1
    store.put("upload-audit", _table(big), session="s1")
    store.put("shared-upload", _table(big), session="s1")
    store.get("shared-upload", session="s2")
    store.put("sample-audit", _table(1), session="s1")
    active = {"s2"}
    assert store.drop_sessions_gone(active.__contains__) == 1
    assert "upload-audit" not in store  # s1 ended: its upload goes
    assert "shared-upload" in store  # s2 still uses it
    assert "sample-audit" in store  # small: kept for every session
    active.clear()
    assert store.drop_sessions_gone(active.__contains__) == 1
    assert "shared-upload" not in store


def test_torch_modules_tensors_and_bytes_count_their_buffers() -> None:
    import torch

    model = torch.nn.Linear(1024, 256)  # 1024 x 256 weights + 256 biases, float32
    assert approx_nbytes(model) >= 4 * (1024 * 256 + 256)
    assert approx_nbytes({"weights": torch.zeros(2**20)}) >= 4 * 2**20
    assert approx_nbytes({"raw": b"\0" * 2**20}) >= 2**20


def test_a_store_view_is_a_cache_mapping_inside_the_same_bounds() -> None:
    store = ResultStore(max_entries=4, max_bytes=2**30)
    fits, audits = StoreView(store, "fits", session="s1"), StoreView(store, "audits")
    fits[("bootstrap", 1)] = _table(1)
    fits[("copula", 1)] = _table(1)
    audits["a"] = _table(1)
    assert len(fits) == 2
    assert ("bootstrap", 1) in fits
    assert "a" not in fits  # namespaces do not mix
    assert set(fits) == {("bootstrap", 1), ("copula", 1)}
    for i in range(3):  # two more entries than the store holds: the oldest go, whatever the view
        audits[i] = _table(1)
    assert len(store) == 4
    assert ("bootstrap", 1) not in fits
    with pytest.raises(KeyError):  # an evicted entry reads as missing
        fits[("bootstrap", 1)]
    del fits[("copula", 1)]
    assert len(fits) == 0
