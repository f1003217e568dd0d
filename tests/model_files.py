"""Model files for the model audit's tests, built on the fly (never committed as binaries).

- :func:`german_case`: an overfit random forest (fully grown trees, 50 of them) in an sklearn
  Pipeline with its own one-hot encoder, trained on half of German Credit (the members),
  the other half as the population; saved as ONNX (skl2onnx, one input per column) and as skops.
- :func:`disjoint_case`: the same family trained on records that are in neither table given
  (so the "members" are not members: every attack must be at chance).
- hostile files: a pickle renamed ``.onnx``, an ONNX with a custom-domain operator, an ONNX whose
  weights live in an external file outside its folder, an ONNX with three output classes.
"""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
GERMAN = ROOT / "sample_data" / "german_credit.csv"
TARGET = "credit"
TRUST_TREE = "sklearn.tree._tree.Tree"


def _forest_pipeline(frame: pd.DataFrame, seed: int = 0, trees: int = 50):
    from sklearn.compose import ColumnTransformer
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder

    X = frame.drop(columns=TARGET)
    text = [c for c in X.columns if X[c].dtype == object]
    numeric = [c for c in X.columns if c not in text]
    X[numeric] = X[numeric].astype(float)
    encoder = ColumnTransformer([("text", OneHotEncoder(handle_unknown="ignore"), text)], remainder="passthrough")
    pipe = make_pipeline(encoder, RandomForestClassifier(n_estimators=trees, random_state=seed))  # fully grown
    pipe.fit(X, frame[TARGET])
    return pipe, X


def _to_onnx(pipe, X: pd.DataFrame) -> bytes:
    from skl2onnx import to_onnx
    from skl2onnx.common.data_types import FloatTensorType, StringTensorType

    types = [(c, StringTensorType([None, 1]) if X[c].dtype == object else FloatTensorType([None, 1])) for c in X.columns]
    return to_onnx(pipe, initial_types=types, options={id(pipe.steps[-1][1]): {"zipmap": False}}).SerializeToString()


def _write_case(folder: Path, model_on: pd.DataFrame, train: pd.DataFrame, population: pd.DataFrame, *,
                trees: int = 50) -> dict[str, Path]:  # fmt: skip
    import skops.io as sio

    folder.mkdir(parents=True, exist_ok=True)
    pipe, X = _forest_pipeline(model_on, trees=trees)
    paths = {"train": folder / "train.csv", "population": folder / "population.csv",
             "onnx": folder / "forest.onnx", "skops": folder / "forest.skops"}  # fmt: skip
    train.to_csv(paths["train"], index=False)
    population.to_csv(paths["population"], index=False)
    paths["onnx"].write_bytes(_to_onnx(pipe, X))
    paths["skops"].write_bytes(sio.dumps(pipe))
    return paths


def _german() -> pd.DataFrame:
    df = pd.read_csv(GERMAN)
    return df.iloc[np.random.default_rng(0).permutation(len(df))].reset_index(drop=True)


def german_case(folder: Path, *, trees: int = 50) -> dict[str, Path]:
    """Members = 500 rows of German Credit the forest was trained on; population = the other 500.

    ``trees=20``: a forest whose ONNX export gives some pure leaves a probability of about -1.2e-07
    (float32 rounding of ``1 - sum``), the case of issue 33.
    """
    df = _german()
    train, population = df.iloc[:500].reset_index(drop=True), df.iloc[500:].reset_index(drop=True)
    return _write_case(folder, train, train, population, trees=trees)


def disjoint_case(folder: Path) -> dict[str, Path]:
    """The forest trained on 300 rows that are in neither table: 350 'members' (not really) and 350 population."""
    df = _german()
    model_on, train, population = df.iloc[:300], df.iloc[300:650].reset_index(drop=True), df.iloc[650:].reset_index(drop=True)
    return _write_case(folder, model_on, train, population)


# ------------------------------------------------------------------------------------------------ hostile files
def pickle_bytes() -> bytes:
    """A pickle (of a harmless dict: it is never opened anyway)."""
    return pickle.dumps({"weights": [1, 2, 3]}, protocol=4)


def _numeric_graph(n_features: int, n_classes: int, *, domain: str = "", external: str | None = None) -> bytes:
    """``logits = X @ W`` as a one-node ONNX graph (optionally a custom-domain node or external weights)."""
    from onnx import TensorProto, helper, numpy_helper

    W = numpy_helper.from_array(np.ones((n_features, n_classes), dtype=np.float32), name="W")
    if external is not None:
        W.ClearField("raw_data")
        W.data_location = TensorProto.EXTERNAL
        for key, value in (("location", external), ("offset", "0"), ("length", str(4 * n_features * n_classes))):
            entry = W.external_data.add()
            entry.key, entry.value = key, value
    node = helper.make_node("MatMul" if not domain else "EvilMatMul", ["X", "W"], ["logits"], domain=domain)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [None, n_features])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [None, n_classes])], initializer=[W],
    )  # fmt: skip
    opsets = [helper.make_opsetid("", 17)] + ([helper.make_opsetid(domain, 1)] if domain else [])
    return helper.make_model(graph, opset_imports=opsets, ir_version=8).SerializeToString()


def custom_domain_onnx(n_features: int = 3) -> bytes:
    return _numeric_graph(n_features, 2, domain="com.example.native")


def external_data_onnx(n_features: int = 3) -> bytes:
    return _numeric_graph(n_features, 2, external="../../../etc/passwd")


def three_class_onnx(n_features: int = 3) -> bytes:
    return _numeric_graph(n_features, 3)


def two_class_onnx(n_features: int = 3) -> bytes:
    return _numeric_graph(n_features, 2)


def numeric_tables(folder: Path, n_features: int = 3) -> dict[str, Path]:
    """A small numeric table pair with a two-class label (for the one-matrix ONNX files above)."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(1)
    paths = {}
    for name, n in (("train", 60), ("population", 80)):
        X = rng.normal(size=(n, n_features))
        frame = pd.DataFrame(X, columns=[f"x{i}" for i in range(n_features)]).assign(y=(X[:, 0] > 0).astype(int))
        paths[name] = folder / f"{name}.csv"
        frame.to_csv(paths[name], index=False)
    return paths


# ------------------------------------------------------------------------- known answers for LiRA online and images
def _easy_or_coin(n: int, rng: np.random.Generator, d: int = 8) -> pd.DataFrame:
    X = rng.normal(size=(n, d))
    easy = rng.random(n) < 0.5
    y = np.where(easy, X[:, 0] > 0, rng.random(n) < 0.5).astype(int)
    return pd.DataFrame(X, columns=[f"x{i}" for i in range(d)]).assign(y=y)


def memorizing_case(folder: Path, *, members: int = 400, population: int = 800) -> dict:
    """Half of the records are easy (label = x0 > 0), half carry a coin-flip label; label column ``y``.

    The target is the ``gbdt`` reference family's own configuration (200 boosting rounds, no early
    stopping) fitted on the members, saved with skops: it fits the members' coin flips (train accuracy
    1.0) and gets an easy record right whether or not it saw it. So a global LOSS threshold mixes
    members with easy non-members, while a per-record calibration (LiRA) tells a memorized coin flip
    from an unseen one. ``trusted``: the skops types of this file (we made it).
    """
    import skops.io as sio
    from sklearn.ensemble import HistGradientBoostingClassifier

    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(3)
    train, pop = _easy_or_coin(members, rng), _easy_or_coin(population, rng)
    from threadpoolctl import threadpool_limits

    model = HistGradientBoostingClassifier(max_iter=200, early_stopping=False, random_state=0)
    with threadpool_limits(1):  # OpenMP threads only stall on a shared machine for 400 rows
        model.fit(train.drop(columns="y").to_numpy(), train["y"])
    data = sio.dumps(model)
    paths = {"train": folder / "train.csv", "population": folder / "population.csv", "skops": folder / "gbdt.skops"}
    train.to_csv(paths["train"], index=False)
    pop.to_csv(paths["population"], index=False)
    paths["skops"].write_bytes(data)
    return {**paths, "trusted": sio.get_untrusted_types(data=data)}


def _noisy_digits(noise: float) -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import load_digits

    d = load_digits()
    x, y = (d.images / 16.0).astype(np.float32)[:, None], d.target.astype(np.int64)
    rng = np.random.default_rng(99)
    flip = rng.random(y.size) < noise
    y[flip] = rng.integers(0, 10, int(flip.sum()))
    return x, y


def image_case(folder: Path, *, members: int = 150, population: int = 300, epochs: int = 150, noise: float = 0.2,
               disjoint: bool = False) -> dict[str, Path]:  # fmt: skip
    """A small_cnn (safetensors) trained on ``members`` of scikit-learn's 8x8 digits, a fifth of all labels random.

    The CNN memorizes its members' random labels; the population is other digits from the same noisy
    distribution. ``disjoint``: the CNN is trained on further digits that are in neither file instead
    (the 'members' are not members). Members and population are ``.npz`` files (``images``, ``labels``).
    """
    from safetensors.torch import save_file

    from audit_core.fabrication.training import TrainConfig, train_models

    folder.mkdir(parents=True, exist_ok=True)
    x, y = _noisy_digits(noise)
    perm = np.random.default_rng(5).permutation(y.size)
    mem, pop = perm[:members], perm[members : members + population]
    fit_on = perm[members + population : 2 * members + population] if disjoint else mem
    subset = np.zeros((1, y.size), dtype=bool)
    subset[0, fit_on] = True
    (cnn,) = train_models(x, y, subset, n_classes=10, config=TrainConfig(epochs=epochs, weight_decay=0.0),
                          arch="small_cnn", seed=0, device="cpu")  # fmt: skip
    paths = {"model": folder / "cnn.safetensors", "train": folder / "members.npz", "population": folder / "population.npz"}
    save_file({k: v.contiguous() for k, v in cnn.state_dict().items()}, str(paths["model"]))
    np.savez(paths["train"], images=x[mem], labels=y[mem])
    np.savez(paths["population"], images=x[pop], labels=y[pop])
    return paths
