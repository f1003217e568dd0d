"""Leaks the synthetic-table audit must not call safe (issues 9.3 and 10): figures, not timings.

Runs ``audit_synthetic`` on

* the bundled samples (Adult and German credit: leaky vs Gaussian copula), and
* UCI Adult from ``--adult`` (the full table, once with ``fnlwgt`` dropped as in the samples, about 4.5 %
  of the records then have a natural exact duplicate, and once with it kept, none do) with
  planted leaks: an independent synthetic table (real rows never used elsewhere), one with
  10 verbatim training copies out of 3,000, a 2,000-per-class split with 100 copies, near-copies
  (a training row with age +-1 or hours +-2) at 1 % and 5 % of the synthetic rows, jittered
  copies (every numeric column nudged), and the degenerate inputs of issue 10 (one file as
  train, holdout and synthetic; holdout = train).

For each case it prints: TPR at 1 % FPR of every attack (true-distribution KDE, realistic KDE,
DOMIAS-style ratio, the raw distance as a score), the true attack's AUC, the share of
non-members with a realistic-attack P(member | d) >= 0.9, how far the posteriors stray from
the prior beyond every observed distance ("tail"), and the verdict's first sentence.

Usage: python benchmarks/measure_synthetic_leaks.py [--adult ../shared/data/adult.csv] [--only NAME]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from audit_core.common.errors import InputError
from audit_core.common.roc import tpr_at_fpr
from audit_core.synthetic.audit import audit_synthetic
from audit_core.synthetic.verdict import verdict

SAMPLES = Path(__file__).resolve().parents[1] / "sample_data"


def _tail(post, d_max: float) -> float:
    grid = np.linspace(min(d_max + 0.05, 0.99), 1.0, 50)
    return float(np.max(np.abs(post.p_member(grid) - post.prior)))


def summarise(name: str, tables: dict[str, pd.DataFrame], *, seed: int = 0) -> None:
    try:
        audit = audit_synthetic(tables["train"], tables["holdout"], tables["synthetic"], tables.get("auxiliary"), seed=seed)
    except InputError as exc:
        print(f"{name:<28} refused: {exc}")
        return
    recs = audit.records
    member = recs["is_member"].to_numpy(bool)
    d = recs["distance"].to_numpy()
    tprs = {k: audit.attacks[k].tpr_at_fpr["0.01"].tpr for k in ("true_distribution", "realistic", "domias")}
    tprs["distance"] = tpr_at_fpr(-d, member, 0.01).tpr
    p_real = recs["p_member_realistic"].to_numpy()
    d_max = float(max(d.max(), audit.aux_distances.max()))
    tail = max(_tail(audit.posterior_true, d_max), _tail(audit.posterior_realistic, d_max))
    text = verdict(audit)
    head = text.split(".")[0]
    print(
        f"{name:<28} TPR@1%: true {tprs['true_distribution']:.3f} real {tprs['realistic']:.3f} "
        f"domias {tprs['domias']:.3f} dist {tprs['distance']:.3f} | AUC {audit.attacks['true_distribution'].auc:.3f} | "
        f"non-mem P_real>=0.9 {np.mean(p_real[~member] >= 0.9):.2f} (mem {np.mean(p_real[member] >= 0.9):.2f}) | "
        f"tail |P-prior| {tail:.2f} | {head}"
    )


def _samples() -> dict[str, dict[str, pd.DataFrame]]:
    out = {}
    for folder in ("adult", "german_credit"):
        base = {n: pd.read_csv(SAMPLES / folder / f"{n}.csv") for n in ("train", "holdout", "auxiliary")}
        for syn in ("synthetic_leaky", "synthetic_gaussian_copula"):
            out[f"sample {folder} {syn.split('_')[1]}"] = {**base, "synthetic": pd.read_csv(SAMPLES / folder / f"{syn}.csv")}
    return out


def _nudge(rows: pd.DataFrame, rng: np.random.Generator, *, jitter_all: bool = False) -> pd.DataFrame:
    out = rows.copy().reset_index(drop=True)
    if jitter_all:
        for col, step in (("age", 1), ("hours-per-week", 2), ("education-num", 1)):
            out[col] = out[col] + rng.choice([-step, step], size=len(out))
        return out
    pick_age = rng.random(len(out)) < 0.5
    sign = rng.choice([-1, 1], size=len(out))
    out.loc[pick_age, "age"] = out.loc[pick_age, "age"] + sign[pick_age]
    out.loc[~pick_age, "hours-per-week"] = out.loc[~pick_age, "hours-per-week"] + 2 * sign[~pick_age]
    return out


def _adult(path: Path, *, keep_weight: bool) -> dict[str, dict[str, pd.DataFrame]]:
    full = pd.read_csv(path)
    if not keep_weight:
        full = full.drop(columns=["fnlwgt"])
    tag = "adult+fnlwgt" if keep_weight else "adult"
    rng = np.random.default_rng(20261201)
    pop = full.iloc[rng.permutation(len(full))].reset_index(drop=True)
    n = 3000
    train, holdout, aux, indep = (pop.iloc[i * n : (i + 1) * n].reset_index(drop=True) for i in range(4))
    base = {"train": train, "holdout": holdout, "auxiliary": aux}

    def planted(rows: pd.DataFrame) -> pd.DataFrame:
        return pd.concat([indep.iloc[: n - len(rows)], rows], ignore_index=True)

    out = {"independent": {**base, "synthetic": indep}}
    out["10 exact copies"] = {**base, "synthetic": planted(train.sample(10, random_state=1))}
    m = 2000
    small = {k: v.iloc[:m] for k, v in base.items()}
    copies = small["train"].sample(100, random_state=2)
    out["2000/class, 100 copies"] = {**small, "synthetic": pd.concat([indep.iloc[: m - 100], copies], ignore_index=True)}
    for share in (0.01, 0.05):
        k = round(share * n)
        out[f"near-copies {share:.0%}"] = {**base, "synthetic": planted(_nudge(train.sample(k, random_state=3), rng))}
    out["jittered copies 5%"] = {**base, "synthetic": planted(_nudge(train.sample(150, random_state=4), rng, jitter_all=True))}
    out["one file x3"] = {"train": train, "holdout": train, "synthetic": train}
    out["holdout = train"] = {"train": train, "holdout": train, "synthetic": indep, "auxiliary": aux}
    return {f"{tag} {k}": v for k, v in out.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--adult", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data" / "adult.csv")
    parser.add_argument("--only", default=None, help="run only cases whose name contains this text")
    args = parser.parse_args()
    cases = _samples()
    if args.adult.is_file():
        cases.update(_adult(args.adult, keep_weight=False))
        cases.update(_adult(args.adult, keep_weight=True))
    else:
        print(f"({args.adult} not found: bundled samples only)")
    for name, tables in cases.items():
        if args.only and args.only not in name:
            continue
        summarise(name, tables)


if __name__ == "__main__":
    main()
