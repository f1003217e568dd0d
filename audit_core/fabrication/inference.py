"""Running a model on images in batches: logits (:func:`predict_logits`) and the batch slices the attacks and
gradient norms walk (:func:`batch_slices`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypeAlias

import numpy as np
import torch
from torch import nn

__all__ = ["Device", "batch_slices", "model_device", "predict_logits"]

Device: TypeAlias = torch.device | str | None
"""Where a model runs or is trained: a torch device, its name, or None (:func:`audit_core.common.runtime.pick_device`)."""


def model_device(model: nn.Module) -> torch.device:
    """Where ``model`` runs: the device of its first parameter or buffer, else the CPU (a frozen TorchScript
    model keeps its weights as constants and has neither)."""
    for tensor in (*model.parameters(), *model.buffers()):
        return tensor.device
    return torch.device("cpu")


def batch_slices(n: int, size: int) -> Iterator[slice]:
    """Consecutive slices of at most ``size`` over ``range(n)``."""
    for i in range(0, n, size):
        yield slice(i, min(i + size, n))


@torch.no_grad()
def predict_logits(model: nn.Module, images: np.ndarray | torch.Tensor, *, batch_size: int = 2048) -> torch.Tensor:
    """Logits of ``model`` on ``images`` in batches (on the model's device)."""
    device = model_device(model)
    x = torch.as_tensor(images)
    outs = [model(x[i : i + batch_size].to(device)) for i in range(0, x.shape[0], batch_size)]
    return torch.cat(outs).float()
