"""Fabricated members (audit_core.fabrication): attack throughput and the default run time.

1. Attack throughput: MFA batched over all non-members at once (what the dashboard
   does) against the same attack run image by image (the naive peer), in image-steps
   per second, on the device ``pick_device()`` chooses.
2. The default audit (8x8 digits, 150 members / 300 non-members, a small CNN and 4
   reference models trained as one batch, MFA at 32/255 with T = 40, the epsilon grid
   4..64/255 in one batch, MFA / I-PGD / I-CW at T = 5 and 40, the adaptive attacker):
   wall time and the regime numbers (MFD AUC vs epsilon, AR-MIA AUCs, MFA vs I-PGD).
   ``--threads 2`` shows what torch's second intra-op thread does (see threads.CPU_THREADS).
3. ``--mnist``: the same on the 5k MNIST subset (784 pixels), slower.

Usage: python benchmarks/bench_fabrication.py [--threads 2] [--mnist] [--seed 0]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from audit_core.fabrication import threads  # noqa: E402
from audit_core.fabrication.attacks import fabricate  # noqa: E402
from audit_core.fabrication.audit import fabrication_audit  # noqa: E402
from audit_core.fabrication.bundled import load_bundled  # noqa: E402
from audit_core.fabrication.setup import DEFAULT_SIZES, prepare_audit  # noqa: E402


def throughput(seed: int) -> None:
    n_mem, n_non = DEFAULT_SIZES["digits"]
    data = load_bundled("digits", seed=seed, n_members=n_mem, n_non_members=n_non)
    setup = prepare_audit(data, n_reference_models=0, seed=seed)
    x, y = data.images[data.non_members], data.labels[data.non_members]
    steps = 20
    t = time.perf_counter()
    fabricate(setup.model, x, y, epsilon=32 / 255, steps=steps)
    batched = time.perf_counter() - t
    k = 30  # image by image on a sample, extrapolated
    t = time.perf_counter()
    for i in range(k):
        fabricate(setup.model, x[i : i + 1], y[i : i + 1], epsilon=32 / 255, steps=steps)
    loop = (time.perf_counter() - t) / k * len(x)
    n = len(x) * steps
    print(f"MFA, {len(x)} digits x T={steps}: batched {batched:.2f} s ({n / batched:,.0f} image-steps/s); "
          f"image by image {loop:.2f} s (extrapolated from {k}); speed-up x{loop / batched:.1f}")


def default_run(dataset: str, seed: int) -> None:
    t = time.perf_counter()
    r = fabrication_audit(dataset=dataset, seed=seed)
    wall = time.perf_counter() - t
    m = r.mia("loss")
    print(f"\n{dataset}: default audit in {wall:.1f} s (epsilon {r.epsilon * 255:.0f}/255, T = {r.steps})")
    print(f"  model accuracy: members {r.model_accuracy['members']:.3f}, non-members {r.model_accuracy['non_members']:.3f}")
    for name in r.mias:
        s = r.mia(name)
        print(f"  {name:5s} AUC clean {s.auc_clean:.3f}  vs fabricated {s.auc_fabricated:.3f}")
    print(f"  median confidence {r.confidence.medians()}")
    print(f"  median grad norm  {r.norms.medians()}  g_ref {r.g_ref:.3g}")
    print(f"  regime map (MFA, T = {r.steps}):")
    print("    eps/255  MIA-fab  MFD   AR(l=1)-fab  AR(l=1)-clean  conf-fab")
    for p, a in zip(r.regime, r.regime_at(lam=1.0), strict=True):
        print(f"    {p.epsilon * 255:6.0f}   {p.mia_auc_fabricated:.3f}   {p.mfd_auc:.3f}  {a.auc_fabricated:.3f}"
              f"        {a.auc_clean:.3f}          {p.median_conf_fabricated:.4f}")
    print(f"  AR-MIA by lambda at {r.epsilon * 255:.0f}/255 (vanilla clean {m.auc_clean:.3f}, fabricated "
          f"{m.auc_fabricated:.3f}):")
    for p in r.by_lambda():
        print(f"    lambda {p.lam:6g}: clean {p.auc_clean:.3f}  fabricated {p.auc_fabricated:.3f}")
    print("  attacks (vanilla MIA AUC on fabricated, lower = fooled more):")
    for t_ in sorted({p.steps for p in r.budgets}):
        for e in sorted({p.epsilon for p in r.budgets}):
            row = {p.attack: p.mia_auc_fabricated for p in r.budgets if p.steps == t_ and p.epsilon == e}
            print(f"    T={t_:3d} eps {e * 255:4.0f}/255: " + "  ".join(f"{a} {v:.4f}" for a, v in row.items()))
    print("  adaptive attacker (beta: MIA AUC fabricated / MFD AUC):")
    for p in r.adaptive:
        print(f"    beta {p.beta:5g}: {p.mia_auc_fabricated:.3f} / {p.mfd_auc:.3f}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=None,
                    help="torch intra-op threads of the audit (default: threads.CPU_THREADS, 1)")
    ap.add_argument("--mnist", action="store_true", help="also run the default audit on the 5k MNIST subset")
    ap.add_argument("--seed", type=int, default=0)
    args, _ = ap.parse_known_args()
    if args.threads:
        threads.CPU_THREADS = args.threads
    print(f"torch {torch.__version__}, {threads.CPU_THREADS} thread(s) in the audit, numpy {np.__version__}")
    throughput(args.seed)
    default_run("digits", args.seed)
    if args.mnist:
        default_run("mnist", args.seed)
