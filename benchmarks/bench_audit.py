"""The whole tabular audit at 20k records: its phases, and the CLI against the `gower` package's nearest-neighbour step.

Data: ``sample_data/adult.csv`` (32,561 rows, 14 columns) split at random into 10,000 training,
10,000 holdout and 10,000 auxiliary rows; the synthetic table is 20,000 training rows drawn with
replacement, ages moved by up to 2 years and hours by up to 3 (a leaky generator's output). The
audit attacks 20,000 records (10,000 members, 10,000 non-members) and the 10,000 auxiliary records.

1. The phases of ``audit_synthetic`` in this process, read off its progress messages: input checks
   and copy counts, encoding, nearest-neighbour search (the synthetic rows, then the auxiliary rows
   for the density ratio), the record-linkage scan, KDE and attacks; wall time and the process's
   CPU time (on a machine shared with other jobs the CPU shares are the steadier figure), and the
   linkage scan's share of the audit (target: under 25 %). The learned attacker is a phase of its own
   when the audit has one. The numba kernels are warmed up first (a compiled kernel is cached on disk
   after the first run).
2. The whole CLI in a fresh process (``python -m audit_core tabular ... --json``), imports included.
3. The peer: ``gower.gower_matrix`` (PyPI `gower`) for the nearest synthetic row of the same 30,000
   records (attack and auxiliary) in blocks of ``--gower-block`` rows, row minima taken, given the
   data frames as they are (what a user passes) and given float arrays with the categories as float
   codes (its fastest input); ``--gower-rows`` of them (a sixth of that with data frames) are timed
   and the time scaled to all 30,000 (its cost is exactly linear in the rows: no pruning), or all of
   them with ``--gower-rows 30000``.

Usage: python benchmarks/bench_audit.py [--gower-rows 3000] [--gower-block 1000] [--skip-gower] [--skip-cli]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from audit_core.common.column_types import infer_column_types  # noqa: E402
from audit_core.synthetic.audit import audit_synthetic  # noqa: E402

PHASES = (
    ("checking the tables", "input checks, copy counts"),
    ("encoding the tables", "encoding"),
    ("nearest synthetic record", "nearest-neighbour search"),
    ("nearest auxiliary record", "nearest-neighbour search"),
    ("record-linkage scan", "record-linkage scan"),
    ("best-matching row", "record-linkage scan"),
    ("fitting the densities", "KDE and attacks"),
    ("the learned attacker", "learned attacker"),  # when the audit has one (branch attackers)
)


def tables(seed: int = 0) -> dict[str, pd.DataFrame]:
    """Training, holdout, auxiliary (10,000 rows each) and a 20,000-row leaky synthetic table."""
    src = pd.read_csv(ROOT / "sample_data" / "adult.csv")
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(src))
    train, holdout, aux = (src.iloc[order[i * 10_000 : (i + 1) * 10_000]].reset_index(drop=True) for i in range(3))
    syn = train.iloc[rng.integers(0, len(train), 20_000)].reset_index(drop=True).copy()
    syn["age"] = (syn["age"] + rng.integers(-2, 3, len(syn))).clip(17, 90)
    syn["hours_per_week"] = (syn["hours_per_week"] + rng.integers(-3, 4, len(syn))).clip(1, 99)
    return {"train": train, "holdout": holdout, "auxiliary": aux, "synthetic": syn}


def phases(t: dict[str, pd.DataFrame]) -> tuple[dict[str, tuple[float, float]], float, float]:
    """Seconds per phase of one in-process audit (wall, CPU of the process), and the totals."""
    spent: dict[str, tuple[float, float]] = {}
    state: dict[str, object] = {"phase": "start", "since": (time.perf_counter(), time.process_time())}

    def progress(_fraction: float, message: str) -> None:
        now = (time.perf_counter(), time.process_time())
        phase = next((name for prefix, name in PHASES if message.startswith(prefix)), state["phase"])
        if message == "done":
            phase = "end"
        if phase != state["phase"]:
            since = state["since"]
            old = spent.get(str(state["phase"]), (0.0, 0.0))
            spent[str(state["phase"])] = (old[0] + now[0] - since[0], old[1] + now[1] - since[1])  # type: ignore[index]
            state.update(phase=phase, since=now)

    start = (time.perf_counter(), time.process_time())
    audit_synthetic(t["train"], t["holdout"], t["synthetic"], t["auxiliary"], seed=0, progress=progress)
    spent.pop("start", None)
    return spent, time.perf_counter() - start[0], time.process_time() - start[1]


def cli(t: dict[str, pd.DataFrame]) -> tuple[float, float]:
    """Wall and CPU seconds (user + system, all its threads) of the whole CLI audit in a fresh process."""
    with tempfile.TemporaryDirectory() as tmp:
        paths = {}
        for name, frame in t.items():
            paths[name] = Path(tmp) / f"{name}.csv"
            frame.to_csv(paths[name], index=False)
        cmd = [sys.executable, "-m", "audit_core", "--quiet", "tabular", "--train", str(paths["train"]),
               "--holdout", str(paths["holdout"]), "--auxiliary", str(paths["auxiliary"]),
               "--synthetic", str(paths["synthetic"]), "--json", str(Path(tmp) / "out.json")]  # fmt: skip
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
        elapsed = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode not in (0, 3):
            raise SystemExit(f"the CLI failed: {done.stderr.strip()}")
    return elapsed, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def gower_nn(t: dict[str, pd.DataFrame], rows: int, block: int, *, codes: bool) -> tuple[float, float, int]:
    """Wall and CPU seconds of `gower`'s nearest synthetic row for ``rows`` of the 30,000 attacked records.

    ``codes``: the tables as float arrays with categories as float codes (the package's fastest
    input); else the data frames as they are (what a user passes).
    """
    import gower

    types = infer_column_types(t["train"])
    queries = pd.concat([t["train"], t["holdout"], t["auxiliary"]], ignore_index=True)[list(types.columns)]
    syn = t["synthetic"][list(types.columns)]
    x, y = queries.iloc[:rows], syn
    kwargs = {}
    if codes:
        levels = {c: {v: k for k, v in enumerate(sorted(set(queries[c].astype(str)) | set(syn[c].astype(str))))}
                  for c in types.categorical}  # fmt: skip

        def as_array(df: pd.DataFrame) -> np.ndarray:
            out = df.copy()
            for c in types.categorical:
                out[c] = out[c].astype(str).map(levels[c]).astype(float)
            return out.to_numpy(dtype=np.float64)

        x, y = as_array(x), as_array(y)
        kwargs["cat_features"] = np.array([c in types.categorical for c in types.columns])
    start, cpu = time.perf_counter(), time.process_time()
    for s in range(0, len(x), block):
        part = x[s : s + block]
        if len(part) == len(y):  # gower forces a symmetric matrix when the row counts are equal
            part = part[:-1]
        gower.gower_matrix(part, y, **kwargs).min(axis=1)
    return time.perf_counter() - start, time.process_time() - cpu, len(x)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gower-rows", type=int, default=3000)
    parser.add_argument("--gower-block", type=int, default=1000)
    parser.add_argument("--skip-gower", action="store_true")
    parser.add_argument("--skip-cli", action="store_true")
    args = parser.parse_args()
    import numba

    print(f"cores: {os.cpu_count()}, numba threads: {numba.get_num_threads()}, load average: "
          + ", ".join(f"{v:.1f}" for v in os.getloadavg()))  # fmt: skip
    t = tables()
    print("tables: " + ", ".join(f"{k} {len(v):,}" for k, v in t.items()))
    small = {k: v.iloc[:300] for k, v in t.items()}
    audit_synthetic(small["train"], small["holdout"], small["synthetic"], small["auxiliary"], seed=0)  # warm the kernels
    spent, total, cpu = phases(t)
    print(f"\nin-process audit: {total:.2f} s wall, {cpu:.2f} s CPU (both cores)")
    print(f"  {'phase':<28} {'wall':>8} {'share':>7} {'CPU':>8} {'share':>7}")
    for name, (sec, sec_cpu) in spent.items():
        print(f"  {name:<28} {sec:7.2f}s {100 * sec / total:6.1f}% {sec_cpu:7.2f}s {100 * sec_cpu / cpu:6.1f}%")
    scan = spent.get("record-linkage scan", (0.0, 0.0))
    print(f"linkage scan's share of the audit: {100 * scan[0] / total:.1f} % wall, {100 * scan[1] / cpu:.1f} % CPU "
          "(target: under 25 %)")  # fmt: skip
    whole, whole_cpu = (None, None) if args.skip_cli else cli(t)
    if whole is not None:
        print(f"\nwhole CLI (fresh process, imports included): {whole:.2f} s wall, {whole_cpu:.2f} s CPU")
    if not args.skip_gower:
        for codes, rows in ((False, max(1, args.gower_rows // 6)), (True, args.gower_rows)):
            sec, sec_cpu, n = gower_nn(t, rows, args.gower_block, codes=codes)
            scale = 30_000 / n
            how = "float codes (its fastest input)" if codes else "the data frames as they are"
            print(f"\ngower.gower_matrix, {how}: nearest synthetic row of {n:,} of the 30,000 records in {sec:.1f} s "
                  f"({sec_cpu:.1f} s CPU) -> {sec * scale:.0f} s ({sec_cpu * scale:.0f} s CPU) for all"
                  + (" (measured)" if n >= 30_000 else " (scaled linearly)"))  # fmt: skip
            if whole is not None and whole_cpu:
                print(f"  whole CLI vs gower's nearest-neighbour step alone: {sec * scale / whole:.0f}x (wall), "
                      f"{sec_cpu * scale / whole_cpu:.0f}x (CPU)")  # fmt: skip
            print(f"  in-process audit vs gower's nearest-neighbour step alone: {sec * scale / total:.0f}x (wall), "
                  f"{sec_cpu * scale / cpu:.0f}x (CPU)")  # fmt: skip


if __name__ == "__main__":
    main()
