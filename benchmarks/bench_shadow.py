"""The shadow-generator attack (audit_core.synthetic.shadow): calibration, outliers against inliers, TAPAS's Groundhog.

On UCI Adult (``sample_data/adult.csv``): a ``--train``-row training table and a 4,000-row population drawn at random;
the 20 most isolated training records (Meeus et al.) and the 20 least isolated are the targets, each put into half of
``--shadow-models`` shadow sets by a fair coin per pair of sets. Each generator is fitted on every shadow set and
sampled once (the same seeds for every attack), then:

- **ours**: the per-target Gaussian test on the Groundhog / TAPAS target features, cross-fitted over 8 folds, AUC per
  target and the permutation test with Holm over each group of 20 targets;
- **TAPAS's Groundhog** (with ``--tapas PYTHON --tapas-src DIR``: ``benchmarks/compare_tapas.py`` run by the python of
  a throwaway venv with TAPAS's checkout on PYTHONPATH): ``FeatureBasedSetClassifier(Naive + Hist + Corr set
  features, RandomForestClassifier(100))`` per target, on the same outputs, labels and folds.

Printed per generator: seconds per shadow fit (fit and sample), mean and best AUC of the outliers and of the inliers
with the number told apart, TAPAS's AUC on the outliers and the seconds each attack spent on the outputs (the fits are
shared). The known answers: ``bootstrap`` with 5x as many output rows as training rows (every target copied into nearly
every output that had it: AUC near 1), ``population`` (real rows nobody trained on: AUC near 0.5). Then ``--end-to-end``
times ``python -m audit_core shadow``'s path (:func:`shadow_attack`) on GaussianCopula at its defaults.

Usage: python benchmarks/bench_shadow.py [--generators gaussian_copula,bayesian_network,bootstrap,population]
       [--train 1000] [--shadow-models 32] [--tapas /tmp/tapas/bin/python --tapas-src /tmp/tapas-src]
       [--end-to-end] [--seed 0]
"""

from __future__ import annotations

import os

os.environ.setdefault("NUMBA_NUM_THREADS", "2")

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from audit_core.common.column_types import infer_column_types  # noqa: E402
from audit_core.synthetic.encoding import encode_for_gower  # noqa: E402
from audit_core.synthetic.generators.registry import make_generator  # noqa: E402
from audit_core.synthetic.shadow.audit import ShadowOptions, shadow_attack  # noqa: E402
from audit_core.synthetic.shadow.design import design_shadows  # noqa: E402
from audit_core.synthetic.shadow.features import describe_targets, target_features  # noqa: E402
from audit_core.synthetic.shadow.result import holm  # noqa: E402
from audit_core.synthetic.shadow.scoring import cross_fit  # noqa: E402
from audit_core.synthetic.shadow.targets import isolation  # noqa: E402

ADULT = HERE.parent / "sample_data" / "adult.csv"
T = 20


def _tapas_schema(frame: pd.DataFrame, types, outputs: list[pd.DataFrame]) -> list[dict]:
    schema = []
    for col in frame.columns:
        if col in types.numeric:
            schema.append({"name": col, "type": "real", "representation": "number"})
        else:
            values = sorted({str(v) for o in [frame, *outputs] for v in o[col].dropna().unique()})
            schema.append({"name": col, "type": "finite", "representation": values})
    return schema


def _for_tapas(frame: pd.DataFrame, types, lo: pd.Series, span: pd.Series) -> pd.DataFrame:
    """Numbers scaled to [0, 1] by the real ranges (TAPAS's histograms read [0, 1]), categories as text."""
    out = frame.copy()
    for col in types.numeric:
        out[col] = ((out[col].astype(float) - lo[col]) / span[col]).clip(0, 1)
    for col in types.categorical:
        out[col] = out[col].astype(str)
    return out


def run_generator(name: str, train: pd.DataFrame, population: pd.DataFrame, reserve: pd.DataFrame, *, k: int, seed: int,
                  tapas: tuple[str, str] | None) -> dict:  # fmt: skip
    types = infer_column_types(train)
    enc = encode_for_gower([train, population], types=types)
    iso = isolation(enc.transform(train), enc.transform(population))
    order = np.argsort(-iso, kind="stable")
    rows = np.r_[order[:T], order[-T:]]  # outliers, then inliers
    targets = train.iloc[rows].reset_index(drop=True)
    t_enc = enc.transform(targets)
    how = describe_targets(t_enc, enc.transform(population), iso[rows])
    design = design_shadows(rows.size, len(population), n_rows=len(train), n_shadows=k, n_folds=8, seed=seed)
    n_out = 5 * len(train) if name == "bootstrap" else len(train)
    features, seconds, outputs = [], [], []
    for s in range(k):
        start = time.perf_counter()
        gen = make_generator(name).fit(design.training_set(s, population, targets), types=types,
                                       seed=int(design.seeds[s]), reserve=reserve)  # fmt: skip
        out = gen.sample(n_out, seed=int(design.seeds[s]))
        seconds.append(time.perf_counter() - start)
        outputs.append(out)
        features.append(target_features(t_enc, enc.transform(out), how))
    start = time.perf_counter()
    feats = np.stack(features)
    ours = cross_fit(feats[:, :T], design.keep[:, :T], design.folds, feats[0, :T], seed=seed)
    ours_seconds = time.perf_counter() - start
    inl = cross_fit(feats[:, T:], design.keep[:, T:], design.folds, feats[0, T:], seed=seed)
    result = {"generator": name, "seconds_per_fit": float(np.mean(seconds)), "ours_outliers": ours.auc.tolist(),
              "ours_inliers": inl.auc.tolist(), "told_outliers": int((holm(ours.p_value) <= 0.05).sum()),
              "told_inliers": int((holm(inl.p_value) <= 0.05).sum()), "ours_seconds": ours_seconds}  # fmt: skip
    if tapas is not None:
        python, src = tapas
        lo, span = train[list(types.numeric)].min(), (train[list(types.numeric)].max() - train[list(types.numeric)].min())
        span = span.replace(0, 1)
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            scaled = [_for_tapas(o[list(train.columns)], types, lo, span) for o in outputs]
            (folder / "schema.json").write_text(json.dumps(_tapas_schema(scaled[0], types, scaled)))
            for s, o in enumerate(scaled):
                o.to_csv(folder / f"output_{s:04d}.csv", index=False)
            np.save(folder / "keep.npy", design.keep[:, :T])
            np.save(folder / "folds.npy", design.folds)
            subprocess.run([python, str(HERE / "compare_tapas.py"), tmp], check=True,
                           env={**os.environ, "PYTHONPATH": src})  # fmt: skip
            tapas_out = json.loads((folder / "tapas.json").read_text())
        result["tapas_outliers"], result["tapas_seconds"] = tapas_out["auc"], tapas_out["seconds"]
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--generators", default="gaussian_copula,bayesian_network,bootstrap,population")
    ap.add_argument("--train", type=int, default=1000)
    ap.add_argument("--shadow-models", type=int, default=32)
    ap.add_argument("--tapas", default=None, help="python of a venv that runs TAPAS")
    ap.add_argument("--tapas-src", default=None, help="a checkout of TAPAS (alan-turing-institute/privacy-sdg-toolbox)")
    ap.add_argument("--end-to-end", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    real = pd.read_csv(ADULT)
    rows = np.random.default_rng(args.seed).permutation(len(real))
    train = real.iloc[rows[: args.train]].reset_index(drop=True)
    population = real.iloc[rows[args.train : args.train + 4000]].reset_index(drop=True)
    reserve = real.iloc[rows[args.train + 4000 : args.train + 8000]].reset_index(drop=True)
    tapas = (args.tapas, args.tapas_src) if args.tapas else None
    print(f"Adult, {args.train} training rows, 4,000 population rows, {args.shadow_models} shadow models, {T} outliers "
          f"and {T} inliers as targets, seed {args.seed}")  # fmt: skip
    print("| generator | s per fit | outliers: mean / best AUC, told apart | inliers: mean / best AUC, told apart | "
          "TAPAS Groundhog on the outliers: mean / best AUC | seconds on the outputs: ours / TAPAS |")
    print("|---|---|---|---|---|---|")
    for name in args.generators.split(","):
        r = run_generator(name, train, population, reserve, k=args.shadow_models, seed=args.seed, tapas=tapas)
        o, i = np.array(r["ours_outliers"]), np.array(r["ours_inliers"])
        tp = np.array(r.get("tapas_outliers", [np.nan]))
        tsec = f"{r['tapas_seconds']:.1f}" if "tapas_seconds" in r else "n/a"
        print(f"| {name} | {r['seconds_per_fit']:.2f} | {o.mean():.3f} / {o.max():.3f}, {r['told_outliers']} of {T} | "
              f"{i.mean():.3f} / {i.max():.3f}, {r['told_inliers']} of {T} | {np.mean(tp):.3f} / {np.max(tp):.3f} | "
              f"{r['ours_seconds']:.1f} / {tsec} |", flush=True)  # fmt: skip
    if args.end_to_end:
        start = time.perf_counter()
        a = shadow_attack(train, population, generator="gaussian_copula", options=ShadowOptions(), seed=args.seed)
        timing = a.to_json()["timing"]
        print(f"\nshadow_attack, gaussian_copula, defaults (20 targets, 32 shadow models, release fitted here): "
              f"{timing['seconds_per_fit']:.2f} s per shadow fit, {time.perf_counter() - start:.1f} s in all, "
              f"{int(a.told_apart.sum())} told apart")  # fmt: skip


if __name__ == "__main__":
    main()
