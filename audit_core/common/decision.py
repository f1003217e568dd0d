"""The release decision every audit ends in: a level, one sentence, the findings behind it, what to do next.

A steward signs this and shows it to people who are not privacy experts, and a release
pipeline gates on it (``--fail-on``). Each audit's ``verdict.py`` builds its
:class:`Decision` from its own findings; the contract (``audit_core.contract``) puts it
in the JSON as ``verdict = {level, headline, reasons, next_steps}``, at the top of the
report and of the page.

Levels, in order: ``low`` (no finding at this sample size; not a proof of anonymity),
``elevated`` (a finding to review before release), ``high`` (do not release as it is).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

__all__ = ["FAIL_ON_EXIT", "LEVELS", "Decision", "Finding", "attack_finding", "decide"]

LEVELS: tuple[str, ...] = ("low", "elevated", "high")
"""Release levels, least severe first."""

FAIL_ON_EXIT = 3
"""Exit status of a command whose verdict reached its ``--fail-on`` level (2 stays bad input)."""


def _level_at_least(level: str, threshold: str) -> bool:
    """True when ``level`` is ``threshold`` or more severe."""
    return LEVELS.index(level) >= LEVELS.index(threshold)


def _worst_level(levels: Iterable[str]) -> str:
    """The most severe of ``levels`` (``low`` when there are none)."""
    return max(levels, key=LEVELS.index, default="low")


@dataclass(frozen=True)
class Finding:
    """One finding that can drive a decision: its level, the sentence that states it, what to do about it."""

    level: str
    reason: str
    next_step: str = ""


@dataclass(frozen=True)
class Decision:
    """The release decision of one audit.

    Attributes
    ----------
    level : {"low", "elevated", "high"}
    headline : str
        The decision in one sentence a non-expert can act on.
    reasons : tuple of str
        The findings that drive it, most severe first (each one sentence).
    next_steps : tuple of str
        What to do now, most urgent first.
    """

    level: str
    headline: str
    reasons: tuple[str, ...] = ()
    next_steps: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.level not in LEVELS:  # pragma: no cover - a programming error, never user input
            raise ValueError(f"unknown level {self.level!r}")

    def reaches(self, threshold: str) -> bool:
        """True when this decision is at ``threshold`` or worse (``--fail-on``)."""
        return _level_at_least(self.level, threshold)

    def to_json(self) -> dict[str, Any]:
        """``{level, headline, reasons, next_steps}``."""
        return {"level": self.level, "headline": self.headline, "reasons": list(self.reasons),
                "next_steps": list(self.next_steps)}  # fmt: skip


_HEADLINES = {
    "high": "UNSAFE to release as it is",
    "elevated": "Elevated risk: review before release",
    "low": "No measurable risk at this sample size",
}
"""How each level's headline begins (the finding that drives it follows)."""


def decide(findings: Iterable[Finding], *, low: str, subject: str = "") -> Decision:
    """A :class:`Decision` from findings: the worst one names the headline, all feed reasons and next steps.

    Parameters
    ----------
    findings : iterable of Finding
        Findings of any level; ``low`` findings are kept as reasons (context), after the others.
    low : str
        The headline's explanation when nothing is above ``low`` (what was checked).
    subject : str
        Prefix of the headline (e.g. "Synthetic table"); empty for none.
    """
    items = sorted(findings, key=lambda f: -LEVELS.index(f.level))
    level = _worst_level(f.level for f in items)
    lead = f"{subject}: " if subject else ""
    if level == "low":
        headline = f"{lead}{_HEADLINES['low']}: {low}"
    else:
        headline = f"{lead}{_HEADLINES[level]}: {items[0].reason[0].lower()}{items[0].reason[1:]}"
    steps: list[str] = []
    for f in items:
        if f.next_step and f.next_step not in steps:
            steps.append(f.next_step)
    reasons = tuple(f.reason for f in items)
    return Decision(level=level, headline=headline, reasons=reasons, next_steps=tuple(steps))


def _pct(x: float) -> str:
    return f"{100 * x:.1f} %"


def attack_finding(label: str, point: Any, *, auc: float | None = None, step: str = "", members: str = "members") -> Finding:
    """The shared rule for one attack's TPR at a low FPR (``point``: a ``common.roc.TprAtFpr``).

    High when the lower end of its 95 % interval exceeds 3 x the FPR, elevated when it exceeds
    2 x the FPR or the AUC exceeds 0.6 (the margins allow for the threshold being read off
    the same non-members whose FPR it sets), low otherwise; and a low finding with its next
    step when the sample is too small to measure the FPR at all.
    """
    fpr = float(point.target_fpr)
    said = (f"{label} flags {_pct(point.tpr)} of the {members} (95 % interval {_pct(point.ci_low)} to "
            f"{_pct(point.ci_high)}) while wrongly flagging {_pct(point.achieved_fpr)} of the non-members, where chance "
            f"would flag {_pct(fpr)}")  # fmt: skip
    if not point.supported:
        return Finding("low", f"With {point.n_neg:,} non-members an FPR of {_pct(fpr)} cannot be measured (it needs at "
                       f"least {round(10 / fpr):,}): the sample is too small to conclude either way.",
                       "Audit with more non-members (a larger holdout or population table).")  # fmt: skip
    if point.ci_low > 3 * fpr:
        return Finding("high", f"An attacker tells {members} from non-members: {said}.", step)
    if point.ci_low > 2 * fpr:
        return Finding("elevated", f"Some membership signal: {said}.", step)
    if auc is not None and auc > 0.6:
        return Finding("elevated", f"Some membership signal: {label} reaches AUC {auc:.3f} (above 0.6).", step)
    return Finding("low", f"No attack tells {members} from non-members beyond chance: {said}.")
