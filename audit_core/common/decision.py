"""The decision every audit ends in: a level, one sentence, the findings behind it, what to do next, the cut-offs.

A steward signs this and shows it to people who are not privacy experts, and a release
pipeline gates on it (``--fail-on``). Each audit's ``verdict.py`` builds its
:class:`Decision` from its own findings; the contract (``audit_core.contract``) puts it
in the JSON as ``verdict = {level, kind, answer, headline, reasons, next_steps, rules}``, at
the top of the report and of the page.

Levels, in order (``LEVELS``): ``low`` (no finding at this sample size; not a proof of
anonymity), ``inconclusive`` (the data cannot measure what the decision rests on: too few
non-members for the FPR, a DP audit whose no-DP contrast is not disproved either; shown
neutral, with what to add), ``elevated`` (a finding to review before release), ``high``
(do not release as it is). ``--fail-on inconclusive`` lets nothing through that was not
measured; ``--fail-on elevated`` lets an inconclusive audit pass.

``verdict.level`` is the machine key; ``verdict.kind`` names the question the level answers
(``KINDS``), and so the words the page and the report put on it (``ANSWERS``):

- ``release`` (a synthetic table, a model): low / inconclusive / elevated / high;
- ``dp_claim``: not disproved / this run could not tell / not disproved but less private than
  its accountant says / disproved;
- ``fabrication``: membership evidence from this MIA cannot / can be forged (detected or not);
- ``scores``: these scores do not show / show membership, or cannot tell.

The API, for the audits' verdicts (additive: new fields have defaults, nothing is renamed):

- :class:`Finding` ``(level, reason, next_step="")``: one finding;
- :func:`decide` ``(findings, *, low, subject="", kind="release", rules=())``: the worst finding names
  the headline (release: "UNSAFE to release as it is: ...", "Inconclusive: ...", ...; other kinds:
  the finding's own sentence), all feed the reasons and next steps; ``rules`` are the cut-offs
  behind the levels, in words (shown under "Why" and in the report);
- :func:`attack_finding`: the shared rule for one attack's TPR at a low FPR (:func:`tpr_rule` says it in
  words; :data:`HIGH_FACTOR`, :data:`ELEVATED_FACTOR`, :data:`ELEVATED_AUC` are its cut-offs), with the
  magnitude in words (:func:`times_chance`);
- :class:`Decision` ``.reaches(threshold)`` (``--fail-on``), ``.title`` ("Release decision: HIGH"),
  ``.to_json()``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "ANSWERS",
    "ELEVATED_AUC",
    "ELEVATED_FACTOR",
    "FAIL_ON_EXIT",
    "HIGH_FACTOR",
    "KINDS",
    "LEVELS",
    "Decision",
    "Finding",
    "attack_finding",
    "decide",
    "times_chance",
    "tpr_rule",
]

LEVELS: tuple[str, ...] = ("low", "inconclusive", "elevated", "high")
"""Levels, least severe first (``--fail-on`` takes any but ``low``)."""

FAIL_ON_EXIT = 3
"""Exit status of a command whose verdict reached its ``--fail-on`` level (2 stays bad input)."""

HIGH_FACTOR = 3.0
"""``high`` when the lower end of a TPR's 95 % interval at FPR alpha is above this many times alpha."""
ELEVATED_FACTOR = 2.0
"""``elevated`` when it is above this many times alpha (the margin allows for a threshold read off the same
non-members whose FPR it sets)."""
ELEVATED_AUC = 0.6
"""``elevated`` when an attack's AUC is above this."""

KINDS: dict[str, str] = {
    "release": "Release decision",
    "dp_claim": "DP claim",
    "fabrication": "Fabricated members",
    "scores": "Score check",
}
"""The question each kind of decision answers: the box's and the report's title."""

ANSWERS: dict[str, dict[str, str]] = {
    "release": {"low": "LOW", "inconclusive": "INCONCLUSIVE", "elevated": "ELEVATED", "high": "HIGH"},
    "dp_claim": {"low": "NOT DISPROVED", "inconclusive": "THIS RUN COULD NOT TELL",
                 "elevated": "NOT DISPROVED, but the run is less private than its accountant says",
                 "high": "DISPROVED"},
    "fabrication": {"low": "membership evidence from this MIA CANNOT be forged here",
                    "inconclusive": "this run could not tell whether membership evidence can be forged",
                    "elevated": "membership evidence from this MIA CAN be forged, but the detector catches it",
                    "high": "membership evidence from this MIA CAN be forged, and goes unnoticed"},
    "scores": {"low": "these scores DO NOT SHOW membership", "inconclusive": "these scores CANNOT TELL (too few records)",
               "elevated": "these scores SHOW membership", "high": "these scores SHOW membership clearly"},
}  # fmt: skip
"""The level in the words of its kind (``Decision.title``)."""


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
    """The decision of one audit.

    Attributes
    ----------
    level : {"low", "inconclusive", "elevated", "high"}
        The machine key (``--fail-on``).
    headline : str
        The decision in one sentence a non-expert can act on.
    reasons : tuple of str
        The findings that drive it, most severe first (each one sentence).
    next_steps : tuple of str
        What to do now, most urgent first.
    kind : {"release", "dp_claim", "fabrication", "scores"}
        The question the level answers (:data:`KINDS`), so the words put on it (:data:`ANSWERS`).
    rules : tuple of str
        The cut-offs behind the levels, in words ("high when ...").
    """

    level: str
    headline: str
    reasons: tuple[str, ...] = ()
    next_steps: tuple[str, ...] = ()
    kind: str = "release"
    rules: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.level not in LEVELS:  # pragma: no cover - a programming error, never user input
            raise ValueError(f"unknown level {self.level!r}")
        if self.kind not in KINDS:  # pragma: no cover - a programming error, never user input
            raise ValueError(f"unknown kind {self.kind!r}")

    @property
    def answer(self) -> str:
        """The level in the words of this kind ("HIGH", "DISPROVED", "these scores SHOW membership")."""
        return ANSWERS[self.kind][self.level]

    @property
    def title(self) -> str:
        """The box's title: the question and its answer ("Release decision: HIGH")."""
        return f"{KINDS[self.kind]}: {self.answer}"

    def reaches(self, threshold: str) -> bool:
        """True when this decision is at ``threshold`` or worse (``--fail-on``)."""
        return _level_at_least(self.level, threshold)

    def to_json(self) -> dict[str, Any]:
        """``{level, kind, answer, headline, reasons, next_steps, rules}``."""
        return {"level": self.level, "kind": self.kind, "answer": self.answer, "headline": self.headline,
                "reasons": list(self.reasons), "next_steps": list(self.next_steps), "rules": list(self.rules)}  # fmt: skip


_HEADLINES = {
    "high": "UNSAFE to release as it is",
    "elevated": "Elevated risk: review before release",
    "inconclusive": "Inconclusive: this audit could not measure the risk",
    "low": "No measurable risk at this sample size",
}
"""How a release decision's headline begins (the finding that drives it follows)."""


def decide(
    findings: Iterable[Finding], *, low: str, subject: str = "", kind: str = "release", rules: Sequence[str] = ()
) -> Decision:
    """A :class:`Decision` from findings: the worst one names the headline, all feed reasons and next steps.

    Parameters
    ----------
    findings : iterable of Finding
        Findings of any level; ``low`` findings are kept as reasons (context), after the others.
    low : str
        The headline's explanation when nothing is above ``low`` (what was checked).
    subject : str
        Prefix of the headline (e.g. "Synthetic table"); empty for none.
    kind : str
        The question the decision answers (:data:`KINDS`). A release decision's headline begins with
        its level in words ("UNSAFE to release as it is: ..."); another kind's is the driving finding's
        own sentence (it says "The DP claim is disproved: ..." itself).
    rules : sequence of str
        The cut-offs behind the levels, in words.
    """
    items = sorted(findings, key=lambda f: -LEVELS.index(f.level))
    level = _worst_level(f.level for f in items)
    lead = f"{subject}: " if subject else ""
    if kind == "release":
        body = low if level == "low" else items[0].reason[0].lower() + items[0].reason[1:]
        headline = f"{lead}{_HEADLINES[level]}: {body}"
    else:
        headline = lead + (low[0].upper() + low[1:] if level == "low" else items[0].reason)
    steps: list[str] = []
    for f in items:
        if f.next_step and f.next_step not in steps:
            steps.append(f.next_step)
    reasons = tuple(f.reason for f in items)
    return Decision(level=level, headline=headline, reasons=reasons, next_steps=tuple(steps), kind=kind,
                    rules=tuple(rules))  # fmt: skip


def _pct(x: float) -> str:
    return f"{100 * x:.1f} %"


def times_chance(tpr: float, fpr: float) -> str:
    """The magnitude of a TPR at FPR ``fpr`` in words: "11 times chance", "about chance", "below chance"."""
    if fpr <= 0 or tpr != tpr:  # NaN
        return "not measured"
    ratio = tpr / fpr
    if ratio < 0.67:
        return "below chance"
    if ratio < 1.5:
        return "about chance"
    return f"{ratio:.0f} times chance" if ratio >= 9.5 else f"{ratio:.1f} times chance"


def tpr_rule(fpr: float = 0.01, *, auc: bool = True) -> str:
    """The shared rule of :func:`attack_finding` in words, for a target FPR ``fpr``."""
    return (f"TPR at {_pct(fpr)} FPR: high when the lower end of the strongest attack's 95 % interval is above "
            f"{HIGH_FACTOR:g} × the FPR ({_pct(HIGH_FACTOR * fpr)}), elevated above {ELEVATED_FACTOR:g} × "
            f"({_pct(ELEVATED_FACTOR * fpr)})" + (f" or when an attack's AUC is above {ELEVATED_AUC:g}" if auc else "")
            + f"; inconclusive when there are too few non-members to measure the FPR (fewer than 10 / FPR = "
            f"{round(10 / fpr):,}); low otherwise.")  # fmt: skip


def _needs(point: Any) -> str:
    return f"{round(10 / float(point.target_fpr)):,}"


def attack_finding(
    label: str,
    point: Any,
    *,
    auc: float | None = None,
    step: str = "",
    members: str = "members",
    fallback: Sequence[Any] = (),
) -> Finding:
    """The shared rule for one attack's TPR at a low FPR (``point``: a ``common.roc.TprAtFpr``).

    High when the lower end of its 95 % interval exceeds 3 x the FPR, elevated when it exceeds
    2 x the FPR or the AUC exceeds 0.6 (the margins allow for the threshold being read off
    the same non-members whose FPR it sets), low otherwise (the sentence says so when the
    interval sits above chance but within that margin). When the sample is too small to measure
    the FPR at all: the same rule at the lowest measurable FPR of ``fallback`` (other points of
    the same attack) when it finds signal there, else ``inconclusive``, with what to add.
    """
    fpr = float(point.target_fpr)

    def said(p: Any) -> str:
        f = float(p.target_fpr)
        return (f"{label} flags {_pct(p.tpr)} of the {members} (95 % interval {_pct(p.ci_low)} to {_pct(p.ci_high)}; "
                f"{times_chance(p.tpr, f)}) while wrongly flagging {_pct(p.achieved_fpr)} of the non-members, where "
                f"chance would flag {_pct(f)}")  # fmt: skip

    def by_margin(p: Any) -> Finding | None:
        f = float(p.target_fpr)
        if p.ci_low > HIGH_FACTOR * f:
            return Finding("high", f"An attacker tells {members} from non-members: {said(p)}.", step)
        if p.ci_low > ELEVATED_FACTOR * f:
            return Finding("elevated", f"Some membership signal: {said(p)}.", step)
        return None

    if not point.supported:
        for other in sorted((p for p in fallback if p.supported), key=lambda p: float(p.target_fpr)):
            found = by_margin(other)
            if found is not None:
                return Finding(found.level, f"{found.reason} (measured at {_pct(float(other.target_fpr))} FPR: "
                               f"{point.n_neg:,} non-members cannot measure {_pct(fpr)})", step)  # fmt: skip
        if auc is not None and auc > ELEVATED_AUC:
            return Finding("elevated", f"Some membership signal: {label} reaches AUC {auc:.3f} (above {ELEVATED_AUC:g}; "
                           f"chance is 0.5), although {point.n_neg:,} non-members cannot measure a TPR at {_pct(fpr)} "
                           "FPR.", step or f"Audit with at least {_needs(point)} non-members to measure the TPR at "
                           f"{_pct(fpr)} FPR.")  # fmt: skip
        return Finding("inconclusive", f"With {point.n_neg:,} non-members an FPR of {_pct(fpr)} cannot be measured (it "
                       f"needs at least {_needs(point)}): the sample is too small to conclude either way.",
                       f"Audit with at least {_needs(point)} non-members (a larger holdout or population table); this "
                       f"audit had {point.n_neg:,}.")  # fmt: skip
    found = by_margin(point)
    if found is not None:
        return found
    if auc is not None and auc > ELEVATED_AUC:
        return Finding("elevated", f"Some membership signal: {label} reaches AUC {auc:.3f} (above {ELEVATED_AUC:g}; "
                       "chance is 0.5).", step)  # fmt: skip
    if point.ci_low > fpr:
        return Finding("low", f"No attack tells {members} from non-members beyond the decision's margin: {said(point)}; "
                       f"the interval sits above chance but not above {ELEVATED_FACTOR:g} × the FPR "
                       f"({_pct(ELEVATED_FACTOR * fpr)}), the margin for a threshold read off the same non-members it "
                       "is measured on.")  # fmt: skip
    return Finding("low", f"No attack tells {members} from non-members beyond chance: {said(point)}.")
