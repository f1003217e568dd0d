"""What regulators ask, and what one audit shows and cannot show (issue 18.6): a section of every report.

Four frameworks a steward is asked about: the Article 29 Working Party's Opinion 05/2014 on
anonymisation (singling out, linkability, inference), the EDPB's Opinion 28/2024 on AI models
(can personal data be extracted from the model or obtained by querying it?), a GDPR Art. 35
data-protection impact assessment (risks and measures), and the EU AI Act Art. 15(5)
(resilience against confidentiality attacks). Passing this audit does not prove anonymity.
"""

from __future__ import annotations

from typing import Any

__all__ = ["FRAMEWORKS", "regulation_rows"]

FRAMEWORKS: tuple[tuple[str, str], ...] = (
    ("Article 29 WP Opinion 05/2014", "Can a person be singled out, linked across data sets, or have a value inferred?"),
    ("EDPB Opinion 28/2024 (AI models)", "How likely is it that personal data of the training set are extracted from the "
     "model, or obtained by querying it?"),
    ("GDPR Art. 35 DPIA", "What are the risks to the people in the data, and which measures address them?"),
    ("EU AI Act Art. 15(5)", "Is the system resilient against attacks on the confidentiality of its training data?"),
)

_SHOWS = {
    "tabular": (
        "membership (who was in the training data), verbatim and near copies of real records, and, with --disclosure, "
        "singling out, linkability and attribute inference against a control group"
    ),
    "compare": "the same membership and copy tests for each generator, side by side with their fidelity",
    "lira": "how many training records a likelihood-ratio attack exposes at a per-record false-positive rate",
    "fabrication": "whether membership evidence from this model can be forged, and whether the forgery is detected",
    "scores": "what the given membership scores prove: TPR at low FPR and an epsilon lower bound",
    "model": "how many training records of the uploaded model an attacker with reference models can pick out",
    "dp-audit": "whether one DP-SGD training run with canaries disproves a claimed (epsilon, delta): a lower bound on "
    "epsilon, never a proof of the claim",
    "dp-audit-model": "whether an uploaded model's own canaries disprove its claimed (epsilon, delta): a lower bound on "
    "epsilon, never a proof of the claim",
}

_CANNOT = (
    "It tests the attacks it names, at this sample size: a stronger attacker, other columns or other auxiliary data may "
    "find more. Passing this audit does not prove anonymity, and it is no differential-privacy guarantee."
)


def regulation_rows(audit_name: str, decision: Any) -> list[dict[str, str]]:
    """One row per framework: what it asks, what this audit shows (with its level), what it cannot show."""
    shows = _SHOWS.get(audit_name, "the attacks of this audit")
    level = decision.level if decision is not None else "n/a"
    finding = f"This audit measures {shows}. Level: {level}: {decision.headline}" if decision is not None else shows
    rows = []
    for name, asks in FRAMEWORKS:
        row = {"framework": name, "asks": asks, "this audit shows": finding, "it cannot show": _CANNOT}
        if name.startswith("Article 29") and audit_name != "tabular":
            row["this audit shows"] = f"Membership only ({shows}); singling out, linkability and inference are tested " \
                                      "on synthetic tables (tabular --disclosure). Level: " + level
        if name.startswith("GDPR"):
            row["this audit shows"] = finding + (" Measures: " + " ".join(decision.next_steps) if decision is not None
                                                 and decision.next_steps else "")  # fmt: skip
        rows.append(row)
    return rows
