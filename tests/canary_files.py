"""Canary files and models for the DP claim check of an uploaded model, built on the fly (never committed as binaries).

- :func:`leaky_case`: half of 500 mislabelled German Credit canaries (a fair coin each) are
  trained on, with the other 500 rows, by an overfit random forest (fully grown trees, the model
  audit's pipeline of ``tests/model_files.py``); saved as ONNX and skops with the canary file.
- :func:`disjoint_case`: the same forest trained on the 500 rows that are not canaries; the canary
  file still says about half were included (none really was).
- :func:`canary_frame`: a canary table from features, labels and inclusion (the file's layout).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from tests.model_files import TARGET, _forest_pipeline, _german, _to_onnx

M = 500
INCLUDED = "included"


def canary_frame(features: pd.DataFrame, labels, included) -> pd.DataFrame:
    """Feature columns, then the label column ``credit`` and the inclusion column (0/1)."""
    return features.reset_index(drop=True).assign(**{TARGET: list(labels), INCLUDED: np.asarray(included, dtype=int)})


def _flipped(labels: pd.Series) -> pd.Series:
    return labels.map({"good": "bad", "bad": "good"})


def _write(folder: Path, train: pd.DataFrame, canaries: pd.DataFrame) -> dict[str, Path]:
    import skops.io as sio

    folder.mkdir(parents=True, exist_ok=True)
    pipe, X = _forest_pipeline(train)
    paths = {"canaries": folder / "canaries.csv", "onnx": folder / "forest.onnx", "skops": folder / "forest.skops"}
    canaries.to_csv(paths["canaries"], index=False)
    paths["onnx"].write_bytes(_to_onnx(pipe, X))
    paths["skops"].write_bytes(sio.dumps(pipe))
    return paths


def leaky_case(folder: Path, *, seed: int = 0) -> dict[str, Path]:
    """The forest trained on 500 rows plus the included half of 500 mislabelled canaries."""
    df = _german()
    rows, base = df.iloc[:M].reset_index(drop=True), df.iloc[M:]
    included = np.random.default_rng(seed).random(M) < 0.5
    canaries = canary_frame(rows.drop(columns=TARGET), _flipped(rows[TARGET]), included)
    train = pd.concat([base, canaries[included].drop(columns=INCLUDED)], ignore_index=True)
    return _write(folder, train, canaries)


def disjoint_case(folder: Path, *, seed: int = 0) -> dict[str, Path]:
    """The forest trained on the 500 rows that are not canaries; the file's coin flips decided nothing."""
    df = _german()
    rows, base = df.iloc[:M].reset_index(drop=True), df.iloc[M:]
    included = np.random.default_rng(seed).random(M) < 0.5
    return _write(folder, base, canary_frame(rows.drop(columns=TARGET), rows[TARGET], included))


def torch_onnx(module, n_features: int) -> bytes:
    """A trained ``torch.nn.Sequential`` of Linear and ReLU layers as ONNX (Gemm, Relu): one input ``X``, output ``logits``."""
    from onnx import TensorProto, helper, numpy_helper

    nodes, weights, last = [], [], "X"
    for i, layer in enumerate(module):
        out = f"h{i}"
        if hasattr(layer, "weight"):
            w, b = (t.detach().cpu().numpy().astype(np.float32) for t in (layer.weight, layer.bias))
            weights += [numpy_helper.from_array(w, name=f"W{i}"), numpy_helper.from_array(b, name=f"b{i}")]
            nodes.append(helper.make_node("Gemm", [last, f"W{i}", f"b{i}"], [out], transB=1))
        else:  # ReLU
            nodes.append(helper.make_node("Relu", [last], [out]))
        last = out
    nodes.append(helper.make_node("Identity", [last], ["logits"]))
    k = int(weights[-1].dims[0])
    graph = helper.make_graph(
        nodes, "net", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [None, n_features])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [None, k])], initializer=weights,
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8).SerializeToString()
