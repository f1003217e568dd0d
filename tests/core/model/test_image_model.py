"""The model audit's image path: safetensors weights of the fabrication architectures, members and population as .npz."""

from __future__ import annotations

import json

import numpy as np
import pytest

from audit_core.__main__ import main
from audit_core.common.errors import InputError
from audit_core.model.audit import audit_model
from audit_core.model.images import read_images
from audit_core.model.loading import read_model_bytes
from tests.model_files import image_case, numeric_tables, pickle_bytes, two_class_onnx

ALL = ("loss", "rmia", "lira_offline", "lira_online")


def _sets(paths):
    return read_images(paths["train"], "members.npz"), read_images(paths["population"], "population.npz")


@pytest.fixture(scope="module")
def overfit(tmp_path_factory):
    return image_case(tmp_path_factory.mktemp("images"))


@pytest.fixture(scope="module")
def overfit_audit(overfit):
    return audit_model(overfit["model"].read_bytes(), *_sets(overfit), attacks=ALL, n_reference=4, epochs=100, seed=0,
                       names=("cnn.safetensors", "members.npz", "population.npz"))  # fmt: skip


def _untrained_cnn(folder, *, in_channels=1, n_classes=10, metadata=None):
    from safetensors.torch import save_file

    from audit_core.fabrication.architectures import SmallCNN

    path = folder / "cnn.safetensors"
    save_file({k: v.contiguous() for k, v in SmallCNN(in_channels, n_classes).state_dict().items()}, str(path),
              metadata=metadata)  # fmt: skip
    return path


@pytest.mark.slow
def test_the_overfit_cnn_leaks_and_lira_online_finds_more_than_loss(overfit_audit):
    r = overfit_audit
    assert r.model["architecture"] == "small_cnn"
    assert r.model["format"] == "safetensors"
    assert r.model["classes"] == [str(i) for i in range(10)]
    assert r.reference["family"] == "small_cnn"
    assert r.reference["epochs"] == 100
    assert r.n_members == 150
    assert r.n_non_members == 150
    loss, online = r.attacks["loss"], r.attacks["lira_online"]
    assert online.auc > 0.75
    assert online.auc > loss.auc + 0.05
    assert online.tpr_at_fpr["0.01"].tpr > 0.1 > loss.tpr_at_fpr["0.01"].tpr  # the memorized random labels
    assert r.attacks["rmia"].auc > loss.auc
    assert r.fidelity.ok  # the reference CNNs fit their images as the target does
    assert r.exposed.columns[-1] == "image"
    assert r.exposed["image"].iloc[0].startswith("members.npz[")


@pytest.mark.slow
def test_a_cnn_trained_on_other_digits_is_at_chance(tmp_path):
    case = image_case(tmp_path, disjoint=True)
    r = audit_model(case["model"].read_bytes(), *_sets(case), attacks=ALL, n_reference=4, epochs=100, seed=0)
    for a in r.attacks.values():
        assert abs(a.auc - 0.5) < 0.1, (a.name, a.auc)  # sd of an AUC at chance with 150 + 150 is about 0.033


@pytest.mark.slow
def test_same_seed_gives_byte_identical_json_for_an_image_model(overfit):
    runs = [audit_model(overfit["model"].read_bytes(), *_sets(overfit), attacks=("loss", "rmia", "lira_online"),
                        n_reference=2, epochs=3, seed=1) for _ in range(2)]  # fmt: skip
    assert json.dumps(runs[0].to_json()) == json.dumps(runs[1].to_json())
    assert runs[0].settings["reference_epochs"] == 3


@pytest.mark.slow
def test_cli_audits_an_image_model(tmp_path, capsys, overfit):
    out = tmp_path / "o.json"
    code = main(["--quiet", "model", "--model", str(overfit["model"]), "--train", str(overfit["train"]), "--population",
                 str(overfit["population"]), "--attacks", "loss,lira_online", "--reference-models", "2",
                 "--reference-epochs", "3", "--json", str(out), "--records", str(tmp_path / "r.csv")])  # fmt: skip
    assert code == 0, capsys.readouterr().err
    body = json.loads(out.read_text())
    assert set(body["attacks"]) == {"loss", "lira_online"}
    assert set(body["attacks"]["lira_online"]["tpr_at_fpr"]["0.01"]) >= {"tpr", "ci_low", "ci_high"}
    assert body["model"]["architecture"] == "small_cnn"
    assert body["settings"]["target"] is None
    assert len((tmp_path / "r.csv").read_text().splitlines()) == 301


def _one_sentence(capsys, argv) -> str:
    assert main(["--quiet", "model", *argv]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


@pytest.mark.slow
def test_bad_combinations_are_one_sentence_each(tmp_path, capsys, overfit):
    tables = numeric_tables(tmp_path / "t")
    onnx = tmp_path / "m.onnx"
    onnx.write_bytes(two_class_onnx())
    npz = ["--train", str(overfit["train"]), "--population", str(overfit["population"])]
    csv = ["--train", str(tables["train"]), "--population", str(tables["population"])]
    said = _one_sentence(capsys, ["--model", str(overfit["model"]), *csv, "--target", "y"])
    assert "safetensors image model" in said
    assert "not tables" in said
    said = _one_sentence(capsys, ["--model", str(onnx), *npz])
    assert "table model (ONNX or skops)" in said
    said = _one_sentence(capsys, ["--model", str(overfit["model"]), *npz, "--target", "label"])
    assert "leave --target out" in said
    said = _one_sentence(capsys, ["--model", str(onnx), *csv])
    assert "--target (Label column) is required" in said
    said = _one_sentence(capsys, ["--model", str(overfit["model"]), "--train", str(overfit["train"]),
                                  "--population", str(tables["population"])])  # fmt: skip
    assert "not tables" in said


def test_images_that_do_not_fit_the_model_are_one_sentence(tmp_path, capsys):
    rng = np.random.default_rng(0)
    model = _untrained_cnn(tmp_path)
    rgb = tmp_path / "rgb.npz"
    np.savez(rgb, images=rng.random((40, 8, 8, 3)).astype(np.float32), labels=np.arange(40) % 10)
    gray = tmp_path / "gray.npz"
    np.savez(gray, images=rng.random((40, 8, 8)).astype(np.float32), labels=np.arange(40) % 10)
    many = tmp_path / "many.npz"
    np.savez(many, images=rng.random((40, 8, 8)).astype(np.float32), labels=np.arange(40) % 12)
    masked = tmp_path / "masked.npz"
    np.savez(masked, images=rng.random((40, 8, 8)).astype(np.float32))
    said = _one_sentence(capsys, ["--model", str(model), "--train", str(rgb), "--population", str(rgb)])
    assert "3 channel(s) but the small_cnn takes 1" in said
    said = _one_sentence(capsys, ["--model", str(model), "--train", str(many), "--population", str(gray)])
    assert "labels up to 11 but the model has 10 classes" in said
    said = _one_sentence(capsys, ["--model", str(model), "--train", str(masked), "--population", str(gray)])
    assert "masked.npz" in said
    assert "lacks the array(s) labels" in said


def test_weights_of_no_builtin_architecture_and_pickles_are_refused(tmp_path):
    import torch
    from safetensors.torch import save

    from audit_core.model.images import load_image_model

    with pytest.raises(InputError, match="does not fit a built-in image architecture"):
        load_image_model(save({"conv1.weight": torch.zeros(4, 1, 3, 3), "head.bias": torch.zeros(10)}), "odd.safetensors")
    with pytest.raises(InputError, match="pickle"):
        read_model_bytes(pickle_bytes(), "weights.safetensors")


def test_a_safetensors_header_that_starts_like_a_pickle_is_not_taken_for_one(tmp_path):
    # the header length is the first 8 bytes, little-endian: 0x0280 .. 0x0580 start like a pickle's PROTO 2 .. 5 opcode
    for pad in range(0, 1200, 8):
        data = _untrained_cnn(tmp_path, metadata={"pad": "x" * pad}).read_bytes()
        if data[0] == 0x80 and 2 <= data[1] <= 5:
            break
    assert data[0] == 0x80
    assert 2 <= data[1] <= 5
    assert read_model_bytes(data, "cnn.safetensors") == data
