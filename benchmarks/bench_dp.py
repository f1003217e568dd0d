"""The DP claim check (audit_core.dp) end to end: m = 1,000 canaries on a 20,000-row table.

One DP-SGD run through Opacus (per-sample clipping, Poisson sampling, noise from the RDP
accountant) plus the same model without DP, then the one-run audit of both. There is no
peer tool to compare with (no other library runs this audit end to end); the printed wall
and CPU times are the audit's own.

Data: 20,000 rows of ``sample_data/adult.csv`` (seeded sample, target ``income_per_year``).
Target: under 60 s on 2 cores for the whole audit (printed as a check). Training runs on
the CPU on one thread (batches of 256 rows of a linear model or a 64-unit MLP are too small
for a GPU or a second thread to pay).

Usage: python benchmarks/bench_dp.py [--model logistic|mlp] [--epochs 10] [--rows 20000] [--canaries 1000]
       [--kind population|mislabelled] [--epsilon 1]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from audit_core.dp.audit import run_dp_audit  # noqa: E402

TARGET_SECONDS = 60.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="logistic", choices=("logistic", "mlp"))
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--canaries", type=int, default=1000)
    parser.add_argument("--kind", default="population", choices=("population", "mislabelled"))
    parser.add_argument("--epsilon", type=float, default=1.0)
    args = parser.parse_args()
    df = pd.read_csv(ROOT / "sample_data" / "adult.csv").sample(args.rows, random_state=0).reset_index(drop=True)
    start, cpu = time.perf_counter(), time.process_time()
    r = run_dp_audit(df, target="income_per_year", epsilon=args.epsilon, delta=1e-5, m=args.canaries, kind=args.kind,
                     model=args.model, epochs=args.epochs, seed=0)  # fmt: skip
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    print(f"dp-audit: {args.rows:,} rows, m = {args.canaries:,} {args.kind} canaries, {args.model}, {args.epochs} "
          f"epochs ({r.steps} DP-SGD steps, noise multiplier {r.noise_multiplier:.3f})")  # fmt: skip
    print(f"  wall {wall:.1f} s, CPU {cpu:.1f} s; target < {TARGET_SECONDS:.0f} s: "
          f"{'OK' if wall < TARGET_SECONDS else 'MISSED'}")  # fmt: skip
    print(f"  claimed epsilon {r.epsilon:g}, accountant {r.accountant_epsilon:.3f}; audited >= {r.dp.bound.epsilon:.3f} "
          f"({r.dp.bound.correct}/{r.dp.bound.r}); no DP >= {r.non_dp.bound.epsilon:.3f}; ceiling {r.ceiling:.3f}")  # fmt: skip
    print(f"  test accuracy: DP-SGD {r.dp.test_accuracy:.3f}, no DP {r.non_dp.test_accuracy:.3f}")


if __name__ == "__main__":
    main()
