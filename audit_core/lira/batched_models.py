"""M trained classifiers held as stacked tensors, their forward pass, and the LiRA score (docs/methods.md §2).

:class:`BatchedModels` is what :func:`audit_core.lira.training.train_batched` returns: M
logistic regressions or M one-hidden-layer MLPs evaluated together on shared inputs.
:func:`logit_confidence` is the LiRA score ``log(p_y / (1 - p_y))``, computed stably
(the DP claim check scores its models with it too).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from audit_core.lira.choices import ModelType

__all__ = ["BatchedModels", "forward", "logit_confidence"]


def logit_confidence(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """LiRA score ``log(p_y / (1 - p_y))`` from logits, without forming p (docs/methods.md §2).

    Parameters
    ----------
    logits : torch.Tensor
        ``(..., n, 1)`` for a binary model (logit of class 1) or ``(..., n, K)``.
    y : torch.Tensor
        ``(n,)`` class indices.

    Returns
    -------
    torch.Tensor
        ``(..., n)``; higher = more confident in the true label.
    """
    if logits.shape[-1] == 1:
        z = logits[..., 0]
        return torch.where(y.bool(), z, -z)
    idx = y.view(*([1] * (logits.dim() - 2)), -1, 1).expand(*logits.shape[:-1], 1)
    z_y = logits.gather(-1, idx)[..., 0]
    others = logits.scatter(-1, idx, float("-inf"))
    return z_y - torch.logsumexp(others, dim=-1)


def forward(kind: ModelType, p: dict[str, torch.Tensor], X: torch.Tensor) -> torch.Tensor:
    """Shared-input forward pass of M models: X ``(n, d)`` -> logits ``(M, n, k)``."""
    if kind == "logistic":
        return torch.einsum("nd,mdk->mnk", X, p["W"]) + p["b"]
    h = torch.relu(torch.einsum("nd,mdh->mnh", X, p["W1"]) + p["b1"])
    return torch.bmm(h, p["W"]) + p["b"]


@dataclass(frozen=True)
class BatchedModels:
    """M trained classifiers held as stacked tensors.

    Attributes
    ----------
    kind : {"logistic", "mlp"}
    params : dict[str, torch.Tensor]
        Logistic: ``W (M, d, k)``, ``b (M, 1, k)``. MLP: also ``W1, b1`` for the hidden
        layer. ``k`` = 1 for binary targets (logit of class 1), else the number of classes.
    n_iterations : int
        L-BFGS iterations or Adam epochs run.
    final_loss : np.ndarray
        ``(M,)`` training objective of each model at the end.
    """

    kind: ModelType
    params: dict[str, torch.Tensor] = field(repr=False)
    n_iterations: int
    final_loss: np.ndarray

    @property
    def n_models(self) -> int:
        """M, the number of models."""
        return int(self.params["W"].shape[0])

    def logits(self, X: torch.Tensor | np.ndarray, *, chunk: int = 4096) -> torch.Tensor:
        """Logits of every model on every row, ``(M, n, k)``."""
        Xt = torch.as_tensor(X, device=self.params["W"].device, dtype=self.params["W"].dtype)
        with torch.no_grad():
            out = [forward(self.kind, self.params, Xt[i : i + chunk]) for i in range(0, len(Xt), chunk)]
        return torch.cat(out, dim=1)

    def scores(self, X: np.ndarray, y: np.ndarray) -> np.ndarray:
        """LiRA scores ``(M, n)`` float64 (see :func:`logit_confidence`)."""
        z = self.logits(X)
        yt = torch.as_tensor(y, device=z.device)
        return logit_confidence(z, yt).double().cpu().numpy()

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Predicted class index ``(M, n)``."""
        z = self.logits(X)
        if z.shape[-1] == 1:
            return (z[..., 0] > 0).long().cpu().numpy()
        return z.argmax(-1).cpu().numpy()
