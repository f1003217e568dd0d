"""Every technical term the pages and reports use, in one plain sentence each (issue 18.4).

The pages take their tooltips from :data:`TERMS` (``ui.decision.glossary_expander`` and the
widgets' help) and every report ends with the terms it uses (:func:`terms_in`), so the
dashboard and the signed document explain a word the same way.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["TERMS", "terms_in"]

TERMS: dict[str, str] = {
    "membership inference": "Guessing whether a given person's record was in the data a model or generator was trained on.",
    "member": "A record that was in the training data (for a synthetic table: the table the generator was fitted on).",
    "non-member": "A record of the same population that was not in the training data (the holdout): the control group.",
    "holdout": "Real records kept out of training; attacks must not do better on members than on them.",
    "auxiliary data": "Real records from the same population that the attacker is assumed to hold, none of them members.",
    "Gower distance": "A distance between two records with mixed columns: the average over columns of 0/1 for "
    "categories and |difference| / range for numbers (0 = identical, 1 = as different as possible).",
    "verbatim copy": "A synthetic row equal to a real record on every compared column: it publishes that record.",
    "near-copy": "A synthetic row that equals a real record except for one or two slightly changed values.",
    "record linkage": "Matching records across tables by the columns on which they agree, rare agreements weighing "
    "more (Fellegi-Sunter agreement weights).",
    "KDE": "Kernel density estimate: a smooth histogram of distances, one for members and one for non-members.",
    "KDE bandwidth": "How much the KDE smooths: smaller follows the data closely, larger gives smoother curves.",
    "P(member | d)": "The attack's membership probability for a record at distance d, from the two KDEs and the prior.",
    "prior": "The share of members the attacker assumes among the records it scores (0.5: as many members as not).",
    "true-distribution attack": "An upper bound: an attacker who knows how members' and non-members' distances are "
    "distributed (fitted on the real labels, cross-fitted so no record scores itself).",
    "realistic attack": "An attacker who holds only auxiliary data and treats its closest records as pseudo-members.",
    "DOMIAS": "A density-ratio attack (van Breugel et al., 2023): records much closer to the synthetic table than to "
    "the auxiliary data are called members; it finds uncommon records that were copied.",
    "learned attacker": "An attack that learns, from some known members and non-members, what sets members apart in "
    "the synthetic table (distances, agreement with the best match, density ratio) with a gradient-boosting classifier.",
    "cross-fitting": "Scoring each record with a model fitted on the other records only, so no record's own label "
    "shapes its score: the scores are an honest test of the attack.",
    "shadow-generator attack": "An attack that re-runs the generator on shadow training sets with and without a target "
    "record and learns what the target's presence changes in the output (Stadler et al., 2022; Meeus et al., 2023).",
    "told apart": "A target record is told apart when the shadow attack's exact permutation test, corrected for the "
    "number of targets (Holm), says the attacker can tell whether it was in the training data (5 % level).",
    "Method 1": "The baseline attack: a record is a member when its distance to the synthetic table is below a threshold.",
    "AUC": "Area under the ROC curve: 0.5 is guessing, 1.0 perfect; it averages over all records and hides a few "
    "exposed ones.",
    "TPR at FPR": "The share of members an attack flags (true positive rate) when it wrongly flags a given small share "
    "of non-members (false positive rate), e.g. 1 %: the number that shows whether some people are exposed.",
    "log-ROC": "The ROC curve on log axes, so the low false-positive rates where individuals are exposed are visible.",
    "95 % interval": "The range that covers the true value in 95 % of audits like this one; a wide range means too "
    "few records to be sure.",
    "Fisher exact test": "A test of whether members are copied (or near-copied) more often than non-members beyond "
    "what chance explains; a small p-value means they are.",
    "p-value": "How often chance alone would give a result at least this extreme; below 0.05 (or 0.01) counts as evidence.",
    "epsilon lower bound": "The largest differential-privacy epsilon that the scores prove is violated, with 95 % "
    "confidence: the process is not epsilon-DP for any smaller epsilon. 0 proves nothing; above 1 is more privacy "
    "loss than strong DP allows; most DP models claim 10 or less.",
    "ceiling": "The largest epsilon lower bound these records could show even with a perfect attack (every guess "
    "right): a claim above it cannot be disproved by this audit, and a small bound from few records is not 'private'.",
    "canary": "A record the audit plants in the training data with probability 1/2 (a fair coin, before training), so "
    "that guessing which canaries were trained on measures the privacy loss.",
    "DP-SGD": "Differentially private stochastic gradient descent: each record's gradient is clipped and noise is "
    "added, so that the trained model is (epsilon, delta)-DP.",
    "delta": "The small probability with which an (epsilon, delta)-DP guarantee may fail; usually below 1 / (number "
    "of records), e.g. 1e-5.",
    "accountant": "The calculation (here Opacus' RDP accountant) that turns DP-SGD's noise, sampling rate and steps "
    "into the epsilon the training claims.",
    "one-run test": "Steinke, Nasr and Jagielski's audit (NeurIPS 2023): one training run with m canaries; how many "
    "membership guesses are right bounds epsilon from below.",
    "inconclusive": "A decision level: the data cannot measure what the decision rests on (too few non-members for "
    "the FPR, or a DP audit whose model without DP passes too); add what the decision says, then audit again.",
    "times chance": "A TPR at a false-positive rate divided by that rate: chance flags members exactly as often as "
    "non-members (1 times chance), so '11 times chance' means an attack flags 11 times as many members.",
    "fidelity": "Whether the reference models behave like the audited model (train and test accuracy within 0.1): "
    "RMIA and LiRA are only as strong as that likeness.",
    "utility": "How faithful a synthetic table is to the training table (SDMetrics' quality report: column shapes and "
    "pairs), 0 to 1, higher is more faithful.",
    "differential privacy": "A guarantee that any one person's record changes what is released only a little, "
    "measured by epsilon (smaller is more private).",
    "singling out": "Isolating one person's record by a combination of values (Article 29 WP Opinion 05/2014).",
    "linkability": "Linking two records of the same person held in different places (Article 29 WP Opinion 05/2014).",
    "inference": "Deducing a secret value of a person from the released data (Article 29 WP Opinion 05/2014).",
    "LiRA": "Likelihood-ratio attack (Carlini et al., 2022): compares a record's score on the audited model with its "
    "scores on reference models trained with and without it.",
    "per-sample FPR": "How often one particular non-member is wrongly accused: the calibrated rules hold it near "
    "alpha for every record, the naive rule only on average.",
    "PP / post-processed": "The calibrated LiRA rule: each record's threshold is set from its own out-scores, so every "
    "record's FPR is about alpha.",
    "Student-t threshold": "The per-record threshold from a Student-t quantile instead of a Gaussian one: it allows for "
    "the few out-scores each record has.",
    "finite-population correction": "The correction for auditing members drawn from a finite population: the "
    "per-sample average counts each record once.",
    "alpha": "The per-record false-positive rate the calibrated rules hold (e.g. 0.01: one non-member in 100 accused).",
    "reference models": "Models trained by the audit on data like the target's, to learn how a record scores when it "
    "is and is not in training.",
    "MFA": "Member fabrication attack: small changes to a non-member's image that make a membership test call it a member.",
    "MFD": "Member fabrication detection: fabricated members have collapsed gradient norms, so they can be told apart "
    "from real members.",
    "AR-MIA": "Adversarially robust membership inference: a membership score that also penalises a collapsed gradient "
    "norm, so fabricated members no longer pass.",
    "lambda": "AR-MIA's weight on the gradient-norm penalty: 0 is the plain attack, larger resists fabrication more.",
    "epsilon (perturbation)": "The largest change the fabrication attack may make to each pixel (e.g. 16/255).",
    "RMIA": "Robust membership inference (Zarifzadeh et al., 2024): compares a record's likelihood ratio against "
    "population records; strong with one or two reference models.",
    "LOSS attack": "The simplest membership attack: records on which the model's loss is low are called members.",
    "reference family": "The kind of model the audit trains as reference models (logistic regression, MLP, boosted "
    "trees, random forest, extra trees); 'auto' trains each and keeps the one that behaves most like the audited model.",
    "fidelity distance": "How unlike the audited model a family's reference models behave: the gaps in train and test "
    "accuracy plus the differences between their loss distributions (0 = alike), on records no attack scores.",
    "supervised attack": "An attacker who knows some members and non-members trains a classifier on the model's outputs "
    "to tell them apart (ART's black-box attack); each record is scored by a classifier that never saw it.",
}
"""Term -> one plain sentence."""


def terms_in(text: str | Iterable[str]) -> dict[str, str]:
    """The glossary entries whose term occurs in ``text`` (case-insensitive), in glossary order."""
    body = (text if isinstance(text, str) else " ".join(text)).lower()
    return {term: line for term, line in TERMS.items() if term.lower() in body}
