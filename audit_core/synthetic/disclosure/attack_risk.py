"""One disclosure attack's outcome: its success counts on targets, control and baseline, and the risk (:class:`AttackRisk`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from audit_core.synthetic.disclosure.intervals import risk_interval, wilson_interval

__all__ = ["AttackRisk"]


@dataclass(frozen=True)
class AttackRisk:
    """One attack's outcome: success counts on targets, control and baseline, and the risk.

    Attributes
    ----------
    attack : str
        "singling_out", "singling_out_univariate", "linkability" or "inference".
    column : str or None
        The secret column (inference only).
    n_attacks, n_success : int
        Attacks on the training records and how many succeeded.
    n_control, control_success : int
        The same on the control (holdout) records.
    n_baseline, baseline_success : int
        The random-guess attacker's attacks on the training records and successes.
    risk, ci_low, ci_high : float
        ``(rate_train - rate_control) / (1 - rate_control)`` and its 95 % MOVER-R interval
        (for singling out widened to the permutation reference, :mod:`audit_core.synthetic.disclosure.singling_out`).
    note : str
        Why the attack is weak or could not be measured, if so.
    ci_method : str
        How the interval was computed.
    """

    attack: str
    column: str | None
    n_attacks: int
    n_success: int
    n_control: int
    control_success: int
    n_baseline: int
    baseline_success: int
    risk: float
    ci_low: float
    ci_high: float
    note: str = ""
    ci_method: str = "MOVER-R (Wilson)"

    @classmethod
    def from_counts(
        cls,
        attack: str,
        *,
        n_attacks: int,
        n_success: int,
        n_control: int,
        control_success: int,
        n_baseline: int,
        baseline_success: int,
        column: str | None = None,
        note: str = "",
    ) -> AttackRisk:
        """Compute the risk and its interval from the success counts."""
        if n_attacks == 0 or n_control == 0:
            return cls(attack, column, n_attacks, n_success, n_control, control_success, n_baseline,
                       baseline_success, 0.0, -1.0, 1.0, note or "no attack could be made")  # fmt: skip
        risk, lo, hi = risk_interval(n_success, n_attacks, control_success, n_control)
        return cls(attack, column, int(n_attacks), int(n_success), int(n_control), int(control_success),
                   int(n_baseline), int(baseline_success), float(risk), float(lo), float(hi), note)  # fmt: skip

    @property
    def attack_rate(self) -> float:
        """Share of the attacks on training records that succeeded."""
        return self.n_success / self.n_attacks if self.n_attacks else 0.0

    @property
    def control_rate(self) -> float:
        """Share of the attacks on control records that succeeded."""
        return self.control_success / self.n_control if self.n_control else 0.0

    @property
    def baseline_rate(self) -> float:
        """Share of the random guesses that succeeded."""
        return self.baseline_success / self.n_baseline if self.n_baseline else 0.0

    def rate_ci(self, which: str) -> tuple[float, float]:
        """95 % Wilson interval of ``"attack"``, ``"control"`` or ``"baseline"`` rate."""
        k, n = {
            "attack": (self.n_success, self.n_attacks),
            "control": (self.control_success, self.n_control),
            "baseline": (self.baseline_success, self.n_baseline),
        }[which]
        if n == 0:
            return 0.0, 1.0
        lo, hi = wilson_interval(k, n)
        return float(lo), float(hi)

    @property
    def beats_baseline(self) -> bool:
        """Whether the attack succeeded on the targets more often than random guessing (Wilson intervals apart)."""
        return self.n_attacks > 0 and self.rate_ci("attack")[0] > self.rate_ci("baseline")[1]

    @property
    def significant(self) -> bool:
        """Whether the risk's interval excludes 0."""
        return self.ci_low > 0

    @property
    def status(self) -> str:
        """``"not measurable"`` (no better than random guessing), ``"disclosed"`` (the risk's interval excludes 0)
        or ``"no evidence"``."""
        if not self.beats_baseline:
            return "not measurable"
        return "disclosed" if self.significant else "no evidence"

    @property
    def reading(self) -> str:
        """One line for the checklist."""
        if self.note:
            return self.note[0].upper() + self.note[1:] + "."
        pct = f"{100 * self.attack_rate:.1f} % of attacks on training records vs {100 * self.control_rate:.1f} % on the control"
        if not self.beats_baseline:
            return f"No better than random guessing ({pct}); proves nothing either way."
        if self.significant:
            return f"Succeeds more often on training records ({pct}): the table discloses them."
        if self.risk < 0:
            return (f"Worse on the training records than on the control ({pct}; a negative risk): no evidence of risk, "
                    "and not extra protection either.")  # fmt: skip
        return f"No more success on training records than on strangers ({pct})."

    def to_json(self) -> dict[str, Any]:
        """``{risk, ci_low, ci_high, attack_rate, baseline_rate, control_rate, n_attacks, ...}``."""
        a_lo, a_hi = self.rate_ci("attack")
        c_lo, c_hi = self.rate_ci("control")
        b_lo, b_hi = self.rate_ci("baseline")
        out = {
            "risk": self.risk,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "attack_rate": self.attack_rate,
            "baseline_rate": self.baseline_rate,
            "control_rate": self.control_rate,
            "n_attacks": self.n_attacks,
            "n_control": self.n_control,
            "n_baseline": self.n_baseline,
            "n_success": self.n_success,
            "control_success": self.control_success,
            "baseline_success": self.baseline_success,
            "attack_rate_ci": [a_lo, a_hi],
            "control_rate_ci": [c_lo, c_hi],
            "baseline_rate_ci": [b_lo, b_hi],
            "beats_baseline": self.beats_baseline,
            "reading": self.reading,
            "ci_method": self.ci_method,
        }
        if self.column is not None:
            out["column"] = self.column
        return out
