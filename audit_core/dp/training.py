"""DP-SGD through Opacus (per-sample clipping, Gaussian noise from its RDP accountant), and the same model without DP.

Both models are logistic regression or a one-hidden-layer MLP (:data:`_HIDDEN` units) on the
features of :func:`audit_core.lira.design.prepare_design`, trained by SGD with the
same learning rate, batch size and epochs. The DP model samples each batch by Poisson
sampling at rate ``batch_size / n`` (Opacus' DPDataLoader), clips every per-sample gradient
to norm :data:`MAX_GRAD_NORM` and adds Gaussian noise whose multiplier Opacus' RDP
accountant chooses so that the run is (epsilon, delta)-DP after ``epochs`` epochs; the
accountant's own epsilon for the steps taken is reported beside the claim. The contrast
takes shuffled batches and neither clips nor adds noise. Every draw is seeded.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
import torch

from audit_core.common.errors import InputError
from audit_core.dp.whitebox import (
    AuditWeights,
    GradientCanaries,
    WithAuditWeights,
    canary_sampler,
    canary_steps,
    insert_canaries,
)
from audit_core.lira.batched_models import logit_confidence

__all__ = ["BATCH_SIZE", "MAX_GRAD_NORM", "TrainedModel", "train"]

_HIDDEN = 64
BATCH_SIZE = 256
MAX_GRAD_NORM = 1.0
_LEARNING_RATE = {"logistic": 1.0, "mlp": 0.5}
"""SGD steps; clipped gradients (norm <= 1, averaged over the expected batch) are small, so the steps are large."""

_OPACUS_NOTICES = (
    "Secure RNG turned off",  # seeded generators are what makes a run reproducible
    "Full backward hook is firing",  # the inputs need no gradient
    "Optimal order is the (largest|smallest) alpha",  # the RDP bound stays valid, only less tight
)


@dataclass
class TrainedModel:
    """One trained classifier and how it was trained.

    Attributes
    ----------
    module : torch.nn.Module
        The network (logits over the classes), in eval mode.
    noise_multiplier, accountant_epsilon : float or None
        The DP-SGD noise multiplier and the accountant's epsilon at the claimed delta (None without DP).
    steps : int
        Optimiser steps taken.
    """

    module: torch.nn.Module
    noise_multiplier: float | None
    accountant_epsilon: float | None
    steps: int
    sample_rate: float | None = None
    """Opacus' Poisson sampling rate (None without DP)."""
    gradient_canary_steps: np.ndarray | None = None
    """``(T, m)`` the gradient canaries' per-step values (:func:`audit_core.dp.whitebox.canary_steps`), when there were any."""

    def logits(self, X: np.ndarray) -> torch.Tensor:
        device = next(self.module.parameters()).device
        with torch.no_grad():
            return self.module(torch.as_tensor(X, dtype=torch.float32, device=device)).cpu()

    def scores(self, X: np.ndarray, y: np.ndarray) -> np.ndarray:
        """LiRA's score ``log(p_y / (1 - p_y))`` of each row's label (higher = more likely trained on)."""
        return logit_confidence(self.logits(X), torch.as_tensor(y, dtype=torch.long)).double().numpy()

    def accuracy(self, X: np.ndarray, y: np.ndarray) -> float:
        return float((self.logits(X).argmax(1).numpy() == np.asarray(y)).mean()) if len(y) else float("nan")


class _Rows(torch.utils.data.Dataset):
    """A table as one batch per index list (``__getitems__``: no per-row Python work)."""

    def __init__(self, X: torch.Tensor, y: torch.Tensor) -> None:
        self.X, self.y = X, y

    def __len__(self) -> int:
        return len(self.y)

    def __getitem__(self, i: int):
        return self.X[i], self.y[i]

    def __getitems__(self, idx: list[int]):
        rows = torch.as_tensor(idx, dtype=torch.long, device=self.X.device)
        return [self.X[rows], self.y[rows]]


def _as_batch(batch):
    return batch


def _network(kind: str, d: int, k: int, gen: torch.Generator) -> torch.nn.Module:
    """Logistic regression or an MLP, weights uniform in +-1/sqrt(fan_in) from ``gen``."""
    layers = [torch.nn.Linear(d, k)] if kind == "logistic" else [torch.nn.Linear(d, _HIDDEN), torch.nn.ReLU(),
                                                                  torch.nn.Linear(_HIDDEN, k)]  # fmt: skip
    net = torch.nn.Sequential(*layers)
    with torch.no_grad():
        for layer in net:
            if isinstance(layer, torch.nn.Linear):
                b = 1.0 / math.sqrt(layer.in_features)
                for p in (layer.weight, layer.bias):
                    p.copy_((torch.rand(p.shape, generator=gen, dtype=torch.float64) * 2 - 1) * b)
    return net


def train(
    X: np.ndarray,
    y: np.ndarray,
    *,
    n_classes: int,
    model: str = "logistic",
    epochs: int = 10,
    dp: tuple[float, float] | None = None,
    gradient_canaries: GradientCanaries | None = None,
    seed: int = 0,
    device: torch.device | str = "cpu",
) -> TrainedModel:
    """Train one classifier; with ``dp = (epsilon, delta)`` by DP-SGD at that budget, else plain SGD.

    With ``gradient_canaries`` (DP only) the network gets :class:`~audit_core.dp.whitebox.AuditWeights`
    and the canaries join each step as :mod:`audit_core.dp.whitebox` describes; their scores
    come back in ``gradient_scores``.

    Raises
    ------
    InputError
        When the budget cannot be met (Opacus finds no noise multiplier) or training diverges.
    """
    gen = torch.Generator().manual_seed(seed)
    net = _network(model, X.shape[1], n_classes, gen).to(device)
    audit = None
    if gradient_canaries is not None and dp is not None:
        audit = AuditWeights(gradient_canaries.width(), n_classes).to(device)
        net = WithAuditWeights(net, audit)
    data = _Rows(torch.as_tensor(X, dtype=torch.float32, device=device), torch.as_tensor(y, dtype=torch.long,
                                                                                           device=device))  # fmt: skip
    loader_gen = torch.Generator().manual_seed(seed + 1)
    batch = min(BATCH_SIZE, max(1, len(data) // 4))
    loader = torch.utils.data.DataLoader(data, batch_size=batch, shuffle=dp is None, generator=loader_gen,
                                         collate_fn=_as_batch)  # fmt: skip
    optimizer = torch.optim.SGD(net.parameters(), lr=_LEARNING_RATE[model])
    noise = accountant_epsilon = None
    with warnings.catch_warnings():
        for notice in _OPACUS_NOTICES:
            warnings.filterwarnings("ignore", message=notice)
        if dp is not None:
            from opacus import PrivacyEngine

            engine = PrivacyEngine(accountant="rdp")
            noise_gen = torch.Generator(device=device).manual_seed(seed + 2)
            try:
                net, optimizer, loader = engine.make_private_with_epsilon(
                    module=net, optimizer=optimizer, data_loader=loader, target_epsilon=dp[0], target_delta=dp[1],
                    epochs=epochs, max_grad_norm=MAX_GRAD_NORM, noise_generator=noise_gen,
                )  # fmt: skip
            except ValueError:  # opacus: "The privacy budget is too low."
                raise InputError(f"DP-SGD cannot reach epsilon {dp[0]:g} at delta {dp[1]:g} in {epochs} "
                                 f"epoch{'s' * (epochs > 1)}: Opacus' accountant finds no noise large enough for so "
                                 "small a budget; claim a larger epsilon or delta, or train fewer epochs.") from None  # fmt: skip
            noise = float(optimizer.noise_multiplier)
        loss_fn = torch.nn.CrossEntropyLoss()
        steps = 0
        net.train()
        sample_rate = float(loader.sample_rate) if dp is not None else None  # type: ignore[attr-defined]
        canaries = gradient_canaries
        if audit is not None:
            assert canaries is not None
            assert sample_rate is not None
            where = (torch.as_tensor(canaries.rows), torch.as_tensor(canaries.columns))
            trajectory = [audit.linear.weight.detach()[where].double().cpu().numpy()]
            insert_canaries(optimizer, audit.linear.weight, canaries, canary_sampler(canaries, sample_rate),
                            clip=MAX_GRAD_NORM)  # fmt: skip
        for _ in range(epochs):
            for xb, yb in loader:
                optimizer.zero_grad()
                loss = loss_fn(net(xb), yb)
                loss.backward()
                optimizer.step()
                steps += 1
                if audit is not None:
                    trajectory.append(audit.linear.weight.detach()[where].double().cpu().numpy())
            if not math.isfinite(float(loss.detach())):
                raise InputError("Training diverged (the loss became infinite or NaN); check the table's features.")
        per_step = None
        if dp is not None:
            accountant_epsilon = float(engine.get_epsilon(dp[1]))
            net.remove_hooks()  # type: ignore[operator]  # GradSampleModule.remove_hooks; torch's stubs type attributes as Tensor
            net = net._module  # type: ignore[assignment]  # the plain network inside Opacus' GradSampleModule
            if audit is not None:
                assert gradient_canaries is not None
                per_step = canary_steps(np.vstack(trajectory), learning_rate=_LEARNING_RATE[model], clip=MAX_GRAD_NORM,
                                        expected_batch=float(optimizer.expected_batch_size))  # type: ignore[attr-defined]
                net = net.net  # type: ignore[assignment]  # the network without its audit weights (they add 0)
    net.eval()
    return TrainedModel(module=net, noise_multiplier=noise, accountant_epsilon=accountant_epsilon, steps=steps,
                        sample_rate=sample_rate, gradient_canary_steps=per_step)  # fmt: skip
