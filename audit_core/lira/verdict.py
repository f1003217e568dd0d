"""Verdict, limits and report for the calibrated-LiRA section (docs/methods.md §2)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from audit_core.common.decision import ELEVATED_FACTOR, HIGH_FACTOR, Decision, Finding, decide, times_chance
from audit_core.common.report import Report, describe_input
from audit_core.lira.evaluation import vulnerable_records
from audit_core.lira.figures import LABELS, fpc_figure, models_sweep_figure, per_sample_fpr_figure, roc_figure, rules_table
from audit_core.lira.result import LiraResult

__all__ = ["RULES", "build_report", "decision", "verdict"]


def _pct(x: float) -> str:
    """A share as a percentage with one decimal."""
    return f"{100 * x:.1f} %"


def verdict(result: LiraResult) -> str:
    """Plain-language reading: which number to report, and how sure it is."""
    ev, sw = result.evaluation, result.sweep
    a = ev.fpr
    t, lo_hi = ev.tpr["post_processed_t"], ev.tpr_ci.get("post_processed_t", (np.nan, np.nan))
    naive = ev.fpr_summary("naive")
    pp = ev.fpr_summary("post_processed_t")
    ps_interval = ev.tpr_ci.get("per_sample_mean")  # none when evaluated without the bootstrap
    holds = ev.holds_alpha
    ps_ci = f" (95 % interval {_pct(ps_interval[0])} to {_pct(ps_interval[1])})" if ps_interval is not None else ""
    if holds.get("post_processed_t", True):
        text = [
            f"Report the post-processed TPR with the Student-t threshold: {_pct(t)} of members exposed at "
            f"FPR {a:g} (95 % interval {_pct(lo_hi[0])} to {_pct(lo_hi[1])}, bootstrap over records)."
        ]
    else:
        text = [
            f"Report the per-sample average: {_pct(ev.tpr['per_sample_mean'])} of members exposed at FPR {a:g}{ps_ci}. "
            f"The post-processed Student-t rule ({_pct(t)}) does not hold alpha at M = {ev.n_models}: with no signal "
            f"it reads {ev.no_signal_tpr['post_processed_t']:.3f} instead of {a:g}, so it overstates the exposure."
        ]
    text += [
        f"The naive pooled number, {_pct(ev.tpr['naive'])}, holds FPR {a:g} only on average: record by record "
        f"its FPR has a spread of {naive['std']:.3f} (10 % of records above {naive['p90']:.3f}), against "
        f"{pp['std']:.3f} for the calibrated rule, so some records are accused far more often than {a:g}.",
        f"The per-sample average of the records' own vulnerabilities is {_pct(ev.tpr['per_sample_mean'])}{ps_ci}, "
        + (
            f"extrapolated from {ev.n_models} and {ev.extrapolation['n_models_half']} models to remove the low bias of "
            f"a test on few models (uncorrected {_pct(ev.tpr['per_sample_mean_uncorrected'])})"
            if ev.extrapolation.get("n_models_half")
            else f"a lower estimate at M = {ev.n_models} (too few models to extrapolate its low bias away)"
        )
        + f"; its per-record test holds FPR {a:g} (measured {ev.pooled_fpr['per_sample_mean']:.3f} on the out-scores).",
    ]
    failing = [k for k, ok in holds.items() if not ok]
    if failing:
        readings = ", ".join(f"{LABELS.get(k, k)} {ev.no_signal_tpr[k]:.3f}" for k in failing)
        text.append(
            f"Warning: not every rule holds alpha at M = {ev.n_models}. Simulated with no membership signal at this M, "
            f"these read above alpha = {a:g}: {readings}; their numbers overstate the exposure."
        )
    if len(sw.n_models) >= 2:
        prev, last = np.nanmean(sw.tpr["post_processed_t"][-2]), np.nanmean(sw.tpr["post_processed_t"][-1])
        change = abs(last - prev) / max(last, 1e-9)
        text.append(
            f"Going from {sw.n_models[-2]} to {sw.n_models[-1]} models moved it by {100 * change:.0f} % "
            + ("(stable)." if change < 0.1 else "(still moving: train more models).")
        )
    if ev.n_models < ev.required_models:
        text.append(
            f"With {ev.n_models} models each record has {ev.n_models // 2} out-scores; checking the FPR record by "
            f"record at {a:g} needs M >= 10/alpha = {ev.required_models} models, so the per-record FPRs rest on the "
            "Gaussian fit."
        )
    else:
        text.append(f"M = {ev.n_models} meets M >= 10/alpha = {ev.required_models}: per-record FPRs are measured.")
    return " ".join(text)


def build_report(
    result: LiraResult,
    *,
    data: pd.DataFrame | None = None,
    data_name: str = "table",
    seed: int = 0,
) -> Report:
    """The section's report, used by the page and by ``python -m audit_core lira --html``."""
    ev, pool = result.evaluation, result.pool
    figures = [
        ("Log-ROC: naive vs calibrated", roc_figure(ev)),
        ("Per-record FPR at alpha", per_sample_fpr_figure(ev)),
        ("TPR at alpha as M grows", models_sweep_figure(result.sweep)),
    ]
    figures.append(("Finite-population correction", fpc_figure(result.fpc_sims)))
    limits = [
        *ev.warnings,
        "Pooled (x, model) scores are not independent; intervals come from a bootstrap over records.",
        "The per-sample average never fits a record's direction or threshold on the score it counts: the direction "
        "and the Student-t threshold come from disjoint halves of the record's out-scores, so its FPR is alpha at "
        "every M for Gaussian scores and it reads alpha when there is no signal. A test on M models is weaker than "
        "one with known distributions, by about c / M, so the reported average is Richardson-extrapolated, "
        "2 theta(M) - theta(M/2) with theta(M/2) averaged over 4 seeded random halves of the model pairs (simulated "
        "at alpha = 0.05, truth 0.228: bias -0.075 -> -0.014 at M = 16, -0.039 -> -0.002 at M = 32, -0.020 -> "
        "-0.000 at M = 64; still alpha with no signal). Below 16 models it cannot be extrapolated and stays low.",
        "Each rule's 'holds alpha' flag comes from a simulation at the M used, with no membership signal: a rule "
        "reading clearly above alpha there overstates the exposure. PP shares mu_out between its direction and its "
        "threshold, so its Student-t rule reads 0.067 at M = 16, 0.059 at M = 64, 0.055 at M = 256 (alpha 0.05); "
        "the Gaussian per-sample TPR reads 0.21 at M = 8.",
        "Models are logistic regressions or small MLPs trained here, not the production model: the audit measures "
        "the exposure of this model class on this table.",
        f"Half-splits of one table make a finite pool (FPC = {ev.fpc:.2f}); for a target trained on a fresh draw "
        "from the population, use the FPC-corrected variant.",
    ]
    return Report(
        title="Calibrated LiRA",
        question="Is the TPR at low FPR a number one can trust, for each record, and with how many models?",
        inputs=[describe_input(data_name, data)] if data is not None else [],
        settings={"target": pool.target, "model": pool.model, "n_models": ev.n_models, "fpr": ev.fpr},
        metrics=result.to_json() | {"models_sweep": None},
        figures=figures,
        tables=[("Every aggregation rule", rules_table(ev)), ("Most exposed records", vulnerable_records(ev))],
        verdict=verdict(result),
        limits=limits,
        seed=seed,
    )


RULES: tuple[str, ...] = (
    f"Each aggregation rule that holds alpha at this number of models M (its TPR on simulated scores without "
    f"membership signal stays at alpha) is read at alpha: high when the lower end of its 95 % interval (bootstrap "
    f"over records) is above {HIGH_FACTOR:g} × alpha; elevated above {ELEVATED_FACTOR:g} × alpha, or above what the "
    "rule reads with no membership signal at this M (at least alpha); low otherwise. Rules that do not hold alpha at "
    "this M are reported but never drive the level.",
)
"""The cut-offs behind the LiRA decision (shown under "Why" and in the report)."""

_DECISION_RULES = ("per_sample_mean", "post_processed_t", "post_processed", "naive")


def _rule_name(rule: str) -> str:
    return {"per_sample_mean": "the per-sample average of calibrated LiRA",
            "post_processed_t": "calibrated LiRA (post-processed, Student-t threshold)",
            "post_processed": "calibrated LiRA (post-processed, N(0,1) threshold)",
            "naive": "naive pooled LiRA"}.get(rule, LABELS.get(rule, rule))  # fmt: skip


def decision(result: LiraResult) -> Decision:
    """The release decision for a model of this kind trained on this table: every rule that holds alpha, at alpha.

    A rule counts when it holds alpha at this M (``holds_alpha``): high when its interval's lower end
    exceeds 3 x alpha, elevated above 2 x alpha or above the rule's own no-signal reading (its TPR
    with no membership signal at this M, at least alpha), so an interval above chance always
    counts as signal or is said not to (a rule that does not hold alpha). Too few models for a
    measured per-record FPR is a finding with its next step.
    """
    ev = result.evaluation
    a = float(ev.fpr)
    step = ("The model memorises its training records: train with stronger regularisation or with differential "
            "privacy (DP-SGD), or release coarser outputs (labels, rounded probabilities), then audit again.")  # fmt: skip
    findings, quiet = [], []
    rules = [r for r in _DECISION_RULES if r in ev.tpr and r in ev.tpr_ci]
    for rule in rules:
        tpr, (lo, hi) = float(ev.tpr[rule]), ev.tpr_ci[rule]
        null = float(ev.no_signal_tpr.get(rule, a))
        said = (f"{_rule_name(rule)} flags {_pct(tpr)} of the training records (95 % interval {_pct(lo)} to {_pct(hi)}; "
                f"{times_chance(tpr, a)}) at a per-record FPR of {_pct(a)}")  # fmt: skip
        if not ev.holds_alpha.get(rule, True):
            if np.isfinite(lo) and lo > a:
                quiet.append(Finding("low", f"Not counted: {said}, but with no membership signal at all this rule reads "
                                     f"{_pct(null)} at M = {ev.n_models} (it does not hold alpha), so its interval "
                                     "above chance is the rule's own bias, not evidence."))  # fmt: skip
            continue
        chance = max(a, null)
        if np.isfinite(lo) and lo > HIGH_FACTOR * a:
            findings.append(Finding("high", f"A {result.pool.model} model trained on this table exposes its training "
                                    f"records: {said}.", step))  # fmt: skip
        elif np.isfinite(lo) and (lo > ELEVATED_FACTOR * a or lo > chance):
            findings.append(Finding("elevated", f"Some membership signal: {said}; with no signal this rule reads "
                                    f"{_pct(null)} at M = {ev.n_models}.", step))  # fmt: skip
        else:
            quiet.append(Finding("low", f"No signal beyond chance from this rule: {said}."))
    if ev.n_models < ev.required_models:
        quiet.append(Finding("low", f"With {ev.n_models} models the per-record FPRs rest on a Gaussian fit (measuring "
                             f"them at {a:g} needs {ev.required_models} models).",
                             f"Train at least {ev.required_models} models (--models) to measure the "
                             "per-record FPR."))  # fmt: skip
    return decide([*findings, *quiet], low="no rule that holds alpha finds membership signal beyond chance at this "
                  "number of models; passing does not prove the model private.", rules=RULES)  # fmt: skip
