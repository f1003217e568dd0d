"""Verdict, release decision, limits and report of the model audit (:mod:`audit_core.model.audit`)."""

from __future__ import annotations

from collections.abc import Sequence

from audit_core.common.decision import Decision, Finding, attack_finding, decide, times_chance, tpr_rule
from audit_core.common.privacy_bound import ASSUMPTION, epsilon_scale
from audit_core.common.report import InputSummary, RecordTable, Report
from audit_core.model.attacks import REFERENCE_ATTACKS
from audit_core.model.audit import ModelAudit
from audit_core.model.figures import (
    epsilon_table,
    family_sentence,
    family_table,
    fidelity_table,
    log_roc,
    rmia_table,
    tpr_table,
)

__all__ = ["FPR", "LIMITS", "RULES", "build_report", "decision", "verdict"]

FPR = 0.01


def _pct(x: float) -> str:
    return f"{100 * x:.1f} %"


def verdict(audit: ModelAudit) -> str:
    """Plain words: the strongest attack at 1 % FPR with its interval, the epsilon bound, the family and fidelity."""
    best = audit.best()
    t = best.tpr_at_fpr["0.01"]
    parts = [
        f"Against {audit.n_members:,} members and {audit.n_non_members:,} non-members, the strongest attack "
        f"('{best.name}', AUC {best.auc:.3f}) flags {_pct(t.tpr)} of the members at 1 % FPR "
        f"(95 % interval {_pct(t.ci_low)} to {_pct(t.ci_high)}; {times_chance(t.tpr, FPR)})"
        + ("" if t.supported else f"; {audit.n_non_members:,} non-members are too few to measure a 1 % FPR precisely")
        + ".",
        best.epsilon.sentence(),
        f"For scale: epsilon >= {best.epsilon.epsilon:.2f} is {epsilon_scale(best.epsilon.epsilon)}.",
    ]
    if any(a in audit.attacks for a in (*REFERENCE_ATTACKS, "supervised")) and "family" in audit.reference:
        parts.append(family_sentence(audit))
    parts.append(audit.fidelity.sentence())
    return " ".join(parts)


RULES: tuple[str, ...] = (
    tpr_rule(FPR),
    "Epsilon lower bound: elevated when an attack demonstrates a privacy loss (its 95 % lower bound is above 0; "
    "measurable even where a 1 % FPR is not).",
)
"""The cut-offs behind the model audit's decision (shown under "Why" and in the report)."""


def decision(audit: ModelAudit) -> Decision:
    """The release decision: the best attack's TPR at 1 % FPR by the shared rule (common.decision), and the epsilon
    lower bound (a demonstrated privacy loss is at least elevated, measurable where the 1 % FPR is not)."""
    best = audit.best()
    t = best.tpr_at_fpr["0.01"]
    fix = ("Retrain with regularisation or early stopping (a smaller gap between train and test accuracy), or with "
           "differential privacy, then audit again; look at the most exposed records first.")  # fmt: skip
    findings = [attack_finding(f"the '{best.name}' attack", t, auc=best.auc, step=fix, members="training records",
                               fallback=[p for k, p in best.tpr_at_fpr.items() if k != "0.01"])]  # fmt: skip
    strongest = max(audit.attacks.values(), key=lambda a: a.epsilon.epsilon)
    e = strongest.epsilon
    if e.epsilon > 0:
        findings.append(Finding("elevated", f"The model demonstrably leaks membership: the '{strongest.name}' attack "
                                f"proves epsilon >= {e.epsilon:.2f} with {100 * e.confidence:g} % confidence, "
                                f"{epsilon_scale(e.epsilon)} (the most these records could show is {e.ceiling:.2f}).",
                                fix))  # fmt: skip
    if not audit.fidelity.ok and any(a in audit.attacks for a in REFERENCE_ATTACKS):
        step = ("No family tried behaves like the model (--reference-family auto): give a larger population table, or a "
                "model file that carries its hyper-parameters (skops)." if audit.reference.get("family_choice") else
                "Pick the reference family closest to the model (--reference-family, or auto) or give a larger "
                "population table.")  # fmt: skip
        findings.append(Finding("low", audit.fidelity.sentence(), step))
    return decide(findings, low="no attack separates the training records from the population", subject="Model",
                  rules=RULES)  # fmt: skip


LIMITS = [
    ASSUMPTION,
    "Members are the records of the training table as given; if the model was trained on more or fewer records, the "
    "numbers describe the table given, not the model's real training set.",
    "The reference models are trained here on half of the population (the other half are the non-members): RMIA and "
    "LiRA are as strong as the reference models are close to the target, which the fidelity check measures.",
    "RMIA is the offline variant (a = 0.3, gamma = 1); LiRA offline has a global variance. Both assume every "
    "candidate is out of every reference model, which holds when the members and the population share no record.",
    "LiRA online (when chosen) trains K more reference models, each on about half of the candidates (members and "
    "non-members alike) and pool records up to the target's training size, and fits each candidate's IN and OUT "
    "Gaussians on them (a global variance below 64 reference models unless per-sample is chosen); with few reference "
    "models each candidate is IN only a couple of them, so its Gaussians are rough.",
    "With --reference-family auto, every family is trained on the same reference pool and the one whose models behave "
    "most like the target on records no attack scores (accuracy gaps, loss distributions) is kept; the attacks never "
    "choose it, so the best attack's TPR is not the maximum over families. The others' results are shown beside it.",
    "The supervised attack (as ART's black-box attack) knows the membership of four fifths of the records; each record "
    "is scored by a classifier trained on the other folds, so no record scores itself. It measures an attacker with "
    "labelled examples, a stronger position than the reference-model attacks assume.",
    "A low result is no privacy guarantee: a stronger attack may find more. Only an analysis of the training "
    "procedure gives an upper bound.",
]


def build_report(audit: ModelAudit, *, inputs: Sequence[InputSummary] = ()) -> Report:
    """The model audit's report, for the page and ``python -m audit_core model --html``."""
    tables = [("Fidelity: target vs reference models", fidelity_table(audit)),
              ("Epsilon lower bound per attack", epsilon_table(audit)),
              ("TPR at each target FPR", tpr_table(audit))]  # fmt: skip
    families = family_table(audit)
    if not families.empty:
        tables.insert(1, ("Reference family chosen by fidelity (auto): every family tried", families))
    if audit.rmia_by_k:
        tables.append(("RMIA by number of reference models", rmia_table(audit)))
    exposed = RecordTable("Most exposed members", audit.exposed, keep=tuple(str(c) for c in audit.exposed.columns[:3]))
    return Report(
        inputs=list(inputs),
        settings=audit.settings,
        metrics={k: v for k, v in audit.to_json().items() if k not in ("audit", "settings")},
        figures=[("Log-ROC of every attack", log_roc(audit))],
        tables=tables,
        records=[exposed],
        verdict=verdict(audit),
        limits=LIMITS + [f"Note: {w}" for w in audit.warnings],
        seed=audit.seed,
    )
