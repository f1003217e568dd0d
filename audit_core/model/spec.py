"""The audit of an uploaded model as a registered audit (audit_core.contract): inputs, settings, run, verdict, report."""

from __future__ import annotations

from dataclasses import dataclass

from audit_core.common.limits import REFERENCE_MODELS
from audit_core.contract import REQUIRED, Audit, Context, Inputs, InputSpec, Outcome, Settings, knob
from audit_core.model.attacks import ATTACKS
from audit_core.model.loading import read_model_bytes
from audit_core.model.reference import FAMILIES

__all__ = ["MODEL", "ModelSettings"]


@dataclass(frozen=True)
class ModelSettings(Settings):
    target: str = knob(REQUIRED, "Label column", "The class the model predicts, in both tables; every other column is "
                       "a feature, given to the model as it is (numbers as floats, in table order).")  # fmt: skip
    attacks: tuple[str, ...] = knob(ATTACKS, "Attacks", "LOSS (no reference model), RMIA offline and LiRA offline "
                                    "(global variance), all on one log-ROC.", choices=ATTACKS, min_items=1)  # fmt: skip
    reference_models: int = knob(4, "Reference models K", "Trained here on population records never scored; RMIA "
                                 "gets most of its gain from the first one.", bound=REFERENCE_MODELS)  # fmt: skip
    reference_family: str = knob("logistic", "Reference family", "Pick the family closest to the audited model "
                                 "(gbdt for tree ensembles); the fidelity check shows whether it behaves alike.",
                                 choices=FAMILIES)  # fmt: skip
    trust_skops_types: tuple[str, ...] = knob((), "Trusted skops types", "Types outside skops' default trusted set "
                                              "that you trust because you made the file (e.g. sklearn.tree._tree.Tree "
                                              "for a forest); nothing else is ever loaded.")  # fmt: skip


def _names(inputs: Inputs) -> tuple[str, str, str]:
    return inputs.name("model"), inputs.name("train"), inputs.name("population")


def _run(inputs: Inputs, s: ModelSettings, ctx: Context):
    from audit_core.model.audit import audit_model

    return audit_model(inputs["model"], inputs["train"], inputs["population"], target=s.target, attacks=s.attacks,
                       n_reference=s.reference_models, family=s.reference_family, trusted=s.trust_skops_types,
                       seed=ctx.seed, names=_names(inputs), progress=ctx.progress)  # fmt: skip


def _verdict(audit) -> str:
    from audit_core.model.verdict import verdict

    return verdict(audit)


def _decision(audit):
    from audit_core.model.verdict import decision

    return decision(audit)


def _report(outcome: Outcome):
    from audit_core.common.report import describe_input
    from audit_core.model.verdict import build_report

    model, train, population = _names(outcome.inputs)
    inputs = [describe_input(model, outcome.inputs["model"], detail=outcome.value.model["description"]),
              describe_input(train, outcome.inputs["train"], detail="members"),
              describe_input(population, outcome.inputs["population"], detail="population")]  # fmt: skip
    return build_report(outcome.value, inputs=inputs)


def _summary(outcome: Outcome) -> list[str]:
    lines = []
    for a in outcome.value.attacks.values():
        t = a.tpr_at_fpr["0.01"]
        lines.append(f"{a.name}: AUC {a.auc:.3f}; TPR at FPR 0.01 {t.tpr:.3f} [{t.ci_low:.3f}, {t.ci_high:.3f}]"
                     + ("" if t.supported else " (unsupported)") + f"; epsilon >= {a.epsilon.epsilon:.3f}")  # fmt: skip
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
    needs="the model (ONNX or skops; never a pickle), its training table with the label column, and a population "
    "table from the same distribution it was not trained on.",
    method="LOSS, RMIA (offline) and LiRA (offline, global variance) against reference models trained here on the "
    "population, after a fidelity check; log-ROC, TPR at low FPR with intervals, epsilon lower bound.",
    inputs=(
        InputSpec("model", "the trained model: .onnx (standard operators, one file) or .skops; never a pickle",
                  table=False, load=read_model_bytes),
        InputSpec("train", "the members: the model's training table, with the label column (CSV or Parquet)"),
        InputSpec("population", "records from the same distribution the model was not trained on (CSV or Parquet)"),
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
    page="views/own_model.py",
    section="Trained models",
)
