"""The DP claim check as a registered audit (audit_core.contract): inputs, settings, run, verdict, report."""

from __future__ import annotations

from dataclasses import dataclass

from audit_core.common.limits import CANARIES, DP_DELTA, DP_EPOCHS, DP_EPSILON
from audit_core.contract import REQUIRED, Audit, Context, Inputs, InputSpec, Outcome, Settings, knob
from audit_core.dp.choices import CANARY_KINDS, MODEL_TYPES

__all__ = ["DP_AUDIT", "DpSettings"]


@dataclass(frozen=True)
class DpSettings(Settings):
    target: str = knob(REQUIRED, "Target column", "The class the model predicts; every other column is a feature "
                       "(encoded as the LiRA audit encodes it).")  # fmt: skip
    epsilon: float = knob(REQUIRED, "Claimed epsilon", "The epsilon of the claim; DP-SGD is trained to meet it.",
                          bound=DP_EPSILON)  # fmt: skip
    delta: float = knob(1e-5, "Claimed delta", "The delta of the claim; 1e-5 is usual for tables of up to "
                        "~100,000 records.", bound=DP_DELTA)  # fmt: skip
    canaries: int = knob(1000, "Canaries m", "Records each trained on with probability 1/2; more canaries raise the "
                         "ceiling of what the audit can prove.", bound=CANARIES)  # fmt: skip
    canary_kind: str = knob("population", "Canary kind", "population: records of the table as they are; "
                            "mislabelled: records with another class (a much stronger signal).",
                            choices=CANARY_KINDS)  # fmt: skip
    model: str = knob("logistic", "Model type", "Logistic regression or a one-hidden-layer MLP (64 units).",
                      choices=MODEL_TYPES)  # fmt: skip
    epochs: int = knob(10, "Epochs", "Passes over the training rows, with and without DP.", bound=DP_EPOCHS)


def _run(inputs: Inputs, s: DpSettings, ctx: Context):
    from audit_core.dp.audit import run_dp_audit

    return run_dp_audit(inputs["data"], target=s.target, epsilon=s.epsilon, delta=s.delta, m=s.canaries,
                        kind=s.canary_kind, model=s.model, epochs=s.epochs, seed=ctx.seed, progress=ctx.progress)  # fmt: skip


def _decision(result):
    from audit_core.dp.verdict import decision

    return decision(result)


def _verdict(result) -> str:
    from audit_core.dp.verdict import verdict

    return verdict(result)


def _report(outcome: Outcome):
    from audit_core.common.report import describe_input
    from audit_core.dp.verdict import build_report

    return build_report(outcome.value, inputs=[describe_input(outcome.inputs.name("data", "table"), outcome.inputs["data"])])


def _summary(outcome: Outcome) -> list[str]:
    r = outcome.value
    b, n = r.dp.bound, r.non_dp.bound
    return [
        f"claimed ({r.epsilon:g}, {r.delta:g})-DP; accountant epsilon {r.accountant_epsilon:.3f} "
        f"(noise multiplier {r.noise_multiplier:.3f}, {r.steps} steps)",
        f"DP-SGD: epsilon >= {b.epsilon:.3f} ({b.correct}/{b.r} guesses right, m = {b.m}); "
        f"test accuracy {r.dp.test_accuracy:.3f}",
        f"no DP: epsilon >= {n.epsilon:.3f} ({n.correct}/{n.r}); test accuracy {r.non_dp.test_accuracy:.3f}",
        f"ceiling with {b.m} canaries: {r.ceiling:.3f}",
    ]


DP_AUDIT = Audit(
    name="dp-audit",
    title="DP claim check",
    icon="🛡️",
    question="Was the model really trained with the differential privacy it claims? One DP-SGD run with canaries "
    "tests the claim.",
    needs="a table with a target column and a claimed (epsilon, delta); the model is trained here with DP-SGD (Opacus).",
    method="DP-SGD with m canaries each included with probability 1/2; Steinke-Nasr-Jagielski one-run test of the "
    "correct membership guesses (r chosen with a Bonferroni correction); the same model without DP as a contrast.",
    inputs=(InputSpec("data", "the table the model is trained on (CSV or Parquet)"),),
    settings=DpSettings,
    run=_run,
    verdict=_verdict,
    decision=_decision,
    report=_report,
    summary=_summary,
    records=lambda outcome: outcome.value.canary_table(),
    outputs=("json", "html", "pdf", "records"),
    page="views/dp_claim.py",
    section="Trained models",
)
