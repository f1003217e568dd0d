"""The learned attacker (audit_core.synthetic.learned): its level on independent data, its power, its cost in a 20k audit.

Three parts, each printed as a table:

1. **Level** (``--populations``, default 400): each population draws four disjoint sets of ``--n`` rows from
   ``sample_data/adult.csv`` (32,561 UCI Adult rows): members, non-members, auxiliary records and a "synthetic"
   table that no member shaped. The attacker's out-of-fold scores must then be at chance: the 95 % interval of its
   TPR at 1 % FPR should cover 1 % in about 95 % of populations, and the release decision's rule for one attack
   (``common.decision.attack_finding``: elevated when the interval's lower end passes 2 %, high past 3 %) should
   almost never fire. Printed: mean AUC, coverage, the rate of elevated and high findings, each with a 95 % Wilson
   interval.
2. **Power** (``--power``): leaks no rule was written for, planted into a Gaussian-copula table fitted on the
   members (``sample_data/adult``: 2,000 training rows, 1,000 audited members and non-members): a noise-masked copy of
   the training table, near-copies with k fields changed, copies of one group, copies of the rarest records.
   Printed: AUC and TPR at 1 % FPR with its interval, against the best of the audit's other attacks on distances.
3. **Cost** (``--cost``): a 20,000-record audit (10,000 members, 10,000 non-members, 10,000 auxiliary records, a
   10,000-row synthetic table) with and without the learned attacker: the attacker's share of the audit's time.

Usage: python benchmarks/bench_learned.py [--populations 400] [--n 1000] [--power] [--cost] [--seed 0]
"""

from __future__ import annotations

import os

os.environ.setdefault("NUMBA_NUM_THREADS", "2")

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from audit_core.common.alignment import align_tables  # noqa: E402
from audit_core.common.column_types import infer_column_types  # noqa: E402
from audit_core.common.decision import attack_finding  # noqa: E402
from audit_core.common.roc import evaluate_attack  # noqa: E402
from audit_core.synthetic.attack_set import stratified_folds  # noqa: E402
from audit_core.synthetic.audit import AuditOptions, audit_synthetic  # noqa: E402
from audit_core.synthetic.encoding import encode_for_gower  # noqa: E402
from audit_core.synthetic.learned import learned_attack  # noqa: E402
from audit_core.synthetic.scoring import density_ratio_score  # noqa: E402
from audit_core.synthetic.shadow.targets import isolation  # noqa: E402

ADULT = HERE.parent / "sample_data" / "adult.csv"
SAMPLE = HERE.parent / "sample_data" / "adult"


def _wilson(k: int, n: int) -> str:
    """``k / n`` with its 95 % Wilson interval."""
    z, p = 1.959964, k / n
    centre, half = (p + z * z / (2 * n)) / (1 + z * z / n), z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return f"{p:.3f} [{max(0.0, centre - half):.3f}, {min(1.0, centre + half):.3f}]"


def _learned(members: pd.DataFrame, non_members: pd.DataFrame, auxiliary: pd.DataFrame, synthetic: pd.DataFrame,
             *, seed: int):  # fmt: skip
    types = infer_column_types(members)
    aligned = align_tables({"m": members, "n": non_members, "a": auxiliary, "s": synthetic}, types=types)
    records = pd.concat([aligned["m"], aligned["n"]], ignore_index=True)
    member = np.r_[np.ones(len(members), bool), np.zeros(len(non_members), bool)]
    encoding = encode_for_gower([aligned["m"], aligned["n"], aligned["a"]], types=aligned.types)
    folds = stratified_folds(member, 5, np.random.default_rng(seed))
    out = learned_attack(records, member, aligned["s"], aligned["a"], types=aligned.types, encoding=encoding,
                         folds=folds, seed=seed)  # fmt: skip
    return evaluate_attack(out.score, member), member, records, aligned, encoding


def level(populations: int, n: int, seed: int) -> None:
    real = pd.read_csv(ADULT)
    aucs, covered, elevated, high = [], 0, 0, 0
    start = time.perf_counter()
    for p in range(populations):
        rows = np.random.default_rng([seed, p]).permutation(len(real))[: 4 * n]
        parts = [real.iloc[rows[i * n : (i + 1) * n]].reset_index(drop=True) for i in range(4)]
        metrics = _learned(*parts, seed=p)[0]
        point = metrics.tpr_at_fpr["0.01"]
        level_p = attack_finding("learned", point, auc=metrics.auc).level
        aucs.append(metrics.auc)
        covered += point.ci_low <= 0.01 <= point.ci_high
        elevated += level_p != "low"
        high += level_p == "high"
        if (p + 1) % 50 == 0:
            print(f"  {p + 1} populations, {time.perf_counter() - start:.0f} s", flush=True)
    print(f"\nLevel: {populations} populations of {n} members, {n} non-members, {n} auxiliary, {n} independent "
          "synthetic rows (UCI Adult)")  # fmt: skip
    print("| quantity | measured (95 % Wilson interval) | should be |")
    print("|---|---|---|")
    print(f"| mean AUC (sd) | {np.mean(aucs):.4f} ({np.std(aucs):.4f}) | 0.5 |")
    print(f"| TPR interval at 1 % FPR covers 1 % | {_wilson(covered, populations)} | about 0.95 |")
    print(f"| finding elevated or high | {_wilson(elevated, populations)} | at most 0.025 (lower end of a 95 % interval "
          "past 2 x the FPR) |")  # fmt: skip
    print(f"| finding high | {_wilson(high, populations)} | at most 0.025 |")
    print(f"({(time.perf_counter() - start) / populations:.2f} s per population)")


def _change(rows: pd.DataFrame, rng: np.random.Generator, k: int, pool: pd.DataFrame) -> pd.DataFrame:
    out = rows.copy().reset_index(drop=True)
    numeric = {c for c in out.columns if pd.api.types.is_numeric_dtype(out[c])}
    for i in range(len(out)):
        for col in rng.choice(out.columns, size=k, replace=False):
            if col in numeric:
                out.loc[i, col] = out.loc[i, col] + round(0.03 * float(pool[col].max() - pool[col].min()) * rng.choice([-1, 1]))
            else:
                out.loc[i, col] = rng.choice(pool[col].unique())
    return out


def power(seed: int) -> None:
    train, holdout, aux = (pd.read_csv(SAMPLE / f"{n}.csv") for n in ("train", "holdout", "auxiliary"))
    gc = pd.read_csv(SAMPLE / "synthetic_gaussian_copula.csv")
    rng = np.random.default_rng(seed)
    masked = train.copy()
    for col in masked.columns:
        if pd.api.types.is_numeric_dtype(masked[col]):
            masked[col] = masked[col] + rng.normal(0, 0.05 * masked[col].std(), len(masked)).round()
        else:
            swap = rng.random(len(masked)) < 0.05
            masked.loc[swap, col] = rng.choice(train[col].unique(), int(swap.sum()))
    types = infer_column_types(train)
    enc = encode_for_gower([train, holdout], types=types)
    rarest = train.iloc[np.argsort(-isolation(enc.transform(train), enc.transform(holdout)))]

    def planted(rows: pd.DataFrame) -> pd.DataFrame:
        return pd.concat([gc.iloc[len(rows):], rows], ignore_index=True).sample(frac=1.0, random_state=seed)

    cases = {"Gaussian copula, nothing planted": gc, "noise-masked training table (5 % sd, 5 % categories)": masked}
    for k in (1, 2, 3, 4):
        for share in (0.05, 0.10):
            cases[f"near-copies, {k} fields changed, {share:.0%} of training rows"] = planted(
                _change(train.sample(round(share * len(train)), random_state=seed), rng, k, train))
    for group in ("Masters", "Doctorate"):
        cases[f"copies of one group (education {group})"] = planted(train[train["education"] == group])
    for share in (0.02, 0.04):
        cases[f"copies of the {share:.0%} rarest training records"] = planted(rarest.iloc[: round(share * len(train))])
    print(f"\nPower: 1,000 members and 1,000 non-members of sample_data/adult, seed {seed}")
    print("| leak | learned AUC | learned TPR at 1 % FPR [95 %] | best distance attack TPR at 1 % FPR | finding |")
    print("|---|---|---|---|---|")
    for name, synthetic in cases.items():
        m, member, records, aligned, encoding = _learned(train.iloc[:1000], holdout.iloc[:1000], aux.iloc[:1000],
                                                         synthetic, seed=seed)  # fmt: skip
        from audit_core.synthetic.distance import nearest_gower

        d = nearest_gower(encoding.transform(records), encoding.transform(aligned["s"])).distance
        to_aux = nearest_gower(encoding.transform(records), encoding.transform(aligned["a"])).distance
        others = [evaluate_attack(-d, member), evaluate_attack(density_ratio_score(d, to_aux), member)]
        best = max(o.tpr_at_fpr["0.01"].tpr for o in others)
        p = m.tpr_at_fpr["0.01"]
        print(f"| {name} | {m.auc:.3f} | {p.tpr:.3f} [{p.ci_low:.3f}, {p.ci_high:.3f}] | {best:.3f} | "
              f"{attack_finding('learned', p, auc=m.auc).level} |", flush=True)  # fmt: skip


def cost(seed: int) -> None:
    real = pd.read_csv(ADULT)
    rows = np.random.default_rng(seed).permutation(len(real))
    n = 10_000
    train, holdout, aux = (real.iloc[rows[i * n : (i + 1) * n]].reset_index(drop=True) for i in range(3))
    synthetic = real.iloc[rows[3 * n :]].sample(n, replace=True, random_state=seed).reset_index(drop=True)
    audit_synthetic(train.iloc[:300], holdout.iloc[:300], synthetic.iloc[:300], aux.iloc[:300], seed=seed)  # compile
    times = {}
    for learned in (False, True):
        start = time.perf_counter()
        audit_synthetic(train, holdout, synthetic, aux, seed=seed, options=AuditOptions(learned=learned))
        times[learned] = time.perf_counter() - start
    print("\nCost: a 20,000-record audit (10,000 members and non-members, 10,000 auxiliary, 10,000 synthetic rows)")
    print(f"| audit | seconds |\n|---|---|\n| without the learned attacker | {times[False]:.1f} |\n"
          f"| with it | {times[True]:.1f} |\n| its share | {(times[True] - times[False]) / times[True]:.0%} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--populations", type=int, default=400)
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--power", action="store_true")
    ap.add_argument("--cost", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    if args.cost:
        cost(args.seed)
    if args.power:
        power(args.seed)
    if args.populations:
        level(args.populations, args.n, args.seed)


if __name__ == "__main__":
    main()
