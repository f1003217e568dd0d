"""Fabricated members as a registered audit (audit_core.contract): inputs, settings, run, verdict, report."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from audit_core.common.limits import ATTACK_STEPS, LAMBDA
from audit_core.common.runtime import sub_progress
from audit_core.contract import Audit, InputSpec, Outcome, Ran, Settings, knob

ARCHITECTURES = ("small_cnn", "resnet18")
BUNDLED = ("digits", "mnist")
ATTACKS = ("mfa", "ipgd", "icw")
MODEL_FORMATS = ("safetensors", "torchscript")


@dataclass(frozen=True)
class FabricationSettings(Settings):
    dataset: str | None = knob(None, "Bundled data set", "A bundled data set instead of --images: digits or mnist.",
                               choices=BUNDLED)  # fmt: skip
    architecture: str = knob("small_cnn", "Architecture of the weights", "small_cnn or a CIFAR-style ResNet-18. The "
                             "LiRA / RMIA reference models are trained with the architecture of the audited model.",
                             choices=ARCHITECTURES)  # fmt: skip
    model_format: str = knob("safetensors", "Model format", "safetensors weights (numbers only) or TorchScript "
                             "(contains code: loaded only with --trust-torchscript).", choices=MODEL_FORMATS)  # fmt: skip
    trust_torchscript: bool = knob(False, "I trust this TorchScript file (it contains code)", "Safetensors weights "
                                   "hold only numbers and never run code; TorchScript is loaded only with this.")  # fmt: skip
    epsilon: str | None = knob(None, "Epsilon (L-inf radius)", "e.g. 8/255 (default: the data set's, 32/255 for the "
                               "bundled ones, where the effects show); checked before any file is read")  # fmt: skip
    steps: int = knob(40, "Attack steps T", "Iterations of the headline attack, the regime map and the adaptive "
                      "attacker (the attack comparison also runs T = 5 and 40).",
                      bound=ATTACK_STEPS)  # fmt: skip
    lam: float = knob(1.0, "AR-MIA lambda (normalised: lambda = 1 gives a typical member weight tanh(1) = 0.76)",
                      "docs/methods.md §3. Moving it re-scores; it never re-runs the attack.", bound=LAMBDA, flag="--lambda",
                      rescore=True)  # fmt: skip
    attack: str = knob("mfa", "Attack", "MFA (momentum + cosine steps), I-PGD or I-CW.", choices=ATTACKS)


def prepare_setup(inputs, s: FabricationSettings, *, seed: int, progress=None):
    """The data, the audited model and the reference models (the slow part; the page keeps it across attacks)."""
    from audit_core.common.errors import InputError
    from audit_core.fabrication.audit import audit_epsilon, setup_fabrication

    images, model = inputs.get("images"), inputs.get("model")
    audit_epsilon(s.epsilon, s.dataset)  # a bad epsilon is one sentence before any model is trained
    if images is not None and s.dataset:
        raise InputError("Give either --images (your own data) or --dataset (a bundled one), not both.")
    if model is not None and images is None:
        raise InputError("--model needs --images: the images, labels and member mask the model is audited on.")
    names = {k: Path(v).name for k, v in inputs.paths.items()}  # named in the JSON and report by file name
    return setup_fabrication(
        dataset=None if images is not None else (s.dataset or "digits"), images=images, images_name=names.get("images"),
        model=model, model_name=names.get("model"), model_format=s.model_format, architecture=s.architecture,
        trusted=s.trust_torchscript, seed=seed, progress=progress,
    )  # fmt: skip


def run_attack(setup, s: FabricationSettings, *, seed: int, progress=None):
    """Fabricate members at ``epsilon`` and measure MFD and AR-MIA on a prepared setup."""
    from audit_core.fabrication.audit import audit_epsilon, run_fabrication

    return run_fabrication(setup, epsilon=audit_epsilon(s.epsilon, s.dataset), steps=s.steps, attack=s.attack,
                           lam=s.lam, seed=seed, progress=progress)  # fmt: skip


def _run(inputs, s: FabricationSettings, *, seed, progress=None, client=None):
    from audit_core.fabrication.audit import SETUP_SHARE

    setup = prepare_setup(inputs, s, seed=seed, progress=sub_progress(progress, 0.0, SETUP_SHARE))
    result = run_attack(setup, s, seed=seed, progress=sub_progress(progress, SETUP_SHARE, 1.0))
    return Ran(result, {"setup_inputs": list(setup.inputs)})


def _rescore(result, s: FabricationSettings, *, seed: int):
    """AR-MIA at another lambda: the attack and the gradient norms are kept."""
    return result.at_lambda(s.lam)


def _decision(result):
    from audit_core.fabrication.verdict import decision

    return decision(result)


def _verdict(result) -> str:
    from audit_core.fabrication.verdict import verdict

    return verdict(result)


def _report(outcome: Outcome):
    from audit_core.fabrication.verdict import build_report

    return build_report(outcome.value, inputs=outcome.extras.get("setup_inputs", []))


FABRICATION = Audit(
    name="fabrication",
    title="Fabricated members",
    icon="🎭",
    question="Can membership evidence be forged, and can the forgery be detected?",
    needs="images, labels and a member mask (.npz or a folder of PNGs), and model weights (safetensors); "
    "or the bundled digits.",
    method="Member fabrication attack (MFA) vs I-PGD / I-CW, detection by gradient-norm collapse (MFD) and the "
    "adversarially robust MIA, with epsilon and lambda to tune.",
    inputs=(
        InputSpec("images", ".npz with images, labels and member mask (or a folder of PNGs)", required=False, load=None),
        InputSpec("model", "model weights (.safetensors) for --architecture, or TorchScript", required=False, load=None),
    ),
    settings=FabricationSettings,
    run=_run,
    rescore=_rescore,
    verdict=_verdict,
    decision=_decision,
    report=_report,
    summary=lambda outcome: [],
    page="views/fabrication.py",
    section="Trained models",
)
