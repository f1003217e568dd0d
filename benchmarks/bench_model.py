"""Benchmark of the model audit: 20,000 members + 20,000 population records, RMIA with 4 reference models.

Synthetic data (seeded): 12 numeric features and 4 text columns, a two-class label that depends
on a few of them with noise. The target is a scikit-learn Pipeline (one-hot encoder + gradient-
boosted trees) saved with skops; the audit (LOSS + RMIA, K = 4 reference models of the same
family; ``--attacks`` for others, e.g. ``loss,rmia,lira_online``) is timed from the model's bytes
and the two tables to the finished result. ``--art-python PYTHON`` also times ART's shadow-model
attack on the same data (``art_shadow_models.py``, run by that interpreter, where ART is
installed: it is no dependency of this project) and prints both times and their ratio. Run::

    .venv/bin/python benchmarks/bench_model.py [--family gbdt] [--members 20000] [--art-python /tmp/artvenv/bin/python]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from audit_core.model.audit import audit_model
from audit_core.model.reference import REFERENCE_FAMILIES


def synthetic(n: int, rng: np.random.Generator) -> pd.DataFrame:
    X = rng.normal(size=(n, 12))
    text = {f"c{i}": rng.choice([f"level{j}" for j in range(5 + i)], size=n) for i in range(4)}
    logit = X[:, 0] - 0.8 * X[:, 1] + 0.5 * X[:, 2] * X[:, 3] + (text["c0"] == "level1") + rng.normal(scale=1.5, size=n)
    frame = pd.DataFrame(X, columns=[f"x{i}" for i in range(12)]).assign(**text)
    return frame.assign(label=np.where(logit > 0, "yes", "no"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", type=int, default=20_000)
    parser.add_argument("--population", type=int, default=20_000)
    parser.add_argument("--family", default="gbdt", choices=REFERENCE_FAMILIES)
    parser.add_argument("--reference-models", type=int, default=4)
    parser.add_argument("--attacks", default="loss,rmia", help="comma-separated, as the CLI's --attacks")
    parser.add_argument("--art-python", help="a Python with adversarial-robustness-toolbox: time its shadow-model attack too")
    args = parser.parse_args()

    import skops.io as sio
    from sklearn.compose import ColumnTransformer
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder

    rng = np.random.default_rng(20261202)
    train, population = synthetic(args.members, rng), synthetic(args.population, rng)
    encoder = ColumnTransformer([("text", OneHotEncoder(handle_unknown="ignore"), [f"c{i}" for i in range(4)])],
                                remainder="passthrough")  # fmt: skip
    target = make_pipeline(encoder, HistGradientBoostingClassifier(max_iter=300, max_leaf_nodes=63, early_stopping=False,
                                                                   random_state=0))  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        target.fit(train.drop(columns="label"), train["label"])
    data = sio.dumps(target)
    trusted = sio.get_untrusted_types(data=data)  # we made this file ourselves
    start = time.perf_counter()
    result = audit_model(data, train, population, target="label", attacks=tuple(args.attacks.split(",")),
                         n_reference=args.reference_models, family=args.family, trusted=trusted, seed=0)  # fmt: skip
    seconds = time.perf_counter() - start
    for a in result.attacks.values():
        t = a.tpr_at_fpr["0.01"]
        print(f"{a.name}: AUC {a.auc:.3f}, TPR at 1 % FPR {t.tpr:.3f} [{t.ci_low:.3f}, {t.ci_high:.3f}]")
    f = result.fidelity
    print(f"fidelity ok={f.ok}: target {f.target['train_accuracy']:.3f}/{f.target['test_accuracy']:.3f}, "
          f"reference {f.reference['train_accuracy']:.3f}/{f.reference['test_accuracy']:.3f}")  # fmt: skip
    print(f"{args.members:,} members + {args.population:,} population, {args.attacks} with {args.reference_models} "
          f"{args.family} reference models: {seconds:.1f} s")  # fmt: skip
    if args.art_python:
        art = run_art(args.art_python, train, population, shadow_models=args.reference_models)
        print(f"ART {art['art']} ShadowModels ({art['shadow_models']} gbdt shadow models of {art['shadow_train_size']:,} "
              f"records) + MembershipInferenceBlackBox (rf): AUC {art['auc']:.3f}, TPR at 1 % FPR "
              f"{art['tpr_at_1pct_fpr']:.3f}: {art['seconds']:.1f} s")  # fmt: skip
        print(f"ART / this audit: {art['seconds'] / seconds:.2f}x the time")


def run_art(python: str, train: pd.DataFrame, population: pd.DataFrame, *, shadow_models: int) -> dict:
    """Run art_shadow_models.py in ``python`` (where ART is installed) on the same tables; its JSON line."""
    script = Path(__file__).with_name("art_shadow_models.py")
    with tempfile.TemporaryDirectory() as tmp:
        paths = [Path(tmp) / "train.csv", Path(tmp) / "population.csv"]
        for frame, path in zip((train, population), paths, strict=True):
            frame.to_csv(path, index=False)
        done = subprocess.run([python, str(script), "--train", str(paths[0]), "--population", str(paths[1]),
                               "--shadow-models", str(shadow_models)], capture_output=True, text=True, check=False)  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"the ART script failed ({python}):\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    main()
