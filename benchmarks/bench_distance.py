"""Nearest-neighbour Gower distance (audit_core.synthetic.distance) against the `gower` package, same run.

docs/methods.md §1 step 1 needs, for every attack record, the Gower distance to its
nearest synthetic record. audit_core scans the synthetic table in blocks with a
compiled numba kernel (running minimum, bounded memory); the `gower` package
(PyPI, array API ``gower.gower_matrix``) builds the whole n x m matrix row by row
with numpy, and we take the row minima.

Data: shaped like UCI Adult, 14 columns (8 numeric, 6 categorical), resampled from
``sample_data/adult.csv`` with jittered numbers (``--adult PATH`` reads another
copy with the same columns); without the file, random mixed data of the same
shape. The "synthetic" table is a second resample, its numbers clipped to the real
range so that `gower` (which takes ranges over both tables) computes the same
distances as we do; the largest difference is printed as a check. `gower` gets
float arrays (categories as integer codes: its fastest input) and one extra
reference row, because with equal row counts it forces the matrix symmetric.

Then the target size: 100k x 100k x 14 columns, with the time, the column
comparisons per second and the peak extra memory (tracemalloc for numpy
allocations, peak RSS growth sampled from /proc).

Usage: python benchmarks/bench_distance.py [--sizes 5000 20000] [--big 100000]
       [--skip-gower] [--random] [--adult PATH]
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from audit_core.common.column_types import ColumnTypes  # noqa: E402
from audit_core.synthetic.distance import nearest_gower, pairwise_gower, warm_up  # noqa: E402
from audit_core.synthetic.encoding import encode_for_gower  # noqa: E402

NUMERIC = ("age", "education_num", "capital_gain", "capital_loss", "hours_per_week", "fnlwgt", "years_left", "weekly_load")
CATEGORICAL = ("workclass", "education", "marital_status", "occupation", "relationship", "race")
TYPES = ColumnTypes(numeric=NUMERIC, categorical=CATEGORICAL)


def _source(adult: Path | None) -> pd.DataFrame | None:
    path = adult if adult is not None else ROOT / "sample_data" / "adult.csv"
    if not path.exists():
        return None
    frame = pd.read_csv(path, skipinitialspace=True, na_values=["?"])
    frame.columns = [c.replace("-", "_") for c in frame.columns]
    return frame


def make_tables(n_real: int, n_synth: int, *, source: pd.DataFrame | None, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Two Adult-shaped tables: 'real' and 'synthetic' (numbers clipped to the real range)."""
    rng = np.random.default_rng(seed)

    def one(n: int) -> pd.DataFrame:
        if source is not None:
            base = source.iloc[rng.integers(0, len(source), n)].reset_index(drop=True)
            out = pd.DataFrame({c: base[c].to_numpy(dtype=np.float64) for c in NUMERIC[:5]})
            out["age"] += rng.normal(0, 2, n)
            out["hours_per_week"] += rng.normal(0, 3, n)
            for c in CATEGORICAL:
                out[c] = base[c].fillna("missing").astype(str).to_numpy()
        else:
            out = pd.DataFrame(
                {
                    "age": rng.uniform(17, 90, n),
                    "education_num": rng.integers(1, 17, n).astype(float),
                    "capital_gain": np.where(rng.random(n) < 0.1, rng.lognormal(8, 1, n), 0.0),
                    "capital_loss": np.where(rng.random(n) < 0.05, rng.lognormal(7, 0.5, n), 0.0),
                    "hours_per_week": rng.normal(40, 12, n).clip(1, 99),
                }
            )
            for k, c in enumerate(CATEGORICAL):
                out[c] = rng.choice([f"{c}_{v}" for v in range(3 + 3 * k)], n)
        out["fnlwgt"] = rng.lognormal(12, 0.5, n)
        out["years_left"] = (65 - out["age"]) + rng.normal(0, 1, n)
        out["weekly_load"] = out["hours_per_week"] * out["education_num"]
        return out[list(NUMERIC + CATEGORICAL)]

    real, synthetic = one(n_real), one(n_synth)
    for c in NUMERIC:
        synthetic[c] = synthetic[c].clip(real[c].min(), real[c].max())
    return real, synthetic


class PeakRss:
    """Peak resident memory growth during a block, sampled every 20 ms from /proc/self/statm."""

    def __init__(self) -> None:
        self.page = os.sysconf("SC_PAGE_SIZE")
        self.peak = 0
        self._stop = threading.Event()

    def _rss(self) -> int:
        with open("/proc/self/statm") as handle:
            return int(handle.read().split()[1]) * self.page

    def _watch(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self._rss())
            time.sleep(0.02)

    def __enter__(self) -> PeakRss:
        self.start = self._rss()
        self.peak = self.start
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self._rss())

    @property
    def extra_mb(self) -> float:
        return (self.peak - self.start) / 2**20


def run_ours(real: pd.DataFrame, synthetic: pd.DataFrame) -> tuple[float, np.ndarray]:
    start = time.perf_counter()
    enc = encode_for_gower([real], types=TYPES)
    nn = nearest_gower(enc.transform(real), enc.transform(synthetic), backend="numba")
    return time.perf_counter() - start, nn.distance


def run_gower(real: pd.DataFrame, synthetic: pd.DataFrame) -> tuple[float, np.ndarray]:
    import gower

    codes = {c: {v: k for k, v in enumerate(sorted(set(real[c]) | set(synthetic[c])))} for c in CATEGORICAL}

    def as_array(df: pd.DataFrame) -> np.ndarray:
        out = df.copy()
        for c in CATEGORICAL:
            out[c] = out[c].map(codes[c]).astype(float)
        return out.to_numpy(dtype=np.float64)

    x, y = as_array(real), as_array(synthetic)
    assert x.shape[0] != y.shape[0], "gower forces a symmetric matrix when the row counts are equal"
    cat = np.array([c in CATEGORICAL for c in real.columns])
    start = time.perf_counter()
    matrix = gower.gower_matrix(x, y, cat_features=cat)
    best = matrix.min(axis=1)
    elapsed = time.perf_counter() - start
    return elapsed, best.astype(np.float64)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[5000, 20000])
    parser.add_argument("--big", type=int, default=100_000, help="rows of each table for the target run (0 skips it)")
    parser.add_argument("--skip-gower", action="store_true")
    parser.add_argument("--adult", type=Path, default=None, help="an Adult CSV to resample (default sample_data/adult.csv)")
    parser.add_argument("--random", action="store_true", help="random mixed data for the gower comparison too")
    parser.add_argument("--seed", type=int, default=0)
    args, _ = parser.parse_known_args(argv)

    import numba

    source = _source(args.adult)
    print(
        f"data: {'resampled ' + str(args.adult or 'sample_data/adult.csv') if source is not None else 'random'}"
        f"{' (random for the gower comparison)' if args.random else ''}, "
        f"{len(NUMERIC)} numeric + {len(CATEGORICAL)} categorical columns"
    )
    print(
        f"cores: {os.cpu_count()}, numba threads: {numba.get_num_threads()}, load average: "
        + ", ".join(f"{v:.1f}" for v in os.getloadavg())
    )
    start = time.perf_counter()
    warm_up()
    print(f"warm-up (compile or load the cached kernel): {time.perf_counter() - start:.2f} s")

    print("\nnearest-neighbour Gower, n real x (n + 1) synthetic rows")
    print(f"{'n':>8} {'ours s':>9} {'gower s':>9} {'ratio':>8} {'max |diff|':>11}")
    for n in args.sizes:
        real, synthetic = make_tables(n, n + 1, source=None if args.random else source, seed=args.seed)
        t_ours, d_ours = run_ours(real, synthetic)
        if args.skip_gower:
            print(f"{n:>8} {t_ours:>9.2f} {'-':>9} {'-':>8} {'-':>11}")
            continue
        t_gower, d_gower = run_gower(real, synthetic)
        diff = float(np.max(np.abs(d_ours - d_gower)))
        print(f"{n:>8} {t_ours:>9.2f} {t_gower:>9.2f} {t_gower / t_ours:>7.0f}x {diff:>11.1e}")

    # the pruned scan against the dense matrix, on random data (where blocks are least alike)
    real, synthetic = make_tables(3000, 3001, source=None, seed=args.seed + 2)
    enc = encode_for_gower([real], types=TYPES)
    q, r = enc.transform(real), enc.transform(synthetic)
    dense = pairwise_gower(q, r).min(axis=1)
    diff = float(np.max(np.abs(nearest_gower(q, r, backend="numba").distance - dense)))
    print(f"check: blocked scan vs dense matrix, 3,000 random rows: max |diff| = {diff:.1e}")

    if args.big:
        kinds = [("Adult-shaped", source), ("random mixed", None)] if source is not None else [("random mixed", None)]
        for label, kind_source in kinds:
            _big(args.big, label=label, source=kind_source, seed=args.seed + 1)


def _big(n: int, *, label: str, source: pd.DataFrame | None, seed: int) -> None:
    real, synthetic = make_tables(n, n, source=source, seed=seed)
    enc = encode_for_gower([real], types=TYPES)
    query, reference = enc.transform(real), enc.transform(synthetic)
    tracemalloc.start()
    with PeakRss() as rss:
        start = time.perf_counter()
        nn = nearest_gower(query, reference, backend="numba")
        elapsed = time.perf_counter() - start
    _, traced_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    comparisons = n * n * len(TYPES.columns)
    print(f"\ntarget, {label} data: {n:,} x {n:,} x {len(TYPES.columns)} columns (encoded tables given)")
    print(
        f"  time {elapsed:.1f} s = {comparisons / elapsed / 1e9:.2f} x 1e9 column comparisons/s "
        "(n x m x p over the time; pruned blocks count as compared)"
    )
    print(f"  peak extra memory: {traced_peak / 2**20:.1f} MiB (tracemalloc), {rss.extra_mb:.1f} MiB (RSS growth)")
    print(
        f"  median nearest distance {np.median(nn.distance):.4f}; load average now "
        + ", ".join(f"{v:.1f}" for v in os.getloadavg())
    )


if __name__ == "__main__":
    main()
