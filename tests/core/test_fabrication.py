"""Fabricated members (METHODS.md §3): the mechanisms on 8x8 digits, and bad input.

Asserts mechanisms, not a paper's numbers: MFA raises non-members' confidence, fools the
LOSS attack more as epsilon grows, collapses the gradient norm past the members'
confidence, MFD and AR-MIA see it in the default setup, the adaptive attacker pays for
evading MFD.
"""

from __future__ import annotations

import io
import json
import pickle
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import save as st_save

from audit_core.__main__ import main
from audit_core.errors import InputError
from audit_core.fabrication import (
    DEFAULT_SIZES,
    fabricate,
    parse_epsilon,
    prepare_audit,
    run_fabrication,
)
from audit_core.image_models import (
    SmallCNN,
    check_model_input,
    load_bundled,
    load_npz,
    load_safetensors_model,
    load_torchscript_model,
    split_roles,
    validate_images,
    with_model_classes,
)
from audit_core.plots.fabrication import build_report

EPS = (4 / 255, 16 / 255, 64 / 255)


@pytest.fixture(scope="module")
def setup():
    n_mem, n_non = DEFAULT_SIZES["digits"]
    data = load_bundled("digits", seed=0, n_members=n_mem, n_non_members=n_non)
    return prepare_audit(data, n_reference_models=4, seed=0, device=torch.device("cpu"))


@pytest.fixture(scope="module")
def result(setup):
    return run_fabrication(
        setup, epsilon=64 / 255, steps=20, attack="mfa", lam=1.0, epsilons=EPS, budgets=(5,),
        compare_attacks=("mfa", "ipgd"), adaptive_betas=(0.0, 0.1), n_compare=100, seed=0,
    )


def test_members_are_separable_and_scores_are_oriented(result):
    for mia in ("loss", "lira", "rmia"):
        s = result.scores[mia]
        assert min(s.members.min(), s.non_members.min(), s.fabricated.min()) >= 0  # AR-MIA needs >= 0
        assert result.mia(mia).auc_clean > 0.55, mia  # higher = member


def test_mfa_raises_confidence_and_fools_the_mia_more_as_epsilon_grows(result):
    non = float(np.median(result.confidence.non_members))
    conf = [p.median_conf_fabricated for p in result.regime]
    auc = [p.mia_auc_fabricated for p in result.regime]
    assert conf[0] > non
    assert conf == sorted(conf)
    assert auc == sorted(auc, reverse=True)
    assert auc[-1] < result.mia("loss").auc_clean - 0.3


def test_gradient_norms_fall_and_mfd_rises_with_epsilon(result):
    norms = [p.median_norm_fabricated for p in result.regime]
    mfd = [p.mfd_auc for p in result.regime]
    assert norms == sorted(norms, reverse=True)
    assert mfd == sorted(mfd)
    # small epsilon: fabricated confidence below the members', no collapse, MFD near chance
    assert result.regime[0].median_conf_fabricated < np.median(result.confidence.members)
    assert mfd[0] < 0.65


def test_default_setup_has_a_regime_where_mfd_and_ar_mia_work(result):
    assert max(p.mfd_auc for p in result.regime) >= 0.9
    clean = result.mia("loss").auc_clean
    ok = []
    for lam in result.lambdas:
        for p, ar in zip(result.regime, result.regime_at(lam=lam), strict=True):
            if abs(ar.auc_clean - clean) <= 0.05 and ar.auc_fabricated > p.mia_auc_fabricated + 0.3:
                ok.append((lam, p.epsilon))
    assert ok


def test_mfa_fools_at_least_as_much_as_ipgd_at_small_budget(result):
    mfa = [p.mia_auc_fabricated for p in result.budgets if p.attack == "mfa" and p.steps == 5]
    ipgd = [p.mia_auc_fabricated for p in result.budgets if p.attack == "ipgd" and p.steps == 5]
    assert len(mfa) == len(ipgd) == len(EPS)
    assert np.mean(mfa) <= np.mean(ipgd)


def test_adaptive_attacker_evades_mfd_only_by_fooling_less(result):
    plain, adaptive = result.adaptive
    assert adaptive.mfd_auc < plain.mfd_auc - 0.1
    assert adaptive.mia_auc_fabricated > plain.mia_auc_fabricated + 0.05
    assert adaptive.median_norm_fabricated > plain.median_norm_fabricated


def test_attacks_stay_in_the_ball(setup):
    x, y = setup.data.images[setup.data.non_members[:20]], setup.data.labels[setup.data.non_members[:20]]
    for attack in ("mfa", "ipgd", "icw", "adaptive"):
        xf = fabricate(setup.model, x, y, epsilon=8 / 255, steps=3, attack=attack)
        assert np.abs(xf - x).max() <= 8 / 255 + 1e-6
        assert xf.min() >= 0
        assert xf.max() <= 1
        assert np.abs(xf - x).max() > 0


def test_json_keys_and_report(result):
    j = result.to_json()
    for key in ("auc_clean", "auc_fabricated", "eer_fabricated"):
        assert 0 <= j["mia"][key] <= 1
    assert set(j["mfd"]["median_grad_norm"]) == {"members", "non_members", "fabricated"}
    assert {"auc_clean", "auc_fabricated", "by_lambda"} <= set(j["ar_mia"])
    assert [p["lambda"] for p in j["ar_mia"]["by_lambda"]] == list(result.lambdas)
    assert j["epsilon"] == pytest.approx(64 / 255)
    assert j["lambda"] == 1.0
    html = build_report(result, lam=3.0).to_html()
    assert "Regime map" in html
    assert "lambda=3" in html


# --------------------------------------------------------------------------- bad input
def _npz(**arrays) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def _imgs(n=40, shape=(8, 8)):
    rng = np.random.default_rng(0)
    return rng.random((n, *shape)).astype(np.float32), rng.integers(0, 3, n), np.arange(n) % 2


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda x, y, m: (x, y[:-1], m), "labels"),
        (lambda x, y, m: (x, y - 5, m), "must lie in"),
        (lambda x, y, m: (x, y, np.ones_like(m)), "every image"),
        (lambda x, y, m: (x * 255, y, m), "scale them to"),
        (lambda x, y, m: (x, y.astype(float) + 0.5, m), "whole numbers"),
    ],
)
def test_bad_images_are_refused_with_a_sentence(change, message):
    x, y, m = change(*_imgs())
    with pytest.raises(InputError, match=message):
        load_npz(_npz(images=x, labels=y, is_member=m))


def test_npz_with_objects_is_never_unpickled():
    x, y, _ = _imgs()
    raw = _npz(images=x, labels=y, is_member=np.array([{"a": 1}] * 40, dtype=object))
    with pytest.raises(InputError, match="pickles"):
        load_npz(raw)


def test_validate_and_split_helpers():
    x, y, m = _imgs()
    xi, _, k = validate_images(x, y)
    assert xi.shape == (40, 1, 8, 8)
    assert k == 3
    role = split_roles(m, seed=0)
    assert (role == 1).sum() == 20
    assert (role == 2).sum() == 10


def test_image_shape_the_model_does_not_take():
    model = SmallCNN(1, 10).eval()
    with pytest.raises(InputError, match="does not take images"):
        check_model_input(model, (3, 8, 8), 10)
    with pytest.raises(InputError, match="classes"):
        check_model_input(model, (1, 8, 8), 4)


def test_weights_that_do_not_fit_the_architecture():
    raw = st_save(SmallCNN(1, 10).state_dict())
    with pytest.raises(InputError, match="resnet18"):
        load_safetensors_model(raw, arch="resnet18", in_channels=1, n_classes=10)
    with pytest.raises(InputError, match="3 classes"):
        load_safetensors_model(raw, arch="small_cnn", in_channels=1, n_classes=3)
    with pytest.raises(InputError, match="channel"):
        load_safetensors_model(raw, arch="small_cnn", in_channels=3)
    data = load_npz(_npz(images=_imgs()[0], labels=np.arange(40) % 12, is_member=np.arange(40) % 2))
    with pytest.raises(InputError, match="model has 10 classes"):
        with_model_classes(data, 10)
    model = load_safetensors_model(raw, arch="small_cnn", in_channels=1, n_classes=10, device="cpu")
    assert isinstance(model, SmallCNN)


class _Evil:
    def __reduce__(self):
        return (Path.touch, (Path("/tmp/fabrication_pwned_marker"),))


def test_loading_weights_never_runs_code_from_the_file(tmp_path):
    marker = Path("/tmp/fabrication_pwned_marker")
    marker.unlink(missing_ok=True)
    buf = io.BytesIO()
    torch.save({"conv1.weight": _Evil()}, buf)
    for raw in (buf.getvalue(), pickle.dumps(_Evil())):
        with pytest.raises(InputError):
            load_safetensors_model(raw, arch="small_cnn", in_channels=1, n_classes=10)
    with pytest.raises(InputError, match="trust"):
        load_torchscript_model(buf.getvalue(), trusted=False)
    assert not marker.exists()


@pytest.mark.parametrize("eps", ["0", "-1/255", "2", "abc"])
def test_bad_epsilon(eps):
    with pytest.raises(InputError, match=r"[Ee]psilon"):
        parse_epsilon(eps)


def test_bad_steps(setup):
    x, y = setup.data.images[:20], setup.data.labels[:20]
    with pytest.raises(InputError, match="steps"):
        fabricate(setup.model, x, y, epsilon=8 / 255, steps=0)
    with pytest.raises(InputError, match=r"[Ee]psilon"):
        fabricate(setup.model, x, y, epsilon=0.0, steps=5)


# --------------------------------------------------------------------------- CLI
def test_cli_bad_input_exits_2(capsys):
    assert main(["fabrication", "--dataset", "digits", "--epsilon", "0"]) == 2
    assert "Epsilon" in capsys.readouterr().err
    assert main(["fabrication", "--dataset", "digits", "--steps", "0"]) == 2
    assert "steps" in capsys.readouterr().err


def test_cli_with_uploaded_images_and_weights(tmp_path, setup, capsys):
    d = setup.data
    keep = np.r_[d.members, d.non_members[:60], d.reference[:40]]  # small: the CLI test stays fast
    images = tmp_path / "imgs.npz"
    np.savez(images, images=d.images[keep], labels=d.labels[keep], is_member=(d.role[keep] == 1).astype(np.int8))
    weights = tmp_path / "model.safetensors"
    weights.write_bytes(st_save({k: v.cpu() for k, v in setup.model.state_dict().items()}))
    out = tmp_path / "out.json"
    rc = main(["--quiet", "fabrication", "--images", str(images), "--model", str(weights), "--epsilon", "32/255",
               "--steps", "3", "--json", str(out)])
    assert rc == 0, capsys.readouterr().err
    j = json.loads(out.read_text())
    assert j["n_members"] == d.members.size
    assert j["epsilon"] == pytest.approx(32 / 255)
    assert j["mia"]["auc_fabricated"] < j["mia"]["auc_clean"]
    assert {"auc", "median_grad_norm"} <= set(j["mfd"])
    assert len(j["ar_mia"]["by_lambda"]) >= 3


def test_trusted_torchscript_and_png_folder(tmp_path):
    from PIL import Image

    from audit_core.image_models import load_png_folder

    model = SmallCNN(1, 3).eval()
    buf = io.BytesIO()
    torch.jit.save(torch.jit.script(model), buf)
    loaded = load_torchscript_model(buf.getvalue(), trusted=True, device="cpu")
    x = torch.rand(2, 1, 8, 8)
    assert torch.allclose(loaded(x), model(x))

    imgs, labels, mask = _imgs()
    rows = ["file,label,is_member"]
    for i, img in enumerate(imgs):
        Image.fromarray((img * 255).astype(np.uint8)).save(tmp_path / f"{i}.png")
        rows.append(f"{i}.png,{labels[i]},{mask[i]}")
    (tmp_path / "labels.csv").write_text("\n".join(rows))
    data = load_png_folder(tmp_path, seed=0)
    assert data.images.shape == (40, 1, 8, 8)
    assert np.abs(data.images - imgs[:, None]).max() <= 1 / 255
    (tmp_path / "labels.csv").write_text("file,label,is_member\n../x.png,0,1\n")
    with pytest.raises(InputError, match="not in the folder"):
        load_png_folder(tmp_path, seed=0)
