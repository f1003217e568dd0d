"""A threat card for every test (issue 18.4): who the attacker is, what the number measures, which way is good.

One card per attack or test of each audit, keyed by the audit's registry name. The pages show
them (``ui.decision.threat_cards``) and every report has them as a table (the contract adds
it), so a stakeholder reads the same plain words in both places.
"""

from __future__ import annotations

__all__ = ["CARD_COLUMNS", "cards_for"]

CARD_COLUMNS = ("test", "the attacker knows", "the number measures", "good is", "if it is bad")

_COPY = ("the synthetic table", "synthetic rows equal to a real record, by real table", "0 copies of real records",
         "remove the copied rows and regenerate with stronger privacy settings")
_NEAR = ("the synthetic table and population data like the training data",
         "training records with a synthetic row within a few changed values, against non-members",
         "no more near-copies of members than of non-members", "suppress near-copies or regenerate with stronger privacy")
_MEMBERSHIP = ("the synthetic table and, for the upper bound, how members' and non-members' distances are distributed",
               "the share of training records it flags (TPR) while wrongly flagging 1 % of non-members",
               "TPR near 1 % (chance), AUC near 0.5", "regenerate with stronger privacy settings; drop the exposed records")

_SHADOW = ("Shadow-generator attack", "the generator and its settings, and population data like the training data "
           "(it re-runs the generator on shadow training sets with and without each target)",
           "how many of the most unusual training records it tells apart (per record: AUC over the shadow outputs, "
           "exact permutation test, Holm over the records)", "nobody told apart; AUCs near 0.5",
           "regenerate with stronger privacy settings, or coarsen the exposed records' unusual values")

_THREAT_CARDS: dict[str, tuple[tuple[str, str, str, str, str], ...]] = {
    "tabular": (
        ("Verbatim copies", *_COPY),
        ("Near-copies (distance and record linkage)", *_NEAR),
        ("True-distribution KDE (upper bound)", *_MEMBERSHIP),
        ("Realistic KDE", "the synthetic table and auxiliary records of the population", _MEMBERSHIP[1], _MEMBERSHIP[2],
         _MEMBERSHIP[3]),
        ("DOMIAS density ratio", "the synthetic table and auxiliary records", "whether uncommon records that sit closer "
         "to the synthetic table than to the population were members", _MEMBERSHIP[2], _MEMBERSHIP[3]),
        ("Learned attacker", "the synthetic table and some members and non-members, whose pattern it learns (distances "
         "to the nearest synthetic rows, agreement with the best match, density ratio)", "the share of the other "
         "training records it flags while wrongly flagging 1 % of non-members (each record scored by a model that "
         "never saw it)", _MEMBERSHIP[2], _MEMBERSHIP[3]),
        ("Singling out, linkability, inference (--disclosure)", "some columns of a target person",
         "excess success on training records over the control (holdout) records", "risk 0 or below (interval touching 0)",
         "suppress or coarsen the columns the attack uses"),
    ),
    "compare": (("Each generator's audit", *_MEMBERSHIP[:1], "the tabular audit's findings per generator, beside its "
                 "fidelity", "the generator with no finding and the highest fidelity", "pick a safer generator or "
                 "raise its privacy setting"), _SHADOW),
    "shadow": (_SHADOW,),
    "lira": (
        ("Calibrated LiRA", "the model's output on a record and reference models trained with and without it",
         "the share of training records flagged at a per-record false-positive rate alpha", "TPR near alpha",
         "train with regularisation or DP-SGD; release coarser outputs"),
        ("Naive LiRA", "the same", "the same, with one pooled threshold: its per-record FPR varies",
         "compare it with the calibrated number", "report the calibrated number, not the naive one"),
    ),
    "fabrication": (
        ("Member fabrication (MFA)", "the model's weights and a non-member image it may perturb by epsilon",
         "how far the MIA's AUC drops when fabricated non-members pose as members", "no drop",
         "do not accept MIA claims as evidence without MFD / AR-MIA"),
        ("MFD / AR-MIA", "claimed members' images and the model", "whether fabricated members are told apart (AUC)",
         "AUC near 1", "screen claimed members with MFD; use AR-MIA"),
    ),
    "scores": (("Any scored attack", "whatever the tool that made the scores assumed",
                "TPR at low FPR and the epsilon the scores prove", "TPR near the FPR; epsilon 0",
                "retrain with stronger privacy settings and score again"),),
    "model": (
        ("LOSS", "the model's output on a record", "TPR at 1 % FPR of 'low loss = member'", "TPR near 1 %",
         "regularise the model or train it with DP-SGD"),
        ("RMIA / LiRA", "the model's output and reference models trained on population data",
         "TPR at 1 % FPR against population records", "TPR near 1 %", "regularise or train with DP-SGD; audit again"),
        ("Reference family (auto)", "how models of each family behave on population data",
         "which family's reference models behave most like the model (fidelity distance), chosen before any attack",
         "a small distance: the reference-model attacks are as strong as they can be here",
         "give a larger population table, or a file that carries the model's hyper-parameters (skops)"),
        ("Supervised (ART's black-box attack)", "some members and non-members, and the model's outputs on them",
         "TPR at 1 % FPR of a classifier trained on known members, each record scored by one that never saw it",
         "TPR near 1 %", "regularise or train with DP-SGD; audit again"),
    ),
    "dp-audit": (("One-run audit", "which canaries were included, and the model", "the epsilon the canaries prove, "
                  "against the claimed epsilon", "a bound below the claim (this does not prove the claim)",
                  "a bound above the claim disproves it: fix the DP training or the accounting"),),
    "dp-audit-model": (("One-run audit of an uploaded model", "the team's canary file (which canaries were included, "
                        "by a fair coin each) and the model", "the epsilon the canaries prove, against the claimed "
                        "epsilon", "a bound below the claim (this does not prove the claim)",
                        "a bound above the claim disproves it: fix the DP training or the accounting"),),
}
"""Audit name -> its tests' cards (each in the order of :data:`CARD_COLUMNS`)."""


def cards_for(audit_name: str) -> list[dict[str, str]]:
    """The cards of one audit as rows (``CARD_COLUMNS`` as keys); none for an audit without cards."""
    return [dict(zip(CARD_COLUMNS, card, strict=True)) for card in _THREAT_CARDS.get(audit_name, ())]
