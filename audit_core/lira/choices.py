"""LiRA's choice lists, defined once (the settings' knobs and the trainer read them; no torch import here)."""

__all__ = ["MODEL_TYPES"]

MODEL_TYPES = ("logistic", "mlp")
"""The model families LiRA's batched trainer trains (audit_core.lira.batched_models)."""
