"""TAPAS's Groundhog attack on shadow outputs made by benchmarks/bench_shadow.py (run with TAPAS's own environment).

TAPAS (alan-turing-institute/privacy-sdg-toolbox, the ``prive`` package) does not install beside this project's pins
and is not on PyPI; run this file with the python of a throwaway venv that has numpy, pandas and scikit-learn, with a
checkout of TAPAS on PYTHONPATH (bench_shadow.py does it with ``--tapas PYTHON --tapas-src DIR``). Its Groundhog
attack (Stadler et al. 2022) as TAPAS ships it: ``FeatureBasedSetClassifier(NaiveSetFeature() + HistSetFeature() +
CorrSetFeature(), RandomForestClassifier(n_estimators=100))``, one classifier per target, fitted on the training
folds' outputs and scored on the held-out fold's, on exactly the outputs, labels and folds our attack used.

Usage: PYTHONPATH=TAPAS_SRC python benchmarks/compare_tapas.py DIR  (writes DIR/tapas.json)
"""

import json
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from prive.attacks import CorrSetFeature, FeatureBasedSetClassifier, HistSetFeature, NaiveSetFeature
from prive.datasets import TabularDataset
from prive.datasets.data_description import DataDescription
from sklearn.ensemble import RandomForestClassifier
from sklearn.metrics import roc_auc_score


def main(folder: Path) -> None:
    schema = json.loads((folder / "schema.json").read_text())
    description = DataDescription(schema)
    keep = np.load(folder / "keep.npy")
    folds = np.load(folder / "folds.npy")
    text = {c["name"]: str for c in schema if c["type"] == "finite"}
    outputs = [TabularDataset(pd.read_csv(f, dtype=text, keep_default_na=False), description)
               for f in sorted(folder.glob("output_*.csv"))]
    start = time.perf_counter()
    scores = np.empty(keep.shape)
    for t in range(keep.shape[1]):
        for f in np.unique(folds):
            train = [d for d, g in zip(outputs, folds, strict=True) if g != f]
            test = [d for d, g in zip(outputs, folds, strict=True) if g == f]
            attack = FeatureBasedSetClassifier(NaiveSetFeature() + HistSetFeature() + CorrSetFeature(),
                                               RandomForestClassifier(n_estimators=100, random_state=t))
            attack.fit(train, list(keep[folds != f, t].astype(int)))
            scores[folds == f, t] = attack.predict_proba(test)[:, 1]
    seconds = time.perf_counter() - start
    auc = [float(roc_auc_score(keep[:, t], scores[:, t])) for t in range(keep.shape[1])]
    (folder / "tapas.json").write_text(json.dumps({"auc": auc, "seconds": seconds}))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
