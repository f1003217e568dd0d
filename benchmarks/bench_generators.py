"""Fit time of every generator at its default settings on 5k and 20k rows of Adult.

The defaults in ``audit_core.synthetic.generators.registry.GENERATORS`` are chosen so that a fit on
5,000 rows finishes in under two minutes on two CPU cores; this script checks that
and shows how each generator scales to 20,000 rows. Each fit runs once (seed 0)
on rows drawn from ``sample_data/adult.csv``, followed by sampling as many rows.
CTGAN, TVAE and CopulaGAN use the GPU when one is present (the device is printed).

Usage: python benchmarks/bench_generators.py [--sizes 5000,20000] [--generators ctgan,tvae]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import pandas as pd
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from audit_core.common.column_types import infer_column_types
from audit_core.common.runtime import pick_device
from audit_core.synthetic.generators.registry import GENERATORS, make_generator
from audit_core.synthetic.split import split_real_table

SAMPLE = Path(__file__).resolve().parents[1] / "sample_data" / "adult.csv"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="5000,20000")
    parser.add_argument("--generators", default=",".join(GENERATORS))
    args, _ = parser.parse_known_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    names = [n for n in args.generators.split(",") if n]
    real = pd.read_csv(SAMPLE)
    print(f"device: {pick_device()}, torch threads: {torch.get_num_threads()}, table: {SAMPLE.name} ({len(real):,} rows)")
    print("| generator | rows | fit (s) | sample (s) | settings |")
    print("|---|---:|---:|---:|---|")
    for n in sizes:
        # train = n rows; reserve = the rest (the population reference draws from it)
        split = split_real_table(real, fractions={"train": n / len(real), "holdout": 20 / len(real) + 1e-6,
                                                  "reserve": 1 - (n + 25) / len(real)}, seed=0)
        types = infer_column_types(split.train)
        for name in names:
            gen = make_generator(name)
            start = time.perf_counter()
            gen.fit(split.train, types=types, seed=0, reserve=split.reserve)
            fit_s = time.perf_counter() - start
            start = time.perf_counter()
            gen.sample(n, seed=0)
            sample_s = time.perf_counter() - start
            settings = ", ".join(f"{k}={v}" for k, v in gen.params.items())
            print(f"| {name} | {n:,} | {fit_s:.1f} | {sample_s:.1f} | {settings} |", flush=True)


if __name__ == "__main__":
    main()
