"""ONNX outputs read as what they are (issue 33): one model per converter family, ONNX against skops or torch.

An output whose rows sum to 1 is probabilities, even when float32 rounding puts a pure leaf at
-1.2e-07 (a fully grown forest through skl2onnx): before the fix such a batch was softmaxed as
logits, and a leaf's [1, 0] became [0.731, 0.269].
"""

from __future__ import annotations

import io
import warnings

import numpy as np
import pandas as pd
import pytest

from audit_core.model.loading import load_model

CLASSES = ["0", "1"]


def _data(n: int = 400, d: int = 5) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    X = rng.normal(size=(n, d)).astype(np.float32)
    return X, (X[:, 0] + 0.8 * rng.normal(size=n) > 0).astype(np.int64)


def _frame(X: np.ndarray) -> pd.DataFrame:
    return pd.DataFrame(X.astype(np.float64), columns=[f"x{i}" for i in range(X.shape[1])])


def _onnx_and_skops(estimator, X: np.ndarray, y: np.ndarray, *, zipmap: bool) -> tuple[bytes, bytes]:
    import skops.io as sio
    from skl2onnx import to_onnx

    estimator.fit(X, y)
    onnx_bytes = to_onnx(estimator, X[:1], options={id(estimator): {"zipmap": zipmap}}).SerializeToString()
    return onnx_bytes, sio.dumps(estimator)


def _families():
    from sklearn.ensemble import GradientBoostingClassifier, RandomForestClassifier
    from sklearn.linear_model import LogisticRegression

    return {
        "forest": (RandomForestClassifier(n_estimators=20, random_state=0), False),  # fully grown, 20 trees
        "boosting": (GradientBoostingClassifier(n_estimators=30, random_state=0), True),  # a ZipMap output
        "logistic": (LogisticRegression(), False),
    }


@pytest.mark.parametrize("family", ["forest", "boosting", "logistic"])
def test_skl2onnx_families_give_the_skops_probabilities(family):
    estimator, zipmap = _families()[family]
    X, y = _data()
    onnx_bytes, skops_bytes = _onnx_and_skops(estimator, X, y, zipmap=zipmap)
    frame = _frame(X)
    p_onnx = load_model(onnx_bytes, f"{family}.onnx").predict_proba(frame, classes=CLASSES)
    p_skops = load_model(skops_bytes, f"{family}.skops").predict_proba(frame, classes=CLASSES)
    np.testing.assert_allclose(p_onnx, p_skops, atol=2e-6, rtol=0)  # ONNX computes in float32
    assert p_onnx.min() >= 0.0
    if family == "forest":  # the case of issue 33: the raw ONNX output holds float32 rounding below 0
        import onnxruntime as ort

        session = ort.InferenceSession(onnx_bytes, providers=["CPUExecutionProvider"])
        raw = session.run(None, {session.get_inputs()[0].name: X})[1]
        assert raw.min() < 0
        assert np.sum(p_skops == 1.0) > 50  # pure leaves: [1, 0] must stay [1, 0], not become [0.731, 0.269]


@pytest.mark.parametrize("softmax", [False, True])
def test_a_torch_exported_mlp_gives_the_torch_probabilities(softmax):
    import torch

    X, _ = _data(200, 4)
    torch.manual_seed(0)
    layers = [torch.nn.Linear(4, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2)]
    module = torch.nn.Sequential(*layers, *([torch.nn.Softmax(dim=1)] if softmax else [])).eval()
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the TorchScript exporter announces its deprecation
        torch.onnx.export(module, (torch.zeros(1, 4),), buffer, input_names=["X"],
                          output_names=["prob" if softmax else "logits"], dynamic_axes={"X": {0: "n"}}, dynamo=False)  # fmt: skip
    with torch.no_grad():
        out = module(torch.from_numpy(X)).double()
        expected = (out if softmax else torch.softmax(out, dim=1)).numpy()
    p = load_model(buffer.getvalue(), "mlp.onnx").predict_proba(_frame(X), classes=CLASSES)
    np.testing.assert_allclose(p, expected, atol=2e-6, rtol=0)
