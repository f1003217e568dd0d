"""The DP claim check as a registered audit (audit_core.contract): inputs, settings, run, verdict, report."""

from __future__ import annotations

from dataclasses import dataclass

from audit_core.common.errors import InputError
from audit_core.common.limits import CANARIES, DP_DELTA, DP_EPOCHS, DP_EPSILON, DP_NOISE, DP_ROWS, DP_SAMPLE_RATE, DP_STEPS
from audit_core.contract import REQUIRED, Audit, Context, Inputs, InputSpec, Outcome, Settings, knob
from audit_core.dp.choices import CANARY_KINDS, INCLUDED_COLUMN, MODEL_TYPES, REPORTING_RULE, WHITE_BOX_STATISTICS
from audit_core.model.spec import MODEL, ModelSettings

__all__ = ["DP_AUDIT", "DP_MODEL", "INCLUDED_COLUMN", "REPORTING_RULE", "DpModelSettings", "DpSettings"]  # page text


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
                            "mislabelled: records with another class (a much stronger signal); outlier: mislabelled "
                            "and moved off the data (a model without DP memorises them).",
                            choices=CANARY_KINDS)  # fmt: skip
    model: str = knob("logistic", "Model type", "Logistic regression or a one-hidden-layer MLP (64 units).",
                      choices=MODEL_TYPES)  # fmt: skip
    epochs: int = knob(10, "Epochs", "Passes over the training rows, with and without DP.", bound=DP_EPOCHS)
    rows: int | None = knob(None, "Rows used", "A seeded sample of this many rows of the table (default: all); fewer "
                            "rows train more epochs in the same time.", bound=DP_ROWS)  # fmt: skip
    white_box: bool = knob(False, "White-box gradient canaries", "Also put m Dirac gradient canaries into the DP-SGD "
                           "steps and audit them from the weights of every step (the auditor controls training).")  # fmt: skip
    white_box_statistic: str = knob("sum", "White-box statistic", "sum: each canary's inner product with the model "
                                    "updates, summed over the steps; likelihood-ratio: their log-likelihood ratio under "
                                    "the claimed DP-SGD (the optimal test). Chosen before the run.",
                                    choices=WHITE_BOX_STATISTICS)  # fmt: skip


def _check(inputs: Inputs, s: DpSettings) -> None:
    """A row sample no larger than the table."""
    n = len(inputs["data"])
    if s.rows is not None and s.rows > n:
        raise InputError(f"--rows {s.rows:,} is more than the table's {n:,} rows; use at most {n:,} (or leave it out).")


def _run(inputs: Inputs, s: DpSettings, ctx: Context):
    from audit_core.dp.audit import run_dp_audit

    data = inputs["data"]
    if s.rows is not None and s.rows < len(data):
        data = data.sample(n=s.rows, random_state=ctx.seed).reset_index(drop=True)
    return run_dp_audit(data, target=s.target, epsilon=s.epsilon, delta=s.delta, m=s.canaries, kind=s.canary_kind,
                        model=s.model, epochs=s.epochs, white_box=s.white_box, statistic=s.white_box_statistic,
                        seed=ctx.seed, progress=ctx.progress)  # fmt: skip


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
    lines = [
        f"claimed ({r.epsilon:g}, {r.delta:g})-DP; accountant epsilon {r.accountant_epsilon:.3f} "
        f"(noise multiplier {r.noise_multiplier:.3f}, sampling rate {r.sample_rate:.4f}, {r.steps} steps)",
        f"DP-SGD: epsilon >= {b.epsilon:.3f} ({b.method}; Steinke {b.steinke.epsilon:.3f}, f-DP {b.fdp.epsilon:.3f}; "
        f"m = {b.m}); test accuracy {r.dp.test_accuracy:.3f}",
        f"no DP: epsilon >= {n.epsilon:.3f} (Steinke {n.steinke.epsilon:.3f}, f-DP {n.fdp.epsilon:.3f}); "
        f"test accuracy {r.non_dp.test_accuracy:.3f}",
    ]
    if r.white_box is not None:
        w = r.white_box.bound
        lines.append(f"white-box ({r.white_box.statistic}): epsilon >= {w.epsilon:.3f} (Steinke {w.steinke.epsilon:.3f}, "
                     f"f-DP {w.fdp.epsilon:.3f}), {w.epsilon / r.accountant_epsilon:.0%} of the accountant's")  # fmt: skip
    lines.append(f"ceiling with {b.m} canaries: {r.ceiling:.3f} ({b.method}; Steinke {b.steinke_ceiling:.3f})")
    return lines


DP_AUDIT = Audit(
    name="dp-audit",
    title="DP claim check",
    icon="🛡️",
    question="Was the model really trained with the differential privacy it claims? One DP-SGD run with canaries "
    "tests the claim.",
    needs="a table with a target column and a claimed (epsilon, delta); the model is trained here with DP-SGD (Opacus).",
    method="DP-SGD with m canaries each included with probability 1/2; the one-run tests of the correct membership "
    "guesses (r chosen with a Bonferroni correction): the f-DP bound against the DP-SGD run's curve (reported) and "
    "Steinke-Nasr-Jagielski's; optionally white-box gradient canaries; the same model without DP as a contrast.",
    inputs=(InputSpec("data", "the table the model is trained on (CSV or Parquet)"),),
    settings=DpSettings,
    check=_check,
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


# ------------------------------------------------------------------------------------------ an uploaded model
@dataclass(frozen=True)
class DpModelSettings(Settings):
    target: str = knob(REQUIRED, "Label column", "Each canary's label as the model was trained on it (a mislabelled "
                       "canary's wrong label); every other column but the inclusion column is a feature, given to the "
                       "model as it is.")  # fmt: skip
    epsilon: float = knob(REQUIRED, "Claimed epsilon", "The epsilon the model's training claims.", bound=DP_EPSILON)
    delta: float = knob(1e-5, "Claimed delta", "The delta the model's training claims.", bound=DP_DELTA)
    included_column: str = knob(INCLUDED_COLUMN, "Inclusion column", "1 (or yes / true) for a canary that was in the "
                                "training data, 0 (no / false) for one left out: a fair coin per canary, before "
                                "training.")  # fmt: skip
    trust_skops_types: tuple[str, ...] = knob((), "Trusted skops types", ModelSettings.knobs()["trust_skops_types"].help)
    noise_multiplier: float | None = knob(None, "Noise multiplier", "The DP-SGD run's noise multiplier, when the claim "
                                          "states its mechanism (with the sampling rate and steps): the f-DP bound is "
                                          "then against that run's curve.", bound=DP_NOISE)  # fmt: skip
    sample_rate: float | None = knob(None, "Sampling rate", "The DP-SGD run's Poisson sampling rate (expected batch / "
                                     "rows).", bound=DP_SAMPLE_RATE)  # fmt: skip
    steps: int | None = knob(None, "DP-SGD steps", "The DP-SGD run's number of steps.", bound=DP_STEPS)

    def validate(self) -> None:
        super().validate()
        given = [n for n in ("noise_multiplier", "sample_rate", "steps") if getattr(self, n) is not None]
        if given and len(given) < 3:
            missing = [self.flag(n) for n in ("noise_multiplier", "sample_rate", "steps") if getattr(self, n) is None]
            raise InputError(f"A stated DP-SGD mechanism needs all of --noise-multiplier, --sample-rate and --steps; "
                             f"{', '.join(missing)} missing.")  # fmt: skip

    @property
    def mechanism(self) -> tuple[float, float, int] | None:
        """(noise multiplier, sampling rate, steps) when the claim states them."""
        if self.noise_multiplier is None or self.sample_rate is None or self.steps is None:
            return None
        return self.noise_multiplier, self.sample_rate, self.steps


def _model_names(inputs: Inputs) -> tuple[str, str]:
    return inputs.name("model"), inputs.name("canaries_file")


def _run_uploaded(inputs: Inputs, s: DpModelSettings, ctx: Context):
    from audit_core.dp.uploaded import audit_uploaded_model

    return audit_uploaded_model(inputs["model"], inputs["canaries_file"], target=s.target, epsilon=s.epsilon,
                                delta=s.delta, included_column=s.included_column, trusted=s.trust_skops_types,
                                mechanism=s.mechanism, seed=ctx.seed, names=_model_names(inputs),
                                progress=ctx.progress)  # fmt: skip


def _uploaded_decision(result):
    from audit_core.dp.verdict import uploaded_decision

    return uploaded_decision(result)


def _uploaded_verdict(result) -> str:
    from audit_core.dp.verdict import uploaded_verdict

    return uploaded_verdict(result)


def _uploaded_report(outcome: Outcome):
    from audit_core.common.report import describe_input
    from audit_core.dp.verdict import build_uploaded_report

    model, canaries = _model_names(outcome.inputs)
    inputs = [describe_input(model, outcome.inputs["model"], detail=outcome.value.model["description"]),
              describe_input(canaries, outcome.inputs["canaries_file"], detail="canaries")]  # fmt: skip
    return build_uploaded_report(outcome.value, inputs=inputs)


def _uploaded_summary(outcome: Outcome) -> list[str]:
    r = outcome.value
    b = r.bound
    return [
        f"claimed ({r.epsilon:g}, {r.delta:g})-DP; model {r.model['file']} ({r.model['format']}, sha256 "
        f"{r.model['sha256'][:12]}...)",
        f"uploaded model: epsilon >= {b.epsilon:.3f} ({b.method}; Steinke {b.steinke.epsilon:.3f}, f-DP "
        f"{b.fdp.epsilon:.3f}; {b.correct}/{b.r} guesses right, m = {b.m}, {int(r.canaries.included.sum())} included)",
        f"ceiling with {b.m} canaries: {r.ceiling:.3f}",
    ]


_CANARY_FILE_HELP = ("the canary file: one row per canary with its feature columns, its label (--target) and whether "
                    "it was trained on (--included-column); CSV or Parquet")  # fmt: skip

DP_MODEL = Audit(
    name="dp-audit-model",
    title="DP claim check of an uploaded model",
    icon="🛡️",
    question="Do the canaries my team trained with disprove our model's differential-privacy claim?",
    needs="the model (ONNX or skops; never a pickle) and its canary file: one row per canary with its features, its "
    "label as trained and whether it was included (a fair coin each, before training); the claimed (epsilon, delta).",
    method="Each canary scored by the model's log-probability of its label (LOSS; no reference models); the "
    "Steinke-Nasr-Jagielski one-run test with the train-here mode's grid of r and Bonferroni correction, and the f-DP "
    "one-run test (against the stated DP-SGD run's curve when the claim gives it; reported then).",
    inputs=(
        InputSpec("model", "the trained model: .onnx (standard operators, one file) or .skops; never a pickle",
                  table=False, load=MODEL.inputs[0].load),  # the own-model audit's loader: a pickle is refused
        InputSpec("canaries_file", _CANARY_FILE_HELP),
    ),
    settings=DpModelSettings,
    run=_run_uploaded,
    verdict=_uploaded_verdict,
    decision=_uploaded_decision,
    report=_uploaded_report,
    summary=_uploaded_summary,
    notes=lambda outcome: [f"warning: {n}" for n in outcome.value.canaries.notes],
    records=lambda outcome: outcome.value.canary_table(),
    outputs=("json", "html", "pdf", "records"),
    page="views/dp_claim.py",  # the DP claim page's second mode; no page or home card of its own (registry.TOOLS)
    section="Trained models",
)
