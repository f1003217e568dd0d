"""How much of the accountant's epsilon one run proves: black-box vs white-box, Steinke vs f-DP (issue 31, item 2).

For claimed epsilon 1, 2, 4 and 8 (delta 1e-5) and m = 1,000 canaries, one DP-SGD run through
Opacus on the page's default setting (5,000 rows of Adult, MLP, outlier canaries, 50 epochs)
carries both the record canaries (black-box: the final model's confidence in each canary's
label) and 1,000 Dirac gradient canaries (white-box: scored from every step's weights, by the
sum statistic and by the likelihood-ratio statistic, both read from the same run). Each
bound is shown as a share of Opacus' RDP accountant's epsilon, with Steinke et al.'s bound
and the f-DP bound against the run's own curve (the reported one), beside the literature's
one-run figures. ``--simulated`` repeats the white-box part on simulated canary statistics
(Binomial steps + N(0, sigma^2 T), what the mechanism gives an interference-free canary) for
more seeds.

Usage: python benchmarks/bench_dp_whitebox.py [--seeds 2] [--simulated 10] [--epsilons 1,2,4,8]
Timings: wall-clock, on this machine (shared cores: say so when quoting them).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from audit_core.dp.bounds import audit_bounds  # noqa: E402
from audit_core.dp.canaries import draw_canaries  # noqa: E402
from audit_core.dp.tradeoff import dp_sgd_family  # noqa: E402
from audit_core.dp.training import train  # noqa: E402
from audit_core.dp.whitebox import canary_scores, draw_gradient_canaries  # noqa: E402
from audit_core.fabrication.threads import cpu_threads  # noqa: E402
from audit_core.lira.design import prepare_design  # noqa: E402

DELTA = 1e-5
M = 1000
LITERATURE = [
    "Keinan, Shenfeld and Ligett (2025), DP-SGD white-box, Dirac canaries, m = 1,000, T = 100, q = 0.1, eps = 2: "
    "Steinke's bound 0.49 (25 %) at 100 fixed guesses; 0.62 (31 %) with 8 canaries per coordinate",
    "Mahloujifar et al. (2024), Table 1, idealized Gaussian mechanism (expected correct guesses, many canaries): "
    "Steinke 0.61-4.99, f-DP 0.82-8.16 at theoretical 0.92-9.99: shares Steinke 50-67 %, f-DP 80-89 %",
    "Steinke, Nasr and Jagielski (2023) and Mahloujifar et al. (2024) white-box CIFAR-10 (m = 5,000): figures only "
    "(no table); not quoted here",
]


def _row(name: str, b, accountant: float) -> str:
    return (f"    {name:<28} Steinke {b.steinke.epsilon:5.2f} ({b.steinke.epsilon / accountant:4.0%})   "
            f"f-DP {b.fdp.epsilon:5.2f} ({b.fdp.epsilon / accountant:4.0%})")  # fmt: skip


def real_runs(epsilons: list[float], seeds: int) -> dict[tuple[float, str], list[float]]:
    df = pd.read_csv(ROOT / "sample_data" / "adult.csv")
    shares: dict[tuple[float, str], list[float]] = {}
    for eps in epsilons:
        for seed in range(seeds):
            data = df.sample(n=5000, random_state=seed).reset_index(drop=True)
            design = prepare_design(data, target="income_per_year")
            X, y = design.X, design.y
            c = draw_canaries(y, m=M, kind="outlier", n_classes=design.n_classes, seed=seed, n_features=X.shape[1])
            g = draw_gradient_canaries(M, n_classes=design.n_classes, seed=seed)
            Xc = c.features(X)
            Xt, yt = np.vstack([X[c.base], Xc[c.included]]), np.concatenate([y[c.base], c.y[c.included]])
            start = time.perf_counter()
            with cpu_threads(1):
                model = train(Xt, yt, n_classes=design.n_classes, model="mlp", epochs=50, dp=(eps, DELTA),
                              gradient_canaries=g, seed=seed)  # fmt: skip
            family = dp_sgd_family(sample_rate=model.sample_rate, steps=model.steps, delta=DELTA)
            acc = model.accountant_epsilon
            print(f"eps {eps:g}, seed {seed}: noise {model.noise_multiplier:.3f}, q {model.sample_rate:.4f}, "
                  f"T {model.steps}, accountant {acc:.3f} ({time.perf_counter() - start:.0f} s training)")  # fmt: skip
            black = audit_bounds(model.scores(Xc, c.y), c.included, delta=DELTA, mechanism=family, seed=seed)
            print(_row("black-box (record canaries)", black, acc))
            shares.setdefault((eps, "black-box"), []).append(black.epsilon / acc)
            for statistic in ("sum", "likelihood-ratio"):
                scores = canary_scores(model.gradient_canary_steps, statistic=statistic,
                                       noise_multiplier=model.noise_multiplier, sample_rate=model.sample_rate)  # fmt: skip
                white = audit_bounds(scores, g.included, delta=DELTA, mechanism=family, seed=seed)
                print(_row(f"white-box ({statistic})", white, acc))
                shares.setdefault((eps, f"white-box {statistic}"), []).append(white.epsilon / acc)
                shares.setdefault((eps, f"white-box {statistic} Steinke"), []).append(white.steinke.epsilon / acc)
    return shares


def simulated(epsilons: list[float], seeds: int, q: float, steps: int) -> None:
    from opacus.accountants.utils import get_noise_multiplier

    print(f"\nsimulated interference-free gradient canaries, q = {q:.4f}, T = {steps}, {seeds} seeds (mean share of the "
          "accountant's epsilon, f-DP reported / Steinke)")  # fmt: skip
    family = dp_sgd_family(sample_rate=q, steps=steps, delta=DELTA)
    for eps in epsilons:
        sigma = get_noise_multiplier(target_epsilon=eps, target_delta=DELTA, sample_rate=q, steps=steps, accountant="rdp")
        out = {"sum": [], "likelihood-ratio": []}
        for seed in range(seeds):
            rng = np.random.default_rng([seed, int(eps * 10)])
            inc = rng.random(M) < 0.5
            x = ((rng.random((steps, M)) < q) & inc) + sigma * rng.normal(size=(steps, M))
            for statistic in out:
                b = audit_bounds(canary_scores(x, statistic=statistic, noise_multiplier=sigma, sample_rate=q), inc,
                                 delta=DELTA, mechanism=family, seed=seed)  # fmt: skip
                out[statistic].append((b.fdp.epsilon / eps, b.steinke.epsilon / eps))
        text = "   ".join(f"{k}: {np.mean([a for a, _ in v]):.0%} / {np.mean([b for _, b in v]):.0%}" for k, v in out.items())
        print(f"  eps {eps:g} (noise {sigma:.3f}): {text}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--simulated", type=int, default=10)
    parser.add_argument("--epsilons", default="1,2,4,8")
    parser.add_argument("--skip-real", action="store_true")
    args = parser.parse_args()
    epsilons = [float(e) for e in args.epsilons.split(",")]
    if not args.skip_real:
        shares = real_runs(epsilons, args.seeds)
        print("\nmean share of the accountant's epsilon (reported: f-DP against the run's curve)")
        kinds = ["black-box", "white-box sum", "white-box sum Steinke", "white-box likelihood-ratio",
                 "white-box likelihood-ratio Steinke"]  # fmt: skip
        print(f"  {'eps':>4}" + "".join(f"{k:>36}" for k in kinds))
        for eps in epsilons:
            print(f"  {eps:>4g}" + "".join(f"{np.mean(shares[(eps, k)]):>36.0%}" for k in kinds))
    if args.simulated:
        simulated(epsilons, args.simulated, q=250 / 3500, steps=700)
    print("\nliterature (one run):")
    for line in LITERATURE:
        print("  - " + line)


if __name__ == "__main__":
    main()
