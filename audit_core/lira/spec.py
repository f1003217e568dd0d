"""Calibrated vs naive LiRA as a registered audit (audit_core.contract): inputs, settings, run, verdict, report."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from audit_core.common.errors import InputError
from audit_core.common.limits import (
    FPC_CELLS,
    FPC_MODELS,
    FPC_POPULATION,
    FPC_REPEATS,
    FPC_TRAIN_SIZE,
    LIRA_MODELS,
    TARGET_FPR,
)
from audit_core.contract import REQUIRED, Audit, Context, Inputs, InputSpec, Outcome, Settings, knob
from audit_core.lira.choices import MODEL_TYPES, ModelType

if TYPE_CHECKING:  # annotations only: importing the registry never imports torch
    import pandas as pd

    from audit_core.common.decision import Decision
    from audit_core.common.report import Report
    from audit_core.lira.fpc import FpcSimulation
    from audit_core.lira.pool import ModelPool
    from audit_core.lira.result import LiraResult

__all__ = ["FPC_SIM", "LIRA", "FpcSettings", "LiraSettings"]


@dataclass(frozen=True)
class LiraSettings(Settings):
    """The LiRA audit's knobs: target, model family and M (setup), alpha (run), the group column (re-score)."""

    target: str = knob(REQUIRED, "Target column", "The class the models predict; every other column is a feature "
                       "(one-hot / scaled once).", stage="setup")  # fmt: skip
    model: ModelType = knob("logistic", "Model type", "Logistic regression or a one-hidden-layer MLP (32 units).",
                      choices=MODEL_TYPES, stage="setup")  # fmt: skip
    models: int = knob(64, "Number of models M", "Even: each record is in exactly M/2 models and out of the others.",
                       bound=LIRA_MODELS, stage="setup")  # fmt: skip
    fpr: float = knob(0.01, "Target FPR alpha", "Moving it re-evaluates the trained models; it never retrains them.",
                      bound=TARGET_FPR)  # fmt: skip
    groups: str | None = knob(None, "Risk by group", "feature column whose groups each get the audited model's TPR at "
                              "1 % FPR (default: the column with the largest spread of risk)", stage="rescore")  # fmt: skip

    def check_measurable(self, n_records: int) -> None:
        """Refuse an alpha that ``n_records`` x M models cannot measure (fewer than 10/alpha pooled out-scores).

        The audit's check (the page, the CLI) and :func:`audit_core.lira.result.evaluate_pool` (the Python
        entry point) both call it, so they refuse the same alpha with the same sentence.
        """
        pooled = n_records * self.models // 2
        if pooled < 10.0 / self.fpr:
            raise InputError(f"alpha = {self.fpr:g} is too small for {n_records} records x {self.models} models: even "
                             f"the {pooled} pooled out-scores are fewer than 10/alpha = {10 / self.fpr:.0f}; raise alpha "
                             "or use more models.")  # fmt: skip


def _check(inputs: Inputs, s: LiraSettings) -> None:
    """The table can be encoded (:func:`audit_core.lira.design.check_table`: the target, enough rows, no infinite
    number), the group column exists, and alpha is measurable with this many records and models."""
    from audit_core.common.errors import columns_sentence
    from audit_core.lira.design import check_table

    data = inputs["data"]
    check_table(data, target=s.target, name=inputs.name("data", "table"))
    if s.groups is not None and (s.groups == s.target or s.groups not in data.columns):
        raise InputError(f"--groups: '{s.groups}' is not a feature column of the table; "
                         + columns_sentence([c for c in data.columns if c != s.target], s.groups))
    s.check_measurable(len(data))


def _prepare(inputs: Inputs, s: LiraSettings, ctx: Context) -> ModelPool:
    """The M models, trained as one batch, and every record's score under each (the slow part)."""
    from audit_core.lira.pool import train_pool

    return train_pool(inputs["data"], target=s.target, model=s.model, n_models=s.models, seed=ctx.seed,
                      progress=ctx.progress, client=ctx.client)  # fmt: skip


def _run(inputs: Inputs, s: LiraSettings, ctx: Context) -> LiraResult:
    """The rules at alpha, the what-if over M and the finite-population sweep, on the trained pool."""
    from audit_core.lira.result import evaluate_pool

    data = inputs["data"]
    result = evaluate_pool(ctx.prepared, fpr=s.fpr, seed=ctx.seed, progress=ctx.progress)
    columns = {str(c): data[c].reset_index(drop=True) for c in data.columns if c != s.target}
    return replace(result, columns=columns).with_groups(None)


def _rescore(result: LiraResult, s: LiraSettings, ctx: Context) -> LiraResult:
    return result.with_groups(s.groups)


def _decision(result: LiraResult) -> Decision:
    from audit_core.lira.verdict import decision

    return decision(result)


def _verdict(result: LiraResult) -> str:
    from audit_core.lira.verdict import verdict

    return verdict(result)


def _report(outcome: Outcome[LiraSettings, LiraResult]) -> Report:
    from audit_core.lira.verdict import build_report

    report = build_report(outcome.value, data=outcome.inputs["data"], data_name=outcome.inputs.name("data", "table"),
                          seed=outcome.seed)  # fmt: skip
    groups = outcome.value.groups
    if groups is None:
        return report
    caption = f"Risk by group: {groups.column} (the audited model's TPR at 1 % FPR, offline LiRA, worst first)"
    return replace(report, tables=[*report.tables, (caption, groups.table())])


def _summary(outcome: Outcome[LiraSettings, LiraResult]) -> list[str]:
    s, t = outcome.settings, outcome.value.evaluation.tpr
    return [
        f"TPR at FPR {s.fpr:g} over {s.models} {s.model} models: naive {t['naive']:.3f}, "
        f"post-processed {t['post_processed']:.3f}, post-processed (t) {t['post_processed_t']:.3f}, "
        f"per-sample average {t['per_sample_mean']:.3f}"
    ]


def _notes(outcome: Outcome[LiraSettings, LiraResult]) -> list[str]:
    result, s = outcome.value, outcome.settings
    lines = [f"warning: {w}" for w in result.evaluation.warnings]
    # wall-clock time is not reproducible, so it stays out of the JSON
    return [*lines, f"trained {s.models} {s.model} models in {result.timing()['train_seconds']:.1f} s"]


def _records(outcome: Outcome[LiraSettings, LiraResult]) -> pd.DataFrame:
    from audit_core.lira.figures import records_table

    return records_table(outcome.value.evaluation)


LIRA: Audit[LiraSettings, LiraResult] = Audit(
    name="lira",
    title="Calibrated LiRA",
    icon="📏",
    question="Does the reported 'TPR at 1 % FPR' of a model mean anything, and how many models would it take to trust it?",
    needs="a table with a target column (the models are trained here, as one batch).",
    method="Naive vs per-sample calibrated LiRA (normal and Student-t thresholds), the per-sample average, and the "
    "finite-population correction.",
    inputs=(InputSpec("data", "the table the M models are trained on (CSV or Parquet)"),),
    settings=LiraSettings,
    check=_check,
    prepare=_prepare,
    setup_share=0.85,
    run=_run,
    rescore=_rescore,
    verdict=_verdict,
    decision=_decision,
    report=_report,
    summary=_summary,
    notes=_notes,
    records=_records,
    page="views/lira_calibration.py",
    section="Trained models",
    outputs=("json", "html", "pdf", "records", "scores-out"),
)


# ----------------------------------------------------------------------------- finite-population simulation (a tool)
@dataclass(frozen=True)
class FpcSettings(Settings):
    """The finite-population simulation's knobs: N_+, N, M and the repeats."""

    population: int = knob(REQUIRED, "N_+: size of the finite pool", bound=FPC_POPULATION)
    train_size: int = knob(REQUIRED, "N: size of each training subset", bound=FPC_TRAIN_SIZE)
    models: int = knob(64, "Number of models M", bound=FPC_MODELS)
    repeats: int = knob(200, "Simulation repeats", bound=FPC_REPEATS)

    def validate(self) -> None:
        """Each knob's bound, then the rules that tie them: N below N_+, and N_+ x M within what one repeat draws."""
        super().validate()
        if self.train_size >= self.population:
            raise InputError(f"--train-size must be below --population: the training size must be between 2 and the "
                             f"population size minus one (got N = {self.train_size}, N_+ = {self.population}).")  # fmt: skip
        if self.population * self.models > FPC_CELLS:
            raise InputError(f"--population x --models is too large for this simulation ({self.population:,} x "
                             f"{self.models:,} > {FPC_CELLS:,}); use a smaller population or fewer models.")  # fmt: skip


def _run_fpc(inputs: Inputs, s: FpcSettings, ctx: Context) -> FpcSimulation:
    from audit_core.lira.fpc import fpc_simulation

    return fpc_simulation(population=s.population, train_size=s.train_size, n_models=s.models, repeats=s.repeats,
                          seed=ctx.seed)  # fmt: skip


def _fpc_verdict(sim: FpcSimulation) -> str:
    return (f"FPC = 1 - N/N+ = {sim.fpc:.3f}; sigma_emp/sigma_ana = {sim.ratio_empirical:.3f} "
            f"(sqrt(FPC) = {sim.expected_ratio:.3f}), after correction {sim.ratio_corrected:.3f}")  # fmt: skip


FPC_SIM: Audit[FpcSettings, FpcSimulation] = Audit(
    name="fpc-sim",
    title="Finite-population correction",
    icon="📐",
    question="How much does a finite pool of shadow models understate the spread of their scores?",
    needs="nothing: a Gaussian simulation (docs/methods.md §2)",
    method="M subsets of size N from a pool of N_+; empirical vs analytic spread, before and after the correction.",
    inputs=(),
    settings=FpcSettings,
    run=_run_fpc,
    verdict=_fpc_verdict,
    outputs=("json",),
)
