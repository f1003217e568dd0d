"""Figures and the release checklist for the disclosure attacks (audit_core.disclosure).

The checklist puts the four questions a regulator asks side by side, each in the same
form: a risk (excess success on the training records over the control), its 95 %
interval, the random-guess baseline and a one-line reading. Membership is written in
that form too: at the threshold where the strongest membership attack flags 1 % of the
non-members (the control), ``risk = (TPR - FPR) / (1 - FPR)``, interval from the TPR's
interval, baseline = the FPR (a coin that flags 1 % of everyone). The worst row (the
highest lower interval limit, weighed by its status) drives the verdict.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from audit_core.disclosure import DISCLOSURE_RECORD_COLUMNS, AttackRisk, DisclosureAudit
from audit_core.plots.common import MEMBER, NEUTRAL, NON_MEMBER, apply_layout
from audit_core.report import Report

__all__ = ["DISCLOSURE_LIMITS", "checklist_table", "checklist_verdict", "results_table", "risk_figure", "with_disclosure"]

_LABELS = {
    "singling_out": "Singling out (multivariate)",
    "singling_out.univariate": "Singling out (univariate)",
    "linkability": "Linkability",
}
_LOW_FPR = "0.01"
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


def _label(key: str) -> str:
    return _LABELS.get(key, f"Inference of {key.split('.', 1)[1]}" if key.startswith("inference.") else key)


def _status(r: AttackRisk) -> str:
    if not r.beats_baseline:
        return "not measurable"
    return "disclosed" if r.significant else "no evidence"


def results_table(disclosure: DisclosureAudit) -> pd.DataFrame:
    """One row per attack: risk, interval, the three success rates, attacks, status and reading."""
    rows = []
    for key, r in disclosure.results():
        rows.append({
            "attack": _label(key), "key": key, "risk": round(r.risk, 4), "ci_low": round(r.ci_low, 4),
            "ci_high": round(r.ci_high, 4), "attack_rate": round(r.attack_rate, 4),
            "control_rate": round(r.control_rate, 4), "baseline_rate": round(r.baseline_rate, 4),
            "n_attacks": r.n_attacks, "status": _status(r), "reading": r.reading,
        })  # fmt: skip
    return pd.DataFrame(rows)


def _membership_row(audit: Any) -> dict[str, Any] | None:
    """Membership in the checklist's form, from the strongest attack at 1 % FPR."""
    if audit is None:
        return None
    from audit_core.plots.synthetic import risk_level, strongest_attack

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


def risk_figure(disclosure: DisclosureAudit) -> go.Figure:
    """Each attack's risk with its 95 % interval, and the success rates behind it."""
    table = results_table(disclosure)
    fig = go.Figure()
    fig.add_trace(go.Scatter(
        x=table["risk"], y=table["attack"], mode="markers", name="risk (95 % interval)",
        marker={"color": MEMBER, "size": 10},
        error_x={"type": "data", "symmetric": False, "array": table["ci_high"] - table["risk"],
                 "arrayminus": table["risk"] - table["ci_low"]},
    ))  # fmt: skip
    for col, name, color, symbol in (
        ("attack_rate", "success on training records", MEMBER, "circle-open"),
        ("control_rate", "success on control records", NON_MEMBER, "diamond-open"),
        ("baseline_rate", "random-guess baseline", NEUTRAL, "x"),
    ):
        fig.add_trace(go.Scatter(x=table[col], y=table["attack"], mode="markers", name=name,
                                 marker={"color": color, "symbol": symbol, "size": 9}, visible="legendonly"))  # fmt: skip
    fig.add_vline(x=0, line={"color": NEUTRAL, "dash": "dot"})
    apply_layout(fig, title="Disclosure risks: excess success on training records over the control", height=360)
    fig.update_xaxes(title="risk = (rate_train - rate_control) / (1 - rate_control)", range=[-0.2, 1.02])
    fig.update_yaxes(autorange="reversed")
    return fig


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
