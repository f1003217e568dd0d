"""The distributed paths (audit_core.common.cluster) give the single-process answers, survive a lost worker.

One local cluster (2 worker processes, 1 thread each) serves the whole module.
"""

import os
import signal
import sys
import time
import types
from pathlib import Path

import dask
import numpy as np
import pandas as pd
import pytest
import torch

from audit_core.__main__ import main
from audit_core.common.cluster import cluster_client, cluster_summary, gather_tasks, n_workers
from audit_core.common.column_types import ColumnTypes
from audit_core.common.errors import InputError
from audit_core.lira.design import prepare_design
from audit_core.lira.keep_matrix import balanced_keep_matrix
from audit_core.lira.training import TrainOptions, train_batched, train_models
from audit_core.synthetic.comparison import ComparisonPlan, compare_generators
from audit_core.synthetic.distance import nearest_gower
from audit_core.synthetic.distributed_distance import encode_parquet, nearest_gower_on, nearest_gower_parquet
from audit_core.synthetic.encoding import MISSING_CODE, encode_for_gower

pytestmark = pytest.mark.cluster  # worker processes that must start within their timeouts: run alone

SAMPLE = Path(__file__).resolve().parents[3] / "sample_data" / "adult" / "train.csv"
TYPES = ColumnTypes(numeric=("age", "hours", "gain"), categorical=("work", "edu", "sex"))


def _mixed(n: int, seed: int) -> pd.DataFrame:
    """Adult-shaped: integer-valued numerics (many exact ties), a spiky column, categories, 5 % missing."""
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({
        "age": rng.integers(17, 90, n).astype(float),
        "hours": rng.integers(1, 99, n).astype(float),
        "gain": np.where(rng.random(n) < 0.9, 0, rng.integers(0, 99999, n)).astype(float),
        "work": rng.choice(list("abcdefg"), n),
        "edu": rng.choice([f"e{i}" for i in range(16)], n),
        "sex": rng.choice(["M", "F"], n),
    })  # fmt: skip
    df.loc[rng.random(n) < 0.05, "age"] = np.nan
    df.loc[rng.random(n) < 0.05, "work"] = None
    return df


@pytest.fixture(scope="module", autouse=True)
def _bare_main():
    # Worker processes are spawned, and spawn re-imports the parent's __main__. Streamlit's AppTest
    # (tests/app, run earlier in the same pytest process) leaves a page script registered as
    # __main__, which every spawned worker would then execute; give the workers a bare __main__.
    saved = sys.modules["__main__"]
    sys.modules["__main__"] = types.ModuleType("__main__")
    yield
    sys.modules["__main__"] = saved


@pytest.fixture(scope="module")
def client():
    # one death of a worker in the middle of a task is retried; a task that kills its second worker is reported
    import distributed  # noqa: F401 - its config defaults first: dask.config.set's exit would drop a key it added
    with dask.config.set({"distributed.scheduler.allowed-failures": 1}), cluster_client(workers=2) as c:
        yield c


@pytest.fixture(scope="module")
def tables():
    real, syn = _mixed(1000, 0), _mixed(1200, 1)
    enc = encode_for_gower([real], types=TYPES)
    return real, syn, enc, enc.transform(real), enc.transform(syn)


def test_default_is_in_process_and_settings_are_checked(monkeypatch):
    monkeypatch.delenv("AUDIT_DASK_SCHEDULER", raising=False)
    with cluster_client() as c:
        assert c is None
    with pytest.raises(InputError, match="not both"):
        with cluster_client("tcp://127.0.0.1:8786", workers=2):
            pass
    with pytest.raises(InputError, match="between 1 and"):
        with cluster_client(workers=0):
            pass


@pytest.mark.slow
def test_distributed_nearest_neighbours_are_the_engines(client, tables):
    _, _, _, q, r = tables
    ref = nearest_gower(q, r)
    assert np.isnan(r.numeric).any()  # both kinds of reference rows: with and without a missing value
    assert (r.codes == MISSING_CODE).any()
    nn = nearest_gower_on(q, r, client=client)
    np.testing.assert_array_equal(nn.index, ref.index)
    np.testing.assert_array_equal(nn.distance, ref.distance)
    # cut into many query and reference blocks: partial minima reduced over the blocks
    cut = nearest_gower_on(q, r, client=client, query_block=700, reference_block=800)
    np.testing.assert_array_equal(cut.index, ref.index)
    np.testing.assert_allclose(cut.distance, ref.distance, rtol=0, atol=1e-7)


@pytest.mark.slow
def test_parquet_datasets_encode_and_search_like_the_whole_tables(client, tables, tmp_path):
    real, syn, enc, _, _ = tables
    for name, df in (("real", real), ("syn", syn)):
        (tmp_path / name).mkdir()
        for k, part in enumerate(np.array_split(np.arange(len(df)), 4)):
            df.iloc[part].to_parquet(tmp_path / name / f"part{k}.parquet")
    fitted = encode_parquet(client, [str(tmp_path / "real")], types=TYPES)
    assert fitted.categories == enc.categories
    assert fitted.categorical_columns == enc.categorical_columns
    np.testing.assert_array_equal(fitted.mins, enc.mins)
    np.testing.assert_array_equal(fitted.ranges, enc.ranges)
    nn = nearest_gower_parquet(client, str(tmp_path / "real"), str(tmp_path / "syn" / "*.parquet"),
                               real=[str(tmp_path / "real")], types=TYPES)  # fmt: skip
    ref = nearest_gower(enc.transform(real), enc.transform(syn))
    np.testing.assert_array_equal(nn.index, ref.index)
    np.testing.assert_allclose(nn.distance, ref.distance, rtol=0, atol=1e-7)


@pytest.mark.slow
def test_synthetic_audit_on_the_cluster_is_the_same_audit(client):
    from audit_core.synthetic.audit import audit_synthetic

    adult = pd.read_csv(SAMPLE).sample(1200, random_state=3).reset_index(drop=True)
    train, holdout, syn = adult.iloc[:400], adult.iloc[400:800], pd.concat([adult.iloc[:200], adult.iloc[800:]])
    here = audit_synthetic(train, holdout, syn, seed=4)
    there = audit_synthetic(train, holdout, syn, seed=4, client=client)
    pd.testing.assert_frame_equal(here.records, there.records)
    assert here.to_json() == there.to_json()


@pytest.mark.slow
def test_generators_run_as_tasks_with_the_single_process_results(client):
    adult = pd.read_csv(SAMPLE).sample(600, random_state=5).reset_index(drop=True)
    plan = ComparisonPlan(("bootstrap", "ctgan"), params={"ctgan": {"batch_size": 15}}, rows=200)
    seen: dict[str, list[str]] = {}
    here = compare_generators(adult, plan, seed=2)
    cache: dict = {}

    def own(name):
        return lambda fraction, message: seen.setdefault(name, []).append(message)

    there = compare_generators(adult, plan, seed=2, client=client, cache=cache, per_generator_progress=own)
    assert "batch_size must be a multiple of 10" in there["ctgan"].error  # the failure stays in its own row
    assert there["ctgan"].error == here["ctgan"].error
    timing = ["fit_s"]  # wall time
    pd.testing.assert_frame_equal(there.table().drop(columns=timing), here.table().drop(columns=timing))
    pd.testing.assert_frame_equal(there["bootstrap"].synthetic, here["bootstrap"].synthetic)
    assert seen["bootstrap"] == ["bootstrap: queued on the cluster", "bootstrap: done"]
    assert seen["ctgan"][-1] == "ctgan: failed"
    assert any(k[0] == "sample" and k[1] == "bootstrap" for k in cache)  # the task's cache entries came back


@pytest.mark.slow
def test_shadow_model_batches_are_the_rows_of_the_full_run(client):
    adult = pd.read_csv(SAMPLE).sample(240, random_state=1).reset_index(drop=True)
    design = prepare_design(adult, target="income_per_year")
    keep = balanced_keep_matrix(len(design.y), n_models=6, seed=3)
    for kind, opts in (("mlp", TrainOptions(epochs=3, hidden=8)), ("logistic", TrainOptions(max_iter=15, dtype=torch.float64))):
        full = train_batched(design.X, design.y, keep, kind=kind, seed=3, device="cpu", options=opts)
        split = train_models(design.X, design.y, keep, kind=kind, seed=3, device="cpu", client=client, batches=3, options=opts)
        a, b = full.scores(design.X, design.y), split.scores(design.X, design.y)
        if kind == "mlp":  # Adam on independent parameter slices: bit for bit
            np.testing.assert_array_equal(a, b)
        else:  # one L-BFGS per model; only the batched GEMM's rounding differs (in float32 it grows, see benchmarks)
            np.testing.assert_allclose(a, b, rtol=0, atol=1e-9)
    assert torch.equal(torch.as_tensor(keep), torch.as_tensor(balanced_keep_matrix(len(design.y), n_models=6, seed=3)))


@pytest.mark.slow
def test_a_worker_killed_mid_audit_is_survived(client, tables):
    _, _, _, q, r = tables
    ref = nearest_gower(q, r)
    victim = sorted(client.run(os.getpid).values())[0]  # a worker process's pid
    killed = []

    def kill_once(fraction: float, message: str) -> None:  # after the first block, SIGKILL one worker
        if not killed:
            killed.append(victim)
            os.kill(victim, signal.SIGKILL)

    nn = nearest_gower_on(q, r, client=client, query_block=300, progress=kill_once)
    assert killed
    np.testing.assert_array_equal(nn.index, ref.index)
    np.testing.assert_array_equal(nn.distance, ref.distance)
    client.wait_for_workers(2, timeout=60)


def _data_lost_with_its_worker(client) -> tuple:
    """A block scattered to one worker only, and that worker killed: the scheduler holds a future with no data."""
    victim = sorted(client.scheduler_info()["workers"])[0]
    block = client.scatter(np.arange(10), workers=[victim], hash=False)
    os.kill(client.run(os.getpid, workers=[victim])[victim], signal.SIGKILL)
    deadline = time.monotonic() + 30
    while block.status == "finished" and time.monotonic() < deadline:
        time.sleep(0.1)
    return block


@pytest.mark.slow
def test_a_rerun_scatters_its_inputs_anew_when_their_worker_died(client):
    """Scattered inputs have no lineage: a rerun with the same futures fails again (CI saw it once, the distance
    search's block lost with a killed worker); a rerun with its inputs scattered anew succeeds."""
    from audit_core.common.cluster import run_tasks

    fresh = []

    def again(i: int) -> tuple:
        fresh.append(i)
        return (client.scatter(np.arange(10), hash=False),)

    block = _data_lost_with_its_worker(client)
    assert run_tasks(client, np.sum, [(block,)], inputs_again=again) == [45]
    assert fresh == [0]
    client.wait_for_workers(2, timeout=60)
    with pytest.raises(InputError, match="was lost with a Dask worker that died"):
        run_tasks(client, np.sum, [(_data_lost_with_its_worker(client),)])
    client.wait_for_workers(2, timeout=60)


@pytest.mark.slow
def test_a_task_that_keeps_killing_workers_stops_with_one_sentence(client):
    future = client.submit(os._exit, 3, pure=False)
    with pytest.raises(InputError, match=r"^The Dask workers running the killer died repeatedly .*without a result\.$"):
        gather_tasks(client, [future], labels=["the killer"])
    client.wait_for_workers(2, timeout=60)
    summary = cluster_summary(client)
    assert summary["workers"] == n_workers(client) == 2
    assert summary["dashboard"].startswith("http")


@pytest.mark.slow
def test_bad_scheduler_is_one_sentence_within_the_timeout(capsys, monkeypatch):
    monkeypatch.delenv("AUDIT_DASK_SCHEDULER", raising=False)
    args = ["fpc-sim", "--population", "200", "--train-size", "100", "--repeats", "5"]
    assert main([*args, "--scheduler", "no scheduler here"]) == 2
    assert "is not of the form tcp://host:8786" in capsys.readouterr().err
    monkeypatch.setenv("AUDIT_DASK_SCHEDULER", "tcp://127.0.0.1:9")  # nothing listens on the discard port
    start = time.monotonic()
    assert main(args) == 2
    assert time.monotonic() - start < 10
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert err.startswith("error: Could not reach the Dask scheduler at tcp://127.0.0.1:9")
    assert sys.modules["audit_core.common.cluster"].ENV_VAR in err


@pytest.mark.slow
def test_sidebar_shows_the_cluster_named_by_the_environment(client, monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("AUDIT_DASK_SCHEDULER", client.scheduler.address)
    at = AppTest.from_file(str(Path(__file__).resolve().parents[3] / "app.py"), default_timeout=60).run()
    assert not at.exception
    shown = " ".join(c.value for c in at.sidebar.caption)
    assert f"Dask cluster `{client.scheduler.address}`: 2 workers, 2 threads" in shown
    assert "[Dask dashboard](http" in shown


@pytest.mark.slow
def test_pages_send_their_heavy_steps_to_the_cluster(client, monkeypatch):
    """With AUDIT_DASK_SCHEDULER set, the synthetic page's distance search runs on the workers, same numbers."""
    from distributed import get_task_stream
    from streamlit.testing.v1 import AppTest

    from ui import state

    root = Path(__file__).resolve().parents[3]

    def run_page() -> dict:
        at = AppTest.from_file(str(root / "views" / "synthetic_risk.py"), default_timeout=300)
        at.session_state[state.Synthetic.SOURCE] = "German credit – leaky synthetic"
        at.run()
        at.number_input(key=state.Synthetic.SEED).set_value(6)  # a seed no other test uses: no cached result
        [run] = [b for b in at.button if "Run the audit" in b.label]
        run.click().run()
        assert not at.exception
        return at.session_state["synthetic.json"]

    monkeypatch.setenv("AUDIT_DASK_SCHEDULER", client.scheduler.address)
    with get_task_stream(client) as stream:
        on_cluster = run_page()
    assert len(stream.data) > 0  # tasks ran on the workers
    monkeypatch.delenv("AUDIT_DASK_SCHEDULER")
    from ui.store import _result_store

    _result_store().clear()  # the in-process run must compute, not find the cluster's result
    assert run_page() == on_cluster


@pytest.mark.slow
def test_a_task_that_fails_on_the_cluster_is_one_sentence(client):
    """An error inside a task (or a scheduler that cannot unpickle it) stops the audit with a sentence, not a traceback."""
    import operator

    from audit_core.common.cluster import run_tasks

    with pytest.raises(InputError, match=r"could not run block 1 \(division by zero\); the audit stopped without a result"):
        run_tasks(client, operator.truediv, [(1, 0)], labels=["block 1"])


@pytest.mark.slow
def test_back_to_back_searches_with_equal_blocks_keep_their_inputs(client, tables):
    """Blocks are scattered under fresh keys: a block equal to one of the previous call's, whose futures are being
    released, must not take this call's input with it ("lost dependencies"; seen once in 15 tries before the fix)."""
    _, _, _, q, r = tables
    ref = nearest_gower(q, r)
    for _ in range(10):
        assert np.array_equal(nearest_gower_on(q, r, client=client).index, ref.index)
        cut = nearest_gower_on(q, r, client=client, query_block=700, reference_block=800)
        assert cut.index.shape == ref.index.shape


@pytest.mark.slow
def test_shadow_fits_spread_over_the_cluster_give_the_same_attack(client):
    """One Dask task per shadow set (audit_core.synthetic.shadow): the same features, scores and p-values as here."""
    from audit_core.synthetic.shadow.audit import ShadowOptions, shadow_attack

    adult = pd.read_csv(SAMPLE).sample(900, random_state=6).reset_index(drop=True)
    train, population = adult.iloc[:300], adult.iloc[300:]
    options = ShadowOptions(n_targets=3, n_shadows=8, rows=600, permutations=99)
    here = shadow_attack(train, population, generator="bootstrap", options=options, seed=1)
    there = shadow_attack(train, population, generator="bootstrap", options=options, seed=1, client=client)
    np.testing.assert_array_equal(here.scores.shadow, there.scores.shadow)
    np.testing.assert_array_equal(here.scores.p_value, there.scores.p_value)
    assert {k: v for k, v in here.to_json().items() if k != "timing"} == {
        k: v for k, v in there.to_json().items() if k != "timing"}
