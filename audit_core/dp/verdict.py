"""Verdict, release decision, limits and report of the DP claim check, of a run trained here
(:mod:`audit_core.dp.audit`) and of an uploaded model with its canary file (:mod:`audit_core.dp.uploaded`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from audit_core.common.decision import Decision, Finding, decide
from audit_core.common.report import InputSummary, Report
from audit_core.dp.figures import (
    NOT_A_PROOF,
    epsilon_figure,
    guesses_table,
    score_figure,
    summary_table,
    uploaded_epsilon_figure,
    uploaded_guesses_table,
    uploaded_score_figure,
)

__all__ = [
    "ASSUMPTION",
    "LIMITS",
    "RULES",
    "build_report",
    "build_uploaded_report",
    "decision",
    "uploaded_decision",
    "uploaded_verdict",
    "verdict",
]

if TYPE_CHECKING:  # annotations only: the uploaded-model mode never imports torch
    from audit_core.dp.audit import DpAuditResult
    from audit_core.dp.bounds import AuditedBounds
    from audit_core.dp.uploaded import UploadedDpResult


def _ceiling_sentence(result: DpAuditResult | UploadedDpResult) -> str:
    text = (f"With {result.canaries.m:,} canaries no audit of this kind can show more than epsilon {result.ceiling:.2f} "
            "(the ceiling: every guess right)")  # fmt: skip
    if result.ceiling == 0:
        return text + (f", so it cannot disprove any claim: the test's delta term (2 m delta = "
                       f"{2 * result.canaries.m * result.delta:g}) swamps it; a claim with so large a delta cannot "
                       "be checked with canaries.")  # fmt: skip
    if result.epsilon >= result.ceiling:
        return text + f", so a claim of {result.epsilon:g} cannot be disproved by it at all."
    return text + "."


def _bound_sentence(b: AuditedBounds, *, run: str = "one DP-SGD run with") -> str:
    return (f"{run} {b.m:,} canaries proves epsilon >= {b.epsilon:.2f} at delta {b.delta:g} "
            f"({100 * b.confidence:g} % confidence, {b.method}; {b.correct} of {b.r} guesses right)")  # fmt: skip


def _methods_sentence(b: AuditedBounds) -> str:
    """Both bounds on the same guesses, and which one the pre-registered rule reports."""
    other = ("Steinke et al.'s bound", b.steinke.epsilon) if b.primary == "fdp" else ("the f-DP bound", b.fdp.epsilon)
    why = "the claim names its mechanism" if b.primary == "fdp" else "a bare (epsilon, delta) claim"
    return (f"Reported: {b.method} (fixed before the run: {why}); {other[0]} on the same guesses is {other[1]:.2f}, "
            "shown, not used.")  # fmt: skip


def _white_box_sentence(result: DpAuditResult) -> str:
    if result.white_box is None:
        return ""
    w = result.white_box.bound
    share = w.epsilon / result.accountant_epsilon if result.accountant_epsilon > 0 else 0.0
    said = (f"White-box, on the same run: {w.m:,} gradient canaries ({result.white_box.statistic} statistic) prove "
            f"epsilon >= {w.epsilon:.2f} ({share:.0%} of the accountant's {result.accountant_epsilon:.2f})")  # fmt: skip
    if result.white_box_disproved:
        return said + f", above the claimed {result.epsilon:g}: the DP-SGD implementation does not deliver the claim."
    return said + "."


def _claim_sentence(said: str, *, disproved: bool, epsilon: float) -> str:
    if disproved:
        return f"The claim is disproved: {said}, above the claimed {epsilon:g}."
    return f"The claim is not disproved: {said}. {NOT_A_PROOF}"


def _not_exceeded(result: DpAuditResult | UploadedDpResult, bound: float) -> str:
    return (f"the audited bound {bound:.2f} does not exceed the claimed epsilon {result.epsilon:g} (the ceiling with "
            f"{result.canaries.m:,} canaries is {result.ceiling:.2f}); that is no proof of the claim.")  # fmt: skip


def verdict(result: DpAuditResult) -> str:
    """Plain-language reading: the claim, what the run proves, the ceiling, and the contrast without DP."""
    head = f"Claim: ({result.epsilon:g}, {result.delta:g})-DP; Opacus' accountant gives epsilon {result.accountant_epsilon:.2f}."
    said = _claim_sentence(_bound_sentence(result.dp.bound), disproved=result.disproved, epsilon=result.epsilon)
    contrast = (f"The same model trained without DP gives epsilon >= {result.non_dp.bound.epsilon:.2f} on the same "
                f"canaries (test accuracy {result.non_dp.test_accuracy:.3f} vs {result.dp.test_accuracy:.3f} "
                "with DP).")  # fmt: skip
    parts = [head, said, _methods_sentence(result.dp.bound), _ceiling_sentence(result), contrast, _white_box_sentence(result)]
    return " ".join(p for p in parts if p)


RULES: tuple[str, ...] = (
    "Disproved (high) when the audited epsilon lower bound (95 % confidence) exceeds the claimed epsilon.",
    "Not disproved, but less private than its accountant says (elevated) when the bound exceeds the accountant's "
    "epsilon but not the claim.",
    "This run could not tell (inconclusive) when the same model trained without DP is not disproved either (its "
    "bound does not exceed the claim), or when the claim is at or above the ceiling, the most these canaries can show: "
    "a broken DP implementation would have passed too.",
    "Not disproved (low) otherwise: no proof of the claim, only no evidence against it.",
    "With white-box gradient canaries, their bound on the same run adds a finding by the same cut-offs: disproved "
    "(high) above the claim, elevated above the accountant's epsilon, else low with its share of the accountant's.",
    "The bound compared is the one a rule fixed before the run reports: the f-DP bound against the claimed DP-SGD "
    "run's curve when the claim names its mechanism, Steinke et al.'s bound for a bare (epsilon, delta) claim.",
)
"""The cut-offs behind the DP claim check's decision (shown under "Why" and in the report)."""

_MORE_POWER = ("Give the audit more power, until the model trained without DP is disproved: mislabelled canaries "
               "(--canary-kind mislabelled), or outlier ones the model memorises (--canary-kind outlier), an MLP, more "
               "epochs (on fewer rows: --rows), more canaries (a higher ceiling), or white-box gradient canaries "
               "(--white-box); only then does a DP model that passes mean something.")  # fmt: skip


def decision(result: DpAuditResult) -> Decision:
    """Disproved (high) when the audited bound exceeds the claimed epsilon; this run could not tell (inconclusive)
    when the model trained without DP is not disproved either, or the claim is above the ceiling; not disproved (low)
    otherwise, which is no proof.

    Elevated when the bound exceeds the accountant's epsilon but not the claim (the run is less
    private than its own accounting says).
    """
    b, said = result.dp.bound.epsilon, _bound_sentence(result.dp.bound)
    plain = result.non_dp.bound.epsilon
    step = "Do not rely on the DP claim: check the DP-SGD implementation (clipping, noise, sampling) and its accounting."
    findings = []
    if result.disproved:
        findings.append(Finding("high", f"The DP claim is disproved: {said}, above the claimed epsilon {result.epsilon:g}.",
                                step))  # fmt: skip
    elif b > result.accountant_epsilon:
        findings.append(Finding("elevated", f"The run is less private than its accountant says: {said}, above the "
                                f"accountant's {result.accountant_epsilon:.2f}.", step))  # fmt: skip
    elif result.ceiling <= result.epsilon:
        findings.append(Finding("inconclusive", f"This run could not tell: {_ceiling_sentence(result)}",
                                "Use more canaries (a higher ceiling) or test a smaller claimed epsilon."))  # fmt: skip
    elif plain <= result.epsilon:
        findings.append(Finding("inconclusive", f"This run could not tell DP from no DP: the same model trained without "
                                f"DP gives only epsilon >= {plain:.2f} on the same canaries, not above the claimed "
                                f"{result.epsilon:g}, so a model without any privacy would have passed this audit "
                                f"too ({said}).", _MORE_POWER))  # fmt: skip
    else:
        findings.append(Finding("low", f"The audit does not disprove the claim: {said}. {NOT_A_PROOF} "
                                + _ceiling_sentence(result)))  # fmt: skip
    if "DP from no DP" not in findings[0].reason:  # the contrast, unless the finding above is about it
        findings.append(Finding("low", f"Without DP the same model gives epsilon >= {plain:.2f} on the same "
                                "canaries" + (f", above the claimed {result.epsilon:g}: the audit can tell a model "
                                "without DP." if plain > result.epsilon else ".")))  # fmt: skip
    findings += _white_box_findings(result, step)
    return decide(findings, low=_not_exceeded(result, b), kind="dp_claim", rules=RULES)


def _white_box_findings(result: DpAuditResult, step: str) -> list[Finding]:
    """The white-box audit of the same run: high when it disproves the claim, elevated above the accountant, else low."""
    if result.white_box is None:
        return []
    w = result.white_box.bound
    said = _bound_sentence(w, run=f"the same run's white-box audit ({result.white_box.statistic} statistic) with")
    if result.white_box_disproved:
        return [Finding("high", f"The DP claim is disproved by gradient canaries: {said}, above the claimed epsilon "
                        f"{result.epsilon:g}.", step)]  # fmt: skip
    if w.epsilon > result.accountant_epsilon:
        return [Finding("elevated", f"The run is less private than its accountant says: {said}, above the "
                        f"accountant's {result.accountant_epsilon:.2f}.", step)]  # fmt: skip
    return [Finding("low", f"White-box: {said}, {w.epsilon / result.accountant_epsilon:.0%} of the accountant's epsilon "
                    f"{result.accountant_epsilon:.2f}.")]  # fmt: skip


LIMITS = [
    "Two one-run tests read the same guesses: Steinke, Nasr and Jagielski's (NeurIPS 2023; under (epsilon, delta)-DP "
    "the correct guesses are dominated by a binomial, plus a delta term) and Mahloujifar, Melis and Chaudhuri's f-DP "
    "test (ICML 2025), which uses the claimed mechanism's whole trade-off curve. Canaries are included with "
    "probability 1/2 independently.",
    "Which bound is reported is fixed before the run: the f-DP bound against the DP-SGD run's curve (sampling rate and "
    "steps as trained) when the claim names its mechanism, Steinke's bound for a bare (epsilon, delta) claim. The f-DP "
    "bound is a lower bound on epsilon for a run that is DP-SGD with some noise multiplier (what the claim says); the "
    "epsilon of the rejected noise is read from Opacus' PRV accountant's lower error bound.",
    "The number of guesses r is taken from a grid fixed in advance (2 % to 100 % of the canaries) and each r is "
    "tested at 5 % / (grid size) (Bonferroni), so choosing the best r keeps the 95 % confidence.",
    NOT_A_PROOF,
    "The ceiling is the bound a perfect attack would give with these canaries; a claim above it cannot be disproved "
    "by this audit, however leaky the training.",
    "One run with m canaries audits the DP-SGD run made here, with Opacus' RDP accountant; it says nothing about "
    "another training run, code or data. The scores are the model's confidence in each canary's label, "
    "without reference models: a weak attack, so bounds are well below the true epsilon of DP-SGD.",
    "White-box (when run): m Dirac gradient canaries on weights no record touches, put into the same DP-SGD run's "
    "steps with their own fair coins and scored from the weights of every step; it audits the DP-SGD mechanism "
    "(clipping, noise, sampling) as implemented, not what a released model leaks.",
]


def build_report(result: DpAuditResult, *, inputs: Sequence[InputSummary] = ()) -> Report:
    """The DP claim check's report, used by the page and by ``python -m audit_core dp-audit --html``."""
    j = result.to_json()
    return Report(
        inputs=list(inputs),
        settings={"claimed": j["claimed"], **j["training"], "canaries": j["canaries"], "seed": result.seed},
        metrics=j,
        figures=[
            ("Claimed epsilon and audited bounds", epsilon_figure(result)),
            ("Canary scores with DP-SGD", score_figure(result, which="dp")),
            ("Canary scores without DP", score_figure(result, which="non_dp")),
            *([("White-box gradient canary scores", score_figure(result, which="white_box"))]
              if result.white_box is not None else []),
        ],
        tables=[("Both models", summary_table(result)), ("Every number of guesses r", guesses_table(result))],
        verdict=verdict(result),
        limits=LIMITS,
        seed=result.seed,
    )


# ------------------------------------------------------------------------------------------ an uploaded model
_UPLOADED_RUN = "scoring the model on its"
ASSUMPTION = ("The bound holds only if each canary was put in the training data by a fair coin (probability 1/2, "
              "independently) before training, and the file lists every canary drawn with its label as trained.")  # fmt: skip


def _uploaded_head(result: UploadedDpResult) -> str:
    c = result.canaries
    return (f"Claim: ({result.epsilon:g}, {result.delta:g})-DP for model '{result.model['file']}', audited with its "
            f"{c.m:,} canaries ({int(c.included.sum()):,} included, by '{c.name}').")  # fmt: skip


def uploaded_verdict(result: UploadedDpResult) -> str:
    """Plain-language reading of an uploaded model's check: the claim, what its canaries prove, the ceiling, the assumption."""
    said = _claim_sentence(_bound_sentence(result.bound, run=_UPLOADED_RUN), disproved=result.disproved,
                           epsilon=result.epsilon)  # fmt: skip
    return " ".join([_uploaded_head(result), said, _methods_sentence(result.bound), _ceiling_sentence(result), ASSUMPTION])


_UPLOADED_RULES = (
    RULES[0],
    "This run could not tell (inconclusive) when the claim is at or above the ceiling, the most these canaries can "
    "show.",
    RULES[3],
    RULES[5],
)


def uploaded_decision(result: UploadedDpResult) -> Decision:
    """High when the canaries prove more than the claimed epsilon (the claim is disproved); inconclusive when the claim
    is at or above the ceiling (nothing could disprove it); low otherwise (no proof)."""
    bound = _bound_sentence(result.bound, run=_UPLOADED_RUN)
    if result.disproved:
        finding = Finding("high", f"The DP claim is disproved: {bound}, above the claimed epsilon {result.epsilon:g}.",
                          "Do not rely on the DP claim: check the training's clipping, noise, sampling and accounting, "
                          "and that the canaries were included as the file says.")  # fmt: skip
    elif result.ceiling <= result.epsilon:
        finding = Finding("inconclusive", f"This run could not tell: {_ceiling_sentence(result)}",
                          "Train with more canaries (a higher ceiling), or test a smaller claimed epsilon.")  # fmt: skip
    else:
        finding = Finding("low", f"The audit does not disprove the claim: {bound}. {NOT_A_PROOF} "
                          + _ceiling_sentence(result))  # fmt: skip
    notes = [Finding("low", n) for n in result.canaries.notes]
    return decide([finding, Finding("low", ASSUMPTION), *notes], low=_not_exceeded(result, result.bound.epsilon),
                  kind="dp_claim", rules=_UPLOADED_RULES)


_UPLOADED_LIMITS = [
    LIMITS[0],
    LIMITS[1],
    NOT_A_PROOF,
    LIMITS[3],
    ASSUMPTION + " Canaries chosen after training, or included by anything but the coin, make the bound invalid.",
    "The score is the model's log-probability of each canary's label (the LOSS attack). A LiRA-style score would "
    "need reference models trained with and without each canary by the team's own training code, which an uploaded "
    "model does not come with; a weaker attack only makes the bound smaller, never invalid.",
    "Only the model as uploaded is audited: nothing is known here of its accountant, its accuracy or the same model "
    "trained without DP (null in the JSON).",
]


def build_uploaded_report(result: UploadedDpResult, *, inputs: Sequence[InputSummary] = ()) -> Report:
    """The report of an uploaded model's check (the page's second mode, ``python -m audit_core dp-audit-model --html``)."""
    j = result.to_json()
    return Report(
        inputs=list(inputs),
        settings={"claimed": j["claimed"], "canaries": j["canaries"], "score": j["score"], "seed": result.seed},
        metrics=j,
        figures=[
            ("Claimed epsilon and the audited bound", uploaded_epsilon_figure(result)),
            ("Canary scores", uploaded_score_figure(result)),
        ],
        tables=[("Every number of guesses r", uploaded_guesses_table(result))],
        verdict=uploaded_verdict(result),
        limits=_UPLOADED_LIMITS,
        seed=result.seed,
    )
