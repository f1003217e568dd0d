"""LiRA's choice lists, defined once (the settings' knobs and the trainer read them; no torch import here)."""

from typing import Literal, get_args

__all__ = ["MODEL_TYPES", "ModelType"]

ModelType = Literal["logistic", "mlp"]
"""A model family LiRA's batched trainer trains (audit_core.lira.training)."""

MODEL_TYPES: tuple[ModelType, ...] = get_args(ModelType)
"""The model families, in the order the page and ``--model`` offer them."""
