"""Training image models: one target or M reference models as *one* batched computation
(``torch.func.vmap`` over stacked parameters), with batch-norm statistics recalibrated on each model's own images."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from audit_core.common.runtime import ProgressFn, as_progress, pick_device
from audit_core.fabrication.architectures import make_model
from audit_core.fabrication.inference import Device
from audit_core.fabrication.threads import cpu_threads

__all__ = ["TrainConfig", "train_models"]


@dataclass(frozen=True)
class TrainConfig:
    """How the bundled target and reference models are trained.

    Label smoothing keeps members' confidence below 1 so that their input-gradient
    norms stay moderate (the regime where MFD works, docs/methods.md §3 trial notes).
    """

    epochs: int = 30
    batch_size: int = 64
    lr: float = 2e-3
    weight_decay: float = 5e-4
    label_smoothing: float = 0.1


@cpu_threads()
def train_models(
    images: np.ndarray,
    labels: np.ndarray,
    subsets: np.ndarray,
    *,
    n_classes: int,
    config: TrainConfig = TrainConfig(),
    arch: str = "small_cnn",
    seed: int,
    device: Device = None,
    progress: ProgressFn | None = None,
) -> list[nn.Module]:
    """Train one model of architecture ``arch`` per row of ``subsets`` (a boolean (M, n) mask), all as one batch.

    The M models share nothing but the computation: parameters and buffers are stacked
    and the forward/backward pass is ``torch.func.vmap``-ed, each model drawing its own
    minibatches of equal size from its own subset (a ResNet-18's batch-norm statistics
    are each model's own too).

    Returns
    -------
    list of nn.Module
        Models of ``arch`` (:func:`~audit_core.fabrication.architectures.make_model`), in eval mode, on ``device``.
    """
    from torch.func import stack_module_state

    progress = as_progress(progress)
    progress(0.0, "starting")
    device = device or pick_device()
    subsets = np.atleast_2d(np.asarray(subsets, dtype=bool))
    build = functools.partial(make_model, arch, in_channels=images.shape[1], n_classes=n_classes)
    params, buffers = stack_module_state(_initial_models(build, subsets.shape[0], seed=seed, device=device))
    x_all = torch.as_tensor(images, device=device)
    y_all = torch.as_tensor(labels, device=device)
    rows = [np.flatnonzero(s) for s in subsets]
    _fit(build().to("meta").train(), params, buffers, x_all, y_all, rows, config=config, rng=np.random.default_rng(seed),
         progress=progress)  # fmt: skip
    out = []
    for k, own in enumerate(rows):
        model = build().to(device)
        model.load_state_dict({name: t[k].detach().clone() for name, t in (params | buffers).items()})
        _recalibrate_batch_norm(model, x_all[torch.as_tensor(own, device=device)])
        out.append(model.eval())
    return out


def _initial_models(build: Callable[[], nn.Module], m: int, *, seed: int, device: Device) -> list[nn.Module]:
    """``m`` freshly initialised models in training mode, each from its own seed drawn from ``seed``."""
    gen = torch.Generator().manual_seed(seed)
    models = []
    for _ in range(m):
        torch.manual_seed(int(torch.randint(0, 2**31 - 1, (1,), generator=gen)))
        models.append(build().to(device).train())
    return models


def _fit(
    base: nn.Module,
    params: dict[str, torch.Tensor],
    buffers: dict[str, torch.Tensor],
    x_all: torch.Tensor,
    y_all: torch.Tensor,
    rows: list[np.ndarray],
    *,
    config: TrainConfig,
    rng: np.random.Generator,
    progress: ProgressFn,
) -> None:
    """Train the stacked ``params`` (and ``buffers``) in place: AdamW with a one-cycle schedule on every model's
    cross-entropy at once (``torch.vmap`` over ``base``), each model drawing equal minibatches from its own ``rows``."""
    from torch.func import functional_call

    steps_per_epoch = max(1, int(np.ceil(min(len(r) for r in rows) / config.batch_size)))
    opt = torch.optim.AdamW(params.values(), lr=config.lr, weight_decay=config.weight_decay)
    total = config.epochs * steps_per_epoch
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=config.lr, total_steps=total, pct_start=0.15)

    def loss_one(p: dict[str, torch.Tensor], b: dict[str, torch.Tensor], x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        out = functional_call(base, (p, b), (x,))
        return nn.functional.cross_entropy(out, y, label_smoothing=config.label_smoothing)

    vloss = torch.vmap(loss_one, in_dims=(0, 0, 0, 0))
    for epoch in range(config.epochs):
        perms = [rng.permutation(r) for r in rows]
        for s in range(steps_per_epoch):
            batch = np.stack([p[(s * config.batch_size + np.arange(config.batch_size)) % len(p)] for p in perms])
            bt = torch.as_tensor(batch, device=x_all.device)
            loss = vloss(params, buffers, x_all[bt], y_all[bt]).sum()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
        progress((epoch + 1) / config.epochs, f"epoch {epoch + 1}/{config.epochs}")


@torch.no_grad()
def _recalibrate_batch_norm(model: nn.Module, images: torch.Tensor, *, batch_size: int = 512) -> None:
    """Set batch-norm running statistics to their average over the model's own training images.

    The running averages of training (momentum 0.1) still remember the first steps when
    a model trains for few steps, so the eval-mode model would differ from the one
    trained. One pass over the training images with a cumulative average ("precise
    BN") fixes that; models without batch norm are left as they are.
    """
    norms = [mod for mod in model.modules() if isinstance(mod, nn.modules.batchnorm._BatchNorm)]
    if not norms:
        return
    momenta = [bn.momentum for bn in norms]
    for bn in norms:
        bn.reset_running_stats()
        bn.momentum = None  # cumulative average over the batches below
    model.train()
    for i in range(0, images.shape[0], batch_size):
        model(images[i : i + batch_size])
    for bn, mom in zip(norms, momenta, strict=True):
        bn.momentum = mom
    model.eval()
