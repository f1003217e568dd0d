"""The DP claim check's choice lists, defined once (the settings' knobs and the audit read them; no torch import here)."""

__all__ = ["CANARY_KINDS", "INCLUDED_COLUMN", "MODEL_TYPES"]

MODEL_TYPES = ("logistic", "mlp")
"""The models DP-SGD trains (audit_core.dp.training)."""
CANARY_KINDS = ("population", "mislabelled")
"""population: records of the table as they are; mislabelled: records given another class (audit_core.dp.canaries)."""
INCLUDED_COLUMN = "included"
"""The default name of a canary file's inclusion column (audit_core.dp.uploaded)."""
