"""Offline reference models for LiRA / RMIA (docs/methods.md §3): trained on the reference pool only, as one batch,
with RMIA's population sample and the gradient-norm scale g_ref."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from torch import nn

from audit_core.common.runtime import ProgressFn
from audit_core.fabrication.gradients import input_gradient_norms
from audit_core.fabrication.images import ImageData
from audit_core.fabrication.inference import Device
from audit_core.fabrication.training import TrainConfig, train_models

__all__ = ["MIN_REFERENCE_POOL", "ReferenceModels", "reference_subset_size", "train_reference_models"]

MIN_REFERENCE_POOL = 30
"""Fewest reference-pool images reference models are trained on (fewer: none, LOSS only)."""


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

    models: list[nn.Module] = field(repr=False)
    population: np.ndarray = field(repr=False)
    g_ref: float


def _population_size(pool: int) -> int:
    """Reference-pool images kept out of every reference model: RMIA's population sample."""
    return max(10, pool // 5)


def reference_subset_size(data: ImageData) -> int:
    """Images each reference model trains on: the member count, at most half of the rest of the pool."""
    pool = data.reference.size
    return min(data.members.size, (pool - _population_size(pool)) // 2)


def train_reference_models(
    data: ImageData,
    *,
    n_models: int,
    train: TrainConfig,
    arch: str = "small_cnn",
    seed: int,
    device: Device = None,
    progress: ProgressFn | None = None,
) -> ReferenceModels:
    """Train ``n_models`` offline reference models of architecture ``arch`` as one batch (docs/methods.md §3).

    Each trains, like the target, on a random subset the size of the member set drawn
    from 80 % of the reference pool; the other 20 % is RMIA's population sample.
    """
    pool = data.reference
    if pool.size < MIN_REFERENCE_POOL:
        raise ValueError(f"The reference pool has {pool.size} images, fewer than {MIN_REFERENCE_POOL}; train none.")
    rng = np.random.default_rng(seed + 7)
    pool = rng.permutation(pool)
    n_pop = _population_size(pool.size)
    population, train_pool = pool[:n_pop], pool[n_pop:]
    size = reference_subset_size(data)
    subsets = np.zeros((n_models, data.labels.size), dtype=bool)
    for k in range(n_models):
        subsets[k, rng.choice(train_pool, size=size, replace=False)] = True
    models = train_models(data.images, data.labels, subsets, n_classes=data.n_classes, config=train, arch=arch,
                          seed=seed + 1, device=device, progress=progress)
    norms = [input_gradient_norms(m, data.images[s], data.labels[s]) for m, s in zip(models, subsets, strict=True)]
    return ReferenceModels(models=models, population=population, g_ref=float(np.median(np.concatenate(norms))))
