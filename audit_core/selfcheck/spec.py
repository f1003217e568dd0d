"""The ``selfcheck`` tool: ``python -m audit_core selfcheck [--quick] [--json FILE]`` (no inputs, no page, no report)."""

from __future__ import annotations

from dataclasses import dataclass

from audit_core.contract import Audit, Context, Inputs, Outcome, Settings, knob

__all__ = ["SELFCHECK", "SelfCheckSettings"]


@dataclass(frozen=True)
class SelfCheckSettings(Settings):
    quick: bool = knob(False, "Quick", "the reduced version the home page runs (fewer repetitions, under 10 s)")


def _run(inputs: Inputs, s: SelfCheckSettings, ctx: Context):
    from audit_core.selfcheck.checks import run_selfcheck, store

    result = run_selfcheck(quick=s.quick, seed=ctx.seed)
    store(result)  # the home page's "Validation" and every report's Software section read it
    return result


def _summary(outcome: Outcome) -> list[str]:
    return outcome.value.table()


def _notes(outcome: Outcome) -> list[str]:
    from audit_core.selfcheck.checks import cache_path

    return [f"ran in {outcome.value.seconds:.1f} s; last result kept in {cache_path()}"]


SELFCHECK = Audit(
    name="selfcheck",
    title="Self-check",
    icon="✅",
    question="Do the intervals, the LiRA average, the epsilon bound and the copy test hold on data with a known answer?",
    needs="nothing: simulations with a known answer",
    method="TPR-interval coverage and width, LiRA per-sample-average bias at M = 8, 16, 64, epsilon-bound validity "
    "on randomized response and the Gaussian mechanism, copy-test false alarms on tables with no leak.",
    inputs=(),
    settings=SelfCheckSettings,
    run=_run,
    verdict=lambda result: result.verdict(),
    summary=_summary,
    notes=_notes,
    outputs=("json",),
)
