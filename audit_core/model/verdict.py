"""Verdict, release decision, limits and report of the model audit (:mod:`audit_core.model.audit`)."""

from __future__ import annotations

from collections.abc import Sequence

from audit_core.common.decision import Decision, Finding, decide
from audit_core.common.privacy_bound import ASSUMPTION
from audit_core.common.report import InputSummary, Report
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

__all__ = ["FPR", "LIMITS", "build_report", "decision", "verdict"]

_HIGH_FACTOR = 3.0
"""``high`` when the best attack's TPR at 1 % FPR has its lower bound above this many times the FPR."""
_ELEVATED_FACTOR = 2.0
_ELEVATED_AUC = 0.6
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
        f"(95 % interval {_pct(t.ci_low)} to {_pct(t.ci_high)})"
        + ("" if t.supported else f"; {audit.n_non_members:,} non-members are too few to measure a 1 % FPR precisely")
        + ".",
        best.epsilon.sentence(),
    ]
    if any(a in audit.attacks for a in (*REFERENCE_ATTACKS, "supervised")) and "family" in audit.reference:
        parts.append(family_sentence(audit))
    parts.append(audit.fidelity.sentence())
    return " ".join(parts)


def decision(audit: ModelAudit) -> Decision:
    """The release decision: from the best attack's TPR at 1 % FPR (its lower bound) and AUC."""
    best = audit.best()
    t = best.tpr_at_fpr["0.01"]
    findings = []
    said = (f"the '{best.name}' attack flags {_pct(t.tpr)} of the training records at 1 % FPR (at least "
            f"{_pct(t.ci_low)} with 95 % confidence; AUC {best.auc:.3f})")  # fmt: skip
    fix = ("Retrain with regularisation or early stopping (a smaller gap between train and test accuracy), or with "
           "differential privacy, then audit again; look at the most exposed records first.")  # fmt: skip
    if t.ci_low > _HIGH_FACTOR * FPR:
        findings.append(Finding("high", f"The model reveals who was in its training data: {said}.", fix))
    elif t.ci_low > _ELEVATED_FACTOR * FPR or best.auc > _ELEVATED_AUC:
        findings.append(Finding("elevated", f"The model leaks some membership: {said}.", fix))
    else:
        findings.append(Finding("low", f"No attack tells members from non-members clearly: {said}."))
    if not audit.fidelity.ok and any(a in audit.attacks for a in REFERENCE_ATTACKS):
        step = ("No family tried behaves like the model (--reference-family auto): give a larger population table, or a "
                "model file that carries its hyper-parameters (skops)." if audit.reference.get("family_choice") else
                "Pick the reference family closest to the model (--reference-family, or auto) or give a larger "
                "population table.")  # fmt: skip
        findings.append(Finding("low", audit.fidelity.sentence(), step))
    if not t.supported:
        findings.append(Finding("low", f"{audit.n_non_members:,} non-members are too few to measure a 1 % FPR "
                                "precisely (it needs 1,000).", "Give a larger population table."))  # fmt: skip
    return decide(findings, low="no attack separates the training records from the population", subject="Model")


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
    tables.append(("Most exposed members (with their values)", audit.exposed))
    return Report(
        inputs=list(inputs),
        settings=audit.settings,
        metrics={k: v for k, v in audit.to_json().items() if k not in ("audit", "settings")},
        figures=[("Log-ROC of every attack", log_roc(audit))],
        tables=tables,
        verdict=verdict(audit),
        limits=LIMITS + [f"Note: {w}" for w in audit.warnings],
        seed=audit.seed,
    )
