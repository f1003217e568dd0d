"""Verdict, limits and report for the fabricated-members section (docs/methods.md §3)."""

from __future__ import annotations

from audit_core.common.decision import Decision, Finding, attack_finding, decide
from audit_core.common.report import InputSummary, Report
from audit_core.common.roc import INTERVAL_LIMIT
from audit_core.fabrication.attacks import ATTACK_LABELS, eps255
from audit_core.fabrication.figures import (
    adaptive_figure,
    adaptive_table,
    attacks_figure,
    budgets_table,
    gallery_figure,
    grad_norm_histogram,
    lambda_figure,
    lambda_table,
    regime_figure,
    regime_sentence,
    regime_table,
    roc_figure,
    score_histogram,
    tpr_table,
)
from audit_core.fabrication.result import FabricationResult

__all__ = ["RULES", "build_report", "decision", "verdict"]


def verdict(result: FabricationResult) -> str:
    """Plain-language summary of the headline run."""
    m = result.mia("loss")
    ar = result.ar_mia(lam=result.lam)
    lines = [
        f"Fabrication ({ATTACK_LABELS.get(result.attack, result.attack)}, epsilon {eps255(result.epsilon)}, "
        f"T = {result.steps}) moved the LOSS attack's AUC from {m.auc_clean:.3f} (members vs clean non-members) "
        f"to {m.auc_fabricated:.3f} (vs fabricated; error area {m.error_area:.3f}).",
        f"MFD tells fabricated from real members with AUC {result.mfd_auc:.3f}; AR-MIA at lambda = {result.lam:g} "
        f"scores AUC {ar.auc_fabricated:.3f} under attack and {ar.auc_clean:.3f} on clean data.",
        regime_sentence(result),
    ]
    ok = [p for p in result.regime if p.mfd_auc >= 0.9]
    if result.regime:
        lines.append(
            f"MFD reaches AUC 0.9 from epsilon {eps255(ok[0].epsilon)} on in this setup." if ok
            else "MFD stays below AUC 0.9 over the whole epsilon grid in this setup."
        )
    return " ".join(lines)


def _headline_metrics(result: FabricationResult) -> dict:
    """The JSON summary without its long lists (those are tables in the report)."""
    j = result.to_json()
    for key in ("regime", "budgets", "adaptive"):
        j.pop(key, None)
    j["ar_mia"] = {k: v for k, v in j["ar_mia"].items() if k != "by_lambda"}
    for part in ("mia", "ar_mia"):  # per-MIA intervals are the "TPR at low FPR" table
        j[part]["by_attack"] = {m: {k: v for k, v in d.items() if not k.startswith("tpr_at_fpr")}
                                for m, d in j[part]["by_attack"].items()}
    return j


def build_report(
    result: FabricationResult, *, inputs: list[InputSummary] | None = None, lam: float | None = None
) -> Report:
    """The section's report, used by the page and by ``python -m audit_core fabrication --html``.

    ``lam`` re-scores AR-MIA at another lambda (the page's slider) without re-attacking.
    """
    if lam is not None:
        result = result.at_lambda(lam)
    figures = [
        ("Originals, fabricated images and their difference", gallery_figure(result)),
        ("MIA scores", score_histogram(result)),
        ("Gradient norms", grad_norm_histogram(result)),
        ("Vanilla MIA vs AR-MIA", roc_figure(result, lam=result.lam)),
        ("AR-MIA vs lambda", lambda_figure(result, lam=result.lam)),
        ("Regime map", regime_figure(result)),
    ]
    if result.budgets:
        figures.append(("Attacks and step budgets", attacks_figure(result)))
    if result.adaptive:
        figures.append(("Adaptive attacker", adaptive_figure(result)))
    limits = [
        "The regime matters: the gradient-norm collapse appears only where fabricated confidence passes the members'; "
        "see the regime map before trusting MFD or AR-MIA at another epsilon.",
        f"lambda is normalised by g_ref = {result.g_ref:.3g} ({result.g_ref_source}).",
        (f"Reference models for LiRA / RMIA have the audited model's architecture ({result.reference_architecture}) "
         "and are trained here like the bundled target, offline (OUT only: none saw a scored image)."
         if result.reference_architecture else
         "No reference models: LiRA and RMIA are not scored (the model is not of a built-in architecture, or the "
         "reference pool has fewer than 30 images)."),
        INTERVAL_LIMIT,
        "TPRs at FPRs below 10 / (number of negatives) are not supported by the data (flagged in the table).",
        "Attack comparison and adaptive attacker use a random subset of the non-members.",
    ]
    return Report(
        title="Fabricated members",
        question="Can non-members be dressed up as members, and does the audit notice?",
        inputs=inputs or [],
        settings={"dataset": result.dataset, "epsilon": result.epsilon, "epsilon_255": eps255(result.epsilon),
                  "steps": result.steps, "attack": result.attack, "lambda": result.lam},
        metrics=_headline_metrics(result),
        figures=figures,
        tables=[
            ("TPR at low FPR (95 % intervals)", tpr_table(result)),
            ("Regime map", regime_table(result)),
            ("AR-MIA by lambda", lambda_table(result)),
            ("Attacks and step budgets", budgets_table(result)),
            ("Adaptive attacker", adaptive_table(result)),
        ],
        verdict=verdict(result),
        limits=limits,
        seed=result.seed,
    )


RULES: tuple[str, ...] = (
    "Can be forged, and goes unnoticed (high): fabricated non-members lower the LOSS MIA's AUC against them by at least "
    "0.05 below its clean AUC (members vs real non-members), and the detector (MFD) catches them with an AUC below 0.9.",
    "Can be forged, but is detected (elevated): the same drop in AUC, with MFD at AUC 0.9 or more.",
    "Cannot be forged here (low): the AUC drops by less than 0.05 at this epsilon and number of steps.",
    "Whether the MIA exposes real members (its TPR at 1 % FPR) is reported beside, as context: it is the 'Audit my "
    "model' page's question, not this one's.",
)
"""The cut-offs behind the fabrication decision (shown under "Why" and in the report)."""


def decision(result: FabricationResult) -> Decision:
    """Can membership evidence from this MIA be forged, and is the forgery detected?

    - high: fabricated non-members pass the LOSS MIA as members (its AUC against them falls at
      least 0.05 below the clean AUC) and MFD does not catch them (AUC below 0.9);
    - elevated: they pass the MIA but MFD catches them;
    - low otherwise (forging failed at this epsilon).

    The MIA's exposure of real members (the shared rule on its TPR at 1 % FPR) is a reason
    beside it, never the level: it answers another question (the model audit's).
    """
    m = result.mia("loss")
    forged = m.auc_fabricated <= m.auc_clean - 0.05
    findings = []
    attack = f"{ATTACK_LABELS.get(result.attack, result.attack)} at epsilon {eps255(result.epsilon)}"
    if forged and result.mfd_auc < 0.9:
        findings.append(Finding("high", f"Membership evidence can be forged and goes unnoticed: {attack} makes non-members "
                                f"look like members (LOSS MIA AUC {m.auc_clean:.3f} -> {m.auc_fabricated:.3f}) and the "
                                f"detector (MFD) catches them only with AUC {result.mfd_auc:.3f}.",
                                "Do not accept a membership claim from this MIA as evidence; use the robust MIA "
                                "(AR-MIA) and check claimed members for gradient-norm collapse (MFD)."))  # fmt: skip
    elif forged:
        findings.append(Finding("elevated", f"Membership evidence can be forged, but is detected: {attack} makes "
                                f"non-members look like members (LOSS MIA AUC {m.auc_clean:.3f} -> {m.auc_fabricated:.3f}); "
                                f"MFD catches them with AUC {result.mfd_auc:.3f}.",
                                "Screen every claimed member with MFD before accepting a membership claim."))  # fmt: skip
    point = m.clean.tpr_at_fpr.get("0.01")
    if point is not None:
        exposure = attack_finding("the LOSS MIA (members vs clean non-members)", point, auc=m.auc_clean,
                                  fallback=[p for k, p in m.clean.tpr_at_fpr.items() if k != "0.01"])  # fmt: skip
        findings.append(Finding("low", f"Beside the question (real members, not forged ones; level {exposure.level}): "
                                f"{exposure.reason}"))  # fmt: skip
    return decide(findings, low=f"forging failed: {attack} moves the LOSS MIA's AUC only from {m.auc_clean:.3f} to "
                  f"{m.auc_fabricated:.3f} (less than 0.05).", kind="fabrication", rules=RULES)  # fmt: skip
