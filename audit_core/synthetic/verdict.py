"""Verdicts, limits and reports of the synthetic-table audit (METHODS.md §1).

The membership verdict (risk level, headline, sentences) and report, the generator
comparison's verdict and report, and the release checklist of the disclosure attacks
(audit_core.synthetic.disclosure). Used by both the dashboard pages and the command line
(``python -m audit_core tabular --html``), so both say the same thing.

The checklist puts the four questions a regulator asks side by side, each in the same
form: a risk (excess success on the training records over the control), its 95 %
interval, the random-guess baseline and a one-line reading. Membership is written in
that form too: at the threshold where the strongest membership attack flags 1 % of the
non-members (the control), ``risk = (TPR - FPR) / (1 - FPR)``, interval from the TPR's
interval, baseline = the FPR (a coin that flags 1 % of everyone). The worst row (the
highest lower interval limit, weighed by its status) drives the verdict.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import pandas as pd

from audit_core.common.report import InputSummary, Report
from audit_core.common.roc import INTERVAL_LIMIT
from audit_core.synthetic.audit import ATTACK_LABELS, SyntheticAudit, exposed_records
from audit_core.synthetic.comparison import GeneratorComparison
from audit_core.synthetic.disclosure import DISCLOSURE_RECORD_COLUMNS, DisclosureAudit
from audit_core.synthetic.figures import (
    _label,
    _status,
    comparison_roc_figure,
    comparison_table,
    distance_figure,
    overlaps_table,
    p_member_figure,
    privacy_utility_figure,
    results_table,
    risk_figure,
    roc_figure,
)

__all__ = [
    "DISCLOSURE_LIMITS",
    "VERDICT_ATTACKS",
    "build_comparison_report",
    "build_report",
    "checklist_table",
    "checklist_verdict",
    "comparison_verdict",
    "risk_level",
    "strongest_attack",
    "verdict",
    "with_disclosure",
]


_LOW_FPR = "0.01"


def _pct(x: float) -> str:
    return f"{100 * x:.1f} %"


RISK_HEADLINES = {
    "high": "UNSAFE to release as it is.",
    "elevated": "Elevated risk: review before release.",
    "low": "No measurable membership risk at this sample size.",
}


#: Attacks whose TPR at 1 % FPR feeds the verdict (every scored attack the page shows).
VERDICT_ATTACKS = ("true_distribution", "realistic", "domias")


def _verdict_attacks(audit: SyntheticAudit) -> list[str]:
    return [k for k in VERDICT_ATTACKS if k in audit.attacks]


def strongest_attack(audit: SyntheticAudit) -> str:
    """The attack with the highest lower confidence bound of its TPR at 1 % FPR (ties: the higher TPR)."""
    return max(
        _verdict_attacks(audit),
        key=lambda k: (audit.attacks[k].tpr_at_fpr[_LOW_FPR].ci_low, audit.attacks[k].tpr_at_fpr[_LOW_FPR].tpr),
    )


def risk_level(audit: SyntheticAudit) -> str:
    """``"high"``, ``"elevated"`` or ``"low"``: the rule behind :func:`verdict`.

    High when the exact-copy test finds more training rows copied verbatim than
    chance explains (:class:`~audit_core.synthetic.audit.CopyTest`, one-sided Fisher
    exact test at 5 %), when the near-copy test finds more members than
    non-members within a small distance of a synthetic record
    (:class:`~audit_core.synthetic.audit.NearCopyTest`, at 1 %), or when the lower end of the 95 % interval of any
    attack's TPR at 1 % FPR exceeds three times the FPR; elevated when it
    exceeds twice the FPR or any attack's AUC exceeds 0.6. Every attack the
    page shows counts: the true-distribution, realistic and density-ratio
    scores, and the two Method 1 points, whose AUC as a one-point ROC is
    ``(1 + TPR - FPR) / 2``.
    """
    fpr = float(_LOW_FPR)
    low = audit.attacks[strongest_attack(audit)].tpr_at_fpr[_LOW_FPR]
    tests = (audit.copy_test, audit.near_copies)
    if any(t is not None and t.excess for t in tests) or low.ci_low > 3 * fpr:
        return "high"
    aucs = [audit.attacks[k].auc for k in _verdict_attacks(audit)]
    aucs += [(1 + t.metrics.tpr - t.metrics.fpr) / 2 for t in (audit.distance_threshold, audit.distance_threshold_realistic)]
    if low.ci_low > 2 * fpr or max(aucs) > 0.6:
        return "elevated"
    return "low"


def _p(p: float) -> str:
    return f"{p:.2g}" if p >= 1e-4 else "< 0.0001"


def _copies_sentences(audit: SyntheticAudit, level: str) -> tuple[str, str]:
    """The headline (with the count when copies drive it) and the sentence on exact copies."""
    test = audit.copy_test
    headline = RISK_HEADLINES[level]
    near = audit.near_copies
    if near is not None and near.excess and not (test is not None and test.excess):
        return (
            f"{headline[:-1]}: {near.train_copies:,} of the {near.n_train:,} audited training records have a synthetic "
            f"record within Gower distance {near.tolerance:.2g} (near-copies), against {near.holdout_copies:,} of the "
            f"{near.n_holdout:,} holdout records.",
            f"More than chance explains (one-sided Fisher exact test, p = {_p(near.p_value)}; the tolerance is the "
            "distance only 1 % of the auxiliary records come that close): a near-copy discloses a training record "
            "with one value changed.",
        )
    if test is None or not test.train_copies:
        return headline, ""
    counts = (
        f"{test.train_copies:,} of the {test.n_train:,} training rows appear verbatim in the synthetic table, "
        f"against {test.holdout_copies:,} of the {test.n_holdout:,} holdout rows"
    )
    if test.excess:
        return (
            f"{headline[:-1]}: {counts}.",
            f"More copies than chance explains (one-sided Fisher exact test, p = {_p(test.p_value)}): "
            "each copied row discloses a training record outright.",
        )
    chance = f"no more than chance (one-sided Fisher exact test, p = {_p(test.p_value)})."
    return headline, f"{counts[0].upper()}{counts[1:]}: {chance}"


def verdict(audit: SyntheticAudit) -> str:
    """A plain-language verdict a data steward can read aloud.

    Driven by :func:`risk_level`: verbatim training copies beyond chance (the
    count is in the first sentence), and every attack's TPR at 1 % FPR (the
    strongest is quoted; the realistic attacker's too). The margin of two
    (elevated) and three (high) times the FPR allows for the threshold being
    read off the same non-members whose FPR it sets. Exact copies are always
    named, and a holdout that repeats training rows is flagged.
    """
    level = risk_level(audit)
    fpr = float(_LOW_FPR)
    name = strongest_attack(audit)
    att = audit.attacks[name]
    low = att.tpr_at_fpr[_LOW_FPR]
    true = audit.attacks["true_distribution"]
    real = audit.attacks["realistic"]
    headline, copies = _copies_sentences(audit, level)
    parts: list[str] = [headline]
    if copies:
        parts.append(copies)
    if audit.holdout_flag:
        parts.append(audit.holdout_flag)
    parts.append(
        f"The strongest attack at low FPR, {ATTACK_LABELS[name]}, flags {_pct(low.tpr)} of the training records "
        f"(95 % interval {_pct(low.ci_low)} to {_pct(low.ci_high)}) while wrongly flagging {_pct(low.achieved_fpr)} "
        f"of the non-members; chance would flag {_pct(fpr)}."
    )
    if name != "realistic":
        parts.append(f"A realistic attacker with only auxiliary data flags {_pct(real.tpr_at_fpr[_LOW_FPR].tpr)}.")
    parts.append(
        f"Averages say little here: accuracy at P >= 0.5 is {_pct(true.accuracy)} and AUC {true.auc:.3f}, "
        "yet the log-ROC and the table of most exposed records show whether a few individuals stand out."
    )
    if not low.supported:
        parts.append(
            f"With {low.n_neg} non-members the 1 % FPR is not measurable (needs at least {int(10 / fpr)}); "
            "audit with a larger holdout table."
        )
    return " ".join(parts)


LIMITS = [
    "The true-distribution attack fits its densities on the real membership labels (cross-fitted): it is an upper "
    "bound on what an attacker can do with distances alone, not a realistic attacker.",
    "Only the distance to the nearest synthetic record is used; attacks that model the full joint distribution "
    "(e.g. DOMIAS-style density ratios in feature space) may find more.",
    "A result of 'no measurable risk' is evidence at this sample size, not proof: TPR at FPR alpha needs at least "
    "10/alpha non-members to be measured at all.",
    INTERVAL_LIMIT,
    "Gower distance weights every compared column equally unless weights are given; identifier-like columns should be left out.",
    "The realistic attack's P(member | d) ranks records but is not calibrated: its labels are pseudo-labels, so a record "
    "closer than the cut gets a P near 1 whether or not it was a member.",
    "Exact copies are counted over the whole training and holdout tables (every compared column equal, missing equal to "
    "missing); the one-sided Fisher exact test assumes the split into training and holdout was random.",
]


def build_report(
    audit: SyntheticAudit,
    *,
    inputs: Sequence[InputSummary] = (),
    top_k: int = 20,
    title: str = "Membership risk of a synthetic table",
) -> Report:
    """The audit's deliverable: figures, metrics, verdict, most exposed records.

    Parameters
    ----------
    audit : SyntheticAudit
        The result to report.
    inputs : sequence of InputSummary
        Descriptions of the input tables (``audit_core.common.report.describe_input``).
    top_k : int
        Rows in the most-exposed-records table.
    title : str
        Report title.
    """
    figures = [
        ("Log-log ROC of all attacks", roc_figure(audit)),
        ("Distances with their KDE curves", distance_figure(audit)),
        ("P(member | d), true-distribution attack", p_member_figure(audit, attack="true_distribution")),
        ("P(member | d), realistic attack", p_member_figure(audit, attack="realistic")),
    ]
    tables = [(f"The {top_k} most exposed training records", exposed_records(audit, k=top_k, members_only=True))]
    if audit.overlaps:
        tables.append(("Rows repeated verbatim between the tables", overlaps_table(audit)))
    settings = dict(audit.settings)
    settings["auxiliary_source"] = audit.auxiliary_source
    settings["numeric columns"] = ", ".join(audit.types.numeric)
    settings["categorical columns"] = ", ".join(audit.types.categorical)
    settings["ignored columns"] = ", ".join(audit.types.ignored) or "none"
    return Report(
        title=title,
        question=(
            "Can an attacker who sees the synthetic table tell which individuals were in the generator's training "
            "data, from how close each record is to its nearest synthetic record? (METHODS.md §1)"
        ),
        inputs=list(inputs),
        settings=settings,
        metrics=audit.to_json(),
        figures=figures,
        tables=tables,
        verdict=verdict(audit),
        limits=[*LIMITS, *audit.warnings],
        seed=int(audit.settings["seed"]),
    )


COMPARISON_LIMITS = [
    "Each generator is fitted once with one seed; AUC and TPR move between seeds, more so for the GANs.",
    "The true-distribution attack is an upper bound (it knows the labels of the attack set, cross-fitted).",
    "TPR at 0.1 % FPR needs at least 10,000 non-members to be measured; below that it is marked unsupported.",
    INTERVAL_LIMIT,
    "Utility is SDMetrics' quality report (column shapes + column pair trends) against the training table: "
    "it measures fidelity of marginals and pairs, not every downstream use.",
    "'bootstrap' (training rows resampled) and 'population' (unseen real rows) are reference points, "
    "not generators: they mark maximal leakage and chance.",
]


def comparison_verdict(comparison: GeneratorComparison) -> str:
    """One paragraph: which generators leak, read against the two references."""
    ok = [r for r in comparison.runs if r.ok]
    failed = [r for r in comparison.runs if not r.ok]
    if not ok:
        return "No generator completed; see each row's error."
    parts = []
    real = [r for r in ok if r.name not in {"bootstrap", "population"}]
    if real:
        aucs = {r.label: r.audit.attacks["true_distribution"].auc for r in real}
        worst = max(aucs, key=aucs.get)
        best = min(aucs, key=aucs.get)
        parts.append(
            f"Among the generators, {worst} leaks most (AUC {aucs[worst]:.3f}) and {best} least "
            f"(AUC {aucs[best]:.3f})."
        )
    words = {
        "population": "The chance reference (unseen real rows)",
        "bootstrap": "The leaky reference (resampled training rows)",
    }
    for r in ok:
        if r.name in words:
            parts.append(f"{words[r.name]} scores AUC {r.audit.attacks['true_distribution'].auc:.3f}.")
    if failed:
        parts.append("Failed: " + ", ".join(r.label for r in failed) + ".")
    return " ".join(parts)


def build_comparison_report(
    comparison: GeneratorComparison,
    *,
    inputs: Sequence[InputSummary] = (),
    title: str = "Synthetic-data generators compared",
) -> Report:
    """The comparison's deliverable: the table, overlaid log-ROC curves, privacy vs utility."""
    figures = [
        ("Log-log ROC, true-distribution attack", comparison_roc_figure(comparison, attack="true_distribution")),
        ("Log-log ROC, realistic attack", comparison_roc_figure(comparison, attack="realistic")),
        ("Privacy against utility", privacy_utility_figure(comparison)),
    ]
    sizes = comparison.split.sizes()
    settings = {
        "generators": ", ".join(r.name for r in comparison.runs),
        "split fractions": ", ".join(f"{k} {v:.2f}" for k, v in comparison.split.fractions.items()),
        "split rows": ", ".join(f"{k} {v}" for k, v in sizes.items()),
        "synthetic rows per generator": comparison.rows,
        "numeric columns": ", ".join(comparison.types.numeric),
        "categorical columns": ", ".join(comparison.types.categorical),
        "ignored columns": ", ".join(comparison.types.ignored) or "none",
    }
    for run in comparison.runs:
        if run.params:
            settings[f"{run.name} parameters"] = ", ".join(f"{k}={v}" for k, v in run.params.items())
    return Report(
        title=title,
        question=(
            "For the same real training data, which generator's synthetic table lets an attacker tell members "
            "from non-members most easily, and what fidelity does it keep? (METHODS.md §1)"
        ),
        inputs=list(inputs),
        settings=settings,
        metrics=comparison.to_json(),
        figures=figures,
        tables=[("Generators side by side", comparison_table(comparison))],
        verdict=comparison_verdict(comparison),
        limits=list(COMPARISON_LIMITS),
        seed=int(comparison.seed),
    )


_SEVERITY = {"disclosed": 2, "no evidence": 1, "not measurable": 0}


DISCLOSURE_LIMITS = [
    "Singling out, linkability and inference follow Giomi et al. (PoPETs 2023): each attack is run on the training "
    "records and on the holdout (control); the risk is the excess success on the training records, "
    "(rate_train - rate_control) / (1 - rate_control), with a 95 % MOVER-R interval from the two Wilson intervals.",
    "An attack no better than its random-guess baseline proves nothing either way; a stronger attacker (more "
    "columns known, other predicates, a learned model) may find more.",
    "Singling-out predicates are counted on training and control samples of the same size; linkability and "
    "inference use the exact Gower nearest synthetic rows over the columns the attacker holds.",
]


def _membership_row(audit: Any) -> dict[str, Any] | None:
    """Membership in the checklist's form, from the strongest attack at 1 % FPR."""
    if audit is None:
        return None
    name = strongest_attack(audit)
    point = audit.attacks[name].tpr_at_fpr[_LOW_FPR]
    f = min(float(point.achieved_fpr), 0.999)
    excess = lambda t: (float(t) - f) / (1 - f)  # noqa: E731
    level = risk_level(audit)
    status = {"high": "disclosed", "elevated": "no evidence", "low": "no evidence"}[level]
    reading = {
        "high": "Training records are told apart from strangers (or copied verbatim).",
        "elevated": "Some signal of membership; read the membership sections below.",
        "low": "No attack tells training records from strangers beyond chance.",
    }[level]
    return {
        "check": "Membership", "risk": excess(point.tpr), "ci_low": excess(point.ci_low), "ci_high": excess(point.ci_high),
        "baseline": f, "status": status, "reading": f"{reading} (TPR {100 * point.tpr:.1f} % at {100 * f:.1f} % FPR)",
    }  # fmt: skip


def checklist_table(disclosure: DisclosureAudit, audit: Any = None) -> pd.DataFrame:
    """The release checklist: membership (when ``audit`` is given), singling out, linkability, inference.

    Columns ``check``, ``risk``, ``95 % interval``, ``baseline`` (the random guesser's
    success rate; for membership the FPR), ``status`` and ``reading``.
    """
    rows = []
    member = _membership_row(audit)
    if member is not None:
        rows.append(member)
    for key, r in disclosure.results():
        rows.append({"check": _label(key), "risk": r.risk, "ci_low": r.ci_low, "ci_high": r.ci_high,
                     "baseline": r.baseline_rate, "status": _status(r), "reading": r.reading})  # fmt: skip
    frame = pd.DataFrame(rows)
    frame["95 % interval"] = [f"[{lo:.3f}, {hi:.3f}]" for lo, hi in zip(frame["ci_low"], frame["ci_high"], strict=True)]
    frame["risk"] = frame["risk"].round(3)
    frame["baseline"] = frame["baseline"].round(3)
    return frame[["check", "risk", "95 % interval", "baseline", "status", "reading"]].assign(
        _low=frame["ci_low"].to_numpy()
    )


def checklist_verdict(checklist: pd.DataFrame) -> str:
    """One sentence driven by the worst row (status first, then the lower interval limit)."""
    worst = max(checklist.to_dict("records"), key=lambda r: (_SEVERITY[r["status"]], r["_low"]))
    if worst["status"] == "disclosed":
        return (f"Release checklist: do not release as is. {worst['check']} risk {worst['risk']:.3f} "
                f"(95 % interval {worst['95 % interval']}) is above zero: {worst['reading']}")  # fmt: skip
    weak = [r["check"] for r in checklist.to_dict("records") if r["status"] == "not measurable"]
    tail = f" ({', '.join(weak)}: no better than random guessing, so not evidence either way)" if weak else ""
    return f"Release checklist: no check shows disclosure at this sample size{tail}."


def with_disclosure(report: Report, audit: Any, disclosure: DisclosureAudit) -> Report:
    """The membership report with the release checklist on top, the disclosure figure, metrics and limits.

    Tables with ``source`` and ``row`` columns (the most exposed records) gain which
    disclosure attacks succeeded on each record (:data:`DISCLOSURE_RECORD_COLUMNS`).
    """
    checklist = checklist_table(disclosure, audit)
    extra = disclosure.records.rename(columns={c: f"disclosure_{c}" for c in DISCLOSURE_RECORD_COLUMNS})
    tables = []
    for caption, table in report.tables:
        if {"source", "row"} <= set(table.columns):
            table = table.merge(extra, on=["source", "row"], how="left")
        tables.append((caption, table))
    tables.append(("Disclosure attacks: success rates and risks", results_table(disclosure).drop(columns=["key"])))
    settings = {**report.settings, "disclosure": {**disclosure.settings, **disclosure.roles.to_json()}}
    return replace(
        report,
        checklist=checklist.drop(columns=["_low"]),
        verdict=checklist_verdict(checklist) + " " + report.verdict,
        figures=[*report.figures, ("Singling out, linkability and inference", risk_figure(disclosure))],
        tables=tables,
        metrics={**report.metrics, "disclosure": disclosure.to_json()},
        settings=settings,
        limits=[*report.limits, *DISCLOSURE_LIMITS],
    )
