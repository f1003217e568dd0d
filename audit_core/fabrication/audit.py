"""Fabricated members: attack (MFA, I-PGD, I-CW), detection (MFD) and robust MIAs (docs/methods.md §3).

A *fabricated member* is a non-member image nudged inside an L-infinity ball of radius
epsilon until the audited model is as confident on its true class as it is on the
images it was trained on, so that a membership-inference attack (MIA) calls it a
member. This module

- runs the attacks batched over all images at once (GPU when present);
- scores MIAs (LOSS / confidence, offline LiRA and RMIA with reference models),
  oriented higher = member and non-negative;
- measures input-gradient norms (the MFD statistic) and the AR-MIA reweighting
  ``score * tanh(lambda * norm / g_ref)``;
- sweeps epsilon (the regime map), lambda, step budgets and the adaptive attacker;
- reports every MIA (vanilla and AR-MIA, vs clean and vs fabricated non-members) and
  MFD through :mod:`audit_core.common.roc`: AUC, EER and the TPR at each low FPR with its 95 %
  interval (threshold estimated from the negatives included) and ``supported`` flag.

:func:`setup_fabrication` assembles an audit from its inputs (bundled set or uploaded
images and model); the page and the CLI both
call them, so the same seed and settings give the same numbers on either. Reference
models always have the audited model's architecture (:func:`prepare_audit`).

Trial notes (docs/methods.md §3) explain the regimes: since ``grad CE = (1 - p_y) * ...``
the gradient-norm collapse appears only where fabricated points are pushed *past* the
members' confidence. :func:`run_fabrication` therefore reports the median confidence of
members and fabricated points next to every AUC.
"""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from scipy import stats
from torch import nn

from audit_core.common.errors import InputError
from audit_core.common.privacy_bound import epsilon_bound_json
from audit_core.common.report import InputSummary, describe_input
from audit_core.common.roc import DEFAULT_FPRS, AttackMetrics, RocCurve, TprAtFpr, evaluate_attack, roc_curve
from audit_core.common.runtime import ProgressFn, as_progress, null_progress, pick_device, sub_progress
from audit_core.fabrication.architectures import architecture_of
from audit_core.fabrication.bundled import load_bundled
from audit_core.fabrication.choices import DEFAULT_EPSILON, LAMBDAS, MIAS, MODEL_FORMATS, SETUP_SHARE
from audit_core.fabrication.image_files import load_npz, load_png_folder
from audit_core.fabrication.images import ImageData, with_model_classes
from audit_core.fabrication.inference import predict_logits
from audit_core.fabrication.model_files import (
    check_model_input,
    load_safetensors_model,
    load_torchscript_model,
    n_outputs,
)
from audit_core.fabrication.progress import plan, split
from audit_core.fabrication.threads import cpu_threads
from audit_core.fabrication.training import TrainConfig, train_models

ATTACKS = ("mfa", "ipgd", "icw", "adaptive")
DEFAULT_EPSILONS = (4 / 255, 8 / 255, 16 / 255, 32 / 255, 64 / 255)
MFA_MOMENTUM = 0.9
MFA_STEP_SCALE = 4.0  # eta_max = min(eps, 4 eps / T): the cosine schedule starts large, ends ~0
PGD_STEP_SCALE = 1.0  # I-PGD / I-CW step = eps / T (the I-FGSM of Kurakin et al.)
RMIA_OFFLINE_A = 0.3  # RMIA's offline scaling of Pr(x) from OUT reference models
ATTACK_LABELS = {"mfa": "MFA", "ipgd": "I-PGD", "icw": "I-CW", "adaptive": "adaptive MFA"}
ATTACK_COST = {"mfa": 1.0, "ipgd": 1.0, "icw": 1.0, "adaptive": 3.0}
"""Time of one attack step on one image, relative to MFA's (the adaptive attacker differentiates twice); for progress."""
FORWARD_COST = 1 / 3
"""Time of scoring one image with one model, relative to one attack step (a forward pass, no backward); for progress."""


def eps255(eps: float) -> str:
    """``0.0314 -> "8/255"`` (rounded to one decimal of /255)."""
    v = eps * 255
    return f"{v:.0f}/255" if abs(v - round(v)) < 0.05 else f"{v:.1f}/255"


# ---------------------------------------------------------------------------
# gradients, confidences
# ---------------------------------------------------------------------------
def _batches(n: int, size: int):
    for i in range(0, n, size):
        yield slice(i, min(i + size, n))


def input_gradient_norms(
    model: nn.Module, images: np.ndarray | torch.Tensor, labels: np.ndarray, *, batch_size: int = 1024
) -> np.ndarray:
    """Per-image L2 norm of ``grad_x CE(f(x), y)`` — the MFD statistic (docs/methods.md §3).

    The model must be in eval mode (no batch statistics), so the gradient of the summed
    loss gives every image its own gradient.
    """
    device = next(model.parameters()).device
    x_all = torch.as_tensor(images)
    y_all = torch.as_tensor(labels)
    out = []
    for sl in _batches(x_all.shape[0], batch_size):
        x = x_all[sl].to(device).requires_grad_(True)
        loss = nn.functional.cross_entropy(model(x), y_all[sl].to(device), reduction="sum")
        (g,) = torch.autograd.grad(loss, x)
        out.append(g.flatten(1).norm(dim=1).detach().cpu())
    return torch.cat(out).double().numpy()


def _true_class_stats(logits: torch.Tensor, labels: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """(confidence p_y, logit-scaled confidence log p_y - log(1 - p_y)) computed stably."""
    logits = logits.double()
    z_y = logits.gather(1, labels[:, None]).squeeze(1)
    others = logits.scatter(1, labels[:, None], -torch.inf)
    phi = z_y - torch.logsumexp(others, dim=1)
    conf = torch.sigmoid(phi)
    return conf.cpu().numpy(), phi.cpu().numpy()


# ---------------------------------------------------------------------------
# attacks
# ---------------------------------------------------------------------------
def _objective(model: nn.Module, x: torch.Tensor, y: torch.Tensor, method: str, beta: torch.Tensor) -> torch.Tensor:
    """Per-image quantity each attack *ascends* (summed over the batch by the caller)."""
    logits = model(x)
    if method in ("mfa", "ipgd"):
        # log p_y: MFA normalises the gradient so ascent on p_y or log p_y is the same
        # direction; I-PGD is descent on the CE loss, i.e. the same ascent.
        return -nn.functional.cross_entropy(logits, y, reduction="none")
    if method == "icw":
        z_y = logits.gather(1, y[:, None]).squeeze(1)
        z_other = logits.scatter(1, y[:, None], -torch.inf).max(dim=1).values
        return z_y - z_other
    if method == "adaptive":
        ce = nn.functional.cross_entropy(logits, y, reduction="none")
        (g,) = torch.autograd.grad(ce.sum(), x, create_graph=True)
        return -ce + beta * torch.log(g.flatten(1).norm(dim=1) + 1e-12)
    raise InputError(f"Unknown attack {method!r}; choose one of {', '.join(ATTACKS)}.")


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
    if attack not in ATTACKS:
        raise InputError(f"Unknown attack {attack!r}; choose one of {', '.join(ATTACKS)}.")
    progress = as_progress(progress)
    device = next(model.parameters()).device
    x0_all = torch.as_tensor(images, dtype=torch.float32)
    y_all = torch.as_tensor(labels, dtype=torch.long)
    n = x0_all.shape[0]
    per_image = lambda v: torch.as_tensor(np.broadcast_to(np.asarray(v, dtype=np.float32), (n,)).copy())  # noqa: E731
    eps_all, beta_all = per_image(epsilon), per_image(adaptive_beta)
    out = torch.empty_like(x0_all)
    momentum_like = attack in ("mfa", "adaptive")
    n_batches = max(1, math.ceil(n / batch_size))
    for b, sl in enumerate(_batches(n, batch_size)):
        x0 = x0_all[sl].to(device)
        y = y_all[sl].to(device)
        eps = eps_all[sl].to(device).view(-1, *([1] * (x0.dim() - 1)))
        beta = beta_all[sl].to(device)
        eta_max = torch.minimum(eps, MFA_STEP_SCALE * eps / steps)
        alpha = PGD_STEP_SCALE * eps / steps
        lo = (x0 - eps).clamp_(0.0, 1.0)
        hi = (x0 + eps).clamp_(0.0, 1.0)
        x = x0.clone()
        g_mom = torch.zeros_like(x0)
        for t in range(steps):
            x.requires_grad_(True)
            obj = _objective(model, x, y, attack, beta).sum()
            (grad,) = torch.autograd.grad(obj, x)
            x = x.detach()
            with torch.no_grad():
                if momentum_like:
                    l1 = grad.flatten(1).abs().sum(dim=1).clamp_min(1e-30)
                    g_mom = MFA_MOMENTUM * g_mom + grad / l1.view(-1, *([1] * (x0.dim() - 1)))
                    eta = eta_max * ((1 + math.cos(math.pi * t / steps)) / 2)
                    x = x + eta * g_mom.sign()
                else:
                    x = x + alpha * grad.sign()
                x = torch.minimum(torch.maximum(x, lo), hi)
            progress((b + (t + 1) / steps) / n_batches, f"step {t + 1}/{steps}")
        out[sl] = x.detach().cpu()
    return out.numpy()


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


# ---------------------------------------------------------------------------
# MIAs
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class ReferenceModels:
    """Offline reference models for LiRA / RMIA and the gradient-norm scale.

    Attributes
    ----------
    models : list of nn.Module
        Trained on random halves of the reference pool only (every scored image is OUT).
    population : np.ndarray
        Indices (into the ImageData) of the reference-pool images kept out of every
        reference model: RMIA's population sample z.
    g_ref : float
        Median input-gradient norm of the reference models on their own training images
        (members of reference models): the scale of the normalised lambda (docs/methods.md §3).
    """

    models: list = field(repr=False)
    population: np.ndarray = field(repr=False)
    g_ref: float


@dataclass(frozen=True)
class _ModelView:
    """What the MIAs need about a set of images, computed once."""

    conf: np.ndarray  # target p_y
    phi: np.ndarray  # target logit-scaled confidence
    ref_conf: np.ndarray | None  # (K, n)
    ref_phi: np.ndarray | None


def _view(model, refs: ReferenceModels | None, images: np.ndarray, labels: np.ndarray) -> _ModelView:
    y = torch.as_tensor(labels)
    conf, phi = _true_class_stats(predict_logits(model, images).cpu(), y)
    if refs is None or not refs.models:
        return _ModelView(conf, phi, None, None)
    rc, rp = zip(*(_true_class_stats(predict_logits(m, images).cpu(), y) for m in refs.models), strict=True)
    return _ModelView(conf, phi, np.stack(rc), np.stack(rp))


def mia_scores(view: _ModelView, *, mia: str, population: _ModelView | None = None) -> np.ndarray:
    """Non-negative membership scores, higher = member (docs/methods.md §3).

    ``loss``: the confidence ``p_y = exp(-CE)`` (same ranking as the LOSS attack).
    ``lira``: offline LiRA, ``Phi((phi - mu_out) / sigma_out)`` with phi the
    logit-scaled confidence, per-image mean over the OUT reference models and a global
    standard deviation (few reference models).
    ``rmia``: the fraction of population images z with
    ``[p(x)/Pr(x)] / [p(z)/Pr(z)] > 1``, ``Pr = ((1 + a) mean_ref + (1 - a)) / 2``, a = 0.3.
    """
    if mia == "loss":
        return view.conf
    if view.ref_phi is None:
        raise InputError(f"The {mia} attack needs reference models; train some or use the LOSS attack.")
    if mia == "lira":
        mu = view.ref_phi.mean(axis=0)
        sd = max(float(view.ref_phi.std(axis=0, ddof=1).mean()) if view.ref_phi.shape[0] > 1 else 1.0, 1e-6)
        return stats.norm.cdf((view.phi - mu) / sd)
    if mia == "rmia":
        if population is None:
            raise InputError("RMIA needs a population sample.")

        def ratio(v: _ModelView) -> np.ndarray:
            pr = ((1 + RMIA_OFFLINE_A) * v.ref_conf.mean(axis=0) + (1 - RMIA_OFFLINE_A)) / 2
            return v.conf / pr

        rz = np.sort(ratio(population))
        return np.searchsorted(rz, ratio(view), side="left") / rz.size
    raise InputError(f"Unknown MIA {mia!r}; choose one of {', '.join(MIAS)}.")


def ar_weight(norms: np.ndarray, *, lam: float, g_ref: float) -> np.ndarray:
    """AR-MIA weight ``tanh(lambda * ||grad|| / g_ref)`` (normalised lambda, docs/methods.md §3).

    >>> float(np.round(ar_weight(np.array([2.0]), lam=1.0, g_ref=2.0)[0], 3))
    0.762
    """
    return np.tanh(lam * np.asarray(norms) / g_ref)


# ---------------------------------------------------------------------------
# the audit
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class FabricationSetup:
    """Everything trained before an attack: data, target model and reference models.

    Cache this (it is the slow part); attacks and re-scoring run on top of it.
    """

    data: ImageData = field(repr=False)
    model: nn.Module = field(repr=False)
    refs: ReferenceModels | None = field(repr=False)
    g_ref: float
    g_ref_source: str
    trained_here: bool
    reference_architecture: str | None = None
    inputs: tuple[InputSummary, ...] = ()


# Defaults chosen where the paper's phenomenon shows on a CPU (measured with
# benchmarks/bench_fabrication.py, seed 0; see also the trial notes of docs/methods.md §3):
# few members and many epochs make the LOSS attack work (digits AUC 0.59, LiRA 0.67,
# RMIA 0.71), label smoothing 0.1 keeps members' confidence near 0.87 so fabricated
# points can be pushed past it. Digits: MFD AUC 0.47 / 0.54 / 0.67 / 0.84 / 0.97 at
# 4 / 8 / 16 / 32 / 64 /255. MNIST (300 members, 100 epochs): 0.47 / 0.55 / 0.69 / 0.89
# at 4 / 8 / 16 / 32 /255 -- more pixels help only a little with this small CNN.
DEFAULT_TRAIN = {
    "digits": TrainConfig(epochs=60, batch_size=64, lr=2e-3, weight_decay=0.0, label_smoothing=0.1),
    "mnist": TrainConfig(epochs=100, batch_size=64, lr=2e-3, weight_decay=0.0, label_smoothing=0.1),
}
DEFAULT_SIZES = {"digits": (150, 300), "mnist": (300, 300)}


@cpu_threads()
def prepare_audit(
    data: ImageData,
    *,
    model: nn.Module | None = None,
    train: TrainConfig | None = None,
    n_reference_models: int = 4,
    seed: int,
    device=None,
    progress: ProgressFn | None = None,
) -> FabricationSetup:
    """Train (or take) the target model and train the reference models as one batch.

    Parameters
    ----------
    data : ImageData
        Images with roles (members / non-members / reference pool).
    model : nn.Module, optional
        The audited model; None trains a small CNN on the members.
    n_reference_models : int
        Offline reference models for LiRA / RMIA (0: LOSS only; the lambda scale then
        comes from the known members, see ``g_ref_source``). The reference models are of
        the audited model's architecture (:func:`~audit_core.fabrication.architectures.architecture_of`:
        an uploaded ResNet-18 gets ResNet-18 references, the bundled target small CNNs)
        and are trained with ``train``, like the bundled target; a model of no built-in
        architecture gets none (a reference model of another architecture would not
        tell how *this* model treats an image it never saw).
    """
    progress = as_progress(progress)
    device = device or pick_device()
    train = train or DEFAULT_TRAIN.get(data.name, DEFAULT_TRAIN["digits"])
    trained_here = model is None
    arch = "small_cnn" if trained_here else architecture_of(model, in_channels=data.shape[0], n_classes=data.n_classes)
    n_reference_models = n_reference_models if arch is not None else 0
    steps = []
    if trained_here:
        steps.append((f"training the audited model ({arch}, {data.members.size} members, {train.epochs} epochs)",
                      _training_weight(data.members.size, 1, train)))  # fmt: skip
    if n_reference_models:
        size = _reference_subset_size(data)
        steps.append((f"training {n_reference_models} reference models ({arch}, as one batch, {train.epochs} epochs)",
                      _training_weight(size, n_reference_models, train)))  # fmt: skip
    parts = iter(plan(progress, steps, what="training"))
    if model is None:
        subset = np.zeros((1, data.labels.size), dtype=bool)
        subset[0, data.members] = True
        (model,) = train_models(
            data.images, data.labels, subset, n_classes=data.n_classes, config=train, arch=arch, seed=seed,
            device=device, progress=next(parts),
        )
    else:
        model = model.to(device).eval()
        check_model_input(model, data.shape, data.n_classes, device=device)
    refs = None
    if n_reference_models:
        refs = train_reference_models(
            data, n_models=n_reference_models, train=train, arch=arch, seed=seed, device=device, progress=next(parts),
        )
    if refs is not None:
        g_ref, src = refs.g_ref, f"median input-gradient norm of the {arch} reference models on their own training images"
    else:
        g_ref = float(np.median(input_gradient_norms(model, data.images[data.members], data.labels[data.members])))
        src = "median input-gradient norm of the audited model on the known members"
        if arch is None:
            src += " (no reference models: the model is not of a built-in architecture)"
    progress(1.0, "models ready")
    return FabricationSetup(data=data, model=model, refs=refs, g_ref=max(g_ref, 1e-30), g_ref_source=src,
                            trained_here=trained_here, reference_architecture=arch if refs is not None else None)


def _population_size(pool: int) -> int:
    """Reference-pool images kept out of every reference model: RMIA's population sample."""
    return max(10, pool // 5)


def _reference_subset_size(data: ImageData) -> int:
    """Images each reference model trains on: the member count, at most half of the rest of the pool."""
    pool = data.reference.size
    return min(data.members.size, (pool - _population_size(pool)) // 2)


def _training_weight(n_images: int, n_models: int, train: TrainConfig) -> float:
    """Expected share of the training time (for progress): optimiser steps, and models trained as one batch
    cost about half a model each beyond the first (measured on the 2-core VM: 1 model 2.2 s, 4 models 3.3-6 s)."""
    return train.epochs * math.ceil(max(1, n_images) / train.batch_size) * (1 + (n_models - 1) / 2)


def train_reference_models(
    data: ImageData,
    *,
    n_models: int,
    train: TrainConfig,
    arch: str = "small_cnn",
    seed: int,
    device=None,
    progress: ProgressFn | None = None,
) -> ReferenceModels:
    """Train ``n_models`` offline reference models of architecture ``arch`` as one batch (docs/methods.md §3).

    Each trains, like the target, on a random subset the size of the member set drawn
    from 80 % of the reference pool; the other 20 % is RMIA's population sample.
    """
    pool = data.reference
    if pool.size < 30:
        raise InputError("The reference pool has fewer than 30 images; add non-members or use 0 reference models.")
    rng = np.random.default_rng(seed + 7)
    pool = rng.permutation(pool)
    n_pop = _population_size(pool.size)
    population, train_pool = pool[:n_pop], pool[n_pop:]
    size = _reference_subset_size(data)
    subsets = np.zeros((n_models, data.labels.size), dtype=bool)
    for k in range(n_models):
        subsets[k, rng.choice(train_pool, size=size, replace=False)] = True
    models = train_models(data.images, data.labels, subsets, n_classes=data.n_classes, config=train, arch=arch,
                          seed=seed + 1, device=device, progress=progress)
    norms = [input_gradient_norms(m, data.images[s], data.labels[s]) for m, s in zip(models, subsets, strict=True)]
    return ReferenceModels(models=models, population=population, g_ref=float(np.median(np.concatenate(norms))))


@dataclass(frozen=True)
class Groups:
    """One quantity for members, clean non-members and fabricated non-members."""

    members: np.ndarray
    non_members: np.ndarray
    fabricated: np.ndarray

    def medians(self) -> dict[str, float]:
        """Median per group (JSON keys ``members``, ``non_members``, ``fabricated``)."""
        return {k: float(np.median(getattr(self, k))) for k in ("members", "non_members", "fabricated")}


def _pos_neg(pos: np.ndarray, neg: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return np.r_[pos, neg], np.r_[np.ones(pos.size, bool), np.zeros(neg.size, bool)]


def curve(pos: np.ndarray, neg: np.ndarray) -> RocCurve:
    """ROC of positives ``pos`` against negatives ``neg`` (higher = positive)."""
    return roc_curve(*_pos_neg(pos, neg))


def _auc(pos: np.ndarray, neg: np.ndarray) -> float:
    return float(curve(pos, neg).auc)


def evaluate(pos: np.ndarray, neg: np.ndarray, *, fprs: Sequence[float] = DEFAULT_FPRS) -> AttackMetrics:
    """AUC, EER and the TPR at each target FPR with its 95 % interval (:func:`audit_core.common.roc.evaluate_attack`).

    ``pos`` are the positives (members for an MIA, fabricated images for MFD), ``neg``
    the negatives, scores higher = positive. The interval accounts for the threshold
    being estimated from the negatives; ``supported`` is False below ``10 / fpr`` negatives.
    """
    return evaluate_attack(*_pos_neg(pos, neg), fprs=tuple(fprs))


def tpr_json(tprs: dict[str, TprAtFpr]) -> dict[str, dict]:
    """``{"0.01": {tpr, ci_low, ci_high, achieved_fpr, n_neg, supported, threshold, n_pos, target_fpr}, ...}``."""
    return {k: t.to_json() for k, t in tprs.items()}


@dataclass(frozen=True)
class MiaSummary:
    """An MIA on members (positives) vs clean and vs fabricated non-members (negatives).

    ``clean`` and ``fabricated`` carry AUC, EER and the TPR at each low FPR with its
    interval (:func:`evaluate`).
    """

    clean: AttackMetrics = field(repr=False)
    fabricated: AttackMetrics = field(repr=False)

    @property
    def auc_clean(self) -> float:
        """AUC, members vs clean non-members."""
        return self.clean.auc

    @property
    def auc_fabricated(self) -> float:
        """AUC, members vs fabricated non-members."""
        return self.fabricated.auc

    @property
    def eer_clean(self) -> float:
        """Equal error rate, members vs clean non-members."""
        return self.clean.eer

    @property
    def eer_fabricated(self) -> float:
        """Equal error rate, members vs fabricated non-members (higher = MIA fooled more)."""
        return self.fabricated.eer

    @property
    def tpr_clean(self) -> dict[str, TprAtFpr]:
        """TPR at each target FPR (keys "0.001", "0.01", "0.1"), members vs clean non-members."""
        return self.clean.tpr_at_fpr

    @property
    def tpr_fabricated(self) -> dict[str, TprAtFpr]:
        """TPR at each target FPR, members vs fabricated non-members (the FPR counts fabricated images)."""
        return self.fabricated.tpr_at_fpr

    @property
    def error_area(self) -> float:
        """1 - AUC on members vs fabricated (higher = MIA fooled more)."""
        return 1.0 - self.auc_fabricated

    def to_json(self) -> dict:
        """AUCs and EERs, and ``tpr_at_fpr_clean`` / ``tpr_at_fpr_fabricated`` with their intervals."""
        return {
            "auc_clean": self.auc_clean, "auc_fabricated": self.auc_fabricated,
            "eer_clean": self.eer_clean, "eer_fabricated": self.eer_fabricated,
            "tpr_at_fpr_clean": tpr_json(self.tpr_clean), "tpr_at_fpr_fabricated": tpr_json(self.tpr_fabricated),
        }


@dataclass(frozen=True)
class LambdaPoint:
    """AR-MIA at one normalised lambda."""

    lam: float
    auc_clean: float
    auc_fabricated: float


@dataclass(frozen=True)
class EpsilonPoint:
    """One column of the regime map (docs/methods.md §3 trial notes)."""

    epsilon: float
    attack: str
    steps: int
    mia_auc_fabricated: float
    mfd_auc: float
    ar_auc_fabricated: float
    ar_auc_clean: float
    median_conf_fabricated: float
    median_norm_fabricated: float
    conf_fabricated: np.ndarray = field(repr=False, compare=False, default=None)
    norms_fabricated: np.ndarray = field(repr=False, compare=False, default=None)


@dataclass(frozen=True)
class AdaptivePoint:
    """The adaptive attacker at one weight beta of the gradient-norm term."""

    beta: float
    mia_auc_fabricated: float
    mfd_auc: float
    median_norm_fabricated: float


@dataclass(frozen=True)
class FabricationResult:
    """Everything the page, the report and the CLI show (docs/methods.md §3).

    Scores are per MIA (``loss``, and ``lira`` / ``rmia`` with reference models),
    non-negative and oriented higher = member. ``norms`` are input-gradient norms of the
    audited model. Regime map, budget comparison and adaptive points are precomputed;
    changing lambda only re-scores (:func:`ar_mia`).
    """

    dataset: str
    epsilon: float
    steps: int
    attack: str
    lam: float
    seed: int
    g_ref: float
    g_ref_source: str
    scores: dict[str, Groups] = field(repr=False)
    norms: Groups = field(repr=False)
    confidence: Groups = field(repr=False)
    gallery_original: np.ndarray = field(repr=False)
    gallery_fabricated: np.ndarray = field(repr=False)
    gallery_labels: np.ndarray = field(repr=False)
    lambdas: tuple[float, ...]
    regime: tuple[EpsilonPoint, ...]
    budgets: tuple[EpsilonPoint, ...]
    adaptive: tuple[AdaptivePoint, ...]
    model_accuracy: dict[str, float]
    reference_architecture: str | None = None
    budget_rows: np.ndarray | None = field(repr=False, default=None)
    """The non-members the budget comparison ran on (its AR-MIA AUCs are re-scored on them)."""
    inputs: tuple[InputSummary, ...] = field(repr=False, default=())
    """The files the audit read (SHA-256 as given), for the report."""

    @property
    def mias(self) -> tuple[str, ...]:
        """Names of the MIAs scored."""
        return tuple(self.scores)

    def mia(self, name: str = "loss", *, lam: float | None = None) -> MiaSummary:
        """MIA ``name`` on members vs clean and vs fabricated non-members, with TPR intervals.

        ``lam`` None: the vanilla MIA; a number: AR-MIA at that normalised lambda
        (:meth:`ar_scores`; no model call).
        """
        s = self.scores[name] if lam is None else self.ar_scores(lam=lam, mia=name)
        return MiaSummary(clean=evaluate(s.members, s.non_members), fabricated=evaluate(s.members, s.fabricated))

    def mfd(self) -> AttackMetrics:
        """MFD (low gradient norm = fabricated): fabricated images (positives) vs real members (negatives).

        Its TPR at FPR alpha is the share of fabricated images flagged while flagging at
        most alpha of the real members.
        """
        return evaluate(-self.norms.fabricated, -self.norms.members)

    @property
    def mfd_auc(self) -> float:
        """AUC of MFD (low norm = fabricated): fabricated vs real members."""
        return _auc(-self.norms.fabricated, -self.norms.members)

    def ar_scores(self, *, lam: float, mia: str = "loss") -> Groups:
        """AR-MIA scores ``score * tanh(lambda * norm / g_ref)`` per group."""
        s, n = self.scores[mia], self.norms
        w = {k: ar_weight(getattr(n, k), lam=lam, g_ref=self.g_ref) for k in ("members", "non_members", "fabricated")}
        return Groups(s.members * w["members"], s.non_members * w["non_members"], s.fabricated * w["fabricated"])

    def ar_mia(self, *, lam: float, mia: str = "loss") -> LambdaPoint:
        """AR-MIA AUCs at one lambda (cheap: no model call)."""
        g = self.ar_scores(lam=lam, mia=mia)
        return LambdaPoint(lam, _auc(g.members, g.non_members), _auc(g.members, g.fabricated))

    def regime_at(self, *, lam: float) -> list[LambdaPoint]:
        """AR-MIA (LOSS) AUCs at ``lam`` for every epsilon of the regime map (no model call)."""
        w = lambda g: ar_weight(g, lam=lam, g_ref=self.g_ref)  # noqa: E731
        c, n = self.confidence, self.norms
        mem = c.members * w(n.members)
        clean = _auc(mem, c.non_members * w(n.non_members))
        return [LambdaPoint(lam, clean, _auc(mem, p.conf_fabricated * w(p.norms_fabricated))) for p in self.regime]

    def at_lambda(self, lam: float) -> FabricationResult:
        """The result re-scored at another AR-MIA lambda: every AR-MIA number, those of the regime map and of the
        budget table included, as ``run_fabrication(lam=lam)`` computes them (no model call)."""
        if float(lam) == self.lam:
            return self
        w = lambda g: ar_weight(g, lam=lam, g_ref=self.g_ref)  # noqa: E731
        c, n = self.confidence, self.norms
        mem = c.members * w(n.members)

        def rescored(points: tuple[EpsilonPoint, ...], rows: np.ndarray | slice) -> tuple[EpsilonPoint, ...]:
            clean = _auc(mem, c.non_members[rows] * w(n.non_members[rows]))
            return tuple(dataclasses.replace(p, ar_auc_clean=clean, ar_auc_fabricated=_auc(
                mem, p.conf_fabricated * w(p.norms_fabricated))) for p in points)  # fmt: skip

        budget_rows = self.budget_rows if self.budget_rows is not None else slice(None)
        return dataclasses.replace(self, lam=float(lam), regime=rescored(self.regime, slice(None)),
                                   budgets=rescored(self.budgets, budget_rows))  # fmt: skip

    def by_lambda(self, mia: str = "loss") -> list[LambdaPoint]:
        """AR-MIA over the lambda grid."""
        return [self.ar_mia(lam=lam, mia=mia) for lam in self.lambdas]

    def to_json(self) -> dict:
        """docs/contract.md's fabrication keys (``mia.*``, ``mfd.*``, ``ar_mia.*``) plus per-MIA detail.

        Added keys: ``mia.tpr_at_fpr_clean`` / ``mia.tpr_at_fpr_fabricated``, the same
        under ``ar_mia`` and in each ``by_attack`` entry, and ``mfd.tpr_at_fpr``: per target
        FPR ("0.001", "0.01", "0.1") ``{tpr, ci_low, ci_high, achieved_fpr, n_neg, supported,
        threshold, n_pos, target_fpr}``; ``reference_architecture``.
        """
        vanilla = {m: self.mia(m).to_json() for m in self.mias}
        for m in self.mias:  # empirical epsilon lower bound of each MIA: real members vs clean non-members
            g = self.scores[m]
            member = np.r_[np.ones(g.members.size, dtype=bool), np.zeros(g.non_members.size, dtype=bool)]
            vanilla[m]["epsilon_lower_bound"] = epsilon_bound_json(np.r_[g.members, g.non_members], member, seed=self.seed)
        robust = {m: self.mia(m, lam=self.lam).to_json() for m in self.mias}
        loss, ar = vanilla["loss"], robust["loss"]
        mfd = self.mfd()
        return {
            "dataset": self.dataset,
            "epsilon": self.epsilon,
            "steps": self.steps,
            "attack": self.attack,
            "lambda": self.lam,
            "seed": self.seed,
            "g_ref": self.g_ref,
            "g_ref_source": self.g_ref_source,
            "reference_architecture": self.reference_architecture,
            "n_members": int(self.norms.members.size),
            "n_non_members": int(self.norms.non_members.size),
            "model_accuracy": self.model_accuracy,
            "mia": {
                **loss,
                "error_area_fabricated": 1.0 - loss["auc_fabricated"],
                "by_attack": vanilla,
            },
            "mfd": {"auc": mfd.auc, "median_grad_norm": self.norms.medians(), "eer": mfd.eer,
                    "tpr_at_fpr": tpr_json(mfd.tpr_at_fpr)},
            "median_confidence": self.confidence.medians(),
            "ar_mia": {
                "auc_clean": ar["auc_clean"],
                "auc_fabricated": ar["auc_fabricated"],
                "tpr_at_fpr_clean": ar["tpr_at_fpr_clean"],
                "tpr_at_fpr_fabricated": ar["tpr_at_fpr_fabricated"],
                "by_lambda": [
                    {"lambda": p.lam, "auc_clean": p.auc_clean, "auc_fabricated": p.auc_fabricated}
                    for p in self.by_lambda()
                ],
                "by_attack": robust,
            },
            "regime": [
                _point_json(p) | {"ar_mia_auc_clean": a.auc_clean, "ar_mia_auc_fabricated": a.auc_fabricated}
                for p, a in zip(self.regime, self.regime_at(lam=self.lam), strict=True)
            ],
            "budgets": [_point_json(p) for p in self.budgets],
            "adaptive": [
                {"beta": p.beta, "mia_auc_fabricated": p.mia_auc_fabricated, "mfd_auc": p.mfd_auc,
                 "median_grad_norm_fabricated": p.median_norm_fabricated}
                for p in self.adaptive
            ],
        }


def _point_json(p: EpsilonPoint) -> dict:
    return {
        "epsilon": p.epsilon, "attack": p.attack, "steps": p.steps,
        "mia_auc_fabricated": p.mia_auc_fabricated, "mfd_auc": p.mfd_auc,
        "ar_mia_auc_clean": p.ar_auc_clean, "ar_mia_auc_fabricated": p.ar_auc_fabricated,
        "median_confidence_fabricated": p.median_conf_fabricated,
        "median_grad_norm_fabricated": p.median_norm_fabricated,
    }


def _eval_point(setup, x_fab, y, *, epsilon, attack, steps, lam, mem_conf, mem_norm, non_conf, non_norm) -> EpsilonPoint:
    conf, _ = _true_class_stats(predict_logits(setup.model, x_fab).cpu(), torch.as_tensor(y))
    norm = input_gradient_norms(setup.model, x_fab, y)
    w = lambda g: ar_weight(g, lam=lam, g_ref=setup.g_ref)  # noqa: E731
    return EpsilonPoint(
        epsilon=float(epsilon), attack=attack, steps=int(steps),
        mia_auc_fabricated=_auc(mem_conf, conf), mfd_auc=_auc(-norm, -mem_norm),
        ar_auc_fabricated=_auc(mem_conf * w(mem_norm), conf * w(norm)),
        ar_auc_clean=_auc(mem_conf * w(mem_norm), non_conf * w(non_norm)),
        median_conf_fabricated=float(np.median(conf)), median_norm_fabricated=float(np.median(norm)),
        conf_fabricated=conf, norms_fabricated=norm,
    )


@cpu_threads()
def run_fabrication(
    setup: FabricationSetup,
    *,
    epsilon: float,
    steps: int = 40,
    attack: str = "mfa",
    lam: float = 1.0,
    epsilons: Sequence[float] = DEFAULT_EPSILONS,
    lambdas: Sequence[float] = LAMBDAS,
    budgets: Sequence[int] = (5, 40),
    compare_attacks: Sequence[str] = ("mfa", "ipgd", "icw"),
    adaptive_betas: Sequence[float] = (0.0, 0.01, 0.03, 0.1),
    n_compare: int = 100,
    seed: int,
    progress: ProgressFn | None = None,
) -> FabricationResult:
    """Fabricate members from the non-members and measure MIA, MFD and AR-MIA (docs/methods.md §3).

    Parameters
    ----------
    setup : FabricationSetup
        From :func:`prepare_audit`.
    epsilon, steps, attack : float, int, str
        The headline attack, run on every evaluation non-member.
    lam : float
        Normalised AR-MIA lambda for the headline numbers (the grid ``lambdas`` is
        reported too).
    epsilons : sequence of float
        The regime map: the headline attack over these radii (all non-members),
        plus the budget comparison (``compare_attacks`` x ``budgets`` x ``epsilons``) and
        the adaptive attacker (``adaptive_betas`` at ``epsilon``) on a random subset of
        ``n_compare`` non-members. Empty sequences skip a part.
    seed : int
        Seed of the subset choice (attacks are deterministic).
    """
    progress = as_progress(progress)
    data, model = setup.data, setup.model
    mem, non = data.members, data.non_members
    x_mem, y_mem = data.images[mem], data.labels[mem]
    x_non, y_non = data.images[non], data.labels[non]
    n_cmp = min(n_compare, non.size)
    epsilons = [float(e) for e in epsilons]
    label = ATTACK_LABELS[attack]
    radii = list(dict.fromkeys([float(epsilon), *epsilons]))  # the headline radius first, then the regime map's
    budget_runs = _budget_runs(budgets, compare_attacks, attack=attack, steps=steps)
    adaptive_runs = [b for b in adaptive_betas if not (b == 0 and attack == "mfa")]  # beta 0 is the headline MFA
    n_scored = mem.size + 2 * non.size + (setup.refs.population.size if setup.refs is not None else 0)
    n_models = 1 + (len(setup.refs.models) if setup.refs is not None else 0)
    planned = {
        "fabricate": (f"fabricating members ({label}, T = {steps}, on {non.size} non-members) at {eps255(epsilon)}"
                      + (f" and the regime map's {_radii_text(radii[1:])}, as one batch" if radii[1:] else ""),
                      non.size * steps * len(radii)),
        "scores": ("scoring the MIAs and gradient norms", FORWARD_COST * n_scored * n_models
                   + non.size * len(radii)),
        "budgets": (f"attack comparison ({', '.join(ATTACK_LABELS[a] for a in compare_attacks)}, "
                    f"T = {', '.join(map(str, budgets))}, on {n_cmp} non-members)",
                    n_cmp * len(epsilons) * sum(t * ATTACK_COST[a] for a, t in budget_runs)),
        "adaptive": (f"adaptive attacker (beta {', '.join(f'{b:g}' for b in adaptive_betas)}, on {n_cmp} non-members)",
                     n_cmp * steps * ATTACK_COST["adaptive"] * len(adaptive_runs)),
    }  # fmt: skip
    run = {k: v for k, v in planned.items() if v[1] > 0}
    part = dict(zip(run, plan(progress, list(run.values()), what="the attacks"), strict=True))
    part_of = lambda key: part.get(key, null_progress)  # noqa: E731
    fabricated = fabricate_grid(model, x_non, y_non, epsilons=radii, steps=steps, attack=attack,
                                progress=part_of("fabricate"))  # fmt: skip
    x_fab, regime_x = fabricated[0], [fabricated[radii.index(e)] for e in epsilons]
    part_of("scores")(0.0, "")
    scores, norms, conf = _score_groups(setup, (x_mem, y_mem), (x_non, y_non), x_fab)
    common = {"lam": lam, "mem_conf": conf.members, "mem_norm": norms.members}
    regime = [_eval_point(setup, xe, y_non, epsilon=e, attack=attack, steps=steps, non_conf=conf.non_members,
                          non_norm=norms.non_members, **common) for e, xe in zip(epsilons, regime_x, strict=True)]
    rng = np.random.default_rng(seed)
    sub = np.sort(rng.choice(non.size, size=n_cmp, replace=False))
    sub_common = {**common, "non_conf": conf.non_members[sub], "non_norm": norms.non_members[sub]}
    cmp_points = _budget_points(setup, x_non, y_non, sub, regime_x, epsilons=epsilons, budgets=budgets,
                                compare_attacks=compare_attacks, attack=attack, steps=steps,
                                progress=part_of("budgets"), **sub_common)
    adaptive = _adaptive_points(setup, x_non, y_non, sub, x_fab, betas=adaptive_betas, epsilon=epsilon, steps=steps,
                                attack=attack, progress=part_of("adaptive"), **sub_common)
    acc = {k: float((predict_logits(model, x).argmax(1).cpu().numpy() == y).mean())
           for k, (x, y) in {"members": (x_mem, y_mem), "non_members": (x_non, y_non)}.items()}
    g = min(8, non.size)
    progress(1.0, "done")
    return FabricationResult(
        dataset=data.name, epsilon=float(epsilon), steps=int(steps), attack=attack, lam=float(lam), seed=seed,
        g_ref=setup.g_ref, g_ref_source=setup.g_ref_source, scores=scores, norms=norms, confidence=conf,
        gallery_original=x_non[:g], gallery_fabricated=x_fab[:g], gallery_labels=y_non[:g],
        lambdas=tuple(float(v) for v in lambdas), regime=tuple(regime), budgets=tuple(cmp_points),
        adaptive=tuple(adaptive), model_accuracy=acc, reference_architecture=setup.reference_architecture,
        budget_rows=sub, inputs=setup.inputs,
    )


def _score_groups(setup: FabricationSetup, members, non_members, x_fab) -> tuple[dict[str, Groups], Groups, Groups]:
    """Each MIA's scores, the input-gradient norms and the confidences of members, non-members and fabricated points.

    ``members`` and ``non_members`` are ``(images, labels)``; the fabricated points carry the
    non-members' labels. LiRA and RMIA are scored only when the setup has reference models.
    """
    data, model = setup.data, setup.model
    (x_mem, y_mem), (x_non, y_non) = members, non_members
    views = {k: _view(model, setup.refs, x, y) for k, (x, y) in
             {"members": (x_mem, y_mem), "non_members": (x_non, y_non), "fabricated": (x_fab, y_non)}.items()}
    pop_view = None
    mias = ["loss"]
    if setup.refs is not None:
        mias += ["lira", "rmia"]
        pop = setup.refs.population
        pop_view = _view(model, setup.refs, data.images[pop], data.labels[pop])
    scores = {m: Groups(*(mia_scores(views[g], mia=m, population=pop_view)
                          for g in ("members", "non_members", "fabricated"))) for m in mias}
    norms = Groups(input_gradient_norms(model, x_mem, y_mem), input_gradient_norms(model, x_non, y_non),
                   input_gradient_norms(model, x_fab, y_non))
    conf = Groups(views["members"].conf, views["non_members"].conf, views["fabricated"].conf)
    return scores, norms, conf


def _radii_text(radii: Sequence[float]) -> str:
    """``[4/255, 8/255, 16/255] -> "4, 8, 16/255"``."""
    return ", ".join(eps255(e).removesuffix("/255") for e in radii) + "/255"


def _budget_runs(budgets, compare_attacks, *, attack, steps) -> list[tuple[str, int]]:
    """The (attack, T) pairs the comparison runs: the headline attack at its own T is the headline run."""
    return [(a, t) for t in budgets for a in compare_attacks if (a, t) != (attack, steps)]


def _budget_points(setup, x_non, y_non, sub, regime_x, *, epsilons, budgets, compare_attacks, attack, steps, progress,
                   **point) -> list[EpsilonPoint]:
    """Every attack of ``compare_attacks`` at every step budget and radius, on the non-members ``sub``.

    The headline attack at its own budget reuses the regime map's images ``regime_x`` (one
    array per radius of ``epsilons``, over all non-members).
    """
    runs = _budget_runs(budgets, compare_attacks, attack=attack, steps=steps)
    items = split(progress, [(f"{ATTACK_LABELS[a]}, T = {t}, at {_radii_text(epsilons)} ({k + 1} of {len(runs)})",
                              t * ATTACK_COST[a]) for k, (a, t) in enumerate(runs)])  # fmt: skip
    by_run = {run: fabricate_grid(setup.model, x_non[sub], y_non[sub], epsilons=epsilons, steps=run[1], attack=run[0],
                                  progress=cb) for run, cb in zip(runs, items, strict=True)}  # fmt: skip
    points = []
    for e_index, e in enumerate(epsilons):
        for t in budgets:
            for a in compare_attacks:
                # the headline attack at its own T ran on every non-member: reuse the subset
                xe = regime_x[e_index][sub] if (a, t) == (attack, steps) else by_run[(a, t)][e_index]
                points.append(_eval_point(setup, xe, y_non[sub], epsilon=e, attack=a, steps=t, **point))
    return points


def _adaptive_points(setup, x_non, y_non, sub, x_fab, *, betas, epsilon, steps, attack, progress,
                     **point) -> list[AdaptivePoint]:
    """The adaptive attacker (MFA that also keeps the gradient norm up) at each of ``betas``, on the non-members ``sub``."""
    runs = [b for b in betas if not (b == 0 and attack == "mfa")]  # beta = 0 is plain MFA: the headline run
    (item,) = split(progress, [(f"adaptive MFA at {eps255(epsilon)}, beta {', '.join(f'{b:g}' for b in runs)}, "
                                "as one batch", 1.0)])  # fmt: skip
    xs = fabricate_grid(setup.model, x_non[sub], y_non[sub], epsilons=[epsilon], betas=runs, steps=steps,
                        attack="adaptive", progress=item)  # fmt: skip
    xs = dict(zip(runs, xs, strict=True))
    adaptive = []
    for beta in betas:
        xe = x_fab[sub] if beta not in xs else xs[beta]
        pt = _eval_point(setup, xe, y_non[sub], epsilon=epsilon, attack="adaptive", steps=steps, **point)
        adaptive.append(AdaptivePoint(float(beta), pt.mia_auc_fabricated, pt.mfd_auc, pt.median_norm_fabricated))
    return adaptive


PNG_LABELS = "labels.csv"  # the table of a PNG folder: columns file, label, is_member


def _source(source: str | Path | bytes, what: str, name: str | None) -> tuple[str | Path | bytes, str]:
    """``(source, name)``: bytes as given, or a path that must be an existing file."""
    if isinstance(source, bytes | bytearray):
        return bytes(source), name or what
    path = Path(source)
    if not path.is_file():
        raise InputError(f"The {what} file {path} does not exist.")
    return path, name or path.name


def _hash_file(h, path: Path) -> None:
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)


def _summary(name: str, source: Path | bytes, rows: int, detail: str) -> InputSummary:
    """The report's line for an uploaded file: its SHA-256 as given (``sha256sum`` of the file)."""
    h = hashlib.sha256()
    if isinstance(source, bytes):
        h.update(source)
    else:
        _hash_file(h, source)
    return InputSummary(name, rows, 0, h.hexdigest(), detail)


def _folder_summary(name: str, folder: Path, rows: int, detail: str) -> InputSummary:
    """The report's line for a PNG folder: one SHA-256 over ``labels.csv`` and then each image it lists, in its order."""
    h = hashlib.sha256()
    table = folder / PNG_LABELS
    _hash_file(h, table)
    with table.open(newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            _hash_file(h, folder / row["file"])
    return InputSummary(name, rows, 0, h.hexdigest(), detail)


def _load_images(images: str | Path | bytes, images_name: str | None, *, seed: int) -> tuple[ImageData, InputSummary]:
    """Uploaded images and their report line: a folder of PNGs with ``labels.csv`` (:func:`load_png_folder`),
    or an ``.npz`` file or its bytes (:func:`load_npz`)."""
    if isinstance(images, str | Path) and Path(images).is_dir():
        folder = Path(images)
        data = load_png_folder(folder, csv_name=PNG_LABELS, seed=seed)
        if images_name is not None:
            data = dataclasses.replace(data, name=images_name)
        detail = f"PNG folder, {data.n_classes} classes, {data.members.size} members"
        return data, _folder_summary(data.name, folder, data.labels.size, detail)
    src, name = _source(images, "image", images_name)
    data = load_npz(src, seed=seed, name=name)
    return data, _summary(name, src, data.labels.size, f"{data.n_classes} classes, {data.members.size} members")


def setup_fabrication(
    *,
    dataset: str | None = None,
    images: str | Path | bytes | None = None,
    images_name: str | None = None,
    model: str | Path | bytes | None = None,
    model_name: str | None = None,
    model_format: str = "safetensors",
    architecture: str = "small_cnn",
    trusted: bool = False,
    n_reference_models: int = 4,
    train: TrainConfig | None = None,
    seed: int,
    device=None,
    progress: ProgressFn | None = None,
) -> FabricationSetup:
    """Assemble an audit from its inputs: the one place the page and the CLI build it (same seed, same numbers).

    Either a bundled ``dataset`` (members / non-members of :data:`DEFAULT_SIZES`, a small
    CNN trained here) or uploaded ``images`` (an ``.npz`` path or its bytes, or a folder of
    PNGs listed in its ``labels.csv`` with columns ``file, label, is_member``; half of the
    non-members become the reference pool) with an optional ``model`` (safetensors
    weights of ``architecture``, or a TorchScript file when ``model_format`` is
    ``"torchscript"`` and ``trusted``; none: a small CNN is trained on the members).
    ``n_reference_models`` reference models (of the audited model's architecture, see
    :func:`prepare_audit`) are trained when the reference pool has at least 30 images,
    otherwise none. The returned setup carries the inputs' summaries (SHA-256 of the
    files as given) for the report.
    """
    if images is not None and dataset is not None:
        raise InputError("Give either your own images or a bundled data set, not both.")
    if model is not None and images is None:
        raise InputError("A model needs its images: the images, labels and member mask it is audited on.")
    if model_format not in MODEL_FORMATS:
        raise InputError(f"Unknown model format {model_format!r}; choose one of {', '.join(MODEL_FORMATS)}.")
    if images is None:
        name = dataset or "digits"
        n_mem, n_non = DEFAULT_SIZES.get(name, (None, None))
        data = load_bundled(name, seed=seed, n_members=n_mem, n_non_members=n_non)
        inputs = [describe_input(name, data.images, detail="bundled")]
        loaded = None
    else:
        data, summary = _load_images(images, images_name, seed=seed)
        inputs = [summary]
        loaded = None
        if model is not None:
            msrc, mname = _source(model, "model", model_name)
            if model_format == "torchscript":
                loaded = load_torchscript_model(msrc, trusted=trusted, device=device)
            else:
                loaded = load_safetensors_model(msrc, arch=architecture, in_channels=data.shape[0], device=device)
            data = with_model_classes(data, n_outputs(loaded, data.shape))
            inputs.append(_summary(mname, msrc, 0, architecture if model_format == "safetensors" else model_format))
        if data.reference.size < 30:
            n_reference_models = 0
    setup = prepare_audit(data, model=loaded, train=train, n_reference_models=n_reference_models, seed=seed,
                          device=device, progress=progress)
    return dataclasses.replace(setup, inputs=tuple(inputs))


def fabrication_audit(
    *,
    dataset: str = "digits",
    epsilon: float | None = None,
    steps: int = 40,
    attack: str = "mfa",
    lam: float = 1.0,
    n_reference_models: int = 4,
    seed: int = 0,
    progress: ProgressFn | None = None,
    **run_kwargs,
) -> FabricationResult:
    """The default audit on a bundled data set: load, train, attack, measure.

    ``epsilon`` None takes the default, :data:`audit_core.fabrication.choices.DEFAULT_EPSILON`.
    """
    setup = setup_fabrication(dataset=dataset, n_reference_models=n_reference_models, seed=seed,
                              progress=sub_progress(progress, 0.0, SETUP_SHARE))
    return run_fabrication(setup, epsilon=DEFAULT_EPSILON if epsilon is None else epsilon, steps=steps, attack=attack, lam=lam,
                           seed=seed, progress=sub_progress(progress, SETUP_SHARE, 1.0), **run_kwargs)
