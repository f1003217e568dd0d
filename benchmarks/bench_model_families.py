"""Which reference family ``--reference-family auto`` chooses for a target of each family, and by how much.

The known answer of ``tests/core/model/test_reference_choice.py`` for all five families and both
file formats (the test runs three cases to stay cheap): a table of ``--members`` members and
``--population`` population records with a non-linear label and logistic noise; the target of each
family is fitted on the members and saved as ONNX (what the graph carries) and as skops (its
constructor parameters; HistGradientBoosting only as skops: skl2onnx cannot convert it here). For
each, the family ``auto`` chooses, every family's fidelity distance, and the RMIA AUC each family's
reference models give (shown, never used to choose), with the time of the audit. Run::

    .venv/bin/python benchmarks/bench_model_families.py [--reference-models 2] [--members 300 --population 1200]
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from audit_core.model.audit import audit_model


def table(n: int, rng: np.random.Generator, d: int = 6) -> pd.DataFrame:
    X = rng.normal(size=(n, d))
    y = (1.5 * X[:, 0] - X[:, 1] + X[:, 2] * X[:, 3] + rng.logistic(size=n) > 0).astype(int)
    return pd.DataFrame(X, columns=[f"x{i}" for i in range(d)]).assign(y=y)


def targets() -> dict:
    from sklearn.ensemble import ExtraTreesClassifier, HistGradientBoostingClassifier, RandomForestClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.neural_network import MLPClassifier

    return {"random_forest": RandomForestClassifier(n_estimators=100, random_state=1),
            "extra_trees": ExtraTreesClassifier(n_estimators=100, random_state=1),
            "gbdt": HistGradientBoostingClassifier(max_iter=200, early_stopping=False, random_state=1),
            "logistic": LogisticRegression(max_iter=1000),
            "mlp": MLPClassifier(hidden_layer_sizes=(64,), max_iter=300, random_state=1)}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", type=int, default=200)
    parser.add_argument("--population", type=int, default=800)
    parser.add_argument("--reference-models", type=int, default=1)
    args = parser.parse_args()

    import skops.io as sio
    from skl2onnx import to_onnx
    from threadpoolctl import threadpool_limits

    rng = np.random.default_rng(0)
    train, population = table(args.members, rng), table(args.population, rng)
    X = train.drop(columns="y").to_numpy()
    rows = []
    for family, model in targets().items():
        with warnings.catch_warnings(), threadpool_limits(1):
            warnings.simplefilter("ignore")
            model.fit(X, train["y"])
        files = {"skops": sio.dumps(model)}
        if family != "gbdt":
            files["onnx"] = to_onnx(model, X[:1].astype(np.float32), options={id(model): {"zipmap": False}}).SerializeToString()
        for fmt, data in files.items():
            start = time.perf_counter()
            r = audit_model(data, train, population, target="y", attacks=("loss", "rmia"),
                            n_reference=args.reference_models, seed=0)  # fmt: skip
            seconds = time.perf_counter() - start
            fams = r.reference["family_choice"]["families"]
            ranked = sorted(fams, key=lambda f: fams[f]["distance"])
            rows.append({"target": family, "file": fmt, "chosen": r.reference["family"],
                         "margin": fams[ranked[1]]["distance"] - fams[ranked[0]]["distance"],
                         **{f"d {f}": round(fams[f]["distance"], 2) for f in fams},
                         **{f"rmia AUC {f}": round(fams[f]["attacks"]["rmia"]["auc"], 3) for f in fams},
                         "seconds": round(seconds, 1)})  # fmt: skip
            print(rows[-1], flush=True)
    print()
    print(pd.DataFrame(rows).to_string(index=False))


if __name__ == "__main__":
    main()
