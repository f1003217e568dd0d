"""Write the sample models of the 'Audit my model' page (python -m audit_core model).

- ``adult/model_mlp.skops`` (the page's default sample): fitted on adult/train.csv (2,000 rows), target
  ``income_per_year``; audited against adult/holdout.csv (2,000 rows: 1,000 non-members and 1,000 for the
  reference models), so a TPR at 1 % FPR can be measured (it needs 1,000 non-members);
- ``german_credit/model_mlp.skops``: fitted on german_credit/train.csv, target ``credit`` (German Credit has
  1,000 rows in all, so its audit has 150 non-members: too few for a 1 % FPR).

Each is an sklearn Pipeline (one-hot encoder for the text columns, missing values as a category, scaler for the
numbers, an MLP with 64 hidden units), seeded; it overfits, so the audit has something to find. Saved with skops,
without the optimiser's state (an MLP predicts without it; skops would otherwise count it as an untrusted type).
Run once by the maintainers (``python sample_data/make_model_sample.py [adult|german_credit]``); outputs committed.
"""

import sys
import warnings
from pathlib import Path

import pandas as pd
import skops.io as sio
from sklearn.compose import ColumnTransformer
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

HERE = Path(__file__).resolve().parent
SEED = 20261202
SAMPLES = {"german_credit": ("credit", 600), "adult": ("income_per_year", 600)}


def make(folder: str) -> None:
    target, max_iter = SAMPLES[folder]
    train = pd.read_csv(HERE / folder / "train.csv")
    X = train.drop(columns=target)
    text = [c for c in X.columns if X[c].dtype == object]
    numeric = [c for c in X.columns if c not in text]
    encoder = ColumnTransformer([("text", OneHotEncoder(handle_unknown="ignore"), text),
                                 ("numeric", StandardScaler(), numeric)])  # fmt: skip
    model = make_pipeline(encoder, MLPClassifier(hidden_layer_sizes=(64,), max_iter=max_iter, random_state=SEED))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X, train[target])
    del model[-1]._optimizer
    (HERE / folder / "model_mlp.skops").write_bytes(sio.dumps(model))
    print(f"{folder}: train accuracy {model.score(X, train[target]):.3f}; wrote {HERE / folder / 'model_mlp.skops'}")


if __name__ == "__main__":
    for name in sys.argv[1:] or list(SAMPLES):
        make(name)
