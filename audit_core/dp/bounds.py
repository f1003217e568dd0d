"""The audited epsilon of one run: Steinke's bound and the f-DP bound on the same guesses, and the one reported.

Both bounds read the same scores, the same pre-set grid of r and the same Bonferroni
correction (:mod:`audit_core.dp.onerun`, :mod:`audit_core.dp.fdp`); both are valid 95 % lower
bounds, but taking the larger of the two after seeing them would not be. The rule is fixed
before any score is seen (docs/methods.md §9, "which bound is reported"):

- the claim names its mechanism (DP-SGD with its noise multiplier, sampling rate and steps:
  always when trained here, and for an uploaded model whose claim states them): the **f-DP
  bound against that mechanism's curve** is reported; Steinke's is shown beside it;
- a bare (epsilon, delta) claim: **Steinke's bound** is reported (the f-DP bound against the
  (epsilon, delta) curve is shown beside it: it gives 0.99-1.02x Steinke's, no gain).

:func:`audit_bounds` computes both and their ceilings; :class:`AuditedBounds` answers with
the reported bound's numbers (``epsilon``, ``r``, ``correct``...) and writes them all to JSON.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from audit_core.dp.choices import REPORTING_RULE
from audit_core.dp.fdp import FdpBound, fdp_audit, fdp_ceiling
from audit_core.dp.onerun import CONFIDENCE, OneRunBound, ceiling, one_run_audit
from audit_core.dp.tradeoff import Family, epsilon_delta_family

__all__ = ["RULE", "AuditedBounds", "audit_bounds"]

RULE = "pre-registered: " + REPORTING_RULE


@dataclass(frozen=True)
class AuditedBounds:
    """Both one-run bounds of one model's canaries, their ceilings, and which one is reported (``primary``)."""

    steinke: OneRunBound
    fdp: FdpBound
    steinke_ceiling: float
    fdp_ceiling: float
    primary: str
    """``"fdp"`` or ``"steinke"`` (the module docstring's rule)."""

    @property
    def method(self) -> str:
        """The reported bound's method, for sentences."""
        return "f-DP (Mahloujifar et al.)" if self.primary == "fdp" else "Steinke et al."

    @property
    def epsilon(self) -> float:
        return self.fdp.epsilon if self.primary == "fdp" else self.steinke.epsilon

    @property
    def ceiling(self) -> float:
        return self.fdp_ceiling if self.primary == "fdp" else self.steinke_ceiling

    @property
    def r(self) -> int:
        return self.fdp.r if self.primary == "fdp" else self.steinke.r

    @property
    def correct(self) -> int:
        return self.fdp.correct if self.primary == "fdp" else self.steinke.correct

    @property
    def m(self) -> int:
        return self.steinke.m

    @property
    def delta(self) -> float:
        return self.steinke.delta

    @property
    def confidence(self) -> float:
        return self.steinke.confidence

    @property
    def grid(self) -> tuple[tuple[int, int, float, float], ...]:
        """Every r: (r, correct, Steinke's epsilon, the f-DP epsilon)."""
        return tuple((r, v, e, f[2]) for (r, v, e), f in zip(self.steinke.grid, self.fdp.grid, strict=True))

    def to_json(self) -> dict[str, Any]:
        """The ``epsilon_lower_bound`` block: the reported bound's keys as before, plus ``steinke``, ``fdp``, ``reported``."""
        s = self.steinke
        return {
            "epsilon": self.epsilon, "confidence": self.confidence, "r": self.r, "correct": self.correct, "m": self.m,
            "delta": self.delta, "level_per_r": (1 - s.confidence) / len(s.grid),
            "guesses": [{"r": r, "correct": v, "epsilon": f if self.primary == "fdp" else e, "epsilon_steinke": e,
                         "epsilon_fdp": None if np.isnan(f) else f} for r, v, e, f in self.grid],
            "steinke": {"epsilon": s.epsilon, "r": s.r, "correct": s.correct, "ceiling": self.steinke_ceiling},
            "fdp": {**{k: v for k, v in self.fdp.to_json().items() if k not in {"confidence", "m", "delta", "guesses"}},
                    "ceiling": self.fdp_ceiling},
            "reported": {"method": self.primary, "epsilon": self.epsilon, "ceiling": self.ceiling, "rule": RULE},
        }  # fmt: skip


def audit_bounds(scores: np.ndarray, included: np.ndarray, *, delta: float, mechanism: Family | None = None,
                 confidence: float = CONFIDENCE, seed: int = 0) -> AuditedBounds:  # fmt: skip
    """Steinke's and the f-DP bound of one model's canary scores (higher = more likely included).

    ``mechanism``: the claimed mechanism's family of curves (:func:`audit_core.dp.tradeoff.dp_sgd_family`),
    or None for a bare (epsilon, delta) claim (the f-DP bound is then against the (epsilon, delta) curve).
    """
    family = mechanism or epsilon_delta_family(delta)
    m = len(scores)
    return AuditedBounds(
        steinke=one_run_audit(scores, included, delta=delta, confidence=confidence, seed=seed),
        fdp=fdp_audit(scores, included, family, confidence=confidence, seed=seed),
        steinke_ceiling=ceiling(m, delta, confidence=confidence),
        fdp_ceiling=fdp_ceiling(m, family, confidence=confidence),
        primary="fdp" if mechanism is not None else "steinke",
    )
