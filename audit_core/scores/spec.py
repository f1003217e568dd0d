"""The score check as a registered audit (audit_core.contract): inputs, settings, run, verdict, report."""

from __future__ import annotations

from dataclasses import dataclass

from audit_core.common.limits import DELTA, TARGET_FPR
from audit_core.contract import Audit, Context, Inputs, InputSpec, Outcome, Settings, knob

__all__ = ["SCORES", "ScoreSettings"]


@dataclass(frozen=True)
class ScoreSettings(Settings):
    fpr: tuple[float, ...] = knob(
        (0.001, 0.01, 0.1), "Target FPRs", "Each false-positive rate at which the TPR is reported, with its interval.",
        bound=TARGET_FPR, min_items=1,
    )  # fmt: skip
    delta: float = knob(
        1e-5, "delta", "The delta of the (epsilon, delta) statement; 1e-5 is usual for tables of up to ~100,000 records.",
        bound=DELTA,
    )  # fmt: skip


def _run(inputs: Inputs, settings: ScoreSettings, ctx: Context):
    from audit_core.scores.audit import score_check

    return score_check(inputs["scores"], fprs=settings.fpr, delta=settings.delta, seed=ctx.seed, name=inputs.name("scores"))


def _decision(result):
    from audit_core.scores.verdict import decision

    return decision(result)


def _verdict(check) -> str:
    from audit_core.scores.verdict import verdict

    return verdict(check)


def _report(outcome: Outcome):
    from audit_core.common.report import describe_input
    from audit_core.scores.verdict import build_report

    return build_report(outcome.value, inputs=[describe_input(outcome.inputs.name("scores"), outcome.inputs["scores"])])


def _summary(outcome: Outcome) -> list[str]:
    lines = []
    for attack in outcome.value.attacks.values():
        tprs = ", ".join(f"TPR at FPR {t.target_fpr:g} {t.tpr:.3f}" + ("" if t.supported else " (unsupported)")
                         for t in attack.tpr_at_fpr.values())  # fmt: skip
        e = attack.epsilon
        lines.append(f"{attack.name}: AUC {attack.auc:.3f}; {tprs}; epsilon >= {e.epsilon:.3f} "
                     f"(delta {e.delta:g}, {100 * e.confidence:g} %)")  # fmt: skip
    return lines


SCORES = Audit(
    name="scores",
    title="Score check",
    icon="🎯",
    question="What do membership scores from another tool show, and what privacy loss do they prove?",
    needs="one table with score (higher = member) and is_member (0/1); optional attack and record_id. CSV or Parquet.",
    method="Log-ROC, TPR at low FPR with intervals, and an empirical epsilon lower bound (threshold chosen on a "
    "seeded, stratified 20 % of each class, Clopper-Pearson bounds on the other 80 %).",
    inputs=(InputSpec("scores", "CSV or Parquet: score (higher = member), is_member (0/1), [attack], [record_id]"),),
    settings=ScoreSettings,
    run=_run,
    verdict=_verdict,
    decision=_decision,
    report=_report,
    summary=_summary,
    records=lambda outcome: outcome.value.records,
    outputs=("json", "html", "pdf", "records"),
    page="views/score_check.py",
    section="Membership scores",
)
