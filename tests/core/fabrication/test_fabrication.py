"""Fabricated members (docs/methods.md §3): the mechanisms on 8x8 digits, and bad input.

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
from audit_core.common.errors import InputError
from audit_core.common.roc import tpr_at_fpr
from audit_core.fabrication.architectures import SmallCNN
from audit_core.fabrication.attacks import fabricate, fabricate_grid
from audit_core.fabrication.audit import run_fabrication
from audit_core.fabrication.bundled import load_bundled
from audit_core.fabrication.image_files import load_npz
from audit_core.fabrication.images import split_roles, validate_images, with_model_classes
from audit_core.fabrication.model_files import check_model_input, load_safetensors_model, load_torchscript_model
from audit_core.fabrication.setup import DEFAULT_SIZES, prepare_audit
from audit_core.fabrication.verdict import build_report

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


@pytest.mark.slow
def test_members_are_separable_and_scores_are_oriented(result):
    for mia in ("loss", "lira", "rmia"):
        s = result.scores[mia]
        assert min(s.members.min(), s.non_members.min(), s.fabricated.min()) >= 0  # AR-MIA needs >= 0
        assert result.mia(mia).auc_clean > 0.55, mia  # higher = member


@pytest.mark.slow
def test_mfa_raises_confidence_and_fools_the_mia_more_as_epsilon_grows(result):
    non = float(np.median(result.confidence.non_members))
    conf = [p.median_conf_fabricated for p in result.regime]
    auc = [p.mia_auc_fabricated for p in result.regime]
    assert conf[0] > non
    assert conf == sorted(conf)
    assert auc == sorted(auc, reverse=True)
    assert auc[-1] < result.mia("loss").auc_clean - 0.3


@pytest.mark.slow
def test_gradient_norms_fall_and_mfd_rises_with_epsilon(result):
    norms = [p.median_norm_fabricated for p in result.regime]
    mfd = [p.mfd_auc for p in result.regime]
    assert norms == sorted(norms, reverse=True)
    assert mfd == sorted(mfd)
    # small epsilon: fabricated confidence below the members', no collapse, MFD near chance
    assert result.regime[0].median_conf_fabricated < np.median(result.confidence.members)
    assert mfd[0] < 0.65


@pytest.mark.slow
def test_default_setup_has_a_regime_where_mfd_and_ar_mia_work(result):
    assert max(p.mfd_auc for p in result.regime) >= 0.9
    clean = result.mia("loss").auc_clean
    ok = []
    for lam in result.lambdas:
        for p, ar in zip(result.regime, result.regime_at(lam=lam), strict=True):
            if abs(ar.auc_clean - clean) <= 0.05 and ar.auc_fabricated > p.mia_auc_fabricated + 0.3:
                ok.append((lam, p.epsilon))
    assert ok


@pytest.mark.slow
def test_mfa_fools_at_least_as_much_as_ipgd_at_small_budget(result):
    mfa = [p.mia_auc_fabricated for p in result.budgets if p.attack == "mfa" and p.steps == 5]
    ipgd = [p.mia_auc_fabricated for p in result.budgets if p.attack == "ipgd" and p.steps == 5]
    assert len(mfa) == len(ipgd) == len(EPS)
    assert np.mean(mfa) <= np.mean(ipgd)


@pytest.mark.slow
def test_adaptive_attacker_evades_mfd_only_by_fooling_less(result):
    plain, adaptive = result.adaptive
    assert adaptive.mfd_auc < plain.mfd_auc - 0.1
    assert adaptive.mia_auc_fabricated > plain.mia_auc_fabricated + 0.05
    assert adaptive.median_norm_fabricated > plain.median_norm_fabricated


@pytest.mark.slow
def test_attacks_stay_in_the_ball(setup):
    x, y = setup.data.images[setup.data.non_members[:20]], setup.data.labels[setup.data.non_members[:20]]
    for attack in ("mfa", "ipgd", "icw", "adaptive"):
        xf = fabricate(setup.model, x, y, epsilon=8 / 255, steps=3, attack=attack)
        assert np.abs(xf - x).max() <= 8 / 255 + 1e-6
        assert xf.min() >= 0
        assert xf.max() <= 1
        assert np.abs(xf - x).max() > 0


@pytest.mark.slow
def test_one_batch_over_radii_or_betas_gives_what_one_call_each_gives(setup):
    """The run attacks every radius (and every adaptive beta) as one batch: each image is attacked on its own."""
    x, y = setup.data.images[setup.data.non_members[:30]], setup.data.labels[setup.data.non_members[:30]]
    radii, betas = [4 / 255, 32 / 255], [0.01, 0.1]
    grid = fabricate_grid(setup.model, x, y, epsilons=radii, steps=5, attack="icw")
    adaptive = fabricate_grid(setup.model, x, y, epsilons=[16 / 255], betas=betas, steps=5, attack="adaptive")
    for got, e in zip(grid, radii, strict=True):
        np.testing.assert_allclose(got, fabricate(setup.model, x, y, epsilon=e, steps=5, attack="icw"), atol=1e-6)
    for got, b in zip(adaptive, betas, strict=True):
        want = fabricate(setup.model, x, y, epsilon=16 / 255, steps=5, attack="adaptive", adaptive_beta=b)
        np.testing.assert_allclose(got, want, atol=1e-6)
    assert np.abs(grid[0] - x).max() <= 4 / 255 + 1e-6 < np.abs(grid[1] - x).max()


@pytest.mark.slow
def test_json_keys_and_report(result):
    j = result.to_json()
    for key in ("auc_clean", "auc_fabricated", "eer_fabricated"):
        assert 0 <= j["mia"][key] <= 1
    assert set(j["mfd"]["median_grad_norm"]) == {"members", "non_members", "fabricated"}
    assert {"auc_clean", "auc_fabricated", "by_lambda"} <= set(j["ar_mia"])
    assert [p["lambda"] for p in j["ar_mia"]["by_lambda"]] == list(result.lambdas)
    assert j["epsilon"] == pytest.approx(64 / 255)
    assert j["lambda"] == 1.0
    assert j["reference_architecture"] == "small_cnn"
    for block, key in (("mia", "tpr_at_fpr_clean"), ("mia", "tpr_at_fpr_fabricated"), ("ar_mia", "tpr_at_fpr_clean"),
                       ("ar_mia", "tpr_at_fpr_fabricated"), ("mfd", "tpr_at_fpr")):
        assert set(j[block][key]) == {"0.001", "0.01", "0.1"}
        for k, t in j[block][key].items():
            assert {"tpr", "ci_low", "ci_high", "achieved_fpr", "n_neg", "supported"} <= set(t)
            assert t["ci_low"] <= t["tpr"] <= t["ci_high"]
            assert t["achieved_fpr"] <= float(k)
            assert t["supported"] == (t["n_neg"] >= 10 / float(k))
    for m in result.mias:
        assert set(j["mia"]["by_attack"][m]["tpr_at_fpr_clean"]) == {"0.001", "0.01", "0.1"}
        assert "tpr_at_fpr_fabricated" in j["ar_mia"]["by_attack"][m]
    html = build_report(result, lam=3.0).to_html()
    assert "Regime map" in html
    assert "lambda=3" in html
    assert "TPR at low FPR" in html


@pytest.mark.slow
def test_tpr_intervals_are_roc_s_on_the_same_scores(result):
    """The fabrication numbers are roc.tpr_at_fpr on the groups they name, not a private re-implementation."""
    s, n = result.scores["loss"], result.norms
    j = result.to_json()
    lab = lambda pos, neg: np.r_[np.ones(pos.size, bool), np.zeros(neg.size, bool)]  # noqa: E731
    want = tpr_at_fpr(np.r_[s.members, s.fabricated], lab(s.members, s.fabricated), 0.1)
    got = j["mia"]["tpr_at_fpr_fabricated"]["0.1"]
    assert (got["tpr"], got["ci_low"], got["ci_high"], got["n_neg"]) == (want.tpr, want.ci_low, want.ci_high, want.n_neg)
    mfd = tpr_at_fpr(np.r_[-n.fabricated, -n.members], lab(n.fabricated, n.members), 0.1)
    assert j["mfd"]["tpr_at_fpr"]["0.1"]["tpr"] == mfd.tpr
    assert j["mfd"]["tpr_at_fpr"]["0.1"]["n_neg"] == n.members.size  # MFD's negatives are the real members


@pytest.mark.slow
def test_tpr_at_low_fpr_tells_the_regime(result):
    """At 64/255 the gradient norm has collapsed: MFD flags most fabricated images at 10 % of members flagged,
    the vanilla MIA calls fabricated images members (few members above them), AR-MIA recovers."""
    mfd = result.mfd().tpr_at_fpr["0.1"]
    assert mfd.supported
    assert mfd.tpr > 0.6
    assert mfd.ci_low > 0.3
    van = result.mia("loss").tpr_fabricated["0.1"]
    ar = result.mia("loss", lam=result.lam).tpr_fabricated["0.1"]
    assert van.tpr < 0.1
    assert ar.tpr > van.tpr + 0.2


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


def _exit_status(argv: list[str]) -> int:
    from audit_core.__main__ import main

    try:
        return main(argv)
    except SystemExit as exc:  # argparse's refusal of a value it cannot convert
        return int(exc.code)


@pytest.mark.parametrize("eps", ["0", "-1/255", "2", "abc", "1/0"])
def test_bad_epsilon_is_one_sentence_before_any_file_is_read(eps, capsys):
    assert _exit_status(["fabrication", "--dataset", "digits", "--epsilon", eps]) == 2
    err = capsys.readouterr().err
    assert "epsilon" in err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_bad_steps_are_one_sentence(capsys):
    assert _exit_status(["fabrication", "--dataset", "digits", "--steps", "2.5"]) == 2  # not a whole number
    assert _exit_status(["fabrication", "--dataset", "digits", "--steps", "0"]) == 2
    assert "--steps must be a whole number from 1 to 500" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--dataset", "digits", "--attack", "adaptive"], "argument --attack: invalid choice: 'adaptive'"),
        (["--dataset", "digits", "--architecture", "vgg"], "argument --architecture: invalid choice: 'vgg'"),
        (["--dataset", "cifar"], "argument --dataset: invalid choice: 'cifar'"),
        (["--dataset", "digits", "--model-format", "onnx"], "argument --model-format: invalid choice: 'onnx'"),
        (["--dataset", "digits", "--images", "x.npz"], "Give either --images (your own data) or --dataset"),
        (["--model", "m.safetensors"], "--model needs --images"),
    ],
)
def test_settings_and_inputs_are_refused_once_before_any_work(argv, said, capsys):
    """Validate once: the knobs (choices) and the audit's check refuse these; the computation trusts what it gets."""
    assert _exit_status(["fabrication", *argv, "--json", "out.json"]) == 2
    err = capsys.readouterr().err
    assert said in err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("bad", [{"attack": "adaptive"}, {"architecture": "vgg"}, {"dataset": "cifar"},
                                 {"model_format": "onnx"}, {"epsilon": 0.0}, {"steps": 0}, {"lam": -1.0}])
def test_the_knobs_refuse_what_the_computation_no_longer_checks(bad):
    from audit_core.fabrication.spec import FabricationSettings

    with pytest.raises(InputError):
        FabricationSettings(**bad).validate()


# --------------------------------------------------------------------------- CLI
@pytest.mark.slow
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


@pytest.mark.slow
def test_cli_images_takes_a_png_folder(tmp_path, setup, capsys):
    """``--images`` takes a folder of PNGs with its labels.csv; same pixels as an .npz, same audit."""
    from PIL import Image

    d = setup.data
    keep = np.r_[d.members[:30], d.non_members[:30]]  # reference pool under 30: no reference models, fast
    pixels = np.round(d.images[keep, 0] * 255).astype(np.uint8)
    labels, is_member = d.labels[keep], (d.role[keep] == 1).astype(np.int8)
    folder = tmp_path / "pngs"
    folder.mkdir()
    rows = ["file,label,is_member"]
    for i, img in enumerate(pixels):
        Image.fromarray(img).save(folder / f"{i}.png")
        rows.append(f"{i}.png,{labels[i]},{is_member[i]}")
    (folder / "labels.csv").write_text("\n".join(rows))
    npz = tmp_path / "pngs.npz"
    np.savez(npz, images=pixels[:, None].astype(np.float32) / 255.0, labels=labels, is_member=is_member)
    runs = {}
    for source in (folder, npz):
        out = tmp_path / f"{source.suffix or 'folder'}.json"
        argv = ["--quiet", "fabrication", "--images", str(source), "--epsilon", "32/255", "--steps", "2", "--json", str(out)]
        assert main(argv) == 0, capsys.readouterr().err
        runs[source] = json.loads(out.read_text())
    j = runs[folder]
    assert Path(j["dataset"]).name == "pngs"
    assert j["n_members"] == 30
    assert j["n_non_members"] == int((split_roles(is_member, seed=0) == 0).sum())
    assert {k: v for k, v in j.items() if k != "dataset"} == {k: v for k, v in runs[npz].items() if k != "dataset"}


def test_trusted_torchscript_and_png_folder(tmp_path):
    from PIL import Image

    from audit_core.fabrication.image_files import load_png_folder

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


# --------------------------------------------------------------------------- reference architecture
def test_architecture_is_read_from_the_weights():
    from audit_core.fabrication.architectures import ResNet18, architecture_of

    assert architecture_of(SmallCNN(1, 10), in_channels=1, n_classes=10) == "small_cnn"
    assert architecture_of(ResNet18(3, 4), in_channels=3, n_classes=4) == "resnet18"
    scripted = torch.jit.script(SmallCNN(1, 3).eval())
    assert architecture_of(scripted, in_channels=1, n_classes=3) == "small_cnn"
    custom = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, 10))
    assert architecture_of(custom, in_channels=1, n_classes=10) is None
    assert architecture_of(SmallCNN(1, 10), in_channels=1, n_classes=3) is None  # other hyper-parameters


@pytest.mark.slow
def test_uploaded_resnet18_gets_resnet18_reference_models(tmp_path):
    """An uploaded ResNet-18 is compared against ResNet-18 references trained like the bundled target."""
    from audit_core.fabrication.architectures import ResNet18
    from audit_core.fabrication.inference import predict_logits
    from audit_core.fabrication.setup import setup_fabrication
    from audit_core.fabrication.training import TrainConfig, train_models

    d = load_bundled("digits", seed=1, n_members=40, n_non_members=80)
    keep = np.r_[d.members, d.non_members]
    is_member = np.r_[np.ones(d.members.size), np.zeros(d.non_members.size)].astype(np.int8)
    train = TrainConfig(epochs=1, batch_size=16, lr=2e-3, weight_decay=0.0, label_smoothing=0.1)
    subset = np.zeros((1, d.labels.size), bool)
    subset[0, d.members] = True
    (target,) = train_models(d.images, d.labels, subset, n_classes=10, config=train, arch="resnet18", seed=1,
                             device=torch.device("cpu"))
    images, weights = tmp_path / "imgs.npz", tmp_path / "resnet18.safetensors"
    np.savez(images, images=d.images[keep], labels=d.labels[keep], is_member=is_member)
    weights.write_bytes(st_save({k: v.cpu().contiguous() for k, v in target.state_dict().items()}))

    setup = setup_fabrication(images=images, model=weights, architecture="resnet18", n_reference_models=2,
                              train=train, seed=0, device=torch.device("cpu"))
    assert isinstance(setup.model, ResNet18)
    assert setup.reference_architecture == "resnet18"
    assert len(setup.refs.models) == 2
    assert all(isinstance(m, ResNet18) for m in setup.refs.models)
    assert "resnet18" in setup.g_ref_source
    assert {i.name for i in setup.inputs} == {"imgs.npz", "resnet18.safetensors"}
    assert np.isfinite(setup.g_ref)
    assert setup.g_ref > 0
    # batch norm in eval mode uses the statistics of the model's own training images (3 steps of momentum 0.1
    # alone would leave 0.9^3 = 73 % of the initial zero mean in them)
    with torch.no_grad():
        feats = target.conv1(torch.as_tensor(d.images[d.members])).transpose(0, 1).flatten(1)
    assert torch.allclose(target.bn1.running_mean, feats.mean(1), atol=1e-5)
    assert torch.allclose(target.bn1.running_var, feats.var(1), rtol=1e-4)
    # two distinct reference models
    x_pool = torch.as_tensor(setup.data.images[setup.data.reference])
    a, b = (predict_logits(m, x_pool) for m in setup.refs.models)
    assert not torch.allclose(a, b)

    r = run_fabrication(setup, epsilon=32 / 255, steps=3, epsilons=(32 / 255,), budgets=(), adaptive_betas=(),
                        seed=0)
    assert r.mias == ("loss", "lira", "rmia")
    for mia in r.mias:
        s = r.scores[mia]
        for g in (s.members, s.non_members, s.fabricated):
            assert np.all(np.isfinite(g))
            assert g.min() >= 0
        assert 0 <= r.mia(mia).auc_clean <= 1
    # fabrication raises the audited ResNet's confidence on non-members
    assert np.median(r.confidence.fabricated) > np.median(r.confidence.non_members)
    assert r.to_json()["reference_architecture"] == "resnet18"


def test_a_model_of_no_built_in_architecture_gets_no_references():
    from audit_core.fabrication.training import TrainConfig

    n_mem, n_non = 40, 80
    d = load_bundled("digits", seed=0, n_members=n_mem, n_non_members=n_non)
    d = with_model_classes(d, 10)
    custom = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, 10))
    setup = prepare_audit(d, model=custom, train=TrainConfig(epochs=1), n_reference_models=2, seed=0,
                          device=torch.device("cpu"))
    assert setup.refs is None
    assert setup.reference_architecture is None
    assert "not of a built-in architecture" in setup.g_ref_source


@pytest.mark.slow
def test_json_reports_an_epsilon_lower_bound_per_mia(result):
    j = result.to_json()
    e = j["mia"]["epsilon_lower_bound"]
    assert set(e) >= {"epsilon", "delta", "confidence", "threshold"}
    assert e["epsilon"] >= 0.0
    assert e["n_members_evaluated"] + e["n_non_members_evaluated"] < j["n_members"] + j["n_non_members"]  # held-out half
    assert all("epsilon_lower_bound" in block for block in j["mia"]["by_attack"].values())


@pytest.mark.slow
def test_work_past_the_cpu_limit_is_refused_before_it_starts(tmp_path, capsys):
    """100,000 MNIST-sized images and no model (a 0.6 MB file that inflated to 583 MB hung the page for an hour, training
    here): one sentence, exit 2, before any training, with what to change."""
    from audit_core.__main__ import main
    from tests.conftest import spy

    n = 100_000
    path = tmp_path / "many.npz"
    np.savez_compressed(path, images=np.zeros((n, 1, 28, 28), dtype=np.float32), labels=np.arange(n) % 10,
                        is_member=np.arange(n) % 2)  # fmt: skip
    with pytest.MonkeyPatch.context() as mp:
        fits = spy(mp, "audit_core.fabrication.setup", "train_models")
        assert main(["--quiet", "fabrication", "--images", str(path), "--json", str(tmp_path / "out.json")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "would take about" in err[0]
    assert "under 15 min" in err[0]
    assert "fewer images" in err[0]
    assert not fits
    assert not (tmp_path / "out.json").exists()


def test_the_cpu_limit_speaks_only_to_a_cpu():
    from audit_core.common.errors import InputError
    from audit_core.fabrication.progress import check_cpu_time

    check_cpu_time(1e9, pixels=784, arch="small_cnn", device_type="cuda", what="x", fix="y")  # a GPU: not limited
    check_cpu_time(1e5, pixels=784, arch="small_cnn", device_type="cpu", what="x", fix="y")  # about 20 s: fine
    with pytest.raises(InputError, match=r"^ResNet work would take about \d+ min on this machine's CPU.*: y\.$"):
        check_cpu_time(1e5, pixels=3 * 32 * 32, arch="resnet18", device_type="cpu", what="ResNet work", fix="y")
