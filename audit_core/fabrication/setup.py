"""Everything trained before an attack (docs/methods.md §3): the data, the audited model and the reference
models, from a bundled set or the user's files (:func:`setup_fabrication`, the page's and the CLI's one way in)."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import nn

from audit_core.common.report import InputSummary, describe_input
from audit_core.common.runtime import ProgressFn, as_progress, pick_device
from audit_core.fabrication.architectures import architecture_of
from audit_core.fabrication.bundled import load_bundled
from audit_core.fabrication.gradients import input_gradient_norms
from audit_core.fabrication.images import ImageData, with_model_classes
from audit_core.fabrication.inference import Device
from audit_core.fabrication.model_files import check_model_input, n_outputs
from audit_core.fabrication.progress import check_cpu_time, plan
from audit_core.fabrication.references import (
    MIN_REFERENCE_POOL,
    ReferenceModels,
    reference_subset_size,
    train_reference_models,
)
from audit_core.fabrication.threads import cpu_threads
from audit_core.fabrication.training import TrainConfig, train_models
from audit_core.fabrication.uploads import load_images, load_model

__all__ = ["DEFAULT_SIZES", "FabricationSetup", "prepare_audit", "setup_fabrication"]


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
_DEFAULT_TRAIN = {
    "digits": TrainConfig(epochs=60, batch_size=64, lr=2e-3, weight_decay=0.0, label_smoothing=0.1),
    "mnist": TrainConfig(epochs=100, batch_size=64, lr=2e-3, weight_decay=0.0, label_smoothing=0.1),
}
DEFAULT_SIZES = {"digits": (150, 300), "mnist": (300, 300)}
"""Members and evaluation non-members of each bundled set in the audit (the rest is the reference pool)."""


@cpu_threads()
def prepare_audit(
    data: ImageData,
    *,
    model: nn.Module | None = None,
    train: TrainConfig | None = None,
    n_reference_models: int = 4,
    seed: int,
    device: Device = None,
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
    train = train or _DEFAULT_TRAIN.get(data.name, _DEFAULT_TRAIN["digits"])
    arch = "small_cnn" if model is None else architecture_of(model, in_channels=data.shape[0], n_classes=data.n_classes)
    n_reference_models = n_reference_models if arch is not None else 0
    steps = _training_steps(data, train, arch, target=model is None, n_references=n_reference_models)
    check_cpu_time(sum(w for _, w in steps) * train.batch_size, pixels=math.prod(data.shape), arch=arch,
                   device_type=torch.device(device).type,
                   what=f"Training {' and '.join(n.split(' (')[0].removeprefix('training ') for n, _ in steps)} on "
                   f"{data.members.size:,} members",
                   fix="use fewer images" + (", or upload the trained model with them" if model is None else ""))  # fmt: skip
    parts = iter(plan(progress, steps, what="training"))
    if model is None:
        target = _train_target(data, train, seed=seed, device=device, progress=next(parts))
    else:
        target = model.to(device).eval()
        check_model_input(target, data.shape, data.n_classes, device=device)
    refs = None
    if n_reference_models and arch is not None:
        refs = train_reference_models(
            data, n_models=n_reference_models, train=train, arch=arch, seed=seed, device=device, progress=next(parts),
        )
    g_ref, source = _lambda_scale(target, data, refs, arch)
    progress(1.0, "models ready")
    return FabricationSetup(data=data, model=target, refs=refs, g_ref=max(g_ref, 1e-30), g_ref_source=source,
                            trained_here=model is None, reference_architecture=arch if refs is not None else None)


def _training_steps(
    data: ImageData, train: TrainConfig, arch: str | None, *, target: bool, n_references: int
) -> list[tuple[str, float]]:
    """The setup's progress steps: training the audited model (when it is trained here), the reference models."""
    steps = []
    if target:
        steps.append((f"training the audited model ({arch}, {data.members.size} members, {train.epochs} epochs)",
                      _training_weight(data.members.size, 1, train)))  # fmt: skip
    if n_references:
        steps.append((f"training {n_references} reference models ({arch}, as one batch, {train.epochs} epochs)",
                      _training_weight(reference_subset_size(data), n_references, train)))  # fmt: skip
    return steps


def _train_target(data: ImageData, train: TrainConfig, *, seed: int, device: Device, progress: ProgressFn) -> nn.Module:
    """The bundled target: a small CNN trained on the members."""
    subset = np.zeros((1, data.labels.size), dtype=bool)
    subset[0, data.members] = True
    (model,) = train_models(data.images, data.labels, subset, n_classes=data.n_classes, config=train, arch="small_cnn",
                            seed=seed, device=device, progress=progress)  # fmt: skip
    return model


def _lambda_scale(model: nn.Module, data: ImageData, refs: ReferenceModels | None, arch: str | None) -> tuple[float, str]:
    """AR-MIA's scale g_ref and where it comes from: the reference models' median input-gradient norm on their own
    training images, or without them the audited model's on the known members."""
    if refs is not None:
        return refs.g_ref, f"median input-gradient norm of the {arch} reference models on their own training images"
    g_ref = float(np.median(input_gradient_norms(model, data.images[data.members], data.labels[data.members])))
    source = "median input-gradient norm of the audited model on the known members"
    if arch is None:
        source += " (no reference models: the model is not of a built-in architecture)"
    return g_ref, source


def _training_weight(n_images: int, n_models: int, train: TrainConfig) -> float:
    """Expected share of the training time (for progress): optimiser steps, and models trained as one batch
    cost about half a model each beyond the first (measured on the 2-core VM: 1 model 2.2 s, 4 models 3.3-6 s)."""
    return train.epochs * math.ceil(max(1, n_images) / train.batch_size) * (1 + (n_models - 1) / 2)


def setup_fabrication(
    *,
    dataset: str = "digits",
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
    device: Device = None,
    progress: ProgressFn | None = None,
) -> FabricationSetup:
    """Assemble an audit from its inputs: the one place the page and the CLI build it (same seed, same numbers).

    Either uploaded ``images`` (an ``.npz`` path or its bytes, or a folder of PNGs listed in
    its ``labels.csv`` with columns ``file, label, is_member``; half of the non-members
    become the reference pool) with an optional ``model`` (safetensors weights of
    ``architecture``, or a TorchScript file when ``model_format`` is ``"torchscript"`` and
    ``trusted``; none: a small CNN is trained on the members), or, without ``images``, the
    bundled ``dataset`` (members / non-members of :data:`DEFAULT_SIZES`, a small CNN trained
    here). ``n_reference_models`` reference models (of the audited model's architecture, see
    :func:`prepare_audit`) are trained when the reference pool has at least
    :data:`~audit_core.fabrication.references.MIN_REFERENCE_POOL` images, otherwise none.
    The returned setup carries the inputs' summaries (SHA-256 of the files as given) for the
    report. The settings come checked by their knobs and the inputs together by the audit's
    ``check`` (:mod:`audit_core.fabrication.spec`).
    """
    loaded = None
    if images is None:
        n_mem, n_non = DEFAULT_SIZES[dataset]
        data = load_bundled(dataset, seed=seed, n_members=n_mem, n_non_members=n_non)
        inputs = [describe_input(dataset, data.images, detail="bundled")]
    else:
        data, summary = load_images(images, images_name, seed=seed)
        inputs = [summary]
        if model is not None:
            loaded, model_summary = load_model(model, model_name, model_format=model_format, architecture=architecture,
                                               trusted=trusted, in_channels=data.shape[0], device=device)  # fmt: skip
            data = with_model_classes(data, n_outputs(loaded, data.shape))
            inputs.append(model_summary)
        if data.reference.size < MIN_REFERENCE_POOL:
            n_reference_models = 0
    setup = prepare_audit(data, model=loaded, train=train, n_reference_models=n_reference_models, seed=seed,
                          device=device, progress=progress)
    return dataclasses.replace(setup, inputs=tuple(inputs))
