"""Fabricated members as a registered audit (audit_core.contract): inputs, settings, run, verdict, report."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from audit_core.common.errors import InputError
from audit_core.common.limits import ATTACK_STEPS, EPSILON_RADIUS, LAMBDA
from audit_core.contract import Audit, Context, Inputs, InputSpec, Outcome, Settings, knob
from audit_core.fabrication.choices import (
    ARCHITECTURES,
    ATTACKS,
    BUNDLED_DATASETS,
    DEFAULT_EPSILON,
    LAMBDAS,
    MIAS,
    MODEL_FORMATS,
    SETUP_SHARE,
)

if TYPE_CHECKING:  # torch is imported only when an audit runs
    from audit_core.common.decision import Decision
    from audit_core.common.report import Report
    from audit_core.fabrication.result import FabricationResult
    from audit_core.fabrication.setup import FabricationSetup

__all__ = ["FABRICATION", "LAMBDAS", "MIAS", "FabricationSettings"]  # LAMBDAS, MIAS: the page's choice lists


def _parse_epsilon(text: str) -> float:
    """``"8/255"``, ``"0.03"`` -> the L-inf radius as a number (its bound is the knob's).

    >>> round(_parse_epsilon("8/255"), 5)
    0.03137
    """
    try:
        num, _, den = str(text).partition("/")
        return float(num) / float(den or 1)
    except (ValueError, ZeroDivisionError):
        raise InputError(f"epsilon {text!r} is not a number; write it like 8/255 or 0.03") from None


def _epsilon_text(value: float) -> str:
    """The radius as the CLI takes it: ``"8/255"`` when it is a whole number of 255ths, else the number."""
    k = value * 255
    return f"{round(k)}/255" if abs(k - round(k)) < 1e-9 else repr(value)


@dataclass(frozen=True)
class FabricationSettings(Settings):
    """The fabrication audit's knobs: the data and model (setup stage), the headline attack (run), lambda (re-score)."""

    dataset: str | None = knob(None, "Bundled data set", "A bundled data set instead of --images: digits or mnist.",
                               choices=BUNDLED_DATASETS, stage="setup")  # fmt: skip
    architecture: str = knob("small_cnn", "Architecture of the weights", "small_cnn or a CIFAR-style ResNet-18. The "
                             "LiRA / RMIA reference models are trained with the architecture of the audited model.",
                             choices=ARCHITECTURES, stage="setup")  # fmt: skip
    model_format: str = knob("safetensors", "Model format", "safetensors weights (numbers only) or TorchScript "
                             "(contains code: loaded only with --trust-torchscript).", choices=MODEL_FORMATS,
                             stage="setup")  # fmt: skip
    trust_torchscript: bool = knob(False, "I trust this TorchScript file (it contains code)", "Safetensors weights "
                                   "hold only numbers and never run code; TorchScript is loaded only with this.",
                                   stage="setup")  # fmt: skip
    epsilon: float = knob(DEFAULT_EPSILON, "Epsilon (L-inf radius)", "e.g. 8/255 or 0.03 (pixel scale [0, 1]); 32/255 "
                          "by default, where the effects show on the bundled sets", bound=EPSILON_RADIUS,
                          parse=_parse_epsilon, format=_epsilon_text)  # fmt: skip
    steps: int = knob(40, "Attack steps T", "Iterations of the headline attack, the regime map and the adaptive "
                      "attacker (the attack comparison also runs T = 5 and 40).", bound=ATTACK_STEPS)  # fmt: skip
    lam: float = knob(1.0, "AR-MIA lambda (normalised: lambda = 1 gives a typical member weight tanh(1) = 0.76)",
                      "docs/methods.md §3. Moving it re-scores; it never re-runs the attack.", bound=LAMBDA, flag="--lambda",
                      stage="rescore")  # fmt: skip
    attack: str = knob("mfa", "Attack", "MFA (momentum + cosine steps), I-PGD or I-CW.", choices=ATTACKS)


def _check(inputs: Inputs, s: FabricationSettings) -> None:
    images, model = inputs.get("images"), inputs.get("model")
    if images is not None and s.dataset:
        raise InputError("Give either --images (your own data) or --dataset (a bundled one), not both.")
    if model is not None and images is None:
        raise InputError("--model needs --images: the images, labels and member mask the model is audited on.")


def _prepare(inputs: Inputs, s: FabricationSettings, ctx: Context) -> FabricationSetup:
    """The data, the audited model and the reference models (the slow part, kept across attacks)."""
    from audit_core.fabrication.setup import setup_fabrication

    images = inputs.get("images")
    return setup_fabrication(
        dataset=s.dataset or "digits", images=images,
        images_name=inputs.name("images"), model=inputs.get("model"), model_name=inputs.name("model"),
        model_format=s.model_format, architecture=s.architecture, trusted=s.trust_torchscript, seed=ctx.seed,
        progress=ctx.progress,
    )  # fmt: skip


def _run(inputs: Inputs, s: FabricationSettings, ctx: Context) -> FabricationResult:
    """Fabricate members at ``epsilon`` and measure MFD and AR-MIA on the prepared models."""
    from audit_core.fabrication.audit import run_fabrication

    return run_fabrication(ctx.prepared, epsilon=s.epsilon, steps=s.steps, attack=s.attack, lam=s.lam, seed=ctx.seed,
                           progress=ctx.progress)  # fmt: skip


def _rescore(result: FabricationResult, s: FabricationSettings, ctx: Context) -> FabricationResult:
    """AR-MIA at another lambda: the attack and the gradient norms are kept."""
    return result.at_lambda(s.lam)


def _decision(result: FabricationResult) -> Decision:
    from audit_core.fabrication.verdict import decision

    return decision(result)


def _verdict(result: FabricationResult) -> str:
    from audit_core.fabrication.verdict import verdict

    return verdict(result)


def _report(outcome: Outcome[FabricationSettings, FabricationResult]) -> Report:
    from audit_core.fabrication.verdict import build_report

    return build_report(outcome.value, inputs=list(outcome.value.inputs))


FABRICATION: Audit[FabricationSettings, FabricationResult] = Audit(
    name="fabrication",
    title="Fabricated members",
    icon="🎭",
    question="Can membership evidence be forged, and can the forgery be detected?",
    needs="images, labels and a member mask (.npz or a folder of PNGs), and model weights (safetensors); "
    "or the bundled digits.",
    method="Member fabrication attack (MFA) vs I-PGD / I-CW, detection by gradient-norm collapse (MFD) and the "
    "adversarially robust MIA, with epsilon and lambda to tune.",
    inputs=(
        InputSpec("images", ".npz with images, labels and member mask (or a folder of PNGs)", required=False, table=False),
        InputSpec("model", "model weights (.safetensors) for --architecture, or TorchScript", required=False, table=False),
    ),
    settings=FabricationSettings,
    check=_check,
    prepare=_prepare,
    setup_share=SETUP_SHARE,
    run=_run,
    rescore=_rescore,
    verdict=_verdict,
    decision=_decision,
    report=_report,
    summary=lambda outcome: [],
    page="views/fabrication.py",
    section="Trained models",
)
"""The fabrication audit's registry entry (``python -m audit_core fabrication``, the "Fabricated members" page)."""
