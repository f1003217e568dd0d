"""Validity of the DP claim check's one-run bounds by simulation (issue 31, item 5).

1. Mechanisms of known epsilon, m = 100, 1,000 and 10,000 canaries, ``--runs`` runs each (>= 500):
   randomized response at eps = 1 (exactly eps-DP: a bare claim, Steinke's bound reported; the f-DP
   bound against the eps-DP curve beside it) and the Gaussian mechanism with eps = 2 at delta 1e-5
   (its claim names the mechanism: the f-DP bound against the Gaussian curve reported). Target: the
   reported bound exceeds the true epsilon in at most 5 % of the runs.
2. DP-SGD trained here (Opacus) at the claimed epsilon, ``--dp-runs`` seeded runs (50) of German
   Credit with white-box gradient canaries: the reported black-box and white-box bounds never above
   the accountant's epsilon; and the white-box run's time against the same run without it (target:
   at most 2x).

Usage: python benchmarks/bench_dp_validity.py [--runs 500] [--dp-runs 50] [--sizes 100,1000,10000] [--skip-dp-sgd]
Timings are wall-clock on this machine (shared cores: say so when quoting them).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from audit_core.dp.bounds import audit_bounds  # noqa: E402
from audit_core.dp.tradeoff import gaussian_epsilon, gaussian_family  # noqa: E402

RR_EPSILON = 1.0
GAUSS_EPSILON = 2.0
DELTA = 1e-5


def _mu_for(eps: float, delta: float) -> float:
    lo, hi = 1e-3, 20.0
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if gaussian_epsilon(mid, delta) < eps else (lo, mid)
    return lo


def mechanisms(sizes: list[int], runs: int) -> None:
    mu = _mu_for(GAUSS_EPSILON, DELTA)
    print(f"1. mechanisms of known epsilon, {runs} runs each (reported bound > true epsilon: target <= 5 %)")
    print(f"{'mechanism':<34}{'m':>7}{'exceed (reported)':>19}{'(Steinke, f-DP)':>17}{'mean reported':>15}"
          f"{'mean Steinke':>14}{'mean f-DP':>11}{'f-DP / Steinke':>16}{'s/run':>7}")  # fmt: skip
    for name, truth in ((f"randomized response eps={RR_EPSILON:g}", RR_EPSILON),
                        (f"Gaussian mu={mu:.3f} (eps={GAUSS_EPSILON:g})", GAUSS_EPSILON)):  # fmt: skip
        for m in sizes:
            rng = np.random.default_rng([m, int(truth * 10)])
            reported, steinke, fdp = np.empty(runs), np.empty(runs), np.empty(runs)
            start = time.perf_counter()
            for k in range(runs):
                included = rng.random(m) < 0.5
                if name.startswith("randomized"):
                    truthful = rng.random(m) < 1 / (1 + math.exp(-RR_EPSILON))
                    scores = np.where(truthful, included, ~included).astype(float)
                    b = audit_bounds(scores, included, delta=0.0, seed=k)  # a bare claim: Steinke's bound is reported
                else:
                    scores = rng.normal(size=m) + mu * included
                    b = audit_bounds(scores, included, delta=DELTA, mechanism=gaussian_family(DELTA), seed=k)
                reported[k], steinke[k], fdp[k] = b.epsilon, b.steinke.epsilon, b.fdp.epsilon
            per_run = (time.perf_counter() - start) / runs
            ratio = fdp.mean() / steinke.mean() if steinke.mean() > 0 else float("nan")
            share = (reported > truth).mean()
            both = f"{(steinke > truth).mean():.1%}, {(fdp > truth).mean():.1%}"
            print(f"{name:<34}{m:>7,}{share:>18.1%}{' ' if share <= 0.05 else '!'}{both:>17}{reported.mean():>15.3f}"
                  f"{steinke.mean():>14.3f}{fdp.mean():>11.3f}{ratio:>16.2f}{per_run:>7.2f}")  # fmt: skip


def dp_sgd(runs: int) -> None:
    from audit_core.dp.audit import run_dp_audit

    german = pd.read_csv(ROOT / "sample_data" / "german_credit.csv")
    print(f"\n2. DP-SGD trained here: German Credit, MLP, 400 mislabelled canaries + 400 gradient canaries, claim "
          f"eps = 2, {runs} seeded runs")  # fmt: skip
    worst_black = worst_white = 0.0
    above = 0
    times: list[tuple[float, float]] = []
    for seed in range(runs):
        kw = {"target": "credit", "epsilon": 2.0, "delta": DELTA, "m": 400, "kind": "mislabelled", "model": "mlp",
              "epochs": 30, "seed": seed}  # fmt: skip
        t0 = time.perf_counter()
        r = run_dp_audit(german, white_box=True, **kw)
        t1 = time.perf_counter()
        if seed < 5:  # the same run without gradient canaries, for the time ratio
            run_dp_audit(german, white_box=False, **kw)
            times.append((t1 - t0, time.perf_counter() - t1))
        black, white = r.dp.bound.epsilon, r.white_box.bound.epsilon  # type: ignore[union-attr]
        worst_black, worst_white = max(worst_black, black / r.accountant_epsilon), max(worst_white, white / r.accountant_epsilon)
        above += (black > r.accountant_epsilon) + (white > r.accountant_epsilon)
    print(f"  reported bounds above the accountant's epsilon: {above} of {2 * runs} (target 0); largest share of it: "
          f"black-box {worst_black:.2f}, white-box {worst_white:.2f}")  # fmt: skip
    white_s, black_s = np.mean([t[0] for t in times]), np.mean([t[1] for t in times])
    print(f"  time: with white-box {white_s:.1f} s, without {black_s:.1f} s: {white_s / black_s:.2f}x (target <= 2x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=500)
    parser.add_argument("--dp-runs", type=int, default=50)
    parser.add_argument("--sizes", default="100,1000,10000")
    parser.add_argument("--skip-dp-sgd", action="store_true")
    args = parser.parse_args()
    mechanisms([int(s) for s in args.sizes.split(",")], args.runs)
    if not args.skip_dp_sgd:
        dp_sgd(args.dp_runs)


if __name__ == "__main__":
    main()
