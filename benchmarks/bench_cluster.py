"""The heavy steps on a Dask cluster (audit_core.common.cluster) against the in-process engine, same run.

1. Equal results: Adult-shaped mixed data with 5 % missing values in four columns,
   distributed (one reference block, then several) vs ``nearest_gower``: index
   mismatches (must be 0) and the largest distance difference (must be <= 1e-7).
2. Overhead on one machine: a local cluster of 2 single-threaded workers vs the
   in-process numba engine (its 2 threads) at ``--overhead`` rows x rows; the ratio
   (target: within 1.3x). The cluster's start-up is timed apart.
3. Scale: ``--scale`` query rows x ``--scale`` synthetic rows read from partitioned
   Parquet on the local cluster (``nearest_gower_parquet``), the time and the peak
   resident memory of each worker and of the client (target: none above 2 GB).
4. LiRA: M logistic models as one batch vs in batches on the workers; score difference.
5. Generator comparison on ``--gen-rows`` Adult rows: wall time with 1 worker vs 4.
6. The whole tabular audit on the cluster (``audit_synthetic(..., client=...)``): ``--audit`` training
   rows, a tenth of that as holdout and as auxiliary rows, ``--audit`` synthetic rows (Adult-shaped,
   5 % missing in four columns); the nearest-neighbour searches and the record-linkage scan run as
   tasks on the workers. Wall time per phase, and the peak resident memory of each worker and of the
   client.

Usage: python benchmarks/bench_cluster.py [--equal 20000] [--overhead 200000] [--scale 1000000]
       [--gen-rows 5000] [--generators gaussian_copula bayesian_network bootstrap] [--audit 1000000] [--skip ...]
The machine's load average is printed with every timing: on a shared machine, compare ratios.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_distance import CATEGORICAL, NUMERIC, TYPES, _source, make_tables  # noqa: E402

from audit_core.common.cluster import cluster_client  # noqa: E402
from audit_core.synthetic.distance import nearest_gower, warm_up  # noqa: E402
from audit_core.synthetic.distributed_distance import nearest_gower_on, nearest_gower_parquet  # noqa: E402
from audit_core.synthetic.encoding import encode_for_gower  # noqa: E402


def _load() -> str:
    return "load {:.1f} {:.1f} {:.1f}".format(*os.getloadavg())


def _with_missing(df: pd.DataFrame, seed: int, share: float = 0.05) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    out = df.copy()
    for col in (NUMERIC[0], NUMERIC[4], CATEGORICAL[0], CATEGORICAL[3]):
        out.loc[rng.random(len(out)) < share, col] = np.nan if col in NUMERIC else None
    return out


def _tables(n: int, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    real, syn = make_tables(n, n, source=_source(None), seed=seed)
    return _with_missing(real, seed + 1), _with_missing(syn, seed + 2)


def equal_results(client, n: int) -> None:
    real, syn = _tables(n, 0)
    enc = encode_for_gower([real], types=TYPES)
    q, r = enc.transform(real), enc.transform(syn)
    ref = nearest_gower(q, r)
    for label, kwargs in (("one reference block", {}), ("4 reference blocks", {"reference_block": -(-n // 4)})):
        nn = nearest_gower_on(q, r, client=client, **kwargs)
        print(f"  {n:,} x {n:,}, {label}: index mismatches {int((nn.index != ref.index).sum())}, "
              f"max |distance difference| {np.abs(nn.distance - ref.distance).max():.2e}")  # fmt: skip


def overhead(client, n: int) -> None:
    real, syn = _tables(n, 3)
    enc = encode_for_gower([real], types=TYPES)
    q, r = enc.transform(real), enc.transform(syn)
    warm_up()
    nearest_gower_on(q.rows(np.arange(2000)), r.rows(np.arange(2000)), client=client)  # workers compile/load the kernel
    t0, l0 = time.perf_counter(), _load()
    ref = nearest_gower(q, r)
    t_in = time.perf_counter() - t0
    t0, l1 = time.perf_counter(), _load()
    nn = nearest_gower_on(q, r, client=client)
    t_dask = time.perf_counter() - t0
    same = bool((nn.index == ref.index).all())
    print(f"  {n:,} x {n:,}: in-process {t_in:.1f} s ({l0}), 2-worker cluster {t_dask:.1f} s ({l1}); "
          f"ratio {t_dask / t_in:.2f}x; same indices: {same}")  # fmt: skip


def _rss_peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def scale(client, n: int, parts: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        for name, seed in (("real", 10), ("synthetic", 20)):
            os.makedirs(f"{tmp}/{name}")
            step = -(-n // parts)
            for k in range(parts):  # written a partition at a time: never the whole table in memory
                rows = min(step, n - k * step)
                real, syn = _tables(rows, seed + k)
                (real if name == "real" else syn).to_parquet(f"{tmp}/{name}/part{k:03d}.parquet")
        print(f"  wrote {n:,} + {n:,} rows as {parts} + {parts} Parquet partitions in {time.perf_counter() - t0:.0f} s")
        client_before = _rss_peak_mb()
        t0, l0 = time.perf_counter(), _load()
        nn = nearest_gower_parquet(client, f"{tmp}/real", f"{tmp}/synthetic/*.parquet", real=[f"{tmp}/real"], types=TYPES)
        seconds = time.perf_counter() - t0
        workers = client.run(_rss_peak_mb)
        print(f"  {n:,} x {n:,} from Parquet on 2 workers: {seconds:.0f} s ({l0} at start, {_load()} at end); "
              f"{len(nn.distance):,} distances, mean {nn.distance.mean():.4f}")  # fmt: skip
        print(f"  peak RSS: client {max(client_before, _rss_peak_mb()):.0f} MB; workers "
              + ", ".join(f"{v:.0f} MB" for v in workers.values()))


def lira(client, rows: int, models: int) -> None:
    from audit_core.lira.design import prepare_design
    from audit_core.lira.keep_matrix import balanced_keep_matrix
    from audit_core.lira.training import train_batched, train_models

    adult = pd.read_csv(ROOT / "sample_data" / "adult" / "train.csv").sample(rows, random_state=0, replace=True)
    design = prepare_design(adult.reset_index(drop=True), target="income_per_year")
    keep = balanced_keep_matrix(len(design.y), n_models=models, seed=0)
    for kind in ("logistic", "mlp"):
        t0 = time.perf_counter()
        full = train_batched(design.X, design.y, keep, kind=kind, seed=0, device="cpu")
        t_full = time.perf_counter() - t0
        t0 = time.perf_counter()
        split = train_models(design.X, design.y, keep, kind=kind, seed=0, device="cpu", client=client)
        t_split = time.perf_counter() - t0
        diff = np.abs(full.scores(design.X, design.y) - split.scores(design.X, design.y)).max()
        print(f"  {models} {kind} models on {rows:,} rows: one batch {t_full:.1f} s, 2 batches on 2 workers {t_split:.1f} s "
              f"({_load()}); max |score difference| {diff:.2e}")  # fmt: skip


def generators(rows: int, names: list[str]) -> None:
    from audit_core.synthetic.comparison import ComparisonPlan, compare_generators

    adult = _source(None).sample(rows, random_state=0).reset_index(drop=True)  # sample_data/adult.csv, 32,561 rows
    for workers in (1, 4):
        with cluster_client(workers=workers) as client:
            t0, l0 = time.perf_counter(), _load()
            result = compare_generators(adult, ComparisonPlan(tuple(names)), seed=0, client=client)
            seconds = time.perf_counter() - t0
        fits = ", ".join(f"{r.name} {r.fit_seconds:.0f} s" if r.ok else f"{r.name} failed ({r.error})" for r in result.runs)
        print(f"  {len(names)} generators on {rows:,} rows, {workers} worker(s): {seconds:.0f} s ({l0}); fits: {fits}")


def whole_audit(client, n: int) -> None:
    from audit_core.synthetic.audit import audit_synthetic

    fifth = max(n // 10, 100)
    t0 = time.perf_counter()
    real, syn = _tables(n + 2 * fifth, 30)
    syn = syn.iloc[:n].reset_index(drop=True)
    train, holdout, aux = real.iloc[:n], real.iloc[n : n + fifth], real.iloc[n + fifth :]
    print(f"  tables: {len(train):,} training, {len(holdout):,} holdout, {len(aux):,} auxiliary, {len(syn):,} synthetic "
          f"rows (made in {time.perf_counter() - t0:.0f} s)")  # fmt: skip
    spent: dict[str, float] = {}
    state = {"phase": "", "since": time.perf_counter()}

    def progress(_fraction: float, message: str) -> None:
        phase = message.split(":")[0].split(" (")[0]
        phase = "record-linkage scan" if phase.startswith(("best-matching", "record-linkage")) else phase
        phase = "nearest-neighbour search" if phase.startswith("nearest") else phase
        if phase != state["phase"]:
            now = time.perf_counter()
            spent[str(state["phase"])] = spent.get(str(state["phase"]), 0.0) + now - float(state["since"])
            state.update(phase=phase, since=now)

    t0, l0 = time.perf_counter(), _load()
    audit = audit_synthetic(train, holdout, syn, aux, seed=0, client=client, progress=progress)
    seconds = time.perf_counter() - t0
    progress(1.0, "end")
    workers = client.run(_rss_peak_mb)
    print(f"  whole audit on 2 workers: {seconds:.0f} s ({l0} at start, {_load()} at end); linkage p = "
          f"{audit.linkage.p_value:.3f} over {audit.linkage.n_members:,} members and {audit.linkage.n_non_members:,} "
          "non-members")  # fmt: skip
    for name, sec in spent.items():
        if name and sec >= 1:
            print(f"    {name:<40} {sec:7.0f} s")
    print(f"  peak RSS: client {_rss_peak_mb():.0f} MB; workers " + ", ".join(f"{v:.0f} MB" for v in workers.values()))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--equal", type=int, default=20_000)
    parser.add_argument("--overhead", type=int, default=200_000)
    parser.add_argument("--scale", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, default=10)
    parser.add_argument("--lira-rows", type=int, default=5000)
    parser.add_argument("--lira-models", type=int, default=64)
    parser.add_argument("--gen-rows", type=int, default=5000)
    parser.add_argument("--generators", nargs="+", default=["gaussian_copula", "bayesian_network", "bootstrap", "population"])
    parser.add_argument("--audit", type=int, default=1_000_000)
    parser.add_argument("--skip", nargs="*", default=[],
                        choices=["equal", "overhead", "scale", "lira", "generators", "audit"])  # fmt: skip
    args = parser.parse_args(argv)
    print(f"{os.cpu_count()} CPUs, {_load()}")
    t0 = time.perf_counter()
    with cluster_client(workers=2) as client:
        print(f"local cluster of 2 single-threaded workers started in {time.perf_counter() - t0:.1f} s")
        if "equal" not in args.skip:
            print("1. equal results")
            equal_results(client, args.equal)
        if "overhead" not in args.skip:
            print("2. overhead")
            overhead(client, args.overhead)
        if "scale" not in args.skip:
            print("3. scale from partitioned Parquet")
            scale(client, args.scale, args.partitions)
        if "lira" not in args.skip:
            print("4. LiRA models in batches")
            lira(client, args.lira_rows, args.lira_models)
        if "audit" not in args.skip:
            print("6. the whole tabular audit on the cluster")
            whole_audit(client, args.audit)
    if "generators" not in args.skip:
        print("5. generator comparison")
        generators(args.gen_rows, args.generators)


if __name__ == "__main__":
    main()
