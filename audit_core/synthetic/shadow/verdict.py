"""The shadow attack's release decision, verdict and report (docs/methods.md §1.12, §7)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from audit_core.common.decision import Decision, Finding, decide
from audit_core.common.report import InputSummary, Report
from audit_core.common.roc import INTERVAL_LIMIT
from audit_core.synthetic.shadow.figures import isolation_figure, shadow_roc_figure, target_table
from audit_core.synthetic.shadow.result import SHADOW_ALPHA, SHADOW_STRONG, ShadowAttack

__all__ = ["RULES", "build_report", "decision", "findings", "verdict"]

_NEXT_STEP = (
    "Regenerate with stronger privacy settings (differential privacy, fewer epochs, coarser bins) or remove or coarsen "
    "the exposed records' unusual values, then run the shadow attack again; the target table names who is exposed."
)


def _who(attack: ShadowAttack) -> str:
    return f"the {attack.n_targets} records named" if attack.named else f"the {attack.n_targets} most unusual training records"


def _listing(attack: ShadowAttack, idx: np.ndarray, most: int = 5) -> str:
    shown = [f"row {int(attack.target_rows[t])} (AUC {attack.scores.auc[t]:.2f})" for t in idx[:most]]
    more = f" and {idx.size - most} more" if idx.size > most else ""
    return ", ".join(shown) + more


def findings(attack: ShadowAttack, *, label: str = "") -> list[Finding]:
    """The attack's finding: how many targets are told apart (family-wise, Holm), on which evidence."""
    name = label or attack.generator
    adjusted = attack.adjusted_p
    told = np.flatnonzero(adjusted <= SHADOW_ALPHA)
    told = told[np.lexsort((-attack.scores.auc[told], adjusted[told]))]
    floor = 2.0 ** -(attack.n_shadows // 2) * attack.n_targets
    if told.size:
        strong = bool((adjusted[told] <= SHADOW_STRONG).any())
        on_release = int((attack.scores.release_p[told] <= 0.1).sum())
        release = (f"; on the release itself {on_release} of them score above 90 % of the shadow outputs made without "
                   "them" if on_release else "")  # fmt: skip
        return [Finding("high" if strong else "elevated",
                        f"{told.size} of {_who(attack)} can be told apart: an attacker who re-runs {name} on data like "
                        f"yours ({attack.n_shadows} shadow models) tells whether {_listing(attack, told)} were in the "
                        f"training data (Holm-adjusted permutation p <= {SHADOW_ALPHA:g} over the {attack.n_targets} "
                        f"targets){release}.", _NEXT_STEP)]  # fmt: skip
    if floor > SHADOW_ALPHA:
        return [Finding("inconclusive", f"With {attack.n_shadows} shadow models the test cannot tell anyone apart at "
                        f"{SHADOW_ALPHA:g} over {attack.n_targets} targets (its smallest p-value is 1 in "
                        f"{2 ** (attack.n_shadows // 2):,}): the attack was too small to conclude.",
                        "Run the shadow attack with more shadow models (--shadow-models).")]  # fmt: skip
    best = int(np.argmin(adjusted))
    return [Finding("low", f"None of {_who(attack)} can be told apart by an attacker who re-runs {name} "
                    f"({attack.n_shadows} shadow models; highest AUC {attack.scores.auc.max():.2f}, smallest Holm-adjusted "
                    f"p {adjusted[best]:.2g}).")]  # fmt: skip


RULES: tuple[str, ...] = (
    f"A target is told apart when its exact permutation p-value, Holm-adjusted over the targets, is at most "
    f"{SHADOW_ALPHA:g}: elevated; high when it is at most {SHADOW_STRONG:g}.",
    "Inconclusive when the shadow models are too few for any p-value to reach that level over this many targets.",
)
"""The cut-offs behind the shadow attack's decision."""


def decision(attack: ShadowAttack, *, label: str = "") -> Decision:
    """The release decision: high when a target is told apart at 1 % (family-wise), elevated at 5 %, inconclusive
    when too few shadow models could never reach 5 %, low otherwise (``label``: the generator's name in words)."""
    low = (f"no target is told apart by re-running the generator ({attack.n_shadows} shadow models); passing this "
           "attack does not prove anonymity.")  # fmt: skip
    return decide(findings(attack, label=label), low=low, rules=RULES, subject=f"Shadow attack on {label}" if label else "")


def verdict(attack: ShadowAttack) -> str:
    """The decision's headline and its reading, in words."""
    d = decision(attack)
    told = attack.told_apart
    parts = [d.headline.rstrip(".") + "."]
    if told.any() and (~told).any():
        parts.append(f"Mean AUC {attack.scores.auc[told].mean():.2f} over the told-apart targets against "
                     f"{attack.scores.auc[~told].mean():.2f} over the others.")  # fmt: skip
    return " ".join(parts)


_LIMITS = [
    "The shadow-generator attack assumes the attacker knows the generator and its settings and holds population data "
    "like the training data (the shadow sets are drawn from it); a weaker attacker does worse, a stronger one (more "
    "shadow models, better features) may do better.",
    "Each target's AUC rests on K shadow outputs (K / 2 with it, K / 2 without); its p-value is an exact permutation "
    "test of the whole cross-fitted procedure, Holm-adjusted over the targets, so 'told apart' is wrong for any "
    f"target with probability at most {SHADOW_ALPHA:g} altogether.",
    "A TPR at 1 % or 10 % FPR per target needs 1,000 or 100 outputs without the target to be measured; with fewer it "
    "is marked ⚠ and its interval is wide.",
    INTERVAL_LIMIT,
    "The pooled ROC mixes targets whose scores are not independent (they share the shadow outputs); it shows the "
    "attack's overall shape, the per-target tests carry the decision.",
]


def build_report(attack: ShadowAttack, *, inputs: Sequence[InputSummary] = ()) -> Report:
    """The shadow attack's report: decision, per-target table, log-ROC and AUC by isolation."""
    timing = attack.to_json()["timing"]
    settings = {
        **attack.settings, "generator": attack.generator,
        "generator settings": ", ".join(f"{k}={v}" for k, v in attack.params.items()) or "none",
        "rows per shadow training set": attack.shadow_rows, "rows per synthetic output": attack.synthetic_rows,
        "release": "fitted here on the training table" if attack.release_fitted else "the given synthetic table",
        "seconds per shadow fit": round(timing["seconds_per_fit"], 2), "attack seconds": round(timing["seconds"], 1),
    }  # fmt: skip
    return Report(
        title="Shadow-generator attack",
        question="If an attacker re-runs the generator on data like yours, can it tell whether the most unusual "
        "people were in the training data? (docs/methods.md §1.12)",
        inputs=list(inputs),
        settings=settings,
        metrics=attack.to_json(),
        figures=[
            ("Log-log ROC over the shadow outputs", shadow_roc_figure(attack)),
            ("AUC by isolation", isolation_figure(attack)),
        ],
        tables=[("Targets, most exposed first", target_table(attack))],
        verdict=verdict(attack),
        limits=[*_LIMITS, *attack.warnings],
        seed=int(attack.settings.get("seed", 0)),
    )
