"""Hostile model files: one sentence each, exit 2, nothing opened that could run code."""

from __future__ import annotations

import subprocess
import sys

import pytest

from audit_core.__main__ import main
from tests.model_files import (
    ROOT,
    TARGET,
    custom_domain_onnx,
    external_data_onnx,
    german_case,
    numeric_tables,
    pickle_bytes,
    three_class_onnx,
    two_class_onnx,
)


@pytest.fixture(scope="module")
def numeric(tmp_path_factory):
    return numeric_tables(tmp_path_factory.mktemp("numeric"))


@pytest.fixture(scope="module")
def german(tmp_path_factory):
    return german_case(tmp_path_factory.mktemp("german"))


def _cli(capsys, model, tables, target, *extra):
    code = main(["--quiet", "model", "--model", str(model), "--train", str(tables["train"]),
                 "--population", str(tables["population"]), "--target", target, *extra])  # fmt: skip
    return code, capsys.readouterr()


@pytest.mark.parametrize(
    ("name", "make", "words"),
    [
        ("weights.onnx", pickle_bytes, "pickle"),
        ("weights.skops", pickle_bytes, "pickle"),
        ("custom.onnx", custom_domain_onnx, "custom operators ('com.example.native')"),
        ("external.onnx", external_data_onnx, "external file ('../../../etc/passwd')"),
        ("three.onnx", three_class_onnx, "has 3 classes but the label column has 2"),
        ("garbage.onnx", lambda: b"\x00\x01 not a model at all", "neither an ONNX model nor a skops file"),
    ],
)
def test_hostile_onnx_or_pickle_is_one_sentence_exit_2(tmp_path, capsys, numeric, name, make, words):
    path = tmp_path / name
    path.write_bytes(make())
    code, out = _cli(capsys, path, numeric, "y", "--json", str(tmp_path / "out.json"))
    assert code == 2
    lines = out.err.strip().splitlines()
    assert len(lines) == 1, out.err
    assert words in lines[0]
    assert not (tmp_path / "out.json").exists()  # nothing half-written


def test_a_clean_one_matrix_onnx_runs(tmp_path, capsys, numeric):
    path = tmp_path / "ok.onnx"
    path.write_bytes(two_class_onnx())
    code, out = _cli(capsys, path, numeric, "y", "--attacks", "loss,rmia", "--reference-models", "2",
                     "--json", str(tmp_path / "o.json"))  # fmt: skip
    assert code == 0, out.err
    assert "release decision:" in out.out


def test_skops_with_an_untrusted_type_is_refused_naming_it(tmp_path, capsys, numeric):
    import pandas as pd
    import skops.io as sio
    from sklearn.neighbors import KNeighborsClassifier

    train = pd.read_csv(numeric["train"])
    path = tmp_path / "knn.skops"  # a k-d tree: neither in skops' defaults nor on the vetted list
    path.write_bytes(sio.dumps(KNeighborsClassifier().fit(train.drop(columns="y").to_numpy(), train["y"])))
    code, out = _cli(capsys, path, numeric, "y")
    assert code == 2
    assert len(out.err.strip().splitlines()) == 1
    assert "sklearn.neighbors._kd_tree.KDTree" in out.err
    assert "--trust-skops-types" in out.err


@pytest.mark.slow
def test_a_skops_forest_loads_with_no_flag(tmp_path, capsys, german):
    code, out = _cli(capsys, german["skops"], german, TARGET, "--attacks", "loss", "--reference-family", "logistic",
                     "--reference-models", "1")  # fmt: skip
    assert code == 0, out.err


@pytest.mark.slow
def test_the_real_command_exits_2_on_a_pickle(tmp_path, numeric):
    path = tmp_path / "model.pkl"
    path.write_bytes(pickle_bytes())
    r = subprocess.run([sys.executable, "-m", "audit_core", "model", "--model", str(path), "--train", str(numeric["train"]),
                        "--population", str(numeric["population"]), "--target", "y"], cwd=ROOT, capture_output=True,
                       text=True, timeout=120)  # fmt: skip
    assert r.returncode == 2
    assert len(r.stderr.strip().splitlines()) == 1
    assert "pickle" in r.stderr


@pytest.mark.slow
def test_the_cli_writes_json_html_and_records_and_gates_on_fail_on(tmp_path, capsys, german):
    out = tmp_path / "m.json"
    code, _ = _cli(capsys, german["onnx"], german, TARGET, "--reference-family", "gbdt", "--json", str(out),
                   "--html", str(tmp_path / "m.html"), "--records", str(tmp_path / "m.csv"), "--fail-on", "elevated")  # fmt: skip
    assert code == 3  # the overfit forest is at least elevated
    import json

    body = json.loads(out.read_text())
    assert body["verdict"]["level"] in ("elevated", "high")
    assert set(body["attacks"]) == {"loss", "rmia", "lira_offline", "supervised"}
    assert set(body["attacks"]["rmia"]["tpr_at_fpr"]["0.01"]) >= {"tpr", "ci_low", "ci_high"}
    assert "epsilon" in body["attacks"]["rmia"]["epsilon_lower_bound"]
    assert set(body["fidelity"]) >= {"target", "reference", "ok"}
    assert body["n_members"] == 500
    assert body["n_non_members"] == 250
    assert "Most exposed members" in (tmp_path / "m.html").read_text()
    assert len((tmp_path / "m.csv").read_text().splitlines()) == 751
