"""Write german_credit/model_mlp.skops: the sample model of the 'Audit my model' page (python -m audit_core model).

An sklearn Pipeline (one-hot encoder for the text columns, scaler for the numbers, an MLP with
64 hidden units) fitted on german_credit/train.csv, target ``credit``, seeded; it overfits
(train accuracy 1.0), so the audit has something to find. Saved with skops, without the
optimiser's state (an MLP predicts without it; skops would otherwise count it as an untrusted
type). Run once by the maintainers (``python sample_data/make_model_sample.py``); output committed.
"""

import warnings
from pathlib import Path

import pandas as pd
import skops.io as sio
from sklearn.compose import ColumnTransformer
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

HERE = Path(__file__).resolve().parent / "german_credit"
SEED = 20261202

train = pd.read_csv(HERE / "train.csv")
X = train.drop(columns="credit")
text = [c for c in X.columns if X[c].dtype == object]
numeric = [c for c in X.columns if c not in text]
encoder = ColumnTransformer([("text", OneHotEncoder(handle_unknown="ignore"), text), ("numeric", StandardScaler(), numeric)])
model = make_pipeline(encoder, MLPClassifier(hidden_layer_sizes=(64,), max_iter=600, random_state=SEED))
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    model.fit(X, train["credit"])
del model[-1]._optimizer
(HERE / "model_mlp.skops").write_bytes(sio.dumps(model))
print(f"train accuracy {model.score(X, train['credit']):.3f}; wrote {HERE / 'model_mlp.skops'}")
