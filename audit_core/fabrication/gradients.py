"""What the audited model's loss says about an image: its input-gradient norm (the MFD statistic) and its
true-class confidence (docs/methods.md §3)."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from audit_core.fabrication.inference import batch_slices, model_device

__all__ = ["input_gradient_norms", "true_class_stats"]


def input_gradient_norms(
    model: nn.Module, images: np.ndarray | torch.Tensor, labels: np.ndarray, *, batch_size: int = 1024
) -> np.ndarray:
    """Per-image L2 norm of ``grad_x CE(f(x), y)`` — the MFD statistic (docs/methods.md §3).

    The model must be in eval mode (no batch statistics), so the gradient of the summed
    loss gives every image its own gradient.
    """
    device = model_device(model)
    x_all = torch.as_tensor(images)
    y_all = torch.as_tensor(labels)
    out = []
    for sl in batch_slices(x_all.shape[0], batch_size):
        x = x_all[sl].to(device).requires_grad_(True)
        loss = nn.functional.cross_entropy(model(x), y_all[sl].to(device), reduction="sum")
        (g,) = torch.autograd.grad(loss, x)
        out.append(g.flatten(1).norm(dim=1).detach().cpu())
    return torch.cat(out).double().numpy()


def true_class_stats(logits: torch.Tensor, labels: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """(confidence p_y, logit-scaled confidence log p_y - log(1 - p_y)) computed stably."""
    logits = logits.double()
    z_y = logits.gather(1, labels[:, None]).squeeze(1)
    others = logits.scatter(1, labels[:, None], -torch.inf)
    phi = z_y - torch.logsumexp(others, dim=1)
    conf = torch.sigmoid(phi)
    return conf.cpu().numpy(), phi.cpu().numpy()
