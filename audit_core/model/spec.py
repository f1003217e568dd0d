"""The audit of an uploaded model as a registered audit (audit_core.contract): inputs, settings, run, verdict, report."""

from __future__ import annotations

from dataclasses import dataclass

from audit_core.common.limits import REFERENCE_EPOCHS, REFERENCE_MODELS
from audit_core.contract import Audit, Context, Inputs, InputSpec, Outcome, Settings, knob
from audit_core.model.attacks import ATTACKS, DEFAULT_ATTACKS, VARIANCES
from audit_core.model.images import ImageSet, read_records
from audit_core.model.loading import read_model_bytes
from audit_core.model.reference import REFERENCE_FAMILIES

__all__ = ["MODEL", "ModelSettings"]


@dataclass(frozen=True)
class ModelSettings(Settings):
    target: str | None = knob(None, "Label column", "The class the model predicts, in both tables; every other column "
                              "is a feature, given to the model as it is (numbers as floats, in table order). Required "
                              "for tables; left out for .npz images (their labels are in 'labels').")  # fmt: skip
    attacks: tuple[str, ...] = knob(DEFAULT_ATTACKS, "Attacks", "LOSS (no reference model), RMIA offline, LiRA "
                                    "offline (global variance) and a supervised attack (ART's black-box attack: a "
                                    "classifier trained on known members, cross-fitted) by default, all on one log-ROC; "
                                    "lira_online trains K more reference models, each on about half of the candidates.",
                                    choices=ATTACKS, min_items=1)  # fmt: skip
    reference_models: int = knob(4, "Reference models K", "Trained here on population records never scored; RMIA "
                                 "gets most of its gain from the first one. LiRA online trains K more, each on about "
                                 "half of the scored records.", bound=REFERENCE_MODELS)  # fmt: skip
    reference_family: str = knob("auto", "Reference family", "auto: train every family (logistic, mlp, gbdt, "
                                 "random_forest, extra_trees; a family of the model's own kind with the "
                                 "hyper-parameters its file carries) and keep the one that behaves most like the model "
                                 "(train and test accuracy, loss distributions), never the one that attacks best; or "
                                 "name one. An image model's reference models are of its own architecture.",
                                 choices=REFERENCE_FAMILIES)  # fmt: skip
    lira_variance: str = knob("auto", "LiRA online variance", "global: one pooled variance for every record; "
                              "per_sample: each record's own IN and OUT spreads (needs K >= 4); auto: global below 64 "
                              "reference models (LiRA paper, Fig. 9).", choices=VARIANCES)  # fmt: skip
    reference_epochs: int = knob(30, "Reference epochs (images)", "Training epochs of an image model's reference "
                                 "models (its architecture, batch 64, AdamW); raise it when the fidelity check says they "
                                 "fit their training images less than the target does.",
                                 bound=REFERENCE_EPOCHS)  # fmt: skip
    trust_skops_types: tuple[str, ...] = knob((), "Trusted skops types", "Types outside skops' default trusted set "
                                              "and this audit's vetted list (forests, boosting, MLP and pipeline "
                                              "internals load without naming them) that you trust because you made "
                                              "the file; nothing else is ever loaded.")  # fmt: skip


def _names(inputs: Inputs) -> tuple[str, str, str]:
    return inputs.name("model"), inputs.name("train"), inputs.name("population")


def _run(inputs: Inputs, s: ModelSettings, ctx: Context):
    from audit_core.model.audit import audit_model

    return audit_model(inputs["model"], inputs["train"], inputs["population"], target=s.target, attacks=s.attacks,
                       n_reference=s.reference_models, family=s.reference_family, variance=s.lira_variance,
                       epochs=s.reference_epochs, trusted=s.trust_skops_types, seed=ctx.seed, names=_names(inputs),
                       progress=ctx.progress)  # fmt: skip


def _verdict(audit) -> str:
    from audit_core.model.verdict import verdict

    return verdict(audit)


def _decision(audit):
    from audit_core.model.verdict import decision

    return decision(audit)


def _described(name: str, data, role: str):
    from audit_core.common.report import describe_input

    if isinstance(data, ImageSet):
        return describe_input(name, data.images, detail=f"{role}: {data.describe()}")
    return describe_input(name, data, detail=role)


def _report(outcome: Outcome):
    from audit_core.common.report import describe_input
    from audit_core.model.verdict import build_report

    model, train, population = _names(outcome.inputs)
    inputs = [describe_input(model, outcome.inputs["model"], detail=outcome.value.model["description"]),
              _described(train, outcome.inputs["train"], "members"),
              _described(population, outcome.inputs["population"], "population")]  # fmt: skip
    return build_report(outcome.value, inputs=inputs)


def _summary(outcome: Outcome) -> list[str]:
    lines = []
    for a in outcome.value.attacks.values():
        t = a.tpr_at_fpr["0.01"]
        lines.append(f"{a.name}: AUC {a.auc:.3f}; TPR at FPR 0.01 {t.tpr:.3f} [{t.ci_low:.3f}, {t.ci_high:.3f}]"
                     + ("" if t.supported else " (unsupported)") + f"; epsilon >= {a.epsilon.epsilon:.3f}")  # fmt: skip
    ref = outcome.value.reference
    if "family" in ref:
        choice = ref.get("family_choice")
        lines.append(f"reference family: {ref['family']}" + (f" (auto, fidelity distance "
                     f"{choice['families'][ref['family']]['distance']:.3f})" if choice else ""))  # fmt: skip
    f = outcome.value.fidelity
    lines.append(f"fidelity {'ok' if f.ok else 'NOT ok'}: train/test accuracy target {f.target['train_accuracy']:.3f}/"
                 f"{f.target['test_accuracy']:.3f}, reference {f.reference['train_accuracy']:.3f}/"
                 f"{f.reference['test_accuracy']:.3f}")  # fmt: skip
    return lines


MODEL = Audit(
    name="model",
    title="Audit my model",
    icon="🧠",
    question="Does the model my team trained reveal which records it was trained on?",
    needs="the model (ONNX or skops, or safetensors weights of an image model; never a pickle), its training table "
    "with the label column, and a population table from the same distribution it was not trained on (.npz images for "
    "an image model).",
    method="LOSS, RMIA (offline) and LiRA (offline, and online with reference models trained with and without each "
    "record) against reference models trained here, after a fidelity check; log-ROC, TPR at low FPR with intervals, "
    "epsilon lower bound.",
    inputs=(
        InputSpec("model", "the trained model: .onnx (standard operators, one file), .skops, or .safetensors weights "
                  "of an image model (small_cnn or resnet18, as on the fabrication page); never a pickle",
                  table=False, load=read_model_bytes),
        InputSpec("train", "the members: the model's training table, with the label column (CSV or Parquet); for a "
                  ".safetensors model, their images (.npz with 'images' and 'labels')", table=False, load=read_records),
        InputSpec("population", "records from the same distribution the model was not trained on (CSV or Parquet; "
                  ".npz images for a .safetensors model)", table=False, load=read_records),
    ),
    settings=ModelSettings,
    run=_run,
    verdict=_verdict,
    decision=_decision,
    report=_report,
    summary=_summary,
    notes=lambda outcome: [f"warning: {w}" for w in outcome.value.warnings],
    records=lambda outcome: outcome.value.records,
    outputs=("json", "html", "pdf", "records"),
    report_records=True,
    page="views/own_model.py",
    section="Trained models",
)
