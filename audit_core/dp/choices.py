"""The DP claim check's choice lists, defined once (the settings' knobs and the audit read them; no torch import here)."""

__all__ = ["CANARY_KINDS", "INCLUDED_COLUMN", "MODEL_TYPES", "REPORTING_RULE", "WHITE_BOX_STATISTICS"]

MODEL_TYPES = ("logistic", "mlp")
"""The models DP-SGD trains (audit_core.dp.training)."""
CANARY_KINDS = ("population", "mislabelled", "outlier")
"""population: records of the table as they are; mislabelled: records given another class; outlier: mislabelled and
moved off the data (audit_core.dp.canaries)."""
INCLUDED_COLUMN = "included"
"""The default name of a canary file's inclusion column (audit_core.dp.uploaded)."""
WHITE_BOX_STATISTICS = ("sum", "likelihood-ratio")
"""The white-box score of a gradient canary (audit_core.dp.whitebox.canary_scores), chosen before the run."""
REPORTING_RULE = ("the f-DP bound against the claimed mechanism's trade-off curve when the claim names its mechanism "
                  "(DP-SGD: noise multiplier, sampling rate, steps), Steinke et al.'s bound for a bare (epsilon, delta) "
                  "claim; the other is shown, never used for the decision")
"""Which of the two one-run bounds is reported, fixed before any score is seen (audit_core.dp.bounds, docs/methods.md §9)."""
