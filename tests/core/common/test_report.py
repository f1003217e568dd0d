import json
import shutil

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest

from audit_core.common.report import Report, describe_input, to_json_text


def _report(fig_count: int = 2) -> Report:
    df = pd.DataFrame({"a": [1, 2, 3], "b": ["x", "y", "z"]})
    figs = [(f"figure {i}", go.Figure(go.Scatter(x=[0, 1], y=[i, i + 1]))) for i in range(fig_count)]
    return Report(
        title="Test audit",
        question="Is <anyone> exposed?",
        inputs=[describe_input("train", df)],
        settings={"bandwidth": 0.1, "prior": 0.5},
        metrics={"auc": np.float64(0.73), "tpr_at_fpr": {"0.01": 0.04}, "bad": float("nan")},
        figures=figs,
        verdict="Low risk.",
        limits=["The true-distribution attack is an upper bound."],
        seed=7,
        tables=[("records", df)],
    )


def test_html_is_self_contained_and_escaped():
    html = _report().to_html()
    assert "<script src=" not in html  # plotly.js is inlined once: the report opens offline
    assert html.count("Plotly.newPlot") == 2
    assert html.count("plotly.js v") == 1
    assert "Is &lt;anyone&gt; exposed?" in html
    assert "upper bound" in html
    assert "numpy" in html


def test_json_is_plain_and_nan_free():
    payload = json.loads(to_json_text(_report().to_json()))
    assert payload["metrics"]["auc"] == 0.73
    assert payload["metrics"]["bad"] is None
    assert payload["seed"] == 7
    assert payload["inputs"][0]["rows"] == 3


def test_input_hash_tracks_content():
    a = pd.DataFrame({"x": [1.0, 2.0]})
    assert describe_input("t", a).sha256 == describe_input("t", a.copy()).sha256
    assert describe_input("t", a).sha256 != describe_input("t", a + 1).sha256


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("chromium") is None, reason="PDF export needs a local Chromium")
def test_pdf_export_offline(tmp_path):
    path = _report(1).to_pdf(tmp_path / "r.pdf")
    assert path.read_bytes()[:5] == b"%PDF-"
    assert path.stat().st_size > 10_000  # the figure is drawn, not just the text
