"""The fabrication attacks (docs/methods.md §3): MFA, I-PGD, I-CW and the adaptive attacker, batched over images.

Each pushes non-member images towards high true-class confidence inside an L-infinity ball
of radius epsilon; :func:`fabricate` attacks many images (at one radius or one per image) as
one batch, :func:`fabricate_grid` every radius or adaptive weight of a sweep at once.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
import torch
from torch import nn

from audit_core.common.runtime import ProgressFn, as_progress
from audit_core.fabrication.inference import batch_slices, model_device
from audit_core.fabrication.threads import cpu_threads

__all__ = ["ATTACK_COST", "ATTACK_LABELS", "eps255", "fabricate", "fabricate_grid", "radii_text"]

ATTACK_LABELS = {"mfa": "MFA", "ipgd": "I-PGD", "icw": "I-CW", "adaptive": "adaptive MFA"}
"""Each attack's name in progress messages, figures and the report."""
ATTACK_COST = {"mfa": 1.0, "ipgd": 1.0, "icw": 1.0, "adaptive": 3.0}
"""Time of one attack step on one image, relative to MFA's (the adaptive attacker differentiates twice); for progress."""
_MFA_MOMENTUM = 0.9
"""MFA's momentum mu."""
_MFA_STEP_SCALE = 4.0
"""MFA's first step ``eta_max = min(eps, 4 eps / T)``: the cosine schedule starts large and ends near 0."""
_PGD_STEP_SCALE = 1.0
"""I-PGD's and I-CW's step ``eps / T`` (the I-FGSM of Kurakin et al.)."""

_Objective = Callable[[nn.Module, torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]
_Step = Callable[[torch.Tensor, torch.Tensor, int], torch.Tensor]


def eps255(eps: float) -> str:
    """``0.0314 -> "8/255"`` (rounded to one decimal of /255)."""
    v = eps * 255
    return f"{v:.0f}/255" if abs(v - round(v)) < 0.05 else f"{v:.1f}/255"


def radii_text(radii: Sequence[float]) -> str:
    """``[4/255, 8/255, 16/255] -> "4, 8, 16/255"``."""
    return ", ".join(eps255(e).removesuffix("/255") for e in radii) + "/255"


@cpu_threads()
def fabricate(
    model: nn.Module,
    images: np.ndarray,
    labels: np.ndarray,
    *,
    epsilon: float | np.ndarray,
    steps: int,
    attack: str = "mfa",
    adaptive_beta: float | np.ndarray = 1.0,
    batch_size: int = 2048,
    progress: ProgressFn | None = None,
) -> np.ndarray:
    """Fabricate members: push ``images`` towards high true-class confidence in an L-inf ball.

    Each image is attacked on its own (the model is in eval mode), so one call may attack
    many images at several radii or weights at once (:func:`fabricate_grid`): the same
    numbers as one call per radius, at a fraction of the per-call cost on a CPU.

    Parameters
    ----------
    model : nn.Module
        The audited classifier, in eval mode.
    images, labels : arrays
        Non-member images in [0, 1] (N, C, H, W) and their true labels.
    epsilon : float or array
        L-inf radius on the [0, 1] pixel scale (8/255 = 0.0314), or one per image.
    steps : int
        Iterations T.
    attack : {"mfa", "ipgd", "icw", "adaptive"}
        ``mfa``: momentum ``g_t = mu g_{t-1} + grad / ||grad||_1`` and sign steps of
        cosine-annealed size ``eta_t = eta_max (1 + cos(pi t / T)) / 2`` with
        ``eta_max = min(eps, 4 eps / T)``, ascending log p_y. ``ipgd``: sign steps of
        ``eps / T`` descending the CE loss. ``icw``: the same on the Carlini-Wagner
        margin ``z_y - max_{j != y} z_j``. ``adaptive``: MFA on
        ``log p_y + beta log ||grad_x CE||``, an attacker who also keeps the gradient norm
        up to evade MFD (docs/methods.md §3).
    adaptive_beta : float or array
        Weight of the gradient-norm term of the adaptive attacker, or one per image.

    Returns
    -------
    np.ndarray
        Fabricated images, float32, same shape, within ``epsilon`` of ``images`` and in [0, 1].
    """
    progress = as_progress(progress)
    objective, momentum = _OBJECTIVES[attack], attack in _MOMENTUM_ATTACKS
    device = model_device(model)
    x0_all = torch.as_tensor(images, dtype=torch.float32)
    y_all = torch.as_tensor(labels, dtype=torch.long)
    n = x0_all.shape[0]
    eps_all, beta_all = _per_image(epsilon, n), _per_image(adaptive_beta, n)
    out = torch.empty_like(x0_all)
    n_batches = max(1, math.ceil(n / batch_size))
    for b, sl in enumerate(batch_slices(n, batch_size)):
        x0 = x0_all[sl].to(device)
        eps = eps_all[sl].to(device).view(-1, *([1] * (x0.dim() - 1)))
        out[sl] = _attack_batch(model, objective, x0, y_all[sl].to(device), eps, beta_all[sl].to(device),
                                momentum=momentum, steps=steps, progress=_batch_progress(progress, b, n_batches))  # fmt: skip
    return out.numpy()


def _per_image(value: float | np.ndarray, n: int) -> torch.Tensor:
    """A scalar or one value per image, as ``n`` float32 values."""
    return torch.as_tensor(np.broadcast_to(np.asarray(value, dtype=np.float32), (n,)).copy())


def _batch_progress(progress: ProgressFn, b: int, n_batches: int) -> ProgressFn:
    """Batch ``b``'s own fraction mapped onto its share of the whole call."""
    return lambda fraction, message: progress((b + fraction) / n_batches, message)


def _attack_batch(
    model: nn.Module,
    objective: _Objective,
    x0: torch.Tensor,
    y: torch.Tensor,
    eps: torch.Tensor,
    beta: torch.Tensor,
    *,
    momentum: bool,
    steps: int,
    progress: ProgressFn,
) -> torch.Tensor:
    """``steps`` ascent steps on ``objective`` from ``x0``, each projected back into the ball and [0, 1]; on the CPU."""
    lo = (x0 - eps).clamp_(0.0, 1.0)
    hi = (x0 + eps).clamp_(0.0, 1.0)
    step = _momentum_steps(x0, eps, steps) if momentum else _sign_steps(eps, steps)
    x = x0.clone()
    for t in range(steps):
        x.requires_grad_(True)
        (grad,) = torch.autograd.grad(objective(model, x, y, beta).sum(), x)
        x = x.detach()
        with torch.no_grad():
            x = torch.minimum(torch.maximum(step(x, grad, t), lo), hi)
        progress((t + 1) / steps, f"step {t + 1}/{steps}")
    return x.detach().cpu()


def _momentum_steps(x0: torch.Tensor, eps: torch.Tensor, steps: int) -> _Step:
    """MFA's update: momentum ``g_t = mu g_{t-1} + grad / ||grad||_1`` and sign steps of cosine-annealed size
    ``eta_t = eta_max (1 + cos(pi t / T)) / 2``."""
    eta_max = torch.minimum(eps, _MFA_STEP_SCALE * eps / steps)
    g_mom = torch.zeros_like(x0)
    per_image = (-1, *([1] * (x0.dim() - 1)))

    def step(x: torch.Tensor, grad: torch.Tensor, t: int) -> torch.Tensor:
        nonlocal g_mom
        l1 = grad.flatten(1).abs().sum(dim=1).clamp_min(1e-30)
        g_mom = _MFA_MOMENTUM * g_mom + grad / l1.view(per_image)
        eta = eta_max * ((1 + math.cos(math.pi * t / steps)) / 2)
        return x + eta * g_mom.sign()

    return step


def _sign_steps(eps: torch.Tensor, steps: int) -> _Step:
    """I-PGD's and I-CW's update: sign steps of ``eps / T``."""
    alpha = _PGD_STEP_SCALE * eps / steps
    return lambda x, grad, t: x + alpha * grad.sign()


def _log_confidence(model: nn.Module, x: torch.Tensor, y: torch.Tensor, beta: torch.Tensor) -> torch.Tensor:
    """log p_y per image (MFA, I-PGD). MFA normalises the gradient, so ascent on p_y or log p_y is the same
    direction; I-PGD is descent on the CE loss, i.e. the same ascent."""
    return -nn.functional.cross_entropy(model(x), y, reduction="none")


def _cw_margin(model: nn.Module, x: torch.Tensor, y: torch.Tensor, beta: torch.Tensor) -> torch.Tensor:
    """The Carlini-Wagner margin ``z_y - max_{j != y} z_j`` per image (I-CW)."""
    logits = model(x)
    z_y = logits.gather(1, y[:, None]).squeeze(1)
    z_other = logits.scatter(1, y[:, None], -torch.inf).max(dim=1).values
    return z_y - z_other


def _log_confidence_and_norm(model: nn.Module, x: torch.Tensor, y: torch.Tensor, beta: torch.Tensor) -> torch.Tensor:
    """``log p_y + beta log ||grad_x CE||`` per image: the adaptive attacker keeps the gradient norm up to evade MFD."""
    ce = nn.functional.cross_entropy(model(x), y, reduction="none")
    (g,) = torch.autograd.grad(ce.sum(), x, create_graph=True)
    return -ce + beta * torch.log(g.flatten(1).norm(dim=1) + 1e-12)


_OBJECTIVES: dict[str, _Objective] = {
    "mfa": _log_confidence, "ipgd": _log_confidence, "icw": _cw_margin, "adaptive": _log_confidence_and_norm,
}  # fmt: skip
"""The quantity each attack ascends (summed over the batch); the attack names are the knob's (and ``adaptive``)."""
_MOMENTUM_ATTACKS = ("mfa", "adaptive")
"""The attacks that step along MFA's momentum; the others take plain sign steps."""


def fabricate_grid(
    model: nn.Module,
    images: np.ndarray,
    labels: np.ndarray,
    *,
    epsilons: Sequence[float],
    betas: Sequence[float] | None = None,
    steps: int,
    attack: str = "mfa",
    progress: ProgressFn | None = None,
) -> list[np.ndarray]:
    """:func:`fabricate` at every radius of ``epsilons`` (or, for the adaptive attacker, every weight of ``betas``
    at the one radius ``epsilons[0]``) as one batch: the images tiled once per value, one array per value back."""
    values = list(betas) if betas is not None else [float(e) for e in epsilons]
    if not values:
        return []
    k, n = len(values), len(images)
    tile = lambda v: np.repeat(np.asarray(v, dtype=np.float64), n)  # noqa: E731
    eps, beta = (tile([epsilons[0]] * k), tile(values)) if betas is not None else (tile(values), 1.0)
    out = fabricate(model, np.concatenate([images] * k), np.concatenate([labels] * k), epsilon=eps, steps=steps,
                    attack=attack, adaptive_beta=beta, progress=progress)  # fmt: skip
    return [out[i * n : (i + 1) * n] for i in range(k)]
