"""Verdict, release decision, limits and report of the DP claim check (:mod:`audit_core.dp.audit`)."""

from __future__ import annotations

from collections.abc import Sequence

from audit_core.common.decision import Decision, Finding, decide
from audit_core.common.report import InputSummary, Report
from audit_core.dp.audit import DpAuditResult
from audit_core.dp.figures import NOT_A_PROOF, epsilon_figure, guesses_table, score_figure, summary_table


def _ceiling_sentence(result: DpAuditResult) -> str:
    text = (f"With {result.canaries.m:,} canaries no audit of this kind can show more than epsilon {result.ceiling:.2f} "
            "(the ceiling: every guess right)")  # fmt: skip
    if result.epsilon >= result.ceiling:
        return text + f", so a claim of {result.epsilon:g} cannot be disproved by it at all."
    return text + "."


def _bound_sentence(result: DpAuditResult) -> str:
    b = result.dp.bound
    return (f"one DP-SGD run with {b.m:,} canaries proves epsilon >= {b.epsilon:.2f} at delta {result.delta:g} "
            f"({100 * b.confidence:g} % confidence; {b.correct} of {b.r} guesses right)")  # fmt: skip


def verdict(result: DpAuditResult) -> str:
    """Plain-language reading: the claim, what the run proves, the ceiling, and the contrast without DP."""
    head = f"Claim: ({result.epsilon:g}, {result.delta:g})-DP; Opacus' accountant gives epsilon {result.accountant_epsilon:.2f}."
    if result.disproved:
        said = f"The claim is disproved: {_bound_sentence(result)}, above the claimed {result.epsilon:g}."
    else:
        said = f"The claim is not disproved: {_bound_sentence(result)}. {NOT_A_PROOF}"
    contrast = (f"The same model trained without DP gives epsilon >= {result.non_dp.bound.epsilon:.2f} on the same "
                f"canaries (test accuracy {result.non_dp.test_accuracy:.3f} vs {result.dp.test_accuracy:.3f} "
                "with DP).")  # fmt: skip
    return " ".join([head, said, _ceiling_sentence(result), contrast])


def decision(result: DpAuditResult) -> Decision:
    """High when the audited bound exceeds the claimed epsilon (the claim is disproved), low otherwise.

    Elevated when the bound exceeds the accountant's epsilon but not the claim (the run is less
    private than its own accounting says). A low decision says that it is no proof, and the ceiling.
    """
    b = result.dp.bound.epsilon
    step = "Do not rely on the DP claim: check the DP-SGD implementation (clipping, noise, sampling) and its accounting."
    findings = []
    if result.disproved:
        findings.append(Finding("high", f"The DP claim is disproved: {_bound_sentence(result)}, above the claimed "
                                f"epsilon {result.epsilon:g}.", step))  # fmt: skip
    elif b > result.accountant_epsilon:
        findings.append(Finding("elevated", f"The run is less private than its accountant says: {_bound_sentence(result)}, "
                                f"above the accountant's {result.accountant_epsilon:.2f}.", step))  # fmt: skip
    else:
        findings.append(Finding("low", f"The audit does not disprove the claim: {_bound_sentence(result)}. {NOT_A_PROOF} "
                                + _ceiling_sentence(result)))  # fmt: skip
    findings.append(Finding("low", f"Without DP the same model gives epsilon >= {result.non_dp.bound.epsilon:.2f} on "
                            "the same canaries."))  # fmt: skip
    return decide(findings, low=f"the audited bound {b:.2f} does not exceed the claimed epsilon {result.epsilon:g} "
                  f"(the ceiling with {result.canaries.m:,} canaries is {result.ceiling:.2f}); that is no proof of "
                  "the claim.")  # fmt: skip


LIMITS = [
    "The bound is Steinke, Nasr and Jagielski's one-run test (NeurIPS 2023): canaries included with probability 1/2 "
    "independently; under (epsilon, delta)-DP the correct guesses are dominated by a binomial, plus a delta term.",
    "The number of guesses r is taken from a grid fixed in advance (2 % to 100 % of the canaries) and each r is "
    "tested at 5 % / (grid size) (Bonferroni), so choosing the best r keeps the 95 % confidence.",
    NOT_A_PROOF,
    "The ceiling is the bound a perfect attack would give with these canaries; a claim above it cannot be disproved "
    "by this audit, however leaky the training.",
    "One run with m canaries audits the DP-SGD run made here, with Opacus' RDP accountant; it says nothing about "
    "another training run, code or data. The scores are the model's confidence in each canary's label, "
    "without reference models: a weak attack, so bounds are well below the true epsilon of DP-SGD.",
]


def build_report(result: DpAuditResult, *, inputs: Sequence[InputSummary] = ()) -> Report:
    """The DP claim check's report, used by the page and by ``python -m audit_core dp-audit --html``."""
    j = result.to_json()
    return Report(
        title="DP claim check",
        question=f"Does one training run disprove the claim ({result.epsilon:g}, {result.delta:g})-DP?",
        inputs=list(inputs),
        settings={"claimed": j["claimed"], **j["training"], "canaries": j["canaries"], "seed": result.seed},
        metrics=j,
        figures=[
            ("Claimed epsilon and audited bounds", epsilon_figure(result)),
            ("Canary scores with DP-SGD", score_figure(result, which="dp")),
            ("Canary scores without DP", score_figure(result, which="non_dp")),
        ],
        tables=[("Both models", summary_table(result)), ("Every number of guesses r", guesses_table(result))],
        verdict=verdict(result),
        limits=LIMITS,
        seed=result.seed,
    )
