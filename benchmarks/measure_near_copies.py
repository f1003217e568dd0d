"""The near-copy catalogue's power on the bundled samples, and false alarms on independent synthetic data (issue 28).

Figures, not timings. For each kind of :data:`audit_core.synthetic.planted.NEAR_COPY_KINDS`, each
share of the synthetic rows (0.5 %, 1 %, 2 %) and each bundled table (``sample_data/adult``,
``sample_data/german_credit``: the honest GaussianCopula table with training rows planted into it),
``--runs`` seeded runs of the whole tabular audit; the power is the share of runs whose release
decision is at least ``elevated``. ``--null`` runs audit independent synthetic tables (rows of the
bundled full table, ``sample_data/<table>.csv``, that are not in the training, holdout or auxiliary
split) and print how often the decision is at least ``elevated`` and how often the linkage scan alone
rejects. ``--root DIR`` audits with another checkout's ``audit_core`` (``git archive REV | tar -x -C DIR``)
for a before / after; the planting always comes from this checkout.

Usage: python benchmarks/measure_near_copies.py [--tables adult german_credit] [--kinds changed_3 ...]
       [--shares 0.005 0.01 0.02] [--runs 20] [--null 0] [--root DIR]
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]


def _load_planting():
    spec = importlib.util.spec_from_file_location("_planted", ROOT / "audit_core" / "synthetic" / "planted.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules["_planted"] = module
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def _tables(name: str) -> dict[str, pd.DataFrame]:
    folder = ROOT / "sample_data" / name
    return {n: pd.read_csv(folder / f"{n}.csv") for n in ("train", "holdout", "auxiliary", "synthetic_gaussian_copula")}


def _independent(name: str, t: dict[str, pd.DataFrame], rng: np.random.Generator) -> tuple[pd.DataFrame, str]:
    """As many rows as the synthetic table has, independent of the training rows, and how they were drawn.

    Rows of the full bundled table that are in none of the splits when there are enough (Adult);
    otherwise (German Credit: every row is in a split) each column drawn on its own from the
    auxiliary table.
    """
    full = pd.read_csv(ROOT / "sample_data" / f"{name}.csv")
    used = pd.concat([t["train"], t["holdout"], t["auxiliary"]], ignore_index=True)
    key = lambda f: pd.util.hash_pandas_object(f.astype(str), index=False)  # noqa: E731
    rest = full[~key(full).isin(set(key(used)))].reset_index(drop=True)
    n = len(t["synthetic_gaussian_copula"])
    if len(rest) >= n:
        return rest.iloc[rng.choice(len(rest), size=n, replace=False)].reset_index(drop=True), "unused real rows"
    aux = t["auxiliary"]
    frame = pd.DataFrame({c: aux[c].to_numpy()[rng.integers(0, len(aux), n)] for c in aux.columns})
    return frame, "each column drawn on its own from the auxiliary table"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", nargs="+", default=["adult", "german_credit"])
    parser.add_argument("--kinds", nargs="+", default=None)
    parser.add_argument("--shares", nargs="+", type=float, default=[0.005, 0.01, 0.02])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--null", type=int, default=0, help="independent synthetic tables audited per bundled table")
    parser.add_argument("--root", type=Path, default=None, help="audit with this checkout's audit_core")
    args = parser.parse_args()
    sys.path.insert(0, str(args.root or ROOT))
    planted = _load_planting()
    from audit_core.synthetic.audit import audit_synthetic
    from audit_core.synthetic.verdict import decision

    kinds = args.kinds or list(planted.NEAR_COPY_KINDS)
    print(f"audit_core from {args.root or ROOT}; {args.runs} runs per cell; power = share of runs at least 'elevated'")
    for name in args.tables:
        t = _tables(name)
        header = " | ".join(f"{100 * s:g} %" for s in args.shares)
        sizes = ", ".join(f"{len(t[k])} {k.split('_')[0]}" for k in t)
        print(f"\n{name}: {sizes} rows\n\n| kind | {header} |\n|---|" + "---|" * len(args.shares))
        for kind in kinds:
            cells = []
            for share in args.shares:
                hits, start = 0, time.time()
                for run in range(args.runs):
                    syn = planted.plant_near_copies(t["synthetic_gaussian_copula"], t["train"], kind=kind, share=share,
                                                    seed=run).synthetic  # fmt: skip
                    audit = audit_synthetic(t["train"], t["holdout"], syn, t["auxiliary"], seed=run)
                    hits += decision(audit).level != "low"
                cells.append(f"{hits}/{args.runs}")
                print(f"  ({kind}, {100 * share:g} %: {hits}/{args.runs}, {time.time() - start:.0f} s)", file=sys.stderr)
            print(f"| {kind} | " + " | ".join(cells) + " |", flush=True)
        if args.null:
            rng = np.random.default_rng(12345)
            elevated = linkage = 0
            how = ""
            for run in range(args.null):
                syn, how = _independent(name, t, rng)
                audit = audit_synthetic(t["train"], t["holdout"], syn, t["auxiliary"], seed=run)
                elevated += decision(audit).level != "low"
                linkage += bool(audit.linkage.excess)
            print(f"\n{name}, independent synthetic tables ({how}, {args.null} runs): decision at least elevated "
                  f"{elevated} ({100 * elevated / args.null:.1f} %), linkage scan alone {linkage} "
                  f"({100 * linkage / args.null:.1f} %)")


if __name__ == "__main__":
    main()
