"""Verdict, limits and report of the score check (:mod:`audit_core.scores.audit`)."""

from __future__ import annotations

from collections.abc import Sequence

from audit_core.common.decision import Decision, Finding, attack_finding, decide, times_chance, tpr_rule
from audit_core.common.privacy_bound import ASSUMPTION, epsilon_scale
from audit_core.common.report import InputSummary, Report
from audit_core.scores.audit import ScoreCheck
from audit_core.scores.figures import epsilon_table, roc_figure, tpr_table

__all__ = ["LIMITS", "RULES", "build_report", "decision", "verdict"]


def _pct(x: float) -> str:
    return f"{100 * x:.1f} %"


def verdict(check: ScoreCheck) -> str:
    """Plain-language reading: the strongest attack at the lowest supported FPR, and the epsilon bound."""
    best = max(check.attacks.values(), key=lambda a: (a.epsilon.epsilon, a.auc))
    parts = []
    for a in check.attacks.values():
        supported = [t for t in a.tpr_at_fpr.values() if t.supported]
        if a.reversed:  # said, never flipped silently: a TPR of reversed scores would read as "no risk"
            parts.append(a.reversed_sentence())
        elif supported:
            t = min(supported, key=lambda t: t.target_fpr)
            parts.append(
                f"Attack '{a.name}' (AUC {a.auc:.3f}) flags {_pct(t.tpr)} of members at FPR {t.target_fpr:g} "
                f"(95 % interval {_pct(t.ci_low)} to {_pct(t.ci_high)}; {times_chance(t.tpr, t.target_fpr)})."
            )
        else:
            parts.append(
                f"Attack '{a.name}' (AUC {a.auc:.3f}) has too few non-members ({a.curve.n_neg:,}) for a TPR at the "
                f"chosen FPRs to be measured."
            )
    parts.append((f"Strongest evidence, attack '{best.name}': " if len(check.attacks) > 1 else "") + best.epsilon.sentence())
    if best.epsilon.epsilon <= 0 and any(a.reversed for a in check.attacks.values()):
        parts.append("That reads the reversed scores as given: it says nothing about privacy until they are negated.")
    return " ".join([*parts, *check.notes])


LIMITS = [
    ASSUMPTION,
    "TPR intervals come from audit_core.common.roc.tpr_at_fpr, the same for every audit in this tool.",
    "The epsilon lower bound picks its threshold on a seeded, stratified 20 % of each attack's records and is "
    "computed on the other 80 % with one-sided Clopper-Pearson bounds (2.5 % each): exact, but it spends a fifth of "
    "the data on the choice; another seed gives a slightly different bound.",
    "A low bound is no privacy guarantee: it shows what these scores demonstrate, and a stronger attack may "
    "demonstrate more. Only an analysis of the training procedure gives an upper bound.",
    "The scores are taken as given: how they were made (and whether the members were used to tune the attack) "
    "is outside the check.",
]


def build_report(check: ScoreCheck, *, inputs: Sequence[InputSummary] = ()) -> Report:
    """The score check's report, used by the page and by ``python -m audit_core scores --html``."""
    return Report(
        inputs=list(inputs),
        settings={"fpr": list(check.fprs), "delta": check.delta, "seed": check.seed},
        metrics=check.to_json()["attacks"],
        figures=[("Log-ROC of every attack", roc_figure(check))],
        tables=[
            ("Epsilon lower bound per attack", epsilon_table(check)),
            ("TPR at each target FPR", tpr_table(check)),
            ("Most member-like records (top 50 per attack)", check.records.groupby("attack", sort=False).head(50)),
        ],
        verdict=verdict(check),
        limits=LIMITS,
        seed=check.seed,
    )


RULES: tuple[str, ...] = (
    tpr_rule(0.01),
    "Epsilon lower bound: the scores show membership (at least elevated) when an attack demonstrates a privacy loss "
    "(its 95 % lower bound is above 0).",
    "Reversed scores (lower = more member-like) that separate the classes are elevated: negate them and check again.",
)
"""The cut-offs behind the score check's decision (shown under "Why" and in the report)."""


def decision(check: ScoreCheck) -> Decision:
    """What the scores show: every attack's TPR at 1 % FPR (or the lowest FPR measured), and its epsilon bound.

    The shared rule of :func:`audit_core.common.decision.attack_finding`, for each attack (inconclusive when
    no FPR near 1 % can be measured); a demonstrated privacy loss (epsilon lower bound above 0) is at least
    elevated.
    """
    findings = []
    step = "The scored model or table exposes its members: retrain with stronger privacy settings and check again."
    for a in check.attacks.values():
        if a.reversed:  # lower = member: the TPR of these scores as given says nothing, in either direction
            findings.append(Finding("elevated", a.reversed_sentence(), "Negate the scores (higher must mean more "
                                    "member-like) and run the check again: reversed scores that separate this well "
                                    "expose members."))  # fmt: skip
            continue
        points = sorted(a.tpr_at_fpr.values(), key=lambda t: abs(t.target_fpr - 0.01))
        findings.append(attack_finding(f"attack '{a.name}'", points[0], auc=a.auc, step=step, fallback=points[1:]))
        if a.epsilon.epsilon > 0:
            findings.append(Finding("elevated", f"Attack '{a.name}' demonstrates a privacy loss of epsilon >= "
                                    f"{a.epsilon.epsilon:.2f}, {epsilon_scale(a.epsilon.epsilon)}: {a.epsilon.sentence()}",
                                    step))  # fmt: skip
    return decide(findings, low="the scores separate members from non-members no better than chance.", kind="scores",
                  rules=RULES)  # fmt: skip
