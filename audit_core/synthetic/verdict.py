"""Verdicts, limits and reports of the synthetic-table audit (docs/methods.md §1).

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

import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import pandas as pd

from audit_core.common.decision import (
    ELEVATED_AUC,
    LEVELS,
    Decision,
    Finding,
    attack_finding,
    decide,
    times_chance,
    tpr_rule,
)
from audit_core.common.report import InputSummary, Report
from audit_core.common.roc import INTERVAL_LIMIT
from audit_core.synthetic.comparison import GeneratorComparison, GeneratorRun
from audit_core.synthetic.disclosure.audit import DISCLOSURE_RECORD_COLUMNS, DisclosureAudit
from audit_core.synthetic.explanations import exposed_records
from audit_core.synthetic.figures import (
    ATTACK_LABELS,
    comparison_roc_figure,
    comparison_table,
    disclosure_label,
    distance_figure,
    overlaps_table,
    p_member_figure,
    privacy_utility_figure,
    results_table,
    risk_figure,
    roc_figure,
    shadow_table,
)
from audit_core.synthetic.result import SyntheticAudit

__all__ = [
    "RULES",
    "build_comparison_report",
    "build_report",
    "comparison_decision",
    "comparison_verdict",
    "decision",
    "risk_level",
    "shadow_decision",
    "verdict",
    "with_disclosure",
]


_LOW_FPR = "0.01"


def _pct(x: float) -> str:
    return f"{100 * x:.1f} %"


#: Attacks whose TPR at 1 % FPR feeds the verdict (every scored attack the page shows).
_VERDICT_ATTACKS = ("true_distribution", "realistic", "domias", "learned")

#: What to do about each kind of finding, in words a steward can act on.
_NEXT_STEPS = {
    "copies": "Remove the copied rows before release (the exposed-records table and the --records file name them), "
    "then regenerate with stronger privacy settings (fewer epochs, differential privacy, or a generator that does "
    "not memorise).",
    "real": "Find out how real records got into the synthetic table (holdout or auxiliary rows fed to the generator, "
    "real rows mixed into the output) and rebuild it from the training data alone.",
    "near": "Look at the near-copies (exposed-records table: 'differs in' shows the few changed values); regenerate "
    "with stronger privacy settings, or suppress synthetic rows that sit within a few values of a real record.",
    "attack": "Regenerate with stronger privacy settings and audit again; the most exposed records show who is at "
    "risk.",
    "disclosure": "Read the release checklist: suppress or coarsen the columns that single out, link or reveal the "
    "secret, then audit again.",
    "small": "Audit with a larger holdout table (at least 1,000 non-members to measure a TPR at 1 % FPR).",
    "recode": "Recode the tables the same way (the same category labels, case and spelling in every table) and audit "
    "again.",
}


def _verdict_attacks(audit: SyntheticAudit) -> list[str]:
    return [k for k in _VERDICT_ATTACKS if k in audit.attacks]


def _strongest_attack(audit: SyntheticAudit) -> str:
    """The attack with the highest lower confidence bound of its TPR at 1 % FPR (ties: the higher TPR)."""
    return max(
        _verdict_attacks(audit),
        key=lambda k: (audit.attacks[k].tpr_at_fpr[_LOW_FPR].ci_low, audit.attacks[k].tpr_at_fpr[_LOW_FPR].tpr),
    )


def _p(p: float) -> str:
    """``p = 0.012`` or ``p < 0.0001`` (never ``p = < 0.0001``)."""
    return f"p = {p:.2g}" if p >= 1e-4 else "p < 0.0001"


def _copy_findings(audit: SyntheticAudit) -> list[Finding]:
    """Verbatim real records: training copies beyond chance, rare training copies, real non-training records."""
    out: list[Finding] = []
    test, v = audit.copy_test, audit.verbatim
    folded = (" (counted with the categories' case and spaces folded: the synthetic table writes them differently)"
              if test.folding_matters else "")  # fmt: skip
    if test.excess:
        out.append(Finding("high", f"{test.train_copies:,} of the {test.n_train:,} training rows ({_pct(test.train_rate)}) "
                           f"appear verbatim in the synthetic table{folded}, against {test.holdout_copies:,} of the "
                           f"{test.n_holdout:,} holdout rows ({_pct(test.holdout_rate)}, the chance rate): more copies than "
                           f"chance explains (one-sided Fisher exact test, {_p(test.p_value)}); each copied row discloses a "
                           "training record outright.", _NEXT_STEPS["copies"]))  # fmt: skip
    elif v.rare_train_copied:
        many = v.train_copied > 1
        out.append(Finding("elevated", f"{v.train_copied:,} training record{'s are' if many else ' is'} copied verbatim "
                           f"into the synthetic table, {v.rare_train_copied:,} of them with values that no holdout or "
                           "auxiliary record shares: a copy of a real person's record publishes it, whatever the membership "
                           "tests say (the generator memorised it, or the population happens to hold an identical "
                           "record).", _NEXT_STEPS["copies"]))  # fmt: skip
    if v.real_not_train:
        share = f"{100 * v.real_share:.1f} %"
        where = (f"{v.real_not_train:,} synthetic rows ({share}) equal real holdout or auxiliary records that are not "
                 "training rows")  # fmt: skip
        natural = (f"; two real records of this population coincide for {100 * v.natural_rate:.1f} % of the training rows"
                   if v.natural_matches else "")  # fmt: skip
        if v.not_synthetic:
            out.append(Finding("high", f"{where}: this is not synthetic data, it contains real records{natural}.",
                               _NEXT_STEPS["real"]))  # fmt: skip
        elif v.beyond_natural:
            out.append(Finding("elevated", f"{where}: the table contains real records (the generator saw them, or the "
                               f"population has duplicates){natural}.", _NEXT_STEPS["real"]))  # fmt: skip
        else:
            out.append(Finding("low", f"{where}, no more often than two real records of this population coincide "
                               f"({100 * v.natural_rate:.1f} % of the training rows equal a holdout or auxiliary record): "
                               "natural duplicates, not copies."))  # fmt: skip
    return out


def _near_findings(audit: SyntheticAudit) -> list[Finding]:
    """Near-copies: within the auxiliary data's 1 % distance, and the record-linkage scan beyond it."""
    out: list[Finding] = []
    near, link = audit.near_copies, audit.linkage
    if near.excess:
        out.append(Finding("high", f"{near.train_copies:,} of the {near.n_train:,} audited training records have a synthetic "
                           f"record within Gower distance {near.tolerance:.2g} (near-copies), against {near.holdout_copies:,} "
                           f"of the {near.n_holdout:,} holdout records (one-sided Fisher exact test, {_p(near.p_value)}): a "
                           "near-copy discloses a training record with one value changed.", _NEXT_STEPS["near"]))  # fmt: skip
    if link.excess:
        k = link.best
        near_records = link.members_near[k] + link.non_members_near[k]
        statistic = ("their agreement" if link.tests[k].startswith("absolute")
                     else "how much more they agree with it than with any auxiliary record")  # fmt: skip
        out.append(Finding("high" if link.strong else "elevated",
                           f"{link.members_near[k]:,} of the {link.n_members:,} training records are among the "
                           f"{near_records:,} records that agree most with a synthetic record (rarity-weighted record "
                           f"linkage, by {statistic}), against {link.non_members_near[k]:,} of the "
                           f"{link.n_non_members:,} non-members (holdout and auxiliary records): more than chance "
                           f"({_p(link.p_value)} over the scan): near-copies with a few values changed.",
                           _NEXT_STEPS["near"]))  # fmt: skip
    return out


_RECODED = re.compile(r"Column '(?P<column>.+?)' is coded differently in table '(?P<table>.+?)' \(e\.g\. (?P<example>.+?)\) than")


def _coding_findings(audit: SyntheticAudit) -> list[Finding]:
    """Tables coded differently: the distance attacks and near-copy tests compare codes, not records (issue 28)."""
    hits = [m for m in (_RECODED.match(w) for w in audit.warnings) if m]
    if not hits:
        return []
    columns = ", ".join(f"'{m['column']}'" for m in hits[:4]) + (f" and {len(hits) - 4} more" if len(hits) > 4 else "")
    tables = ", ".join(sorted({f"'{m['table']}'" for m in hits}))
    return [Finding("elevated", f"The column(s) {columns} are coded differently in table(s) {tables} (e.g. "
                    f"{hits[0]['example']}) than in the training table: the distances, the attacks and the near-copy tests "
                    "compare codes, not records, so they can miss a leak; verbatim copies were counted with the "
                    "categories' case and spaces folded.", _NEXT_STEPS["recode"])]  # fmt: skip


def _attack_findings(audit: SyntheticAudit) -> list[Finding]:
    """Every attack's TPR at 1 % FPR (the strongest quoted) and AUC, by the shared rule (common.decision)."""
    name = _strongest_attack(audit)
    points = audit.attacks[name].tpr_at_fpr
    aucs = {ATTACK_LABELS[k]: audit.attacks[k].auc for k in _verdict_attacks(audit)}
    aucs |= {f"Method 1 ({t.rule})": (1 + t.metrics.tpr - t.metrics.fpr) / 2
             for t in (audit.distance_threshold, audit.distance_threshold_realistic)}  # fmt: skip
    top = max(aucs, key=lambda k: aucs[k])
    strongest = attack_finding(f"the strongest attack ({ATTACK_LABELS[name]})", points[_LOW_FPR],
                               step=_NEXT_STEPS["attack"], members="training records",
                               fallback=[p for k, p in points.items() if k != _LOW_FPR])  # fmt: skip
    out = [strongest]
    if strongest.level in ("low", "inconclusive") and aucs[top] > ELEVATED_AUC:
        out.append(Finding("elevated", f"Some membership signal: {top} reaches AUC {aucs[top]:.3f} (above "
                           f"{ELEVATED_AUC:g}; chance is 0.5).", _NEXT_STEPS["attack"]))  # fmt: skip
    return out


def _disclosure_findings(disclosure: DisclosureAudit | None) -> list[Finding]:
    if disclosure is None:
        return []
    hits = [(key, r) for key, r in disclosure.results() if r.status == "disclosed"]
    return [Finding("high", f"{disclosure_label(key)}: risk {r.risk:.3f} (95 % interval {r.ci_low:.3f} to "
                    f"{r.ci_high:.3f}) above zero: {r.reading}", _NEXT_STEPS["disclosure"]) for key, r in hits]  # fmt: skip


RULES: tuple[str, ...] = (
    "Verbatim copies: high when training rows appear verbatim in the synthetic table more often than holdout rows "
    "(one-sided Fisher exact test, p < 0.05); elevated when any copied training record has values no holdout or "
    "auxiliary record shares.",
    "Real records that are not training records: high when they make up 1 % of the synthetic rows or more, beyond "
    "the population's own duplicates (p < 0.001); elevated when they occur more often than two real records "
    "coincide (p < 0.05).",
    "Near-copies: high when members sit within the auxiliary data's 1 % distance of a synthetic record more often "
    "than non-members (Fisher, p < 0.01) or the record-linkage scan finds them at 1 %; elevated at 5 %.",
    tpr_rule(0.01),
    "Disclosure attacks (when run): high when a risk's 95 % interval lies above zero.",
)
"""The cut-offs behind the synthetic-table decision (shown under "Why" and in the report)."""


def decision(audit: SyntheticAudit, disclosure: DisclosureAudit | None = None) -> Decision:
    """The release decision: verbatim and near copies, every attack, and the disclosure attacks when run.

    - **high**: training rows copied beyond chance (Fisher, 5 %); 1 % or more of the synthetic
      rows are real non-training records beyond the population's own duplicates; near-copies
      (the 1 %-tolerance test at 1 %, or the record-linkage scan at 1 %); any attack's TPR at
      1 % FPR with its lower interval end above 3 x the FPR; a disclosure attack above zero.
    - **elevated**: any training record copied verbatim that no non-member shares; any real
      non-training record beyond the natural duplicate rate; the linkage scan at 5 %; a lower
      interval end above 2 x the FPR, or any attack's AUC above 0.6.
    - **inconclusive**: none of the above, and too few non-members to measure a TPR at 1 % FPR
      (fewer than 1,000) while no measurable FPR shows signal either.
    - **low** otherwise: no measurable risk at this sample size (evidence, not proof).
    """
    findings = [*_copy_findings(audit), *_near_findings(audit), *_coding_findings(audit), *_attack_findings(audit),
                *_disclosure_findings(disclosure)]  # fmt: skip
    if not any(f.level in ("high", "elevated") for f in findings) and not audit.verbatim.train_copied:
        findings.append(Finding("low", "No copies of real records and no near-copies were found."))
    return decide(findings, low="no copies of real records, no near-copies and no attack "
                  "beyond chance; passing this audit does not prove anonymity.", rules=RULES)  # fmt: skip


def risk_level(audit: SyntheticAudit) -> str:
    """``"high"``, ``"elevated"``, ``"inconclusive"`` or ``"low"``: the level of :func:`decision` (membership findings only)."""
    return decision(audit).level


def verdict(audit: SyntheticAudit, disclosure: DisclosureAudit | None = None) -> str:
    """A plain-language verdict a data steward can read aloud: the decision's headline, then every finding."""
    d = decision(audit, disclosure)
    parts = [d.headline.rstrip(".") + "."]
    parts += [r for r in d.reasons if r not in d.headline and r[0].lower() + r[1:] not in d.headline]
    if audit.holdout_flag:
        parts.append(audit.holdout_flag)
    true = audit.attacks["true_distribution"]
    real = audit.attacks["realistic"].tpr_at_fpr[_LOW_FPR]
    measured = "" if real.supported else f", not measurable with {real.n_neg:,} non-members"
    parts.append(
        f"A realistic attacker with only auxiliary data flags {_pct(real.tpr)} of the training records at 1 % FPR "
        f"({times_chance(real.tpr, 0.01)}{measured}). Averages say little here: accuracy at P >= 0.5 is "
        f"{_pct(true.accuracy)} and AUC {true.auc:.3f} (chance 0.5); the log-ROC and the most exposed records show "
        "whether a few individuals stand out."
    )
    return " ".join(parts)


_LIMITS = [
    "The true-distribution attack fits its densities on the real membership labels (cross-fitted): it is an upper "
    "bound on what an attacker can do with distances alone, not a realistic attacker.",
    "A result of 'no measurable risk' is evidence at this sample size, not proof: TPR at FPR alpha needs at least "
    "10/alpha non-members to be measured at all.",
    INTERVAL_LIMIT,
    "Gower distance weights every compared column equally unless weights are given; identifier-like columns should be left out.",
    "The realistic attack's P(member | d) ranks records but is not calibrated: its labels are pseudo-labels, so a record "
    "closer than the cut gets a P near 1 whether or not it was a member.",
    "Exact copies are counted over the whole training and holdout tables (every compared column equal, missing equal to "
    "missing); the one-sided Fisher exact test assumes the split into training and holdout was random.",
]

_DISTANCE_ONLY = ("Only the distance to the nearest synthetic record is used; attacks that model the full joint "
                  "distribution (e.g. DOMIAS-style density ratios in feature space) may find more.")  # fmt: skip
_LEARNED_LIMIT = ("The learned attacker learns from the audit's own labels what sets members apart (cross-fitting: each "
                  "record is scored by a model fitted on the other folds): an attacker who knows some members. It sees "
                  "distances to the nearest synthetic rows, agreement with the best match and the density ratio, not "
                  "the full joint distribution; an attacker who re-runs the generator may find more (the shadow-"
                  "generator attack, when the generator is known).")  # fmt: skip


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
    top = exposed_records(audit, k=top_k, members_only=True)
    top = top.drop(columns=[c for c in ("is_member", "p_member_true_supported", "p_member_realistic_supported")
                            if c in top.columns])  # fmt: skip  (members only; the note says where P rests on no data)
    tables = [(f"The {top_k} most exposed training records (row ids and what makes them exposed; no values)", top)]
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
            "data, from how close each record is to its nearest synthetic record? (docs/methods.md §1)"
        ),
        inputs=list(inputs),
        settings=settings,
        metrics=audit.to_json(),
        figures=figures,
        tables=tables,
        verdict=verdict(audit),
        limits=[_LEARNED_LIMIT if "learned" in audit.attacks else _DISTANCE_ONLY, *_LIMITS, *audit.warnings],
        seed=int(audit.settings["seed"]),
    )


_COMPARISON_LIMITS = [
    "Each generator is fitted once with one seed; AUC and TPR move between seeds, more so for the GANs.",
    "The true-distribution attack is an upper bound (it knows the labels of the attack set, cross-fitted).",
    "TPR at 0.1 % FPR needs at least 10,000 non-members to be measured; below that it is marked unsupported.",
    INTERVAL_LIMIT,
    "Utility is SDMetrics' quality report (column shapes + column pair trends) against the training table: "
    "it measures fidelity of marginals and pairs, not every downstream use.",
    "'bootstrap' (training rows resampled) and 'population' (unseen real rows) are reference points, "
    "not generators: they mark maximal leakage and chance.",
]


def _beats_chance(audit: SyntheticAudit) -> bool:
    """Some attack on this generator's table is above chance: the lower end of a TPR interval at 1 % FPR above 1 %."""
    return any(audit.attacks[k].tpr_at_fpr[_LOW_FPR].ci_low > float(_LOW_FPR) for k in _verdict_attacks(audit))


_REFERENCES = {"bootstrap": "the leaky reference", "population": "the chance reference"}


def _reference_sentence(run: Any, audit: SyntheticAudit) -> str:
    """How a reference row scores, said as a reference (it is a yardstick, not a candidate for release)."""
    t = audit.attacks["true_distribution"]
    p = t.tpr_at_fpr[_LOW_FPR]
    tpr = (f"TPR {_pct(p.tpr)} at 1 % FPR ({times_chance(p.tpr, 0.01)})" if p.supported
           else f"TPR {_pct(p.tpr)} at 1 % FPR (not measurable with {p.n_neg:,} non-members)")  # fmt: skip
    what = ("resampled training rows, not a generator: it shows what a copying generator looks like"
            if run.name == "bootstrap" else "unseen real rows, not a generator: it shows what chance looks like")  # fmt: skip
    return f"{run.label} is {_REFERENCES[run.name]} ({what}): AUC {t.auc:.3f}, {tpr}."


def shadow_decision(run: GeneratorRun) -> Decision | None:
    """One generator's shadow-attack decision, named by its label (the comparison page's tab); None when not run."""
    from audit_core.synthetic.shadow.verdict import decision as shadow

    return None if run.shadow is None else shadow(run.shadow, label=run.label)


def comparison_decision(comparison: GeneratorComparison) -> Decision:
    """The worst generator's release decision; the two references are yardsticks, named as such in the reasons. With
    the shadow attack, each candidate's shadow finding too."""
    from audit_core.synthetic.shadow.verdict import findings as shadow_findings

    findings, references = [], []
    for run, audit in comparison.completed():
        if run.name in _REFERENCES:
            references.append(Finding("low", "Reference, not a candidate: " + _reference_sentence(run, audit)))
            continue
        d = decision(audit)
        findings.append(Finding(d.level, f"{run.label}: {d.headline[0].lower()}{d.headline[1:]}", *d.next_steps[:1]))
        if run.shadow is not None:
            findings += [replace(f, reason=f"{run.label}, shadow attack: {f.reason[0].lower()}{f.reason[1:]}")
                         for f in shadow_findings(run.shadow, label=run.label) if f.level != "low"]  # fmt: skip
    candidates = [r.label for r, _ in comparison.completed() if r.name not in _REFERENCES]
    leaky = next((a for r, a in comparison.completed() if r.name == "bootstrap"), None)
    power = (f" The leaky reference (bootstrap: resampled training rows, not a candidate) reaches AUC "
             f"{leaky.attacks['true_distribution'].auc:.3f} on the same split, so this audit does see a generator "
             "that copies." if leaky is not None else "")  # fmt: skip
    shadow = " or to the shadow attack" if comparison.shadow is not None else ""
    low = (f"no candidate generator's table ({', '.join(candidates)}) shows copies, near-copies or an attack beyond "
           f"chance{shadow}.{power}" if candidates
           else "no candidate generator was compared (only the reference rows).")  # fmt: skip
    return decide([*findings, *references], low=low, rules=RULES)


def comparison_verdict(comparison: GeneratorComparison) -> str:
    """One paragraph: which generators leak, read against the two references; no ranking where nothing beats chance."""
    ok = comparison.completed()
    failed = [r for r in comparison.runs if not r.ok]
    if not ok:
        return "No generator completed; see each row's error."
    parts = []
    real = [(r, a) for r, a in ok if r.name not in {"bootstrap", "population"}]
    if real:
        aucs = {r.label: a.attacks["true_distribution"].auc for r, a in real}
        leaky = [(r, a) for r, a in real if _beats_chance(a) or decision(a).level != "low"]
        if leaky:
            worst, worst_audit = max(leaky, key=lambda ra: (LEVELS.index(decision(ra[1]).level), aucs[ra[0].label]))
            parts.append(f"{worst.label} leaks most ({decision(worst_audit).headline})")
            leaky_names = {r.name for r, _ in leaky}
            safe = [r.label for r, _ in real if r.name not in leaky_names]
            if safe:
                parts[-1] += f"; no attack beats chance on {', '.join(safe)}."
            else:
                parts[-1] += "."
        else:
            parts.append("No attack beats chance on any generator's table (every TPR interval at 1 % FPR reaches down to "
                         "1 %): they cannot be ranked by risk at this sample size.")  # fmt: skip
        below = [f"{label} ({auc:.3f})" for label, auc in aucs.items() if auc < 0.5]
        if below:
            parts.append(f"An AUC below 0.5 ({', '.join(below)}) is chance plus noise, or synthetic rows that sit closer to "
                         "non-members than to members; it is not extra protection.")  # fmt: skip
    words = {
        "population": "The chance reference (unseen real rows)",
        "bootstrap": "The leaky reference (resampled training rows)",
    }
    for r, a in ok:
        if r.name in words:
            parts.append(f"{words[r.name]} scores AUC {a.attacks['true_distribution'].auc:.3f}.")
    if failed:
        parts.append("Failed: " + ", ".join(r.label for r in failed) + ".")
    if comparison.shadow is not None:
        parts.append(_shadow_sentence(comparison))
    return " ".join(parts)


def _shadow_sentence(comparison: GeneratorComparison) -> str:
    """The shadow attack per generator, in one sentence: how many targets each lets the attacker tell apart."""
    said = []
    for run in comparison.runs:
        if run.shadow is not None:
            a = run.shadow
            said.append(f"{run.label} {int(a.told_apart.sum())} of {a.n_targets} (highest AUC {a.scores.auc.max():.2f})")
        elif run.shadow_error:
            said.append(f"{run.label} not attacked ({run.shadow_error.rstrip('.')})")
    k = comparison.shadow.n_shadows if comparison.shadow is not None else 0
    return (f"Shadow attack (the attacker re-runs each generator on {k} shadow training sets), most unusual training "
            "records told apart: " + "; ".join(said) + ".")


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
    tables = [("Generators side by side", comparison_table(comparison))]
    if comparison.shadow is not None:
        from audit_core.synthetic.shadow.figures import shadow_roc_figure, target_table

        tables.append(("Shadow attack per generator", shadow_table(comparison)))
        for run in comparison.runs:
            if run.shadow is not None:
                figures.append((f"Shadow attack on {run.label}: log-log ROC", shadow_roc_figure(run.shadow)))
                tables.append((f"Shadow attack on {run.label}: targets, most exposed first", target_table(run.shadow)))
    return Report(
        title=title,
        question=(
            "For the same real training data, which generator's synthetic table lets an attacker tell members "
            "from non-members most easily, and what fidelity does it keep? (docs/methods.md §1)"
        ),
        inputs=list(inputs),
        settings=settings,
        metrics=comparison.to_json(),
        figures=figures,
        tables=tables,
        verdict=comparison_verdict(comparison),
        limits=list(_COMPARISON_LIMITS),
        seed=int(comparison.seed),
    )


_SEVERITY = {"disclosed": 2, "no evidence": 1, "not measurable": 0}


_DISCLOSURE_LIMITS = [
    "Singling out, linkability and inference follow Giomi et al. (PoPETs 2023): each attack is run on the training "
    "records and on the holdout (control); the risk is the excess success on the training records, "
    "(rate_train - rate_control) / (1 - rate_control), with a 95 % MOVER-R interval from the two Wilson intervals.",
    "An attack no better than its random-guess baseline proves nothing either way; a stronger attacker (more "
    "columns known, other predicates, a learned model) may find more.",
    "Singling-out predicates are counted on training and control samples of the same size; linkability and "
    "inference use the exact Gower nearest synthetic rows over the columns the attacker holds.",
]


def _membership_row(audit: SyntheticAudit | None) -> dict[str, Any] | None:
    """Membership in the checklist's form, from the strongest attack at 1 % FPR."""
    if audit is None:
        return None
    name = _strongest_attack(audit)
    point = audit.attacks[name].tpr_at_fpr[_LOW_FPR]
    f = min(float(point.achieved_fpr), 0.999)
    excess = lambda t: (float(t) - f) / (1 - f)  # noqa: E731
    level = risk_level(audit)
    status = {"high": "disclosed", "elevated": "no evidence", "inconclusive": "not measurable", "low": "no evidence"}[level]
    reading = {
        "high": "Training records are told apart from strangers (or copied verbatim).",
        "elevated": "Some signal of membership; read the membership sections below.",
        "inconclusive": "Too few non-members to measure a TPR at 1 % FPR; audit with a larger holdout.",
        "low": "No attack tells training records from strangers beyond chance.",
    }[level]
    return {
        "check": "Membership", "risk": excess(point.tpr), "ci_low": excess(point.ci_low), "ci_high": excess(point.ci_high),
        "baseline": f, "status": status, "reading": f"{reading} (TPR {100 * point.tpr:.1f} % at {100 * f:.1f} % FPR)",
    }  # fmt: skip


def _checklist_table(disclosure: DisclosureAudit, audit: SyntheticAudit | None = None) -> pd.DataFrame:
    """The release checklist: membership (when ``audit`` is given), singling out, linkability, inference.

    Columns ``check``, ``risk``, ``95 % interval``, ``baseline`` (the random guesser's
    success rate; for membership the FPR), ``status`` and ``reading``.
    """
    rows = []
    member = _membership_row(audit)
    if member is not None:
        rows.append(member)
    for key, r in disclosure.results():
        rows.append({"check": disclosure_label(key), "risk": r.risk, "ci_low": r.ci_low, "ci_high": r.ci_high,
                     "baseline": r.baseline_rate, "status": r.status, "reading": r.reading})  # fmt: skip
    frame = pd.DataFrame(rows)
    frame["95 % interval"] = [f"[{lo:.3f}, {hi:.3f}]" for lo, hi in zip(frame["ci_low"], frame["ci_high"], strict=True)]
    frame["risk"] = frame["risk"].round(3)
    frame["baseline"] = frame["baseline"].round(3)
    return frame[["check", "risk", "95 % interval", "baseline", "status", "reading"]].assign(
        _low=frame["ci_low"].to_numpy()
    )


def with_disclosure(report: Report, audit: SyntheticAudit, disclosure: DisclosureAudit) -> Report:
    """The membership report with the release checklist on top, the disclosure figure, metrics and limits.

    Tables with ``source`` and ``row`` columns (the most exposed records) gain which
    disclosure attacks succeeded on each record (:data:`DISCLOSURE_RECORD_COLUMNS`).
    """
    checklist = _checklist_table(disclosure, audit)
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
        verdict=verdict(audit, disclosure),
        figures=[*report.figures, ("Singling out, linkability and inference", risk_figure(disclosure))],
        tables=tables,
        metrics={**report.metrics, "disclosure": disclosure.to_json()},
        settings=settings,
        limits=[*report.limits, *_DISCLOSURE_LIMITS],
    )
